"""Bine trees and butterflies (De Sensi et al., "Bine Trees: Enhancing
Collective Operations by Optimizing Communication Locality", SC'25; the
MIT-licensed ``libbine`` of ``HLC-Lab/pico``): the collectives of one idea,
Swing's peer function, on ``p`` a power of two.

Peers. In step ``k`` (``k = 0 … log₂p − 1``) rank ``r`` talks to

    π(r, k) = r + ρ_k (r even),  r − ρ_k (r odd),   mod p,

with ``ρ_k = (1 − (−2)^{k+1}) / 3 = 1, −1, 3, −5, 11, …`` — the value of the
negabinary number of ``k + 1`` ones (``libbine``'s ``pi`` and ``rhos``).

Subtrees. ``R(r, k)``, the ranks ``r`` reaches through the steps ``k …
log₂p − 1`` (itself included), has ``2^{log₂p − k}`` ranks, and ``R(r, k)``
is ``R(r, k + 1)`` and ``R(π(r, k), k + 1)`` side by side (the butterfly's
halves; the all-to-all routes by them). A tree's subtree is the ranks below
a rank in it:

- ``broadcast``: in step ``j`` every rank that holds the vector sends it to
  its peer of index ``k = log₂p − 1 − j`` (``bcast_bine_lat_new``: the far
  peers first, as a binomial tree takes its top bit first): ``log₂p`` steps
  of n, a binomial tree whose edges have Swing's distances ``|ρ_k|`` = …, 11,
  5, 3, 1, 1 — the many edges of the last steps are the short ones;
- ``reduce``: the same tree leaves first (step ``log₂p − 1`` down to 0), each
  child's partial sum to its parent;
- ``scatter``: down the broadcast's tree, each rank gets the blocks of its
  subtree from its parent; ``gather`` the same up;
- ``alltoall`` (``alltoall_bine``): in step ``k`` every rank sends its peer
  the blocks it holds whose destination is in ``R(peer, k + 1)`` — half of
  what it holds, n/2 a step, ``log₂p`` steps, as Bruck's but to Swing's
  peers;
- ``reduce_scatter``, ``allgather``: the halves of Swing's bandwidth-optimal
  allreduce on the ranks' ids (Bine's butterflies are Swing's), under the
  name ``bine``.

Ranks are relative to the root, ``v = (r − root) mod p``, for the rooted
collectives. A p that is not a power of two is refused (the paper's
other-p forms are not built here).
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ConfigError
from ._blocks import (
    COPY,
    REDUCE,
    check_ranks,
    check_root,
    equal_block_share,
    ragged_traffic,
    reduce_step_reduction,
)
from .base import AlgorithmSpec, Param, Schedule, Step
from .registry import get_algorithm, register

__all__ = ["bine_peer", "bine_subtrees", "build_bine"]


def bine_peer(r: np.ndarray, k: int, p: int) -> np.ndarray:
    """π(r, k) mod p (Swing's peer)."""
    rho = (1 - (-2) ** (k + 1)) // 3
    r = np.asarray(r, np.int64)
    return np.where(r % 2 == 0, r + rho, r - rho) % p


def bine_subtrees(p: int) -> np.ndarray:
    """int64[L + 1, p]: row ``k`` labels each rank with its butterfly subtree
    R(r, k) (its smallest member); row L is every rank alone, row 0 one
    label."""
    steps = p.bit_length() - 1
    label = np.empty((steps + 1, p), np.int64)
    ranks = np.arange(p)
    label[steps] = ranks
    for k in range(steps - 1, -1, -1):
        label[k] = np.minimum(label[k + 1], label[k + 1][bine_peer(ranks, k, p)])
    return label


#: what to run instead of Bine on a p that is not a power of two
_INSTEAD = {"broadcast": "binomial, vandegeijn or chain", "reduce": "binomial or chain",
            "gather": "binomial or linear", "scatter": "binomial or linear",
            "alltoall": "bruck, pairwise or linear"}


def check_bine(collective: str, p: int, root: int = 0) -> None:
    """The ConfigError :func:`build_bine` raises for these ranks and root."""
    if collective in ("reduce_scatter", "allgather"):
        return
    if p & (p - 1):
        raise ConfigError(f"algorithm bine ({collective}): p={p} ranks must be a power of "
                          "two (Bine's trees pair ranks by Swing's peers over log₂p steps); "
                          f"use {_INSTEAD[collective]}")
    if collective in ("broadcast", "reduce", "gather", "scatter"):
        check_root("bine", p, root)


def _tree(p: int, collective: str, blocks: bool, root: int) -> list[Step]:
    steps_n = p.bit_length() - 1
    # far peers first (libbine's bcast_bine_lat_new: the mask from the top bit
    # down): step j pairs ranks by peer index L − 1 − j
    order = list(range(steps_n - 1, -1, -1))
    v = np.arange(p)
    # the step each relative rank receives in (root: never): a broadcast's holders
    got = np.full(p, steps_n, np.int64)
    got[0] = -1
    for k in range(steps_n):
        holders = v[got < k]
        got[bine_peer(holders, order[k], p)] = k
    edges = []   # (step, parent, child) of the tree
    for k in range(steps_n):
        child = v[got == k]
        parent = bine_peer(child, order[k], p)
        edges.append((k, parent, child))
    # each rank's subtree: itself and its children's (who receive from it later)
    size = np.ones(p, np.int64)
    members = [[int(x)] for x in v] if blocks else None
    for _, parent, child in edges[::-1]:
        np.add.at(size, parent, size[child])
        if blocks:
            for q, c in zip(parent.tolist(), child.tolist()):
                members[q].extend(members[c])
    down = collective in ("broadcast", "scatter")
    out = []
    for k, parent, child in (edges if down else edges[::-1]):
        src, dst = (parent, child) if down else (child, parent)
        if collective in ("broadcast", "reduce"):
            share = np.ones(len(child))
            lists = [[0]] * len(child) if blocks else None
        else:   # the child's subtree, as absolute ranks = blocks
            share = size[child] / p
            lists = [(np.array(members[c]) + root) % p for c in child] if blocks else None
        reduces = collective == "reduce"
        tr = ragged_traffic((src + root) % p, (dst + root) % p, share, lists,
                      REDUCE if reduces else COPY)
        out.append(Step(tr, reduce_step_reduction(tr, reduces), f"k{k}"))
    return out


def _alltoall(p: int, blocks: bool) -> list[Step]:
    steps_n = p.bit_length() - 1
    label = bine_subtrees(p)
    r = np.arange(p)
    out = []
    if blocks:
        src_of, dest = np.divmod(np.arange(p * p), p)     # block i·p + d: from i to d
        pos = src_of.copy()                                # who holds each block now
    for k in range(steps_n):
        peer = bine_peer(r, k, p)
        lists = None
        if blocks:
            q = bine_peer(pos, k, p)
            moves = label[k + 1][dest] == label[k + 1][q]   # its destination is on q's side
            order = np.argsort(pos[moves], kind="stable")
            moved = np.flatnonzero(moves)[order]
            lists = np.split(moved, np.cumsum(np.bincount(pos[moved], minlength=p))[:-1])
            pos[moves] = q[moves]
        tr = ragged_traffic(r, peer, np.full(p, 0.5), lists, COPY)
        out.append(Step(tr, reduce_step_reduction(tr, False), f"k{k}"))
    return out


def build_bine(collective: str, p: int, topology=None, blocks: bool = False, root: int = 0,
               **options) -> Schedule:
    """The Bine schedule of ``collective`` on ``p`` ranks (module notes)."""
    if collective in ("reduce_scatter", "allgather"):
        sched = get_algorithm("swing", collective).build(p, None, blocks, **options)
        return Schedule("bine", sched.variant, sched.p, sched.steps, sched.num_blocks,
                        sched.block_share, dict(sched.info), sched.note, sched.num_buffers,
                        collective=collective, block_owner=sched.block_owner)
    p = check_ranks("bine", p)
    check_bine(collective, p, root)
    rooted = collective in ("broadcast", "reduce", "gather", "scatter")
    if collective == "alltoall":
        steps, nb = _alltoall(p, blocks), p * p
    else:
        steps = _tree(p, collective, blocks, int(root))
        nb = 1 if collective in ("broadcast", "reduce") else p
    share = None
    if blocks:   # (an all-to-all's p² blocks only when asked for)
        share = np.full(nb, 1.0 / p) if collective == "alltoall" else equal_block_share(nb)
    return Schedule("bine", "", p, steps, nb if blocks else None, share,
                    {"p_eff": p}, collective=collective, root=int(root) if rooted else 0)


_DOCS = {
    "broadcast": "Bine tree: log₂p steps, every holder sends the vector to its Swing peer "
                 "(p a power of two)",
    "reduce": "Bine tree: the broadcast's tree leaves first, partial sums to the parent "
              "(p a power of two)",
    "gather": "Bine tree: each subtree's blocks up to its parent, log₂p steps (p a power "
              "of two)",
    "scatter": "Bine tree: each subtree's blocks down from its parent, log₂p steps (p a "
               "power of two)",
    "alltoall": "Bine butterfly: log₂p steps of n/2 to Swing's peers, each block towards "
                "its destination's subtree (p a power of two)",
    "reduce_scatter": "Bine butterfly: Swing's reduce-scatter on the ranks' ids",
    "allgather": "Bine butterfly: Swing's allgather on the ranks' ids",
}


def _spec(collective: str) -> AlgorithmSpec:
    rooted = collective in ("broadcast", "reduce", "gather", "scatter")
    if collective in ("reduce_scatter", "allgather"):
        params = get_algorithm("swing", collective).params
    else:
        params = (Param("root", int, 0, None, "the root rank"),) if rooted else ()

    def build(p, topology=None, blocks=False, **options):
        return build_bine(collective, p, topology, blocks, **options)

    def check(p, options):
        check_bine(collective, p, options.get("root", 0))

    return AlgorithmSpec(name="bine", build=build, params=params, doc=_DOCS[collective],
                         collective=collective, check=check)


for _collective in _DOCS:
    register(_spec(_collective))
