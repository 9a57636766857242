"""The textbook algorithms of the collectives other than allreduce, on the
logical ranks ``0..p−1`` (R. Thakur, R. Rabenseifner and W. Gropp,
"Optimization of Collective Communication Operations in MPICH", IJHPCA 19(1),
2005, §3–4; the all-to-all's pairwise exchange as MPICH's
``MPIR_Alltoall_pairwise``, for any ``p``).

Sizes are those of :mod:`.collectives` (block ``b`` belongs to rank ``b``:
``p`` blocks of ``n/p``, or ``p²`` for all-to-all, block ``i·p + j`` from
``i`` to ``j``; a broadcast or reduce moves the whole vector, one block).
Every schedule is bulk synchronous; the α-β times below are for a network
without contention (one message a rank a step, links of bandwidth ``B``):

================  ==============  ====================================  ==========================
collective        name            steps                                 time
================  ==============  ====================================  ==========================
reduce_scatter    ring            p − 1: r sends block r − s − 1 to r+1  (p−1)(α + n/(pB))
reduce_scatter    rechalving      log₂p: halves exchanged with r ^ d     log₂p·α + (p−1)/p · n/B
allgather         ring            p − 1: r sends block r − s to r + 1    (p−1)(α + n/(pB))
allgather         recdoub         log₂p: doubled ranges with r ^ d       log₂p·α + (p−1)/p · n/B
broadcast         binomial        ⌈log₂p⌉: v − 2^k sends to v, top bit   ⌈log₂p⌉(α + n/B)
reduce            binomial        ⌈log₂p⌉: the same tree, leaves first  ⌈log₂p⌉(α + n/B)
gather, scatter   linear          1: every rank ↔ the root               α + (p−1)/p · n/B at the root
gather, scatter   binomial        ⌈log₂p⌉: subtrees' blocks              ⌈log₂p⌉α + (p−1)/p · n/B (p = 2^k)
alltoall          linear          1: every pair at once                  α + (p−1)/p · n/B per rank port
alltoall          pairwise        p − 1: r sends to r + s, gets r − s    (p−1)(α + n/(pB))
================  ==============  ====================================  ==========================

(``v`` is a rank relative to the root, ``(r − root) mod p``; the binomial
tree's parent of ``v`` is ``v − 2^k`` for ``2^k`` the lowest set bit of
``v``, and its subtree the ranks ``v … v + 2^k − 1``: step ``k`` of a
broadcast or scatter (``k`` from the top bit down) sends to every ``v`` whose
lowest set bit is ``2^k``, a reduce or gather (``k`` from 0 up) sends from
them. Recursive halving and doubling need ``p`` a power of two.)
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ConfigError
from ._blocks import COPY, REDUCE, check_ranks, equal_block_share, reduce_step_reduction
from .base import AlgorithmSpec, Param, Schedule, Step, Traffic
from .registry import register

__all__ = ["build_classic"]


def _root(name: str, p: int, root) -> int:
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) \
            or not 0 <= root < p:
        raise ConfigError(f"algorithm {name}: root={root!r} must be a rank of the {p} ranks "
                          f"(0..{p - 1})")
    return int(root)


def _pow2(name: str, collective: str, p: int) -> int:
    if p & (p - 1):
        raise ConfigError(f"algorithm {name} ({collective}): p={p} ranks must be a power of "
                          "two (recursive halving and doubling pair rank r with r XOR 2^k); "
                          "use ring")
    return p.bit_length() - 1


def _traffic(src, dst, share, blocks, lists, op) -> Traffic:
    """Flows with their block lists (one list a flow, any lengths) when
    ``blocks``."""
    src = np.asarray(src, np.int32)
    dst = np.asarray(dst, np.int32)
    share = np.asarray(share, np.float64)
    if not blocks:
        return Traffic(src, dst, share)
    ptr = np.zeros(len(src) + 1, np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    idx = np.concatenate([np.asarray(x, np.int32) for x in lists]) if len(lists) else \
        np.zeros(0, np.int32)
    return Traffic(src, dst, share, None, ptr, idx.astype(np.int32),
                   np.full(len(src), op, np.int8))


def _step(tr: Traffic, reduces: bool, label: str) -> Step:
    return Step(tr, reduce_step_reduction(tr, reduces), label)


# ------------------------------------------------------------------ the builders

def _ring(p, collective, blocks):
    r = np.arange(p)
    steps = []
    for s in range(p - 1):
        if collective == "reduce_scatter":
            blk = (r - s - 1) % p
        else:
            blk = (r - s) % p
        tr = _traffic(r, (r + 1) % p, np.full(p, 1.0 / p), blocks, blk[:, None],
                      REDUCE if collective == "reduce_scatter" else COPY)
        steps.append(_step(tr, collective == "reduce_scatter",
                           f"{'rs' if collective == 'reduce_scatter' else 'ag'}{s}"))
    return steps, p


def _halving_doubling(p, collective, blocks):
    logp = _pow2("rechalving" if collective == "reduce_scatter" else "recdoub", collective, p)
    r = np.arange(p)
    steps = []
    ks = range(logp)
    for k in ks:
        if collective == "reduce_scatter":
            d = p >> (k + 1)          # range of 2d blocks around r, send the half not holding r
            lo = r & ~(2 * d - 1)
            start = np.where(r & d, lo, lo + d)
        else:
            d = 1 << k                # send the range of d blocks holding r
            start = r & ~(d - 1)
        lists = [np.arange(a, a + d) for a in start] if blocks else []
        tr = _traffic(r, r ^ d, np.full(p, d / p), blocks, lists,
                      REDUCE if collective == "reduce_scatter" else COPY)
        steps.append(_step(tr, collective == "reduce_scatter", f"d{d}"))
    return steps, p


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
    if pairwise:
        steps = []
        for s in range(1, p):
            dst = (r + s) % p
            tr = _traffic(r, dst, np.full(p, 1.0 / p), blocks, (r * p + dst)[:, None], COPY)
            steps.append(_step(tr, False, f"s{s}"))
        return steps, p * p
    i, j = np.divmod(np.arange(p * p), p)
    keep = i != j
    i, j = i[keep], j[keep]
    tr = _traffic(i, j, np.full(len(i), 1.0 / p), blocks, (i * p + j)[:, None], COPY)
    return [_step(tr, False, "all")], p * p


def build_classic(name: str, collective: str, p: int, blocks: bool = False,
                  root: int = 0) -> Schedule:
    """The schedule of algorithm ``name`` for ``collective`` on ``p`` ranks
    (module table)."""
    p = check_ranks(name, p)
    if collective in ("broadcast", "reduce", "gather", "scatter"):
        root = _root(name, p, root)
    if name == "ring":
        steps, nb = _ring(p, collective, blocks)
    elif name in ("rechalving", "recdoub"):
        steps, nb = _halving_doubling(p, collective, blocks)
    elif name == "binomial":
        steps, nb = _binomial(p, collective, blocks, root)
    elif name == "linear" and collective != "alltoall":
        steps, nb = _linear(p, collective, blocks, root)
    else:
        steps, nb = _alltoall(p, blocks, name == "pairwise")
    if nb == p * p:
        block_share = np.full(nb, 1.0 / p)
    else:
        block_share = equal_block_share(nb)
    return Schedule(name, "", p, steps, nb if blocks else None,
                    block_share if blocks else None, {"p_eff": p}, collective=collective,
                    root=root if collective in ("broadcast", "reduce", "gather", "scatter")
                    else 0)


_ROOT = Param("root", int, 0, None, "the root rank")

#: (collective, name, doc) of every algorithm here
TABLE = (
    ("reduce_scatter", "ring", ("Ring reduce-scatter: p−1 steps, rank r sends block r−s−1 to "
     "r+1, which adds it (n/p a step)")),
    ("reduce_scatter", "rechalving", ("Recursive halving: log₂p steps, rank r sends the half "
     "of its range without block r to r XOR d, d = p/2 … 1 (p a power of two)")),
    ("allgather", "ring", ("Ring allgather: p−1 steps, rank r forwards block r−s to r+1 (n/p "
     "a step)")),
    ("allgather", "recdoub", ("Recursive doubling: log₂p steps, ranks r and r XOR d swap their "
     "ranges of d blocks, d = 1 … p/2 (p a power of two)")),
    ("broadcast", "binomial", ("Binomial tree: ⌈log₂p⌉ steps, relative rank v gets the vector "
     "from v − 2^k, 2^k its lowest set bit, top bit first")),
    ("reduce", "binomial", ("Binomial tree: ⌈log₂p⌉ steps, relative rank v sends its partial "
     "sum to v − 2^k at the lowest set bit 2^k of v")),
    ("gather", "linear", "Linear: every rank sends its block to the root in one step"),
    ("gather", "binomial", "Binomial tree: ⌈log₂p⌉ steps, each subtree's blocks go up once"),
    ("scatter", "linear", "Linear: the root sends each rank its block in one step"),
    ("scatter", "binomial", "Binomial tree: ⌈log₂p⌉ steps, each subtree's blocks go down once"),
    ("alltoall", "linear", "Linear: every rank sends every other rank its block at once"),
    ("alltoall", "pairwise", ("Pairwise exchange: p−1 steps, rank r sends block (r, r+s) to "
     "r+s and gets (r−s, r) from r−s")),
)


def _spec(collective: str, name: str, doc: str) -> AlgorithmSpec:
    rooted = collective in ("broadcast", "reduce", "gather", "scatter")

    def build(p, topology=None, blocks=False, **options):
        return build_classic(name, collective, p, blocks, **options)

    return AlgorithmSpec(name=name, build=build, params=(_ROOT,) if rooted else (), doc=doc,
                         collective=collective)


for _collective, _name, _doc in TABLE:
    register(_spec(_collective, _name, _doc))
