"""Tree allreduces users compare against: MPI's binomial-tree reduce +
broadcast and NCCL's double binary tree, both with pipelining.

``binomial[:segments=K]`` — binomial-tree reduce to rank 0, then the
binomial broadcast back (the MPI baseline for small vectors). In the tree
rank ``r`` > 0 has parent ``r − lowbit(r)`` (its lowest set bit cleared);
rank 0 is the root. The vector is cut into ``K`` segments that are pipelined
down the tree (a node forwards segment ``s`` to its parent in step
``s + round(node)``, once all its children have sent it; the broadcast
mirrors it), so the reduce takes ``K + H − 1`` steps and the broadcast as
many, ``H = ⌈log2 p⌉``. A rank sends up in the round of its lowest set bit
(``log2 lowbit(r)``, plus the segment's index), as the classical binomial
reduce does, so with ``K = 1`` each parent receives from one child per
round: the plain reduce + broadcast in ``2⌈log2 p⌉`` steps.

``dbtree[:segments=K]`` — NCCL's double binary tree: two binary trees on
the ranks, each reducing and broadcasting half of the vector, pipelined in
``K`` segments per half. The first tree is NCCL's ``ncclGetBtree``: rank
``r``'s parent is ``(r XOR b) OR 2b`` (or ``r XOR b`` when that is not a
rank), ``b`` the lowest set bit of ``r``; rank 0 is the root with one child.
The second tree is the first with every rank shifted by one
(``r → (r + 1) mod p``) when ``p`` is odd and mirrored (``r → p − 1 − r``)
when ``p`` is even (``ncclGetDtree``), so a rank that is a leaf of one tree
is an inner node of the other (for p even) and both halves use each rank's
links in both directions. The two trees run at the same time.

``dbtree`` for ``broadcast`` and ``reduce`` (``root=R``, ``segments=K``) — the
same two trees on ranks relative to the root (``v = (r − R) mod p``), each
carrying half the vector in ``K`` pipelined segments: down the trees
(broadcast) or up them (reduce) only. The first tree has the root on top,
as NCCL's rank 0 is. The second tree's top is another rank (``p − 1`` or 1),
so it is hung from the root instead: the path from the root to its top is
turned round (``reroot``) and every other edge kept, so each tree keeps its
edges — a rank that is a leaf of one is an inner node of the other, as in
NCCL's allreduce — and both start at the root. (NCCL itself runs broadcast
and reduce on rings: flowemu's ``chain``.) A step sends segment ``s`` over an
edge when ``s`` plus the height of the edge's lower end (broadcast: reversed)
says so, as the allreduce's halves do; a step costs α plus the most any
link carries, and on one switch that is about two segments a step (the
root feeds both trees, an inner node its two children): about
``(K + H − 1)(α + n/(KB))``, ``H`` the taller hung tree's height.

In both, a receiving node adds the segments from its children into its own
(fan-in 1 + the children that send in that step); the broadcast copies. A
segment's steps are bulk synchronous like every flowemu schedule: a step is
as slow as its slowest flow.
"""

from __future__ import annotations

import numpy as np

from ._blocks import (
    COPY,
    MAX_SEGMENTS,
    REDUCE,
    check_ranks,
    check_root,
    check_segments,
    equal_block_share,
)
from .base import AlgorithmSpec, Param, Reduction, Schedule, Step, Traffic
from .registry import register

__all__ = ["binomial_parents", "binomial_rounds", "btree_parents", "dtree_parents",
           "hung_dtree_parents", "pipelined_tree_steps", "reroot"]

def binomial_parents(p: int) -> np.ndarray:
    """Parent of every rank in the binomial tree rooted at 0 (−1 at the
    root): ``r − lowbit(r)``."""
    r = np.arange(p, dtype=np.int64)
    return np.where(r == 0, -1, r - (r & -r))


def btree_parents(p: int) -> np.ndarray:
    """Parent of every rank in NCCL's binary tree (``ncclGetBtree``): the
    lowest set bit ``b`` of ``r``, parent ``(r ^ b) | 2b``, or ``r ^ b``
    when that is not a rank; rank 0 is the root."""
    r = np.arange(p, dtype=np.int64)
    bit = r & -r
    up = (r ^ bit) | (bit << 1)
    up = np.where(up >= p, r ^ bit, up)
    return np.where(r == 0, -1, up)


def dtree_parents(p: int) -> tuple[np.ndarray, np.ndarray]:
    """NCCL's two trees (``ncclGetDtree``): the binary tree, and the same
    tree on ranks shifted by one (p odd) or mirrored (p even)."""
    first = btree_parents(p)
    r = np.arange(p, dtype=np.int64)
    if p % 2 == 1:   # shift: rank r plays rank (r − 1) mod p of the first tree
        up = first[(r - 1) % p]
        second = np.where(up < 0, -1, (up + 1) % p)
    else:            # mirror: rank r plays rank p − 1 − r
        up = first[p - 1 - r]
        second = np.where(up < 0, -1, p - 1 - up)
    return first, second


