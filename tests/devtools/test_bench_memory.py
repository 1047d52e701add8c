"""bench-portal's peak memory of the portal's own process is the kernel's high-water mark: a peak between two
samples is not missed."""
from __future__ import annotations

import subprocess
import sys

import psutil

from posenc_autograder.devtools.portal_load import high_water_mark

# A peak well above what the interpreter holds alone (~11 MiB): every page of it is faulted in and zeroed, most of
# the test's cost (300 MiB took ~0.2 CPU-s)
PEAK = 64 * 2**20
PEAK_THEN_FREE = f"""
import sys
block = bytearray({PEAK})
for i in range(0, len(block), 4096):
    block[i] = 1                       # touched: resident
del block
print("freed", flush=True)
sys.stdin.readline()
"""


def test_a_freed_peak_is_still_reported():
    process = subprocess.Popen([sys.executable, "-c", PEAK_THEN_FREE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    try:
        assert process.stdout.readline().strip() == "freed"
        now = psutil.Process(process.pid).memory_info().rss
        assert now < PEAK // 2                                       # the peak is gone from the process ...
        assert high_water_mark(process.pid) >= PEAK                  # ... and still reported
    finally:
        process.communicate("\n", timeout=30)
    assert high_water_mark(process.pid) == 0                         # a process that has gone
