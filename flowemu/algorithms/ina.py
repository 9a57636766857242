"""In-network aggregation (``ina``): the switches of an aggregation tree reduce
the data, as in switch-based reduction (SHARP-style aggregation in
InfiniBand and Ethernet switches).

Every switch of the tree combines its children's streams into one and
forwards it up; the top's result is multicast back down. Pipelined, the
whole operation is one *stream* per tree (:mod:`flowemu.algorithms.streams`):
a flow over every link of the tree, so its rate is the max-min share of the
tree's tightest link, optionally capped by a switch's reduction rate, and
its time ``α + hops·(link + hop latency) + n / rate`` with ``hops`` the way
up and down. The hosts add nothing (the switches reduce).

Options
-------
``collective=allreduce|reduce`` (``root=R``: the rank a reduce delivers to).

``trees=K``: K streams, each ``n/K``, over different aggregation trees (on a
fat tree, aggregation switch ``i mod k/2`` and core ``(i div k/2) mod k/2``
for tree ``i``; on a leaf-spine, spine path ``i``; on a tree, parallel link
``i`` of each hop). Their bytes add on the links they share.

``tiers=T|all``: only switches of tiers ``1..T`` aggregate (tier 1: the
switches hosts attach to; a switch's tier is its height above the hosts).
The ranks under one tier-``T`` switch form a group (a host with no switch at
tiers ``1..T`` above it is a group of its own). Then, bulk synchronous:

1. each group reduces into its first rank (its *representative*) by a
   stream (``REDUCE``: up to the group's top switch, down to the
   representative);
2. the representatives run a ring allreduce of ordinary flows (a
   reduce-scatter and an allgather, ``2(g − 1)`` steps of ``n/g``; for a
   reduce, the reduce-scatter and a gather of the blocks at the root);
3. each representative multicasts the result to its group by a stream
   (``BROADCAST``: up to the group's top switch, down to every member).

``all`` (the default) is the top tier: one group, one stream, unless the
topology has no single top (a multi-site tree's sites are groups).

``rate=RATE|inf``: bytes/s a switch reduces at, shared by every stream it
combines (``inf``: line rate).

Ranks are grouped as if rank ``r`` ran on endpoint ``r`` (linear placement);
the streams always follow where the ranks really run.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core.errors import ConfigError
from ..core.units import parse_rate
from ._blocks import check_ranks
from .base import AlgorithmSpec, Param, Reduction, Schedule, Step, StepLabels, Steps, Traffic
from .registry import register
from .streams import (
    STREAM_ALLREDUCE,
    STREAM_BROADCAST,
    STREAM_REDUCE,
    stream_traffic_parts,
)

NAME = "ina"
FAMILIES = ("tree", "leafspine", "fattree")
MAX_TREES = 4096
#: why ``verify`` cannot check it
UNVERIFIABLE = ("switches reduce its data (in-network aggregation); the block-level verifier "
                "moves blocks between ranks only and cannot express a switch's reduction, so "
                "ina cannot be verified (its timing is checked against closed forms instead)")


def build(p: int, topology=None, blocks: bool = False, collective: str = "allreduce",
          root: int = 0, trees: int = 1, tiers="all", rate: float = math.inf) -> Schedule:
    p = check_ranks(NAME, p)
    if blocks:
        raise ConfigError(f"algorithm {NAME}: {UNVERIFIABLE}")
    if topology is None or not getattr(topology, "has_aggregation_trees", False):
        spec = getattr(topology, "spec", "no topology")
        raise ConfigError(f"algorithm {NAME}: {spec} has no aggregation trees; ina runs on "
                          f"{', '.join(FAMILIES)}")
    if not 0 <= root < p:
        raise ConfigError(f"algorithm {NAME}: option root={root} is not allowed; expected a "
                          f"rank in 0..{p - 1}")
    if root and collective == "allreduce":
        raise ConfigError(f"algorithm {NAME}: option root={root} applies to "
                          "collective=reduce (an allreduce delivers to every rank)")
    if p > topology.num_endpoints:
        raise ConfigError(f"ranks: {p} ranks do not fit on {topology.spec} "
                          f"({topology.num_endpoints} endpoints)")
    table = topology.aggregation_tiers()[:p]
    top = table.shape[1]
    if tiers == "all":
        cut = top
    elif tiers > top:
        raise ConfigError(f"algorithm {NAME}: option tiers={tiers} is not allowed; "
                          f"{topology.spec} has {top} switch tier(s) (1: the switches hosts "
                          "attach to)")
    else:
        cut = tiers
    groups = _groups(table[:, :cut])
    reduce = collective == "reduce"
    shares = np.full(trees, 1.0 / trees)
    variant = collective + (f", {trees} trees" if trees > 1 else "")
    if len(groups) == 1:
        kind = STREAM_REDUCE if reduce else STREAM_ALLREDUCE
        first = root if reduce else 0
        traffic = _streams([groups[0]] * trees, [first] * trees, kind, np.arange(trees), shares,
                           rate)
        return Schedule(NAME, variant, p, (Step(traffic, Reduction.none(), NAME),),
                        collective=collective, root=root if reduce else 0)
    reps = [root if reduce and root in g else int(g[0]) for g in groups]
    ring, ring_order, ring_parts = _ring_steps(np.asarray(reps, np.int32),
                                               _group_of(groups, root) if reduce else -1)
    many = [(g, r) for g, r in zip(groups, reps, strict=True) if len(g) > 1]
    before, after = [], []
    if many:
        tr = np.repeat(np.arange(trees), len(many))
        grp = [g for _ in range(trees) for g, _ in many]
        rts = [r for _ in range(trees) for _, r in many]
        sh = np.repeat(shares, len(many))
        before = [Step(_streams(grp, rts, STREAM_REDUCE, tr, sh, rate), Reduction.none(),
                       f"{NAME}-up")]
        if not reduce:
            after = [Step(_streams(grp, rts, STREAM_BROADCAST, tr, sh, rate),
                          Reduction.none(), f"{NAME}-down")]
    shift = len(before)
    order = np.concatenate([np.arange(shift), ring_order + shift,
                            np.arange(len(after)) + shift + len(ring)]).astype(np.int32)
    labels = StepLabels(((f"{NAME}-up", len(before)), *ring_parts,
                         (f"{NAME}-down", len(after))))
    variant += f", tiers={cut}: {len(groups)} groups and a ring"
    return Schedule(NAME, variant, p, Steps((*before, *ring, *after), order, labels),
                    collective=collective, root=root if reduce else 0)


def _groups(table: np.ndarray) -> list[np.ndarray]:
    """The ranks under each highest switch of tiers ``1..T`` (``table``:
    int64[p, T], -1 where a rank has no switch at a tier), in rank order of
    their first member; a rank with none is a group of its own."""
    p, t = table.shape
    key = np.full(p, -1, dtype=np.int64)
    for c in range(t):
        key = np.where(table[:, c] >= 0, table[:, c], key)
    alone = key < 0
    key = np.where(alone, -1 - np.arange(p), key)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank_of = np.empty_like(order)
    rank_of[order] = np.arange(len(order))
    gid = rank_of[inverse]
    members = np.argsort(gid, kind="stable")
    bounds = np.searchsorted(gid[members], np.arange(len(order) + 1))
    return [members[bounds[i]:bounds[i + 1]].astype(np.int32) for i in range(len(order))]


def _group_of(groups, rank: int) -> int:
    return next(i for i, g in enumerate(groups) if rank in g)


def _streams(groups, roots, kind, trees, shares, rate) -> Traffic:
    trees = np.broadcast_to(np.asarray(trees), (len(groups),))
    src, dst, share, streams = stream_traffic_parts(
        groups, roots, np.full(len(groups), kind), trees, shares, rate)
    return Traffic(src, dst, share, aggregation=streams)


def _ring_steps(reps: np.ndarray, root_group: int) -> tuple:
    """``(patterns, order, label parts)`` of a ring allreduce among the
    representatives (``root_group < 0``), or of a reduce-scatter and a
    gather at ``reps[root_group]``: each step moves ``n/g`` a flow."""
    g = len(reps)
    share = np.full(g, 1.0 / g)
    ring = Traffic(reps, np.roll(reps, -1), share)
    rs = Step(ring, Reduction(ring.dst, share, np.full(g, 2, np.int32)), "ring-rs")
    if root_group < 0:
        return ((rs, Step(ring, Reduction.none(), "ring-ag")), np.repeat([0, 1], g - 1),
                (("ring-rs", g - 1), ("ring-ag", g - 1)))
    others = np.delete(reps, root_group)
    gather = Step(Traffic(others, np.full(g - 1, reps[root_group], np.int32),
                          np.full(g - 1, 1.0 / g)), Reduction.none(), "gather")
    return ((rs, gather), np.repeat([0, 1], [g - 1, 1]), (("ring-rs", g - 1), ("gather", 1)))


def _convert_trees(raw) -> int:
    value = int(raw.strip()) if isinstance(raw, str) else raw
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or not 1 <= value <= MAX_TREES:
        raise ValueError(raw)
    return int(value)


def _convert_tiers(raw):
    if isinstance(raw, str) and raw.strip().lower() == "all":
        return "all"
    value = int(raw.strip()) if isinstance(raw, str) else raw
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(raw)
    return int(value)


def _convert_rate(raw) -> float:
    if isinstance(raw, str) and raw.strip().lower() in ("inf", "none"):
        return math.inf
    if isinstance(raw, float) and math.isinf(raw) and raw > 0:
        return math.inf
    if not isinstance(raw, str):   # a rate carries its unit (100Gb/s), never a bare number
        raise TypeError(raw)
    try:
        return parse_rate(raw, "rate")
    except ConfigError:
        raise ValueError(raw) from None


SPEC = register(AlgorithmSpec(
    NAME, build,
    (Param("collective", str, "allreduce", ("allreduce", "reduce"),
           "allreduce (up, then multicast down) or reduce (up, then down to the root)"),
     Param("root", int, 0, None, "the rank a reduce delivers to"),
     Param("trees", int, 1, None, f"aggregation trees (1..{MAX_TREES}), each carrying n/trees "
           "over its own spines/cores", convert=_convert_trees),
     Param("tiers", str, "all", None, "all, or T: only switch tiers 1..T aggregate (1: the "
           "switches hosts attach to); the groups' partial sums meet in a ring",
           convert=_convert_tiers),
     Param("rate", float, math.inf, None, "a switch's reduction rate with its unit "
           "(e.g. 1.6Tb/s; inf: line rate), shared by the streams it combines",
           convert=_convert_rate)),
    "In-network aggregation (switch-based reduction, SHARP-style): switches of an "
    "aggregation tree reduce, the result is multicast down; one stream per tree at the "
    "max-min share of its tightest link; trees, leaf-spine and fat trees",
    families=FAMILIES, barrier_only=True, unverifiable=UNVERIFIABLE,
))


def _build_reduce(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    return build(p, topology, blocks, collective="reduce", **options)


#: the same algorithm as a reduce (``--collective reduce -a ina``)
REDUCE_SPEC = register(dataclasses.replace(
    SPEC, build=_build_reduce, collective="reduce",
    params=tuple(prm for prm in SPEC.params if prm.name != "collective"),
    doc="In-network aggregation (switch-based reduction, SHARP-style): switches of an "
        "aggregation tree reduce, the root gets the result; trees, leaf-spine and fat trees"))
