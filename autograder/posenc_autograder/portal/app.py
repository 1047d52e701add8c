"""`make portal`: serve the submission portal with uvicorn (127.0.0.1:8080 by default; put a reverse proxy with
TLS in front for real use, see the README).

    python -m posenc_autograder portal [--host H] [--port P] [--jobs N] [--scheduler tcp://...] [--db-url URL]
                                       [--allow-root]

The portal process never runs student code: every notebook is graded in the sandbox (a subprocess per job,
or a Dask worker). It refuses to start as root unless --allow-root is given (CI and tests run as root).
"""
from __future__ import annotations

import os
import sys

import uvicorn

from posenc_autograder.course import course_for_command
from posenc_autograder.grading.executors import default_jobs
from posenc_autograder.portal.routes import create_app
from posenc_autograder.portal.service import Portal, PortalBusy
from posenc_autograder.portal.worker import dask_execute
from posenc_autograder.sandbox.bubblewrap import SandboxUnavailable, check_sandbox


def refuse_root(allow_root: bool) -> str | None:
    """Why the portal will not start as this user (None: it will)."""
    if os.geteuid() == 0 and not allow_root:
        return ("the portal does not run as root: start it as an ordinary user with unprivileged user namespaces "
                "(see the README), or pass --allow-root if you must (CI, containers)")
    return None


def arguments(parser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--allow-root", action="store_true", help="run even as root (not advised)")


def run_command(args) -> int:
    refusal = refuse_root(args.allow_root)
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    try:
        check_sandbox()
    except SandboxUnavailable as exc:
        print(f"Cannot grade safely: {exc}", file=sys.stderr)
        return 2
    course = course_for_command(args.course, args.db_url)
    options = {"execute": dask_execute(args.scheduler)} if args.scheduler else {}
    portal = Portal(course, jobs=args.jobs or default_jobs(), worker_options=options)
    where = f"http://{args.host}:{args.port}"
    secret_at = portal.secret_file or "$POSENC_PORTAL_SECRET"
    print(f"Portal on {where} ({portal.worker.jobs} grading sandboxes). Instructor: {where}/instructor "
          f"(secret in {secret_at}); students' links: `make portal-links`.", flush=True)
    config = uvicorn.Config(create_app(portal), host=args.host, port=args.port, proxy_headers=True,
                            forwarded_allow_ips=os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1"),
                            access_log=False, log_level="warning")   # no access log: sign-in paths hold tokens
    try:
        portal.acquire_lock()
    except PortalBusy as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    uvicorn.Server(config).run()
    return 0

