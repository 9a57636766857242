"""Parameter-server allreduces (GenModel paper: Xiong et al., "Revisiting the
Time Cost Model of AllReduce", §2.1, §3.3 Table 2 and Fig. 5).

Three registered algorithms, each working for any ``p >= 2``:

``cps`` — Co-located PS (§2.1)
    Every rank is the parameter server of ``1/p`` of the vector (block ``j``
    belongs to rank ``j``). Step ``rs0`` (reduce-scatter): every rank sends
    block ``j`` to rank ``j`` (``p − 1`` flows of ``n/p`` per rank, a full
    mesh); each rank reduces its block with fan-in ``p`` (its own copy plus
    ``p − 1`` received ones: ``(p + 1)·n/p`` bytes of memory traffic and
    ``(p − 1)·n/p`` of additions, GenModel eq. 4). Step ``ag0`` (allgather):
    every rank sends its reduced block to every other rank (COPY). Table 2:
    ``2α + 2(p−1)n/p·β + (p−1)n/p·γ + (p+1)n/p·δ`` plus incast.

``hcps:factors=F0xF1[x...]`` — Hierarchical Co-located PS (§3.3, Fig. 5)
    ``p = F0·F1·…·F(m−1)``; rank ``r`` has mixed-radix digits
    ``r = d0 + F0·(d1 + F1·(d2 + …))``, so the first grouping is of
    consecutive ranks (on a tree with linear placement: the hosts of one
    switch). Reduce-scatter step ``i`` (label ``rs<i>``) groups the ranks
    that differ only in digit ``i`` (groups of ``Fi``; the groupings are
    orthogonal, Fig. 5) and runs a co-located PS inside each group on what
    the rank holds: before step ``i`` rank ``r`` holds the blocks whose
    digits ``0..i−1`` equal its own (``n/P(i−1)`` bytes, ``P(i) = F0·…·Fi``),
    it sends the ``Fi − 1`` parts whose digit ``i`` is a peer's to that peer
    (``n/P(i)`` each) and reduces its own part with fan-in ``Fi``. After the
    ``m`` steps rank ``r`` holds block ``r`` fully reduced. The allgathers
    run in reverse (``ag<m−1>`` … ``ag0``): step ``i`` copies each rank's
    ``n/P(i)`` to the ``Fi − 1`` peers of its digit-``i`` group.
    ``factors=auto`` (default): where the ranks are equal groups of ``g``
    hosts of one switch (``1 < g < p``, linear placement; e.g. ``tree:4x6``,
    ``fattree:k=4``), ``g x p/g``, so the first step stays inside the
    switches as on a GenTree tree; otherwise two factors ``F0 x F1`` with
    ``F0`` the smallest divisor of ``p`` that is ``>= sqrt(p)`` (32 → 8x4,
    24 → 6x4, 12 → 4x3, a prime → ``p``, i.e. ``cps``): the larger fan-in
    first, as
    §3.3 advises ("the larger the prior steps' fan-in degrees, the less the
    memory access overhead"), and two steps as in the paper's examples
    (Fig. 5, Fig. 8, §4.3 "if N = 32, the fan-in degrees can be 8 and 4").

    *δ term.* Step ``i`` costs ``(Fi + 1)·n/P(i)·δ``; with ``Fi/P(i) =
    1/P(i−1)`` the sum telescopes to
    ``(N + 1 + 2·Σ_{i=1}^{m−1} Π_{j=i}^{m−1} Fj)/N · nδ`` (0-indexed ``F``,
    ``F0`` the first step). Table 2 prints ``2Σ_{i=1}^{m−1} Π_{j=1}^{i} f_j``:
    the same for ``m = 2`` (``2·F1``; every HCPS example of the paper has
    ``m = 2``) and for ``m >= 3`` when the table's product runs over the
    *last* ``i`` fan-ins (``f`` counted from the last step), which is also
    the reading under which §3.3's "larger prior fan-in, less memory access"
    holds. This module follows the schedule; the tests check both.
    β: every step is a balanced full mesh inside the groups, so a rank sends
    and receives ``(Fi − 1)/P(i)·n`` per step, ``2(N − 1)/N · n`` in all; γ:
    ``Σ (Fi − 1)/P(i) = (N − 1)/N``; α: ``2m`` steps.

``reduce-broadcast`` — PS-based Reduce-Broadcast (§2.1)
    Rank 0 is the parameter server: step ``reduce`` sends every other rank's
    whole vector to rank 0, which reduces them with fan-in ``p``; step
    ``bcast`` copies the result from rank 0 to every other rank. Table 2:
    ``2α + 2(p−1)n·β + (p−1)n·γ + (p+1)n·δ`` plus incast.

Incast: the flow model charges a receiver with ``w`` concurrent incoming
flows ``β' = β + max(w − w_t, 0)·ε`` (:mod:`flowemu.kernels.maxmin`), where
``w`` counts the *flows* (``p − 1`` into a co-located PS), while Table 2
writes ``max(N − w_t, 0)`` with the fan-in ``N`` (own copy included): the
flow model's threshold is one flow lower than Table 2's ``w_t``. The
broadcast of ``reduce-broadcast`` has fan-in 1 at every receiver, so the
flow model charges incast only on its reduce step (Table 2 charges both).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.errors import ConfigError, show
from ._blocks import COPY, REDUCE, check_ranks, equal_block_share, make_traffic
from .base import AlgorithmSpec, Param, Reduction, Schedule, Step, Traffic
from .registry import register

__all__ = ["auto_factors", "hcps_delta_coefficient", "parse_factors", "schedule_shape"]


# --------------------------------------------------------------------------- factors

def _positive_ints(raw, from_text) -> tuple[int, ...] | str:
    """An option that is ``"auto"``, an int, a list of ints or a text that
    ``from_text`` turns into ints -> a tuple of ints >= 1 or ``"auto"``
    (``Param.convert``: raises ValueError/TypeError on anything else)."""
    if isinstance(raw, (bool, np.bool_)):
        raise TypeError(raw)
    if isinstance(raw, (int, np.integer)):
        parts = [int(raw)]
    elif isinstance(raw, str):
        text = raw.strip().lower()
        if text == "auto":
            return "auto"
        parts = from_text(text, raw)
    elif isinstance(raw, (tuple, list)):
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in raw):
            raise TypeError(raw)
        parts = [int(v) for v in raw]
    else:
        raise TypeError(raw)
    if not parts or any(f < 1 for f in parts):
        raise ValueError(raw)
    return tuple(parts)


def _factors_from_text(text: str, raw) -> list[int]:
    items = text.split("x")
    if not all(item.strip().isdigit() for item in items):
        raise ValueError(raw)
    return [int(item) for item in items]


def parse_factors(raw) -> tuple[int, ...] | str:
    """``"8x3"`` → ``(8, 3)``, ``"auto"`` → ``"auto"``, an int → ``(int,)``
    (``Param.convert``: raises ValueError/TypeError on anything else)."""
    return _positive_ints(raw, _factors_from_text)


def auto_factors(p: int) -> tuple[int, ...]:
    """Two factors ``(F0, F1)``, ``F0`` the smallest divisor of ``p`` that is
    ``>= sqrt(p)`` (the larger fan-in first); ``(p,)`` when ``p`` is prime."""
    f0 = next(d for d in range(math.isqrt(p), p + 1) if p % d == 0 and d * d >= p)
    return (p,) if f0 == p else (f0, p // f0)


def topology_factors(topology, p: int) -> tuple[int, ...]:
    """``factors=auto`` on ``topology``: ``(g, p/g)`` when the ranks form
    equal groups of ``1 < g < p`` hosts of one switch (:func:`switch_groups`,
    linear placement), so the first step stays inside the switches;
    otherwise :func:`auto_factors`."""
    if hasattr(topology, "link_src"):
        groups, _ = switch_groups(topology, p)
        if len(set(groups)) == 1 and 1 < groups[0] < p:
            return (groups[0], p // groups[0])
    return auto_factors(p)


def resolve_factors(name: str, p: int, factors, topology=None) -> tuple[int, ...]:
    if factors == "auto":
        return topology_factors(topology, p)
    if math.prod(factors) != p:
        text = "x".join(map(str, factors))
        raise ConfigError(
            f"algorithm {name}: factors={text} multiply to {math.prod(factors)}, not the "
            f"{p} ranks; give factors whose product is {p} (e.g. "
            f"{'x'.join(map(str, auto_factors(p)))}) or factors=auto")
    # a group of one rank exchanges nothing: no step (1x8 is cps on 8 ranks)
    return tuple(f for f in factors if f > 1)


def hcps_delta_coefficient(factors) -> float:
    """δ coefficient (× n) of an HCPS with fan-ins ``factors`` (first step
    first): ``(N + 1 + 2·Σ_{i=1}^{m−1} Π_{j=i}^{m−1} F_j)/N``."""
    n = math.prod(factors)
    tail = sum(math.prod(factors[i:]) for i in range(1, len(factors)))
    return (n + 1 + 2 * tail) / n


# --------------------------------------------------------------------------- builders

def _group_steps(p: int, factors: tuple[int, ...], blocks: bool) -> list[Step]:
    """The ``2m`` steps of a (hierarchical) co-located PS on ``p`` ranks and
    ``p`` blocks (block ``b`` ends reduced on rank ``b``)."""
    ranks = np.arange(p, dtype=np.int64)
    rs, ag = [], []
    stride = 1                                   # P(i−1): weight of digit i
    for i, f in enumerate(factors):
        digit = (ranks // stride) % f
        low = ranks % stride                     # digits 0..i−1 of the rank
        k = np.arange(1, f, dtype=np.int64)      # peer offsets inside the group
        peer_digit = (digit[:, None] + k[None, :]) % f          # (p, f−1)
        src = np.repeat(ranks, f - 1).astype(np.int32)
        dst = (ranks[:, None] + (peer_digit - digit[:, None]) * stride).reshape(-1)
        dst = dst.astype(np.int32)
        pi = stride * f                          # P(i)
        share = np.full(len(src), 1.0 / pi)
        count = p // pi                          # blocks per flow
        free = np.arange(count, dtype=np.int64) * pi            # digits i+1.. of the block
        rs_blocks = ag_blocks = None
        if blocks:
            # rs: the part whose digit i is the peer's; ag: the rank's own part
            rs_blocks = (low[:, None, None] + peer_digit[:, :, None] * stride
                         + free[None, None, :]).reshape(len(src), count)
            own = low + digit * stride
            ag_blocks = np.repeat(own[:, None] + free[None, :], f - 1, axis=0)
        reduction = Reduction(ranks.astype(np.int32), np.full(p, 1.0 / pi),
                              np.full(p, f, np.int32))
        rs.append(Step(make_traffic(src, dst, share, None, rs_blocks, REDUCE), reduction,
                       f"rs{i}"))
        ag.append(Step(make_traffic(src, dst, share, None, ag_blocks, COPY),
                       Reduction.none(), f"ag{i}"))
        stride = pi
    return rs + ag[::-1]


def _schedule(name: str, variant: str, p: int, factors, blocks: bool, info: dict) -> Schedule:
    steps = _group_steps(p, factors, blocks)
    num_blocks, block_share = (p, equal_block_share(p)) if blocks else (None, None)
    return Schedule(name, variant, p, tuple(steps), num_blocks, block_share, info)


def build_cps(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    """Co-located PS schedule on ``p`` ranks (GenModel paper §2.1, Table 2).

    Parameters
    ----------
    p : int
        Number of ranks (>= 2).
    topology : Topology or None
        Unused: the pattern is a full mesh of rank ids.
    blocks : bool
        Attach block content (``p`` blocks, block ``j`` reduced on rank ``j``).

    Returns
    -------
    Schedule
        Steps ``rs0`` (``p(p−1)`` REDUCE flows of ``n/p``; every rank reduces
        ``n/p`` with fan-in ``p``) and ``ag0`` (the same flows, COPY).
    """
    CPS.parse_options(options)
    p = check_ranks("cps", p)
    return _schedule("cps", "", p, (p,), blocks, {"p_eff": p, "factors": (p,)})


def build_hcps(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    """Hierarchical co-located PS schedule on ``p`` ranks (GenModel paper
    §3.3, Fig. 5, Table 2; see the module docstring for the grouping and
    the δ term).

    Parameters
    ----------
    p : int
        Number of ranks (>= 2).
    topology : Topology or None
        Only for ``factors=auto`` (the hosts of one switch as first groups);
        groups are of rank ids (digit 0 = consecutive ranks).
    blocks : bool
        Attach block content (``p`` blocks).
    factors : "auto" or tuple of int
        Fan-in of each reduce-scatter step, first step first; the product
        must be ``p``. A factor 1 (groups of one rank) exchanges nothing and
        adds no step.

    Returns
    -------
    Schedule
        ``2m`` steps ``rs0..rs<m−1>``, ``ag<m−1>..ag0``; ``variant`` is the
        factorisation (``"8x3"``), ``info["factors"]`` the tuple.
    """
    opts = HCPS.parse_options(options)
    p = check_ranks("hcps", p)
    factors = resolve_factors("hcps", p, parse_factors(opts["factors"]), topology)
    text = "x".join(map(str, factors))
    return _schedule("hcps", f"factors={text}", p, factors, blocks,
                     {"p_eff": p, "factors": factors})


def build_reduce_broadcast(p: int, topology=None, blocks: bool = False,
                           **options) -> Schedule:
    """PS-based Reduce-Broadcast on ``p`` ranks, rank 0 the parameter server
    (GenModel paper §2.1, Table 2).

    Returns
    -------
    Schedule
        Steps ``reduce`` (``p − 1`` whole-vector REDUCE flows into rank 0,
        reduced with fan-in ``p``) and ``bcast`` (``p − 1`` whole-vector COPY
        flows out of rank 0); one block.
    """
    RB.parse_options(options)
    p = check_ranks("reduce-broadcast", p)
    others = np.arange(1, p, dtype=np.int32)
    root = np.zeros(p - 1, np.int32)
    share = np.ones(p - 1)
    b2d = np.zeros((p - 1, 1), np.int32) if blocks else None
    steps = (
        Step(make_traffic(others, root, share, None, b2d, REDUCE),
             Reduction(np.zeros(1, np.int32), np.ones(1), np.full(1, p, np.int32)), "reduce"),
        Step(make_traffic(root, others, share, None, b2d, COPY), Reduction.none(), "bcast"),
    )
    num_blocks, block_share = (1, np.ones(1)) if blocks else (None, None)
    return Schedule("reduce-broadcast", "", p, steps, num_blocks, block_share,
                    {"p_eff": p, "root": 0})


def _groups_from_text(text: str, raw) -> list[int]:
    parts: list[int] = []
    for item in text.split("+"):
        size, star, count = item.partition("*")
        if not size.strip().isdigit() or star and not count.strip().isdigit():
            raise ValueError(raw)
        parts += [int(size)] * (int(count) if star else 1)
    return parts


def parse_groups(raw) -> tuple[int, ...] | str:
    """``"32+16+16"`` or ``"32+16*2"`` (``G*K``: ``K`` groups of ``G``) →
    ``(32, 16, 16)``, ``"auto"`` → ``"auto"``
    (``Param.convert``; raises ValueError/TypeError on anything else)."""
    return _positive_ints(raw, _groups_from_text)


def groups_text(groups) -> str:
    """``(32, 16, 16, 8)`` → ``"32+16*2+8"`` (runs of equal sizes as ``G*K``)."""
    out, i = [], 0
    while i < len(groups):
        j = i
        while j < len(groups) and groups[j] == groups[i]:
            j += 1
        out.append(str(groups[i]) if j - i == 1 else f"{groups[i]}*{j - i}")
        i = j
    return "+".join(out)


def switch_groups(topology, p: int) -> tuple[tuple[int, ...], str]:
    """Runs of consecutive endpoints ``0..p−1`` attached to the same switch
    (the vertex an endpoint's first link leads to), and a note when there
    are none (no topology, or endpoints linked to endpoints): one group."""
    if topology is None:
        return (p,), ""
    n_end = int(topology.num_endpoints)
    src, dst = np.asarray(topology.link_src), np.asarray(topology.link_dst)
    out = src < min(p, n_end)
    first = np.full(p, -1, np.int64)
    # the first link out of each endpoint (links listed in any order)
    order = np.flatnonzero(out)[::-1]
    first[src[order]] = dst[order]
    if p > n_end or np.any(first < n_end):
        spec = getattr(topology, "spec", "the topology")
        return (p,), (f"{spec} has no switch per host group: acps groups=auto uses one group of "
                      f"{p} ranks (= cps)")
    cut = np.flatnonzero(np.diff(first)) + 1
    sizes = np.diff(np.concatenate([[0], cut, [p]]))
    return tuple(int(v) for v in sizes), ""


def _allocation(p: int, lo: int, size: int) -> np.ndarray:
    """Owner (a rank of the group ``lo..lo+size−1``) of each of the ``p``
    blocks after the group's reduce-scatter: member ``r`` keeps block ``r``
    (so it is the holder of its own final block), the ``p − size`` blocks of
    other groups' ranks are dealt out in contiguous runs, the first members
    taking one more where they do not divide evenly (Algorithm 1's
    ``floor(N/n)`` blocks per server plus the remainder)."""
    owner = np.empty(p, np.int64)
    members = np.arange(lo, lo + size)
    owner[members] = members
    others = np.concatenate([np.arange(0, lo), np.arange(lo + size, p)])
    base, extra = divmod(len(others), size)
    counts = base + (np.arange(size) < extra)
    owner[others] = np.repeat(members, counts)
    return owner


def build_acps(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    """Asymmetric co-located PS on ``p`` ranks in groups of unequal sizes
    (GenModel paper §4.2, Fig. 7b, Algorithm 1).

    The ranks form consecutive groups (``groups=A+B+...``, or ``auto``: the
    hosts of one switch, for linear placement). The vector is in ``p``
    blocks of ``n/p``; block ``b`` ends reduced on rank ``b``.

    - ``rs0``: a co-located PS inside every group: member ``k`` of a group
      of ``g`` receives from each other member the blocks allocated to it
      (``⌊p/g⌋`` or ``⌈p/g⌉`` blocks, its own block among them, see
      :func:`_allocation`) and reduces them with fan-in ``g``; groups of one
      rank do nothing. Shares differ between groups: that is the asymmetry
      of footnote 2.
    - ``rs1``: the holder of block ``b`` in every other group sends its
      partial sum straight to rank ``b`` (Algorithm 1: "servers can only
      send blocks directly to the destination"), which reduces the ``c``
      partial sums (fan-in ``c``, the number of groups) into its own.
    - ``ag1``, ``ag0``: the same flows backwards, COPY.

    With one group this is ``cps``; with ``p`` groups of one rank as well.

    Returns
    -------
    Schedule
        Up to 4 steps (steps without flows are left out); ``variant`` names
        the groups (``groups=32*8+16*8``).
    """
    opts = ACPS.parse_options(options)
    p = check_ranks("acps", p)
    note = ""
    groups = parse_groups(opts["groups"])
    if groups == "auto":
        groups, note = switch_groups(topology, p)
    elif sum(groups) != p:
        text = groups_text(groups)
        raise ConfigError(f"algorithm acps: groups={text} add up to {sum(groups)}, not the {p} "
                          f"ranks; give group sizes that add up to {p} or groups=auto")
    groups = tuple(groups)
    starts = np.concatenate([[0], np.cumsum(groups)[:-1]]).astype(np.int64)
    owners = np.stack([_allocation(p, int(lo), g) for lo, g in zip(starts, groups)])  # (c, p)
    c = len(groups)
    blk = np.arange(p, dtype=np.int64)

    # rs0 / ag0: inside each group, every member sends each other member
    # the blocks allocated to that member
    counts = np.concatenate([np.bincount(own - lo, minlength=g)       # blocks per rank
                             for lo, g, own in zip(starts.tolist(), groups, owners)])
    s0, d0, b0 = [], [], []
    for lo, g, own in zip(starts.tolist(), groups, owners):
        if g == 1:
            continue
        k = np.arange(g, dtype=np.int64)
        j = np.arange(1, g, dtype=np.int64)
        s0.append(np.repeat(lo + k, g - 1))
        dst = (lo + (k[:, None] + j[None, :]) % g).reshape(-1)
        d0.append(dst)
        if blocks:
            mine = [np.flatnonzero(own == r) for r in range(lo, lo + g)]
            b0 += [mine[d - lo] for d in dst.tolist()]
    steps_rs, steps_ag = [], []
    if s0:
        src = np.concatenate(s0).astype(np.int32)
        dst = np.concatenate(d0).astype(np.int32)
        share = counts[dst] / p        # groups are consecutive ranks: index = rank
        tr_rs, tr_ag = _ragged_traffic(src, dst, share, b0 if blocks else None)
        fanin = np.repeat(np.asarray(groups, np.int64), groups)
        keep = fanin > 1
        ranks = np.arange(p)
        red = Reduction(ranks[keep], counts[keep] / p, fanin[keep])
        steps_rs.append(Step(tr_rs, red, "rs0"))
        steps_ag.append(Step(tr_ag, Reduction.none(), "ag0"))
    if c > 1:
        # rs1 / ag1: block b's holder in every other group -> rank b
        group_of = np.repeat(np.arange(c), groups)
        holder = owners[:, blk]                          # (c, p): holder of b in group i
        mask = np.arange(c)[:, None] != group_of[None, :]
        src = holder[mask].astype(np.int32)
        dst = np.broadcast_to(blk, (c, p))[mask].astype(np.int32)
        share = np.full(len(src), 1.0 / p)
        b1 = list(dst[:, None].astype(np.int64)) if blocks else None
        tr_rs, tr_ag = _ragged_traffic(src, dst, share, b1)
        red = Reduction(blk.astype(np.int32), np.full(p, 1.0 / p), np.full(p, c, np.int32))
        steps_rs.append(Step(tr_rs, red, "rs1"))
        steps_ag.insert(0, Step(tr_ag, Reduction.none(), "ag1"))
    num_blocks, block_share = (p, equal_block_share(p)) if blocks else (None, None)
    text = groups_text(groups)
    return Schedule("acps", f"groups={text}", p, tuple(steps_rs + steps_ag), num_blocks,
                    block_share, {"p_eff": p, "groups": groups}, note=note)


def _ragged_traffic(src, dst, share, block_lists):
    """REDUCE traffic src→dst and its COPY reverse dst→src, with ragged block
    lists (one array per flow) when given."""
    if block_lists is None:
        return Traffic(src, dst, share), Traffic(dst, src, share)
    ptr = np.concatenate([[0], np.cumsum([len(b) for b in block_lists])]).astype(np.int64)
    idx = np.concatenate(block_lists).astype(np.int32)
    return (Traffic(src, dst, share, None, ptr, idx, np.full(len(src), REDUCE, np.int8)),
            Traffic(dst, src, share, None, ptr, idx, np.full(len(src), COPY, np.int8)))


def schedule_shape(name: str, options: dict, p: int, topology=None) -> tuple[int, int]:
    """``(flows per step, distinct steps)`` at most, before building (for
    :func:`flowemu.algorithms.shapes.schedule_shape`)."""
    if name == "reduce-broadcast":
        return p - 1, 2
    if name == "acps":
        groups = _parsed(parse_groups, options.get("groups", "auto"))
        if groups == "auto":
            groups = (switch_groups(topology, p)[0]
                      if hasattr(topology, "link_src") and p >= 2 else (p,))
        if not isinstance(groups, tuple) or sum(groups) != p:
            groups = (p,)
        return max(sum(g * (g - 1) for g in groups), (len(groups) - 1) * p), 4
    if name == "hcps":
        factors = _parsed(parse_factors, options.get("factors", "auto"))
        if factors == "auto" or not isinstance(factors, tuple) or math.prod(factors) != p:
            factors = topology_factors(topology, p) if p >= 2 else (2,)
        return p * (max(factors) - 1), 2 * len(factors)
    return p * (p - 1), 2


def _parsed(parse, raw):
    """``parse(raw)``, or ``"auto"`` for what does not parse (the builder
    refuses it with the message)."""
    try:
        return parse(raw)
    except (TypeError, ValueError):
        return "auto"


# --------------------------------------------------------------------------- registry

def _convert_factors(raw) -> str:
    """The canonical text (``"8x3"``, ``"auto"``): result rows print it in
    their ``options`` column, and it parses back to the same factors."""
    try:
        factors = parse_factors(raw)
    except (TypeError, ValueError):
        raise ValueError(show(raw)) from None
    return factors if factors == "auto" else "x".join(map(str, factors))


CPS = register(AlgorithmSpec(
    name="cps",
    build=build_cps,
    doc="Co-located PS: every rank is the parameter server of 1/p of the vector; a full-mesh "
        "reduce-scatter (fan-in p) then a full-mesh allgather, 2 steps of n/p per flow "
        "(GenModel paper §2.1, Table 2).",
))

HCPS = register(AlgorithmSpec(
    name="hcps",
    build=build_hcps,
    params=(Param("factors", str, "auto", None,
                  "fan-in of each reduce-scatter step, first step first: F0xF1[x...] with "
                  "product p, e.g. 8x3 (a factor 1, groups of one rank, adds no step), or "
                  "auto: gx(p/g) where the ranks are equal groups of g hosts of one switch, "
                  "else F0xF1 with F0 the smallest divisor >= sqrt(p) (a prime p: cps)",
                  convert=_convert_factors),),
    doc="Hierarchical co-located PS: reduce-scatter by co-located PS in orthogonal groups of "
        "F0, F1, ... ranks (first groups consecutive ranks), then the allgathers in reverse; "
        "2m steps (GenModel paper §3.3, Fig. 5, Table 2).",
))

RB = register(AlgorithmSpec(
    name="reduce-broadcast",
    build=build_reduce_broadcast,
    doc="PS-based reduce-broadcast: every rank sends its whole vector to rank 0, which reduces "
        "them (fan-in p) and sends the result back, 2 steps of n per flow (GenModel paper §2.1, "
        "Table 2).",
))


def _convert_groups(raw) -> str:
    """The canonical text (``"32*8+16*8"``, ``"auto"``; see
    :func:`_convert_factors`)."""
    try:
        groups = parse_groups(raw)
    except (TypeError, ValueError):
        raise ValueError(show(raw)) from None
    return groups if groups == "auto" else groups_text(groups)


ACPS = register(AlgorithmSpec(
    name="acps",
    build=build_acps,
    params=(Param("groups", str, "auto", None,
                  "sizes of the groups of consecutive ranks, A+B+... adding up to p (e.g. "
                  "32+16; G*K is K groups of G: 32*8+16*8), or auto: the ranks of one switch (linear placement; one group "
                  "where hosts hang off no switch)",
                  convert=_convert_groups),),
    doc="Asymmetric co-located PS for groups of unequal sizes: co-located PS inside each "
        "group, then every group's partial sum of block b goes straight to rank b (fan-in = "
        "groups), allgathers in reverse; up to 4 steps (GenModel paper §4.2, Fig. 7b).",
))
