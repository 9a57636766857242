"""``dualroot``: Träff's doubly-pipelined, dual-root reduction-to-all
(J. L. Träff, "A Doubly-pipelined, Dual-root Reduction-to-all Algorithm and
Implementation", 2021).

The ``p`` ranks form two post-order numbered binary trees, as balanced and
complete as possible (§1.1): ranks ``0..⌈p/2⌉−1`` and ``⌈p/2⌉..p−1``; the
root of a tree is its highest rank, its first child ``i−1`` and its second
child the root of the lower-numbered subtree. The two roots are each other's
dual. The vector is cut into ``b`` equal blocks. In round ``j`` a processor
of depth ``d`` (Algorithm 1) exchanges with its first child (receives block
``j``, sends result block ``j−d−1``), then with its second child, then with
its parent (sends block ``j``, receives result block ``j−d``) or, as a root,
with the dual root (block ``j`` both ways). Every exchange is one
bidirectional step of ``m/b`` bytes each way (the paper's telephone model).
Algorithm 1 loops ``j`` up to ``b + d − 1``; a processor's children receive
the last result block ``b − 1 = j − (d + 1)`` in round ``j = b + d``, so a
non-leaf runs that one extra round with its children (each exchange is
indexed by the child's round: the parent's round ``j`` is the child's).

Global steps. A processor's three exchanges of round ``j`` happen in three
consecutive steps, and a child's parent-exchange is its parent's exchange
with it, so the processor whose parent-exchange of round ``j`` is at step
``T + 3j`` has its first child's at ``T − 2 + 3j`` and its second child's at
``T − 1 + 3j``; both roots exchange with each other at ``3j``. Every rank
takes part in at most one exchange per step. Exchanges that move no block
(blocks ``j < 0`` or ``j ≥ b`` "contain 0 elements", Algorithm 1) are left
out, and so are steps with no exchange (only at ``p <= 3``). With trees of
height ``H`` (depth of the deepest leaf; the roots alone: ``H = 0``) the
first block reaches the roots after ``2H`` steps, the dual exchange takes
one, the last leaf has it ``2H`` steps later and every further block takes
three (§1.2): ``4H + 1 + 3(b − 1)`` steps for complete trees, the paper's
``4h − 3 + 3(b − 1)`` with ``h = H + 1`` levels per tree. (§1.2 writes
``p = 2^h − 2``; complete trees of ``h`` levels hold ``p = 2^{h+1} − 2``
ranks — the round count is the one of ``h`` levels.) For other ``p`` the
count is ``max(3d − w) + max(w) + 1 + 3(b − 1)`` minus empty steps, ``d`` a
rank's depth and ``w`` its step offset below its root (2 per first-child
edge, 1 per second-child edge).

Reduction: every received partial block is combined into the receiver's
own (fan-in 2), the roots once more with their dual's block (§1.2: at most
3 reductions of ``m/b`` per round).

``blocks=auto`` picks the ``b`` that minimises the paper's cost
``steps(b) · (α' + β·m/b)`` for the size (§1.2, "Pipelining Lemma"), with
``β = 1/bandwidth`` and ``α'`` the network's α plus the latency of the
longest tree edge (hops × (link + hop latency)); ``flowemu.simulate`` asks
for every size (:func:`schedules_for_sizes`), a plain :func:`build` uses
:data:`DEFAULT_SIZE` on the default :class:`~flowemu.core.network.Network`.

Repeated steps share one :class:`Traffic` and one :class:`Reduction` object
(without block content), so the engine routes and solves each distinct
pattern once: a schedule has about ``8H + 6`` distinct steps whatever ``b``.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.network import Network
from ._blocks import COPY, REDUCE, check_ranks, equal_block_share
from .base import AlgorithmSpec, Param, Reduction, Schedule, Step, StepLabels, Steps, Traffic
from .registry import register

__all__ = ["AUTO_MAX_BLOCKS", "DEFAULT_SIZE", "MAX_BLOCKS", "auto_blocks", "build", "dual_trees",
           "schedules_for_sizes", "step_count"]

NAME = "dualroot"
#: vector size (bytes) a plain :func:`build` with ``blocks=auto`` plans for
DEFAULT_SIZE = 256 * 2**20
#: most pipeline blocks of ``blocks=N``
MAX_BLOCKS = 100_000
#: most pipeline blocks ``blocks=auto`` picks (without start-up latency the
#: cost falls with every block; past a few thousand the gain is nil)
AUTO_MAX_BLOCKS = 4096


def _convert_blocks(raw):
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text == "auto":
            return "auto"
        value = int(text)
    elif isinstance(raw, (bool, np.bool_)) or not isinstance(raw, (int, np.integer)):
        raise TypeError(raw)
    else:
        value = int(raw)
    if not 1 <= value <= MAX_BLOCKS:
        raise ValueError(raw)
    return value


# --------------------------------------------------------------------------- trees

def dual_trees(p: int) -> dict:
    """The two post-order trees of §1.1 on ranks ``0..p−1``.

    Returns a dict of int64[p] arrays ``parent`` (the dual root for a root),
    ``depth``, ``offset`` (``w``: 2 per first-child edge, 1 per second-child
    edge from the root) and ``first`` (1 where the rank is its parent's
    first child), plus ``roots``. Built level by level (numpy over the
    subtrees of a level)."""
    parent = np.empty(p, np.int64)
    depth = np.zeros(p, np.int64)
    offset = np.zeros(p, np.int64)
    first = np.zeros(p, np.int64)
    n0 = (p + 1) // 2
    lo = np.array([0, n0], np.int64)
    size = np.array([n0, p - n0], np.int64)
    roots = lo + size - 1
    parent[roots] = roots[::-1]
    # subtrees of the current level: first rank, size, depth and offset of its root
    d = np.zeros(2, np.int64)
    w = np.zeros(2, np.int64)
    while len(lo):
        root = lo + size - 1
        depth[root], offset[root] = d, w
        rest = size - 1
        # left (second-child) subtree size of a complete tree of ``size`` nodes
        h = np.floor(np.log2(np.maximum(size, 1))).astype(np.int64)
        half = np.where(h > 0, 2 ** np.maximum(h - 1, 0), 0)
        last = size - (2 ** h - 1)
        left = np.where(size > 1, half - 1 + np.minimum(last, half), 0)
        right = rest - left
        has_r, has_l = right > 0, left > 0
        c0 = root - 1                       # first child: i − 1 (right subtree)
        c1 = lo + left - 1                  # second child: root of the left subtree
        parent[c0[has_r]] = root[has_r]
        first[c0[has_r]] = 1
        parent[c1[has_l]] = root[has_l]
        # a lone child is i − 1, the first child (its exchange two steps early)
        first[c1[has_l & ~has_r]] = 1
        lo = np.concatenate([lo[has_r] + left[has_r], lo[has_l]])
        size = np.concatenate([right[has_r], left[has_l]])
        d = np.concatenate([d[has_r] + 1, d[has_l] + 1])
        w = np.concatenate([w[has_r] + 2, w[has_l] + np.where(has_r[has_l], 1, 2)])
    return {"parent": parent, "depth": depth, "offset": offset, "first": first,
            "roots": roots}


def _edges(p: int, b: int):
    """Per rank ``v`` (its exchange with its parent, or a root's with its
    dual): the step of round 0 (``−w`` shifted so the first step is 0), the
    number of rounds, the round from which a result block comes down
    (``d``, never for roots) and the shift."""
    t = dual_trees(p)
    w, d = t["offset"], t["depth"]
    is_root = np.zeros(p, bool)
    is_root[t["roots"]] = True
    shift = int(w.max())
    start = shift - w                                  # step of round 0
    rounds = np.where(is_root, b, b + d)               # rounds j = 0..b+d−1 (roots: b)
    down_from = np.where(is_root, np.iinfo(np.int64).max // 4, d)
    return t, start, rounds, down_from


def step_count(p: int, b: int) -> int:
    """Steps of the schedule: the steps that hold at least one exchange
    (interval union per residue mod 3, no schedule built)."""
    p, b = check_ranks(NAME, p), int(b)
    t, start, _, down_from = _edges(p, b)
    # rounds with a block going up (j < b) and going down (d <= j < b + d)
    k = start // 3
    down = np.ones(p, bool)
    down[t["roots"]] = False
    res = np.concatenate([start % 3, start[down] % 3])
    k0 = np.concatenate([k, k[down] + down_from[down]])
    k1 = k0 + b                                        # half-open, in units of 3 steps
    total = 0
    for r in range(3):
        a0, a1 = k0[res == r], k1[res == r]
        if not len(a0):
            continue
        order = np.argsort(a0, kind="stable")
        a0, a1 = a0[order], a1[order]
        # each interval adds what lies beyond every earlier one's end
        prev = np.concatenate([[a0[0]], np.maximum.accumulate(a1)[:-1]])
        total += int(np.maximum(a1 - np.maximum(a0, prev), 0).sum())
    return total


# --------------------------------------------------------------------------- schedule

def _schedule(p: int, b: int, blocks: bool) -> Schedule:
    t, start, rounds, down_from = _edges(p, b)
    parent = t["parent"]
    end = start + 3 * (rounds - 1)                    # step of the last round
    first_step, last_step = int(start.min()), int(end.max())
    # The pattern of a step depends only on its residue mod 3 and on which of
    # the steps where some rank starts, starts sending results down, stops
    # sending up, or stops, lie at or before it: one Traffic per
    # (residue, segment) when there is no block content.
    cuts = np.unique(np.concatenate([start, start + 3 * np.minimum(down_from, rounds),
                                     start + 3 * b, end + 1]))
    share = 1.0 / b
    # the steps as arrays: the distinct steps, each step's index in them
    cache: dict = {}
    patterns: list[Step] = []
    order: list[int] = []
    for s in range(first_step, last_step + 1):
        key = (s % 3, int(np.searchsorted(cuts, s, side="right")))
        if not blocks and key in cache:
            if cache[key] is not None:
                order.append(cache[key])
            continue
        act = np.flatnonzero((start <= s) & (s <= end) & ((s - start) % 3 == 0))
        j = (s - start[act]) // 3
        up = j < b
        down = j >= down_from[act]
        u, dn = act[up], act[down]
        src = np.concatenate([u, parent[dn]]).astype(np.int32)
        dst = np.concatenate([parent[u], dn]).astype(np.int32)
        if len(src) == 0:
            cache[key] = None
            continue
        op = np.concatenate([np.full(len(u), REDUCE, np.int8), np.full(len(dn), COPY, np.int8)])
        sh = np.full(len(src), share)
        red = Reduction(dst[: len(u)], sh[: len(u)], np.full(len(u), 2, np.int32))
        if blocks:
            idx = np.concatenate([j[up], j[down] - down_from[act][down]]).astype(np.int32)
            traffic = Traffic(src, dst, sh, None, np.arange(len(src) + 1, dtype=np.int64),
                              idx, op)
        else:
            traffic = Traffic(src, dst, sh)
            cache[key] = len(patterns)
        order.append(len(patterns))
        patterns.append(Step(traffic, red, f"s{len(order) - 1}"))
    H = int(t["depth"].max())
    info = {"p_eff": p, "pipeline_blocks": b, "tree_height": H,
            "distinct_steps": len(patterns)}
    steps = Steps(patterns, order, StepLabels((("s", len(order)),)))
    return Schedule(NAME, f"b={b}", p, steps, b if blocks else None,
                    equal_block_share(b) if blocks else None, info)


# --------------------------------------------------------------------------- blocks=auto

def _round_latency(p: int, topology, network) -> float:
    """α' of the cost: α plus the latency of the longest tree or dual edge
    (a single switch, 2 hops, without a topology)."""
    lat = network.link_latency + network.hop_latency
    hops = 2
    if topology is not None:
        t = dual_trees(p)
        v = np.arange(p)
        routes = topology.route(v.astype(np.int64), t["parent"].astype(np.int64))
        hops = int(np.max(routes.hops)) if len(routes.hops) else 0
    return float(network.alpha + hops * lat)


def auto_blocks(p: int, size: float, alpha: float, beta: float) -> int:
    """The ``b`` minimising ``steps(b)·(α + β·size/b)`` (§1.2): ``steps`` is
    affine in ``b`` once ``b`` exceeds the trees' fill (``A + c·b``), so the
    optimum is next to ``√(A·β·size/(c·α))``; small ``b`` are priced exactly.
    At most :data:`AUTO_MAX_BLOCKS` and ``size`` (one byte a block)."""
    cap = int(max(1, min(AUTO_MAX_BLOCKS, math.floor(size))))
    far = 4 * p + 16
    c = step_count(p, far + 1) - step_count(p, far)
    A = step_count(p, far) - c * far
    if alpha <= 0:          # no start-up cost: the finest pipeline is the cheapest
        return cap
    x = math.sqrt(max(A, 1) * beta * size / (c * alpha))
    cands = {1, cap, math.floor(x), math.ceil(x), *range(1, min(cap, 8) + 1)}
    best = min((b for b in cands if 1 <= b <= cap),
               key=lambda b: (step_count(p, b) * (alpha + beta * size / b), b))
    return int(best)


def build(p: int, topology=None, blocks: bool = False, /, **options) -> Schedule:
    """Träff's doubly-pipelined dual-root allreduce on ``p`` ranks.

    Parameters
    ----------
    p : int
        Ranks (any ``p >= 2``).
    topology : Topology, optional
        Used by ``blocks=auto`` for the edge latency only.
    blocks : bool (positional)
        Attach block content (one block per pipeline block) for the verifier.
        The *option* ``blocks`` (keyword) is the number of pipeline blocks.
    blocks= : "auto" or int
        Pipeline blocks ``b`` (1..1000000); ``auto``: the ``b`` of
        :func:`auto_blocks` for :data:`DEFAULT_SIZE` on the default network.
    """
    opts = SPEC.parse_options(options)
    p = check_ranks(NAME, p)
    b = opts["blocks"]
    if b == "auto":
        net = Network()
        b = auto_blocks(p, DEFAULT_SIZE, _round_latency(p, topology, net), 1.0 / net.bandwidth)
    return _schedule(p, int(b), bool(blocks))


def schedules_for_sizes(p, topology, network, sizes, options, blocks=False):
    """``[(schedule, size indices)]``: one schedule per distinct ``b`` over
    the run's sizes (``blocks=auto``), or the fixed ``b`` for all."""
    opts = SPEC.parse_options(options)
    p = check_ranks(NAME, p)
    sizes = np.asarray(sizes, dtype=np.float64)
    if opts["blocks"] != "auto":
        return [(_schedule(p, int(opts["blocks"]), blocks), np.arange(len(sizes)))]
    alpha, beta = _round_latency(p, topology, network), 1.0 / network.bandwidth
    groups: dict = {}
    for i, size in enumerate(sizes):
        groups.setdefault(auto_blocks(p, float(size), alpha, beta), []).append(i)
    return [(_schedule(p, b, blocks), np.asarray(idx)) for b, idx in groups.items()]


SPEC = register(AlgorithmSpec(
    NAME, build,
    (Param("blocks", str, "auto", None,
           "pipeline blocks b: auto (the b minimising (4h−3+3(b−1))(α+βm/b) for the size) "
           f"or an integer 1..{MAX_BLOCKS}", convert=_convert_blocks),),
    "Träff's doubly-pipelined dual-root allreduce: two post-order binary trees whose "
    "roots exchange, b blocks pipelined up and down, 4h−3+3(b−1) steps of m/b",
    sized=schedules_for_sizes,
))
