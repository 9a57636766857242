"""Bine trees and butterflies (De Sensi et al., "Bine Trees: Enhancing
Collective Operations by Optimizing Communication Locality", SC'25; the
MIT-licensed ``libbine`` of ``HLC-Lab/pico`` and ``HLC-Lab/bine-trees``, and
the authors' port of it into MPICH, ``HLC-Lab/mpich``): the collectives of
one idea, Swing's peer function.

Peers. In step ``k`` (``k = 0 … log₂q − 1``, q a power of two) rank ``r``
talks to

    π(r, k) = r + ρ_k (r even),  r − ρ_k (r odd),   mod q,

with ``ρ_k = (1 − (−2)^{k+1}) / 3 = 1, −1, 3, −5, 11, …`` — the value of the
negabinary number of ``k + 1`` ones (``libbine``'s ``pi`` and ``rhos``).

Subtrees. ``R(r, k)``, the ranks ``r`` reaches through the steps ``k …
log₂q − 1`` (itself included), has ``2^{log₂q − k}`` ranks, and ``R(r, k)``
is ``R(r, k + 1)`` and ``R(π(r, k), k + 1)`` side by side (the butterfly's
halves; the all-to-all routes by them). A tree's subtree is the ranks below
a rank in it:

- ``broadcast`` (``bcast_bine_lat_new`` of libbine for p a power of two;
  ``MPIR_Bcast_intra_bine_lat`` of ``src/mpi/coll/bcast/bcast_intra_bine_lat.c``
  in ``HLC-Lab/mpich`` for any p): in step ``j`` every rank that holds the
  vector sends it to its peer of index ``k = log₂q − 1 − j`` (the far peers
  first, as a binomial tree takes its top bit first): ``log₂q`` steps of n, a
  binomial tree whose edges have Swing's distances ``|ρ_k|`` = …, 11, 5, 3,
  1, 1 — the many edges of the last steps are the short ones. For p not a
  power of two the tree spans the relative ranks ``v < q``, ``q =
  2^⌊log₂p⌋`` (peers mod q), and one more step sends the vector from ``v`` to
  ``v + q`` for every ``v < p − q``: ``⌊log₂p⌋ + 1`` steps of n;
- ``reduce`` (``reduce_bine_lat`` of libbine; ``MPIR_Reduce_intra_bine_lat``
  of ``src/mpi/coll/reduce/reduce_intra_bine_lat.c`` in ``HLC-Lab/mpich``):
  the same tree leaves first (step ``log₂q − 1`` down to 0), each child's
  partial sum to its parent. For p not a power of two a first step folds
  the ``e = p − q`` extra ranks: each odd ``v < 2e`` sends its vector to
  ``v − 1``, which adds it; then the tree runs on the ``q`` ranks left, the
  tree's rank ``t`` being ``v = 2t`` for ``t < e`` and ``v = t + e`` after
  (MPICH's ``new_rank``): ``1 + log₂q`` steps of n;
- ``scatter``: down the broadcast's tree, each rank gets the blocks of its
  subtree from its parent; ``gather`` the same up (``scatter_bine``,
  ``gather_bine``);
- ``alltoall`` (``alltoall_bine``): in step ``k`` every rank sends its peer
  the blocks it holds whose destination is in ``R(peer, k + 1)`` — half of
  what it holds, n/2 a step, ``log₂p`` steps, as Bruck's but to Swing's
  peers;
- ``reduce_scatter``, ``allgather``: the halves of Swing's bandwidth-optimal
  allreduce on the ranks' ids (Bine's butterflies are Swing's), under the
  name ``bine``, any p.

Ranks are relative to the root, ``v = (r − root) mod p``, for the rooted
collectives.

Other p. libbine itself (``HLC-Lab/pico``) defines none of the trees or the
all-to-all for p not a power of two: ``bcast_bine_lat_new`` and
``reduce_bine_lat`` return ``MPI_ERR_SIZE``; ``gather_bine``,
``scatter_bine`` and ``alltoall_bine`` are written for power-of-two p (their
block ranges grow or halve by 2^k a step; replayed on other p they
deadlock, truncate or fail their own assertions), and its configuration
restricts all five to power-of-two ``comm_sz``; ``bine-trees``'
``bine_bcast_small`` has it as a TODO ("Implement non-power of two support
similarly to standard binomial trees"). The authors' MPICH port defines
broadcast and reduce for any p (above) and keeps gather, scatter and
all-to-all to power-of-two p (``src/mpi/coll/coll_algorithms.txt``:
``restrictions: power-of-two``), falling back there to MPICH's automatic
selection (by MPICH's default tuning: binomial for gather and scatter;
Bruck, scattered or pairwise by block size for all-to-all). So flowemu
builds broadcast and reduce on any p and refuses gather, scatter and
all-to-all on other p, naming what to run instead (``mpich``, the fallback
itself, among them).
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
    pof2,
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


#: why Bine's gather, scatter and all-to-all stop at power-of-two p ...
_WHY_POW2 = {
    "gather": "libbine's gather_bine is written for power-of-two p and the authors' MPICH "
              "port (HLC-Lab/mpich) restricts Bine gather to them, falling back to MPICH's "
              "own choice, the binomial gather",
    "scatter": "libbine's scatter_bine is written for power-of-two p and the authors' MPICH "
               "port (HLC-Lab/mpich) restricts Bine scatter to them, falling back to MPICH's "
               "own choice, the binomial scatter",
    "alltoall": "libbine's alltoall_bine halves the blocks a rank holds every step, on "
                "power-of-two p only, and the authors' MPICH port (HLC-Lab/mpich) restricts "
                "Bine all-to-all to them, falling back to MPICH's own choice (Bruck, "
                "scattered or pairwise by block size)",
}
#: ... and what to run instead (``mpich`` runs MPICH's selection, the port's fallback)
_INSTEAD = {"gather": "binomial (that fallback), mpich or linear",
            "scatter": "binomial (that fallback), mpich or linear",
            "alltoall": "mpich (that fallback), bruck, pairwise or linear"}


def check_bine(collective: str, p: int, root: int = 0) -> None:
    """The ConfigError :func:`build_bine` raises for these ranks and root."""
    if collective in ("reduce_scatter", "allgather"):
        return
    if collective in _WHY_POW2 and p & (p - 1):
        raise ConfigError(f"algorithm bine ({collective}): p={p} ranks must be a power of "
                          f"two ({_WHY_POW2[collective]}); use {_INSTEAD[collective]}")
    if collective in ("broadcast", "reduce", "gather", "scatter"):
        check_root("bine", p, root)


def _tree_edges(q: int) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The broadcast tree on ``q`` (a power of two) relative ranks: ``(step,
    parents, children)`` for each step, far peers first (libbine's
    ``bcast_bine_lat_new``: the mask from the top bit down, step j pairing
    ranks by peer index log₂q − 1 − j)."""
    steps_n = q.bit_length() - 1
    order = list(range(steps_n - 1, -1, -1))
    v = np.arange(q)
    # the step each relative rank receives in (root: never): a broadcast's holders
    got = np.full(q, steps_n, np.int64)
    got[0] = -1
    for k in range(steps_n):
        holders = v[got < k]
        got[bine_peer(holders, order[k], q)] = k
    edges = []
    for k in range(steps_n):
        child = v[got == k]
        edges.append((k, bine_peer(child, order[k], q), child))
    return edges


