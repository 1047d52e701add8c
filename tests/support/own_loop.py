"""A coroutine run to its end on an event loop of its own, in a thread of its own: a browser test's sync Playwright
on the same worker may leave this thread's loop running, where asyncio.run() refuses to start."""
import asyncio
import concurrent.futures


def run_in_own_loop(coroutine):
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
