"""The yardstick, benchmarked once for the whole suite: a 1 GiB numpy copy
into pages touched beforehand (what ``yardstick.copy_1gib_ms`` times). Every
other figure is read against it, and ``compare.py`` divides each median by
this one's from the same run, so a slower or faster machine does not look
like a regression or a win. Benchmarks that record the copy beside their own
figure call ``copy_1gib_ms``; none benchmarks it again under this name."""

from __future__ import annotations

import numpy as np
import pytest

from tests.benchmarks.yardstick import YARDSTICK_BENCHMARK


@pytest.mark.slow   # (a timing only: make bench runs it, make test has nothing to check)
def test_bench_yardstick_1gib_copy(benchmark):
    """1 GiB numpy copy: the yardstick the other figures are read against."""
    assert benchmark.name == YARDSTICK_BENCHMARK
    a = np.ones(2**27)
    b = a.copy()           # first touch of b's pages outside the timing
    benchmark(np.copyto, b, a)
    assert np.array_equal(a[:8], b[:8]) and b.nbytes == 2**30
