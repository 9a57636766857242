"""The textbook algorithms of broadcast, reduce, gather, scatter and
all-to-all, on the logical ranks ``0..p−1`` (R. Thakur, R. Rabenseifner and
W. Gropp, "Optimization of Collective Communication Operations in MPICH",
IJHPCA 19(1), 2005, §3–4: binomial trees, van de Geijn's scatter + allgather
broadcast, Rabenseifner's reduce-scatter + gather reduce, Bruck's allgather
and all-to-all (J. Bruck et al., IEEE TPDS 8(11), 1997); Sparbit's allgather
(W. Loch and G. Koslovski, "Sparbit: a new logarithmic-cost and data
locality-aware MPI Allgather algorithm", SBAC-PAD 2021, as Open MPI's
``ompi_coll_base_allgather_intra_sparbit`` runs it); the all-to-all's
pairwise exchange as MPICH's ``MPIR_Alltoall_pairwise``, for any ``p``). Reduce-scatter and allgather are
the halves of the allreduces (:mod:`.halves`).

Sizes are those of :mod:`.collectives` (block ``b`` belongs to rank ``b``:
``p`` blocks of ``n/p``, or ``p²`` for all-to-all, block ``i·p + j`` from
``i`` to ``j``; a broadcast or reduce moves the whole vector, one block).
Every schedule is bulk synchronous; the α-β times below are for a network
without contention (one message a rank a step, links of bandwidth ``B``):

================  ==============  ====================================  ==========================
collective        name            steps                                 time
================  ==============  ====================================  ==========================
broadcast         binomial        ⌈log₂p⌉: v − 2^k sends to v, top bit   ⌈log₂p⌉(α + n/B)
reduce            binomial        ⌈log₂p⌉: the same tree, leaves first  ⌈log₂p⌉(α + n/B)
gather, scatter   linear          1: every rank ↔ the root               α + (p−1)/p · n/B at the root
gather, scatter   binomial        ⌈log₂p⌉: subtrees' blocks              ⌈log₂p⌉α + (p−1)/p · n/B (p = 2^k)
broadcast         vandegeijn      binomial scatter + ring (or recursive  the two added
                                  doubling) allgather
reduce_scatter    pairwise        p − 1: r sends block r + s to r + s    (p−1)(α + n/(pB))
broadcast/reduce  chain           k + p − 2: k segments along the chain  (k + p − 2)(α + n/(kB))
broadcast/reduce  bintree         k + D − 1: k segments, binary tree     (k + D − 1)(α + 2n/(kB)), D = ⌊log₂p⌋
                                                                        (a deepest parent with 2 children)
reduce            rabenseifner    recursive halving + binomial gather    2(log₂p α + (p−1)/p · n/B)
allgather         bruck           ⌈log₂p⌉: r sends min(2^k, p−2^k) blocks ⌈log₂p⌉α + (p−1)/p · n/B
allgather         sparbit         ⌈log₂p⌉: r sends to r + d, d = 2^(L−1)  ⌈log₂p⌉α + (p−1)/p · n/B
                                  … 1, the blocks r, r − 2d, r − 4d, …
alltoall          bruck           ⌈log₂p⌉: offsets with bit k set move   ⌈log₂p⌉α + ≈ n/(2B) a step
alltoall          linear          1: every pair at once                  α + (p−1)/p · n/B per rank port
alltoall          pairwise        p − 1: r sends to r + s, gets r − s    (p−1)(α + n/(pB))
================  ==============  ====================================  ==========================

(``v`` is a rank relative to the root, ``(r − root) mod p``; the binomial
tree's parent of ``v`` is ``v − 2^k`` for ``2^k`` the lowest set bit of
``v``, and its subtree the ranks ``v … v + 2^k − 1``: step ``k`` of a
broadcast or scatter (``k`` from the top bit down) sends to every ``v`` whose
lowest set bit is ``2^k``, a reduce or gather (``k`` from 0 up) sends from
them.)
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ConfigError
from ._blocks import (
    COPY,
    MAX_SEGMENTS,
    REDUCE,
    check_ranks,
    check_root,
    check_segments,
    equal_block_share,
    ragged_traffic,
    reduce_step_reduction,
)
from .base import AlgorithmSpec, Param, Reduction, Schedule, Step, Traffic
from .registry import register

__all__ = ["build_classic", "sparbit_counts"]


def _traffic(src, dst, share, blocks, lists, op) -> Traffic:
    """Flows with their block lists when ``blocks``."""
    return ragged_traffic(src, dst, share, lists if blocks else None, op)


def _step(tr: Traffic, reduces: bool, label: str) -> Step:
    return Step(tr, reduce_step_reduction(tr, reduces), label)


# ------------------------------------------------------------------ the builders

def _binomial_rounds(p):
    return max(1, (p - 1).bit_length())


def _binomial(p, collective, blocks, root):
    """Broadcast / reduce of the whole vector (one block) over a binomial
    tree of relative ranks; gather / scatter of the subtrees' blocks."""
    rounds = _binomial_rounds(p)
    v = np.arange(p)
    absolute = (v + root) % p
    steps = []
    down = collective in ("broadcast", "scatter")
    # the tree: the parent of relative rank v is v − m, m = v's lowest set
    # bit; its subtree is v .. v + m − 1. Down the tree from the top bit, up
    # it from the lowest.
    for k in (range(rounds - 1, -1, -1) if down else range(rounds)):
        m = 1 << k
        child = v[((v & m) != 0) & ((v & (m - 1)) == 0)]
        par = child - m
        if collective in ("broadcast", "reduce"):
            share = np.ones(len(par))
            lists = [np.zeros(1, np.int64)] * len(par)
        else:
            hi = np.minimum(child + m, p)           # the child's subtree: v .. hi − 1
            share = (hi - child) / p
            lists = [(np.arange(a, b) + root) % p for a, b in zip(child, hi)]
        if collective in ("broadcast", "scatter"):
            src, dst = absolute[par], absolute[child]
        else:
            src, dst = absolute[child], absolute[par]
        reduces = collective == "reduce"
        tr = _traffic(src, dst, share, blocks, lists if blocks else [],
                      REDUCE if reduces else COPY)
        steps.append(_step(tr, reduces, f"k{k}"))
    return steps, (1 if collective in ("broadcast", "reduce") else p)