def _step(src, dst, share, lists, reduces: bool, root: int, p: int, label: str) -> Step:
    """One step of flows between relative ranks (absolute: + root mod p)."""
    tr = ragged_traffic((np.asarray(src) + root) % p, (np.asarray(dst) + root) % p, share,
                        lists, REDUCE if reduces else COPY)
    return Step(tr, reduce_step_reduction(tr, reduces), label)


def _whole(p: int, collective: str, blocks: bool, root: int) -> list[Step]:
    """Broadcast or reduce of the whole vector on any p (module notes; for p
    not a power of two ``MPIR_Bcast_intra_bine_lat`` and
    ``MPIR_Reduce_intra_bine_lat`` of HLC-Lab/mpich)."""
    q = pof2(p)
    extra = p - q
    edges = _tree_edges(q)

    def whole(count):
        return np.ones(count), ([[0]] * count if blocks else None)

    out = []
    if collective == "broadcast":
        for k, parent, child in edges:
            out.append(_step(parent, child, *whole(len(child)), False, root, p, f"k{k}"))
        if extra:   # v < p − q sends to v + q once the tree is done
            v = np.arange(extra)
            out.append(_step(v, v + q, *whole(extra), False, root, p, "extra"))
        return out
    if extra:       # odd v < 2e sends to v − 1, which adds it
        odd = np.arange(1, 2 * extra, 2)
        out.append(_step(odd, odd - 1, *whole(extra), True, root, p, "fold"))
    t = np.arange(q)
    rel = np.where(t < extra, 2 * t, t + extra)    # the tree's rank t is relative rank rel[t]
    for k, parent, child in edges[::-1]:
        out.append(_step(rel[child], rel[parent], *whole(len(child)), True, root, p, f"k{k}"))
    return out


