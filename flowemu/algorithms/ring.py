"""Ring allreduce (Swing paper, De Sensi et al., §2.3.1 "Hamiltonian Rings").

A reduce-scatter followed by an allgather over the logical ring
``0 → 1 → … → p−1 → 0``; each runs ``p − 1`` steps in which every rank sends
one block of ``n/p`` to its right neighbour, so the schedule has ``2(p − 1)``
steps and each rank sends ``2(p − 1)/p · n`` bytes (no bandwidth deficiency).

Block indexing (blocks ``0..p−1`` of ``n/p``):

- reduce-scatter step ``s``: rank ``r`` sends block ``(r − s) mod p`` to
  ``r + 1``, which adds it to its own copy; after ``p − 1`` steps rank ``r``
  holds block ``(r + 1) mod p`` fully reduced;
- allgather step ``s``: rank ``r`` sends block ``(r + 1 − s) mod p`` to
  ``r + 1``, which overwrites its copy.

``ports=2`` is the multiport version of §2.3.1 for two ports: the vector is
split in halves (``2p`` blocks of ``n/(2p)``), the first half runs on the ring
``r → r + 1`` (tag 0, blocks ``0..p−1`` as above) and the second concurrently
on the mirrored ring ``r → r − 1`` (tag 1, blocks ``p..2p−1``; reduce-scatter
step ``s`` sends ``p + (r + s) mod p``, allgather step ``s`` sends
``p + (r − 1 + s) mod p``), in the same steps.

Torus-aware rings (edge-disjoint Hamiltonian cycles) are not built here; the
``topology`` argument is accepted and ignored.
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
)
from .base import AlgorithmSpec, Param, Reduction, Schedule, Step, register

NAME = "ring"


def build(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    """Ring allreduce schedule on ``p`` ranks (§2.3.1).

    Parameters
    ----------
    p : int
        Number of ranks (>= 2).
    topology : Topology or None
        Unused (the logical ring is ``0 → 1 → … → p−1``).
    blocks : bool
        Attach block content (``p·ports`` blocks) for verification.
    ports : {1, 2}
        1: one ring; 2: two half-vector rings in opposite directions.

    Returns
    -------
    Schedule
        ``2(p − 1)`` steps labelled ``rs0..rs{p−2}``, ``ag0..ag{p−2}``; every
        flow carries ``1/(p·ports)`` of the vector. Without blocks all
        reduce-scatter steps share one Traffic object (and all allgather steps
        too), so memory stays O(p) at p = 16,384.
    """
    opts = SPEC.parse_options(options)
    ports = opts["ports"]
    p = check_ranks(NAME, p)
    if ports not in (1, 2):  # guarded by Param.choices; kept for direct misuse
        raise ScheduleError(f"algorithm {NAME}: ports={ports!r} is not supported")
    ranks = np.arange(p, dtype=np.int64)
    num_blocks = ports * p
    # ring 0 goes right, ring 1 (ports=2) goes left, concurrently
    src = np.tile(ranks, ports)
    dst = np.concatenate([(ranks + 1) % p, (ranks - 1) % p][:ports])
    tag = np.repeat(np.arange(ports), p)
    share = np.full(ports * p, 1.0 / num_blocks)

    if blocks:
        steps = [_block_step(src, dst, share, tag, p, ports, s, allgather=False)
                 for s in range(p - 1)]
        steps += [_block_step(src, dst, share, tag, p, ports, s, allgather=True)
                  for s in range(p - 1)]
        block_share = equal_block_share(num_blocks)
    else:
        traffic = make_traffic(src, dst, share, tag)
        rs_reduction = reduce_step_reduction(traffic, True)
        ag_reduction = Reduction.none()
        steps = [Step(traffic, rs_reduction, f"rs{s}") for s in range(p - 1)]
        steps += [Step(traffic, ag_reduction, f"ag{s}") for s in range(p - 1)]
        num_blocks, block_share = None, None
    return Schedule(NAME, f"ports={ports}", p, tuple(steps), num_blocks, block_share,
                    {"p_eff": p, "ports": ports})


def _block_step(src, dst, share, tag, p: int, ports: int, s: int, allgather: bool) -> Step:
    r = np.arange(p, dtype=np.int64)
    if allgather:
        right, left = (r + 1 - s) % p, p + (r - 1 + s) % p
    else:
        right, left = (r - s) % p, p + (r + s) % p
    blocks2d = np.concatenate([right, left][:ports])[:, None]
    traffic = make_traffic(src, dst, share, tag, blocks2d, COPY if allgather else REDUCE)
    label = f"ag{s}" if allgather else f"rs{s}"
    return Step(traffic, reduce_step_reduction(traffic, not allgather), label)


SPEC = register(AlgorithmSpec(
    name=NAME,
    build=build,
    params=(Param("ports", int, 1, (1, 2),
                  "1: one ring r→r+1; 2: the vector in halves on two rings in opposite "
                  "directions (tags 0 and 1), concurrently (§2.3.1 multiport)"),),
    doc="Ring allreduce: reduce-scatter + allgather over the ring 0→1→…→p−1, "
        "2(p−1) steps of n/p (Swing paper §2.3.1).",
))