def _linear(p, collective, blocks, root):
    others = np.array([r for r in range(p) if r != root], np.int64)
    lists = [np.array([r]) for r in others]
    ones = np.full(len(others), root)
    src, dst = (others, ones) if collective == "gather" else (ones, others)
    tr = _traffic(src, dst, np.full(len(others), 1.0 / p), blocks, lists, COPY)
    return [_step(tr, False, collective)], p


def _alltoall(p, blocks, pairwise):
    r = np.arange(p)
    if pairwise:   # every step its own pattern; the senders and shares are shared
        src, share = r.astype(np.int32), np.full(p, 1.0 / p)
        steps = []
        for s in range(1, p):
            dst = (r + s) % p
            tr = _traffic(src, dst, share, blocks, (r * p + dst)[:, None], COPY)
            steps.append(_step(tr, False, f"s{s}"))
        return steps, p * p
    i, j = np.divmod(np.arange(p * p), p)
    keep = i != j
    i, j = i[keep], j[keep]
    tr = _traffic(i, j, np.full(len(i), 1.0 / p), blocks, (i * p + j)[:, None], COPY)
    return [_step(tr, False, "all")], p * p


def _bruck_allgather(p, blocks):
    """Bruck et al.: step k, rank r sends the min(2^k, p − 2^k) blocks it
    holds, r … r + 2^k − 1, to r − 2^k."""
    r = np.arange(p)
    steps, k = [], 0
    while (1 << k) < p:
        m = 1 << k
        cnt = min(m, p - m)
        lists = (r[:, None] + np.arange(cnt)[None, :]) % p if blocks else None
        tr = _traffic(r, (r - m) % p, np.full(p, cnt / p), blocks,
                      lists if blocks else [], COPY)
        steps.append(_step(tr, False, f"k{k}"))
        k += 1
    return steps, p


def sparbit_counts(p: int) -> list[tuple[int, int]]:
    """``(d, c)`` of each of Sparbit's steps: rank r sends the blocks
    ``r − 2td`` (``t < c``) to ``r + d``. ``d`` runs from ``2^(L−1)`` down to 1
    (``L = ⌈log₂p⌉``); ``c`` doubles each step but drops one on the steps
    whose distance is a bit of ``ignore_steps`` (Open MPI's
    ``(~(p >> z) | 1) << z``, ``z`` the trailing zeros of ``p``): those
    would bring a block a second time."""
    steps = (p - 1).bit_length()
    z = (p & -p).bit_length() - 1
    ignore = ((~(p >> z) | 1) << z) & 0xFFFFFFFF
    out, expected = [], 1
    for i in range(steps):
        d = 1 << (steps - 1 - i)
        exclusion = int((d & ignore) == d)
        out.append((d, expected - exclusion))
        expected = 2 * expected - exclusion
    return out


