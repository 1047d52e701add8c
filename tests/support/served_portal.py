"""A portal app served by uvicorn in a thread on a port of 127.0.0.1, for tests that drive it over HTTP."""
import contextlib

from served import server_of, serving

from posenc_autograder.portal.routes import create_app


@contextlib.contextmanager
def served(portal, seconds: float = 30):
    """Yields the portal's base URL while it is served; stops the server on leaving."""
    with serving(server_of(create_app(portal)), seconds) as server:
        yield server.url
