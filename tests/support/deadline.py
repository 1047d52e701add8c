"""A hang becomes a failure: SIGALRM interrupts a blocking call (an open() of a FIFO, a stuck read)."""
import contextlib
import signal


@contextlib.contextmanager
def deadline(seconds: int):
    def expire(*_):
        raise TimeoutError(f"blocked for more than {seconds} s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
