"""Swing allreduce (De Sensi et al., "Swing: Short-cutting Rings for Higher
Bandwidth Allreduce", NSDI'24, §3, §4 and Appendix A).

Peers (§3.1.1, eq. 2)
---------------------
``ρ(s) = Σ_{i=0..s} (−2)^i = 1, −1, 3, −5, 11, …`` and ``δ(s) = |ρ(s)|``. At
step ``s`` rank ``r`` of a 1-D torus of ``p`` ranks talks to
``π(r, s) = r + ρ(s) mod p`` if ``r`` is even, ``r − ρ(s) mod p`` if odd: the
peer *swings* left and right at distance δ(s) ≤ 2^s (node 0 talks to 1, 15,
3, 11, … on 16 nodes, Fig. 1).

On a D-dimensional torus (§4.1) each step works on one dimension and applies
eq. 2 to the node's coordinate in that dimension (its parity picks the sign,
the dimension size is the modulus). §4.1 writes the new coordinate as
``a ± δ(σ(s))``; taken literally (δ = |ρ|) an even coordinate would step +1
at both σ = 0 and σ = 1 and meet the same peer twice, so the offset used is the
signed ρ(σ(s)) of eq. 2, which is what Fig. 1, Fig. 4 and the proof of
Appendix A.1 use (δ is the distance).

Variants
--------
``bandwidth`` (§3.1.1)
    Reduce-scatter then allgather. The slice of the vector a collective works
    on is cut into ``p`` blocks; block ``b_y`` ends fully reduced on rank
    ``y``. At reduce-scatter step ``s`` rank ``r`` sends to ``q = π(r, s)``
    ``b_q`` plus every block ``q`` forwards later (Listing 1 ``get_rs_idx``
    applied to the peer from step ``s+1`` on; as printed, Listing 1 calls it
    on ``r`` from step ``s``, which would send ``2^{L−s}−1`` blocks instead
    of ``2^{L−s−1}`` — the prose "b_q plus all the blocks that q will
    transmit in the subsequent steps" is what is built). The receiver reduces
    (fan-in 2). The allgather replays the reduce-scatter backwards (last step
    first), each flow reversed, same blocks, COPY: data doubles every step.
    ``2 log2 p`` steps, ``2(p−1)/p`` of the slice sent per rank.
``latency`` (§3.1.2)
    The same peers, whole slice every step, REDUCE: ``log2 p`` steps.
``auto``
    Expanded by the engine (both variants are timed, the faster per size
    wins); the builder refuses it.

Multiport (§4.1, Fig. 4)
------------------------
``ports="max"`` runs ``2D`` collectives concurrently in the same steps, each
on its own ``1/(2D)`` slice of the vector (its own block range, ``tag`` =
collective index): *plain* collective ``k`` (tag ``k``) visits dimensions
``k, k+1, …`` (mod D); *mirrored* collective ``k`` (tag ``D+k``) visits the
same dimensions in the opposite direction (every ρ negated: on 4x4 node 0
talks to 1, 4, 3 and 12 in the first step). ``ports=1`` runs plain collective
0 alone on the whole vector.

Non-square tori (§4.2, Fig. 5)
------------------------------
Dimension ``i`` takes ``L_i`` steps (``log2 d_i`` for a power of two). A
collective cycles through its dimension order skipping exhausted dimensions,
so all collectives still advance in lock-step and take ``Σ L_i`` steps (on
2x4 the last step of every collective is on the size-4 dimension).

Any node count (§3.2, Appendix A.2)
-----------------------------------
Every schedule is a product of 1-D schedules, one per dimension, interleaved
in the collective's dimension order; a 1-D schedule of size ``d`` is:

* ``d`` a power of two: as above.
* ``d`` even, not a power of two (``bandwidth``): ``⌈log2 d⌉`` steps with
  the peers of eq. 2 mod ``d``. The send sets of Listing 1 then overlap
  across steps; per A.2 a rank that "would send a block twice sends it only
  in the last step" (the last of the steps that list it), and never sends its
  own block. No block is sent twice and no extra data is sent (Ψ unchanged).
* ``d`` odd (``bandwidth``, §3.2, Fig. 3): the first ``d−1`` coordinates run
  the even schedule on a logical ring of ``d−1`` (their own ``⌈log2(d−1)⌉``
  steps); the last coordinate ``e`` ("the odd node") exchanges directly, one
  block per flow: at each step it sends their own block to the next
  ``⌈m/2⌉`` coordinates (``m`` = how many it still has to serve; the last
  step serves all that remain) and each of them sends it its contribution to
  ``b_e``. For 7 nodes this is nodes 0, 1, 2 at step 0, 3, 4 at step 1 and 5
  at the last step, ``n/7`` each, as Fig. 3's text says (its formula
  "(p−1)/2^s" would give 6 at step 0). A rank that gets ``b_y`` from both its
  swing peer and ``e`` in one step reduces it with fan-in 3; ``e`` reduces the
  ``⌈m/2⌉`` contributions it gets in one step with fan-in ``1+⌈m/2⌉``.
* ``latency`` with ``d`` not a power of two: the paper gives no rule (A.2
  and §3.2 are stated in blocks, and a whole-vector message cannot leave out
  the contributions a peer already has). It folds as §2.3.2 does for
  recursive doubling, pairing neighbours like Open MPI/MPICH: with ``d'`` the
  largest power of two ``<= d`` and ``x = d − d'``, a ``pre`` step sends the
  whole slice of coordinate ``2i`` to ``2i+1`` (``i < x``), the remaining
  ``d'`` coordinates run the power-of-two schedule, and a ``post`` step copies
  the result back (``log2 d' + 2`` steps). A folded coordinate sits out the
  other dimensions' steps until its ``post`` step (its line-mates in those
  dimensions are folded too).

A multi-dimensional schedule is the product: at a step on dimension ``ω`` a
node sends the 1-D block set of its ``ω`` coordinate times the blocks it still
holds in every other dimension, so shares multiply and 1-D correctness carries
over. Mirrored collectives are the plain one seen through the reflection
``a → −a`` of every coordinate (mod ``d``, or mod ``d−1`` with ``e`` fixed for
odd ``d``), which is exactly "ρ negated". Every shape of ``d_i >= 2`` is
supported.

Blocks, remapping and scale
---------------------------
Shares come from block *counts* (a 1-D count depends only on the step, the
coordinate's parity being mirrored away — translation invariance — so it is
computed once per dimension from rank 0's offsets; for powers of two it is
``2^{L−1−s}``), multiplied per dimension and vectorized over all ranks, so
``blocks=False`` builds 16,384 ranks in milliseconds. ``blocks=True`` adds
the block lists (small ``p``) from the same counts' sets. Block ids: block
``c·p + label(y)`` is collective ``c``'s block ending on rank ``y``. When
every dimension is a power of two, ``label`` is the logical remapping of
§3.1.1: bit ``L−1−s`` of ``label(y)`` says whether the path from rank 0 to
``y`` uses step ``s``, which makes every send set (and every allgather
message) one contiguous range of block ids. Otherwise (the dedup of A.2 breaks
contiguity) ``label(y) = y``. Labels only permute equal-size blocks: no share
depends on them. Without blocks the allgather step reuses its reduce-scatter
step's Traffic object (flows are symmetric pairs, so reversing them gives the
same flows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.errors import ConfigError
from ..kernels.lines import expand_flows, expand_nodes, expand_shares
from ._blocks import COPY, REDUCE, check_ranks, equal_block_share
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

NAME = "swing"
VARIANTS = ("auto", "latency", "bandwidth")
PORTS = ("max", 1)

__all__ = ["NAME", "SPEC", "build", "collective_dim_orders", "delta", "peer", "rho",
           "steps_per_dim"]


# --------------------------------------------------------------------------- peers

def rho(s: int) -> int:
    """ρ(s) = Σ_{i=0..s} (−2)^i = (1 − (−2)^{s+1}) / 3 (eq. 2)."""
    return (1 - (-2) ** (s + 1)) // 3


def delta(s: int) -> int:
    """δ(s) = |ρ(s)|, the distance between peers at (per-dimension) step s."""
    return abs(rho(s))


def peer(a, s: int, m: int, mirrored: bool = False):
    """π(a, s) of eq. 2 on a ring of ``m`` (``m`` even): even ``a`` moves by
    +ρ(s), odd ``a`` by −ρ(s); a mirrored collective negates ρ."""
    a = np.asarray(a, dtype=np.int64)
    step = rho(s) * (-1 if mirrored else 1)
    return np.where(a % 2 == 0, a + step, a - step) % m


def _is_pow2(d: int) -> bool:
    return d & (d - 1) == 0


def _ceil_log2(m: int) -> int:
    return (m - 1).bit_length()


def steps_per_dim(d: int, variant: str) -> int:
    """Steps a dimension of size ``d`` takes (reduce-scatter steps for
    ``bandwidth``)."""
    if _is_pow2(d):
        return d.bit_length() - 1
    if variant == "latency":
        return (d.bit_length() - 1) + 2          # pre + log2 d' + post
    return _ceil_log2(d if d % 2 == 0 else d - 1)


def collective_dim_orders(dims_steps, start: int) -> list[int]:
    """Dimension of each step of the collective starting at dimension
    ``start``: round robin ``start, start+1, …`` skipping exhausted
    dimensions (§4.1, §4.2)."""
    left = list(dims_steps)
    num_dims = len(left)
    order, i = [], start % num_dims
    while any(left):
        if left[i]:
            order.append(i)
            left[i] -= 1
        i = (i + 1) % num_dims
    return order


# --------------------------------------------------------------------------- 1-D plans

@dataclass
class _LineStep:
    """One step of a 1-D schedule on coordinates ``0..d−1``."""

    src: np.ndarray          # int64[F] sending coordinate
    dst: np.ndarray          # int64[F] receiving coordinate
    count: np.ndarray        # int64[F] blocks of this dimension per flow
    op: np.ndarray           # int8[F] REDUCE / COPY
    red_coord: np.ndarray    # reduction pieces: coordinate, blocks, fan-in
    red_count: np.ndarray
    red_fanin: np.ndarray
    sets: list | None        # per flow: int64 array of block coordinates (blocks=True)
    symmetric: bool          # flows come in (a→b, b→a) pairs of equal count
    red_is_flows: bool = False  # reduction pieces == (dst, count, fan-in 2) of the flows, as sets


@dataclass
class _LinePlan:
    d: int
    steps: list              # [_LineStep]
    held: np.ndarray         # int64[L+1, d]: blocks a coordinate holds after τ steps
    active: np.ndarray       # bool[L+1, d]: coordinate takes part in other dims' steps
    held_sets: list | None   # [τ][a] -> int64 array of block coordinates
    pathmask: np.ndarray | None  # int64[d]: steps on the path from coordinate 0 (pow2)


def _same_pairs(a, x, b, y) -> bool:
    """Whether the pairs ``(a[i], x[i])`` and ``(b[i], y[i])`` are the same
    multiset."""
    i, j = np.lexsort((x, a)), np.lexsort((y, b))
    return bool(np.array_equal(a[i], b[j]) and np.array_equal(x[i], y[j]))


def _line_step(src, dst, count, op, red, sets, symmetric) -> _LineStep:
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    count = np.asarray(count, np.int64)
    op = np.broadcast_to(np.asarray(op, np.int8), src.shape).copy()
    coord, cnt, fan = (np.asarray(x, np.int64) for x in red)
    keep = cnt > 0
    coord, cnt, fan = coord[keep], cnt[keep], fan[keep]
    # the same pieces in another order are the same work (a node's reduction
    # time sums its pieces): a pairwise exchange reduces at its own
    # coordinate what its peer sent there
    red_is_flows = (len(coord) == len(dst) and bool(np.all(fan == 2))
                    and _same_pairs(coord, cnt, dst, count))
    return _LineStep(src, dst, count, op, coord, cnt, fan, sets, symmetric, red_is_flows)


def _send_offsets(m: int) -> list[np.ndarray]:
    """Reduce-scatter send sets of an even coordinate on a ring of ``m``
    (``m`` even) as offsets mod ``m``, after A.2's rule: a block listed at
    several steps is sent only at the last of them, the own block never.
    Odd coordinates send the negated offsets (the mirror image)."""
    steps = _ceil_log2(m)
    raw: list = [None] * steps
    reach = np.zeros(0, np.int64)               # R(0, t+1): offsets reached from step t+1 on
    for t in range(steps - 1, -1, -1):
        r = rho(t)
        # peer ρ(t) is odd: what it reaches from t+1 on is the mirror image
        raw[t] = np.concatenate(([r], r - reach))
        reach = np.concatenate((raw[t], reach))
    out: list = [None] * steps
    later = np.zeros(0, np.int64)
    for t in range(steps - 1, -1, -1):
        mod = np.unique(raw[t] % m)
        keep = np.setdiff1d(mod, later, assume_unique=True)
        out[t] = keep[keep != 0]
        later = np.union1d(later, mod)
    return out


def _ring_counts(m: int) -> np.ndarray:
    """Blocks per reduce-scatter flow at each step on a ring of ``m`` (even):
    ``2^{L−1−t}`` for a power of two, else from rank 0's offsets."""
    steps = _ceil_log2(m)
    if _is_pow2(m):
        return np.array([1 << (steps - 1 - t) for t in range(steps)], np.int64)
    return np.array([len(e) for e in _send_offsets(m)], np.int64)