def _heights(parent: np.ndarray) -> np.ndarray:
    """Height of every node (leaves 0): the longest way down to a leaf."""
    p = len(parent)
    height = np.zeros(p, np.int64)
    # a node is at most p − 1 levels above a leaf; relax upwards until stable
    for _ in range(p):
        child = np.flatnonzero(parent >= 0)
        cand = np.zeros(p, np.int64)
        np.maximum.at(cand, parent[child], height[child] + 1)
        new = np.maximum(height, cand)
        if np.array_equal(new, height):
            break
        height = new
    return height


def binomial_rounds(p: int) -> np.ndarray:
    """Round in which each rank sends up the binomial tree: log2 of its
    lowest set bit (the classical schedule: one child per parent and round)."""
    r = np.arange(p, dtype=np.int64)
    low = np.where(r == 0, 1, r & -r)
    return np.log2(low).astype(np.int64)


def reroot(parent: np.ndarray, root: int) -> np.ndarray:
    """The same tree hung from ``root``: the edges of the path from ``root``
    to the old top point the other way, every other edge is kept."""
    parent = np.array(parent, np.int64)
    prev, v = -1, int(root)
    while v != -1:          # (a walk up one path: at most the tree's height)
        up = int(parent[v])
        parent[v] = prev
        prev, v = v, up
    return parent


def pipelined_tree_steps(parents: list[np.ndarray], segments: int, blocks: bool,
                         num_blocks: int, levels: list | None = None,
                         parts: str = "both") -> list[Step]:
    """Steps of reduce (up every tree, pipelined) and broadcast (down),
    tree ``i`` carrying blocks ``i·segments .. (i+1)·segments − 1`` of
    ``num_blocks`` equal blocks (one block = one segment). A node sends
    segment ``s`` up in step ``s + level`` (``levels[i]``, default its height:
    every child has sent it one step before at the latest). ``parts``:
    ``"both"`` (the allreduce), ``"up"`` (a reduce) or ``"down"`` (a
    broadcast: the up steps reversed, every flow turned round)."""
    share = 1.0 / num_blocks
    ups, T = [], 0
    for i, parent in enumerate(parents):
        h = _heights(parent) if levels is None else np.asarray(levels[i], np.int64)
        child = np.flatnonzero(parent >= 0)
        ups.append((child, parent[child], h[child]))
        T = max(T, segments + int(h[child].max()) if len(child) else 0)
    up_wanted, down_wanted = parts != "down", parts != "up"
    rs, ag = [], []
    seen: dict = {}   # without blocks, a repeated pattern reuses its Steps (engine caches by id)
    for t in range(T):
        src, dst, blk = [], [], []
        for i, (child, par, hc) in enumerate(ups):
            seg = t - hc                            # segment child sends up at step t
            ok = (seg >= 0) & (seg < segments)
            src.append(child[ok])
            dst.append(par[ok])
            blk.append(i * segments + seg[ok])
        src, dst, blk = (np.concatenate(x) for x in (src, dst, blk))
        key = None if blocks else (src.tobytes(), dst.tobytes())
        if key is not None and key in seen:
            up, down = seen[key]
            if up_wanted:
                rs.append(Step(up.traffic, up.reduction, f"reduce{t}"))
            if down_wanted:
                ag.append(Step(down.traffic, down.reduction, f"bcast{t}"))
            continue
        # (only the part asked for is built: a reduce step's reduction is the costly one)
        up = _step(src, dst, blk, share, blocks, REDUCE, f"reduce{t}") if up_wanted else None
        down = _step(dst, src, blk, share, blocks, COPY, f"bcast{t}") if down_wanted else None
        if up_wanted:
            rs.append(up)
        if down_wanted:
            ag.append(down)
        if key is not None:
            seen[key] = (up, down)
    return [s for s in rs + ag[::-1] if s.traffic.num_flows]


def _step(src, dst, blk, share, blocks: bool, op: int, label: str) -> Step:
    n = len(src)
    sh = np.full(n, share)
    if blocks:
        tr = Traffic(src.astype(np.int32), dst.astype(np.int32), sh, None,
                     np.arange(n + 1, dtype=np.int64), blk.astype(np.int32),
                     np.full(n, op, np.int8))
    else:
        tr = Traffic(src.astype(np.int32), dst.astype(np.int32), sh)
    if op != REDUCE or n == 0:
        return Step(tr, Reduction.none(), label)
    # a receiver adds every child's copy of a block into its own: fan-in 1 + k
    key = dst.astype(np.int64) * (int(blk.max()) + 1) + blk
    uniq, count = np.unique(key, return_counts=True)
    node = uniq // (int(blk.max()) + 1)
    red = Reduction(node.astype(np.int32), np.full(len(uniq), share),
                    (count + 1).astype(np.int32))
    return Step(tr, red, label)


