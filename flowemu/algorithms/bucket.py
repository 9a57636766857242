"""Bucket allreduce (Swing paper, De Sensi et al., §2.3.4 and §5.2 Fig. 9).

On a ``D``-dimensional torus a bucket collective runs ``D`` ring
reduce-scatters, one per dimension, each along the rings of that dimension
(neighbour to neighbour) and each on the data the previous one left reduced
(``1/d`` of it), then ``D`` ring allgathers in the reverse dimension order.
On an ``a × a`` torus: reduce-scatter along rows, then columns; allgather
along columns, then rows (§2.3.4).

Concurrent collectives (option ``ports``)
------------------------------------------
``max`` (default): ``2D`` collectives, each on ``1/(2D)`` of the vector
(tags ``0..2D−1``). Collective ``t < D`` starts at paper dimension ``t`` and
runs its rings in the + direction, collective ``D + t`` starts at the same
dimension in the − direction; each visits dimensions ``t, t+1, …`` cyclically.
So in every phase each (dimension, direction) is used by exactly one
collective and each link direction carries at most one ring (Ξ = 1, §2.3.4:
"each of the 2·D bucket algorithms starts from a different dimension and
direction"). On a 1-D torus this is the bidirectional ring.
``1``: a single bucket collective (paper dimension 0 first, + direction).

Paper dimension ``j`` is torus axis ``D − 1 − j`` (the fastest-varying
coordinate first): the paper's rows (its first reduce-scatter) are the
horizontal rings of row-major node ids, and it is the convention of
:mod:`.recdoub` (Fig. 2).

Non-square tori (§5.2, Fig. 9)
------------------------------
All collectives move to the next dimension together: "each step is completed
only after all the collectives running on the largest dimension are
completed". Phase ``i`` (``2D`` phases: ``D`` reduce-scatters, ``D``
allgathers) lasts ``max(d − 1)`` steps over the dimensions its collectives
run on (``d_max − 1`` with ``2D`` collectives, so ``2D(d_max − 1)`` steps in
all, the latency deficiency of a ``d_max^D`` torus); a collective on a
shorter dimension sends in the phase's first ``d − 1`` steps and has no
flows in the rest. With one collective every phase lasts ``d − 1`` of its
own dimension.

Blocks
------
Collective ``t`` owns blocks ``t·p … t·p + p − 1`` of ``n/(C·p)``; block
``t·p + x`` has one digit per axis (``x`` read as a row-major node id). In a
reduce-scatter (allgather) on axis ``a`` of size ``d`` a node at coordinate
``k`` sends the chunk of digit ``(k − e·s) mod d`` (``(k + e − e·s) mod
d``) to ``k + e`` (``e = ±1`` the collective's direction, ``s`` the step in
the phase), with the digits of earlier dimensions fixed to what the node
owns after their reduce-scatter (``(k + e) mod d``) and the digits of later
dimensions free; it is the ring of :mod:`.ring` applied per dimension.
"""

from __future__ import annotations

import math

import numpy as np

from ._blocks import COPY, REDUCE, check_ranks, equal_block_share, make_traffic
from .base import (
    AlgorithmSpec,
    Param,
    Reduction,
    Schedule,
    Step,
    Traffic,
    convert_ports,
    shape_note,
    torus_dims,
)
from .registry import register

NAME = "bucket"
PORT_CHOICES = ("max", 1)


def collectives(dims: tuple[int, ...], ports) -> list[tuple[tuple[int, ...], int]]:
    """``(axis order, direction)`` of each concurrent bucket collective (tag =
    list index): paper dimension ``j`` is axis ``D − 1 − j``."""
    num_dims = len(dims)

    def order(start: int) -> tuple[int, ...]:
        return tuple(num_dims - 1 - (start + i) % num_dims for i in range(num_dims))

    if ports == 1:
        return [(order(0), 1)]
    return [(order(t), 1) for t in range(num_dims)] + [(order(t), -1) for t in range(num_dims)]


