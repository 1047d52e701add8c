"""A portal app served by uvicorn in a thread on a free port of 127.0.0.1, for tests that drive it over HTTP."""
import contextlib
import socket
import threading
import time

import uvicorn

from posenc_autograder.portal.routes import create_app


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def served(portal, seconds: float = 30):
    """Yields the portal's base URL while it is served; stops the server on leaving."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(portal), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    started = time.monotonic()
    while not server.started:
        if time.monotonic() - started > seconds or not thread.is_alive():
            raise RuntimeError(f"the portal did not start within {seconds} s")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
