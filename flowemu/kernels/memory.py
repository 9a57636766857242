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
``FLOWEMU_MALLOC_TUNING=0`` (or ``false``, ``no``, ``off``) in the environment
to leave malloc alone (for example when flowemu is embedded in a long-lived
service). Another value leaves it alone too, and a run refuses it
(:func:`flowemu.engine.context.check_malloc_setting`): a misspelt "off" must not
tune, and a misspelt "on" must not pass unnoticed.
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
#: the values of ``FLOWEMU_MALLOC_TUNING`` (any case) that turn the tuning on / off
ON_VALUES = ("1", "true", "yes", "on")
OFF_VALUES = ("0", "false", "no", "off")


def tuning_setting() -> bool | None:
    """Whether ``FLOWEMU_MALLOC_TUNING`` asks for the tuning (unset or empty: yes);
    None for a value that is neither on nor off."""
    raw = os.environ.get(ENV_VAR, "").strip().lower() or "1"   # (set but empty: as unset)
    return True if raw in ON_VALUES else False if raw in OFF_VALUES else None

_state: dict = {}


def tune_malloc() -> bool:
    """Apply the tuning once per process; returns whether it is in effect
    (False off Linux/glibc, or unless ``FLOWEMU_MALLOC_TUNING`` is unset or on)."""
    if "applied" in _state:
        return _state["applied"]
    applied = False
    if tuning_setting() and sys.platform.startswith("linux"):
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
