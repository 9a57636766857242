"""Recursive doubling allreduce (Swing paper, De Sensi et al., §2.3.2–2.3.3;
GenModel paper, Xiong et al., Tables 1–2 "RHD").

Variants
--------
``latency`` (§2.3.2)
    ``log2 p'`` steps; at step ``s`` rank ``r`` exchanges its whole vector with
    ``r XOR 2^s`` and adds the received one to its own (fan-in 2).
``bandwidth`` (§2.3.3, Rabenseifner; GenModel "recursive halving and doubling")
    The vector is cut into ``p'`` blocks of ``n/p'``. Reduce-scatter step
    ``s = 0..log2 p'−1``: partner ``q = r XOR 2^s``; rank ``r`` holds the
    blocks whose low ``s`` bits equal those of ``r`` and sends the half whose
    bit ``s`` equals ``q``'s (``p'/2^(s+1)`` blocks: the data halves and the
    distance doubles each step), reducing what it receives. Rank ``r`` ends up
    with block ``r``. The allgather reverses the pattern (bits ``log2 p'−1 …
    0``, data doubling, COPY). ``2 log2 p'`` steps, ``2(p'−1)/p' · n`` bytes
    sent per rank; reduction ``(p'−1)/p' · n`` bytes at fan-in 2, i.e. the
    γ coefficient ``(p'−1)/p'`` and δ coefficient ``3(p'−1)/p'`` of GenModel
    Table 2.
``auto``
    Expanded by the engine (both variants are timed, the faster one per size
    wins); the builder itself refuses it.

Non-power-of-two ``p`` (§2.3.2 "Non-power-of-two"; GenModel χ term
``2Sβ + Sγ + 3Sδ``): ``p'`` is the largest power of two ``<= p``. A ``pre``
step sends the whole vector of each rank ``r >= p'`` to ``r − p'``, which
reduces it (fan-in 2, share 1); the first ``p'`` ranks run the algorithm; a
``post`` step copies the whole result from ``r − p'`` back to ``r``.
``Schedule.info["p_eff"]`` is ``p'``.
"""

from __future__ import annotations

import numpy as np

from ..errors import ScheduleError
from ._blocks import (
    COPY,
    REDUCE,
    check_ranks,
    equal_block_share,
    make_traffic,
    reduce_step_reduction,
    whole_vector_blocks,
)
from .base import AlgorithmSpec, Param, Schedule, Step, register

NAME = "recdoub"
VARIANTS = ("auto", "latency", "bandwidth")


def largest_power_of_two(p: int) -> int:
    """Largest power of two ``<= p`` (``p >= 1``)."""
    return 1 << (int(p).bit_length() - 1)


