"""How long a hostile records frame stops the other threads of the grader: the longest gap a thread ticking every
millisecond sees while another thread decodes a 16 MiB skeleton (the channel's cap) of the worst kinds, parsed in
one call (json.loads, as the frame reader did) and a piece at a time (codec.loads_in_pieces, as it does now), with
the CPU each costs; a skeleton past a cap (MAX_CONTAINERS) is refused as the frame reader refuses it.
Run: `python -m posenc_autograder.devtools.bench_frame_stalls`.
"""
from __future__ import annotations

import json
import threading
import time

from posenc_autograder.probes import codec

SIZE = codec.MAX_SKELETON_BYTES - 64


def _list_of(item: bytes, size: int = SIZE, containers: int = codec.MAX_CONTAINERS) -> bytes:
    """The longest list of `item` the caps allow (size, values and, unless told otherwise, lists and objects)."""
    lists = item.count(b"[")
    count = min(size // (len(item) + 1), codec.MAX_NODES // (lists + 2), (containers - 4) // lists if lists else size)
    return b"[[], [" + b",".join([item] * count) + b"]]"


def skeletons() -> dict[str, bytes]:
    keys = b"{" + b",".join(b'"k%012d":1' % i for i in range(min(SIZE // 18, codec.MAX_NODES - 8))) + b"}"
    return {
        "floats": _list_of(b"1.2345678901234567"),
        "object of 900k keys": b"[[], " + keys + b"]",
        "small nested lists": _list_of(b"[[[1]]]"),
        "600k small lists (refused)": _list_of(b"[[[1]]]", containers=codec.MAX_NODES),
        "short strings": _list_of(b'"abcdefghijklmn"'),
        "one string of escapes": b'[[], "' + b'\\"' * (SIZE // 2 - 8) + b'"]',
    }


def longest_stall(decode, data: bytes) -> tuple[float, float]:
    """(longest gap between a ticking thread's ticks, CPU seconds of the decode) while `decode(data)` runs."""
    done, gaps = threading.Event(), [0.0]

    def tick():
        last = time.perf_counter()
        while not done.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gaps[0], last = max(gaps[0], now - last), now
    ticker = threading.Thread(target=tick)
    ticker.start()
    time.sleep(0.05)
    cpu = time.thread_time()
    try:
        decode(data)
    except codec.TooLarge:           # refused by a cap (as the frame reader refuses it): no value built
        pass
    cpu = time.thread_time() - cpu
    done.set()
    ticker.join()
    return gaps[0], cpu


def main() -> None:
    print(f"{'skeleton':<24} {'MiB':>5} {'stall, one call':>16} {'stall, pieces':>14} {'ratio':>6} "
          f"{'CPU one call':>13} {'CPU pieces':>11}")
    for name, data in skeletons().items():
        whole, whole_cpu = longest_stall(json.loads, data)
        pieces, pieces_cpu = longest_stall(codec.loads_in_pieces, data)
        print(f"{name:<24} {len(data) / 2**20:5.1f} {whole * 1000:13.0f} ms {pieces * 1000:11.0f} ms "
              f"{whole / pieces:6.1f} {whole_cpu:11.2f} s {pieces_cpu:9.2f} s")


if __name__ == "__main__":
    main()
