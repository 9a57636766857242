"""Start-up: the time ``flowemu run`` takes to refuse an unknown algorithm
in one line, in a fresh process with ``PYTHONDONTWRITEBYTECODE=1`` (no
``.pyc`` written at run time, as in many containers), beside the 1 GiB copy
of the same run. Issue 26 asks for at most 1.5 s (recorded for a 95 ms copy,
never asserted): every command pays this before it does anything.

The Makefile byte-compiles the installed packages and flowemu once at set-up
(``COMPILE``); without that, this process would compile numpy, pandas and
numba from source each time (2 s instead of 0.7 s on a quiet two-core
machine).
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.benchmarks.yardstick import record_target


def _refusal() -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "flowemu", "run", "-t", "torus:4x4", "-a",
                           "nosuch"], capture_output=True, text=True, env=env, check=False)


def test_bench_startup_one_line_error(benchmark):
    done = benchmark.pedantic(_refusal, rounds=5, iterations=1, warmup_rounds=1)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("flowemu: error: --algorithm: unknown name 'nosuch'")
    assert done.stderr.count("\n") == 1
    record_target(benchmark, 1500.0)
