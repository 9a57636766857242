"""Keep freed kernel memory mapped (glibc malloc tuning).

Kernels allocate their scratch and result arrays (numba's runtime and numpy
both use ``malloc``) and free them when a call returns. glibc serves
allocations above its mmap threshold (128 KiB at first) with fresh ``mmap``
regions and gives them back on ``free``, so every call of a kernel on a
16,384-node step page-faults all of its memory in again — on virtual machines
a fault costs microseconds, and a route + solve of one Swing step spent more
time faulting than computing. :func:`tune_malloc` raises the mmap threshold to
glibc's maximum (32 MiB) and the trim threshold to 1 GiB, so freed blocks stay
in the heap and the next call reuses them. The price is that a process keeps
up to its peak heap resident (trimmed above 1 GiB of free space at the top).

It runs once, when the kernels are first imported; set
``FLOWEMU_MALLOC_TUNING=0`` in the environment to leave malloc alone (for
example when flowemu is embedded in a long-lived service).
"""

from __future__ import annotations

import ctypes
import os
import sys

#: mallopt parameter numbers (glibc malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: glibc refuses mmap thresholds above HEAP_MAX_SIZE / 2 (32 MiB on 64-bit)
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 1 << 30

ENV_VAR = "FLOWEMU_MALLOC_TUNING"

_state: dict = {}


def tune_malloc() -> bool:
    """Apply the tuning once per process; returns whether it is in effect
    (False off Linux/glibc, or when ``FLOWEMU_MALLOC_TUNING=0``)."""
    if "applied" in _state:
        return _state["applied"]
    applied = False
    if os.environ.get(ENV_VAR, "1").strip() != "0" and sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6")
            mallopt = libc.mallopt
        except (OSError, AttributeError):  # not glibc (e.g. musl)
            mallopt = None
        if mallopt is not None:
            mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
            mallopt.restype = ctypes.c_int
            applied = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
                mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    _state["applied"] = applied
    return applied