class _Geometry:
    """Coordinates and strides of the logical torus, shared by every phase."""

    def __init__(self, dims: tuple[int, ...]):
        self.dims = dims
        self.p = math.prod(dims)
        self.ranks = np.arange(self.p, dtype=np.int64)
        self.strides = [math.prod(dims[a + 1:]) for a in range(len(dims))]
        self.coords = [(self.ranks // st) % d for st, d in zip(self.strides, dims)]

    def neighbour(self, axis: int, e: int) -> np.ndarray:
        d, st, k = self.dims[axis], self.strides[axis], self.coords[axis]
        return self.ranks + (((k + e) % d) - k) * st

    def free_offsets(self, axes) -> np.ndarray:
        out = np.zeros(1, np.int64)
        for a in axes:
            out = (out[:, None] + self.strides[a] * np.arange(self.dims[a])[None, :]).reshape(-1)
        return out


def build(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    """Bucket allreduce schedule on ``p`` ranks (§2.3.4, §5.2).

    Parameters
    ----------
    p : int
        Number of ranks (>= 2).
    topology : Topology or None
        Its logical torus shape (:func:`~.base.torus_dims`); a 1-D shape
        (no topology, a 1-D torus) gives ring allreduce.
    blocks : bool
        Attach block content (``C·p`` blocks) for verification.
    ports : {"max", 1}
        ``max``: ``2D`` concurrent collectives; ``1``: one.

    Returns
    -------
    Schedule
        Steps labelled ``rs{i}.{s}`` (reduce-scatter phase ``i`` = the
        ``i``-th dimension of each collective, step ``s``) then ``ag{i}.{s}``
        for ``i = D−1 … 0``; ``info = {"p_eff": p, "collectives": C,
        "dims": dims}``. Without blocks, steps with the same flows share one
        Traffic object (a phase's steps, and an allgather phase with its
        reduce-scatter phase).
    """
    opts = SPEC.parse_options(options)
    p = check_ranks(NAME, p)
    dims = torus_dims(topology, p)
    colls = collectives(dims, opts["ports"])
    num = len(colls)
    geo = _Geometry(dims)
    num_dims = len(dims)

    cache: dict = {}
    rs_steps, ag_phases = [], []
    for i in range(num_dims):
        sizes = [dims[order[i]] for order, _ in colls]
        length = max(sizes) - 1
        rs_phase, ag_phase = [], []
        for s in range(length):
            active = tuple(t for t in range(num) if s < sizes[t] - 1)
            if blocks:
                rs = _phase_traffic(geo, colls, i, active, s, allgather=False)
                ag = _phase_traffic(geo, colls, i, active, s, allgather=True)
                rs_red = Reduction.from_reduce_flows(rs)
                ag_red = Reduction.none()
            else:
                key = (i, active)
                if key not in cache:
                    traffic = _phase_traffic(geo, colls, i, active, None, allgather=False)
                    cache[key] = (traffic, Reduction.from_reduce_flows(traffic))
                rs, rs_red = cache[key]
                ag, ag_red = rs, _NO_REDUCTION
            rs_phase.append(Step(rs, rs_red, f"rs{i}.{s}"))
            ag_phase.append(Step(ag, ag_red, f"ag{i}.{s}"))
        rs_steps += rs_phase
        ag_phases.append(ag_phase)
    steps = rs_steps + [st for phase in reversed(ag_phases) for st in phase]
    num_blocks = num * p
    return Schedule(NAME, f"ports={num}", p, tuple(steps),
                    num_blocks if blocks else None,
                    equal_block_share(num_blocks) if blocks else None,
                    {"p_eff": p, "collectives": num, "dims": dims},
                    note=shape_note(topology, p, gridless=True))


_NO_REDUCTION = Reduction.none()


def _phase_traffic(geo: _Geometry, colls, i: int, active, s, allgather: bool) -> Traffic:
    """Flows of the active collectives in phase ``i`` (their ``i``-th
    dimension); with ``s`` given, block content of step ``s`` of the
    reduce-scatter or allgather."""
    p, num = geo.p, len(colls)
    src, dst, share, tag, blocks = [], [], [], [], []
    for t in active:
        order, e = colls[t]
        axis = order[i]
        src.append(geo.ranks)
        dst.append(geo.neighbour(axis, e))
        done = math.prod(geo.dims[a] for a in order[:i + 1])
        share.append(np.full(p, 1.0 / (num * done)))
        tag.append(np.full(p, t, np.int16))
        if s is not None:
            k = geo.coords[axis]
            d = geo.dims[axis]
            chunk = (k + e - e * s) % d if allgather else (k - e * s) % d
            base = t * p + chunk * geo.strides[axis]
            for a in order[:i]:
                base = base + ((geo.coords[a] + e) % geo.dims[a]) * geo.strides[a]
            free = geo.free_offsets(order[i + 1:])
            blocks.append(base[:, None] + free[None, :])
    src, dst = np.concatenate(src), np.concatenate(dst)
    share, tag = np.concatenate(share), np.concatenate(tag)
    if s is None:
        return make_traffic(src, dst, share, tag)
    counts = np.concatenate([np.full(p, b.shape[1], np.int64) for b in blocks])
    block_ptr = np.concatenate([[0], np.cumsum(counts)])
    block_idx = np.concatenate([b.reshape(-1) for b in blocks])
    op = np.full(len(src), COPY if allgather else REDUCE, np.int8)
    return Traffic(src, dst, share, tag, block_ptr, block_idx, op)


SPEC = register(AlgorithmSpec(
    name=NAME,
    build=build,
    params=(Param("ports", int, "max", PORT_CHOICES,
                  "max: 2D concurrent bucket collectives on 1/(2D) of the vector each, "
                  "starting from different dimensions and directions (Ξ = 1); 1: a single "
                  "bucket collective (§2.3.4)",
                  convert=convert_ports),),
    doc="Bucket allreduce: a ring reduce-scatter along each torus dimension, then ring "
        "allgathers in reverse order; 2D concurrent collectives moving between dimensions "
        "together, 2D(d_max−1) steps (Swing paper §2.3.4, §5.2).",
    topology_bound=True,   # its dimension rings exchange between torus neighbours
))
