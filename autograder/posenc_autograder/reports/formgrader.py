"""`make formgrader`: nbgrader's formgrader for this course on 127.0.0.1, printing its address.

It runs `jupyter server` from the course root (so nbgrader reads the root's nbgrader_config.py) with this
module loaded as a server extension too. The extension mends two things in nbgrader's formgrade page:
formulas (the page loads MathJax 2 from a CDN, blank offline; here MathJax 3 from the pinned
django-static-mathjax package, served by the server itself) and outputs (diagnoses are <pre> text that
runs off the right edge; here they wrap).
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from posenc_autograder.course import course_for_command

HOST = "127.0.0.1"                   # never reachable from another machine: formgrader shows students' work
MATHJAX_ROUTE = "posenc/mathjax"     # under the server's base URL
MATHJAX_SCRIPT = "tex-chtml-full.js"
STARTUP_SECONDS = 120

# Replaces nbconvert's `mathjax()` macro, which nbgrader's formgrade template calls in the page head.
HEAD = """{%- macro mathjax(url=None) -%}
<script>
window.MathJax = {tex: {inlineMath: [['$', '$'], ['\\\\(', '\\\\)']], displayMath: [['$$', '$$'], ['\\\\[', '\\\\]']],
                        processEscapes: true, processEnvironments: true}};
</script>
<script id="MathJax-script" async src="@SCRIPT@"></script>
<style>
/* Diagnoses, other outputs and long test titles wrap instead of running off the right edge. */
.output_area pre, .output_text pre, .output_error pre, .input_area pre {
  white-space: pre-wrap; overflow-wrap: anywhere; }
</style>
{%- endmacro %}
"""


def mathjax_folder() -> pathlib.Path:
    """MathJax 3's browser build inside the pinned django-static-mathjax package (its `mathjax` module)."""
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("MathJax is not installed: `make install` installs django-static-mathjax")
    return pathlib.Path(spec.submodule_search_locations[0]) / "static" / "mathjax" / "es5"


# --- the server extension ---------------------------------------------------------------------

def _jupyter_server_extension_points():
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp) -> None:
    """Serve MathJax, and give formgrader an exporter whose page head loads it (extensions load in name
    order, so nbgrader's formgrader, whose exporter this replaces, is already loaded)."""
    from jinja2 import DictLoader
    from jupyter_server.utils import url_path_join
    from nbconvert.exporters import HTMLExporter
    from tornado.web import StaticFileHandler

    webapp = serverapp.web_app
    base = webapp.settings["base_url"]
    webapp.add_handlers(".*$", [(url_path_join(base, MATHJAX_ROUTE, "(.*)"), StaticFileHandler,
                                 {"path": str(mathjax_folder())})])
    exporter = webapp.settings.get("nbgrader_exporter")
    if exporter is None:
        serverapp.log.warning("posenc: nbgrader's formgrader is not loaded; formulas will need the CDN")
        return
    head = HEAD.replace("@SCRIPT@", url_path_join(base, MATHJAX_ROUTE, MATHJAX_SCRIPT))
    webapp.settings["nbgrader_exporter"] = HTMLExporter(config=exporter.config,
                                                        extra_loaders=[DictLoader({"mathjax.html.j2": head})])


# --- `make formgrader` ------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def server_command(root: pathlib.Path, port: int, token: str) -> list[str]:
    jupyter = pathlib.Path(sys.executable).parent / "jupyter"
    return [str(jupyter), "server", f"--ServerApp.ip={HOST}", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            "--ServerApp.open_browser=False", f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}",
            f"--ServerApp.jpserver_extensions={__name__}=True"] + (["--ServerApp.allow_root=True"] if is_root() else [])


def is_root() -> bool:
    """Jupyter refuses to run as root unless told; CI and containers grade as root."""
    return os.geteuid() == 0


def wait_until_up(process: subprocess.Popen, url: str, stream=sys.stderr) -> None:
    """Poll the server until it answers, showing that something is happening; raise if it stops or hangs."""
    started = time.monotonic()
    while True:
        if process.poll() is not None:
            stream.write("\n")
            raise RuntimeError(f"jupyter server stopped with status {process.returncode} (see its log above)")
        try:
            urllib.request.urlopen(url, timeout=2).close()
            stream.write("\n")
            return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() - started > STARTUP_SECONDS:
            raise RuntimeError(f"formgrader did not answer within {STARTUP_SECONDS} s")
        stream.write(f"\rstarting formgrader ... {time.monotonic() - started:3.0f} s")
        stream.flush()
        time.sleep(0.5)


def arguments(parser) -> None:
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")


def run_command(args) -> int:
    course = course_for_command(args.course)
    port, token = args.port or free_port(), secrets.token_hex(16)
    process = subprocess.Popen(server_command(course.root, port, token), cwd=course.root)
    try:
        wait_until_up(process, f"http://{HOST}:{port}/api/status?token={token}")
        print(f"Formgrader for {course.root}:\n  http://{HOST}:{port}/formgrader?token={token}\n"
              f"(only this machine can reach it; Ctrl-C stops it)", flush=True)
        return process.wait()
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)