def _sparbit(p, blocks):
    """Sparbit (Loch and Koslovski): Bruck's step count with the distances
    reversed (far first) and the exchanged data non-decreasing."""
    r = np.arange(p)
    steps = []
    for d, cnt in sparbit_counts(p):
        lists = (r[:, None] - 2 * d * np.arange(cnt)[None, :]) % p if blocks else []
        tr = _traffic(r, (r + d) % p, np.full(p, cnt / p), blocks, lists, COPY)
        steps.append(_step(tr, False, f"d{d}"))
    return steps, p


def _bruck_alltoall(p, blocks):
    """Bruck et al.: step k, every block whose offset o = dest − src has bit
    k set moves 2^k on (its holder then is src + (o mod 2^k))."""
    r = np.arange(p)
    steps, k = [], 0
    while (1 << k) < p:
        m = 1 << k
        offs = np.array([o for o in range(1, p) if o & m], np.int64)
        lists = []
        if blocks:
            src = (r[:, None] - (offs[None, :] & (m - 1))) % p      # each block's sender
            lists = src * p + (src + offs[None, :]) % p
        tr = _traffic(r, (r + m) % p, np.full(p, len(offs) / p), blocks, lists, COPY)
        steps.append(_step(tr, False, f"k{k}"))
        k += 1
    return steps, p * p


def _need_pow2(name: str, p: int, why: str, instead: str) -> None:
    if p & (p - 1):
        raise ConfigError(f"algorithm {name}: p={p} ranks must be a power of two ({why}); "
                          f"use {instead}")


def _halving(p, blocks, name):
    """Recursive halving, rank r ending with block r (p a power of two)."""
    _need_pow2(name, p, "its reduce-scatter halves the vector between r and r XOR d",
               "binomial or chain")
    r = np.arange(p)
    steps = []
    d = p >> 1
    while d >= 1:
        lo = r & ~(2 * d - 1)
        start = np.where(r & d, lo, lo + d)          # the half without block r
        lists = [np.arange(a, a + d) for a in start] if blocks else []
        tr = _traffic(r, r ^ d, np.full(p, d / p), blocks, lists, REDUCE)
        steps.append(_step(tr, True, f"rs{d}"))
        d >>= 1
    return steps


def _doubling(p, blocks, name):
    """Recursive doubling allgather, rank r starting with block r (p a
    power of two): step k, r and r XOR 2^k swap their ranges of 2^k blocks."""
    _need_pow2(name, p, "allgather=recdoub pairs rank r with r XOR 2^k", "allgather=ring")
    r = np.arange(p)
    steps, d = [], 1
    while d < p:
        start = r & ~(d - 1)
        lists = [np.arange(a, a + d) for a in start] if blocks else []
        steps.append(_step(_traffic(r, r ^ d, np.full(p, d / p), blocks, lists, COPY), False,
                           f"ag{d}"))
        d <<= 1
    return steps


def _pairwise_reduce_scatter(p, blocks):
    """Step s: rank r sends its part of block r + s to r + s, which adds it."""
    r = np.arange(p)
    return [_step(_traffic(r, (r + s) % p, np.full(p, 1.0 / p), blocks,
                           ((r + s) % p)[:, None], REDUCE), True, f"s{s}")
            for s in range(1, p)]


