"""Cost per byte of the portal's checks on an upload before parsing (portal.uploads.json_shape), on the worst
inputs we can build, at growing sizes up to the 20 MB cap: a linear check costs the same per byte at every size.

    python -m posenc_autograder.devtools.bench_uploads [--sizes 1e6,5e6,20e6]

For comparison it times, on small inputs only, the regular expression the check replaced (strings removed with
`"(?:[^"\\]|\\.)*"`): on an unterminated string of escaped quotes its cost per byte grows with the size.
"""
from __future__ import annotations

import argparse
import json
import re
import time

from posenc_autograder.portal import uploads

OLD_STRING_PATTERN = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def worst_inputs(size: int) -> dict[str, bytes]:
    """Inputs of about `size` bytes that are hardest for a string-aware scanner."""
    cell = json.dumps({"cell_type": "code", "source": ["x = 1\n"] * 4, "metadata": {}, "outputs": []}) + ","
    return {
        "unterminated string of escaped quotes": b'"' + b'\\"' * (size // 2),
        "backslash runs and quotes": (b'"\\\\\\"\\\\",' * (size // 9 + 1))[:size],
        "deep brackets": b"[" * (size // 2) + b"]" * (size // 2),
        "quotes only": b'"' * size,
        "a notebook of many small cells": (b'{"cells": [' + cell.encode() * (size // len(cell)))[:size],
    }


def seconds(function, data: bytes, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        function(data)
        best = min(best, time.perf_counter() - started)
    return best


def old_check(data: bytes) -> None:
    OLD_STRING_PATTERN.sub(b"", data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1e6,5e6,20e6", help="input sizes in bytes, comma separated")
    args = parser.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    print(f"{'input':<38} {'bytes':>11} {'seconds':>9} {'ns/byte':>8}")
    for size in sizes:
        for name, data in worst_inputs(size).items():
            took = seconds(uploads.json_shape, data)
            print(f"{name:<38} {len(data):>11,} {took:>9.3f} {took / len(data) * 1e9:>8.1f}")
    print("\nthe replaced regular expression, unterminated string of escaped quotes (one run each):")
    ratios = []
    for size in (2_000, 4_000, 8_000, 16_000):
        data = worst_inputs(size)["unterminated string of escaped quotes"]
        old, new = seconds(old_check, data, 1), seconds(uploads.json_shape, data)
        ratios.append(old / new)
        print(f"{'old regex':<38} {len(data):>11,} {old:>9.3f} {old / len(data) * 1e9:>8.1f}  "
              f"({old / new:,.0f}x the scanner on the same input)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