def _held_from_sets(d: int, sent_per_step) -> list:
    """[τ][a] -> blocks coordinate ``a`` still holds after τ steps, given
    ``sent_per_step[t][a]`` (arrays of block coordinates)."""
    everything = np.arange(d, dtype=np.int64)
    held = [[everything] * d]
    for sent in sent_per_step:
        held.append([np.setdiff1d(held[-1][a], sent[a], assume_unique=True)
                     for a in range(d)])
    return held


def _bandwidth_plan(d: int, blocks: bool) -> _LinePlan:
    """1-D reduce-scatter on ``d`` coordinates (§3.1.1, §3.2, Fig. 3)."""
    odd = d % 2 == 1
    m = d - 1 if odd else d                     # ring of the swing ranks
    steps = _ceil_log2(m)
    counts = _ring_counts(m)
    offsets = _send_offsets(m) if (blocks or odd) else None
    ring = np.arange(m, dtype=np.int64)
    groups = []
    if odd:                                     # Fig. 3: the odd node's partners per step
        start, left = 0, m
        for t in range(steps):
            c = left if t == steps - 1 else -(-left // 2)
            groups.append(np.arange(start, start + c, dtype=np.int64))
            start, left = start + c, left - c
    plan_steps, sent_sets = [], []
    held = np.empty((steps + 1, d), np.int64)
    held[0] = d
    for t in range(steps):
        dst = peer(ring, t, m)
        cnt = np.full(m, counts[t], np.int64)
        red_coord, red_count, red_fanin = [ring], [cnt], [np.full(m, 2)]
        sets = None
        if blocks:
            sign = np.where(ring % 2 == 0, 1, -1)
            sets2d = (ring[:, None] + sign[:, None] * offsets[t][None, :]) % m
            sets = [np.sort(row) for row in sets2d]
        sent_count = np.zeros(d, np.int64)
        sent_count[:m] = counts[t]
        if odd:
            e, grp = m, groups[t]
            k = len(grp)
            own_in = (rho(t) % m) in set(offsets[t].tolist())
            src = np.concatenate((ring, np.full(k, e), grp))
            dst = np.concatenate((dst, grp, np.full(k, e)))
            cnt = np.concatenate((cnt, np.ones(2 * k, np.int64)))
            # a partner gets its own block from the odd node and (if own_in)
            # from its swing peer in the same step: fan-in 3 on that block
            red_count[0] = red_count[0].copy()
            if own_in:
                red_count[0][grp] -= 1
            red_coord += [grp, [e]]
            red_count += [np.ones(k, np.int64), [1]]
            red_fanin += [np.full(k, 3 if own_in else 2), [1 + k]]
            sent_count[grp] += 1
            sent_count[e] = k
            if blocks:
                sets = sets + [np.array([y]) for y in grp] + [np.array([e])] * k
        held[t + 1] = held[t] - sent_count
        red = (np.concatenate([np.asarray(x, np.int64) for x in red_coord]),
               np.concatenate([np.asarray(x, np.int64) for x in red_count]),
               np.concatenate([np.asarray(x, np.int64) for x in red_fanin]))
        # π is an involution and the odd node's exchanges are pairwise, both
        # ways with one block: every flow a→b has a partner b→a of equal count
        plan_steps.append(_line_step(ring if not odd else src, dst, cnt, REDUCE, red, sets,
                                     symmetric=True))
        if blocks:
            sent = list(sets[:m]) + [np.zeros(0, np.int64)] * (d - m)
            if odd:
                sent = [np.concatenate((s, [e])) if a in set(groups[t].tolist()) else s
                        for a, s in enumerate(sent)]
                sent[e] = groups[t]
            sent_sets.append(sent)
    held_sets = _held_from_sets(d, sent_sets) if blocks else None
    pathmask = _pathmask(d) if _is_pow2(d) else None
    return _LinePlan(d, plan_steps, held, np.ones((steps + 1, d), bool), held_sets, pathmask)


def _pathmask(d: int) -> np.ndarray:
    """For ``d`` a power of two: bit ``t`` of ``mask[a]`` says whether the
    (unique, Theorem A.5) path from coordinate 0 to ``a`` uses step ``t``."""
    nodes = np.zeros(1, np.int64)
    masks = np.zeros(1, np.int64)
    for t in range(d.bit_length() - 1):
        nodes = np.concatenate((nodes, peer(nodes, t, d)))
        masks = np.concatenate((masks, masks | (1 << t)))
    out = np.empty(d, np.int64)
    out[nodes] = masks
    return out


def _latency_plan(d: int) -> _LinePlan:
    """1-D whole-slice allreduce (§3.1.2), folded per §2.3.2 when ``d`` is not
    a power of two (see the module docstring)."""
    base = 1 << (d.bit_length() - 1)
    extra = d - base
    virtual = np.arange(base, dtype=np.int64)
    phys = np.where(virtual < extra, 2 * virtual + 1, virtual + extra)
    steps = []
    folded = 2 * np.arange(extra, dtype=np.int64)
    if extra:
        steps.append(_line_step(folded, folded + 1, np.ones(extra), REDUCE,
                                (folded + 1, np.ones(extra), np.full(extra, 2)), None, False))
    for t in range(base.bit_length() - 1):
        dst = phys[peer(virtual, t, base)]
        steps.append(_line_step(phys, dst, np.ones(base), REDUCE,
                                (dst, np.ones(base), np.full(base, 2)), None, False))
    if extra:
        steps.append(_line_step(folded + 1, folded, np.ones(extra), COPY,
                                ((), (), ()), None, False))
    num = len(steps)
    active = np.ones((num + 1, d), bool)
    if extra:
        active[1:num, folded] = False
    return _LinePlan(d, steps, np.ones((num + 1, d), np.int64), active, None, None)


def _reflection(d: int) -> np.ndarray:
    """Coordinate map of a mirrored collective: ``a → −a mod d`` (``d``
    even) or ``mod d−1`` with the odd node fixed (``d`` odd); under it eq. 2
    becomes eq. 2 with ρ negated."""
    a = np.arange(d, dtype=np.int64)
    if d % 2 == 0:
        return (-a) % d
    out = (-a) % (d - 1)
    out[d - 1] = d - 1
    return out


def _mirror(plan: _LinePlan) -> _LinePlan:
    perm = _reflection(plan.d)                  # an involution
    steps = []
    for st in plan.steps:
        sets = None if st.sets is None else [np.sort(perm[s]) for s in st.sets]
        steps.append(_LineStep(perm[st.src], perm[st.dst], st.count, st.op, perm[st.red_coord],
                               st.red_count, st.red_fanin, sets, st.symmetric,
                               st.red_is_flows))
    held = plan.held[:, perm]
    active = plan.active[:, perm]
    held_sets = None
    if plan.held_sets is not None:
        held_sets = [[np.sort(perm[row[perm[a]]]) for a in range(plan.d)]
                     for row in plan.held_sets]
    pathmask = None if plan.pathmask is None else plan.pathmask[perm]
    return _LinePlan(plan.d, steps, held, active, held_sets, pathmask)


# --------------------------------------------------------------------------- product

def _csr_take(ptr: np.ndarray, idx: np.ndarray, rows: np.ndarray):
    """CSR (ptr, idx) of the listed rows of a CSR."""
    lengths = (ptr[1:] - ptr[:-1])[rows]
    out_ptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lengths, out=out_ptr[1:])
    start = np.repeat(ptr[rows] - out_ptr[:-1], lengths)
    return out_ptr, idx[start + np.arange(out_ptr[-1])]


