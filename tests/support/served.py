"""An ASGI server run by uvicorn in a thread of the test's process, on a port of 127.0.0.1 it holds from the start.

The socket is bound here and handed to uvicorn, so no other process can take the port between choosing it and
serving on it (binding port 0, closing and passing the number on races with every other test that does the same).
"""
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import uvicorn

HOST = "127.0.0.1"


def free_port() -> int:
    """A port free now, for a server started in another process (it may be taken before that process binds it)."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class Served:
    url: str
    port: int
    thread: threading.Thread     # the server's: a test of shutdown waits for it


@contextlib.contextmanager
def serving(server: uvicorn.Server, seconds: float = 30) -> Iterator[Served]:
    """Yields where `server` serves on its own bound socket; stops it on leaving."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((HOST, 0))
    port = listener.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        while not server.started:
            if time.monotonic() - started > seconds or not thread.is_alive():
                raise RuntimeError(f"the server did not start within {seconds} s")
            time.sleep(0.02)
        yield Served(f"http://{HOST}:{port}", port, thread)
    finally:
        server.should_exit = True
        thread.join(30)
        listener.close()


def server_of(app, log_level: str = "warning") -> uvicorn.Server:
    """uvicorn's plain server for `app` (host and port are the socket's, given by `serving`)."""
    return uvicorn.Server(uvicorn.Config(app, host=HOST, log_level=log_level))
