"""The event-driven solvers' most frequent calls hold no numba reference
counts: each is an atomic increment and decrement per array per call, which
cost more than the work of these small functions (heaps.heap_set's notes:
a quarter of the solver's time on a tapered fat tree before)."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest

from flowemu.kernels.fill import bytes_left
from flowemu.kernels.heaps import heap_pop, heap_set
from flowemu.kernels.layout import NUMPY_ERRORS
from flowemu.kernels.refill import release


def _native_body(dispatcher, *args) -> str:
    """The LLVM IR of the compiled function itself (not its Python wrapper),
    compiled afresh: numba shows no IR for code it loaded from its cache."""
    fresh = numba.njit(**NUMPY_ERRORS)(dispatcher.py_func)
    fresh(*args)
    ir = fresh.inspect_llvm(fresh.signatures[0])
    name = dispatcher.py_func.__name__
    # (a definition's head: its return attributes, which may hold parentheses,
    # then its symbol)
    heads = [(re.search(r"@([^\s(]+)\(", b).group(1), b) for b in re.split(r"\ndefine ", ir)[1:]]
    bodies = [b for head, b in heads
              if name in head and "cpython" not in head and not head.startswith("cfunc.")]
    assert len(bodies) == 1
    return bodies[0]


def _cases():
    hk, hi, pos = np.zeros(4), np.zeros(4, dtype=np.int32), np.full(4, -1, dtype=np.int32)
    fl, ri = np.zeros((4, 8), dtype=np.int64), np.zeros((4, 8), dtype=np.int64)
    fl[:, 2], ri[:, 3] = -1, -1
    rate, old = np.ones(4), np.zeros(4)
    changed, stack = np.zeros(4, dtype=np.int32), np.zeros(4, dtype=np.int32)
    return {"heap_set": (heap_set, (hk, hi, pos, 0, 1, 2.0)),
            "heap_pop": (heap_pop, (hk, hi, pos, 1)),
            "release": (release, (1, 1, fl, ri, rate, old, changed, 0, stack, 0)),
            "bytes_left": (bytes_left, (1, 0.5, 2.0, np.zeros(4, dtype=np.bool_), np.ones(4),
                                        np.zeros(4), np.zeros(4)))}


@pytest.mark.parametrize("name", ["heap_set", "heap_pop", "release", "bytes_left"])
def test_no_array_reference_counts(name):
    dispatcher, args = _cases()[name]
    body = _native_body(dispatcher, *args)
    assert "@NRT_incref" not in body and "@NRT_decref" not in body