def _csr_outer_sum(ptr_a, idx_a, ptr_b, idx_b):
    """Row-wise outer sums of two CSRs over the same rows (block ids of a
    product of per-dimension sets; labels are additive over dimensions)."""
    len_a = ptr_a[1:] - ptr_a[:-1]
    len_b = ptr_b[1:] - ptr_b[:-1]
    lengths = len_a * len_b
    out_ptr = np.zeros(len(len_a) + 1, np.int64)
    np.cumsum(lengths, out=out_ptr[1:])
    row = np.repeat(np.arange(len(len_a)), lengths)
    local = np.arange(out_ptr[-1]) - out_ptr[row]
    nb = len_b[row]
    return out_ptr, idx_a[ptr_a[row] + local // nb] + idx_b[ptr_b[row] + local % nb]


def _to_csr(sets, label: np.ndarray):
    ptr = np.zeros(len(sets) + 1, np.int64)
    np.cumsum([len(s) for s in sets], out=ptr[1:])
    idx = label[np.concatenate(sets)] if len(sets) else np.zeros(0, np.int64)
    return ptr, idx.astype(np.int64)


@dataclass
class _Collective:
    tag: int
    slice_blocks: int        # blocks the collective's slice is cut into (p or 1)
    order: list              # dimension of each step
    plans: list              # per dimension _LinePlan
    labels: list | None      # per dimension int64[d]: additive block-label contribution
    held_csr: list | None    # per dimension, per τ: (ptr, idx) of held labels by coordinate


def _labels(dims, strides, order, plans, remap: bool) -> list:
    if not remap:
        return [np.arange(d, dtype=np.int64) * strides[i] for i, d in enumerate(dims)]
    total = len(order)
    out = [np.zeros(d, np.int64) for d in dims]
    seen = [0] * len(dims)
    for s, i in enumerate(order):
        out[i] += ((plans[i].pathmask >> seen[i]) & 1) << (total - 1 - s)
        seen[i] += 1
    return out


@dataclass
class _Part:
    """One collective's share of a step: the 1-D step ``line`` of dimension
    ``w`` repeated on the lines through ``bases`` (coordinates ``coords``),
    each line's blocks weighing ``unit`` of the vector."""

    coll: _Collective
    w: int
    line: _LineStep
    bases: np.ndarray        # int32[L]
    coords: np.ndarray       # int64[L, D]
    unit: np.ndarray         # float64[L]
    stride: int
    tau: list                # steps done so far in each dimension

    @property
    def num_flows(self) -> int:
        return len(self.bases) * len(self.line.src)

    @property
    def num_red(self) -> int:
        return self.num_flows if self.line.red_is_flows else (
            len(self.bases) * len(self.line.red_coord))


def _collective_part(coll: _Collective, s: int, tau: list, strides, node_bases, base_coords,
                     num_coll: int) -> _Part:
    """The lines and weights of one collective at its step ``s``: the 1-D
    step of dimension ``ω`` times the blocks held in every other dimension,
    for every line of dimension ``ω`` that takes part."""
    w = coll.order[s]
    line = coll.plans[w].steps[tau[w]]
    coords = base_coords[w]
    num_dims = coords.shape[1]
    factor = np.ones(len(coords), np.int64)
    active = np.ones(len(coords), bool)
    for i in range(num_dims):
        if i != w:
            factor *= coll.plans[i].held[tau[i], coords[:, i]]
            active &= coll.plans[i].active[tau[i], coords[:, i]]
    bases = node_bases[w]
    if not active.all():
        bases, factor, coords = bases[active], factor[active], coords[active]
    # a collective's slice is 1/num_coll of the vector, cut into
    # coll.slice_blocks blocks (p for bandwidth, 1 for latency)
    unit = factor * (1.0 / (coll.slice_blocks * num_coll))
    return _Part(coll, w, line, bases, coords, unit, int(strides[w]), list(tau))


def _part_blocks(part: _Part) -> tuple:
    """``(op, ptr, idx)`` of a part's flows: which blocks each flow carries."""
    coll, w, line = part.coll, part.w, part.line
    num_lines, nf = len(part.bases), len(line.src)
    op = np.tile(line.op, num_lines)
    if coll.slice_blocks == 1:                   # latency: one block per collective
        return (op, np.arange(num_lines * nf + 1, dtype=np.int64),
                np.full(num_lines * nf, coll.tag, np.int64))
    lp, li = _to_csr(line.sets, coll.labels[w])
    ptr, idx = _csr_take(lp, li, np.tile(np.arange(nf), num_lines))
    flow_line = np.repeat(np.arange(num_lines), nf)
    for i in range(part.coords.shape[1]):
        if i != w:
            hp, hi = coll.held_csr[i][part.tau[i]]
            ptr, idx = _csr_outer_sum(ptr, idx, *_csr_take(hp, hi, part.coords[flow_line, i]))
    return op, ptr, idx + coll.tag * coll.slice_blocks


def _step_traffic(parts: list, blocks: bool) -> tuple[Traffic, Reduction]:
    """Concatenate the parts of one step (collective after collective) into
    its traffic and reduction, written in place by the line kernels."""
    sizes = [pt.num_flows for pt in parts]
    n = sum(sizes)
    src = np.empty(n, np.int32)
    dst = np.empty(n, np.int32)
    share = np.empty(n, np.float64)
    off = 0
    for pt, size in zip(parts, sizes, strict=True):
        expand_flows(pt.bases, pt.stride, pt.line.src, pt.line.dst, pt.unit, pt.line.count,
                     src, dst, share, off)
        off += size
    tag = np.repeat(np.array([pt.coll.tag for pt in parts], np.int16), sizes)
    if blocks:
        pieces = [_part_blocks(pt) for pt in parts]
        shift = np.concatenate(([0], np.cumsum([len(idx) for _, _, idx in pieces])))
        block_ptr = np.concatenate([ptr[:-1] + k for (_, ptr, _), k in zip(pieces, shift)]
                                   + [shift[-1:]])
        traffic = Traffic(src, dst, share, tag, block_ptr,
                          np.concatenate([idx for _, _, idx in pieces]),
                          np.concatenate([op for op, _, _ in pieces]))
    else:
        traffic = Traffic(src, dst, share, tag)
    if all(pt.line.red_is_flows for pt in parts):   # share the flows' arrays
        return traffic, Reduction(traffic.dst, traffic.share, np.full(n, 2, np.int32))
    red_sizes = [pt.num_red for pt in parts]
    m = sum(red_sizes)
    node = np.empty(m, np.int32)
    red_share = np.empty(m, np.float64)
    fanin = np.empty(m, np.int32)
    off = flow_off = 0
    for pt, size, fsize in zip(parts, red_sizes, sizes, strict=True):
        if pt.line.red_is_flows:                 # every flow reduced at fan-in 2
            node[off:off + size] = dst[flow_off:flow_off + fsize]
            red_share[off:off + size] = share[flow_off:flow_off + fsize]
            fanin[off:off + size] = 2
        else:
            expand_nodes(pt.bases, pt.stride, pt.line.red_coord, node, off)
            expand_shares(pt.unit, pt.line.red_count, red_share, off)
            fanin[off:off + size] = np.tile(pt.line.red_fanin.astype(np.int32), len(pt.bases))
        off += size
        flow_off += fsize
    return traffic, Reduction(node, red_share, fanin)


def _build_steps(p: int, dims: tuple, strides: list, variant: str, collectives: list,
                 blocks: bool):
    """Reduce-scatter (bandwidth) or allreduce (latency) steps of all
    collectives in lock-step, then the reversed allgather for bandwidth."""
    num_dims = len(dims)
    grid = np.arange(p, dtype=np.int32).reshape(dims)
    node_bases = [np.take(grid, 0, axis=w).ravel() for w in range(num_dims)]
    base_coords = [np.stack(np.unravel_index(b, dims), axis=-1).astype(np.int64)
                   for b in node_bases]
    num_coll = len(collectives)
    taus = [[0] * num_dims for _ in collectives]
    fwd = []                                     # per step: (traffic, reduction, symmetric)
    for s in range(len(collectives[0].order)):
        parts, symmetric = [], True
        for coll, tau in zip(collectives, taus):
            part = _collective_part(coll, s, tau, strides, node_bases, base_coords, num_coll)
            parts.append(part)
            symmetric &= part.line.symmetric
            tau[coll.order[s]] += 1
        traffic, red = _step_traffic(parts, blocks)
        fwd.append((traffic, red, symmetric))

    if variant == "latency":
        return [Step(t, r, f"x{s}") for s, (t, r, _) in enumerate(fwd)]
    steps = [Step(t, r, f"rs{s}") for s, (t, r, _) in enumerate(fwd)]
    no_reduction = Reduction.none()
    for j, (t, _, symmetric) in enumerate(reversed(fwd)):
        if blocks:
            ag = Traffic(t.dst, t.src, t.share, t.tag, t.block_ptr, t.block_idx,
                         np.full(t.num_flows, COPY, np.int8))
        elif symmetric:
            ag = t                               # reversed pairs are the same flows
        else:
            ag = Traffic(t.dst, t.src, t.share, t.tag)
        steps.append(Step(ag, no_reduction, f"ag{j}"))
    return steps


# --------------------------------------------------------------------------- builder

def build(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    """Swing allreduce on ``p`` ranks (§3, §4, Appendix A).

    Parameters
    ----------
    p : int
        Number of ranks (>= 2).
    topology : Topology or None
        Its torus ``dims`` give the logical shape when ``p`` equals the node
        count (:func:`~.base.torus_dims`); otherwise ranks form a 1-D torus.
        Rank ``r`` sits at the row-major coordinates of ``r``.
    blocks : bool
        Attach block content (``C·p`` blocks for ``bandwidth``, ``C`` for
        ``latency``, ``C`` = number of collectives) for verification.
    variant : {"latency", "bandwidth"}
        ``"auto"`` is rejected here: the engine expands it.
    ports : {"max", 1}
        ``"max"``: ``2D`` concurrent collectives (D plain, D mirrored) on
        ``1/(2D)`` of the vector each; ``1``: one plain collective.

    Returns
    -------
    Schedule
        ``bandwidth``: steps ``rs0..rs{S−1}, ag0..ag{S−1}``; ``latency``:
        ``x0..x{S−1}``; ``S = Σ_i L_i`` (``log2 p`` for a power of two).
        ``info = {"dims", "ports", "collectives", "steps_per_dim"}``.
    """
    opts = SPEC.parse_options(options)
    variant, ports = opts["variant"], opts["ports"]
    p = check_ranks(NAME, p)
    SPEC.require_concrete(opts)
    dims = torus_dims(topology, p)
    shape = "x".join(map(str, dims))
    if math.prod(dims) != p:
        raise ConfigError(f"algorithm {NAME}: torus shape {shape} has {math.prod(dims)} "
                          f"nodes, not p={p}; the ranks must fill the torus")
    if any(d < 2 for d in dims):
        raise ConfigError(f"algorithm {NAME}: torus shape {shape} has a dimension of size "
                          f"{min(dims)}, which has no peer to swing to; Swing runs on any torus "
                          f"whose dimensions are all >= 2 (powers of two, other even sizes per "
                          f"§3.2, odd sizes with the odd node of Fig. 3)")
    num_dims = len(dims)
    bandwidth = variant == "bandwidth"
    if bandwidth:
        plain = [_bandwidth_plan(d, blocks) for d in dims]
    else:
        plain = [_latency_plan(d) for d in dims]
    per_dim = [len(pl.steps) for pl in plain]
    remap = bandwidth and all(_is_pow2(d) for d in dims)
    specs = [(0, False)] if ports == 1 else \
        [(k, False) for k in range(num_dims)] + [(k, True) for k in range(num_dims)]
    mirrored = [_mirror(pl) for pl in plain] if ports != 1 else None
    strides = [math.prod(dims[i + 1:]) for i in range(num_dims)]
    collectives = []
    for tag, (start, is_mirror) in enumerate(specs):
        plans = mirrored if is_mirror else plain
        order = collective_dim_orders(per_dim, start)
        labels = held_csr = None
        if blocks and bandwidth:
            labels = _labels(dims, strides, order, plans, remap)
            held_csr = [[_to_csr(row, labels[i]) for row in plans[i].held_sets]
                        for i in range(num_dims)]
        collectives.append(_Collective(tag, p if bandwidth else 1, order, plans, labels,
                                       held_csr))
    steps = _build_steps(p, dims, strides, variant, collectives, blocks)
    num_coll = len(collectives)
    num_blocks = num_coll * (p if bandwidth else 1)
    info = {"dims": dims, "ports": ports, "collectives": num_coll,
            "steps_per_dim": tuple(per_dim)}
    return Schedule(NAME, variant, p, tuple(steps),
                    num_blocks if blocks else None,
                    equal_block_share(num_blocks) if blocks else None, info,
                    note=shape_note(topology, p, gridless=True))


SPEC = register(AlgorithmSpec(
    name=NAME,
    build=build,
    params=(
        Param("variant", str, "auto", VARIANTS,
              "latency: whole-vector exchanges with the swinging peers, log2 p steps "
              "(§3.1.2); bandwidth: reduce-scatter + allgather, 2 log2 p steps (§3.1.1); "
              "auto: the faster per size"),
        Param("ports", str, "max", PORTS,
              "max: 2D concurrent collectives (D plain, D mirrored) on 1/(2D) of the vector "
              "each (§4.1); 1: a single plain collective", convert=convert_ports),
    ),
    doc="Swing allreduce: peers at distance δ(s) ≤ 2^s swinging left and right (eq. 2), one "
        "torus dimension per step, 2D plain/mirrored collectives for multiport; any node "
        "count (Swing paper §3, §4, Appendix A).",
    auto_param="variant",
))