def _schedule(name: str, p: int, parents: list, segments: int, blocks: bool,
              levels: list | None = None, parts: str = "both", **extra) -> Schedule:
    """The pipelined trees' schedule (``extra``: the collective and root of
    a rooted one)."""
    num_blocks = segments * len(parents)
    steps = pipelined_tree_steps(parents, segments, blocks, num_blocks, levels, parts)
    return Schedule(name, f"segments={segments}", p, tuple(steps),
                    num_blocks if blocks else None,
                    equal_block_share(num_blocks) if blocks else None,
                    {"p_eff": p, "segments": segments}, **extra)


def build_binomial(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    """Binomial-tree reduce to rank 0 and binomial broadcast, the vector
    pipelined in ``segments`` pieces (module docstring).

    Returns
    -------
    Schedule
        ``2(K + ⌈log2 p⌉ − 1)`` steps: ``reduce<t>`` then ``bcast<t>``.
    """
    opts = BINOMIAL.parse_options(options)
    p = check_ranks("binomial", p)
    k = opts["segments"]
    return _schedule("binomial", p, [binomial_parents(p)], k, blocks, [binomial_rounds(p)])


def build_dbtree(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    """NCCL's double binary tree: two complementary binary trees, each
    reducing and broadcasting half of the vector in ``segments`` pipelined
    pieces (module docstring).

    Returns
    -------
    Schedule
        ``2(K + H − 1)`` steps, ``H`` the taller tree's height.
    """
    opts = DBTREE.parse_options(options)
    p = check_ranks("dbtree", p)
    k = opts["segments"]
    return _schedule("dbtree", p, list(dtree_parents(p)), k, blocks)


def hung_dtree_parents(p: int, root: int) -> list[np.ndarray]:
    """NCCL's two trees on ranks relative to ``root``, the second hung from
    the root (module docstring), in absolute ranks."""
    v = np.arange(p, dtype=np.int64)
    absolute = (v + root) % p
    out = []
    for parent in dtree_parents(p):
        hung = reroot(parent, 0)
        par = np.full(p, -1, np.int64)
        par[absolute] = np.where(hung < 0, -1, absolute[np.maximum(hung, 0)])
        out.append(par)
    return out


def build_rooted_dbtree(collective: str, p: int, blocks: bool = False, root: int = 0,
                        segments: int = 1) -> Schedule:
    """``broadcast`` or ``reduce`` over NCCL's two trees, each half the
    vector in ``segments`` pipelined pieces (module docstring).

    Returns
    -------
    Schedule
        ``K + H − 1`` steps (``H`` the taller hung tree's height), with
        ``2K`` blocks: tree ``i`` carries blocks ``iK … iK + K − 1``.
    """
    p = check_ranks("dbtree", p)
    root = check_root("dbtree", p, root)
    k = check_segments("dbtree", segments)
    return _schedule("dbtree", p, hung_dtree_parents(p, root), k, blocks,
                     parts="down" if collective == "broadcast" else "up",
                     collective=collective, root=root)


def _convert_segments(raw):
    if isinstance(raw, (bool, np.bool_)):
        raise TypeError(raw)
    k = int(raw) if not isinstance(raw, str) else int(raw.strip())
    if not 1 <= k <= MAX_SEGMENTS:
        raise ValueError(raw)
    return k


_SEG_DOC = (f"pieces the vector is pipelined in (1..{MAX_SEGMENTS}); 1: no pipelining")

BINOMIAL = register(AlgorithmSpec(
    "binomial", build_binomial,
    (Param("segments", int, 1, None, _SEG_DOC, convert=_convert_segments),),
    "Binomial-tree reduce to rank 0 + binomial broadcast (the MPI baseline), pipelined in "
    "segments: 2(segments + ceil(log2 p) - 1) steps"))

DBTREE = register(AlgorithmSpec(
    "dbtree", build_dbtree,
    (Param("segments", int, 1, None, _SEG_DOC, convert=_convert_segments),),
    "NCCL's double binary tree: two complementary binary trees (ncclGetDtree), each "
    "reducing and broadcasting half the vector, pipelined in segments"))


def _rooted_spec(collective: str) -> AlgorithmSpec:
    def build(p, topology=None, blocks=False, **options):
        return build_rooted_dbtree(collective, p, blocks, **options)

    def check(p, options):
        check_root("dbtree", p, options.get("root", 0))
        check_segments("dbtree", options.get("segments", 1))

    way = "down" if collective == "broadcast" else "up"
    return AlgorithmSpec(
        "dbtree", build,
        (Param("root", int, 0, None, "the root rank"),
         Param("segments", int, 1, None, _SEG_DOC, convert=_convert_segments)),
        f"NCCL's double binary tree (ncclGetDtree) on ranks relative to the root, the "
        f"second tree hung from the root: half the vector {way} each tree, pipelined in "
        "segments; about segments + height − 1 steps of n/segments on the busiest link",
        collective=collective, check=check)


for _collective in ("broadcast", "reduce"):
    register(_rooted_spec(_collective))