def _tree(p: int, collective: str, blocks: bool, root: int) -> list[Step]:
    """Scatter (down) or gather (up) the tree's subtrees' blocks, p a power of two."""
    edges = _tree_edges(p)
    v = np.arange(p)
    # each rank's subtree: itself and its children's (who receive from it later)
    size = np.ones(p, np.int64)
    members = [[int(x)] for x in v] if blocks else None
    for _, parent, child in edges[::-1]:
        np.add.at(size, parent, size[child])
        if blocks:
            for q, c in zip(parent.tolist(), child.tolist()):
                members[q].extend(members[c])
    down = collective == "scatter"
    out = []
    for k, parent, child in (edges if down else edges[::-1]):
        src, dst = (parent, child) if down else (child, parent)
        # the child's subtree, as absolute ranks = blocks
        lists = [(np.array(members[c]) + root) % p for c in child] if blocks else None
        out.append(_step(src, dst, size[child] / p, lists, False, root, p, f"k{k}"))
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
    info = {"p_eff": p}
    if collective == "alltoall":
        steps, nb = _alltoall(p, blocks), p * p
    elif collective in ("broadcast", "reduce"):
        steps, nb = _whole(p, collective, blocks, int(root)), 1
        info = {"p_eff": pof2(p), "extra_ranks": p - pof2(p)}
    else:
        steps, nb = _tree(p, collective, blocks, int(root)), p
    share = None
    if blocks:   # (an all-to-all's p² blocks only when asked for)
        share = np.full(nb, 1.0 / p) if collective == "alltoall" else equal_block_share(nb)
    return Schedule("bine", "", p, steps, nb if blocks else None, share,
                    info, collective=collective, root=int(root) if rooted else 0)


_DOCS = {
    "broadcast": "Bine tree: log₂q steps (q = 2^⌊log₂p⌋), every holder sends the vector to "
                 "its Swing peer; other p: then v < p − q sends it to v + q (MPICH port's "
                 "MPIR_Bcast_intra_bine_lat)",
    "reduce": "Bine tree: the broadcast's tree leaves first, partial sums to the parent; "
              "other p: first odd v < 2(p − q) add into v − 1 (MPICH port's "
              "MPIR_Reduce_intra_bine_lat)",
    "gather": "Bine tree: each subtree's blocks up to its parent, log₂p steps (p a power "
              "of two, as in libbine; the MPICH port falls back to binomial otherwise)",
    "scatter": "Bine tree: each subtree's blocks down from its parent, log₂p steps (p a "
               "power of two, as in libbine; the MPICH port falls back to binomial otherwise)",
    "alltoall": "Bine butterfly: log₂p steps of n/2 to Swing's peers, each block towards "
                "its destination's subtree (p a power of two, as in libbine; the MPICH port "
                "falls back to MPICH's choice otherwise)",
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
