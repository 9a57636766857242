"""The event-driven solvers' most frequent calls hold no numba reference
counts: each is an atomic increment and decrement per array per call, which
cost more than the work of these small functions (a quarter of the
incremental solver's time on a tapered fat tree before the heaps went
without, ~7 % more before the other helpers did). They are compiled with
``njit(refcounts=False)`` (:func:`flowemu.kernels.jit.njit`)."""

from __future__ import annotations

import inspect
import re

import numba
import numpy as np
import pytest

from flowemu.kernels import dataflow, dragonfly, events, fill, heaps, refill
from flowemu.kernels.layout import NUMPY_ERRORS

#: the helpers the solvers' loops call for every entry, flow or heap move
HOT = {
    heaps: ["heap_set", "heap_pop", "quad_pop", "quad_sift_down"],
    events: ["bytes_left"],
    fill: ["_freeze_flow", "_resum_weight", "_level"],
    refill: ["add_dd", "level_of", "attention", "hold", "unhold", "release", "admit",
             "relazy", "water_level", "count_load"],
    dataflow: ["_link", "_unlink", "_unscreen", "_enter", "_count_down"],
    dragonfly: ["_leg", "_flow"],   # (routing: once a flow)
}


def _native_body(dispatcher, args, **options) -> str:
    """The LLVM IR of the compiled function itself (not its Python wrapper),
    compiled afresh with the dispatcher's options (numba shows no IR for code
    it loaded from its cache) updated by ``options``."""
    opts = {k: v for k, v in dispatcher.targetoptions.items() if k not in ("cache", "nopython")}
    opts.update(options)
    fresh = numba.njit(**opts)(dispatcher.py_func)
    fresh(*args)
    ir = fresh.inspect_llvm(fresh.signatures[0])
    name = dispatcher.py_func.__name__
    # (a definition's head: its return attributes, which may hold parentheses,
    # then its symbol, where the name is mangled as its length and itself:
    # "4hold", not the "6unhold" that holds it)
    heads = [(re.search(r"@([^\s(]+)\(", b).group(1), b) for b in re.split(r"\ndefine ", ir)[1:]]
    bodies = [b for head, b in heads
              if f"{len(name)}{name}" in head
              and "cpython" not in head and not head.startswith("cfunc.")]
    assert len(bodies) == 1, [h for h, _ in heads]
    return bodies[0]


def _arg(name: str):
    """A stand-in argument of the type the solvers pass under this name:
    every array the helpers take is one of these, small and in range."""
    f8 = {"hk", "rate", "old", "old_rate", "rs", "frac", "pool_frac", "res_frac", "lazy",
          "room", "remaining", "since", "moved", "state", "w_ref", "rates", "heap_key",
          "capacity", "w_t", "eps", "over_x", "stage_delay", "tk", "out_frac"}
    i8_2d = {"fl", "ri"}
    if name in {"glink", "gx", "gy"}:   # (a dragonfly's global links by group pair)
        return np.zeros((2, 2, 1), dtype=np.int64)
    if name in {"rs", "state", "over_x"}:
        return np.zeros((8, 8))
    if name in i8_2d:
        a = np.zeros((8, 8), dtype=np.int64)
        a[:, refill.BNECK] = -1
        return a
    if name in f8:
        return np.zeros(8)
    if name in {"persistent"}:
        return np.zeros(8, dtype=np.bool_)
    if name in {"cand"}:
        return np.ones(8, dtype=np.uint8)
    if name in {"flow_ptr", "row_end", "res_ptr", "fan_in", "seeded", "stage_pending"}:
        return np.zeros(9, dtype=np.int64)
    if name in {"act_head", "act_next", "act_prev", "res", "pool_res", "res_flow", "hi", "pos",
                "heap_res", "changed", "stack", "rise_next", "rise_mark", "joined", "seeds",
                "flow_mark", "over_h", "entry_flow", "tpos", "ti", "out_link"}:
        return np.full(8, -1, dtype=np.int32)
    if name in {"have_tr", "incast"}:
        return False
    if name in {"lam", "new", "was", "t", "key", "a", "over", "w"}:
        return 0.5
    return 1   # (indices and counts)


#: arguments whose name means something else in that helper
OVERRIDE = {("quad_sift_down", "pos"): 0, ("count_load", "skip"): None,
            ("_leg", "a"): 1, ("_flow", "a"): 1}   # (a dragonfly's routers a group)


def _cases():
    for module, names in HOT.items():
        for name in names:
            dispatcher = getattr(module, name)
            params = inspect.signature(dispatcher.py_func).parameters
            args = tuple(OVERRIDE[name, p] if (name, p) in OVERRIDE else _arg(p) for p in params)
            yield pytest.param(dispatcher, args,
                               id=f"{module.__name__.rsplit('.', 1)[-1]}.{name}")


@pytest.mark.parametrize(("dispatcher", "args"), list(_cases()))
def test_no_array_reference_counts(dispatcher, args):
    assert dispatcher.targetoptions.get("_nrt") is False
    body = _native_body(dispatcher, args)
    assert "@NRT_incref" not in body and "@NRT_decref" not in body


def test_the_check_sees_reference_counts():
    """The same check on the same helper compiled with reference counts
    finds them (else the test above could not fail)."""
    args = next(c.values for c in _cases() if c.id == "refill.hold")
    body = _native_body(refill.hold, args[1], _nrt=True)
    assert "@NRT_incref" in body


def test_options_reach_numba():
    assert NUMPY_ERRORS["error_model"] == "numpy"
    assert heaps.heap_set.targetoptions["error_model"] == "numpy"
