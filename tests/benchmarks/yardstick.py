"""The yardstick every benchmark figure is read against: machines here differ
up to 2x from one session to the next, so a figure is reported beside a
1 GiB numpy copy timed in the same run. Also the best-of-N timer the
benchmarks use for their breakdowns."""

from __future__ import annotations

import time

import numpy as np


def copy_1gib_ms(rounds: int = 3) -> float:
    """Milliseconds of the fastest of ``rounds`` copies of 1 GiB (2**27
    float64) into pages touched beforehand."""
    a = np.ones(2**27)
    b = a.copy()           # first touch of b's pages outside the timing
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t0)
    del a, b
    return 1e3 * best


def best_seconds(fn, repeat: int = 3) -> float:
    """Seconds of the fastest of ``repeat`` calls of ``fn()``."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