def _bintree(p, collective, blocks, root, segments):
    """The vector in ``segments`` pieces down (broadcast) or up (reduce) the
    binary tree of relative ranks (children of v: 2v + 1, 2v + 2; depth of
    v: ⌊log₂(v + 1)⌋, D the deepest): step t, every rank of depth d sends
    segment t − d to both its children (broadcast), every rank of depth d
    sends its partial sum of segment t − (D − d) to its parent (reduce)."""
    k = check_segments("bintree", segments)
    v = np.arange(p)
    depth = np.floor(np.log2(v + 1)).astype(np.int64)
    deepest = int(depth.max())
    absolute = (v + root) % p
    steps = []
    for t in range(k + deepest - 1):
        if collective == "broadcast":
            child = v[1:]
            seg = t - depth[(child - 1) // 2]
        else:
            child = v[1:]
            seg = t - (deepest - depth[child])
        keep = (seg >= 0) & (seg < k)
        child, seg = child[keep], seg[keep]
        parent = (child - 1) // 2
        src, dst = (parent, child) if collective == "broadcast" else (child, parent)
        reduces = collective == "reduce"
        tr = _traffic(absolute[src], absolute[dst], np.full(len(child), 1.0 / k), blocks,
                      seg[:, None] if blocks else [], REDUCE if reduces else COPY)
        if reduces:   # a parent adds both children's sums of one segment: fan-in 3
            node, count = np.unique(absolute[dst], return_counts=True)
            red = Reduction(node, np.full(len(node), 1.0 / k), count + 1)
            steps.append(Step(tr, red, f"t{t}"))
        else:
            steps.append(_step(tr, False, f"t{t}"))
    return steps, k


def _ring_allgather(p, blocks):
    """Rank r forwards block r − s to r + 1 in step s (p − 1 steps)."""
    r = np.arange(p)
    return [_step(_traffic(r, (r + 1) % p, np.full(p, 1.0 / p), blocks,
                           ((r - s) % p)[:, None], COPY), False, f"ag{s}")
            for s in range(p - 1)]


def _chain(p, collective, blocks, root, segments):
    """The vector in ``segments`` pieces down (broadcast) or up (reduce) the
    chain of relative ranks 0 → 1 → … → p − 1: step t, rank v sends
    segment t − v to v + 1 (broadcast), rank p − 1 − v its partial sum of
    segment t − v to p − 2 − v (reduce)."""
    k = check_segments("chain", segments)
    absolute = (np.arange(p) + root) % p
    steps = []
    for t in range(k + p - 2):
        v = np.arange(max(0, t - k + 1), min(t, p - 2) + 1)
        seg = t - v
        if collective == "broadcast":
            src, dst = absolute[v], absolute[v + 1]
        else:
            src, dst = absolute[p - 1 - v], absolute[p - 2 - v]
        reduces = collective == "reduce"
        tr = _traffic(src, dst, np.full(len(v), 1.0 / k), blocks,
                      seg[:, None] if blocks else [], REDUCE if reduces else COPY)
        steps.append(_step(tr, reduces, f"t{t}"))
    return steps, k


def check_classic(name: str, collective: str, p: int, root: int = 0, segments: int = 1,
                  allgather: str = "ring") -> int:
    """The ConfigError :func:`build_classic` would raise, without building;
    returns the root."""
    if collective in ("broadcast", "reduce", "gather", "scatter"):
        root = check_root(name, p, root)
    if name == "rabenseifner":
        _need_pow2(name, p, "its reduce-scatter halves the vector between r and r XOR d",
                   "binomial or chain")
    if name == "vandegeijn" and allgather == "recdoub":
        _need_pow2(name, p, "allgather=recdoub pairs rank r with r XOR 2^k", "allgather=ring")
    if name in ("chain", "bintree"):
        check_segments(name, segments)
    return root


def build_classic(name: str, collective: str, p: int, blocks: bool = False,
                  root: int = 0, segments: int = 1, allgather: str = "ring") -> Schedule:
    """The schedule of algorithm ``name`` for ``collective`` on ``p`` ranks
    (module table)."""
    p = check_ranks(name, p)
    root = check_classic(name, collective, p, root, segments, allgather)
    if name == "binomial":
        steps, nb = _binomial(p, collective, blocks, root)
    elif name == "bruck":
        steps, nb = (_bruck_alltoall(p, blocks) if collective == "alltoall"
                     else _bruck_allgather(p, blocks))
    elif name == "sparbit":
        steps, nb = _sparbit(p, blocks)
    elif name == "vandegeijn":      # binomial scatter, then the allgather
        steps = _binomial(p, "scatter", blocks, root)[0] + (
            _ring_allgather(p, blocks) if allgather == "ring" else _doubling(p, blocks, name))
        nb = p
    elif name == "pairwise" and collective == "reduce_scatter":
        steps, nb = _pairwise_reduce_scatter(p, blocks), p
    elif name == "rabenseifner":    # recursive halving, then the binomial gather
        steps = _halving(p, blocks, name) + _binomial(p, "gather", blocks, root)[0]
        nb = p
    elif name == "chain":
        steps, nb = _chain(p, collective, blocks, root, segments)
    elif name == "bintree":
        steps, nb = _bintree(p, collective, blocks, root, segments)
    elif name == "linear" and collective != "alltoall":
        steps, nb = _linear(p, collective, blocks, root)
    else:
        steps, nb = _alltoall(p, blocks, name == "pairwise")
    block_share = None
    if blocks:   # (an all-to-all's p² blocks only when asked for)
        block_share = np.full(nb, 1.0 / p) if nb == p * p else equal_block_share(nb)
    return Schedule(name, "", p, steps, nb if blocks else None,
                    block_share, {"p_eff": p}, collective=collective,
                    root=root if collective in ("broadcast", "reduce", "gather", "scatter")
                    else 0)


_ROOT = Param("root", int, 0, None, "the root rank")
_SEGMENTS = Param("segments", int, 1, None,
                  f"pieces the vector is pipelined in (1..{MAX_SEGMENTS})")
_ALLGATHER = Param("allgather", str, "ring", ("ring", "recdoub"),
                   "the allgather after the scatter: ring (p − 1 steps) or recdoub (recursive "
                   "doubling, log₂p steps, p a power of two)")

#: (collective, name, doc) of every algorithm here
TABLE = (
    ("broadcast", "binomial", ("Binomial tree: ⌈log₂p⌉ steps, relative rank v gets the vector "
     "from v − 2^k, 2^k its lowest set bit, top bit first")),
    ("reduce", "binomial", ("Binomial tree: ⌈log₂p⌉ steps, relative rank v sends its partial "
     "sum to v − 2^k at the lowest set bit 2^k of v")),
    ("gather", "linear", "Linear: every rank sends its block to the root in one step"),
    ("gather", "binomial", "Binomial tree: ⌈log₂p⌉ steps, each subtree's blocks go up once"),
    ("scatter", "linear", "Linear: the root sends each rank its block in one step"),
    ("scatter", "binomial", "Binomial tree: ⌈log₂p⌉ steps, each subtree's blocks go down once"),
    ("broadcast", "vandegeijn", ("Van de Geijn: a binomial scatter of n/p blocks, then the "
     "ring allgather: ⌈log₂p⌉ + p − 1 steps, about 2n on the busiest link")),
    ("reduce_scatter", "pairwise", ("Pairwise exchange: p−1 steps, rank r sends its part of "
     "block r+s to r+s, which adds it (n/p a step)")),
    ("broadcast", "chain", ("Pipelined chain: the vector in segments down relative ranks "
     "0 → 1 → … → p−1, segments + p − 2 steps of n/segments")),
    ("reduce", "rabenseifner", ("Rabenseifner: recursive halving (a reduce-scatter), then a "
     "binomial gather of the reduced blocks: 2 log₂p steps (p a power of two)")),
    ("broadcast", "bintree", ("Pipelined binary tree: the vector in segments down the tree "
     "whose children of v are 2v+1 and 2v+2, each rank to both children at once; "
     "segments + ⌊log₂p⌋ − 1 steps")),
    ("reduce", "bintree", ("Pipelined binary tree: partial sums in segments up the same "
     "tree, both children into their parent at once; segments + ⌊log₂p⌋ − 1 steps")),
    ("reduce", "chain", ("Pipelined chain: partial sums in segments up relative ranks "
     "p−1 → … → 0, segments + p − 2 steps of n/segments")),
    ("allgather", "bruck", ("Bruck: ⌈log₂p⌉ steps, rank r sends the min(2^k, p−2^k) blocks "
     "it holds to r − 2^k")),
    ("allgather", "sparbit", ("Sparbit: ⌈log₂p⌉ steps, rank r sends to r + d, d from "
     "2^(⌈log₂p⌉−1) down to 1, the blocks r, r − 2d, r − 4d, … it holds (one block "
     "first, about half the vector last)")),
    ("alltoall", "bruck", ("Bruck: ⌈log₂p⌉ steps, each block moves 2^k on when bit k of "
     "its offset dest − src is set (about n/2 a step)")),
    ("alltoall", "linear", "Linear: every rank sends every other rank its block at once"),
    ("alltoall", "pairwise", ("Pairwise exchange: p−1 steps, rank r sends block (r, r+s) to "
     "r+s and gets (r−s, r) from r−s")),
)


def _spec(collective: str, name: str, doc: str) -> AlgorithmSpec:
    rooted = collective in ("broadcast", "reduce", "gather", "scatter")
    params = ((_ROOT,) if rooted else ()) \
        + ((_SEGMENTS,) if name in ("chain", "bintree") else ()) \
        + ((_ALLGATHER,) if name == "vandegeijn" else ())

    def build(p, topology=None, blocks=False, **options):
        return build_classic(name, collective, p, blocks, **options)

    def check(p, options):
        check_classic(name, collective, p, **options)

    return AlgorithmSpec(name=name, build=build, params=params, doc=doc,
                         collective=collective, check=check)


for _collective, _name, _doc in TABLE:
    register(_spec(_collective, _name, _doc))
