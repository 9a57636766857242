"""What MPICH would pick: ``mpich``, for every collective, chooses among
flowemu's algorithms by the size and rank-count thresholds of MPICH's
selection logic (its default ``MPIR_CVAR_*`` values and MPICH's own
comparisons, as R. Thakur, R. Rabenseifner and W. Gropp describe the logic in
"Optimization of Collective Communication Operations in MPICH", IJHPCA 2005;
SimGrid's ``smpi_mpich_selector.cpp`` quotes the same logic with a few
boundaries the other way, e.g. broadcast's ``p <= 8``), for a flat
communicator (no shared-memory two-level variants). The chosen algorithm is
the row's ``variant``.

Sizes are in bytes of n (:mod:`.collectives`); MPICH's element counts are
read as 4-byte elements (``count = n / 4``). ``pof2`` is the largest power
of two <= p.

==============  =====================================================  ==============================
collective      condition                                              flowemu's algorithm
==============  =====================================================  ==============================
allreduce       n > 2048 and count >= pof2                             recdoub:variant=bandwidth (Rabenseifner)
allreduce       otherwise                                              recdoub:variant=latency
broadcast       n < 12288 or p < 8                                     binomial
broadcast       n < 524288 and p a power of two                        vandegeijn:allgather=recdoub
broadcast       otherwise                                              vandegeijn (ring allgather)
reduce          count < pof2 or n <= 2048, or p not a power of two      binomial
reduce          otherwise                                              rabenseifner
reduce_scatter  n >= 524288                                            pairwise
reduce_scatter  otherwise, p a power of two                            recdoub (recursive halving)
reduce_scatter  otherwise                                              ring
allgather       n < 524288 and p a power of two                        recdoub (recursive doubling)
allgather       n < 81920                                              bruck
allgather       otherwise                                              ring
gather,scatter  always                                                 binomial
alltoall        n/p <= 256 and p >= 8                                  bruck
alltoall        n/p <= 32768                                           linear (every isend at once)
alltoall        otherwise                                              pairwise
==============  =====================================================  ==============================

Where MPICH folds the ranks above ``pof2`` into a power of two (reduce
and reduce-scatter on other p), flowemu has no folded form and takes the
algorithm in the table's next row; the row's ``note`` says so. MPICH's
pairwise all-to-all pairs ranks by XOR when p is a power of two; flowemu's
``pairwise`` sends to r + s for every p (the same steps and bytes).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ._blocks import check_root
from .base import DEFAULT_AT, AlgorithmSpec, Param, parse_algorithm_spec
from .collectives import COLLECTIVES
from .registry import get_algorithm, register

__all__ = ["mpich_choice"]

#: bytes of an element (MPICH thresholds on counts read n / ELEMENT elements)
ELEMENT = 4


def _pof2(p: int) -> int:
    return 1 << (p.bit_length() - 1)


def mpich_choice(collective: str, p: int, n: float) -> tuple[str, str]:
    """``(algorithm spec, note)``: what MPICH picks for ``collective`` on
    ``p`` ranks and ``n`` bytes (module table); the note says where flowemu
    departs from it."""
    pow2 = p & (p - 1) == 0
    count = n / ELEMENT
    if collective == "allreduce":
        if n > 2048 and count >= _pof2(p):
            return "recdoub:variant=bandwidth", ""
        return "recdoub:variant=latency", ""
    if collective == "broadcast":
        if n < 12288 or p < 8:
            return "binomial", ""
        if n < 524288 and pow2:
            return "vandegeijn:allgather=recdoub", ""
        return "vandegeijn", ""
    if collective == "reduce":
        if count < _pof2(p) or n <= 2048:
            return "binomial", ""
        if not pow2:
            return "binomial", ("MPICH folds the ranks above a power of two into "
                                "Rabenseifner's reduce here; flowemu has no folded form and "
                                "runs the binomial tree")
        return "rabenseifner", ""
    if collective == "reduce_scatter":
        if n >= 524288:
            return "pairwise", ""
        if pow2:
            return "recdoub", ""
        return "ring", ("MPICH folds the ranks above a power of two into recursive halving "
                        "here; flowemu has no folded form and runs the ring")
    if collective == "allgather":
        if n < 524288 and pow2:
            return "recdoub", ""
        if n < 81920:
            return "bruck", ""
        return "ring", ""
    if collective in ("gather", "scatter"):
        return "binomial", ""
    if collective == "alltoall":
        block = n / p
        if block <= 256 and p >= 8:
            return "bruck", ""
        if block <= 32768:
            return "linear", ""
        return "pairwise", ""
    raise AssertionError(collective)


def _spec(collective: str) -> AlgorithmSpec:
    rooted = COLLECTIVES[collective].rooted

    def plan(p, topology, network, sizes, options, blocks=False):
        """One schedule per algorithm MPICH picks, with the sizes it serves."""
        groups: dict = {}
        for i, n in enumerate(np.asarray(sizes, dtype=float)):
            groups.setdefault(mpich_choice(collective, p, float(n)), []).append(i)
        out = []
        for (text, why), idx in groups.items():
            name, raw = parse_algorithm_spec(text)
            spec = get_algorithm(name, collective)
            opts = spec.parse_options({**raw, **({"root": options["root"]} if rooted else {})})
            sched = spec.build(p, topology, blocks, **opts)
            note = "; ".join(filter(None, (sched.note, why)))
            out.append((_relabel(sched, text, note), np.array(idx)))
        return out

    def build(p, topology=None, blocks=False, **options):
        return plan(p, topology, None, [DEFAULT_AT], options, blocks)[0][0]

    params = (Param("root", int, 0, None, "the root rank"),) if rooted else ()
    def check(p, options):
        if rooted:
            check_root("mpich", p, options.get("root", 0))

    return AlgorithmSpec(
        name="mpich", build=build, params=params, sized=plan, collective=collective,
        check=check,
        doc=f"What MPICH picks for {collective} by its size and rank-count thresholds "
            "(flowemu.algorithms.selectors); the choice is the variant")


def _relabel(sched, text: str, note: str):
    return replace(sched, algorithm="mpich", variant=text, note=note)


for _collective in COLLECTIVES:
    register(_spec(_collective))