def build(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    """Recursive doubling allreduce on ``p`` ranks (§2.3.2 / §2.3.3).

    Parameters
    ----------
    p : int
        Number of ranks (>= 2).
    topology : Topology or None
        Unused (ranks are paired by XOR of their ids).
    blocks : bool
        Attach block content (1 block for ``latency``, ``p'`` for
        ``bandwidth``) for verification.
    variant : {"latency", "bandwidth"}
        ``"auto"`` is rejected here: the engine expands it.

    Returns
    -------
    Schedule
        Steps ``[pre,] x0..x{L−1} [,post]`` (latency) or
        ``[pre,] rs0..rs{L−1}, ag0..ag{L−1} [,post]`` (bandwidth), with
        ``L = log2 p'``; ``info = {"p_eff": p', "extra_ranks": p − p'}``.
    """
    opts = SPEC.parse_options(options)
    variant = opts["variant"]
    p = check_ranks(NAME, p)
    if variant == "auto":
        raise ScheduleError(
            f"algorithm {NAME}: variant='auto' is expanded by the engine (it times "
            f"{', '.join(SPEC.auto_choices())} and keeps the faster per size); the builder "
            f"needs a concrete variant")
    p_eff = largest_power_of_two(p)
    num_blocks = 1 if variant == "latency" else p_eff

    steps: list[Step] = []
    if p_eff < p:
        steps.append(_fold_step(p, p_eff, num_blocks, blocks, post=False))
    if variant == "latency":
        steps += _latency_steps(p_eff, blocks)
    else:
        steps += _bandwidth_steps(p_eff, blocks)
    if p_eff < p:
        steps.append(_fold_step(p, p_eff, num_blocks, blocks, post=True))
    return Schedule(NAME, variant, p, tuple(steps),
                    num_blocks if blocks else None,
                    equal_block_share(num_blocks) if blocks else None,
                    {"p_eff": p_eff, "extra_ranks": p - p_eff})


def _fold_step(p: int, p_eff: int, num_blocks: int, blocks: bool, post: bool) -> Step:
    """Whole-vector exchange between ranks ``r >= p'`` and ``r − p'``:
    ``pre`` reduces the extra ranks' vectors in, ``post`` copies the result
    back out."""
    high = np.arange(p_eff, p, dtype=np.int64)
    low = high - p_eff
    src, dst = (low, high) if post else (high, low)
    share = np.ones(len(src))
    tag = np.zeros(len(src), np.int16)
    blocks2d = whole_vector_blocks(len(src), num_blocks) if blocks else None
    traffic = make_traffic(src, dst, share, tag, blocks2d, COPY if post else REDUCE)
    return Step(traffic, reduce_step_reduction(traffic, not post), "post" if post else "pre")


def _latency_steps(p_eff: int, blocks: bool) -> list[Step]:
    ranks = np.arange(p_eff, dtype=np.int64)
    share = np.ones(p_eff)
    tag = np.zeros(p_eff, np.int16)
    blocks2d = np.zeros((p_eff, 1), np.int32) if blocks else None
    steps = []
    for s in range(p_eff.bit_length() - 1):
        traffic = make_traffic(ranks, ranks ^ (1 << s), share, tag, blocks2d, REDUCE)
        steps.append(Step(traffic, reduce_step_reduction(traffic, True), f"x{s}"))
    return steps


def _bandwidth_steps(p_eff: int, blocks: bool) -> list[Step]:
    ranks = np.arange(p_eff, dtype=np.int64)
    tag = np.zeros(p_eff, np.int16)
    levels = p_eff.bit_length() - 1
    rs, ag = [], []
    for s in range(levels):
        partner = ranks ^ (1 << s)
        stride = 2 << s                    # blocks sharing the low s+1 bits are `stride` apart
        per_flow = p_eff // stride         # p'/2^(s+1) blocks
        share = np.full(p_eff, per_flow / p_eff)
        offsets = stride * np.arange(per_flow, dtype=np.int64)
        # reduce-scatter: send the half of my blocks that the partner keeps
        rs_blocks = ((partner & (stride - 1))[:, None] + offsets) if blocks else None
        traffic = make_traffic(ranks, partner, share, tag, rs_blocks, REDUCE)
        rs.append(Step(traffic, reduce_step_reduction(traffic, True), f"rs{s}"))
        # allgather (run in reverse bit order): send every block I hold
        ag_blocks = ((ranks & (stride - 1))[:, None] + offsets) if blocks else None
        traffic = make_traffic(ranks, partner, share, tag, ag_blocks, COPY)
        ag.append(traffic)
    ag_steps = [Step(t, reduce_step_reduction(t, False), f"ag{i}")
                for i, t in enumerate(reversed(ag))]
    return rs + ag_steps


SPEC = register(AlgorithmSpec(
    name=NAME,
    build=build,
    params=(Param("variant", str, "auto", VARIANTS,
                  "latency: whole-vector exchanges, log2 p steps (§2.3.2); bandwidth: "
                  "Rabenseifner reduce-scatter + allgather, 2 log2 p steps (§2.3.3); "
                  "auto: the faster per size"),),
    doc="Recursive doubling allreduce, latency-optimal or bandwidth-optimal (Rabenseifner); "
        "non-power-of-two p folds the extra ranks in with a pre and a post step "
        "(Swing paper §2.3.2–2.3.3, GenModel Table 2 RHD).",
    auto_param="variant",
))
