"""``gentree``: the allreduce GenTree generates for a tree (GenModel paper:
Xiong et al., "Revisiting the Time Cost Model of AllReduce", §4.2, Algorithms
1 and 2).

The plan (:mod:`flowemu.algorithms.gentree.planner`) decides, per switch-local sub-tree, the
plan type (Co-located PS, an ``m×n`` Hierarchical Co-located PS, ring, RHD,
or Asymmetric Co-located PS) and whether a child's data is rearranged first.
This module lays the sub-plans out as one bulk-synchronous schedule:

* reduce-scatter, bottom up: a switch's steps start when its slowest child's
  are done (all switches of one class start together); a rearrangement move
  (COPY) comes just before its parent's steps;
* allgather: the mirror — every reduce-scatter step backwards, its flows
  reversed as COPY, in reverse order (§4.2: "we can reverse the
  ReduceScatter plan to obtain the AllGather plan directly").

Steps are labelled ``rs<t>`` and ``ag<t>`` (``ag<t>`` mirrors ``rs<t>``).
The plan depends on the vector size: ``flowemu.simulate`` asks the planner
for each size (``at=auto``) with the run's network and times each distinct
plan; a builder called without a network (the verifier, ``congestion``)
plans for ``at`` (default 256 MiB) on the default network.
"""

from __future__ import annotations

import numpy as np

from ...core.errors import ConfigError
from ...core.network import Network
from .._blocks import COPY, REDUCE, check_ranks, equal_block_share
from ..base import (
    DEFAULT_AT,
    AlgorithmSpec,
    Param,
    Reduction,
    Schedule,
    Step,
    Traffic,
    convert_size_or_auto,
)
from ..registry import register
from .planner import make_plan, switches_bottom_up, tree_view

__all__ = ["build", "plans_for_sizes", "schedule_from_plan"]

NAME = "gentree"


def schedule_from_plan(plan, blocks: bool = False) -> Schedule:
    """The bulk-synchronous schedule of a :class:`flowemu.algorithms.gentree.planner.Plan`."""
    view, planner = plan.view, plan.planner
    p = view.num_hosts
    # start and end step of every class (equal switches start together)
    span: dict = {}
    order = switches_bottom_up(view)
    for v in order:
        sig = view.signature[v]
        if sig in span:
            continue
        start = max([span[view.signature[c]][1] for c in view.children[v]
                     if not view.is_host(c)] or [0])
        span[sig] = (start, start + len(planner.plans[sig].steps))
    T = span[view.signature[view.root]][1]
    bases: dict = {}
    for v in order:
        bases.setdefault(view.signature[v], []).append(int(view.host_lo[v]))
    if plan.flat is not None:      # a flat baseline over every rank beat the tree plan
        flat_steps = plan.flat[2]
        T = len(flat_steps)
        per_t = [[(st, np.zeros((1, 1), np.int64))] if st.num_flows else []
                 for st in flat_steps]
    else:
        per_t = [[] for _ in range(T)]
        for sig, base in bases.items():
            start, _ = span[sig]
            base = np.asarray(base, np.int64)[:, None]
            for j, st in enumerate(planner.plans[sig].steps):
                if st.num_flows:
                    per_t[start + j].append((st, base))
    rs, ag = [], []
    for t in range(T):
        parts = per_t[t]
        if not parts:
            continue
        src = np.concatenate([(b + st.src[None, :]).reshape(-1) for st, b in parts])
        dst = np.concatenate([(b + st.dst[None, :]).reshape(-1) for st, b in parts])
        share = np.concatenate([np.tile(st.share, len(b)) for st, b in parts])
        op = np.concatenate([np.full(st.num_flows * len(b), REDUCE if st.reduce else COPY,
                                     np.int8) for st, b in parts])
        rn = np.concatenate([(b + st.red_node[None, :]).reshape(-1) for st, b in parts])
        rsh = np.concatenate([np.tile(st.red_share, len(b)) for st, b in parts])
        rf = np.concatenate([np.tile(st.red_fanin, len(b)) for st, b in parts])
        red = Reduction(rn.astype(np.int32), rsh, rf.astype(np.int32))
        if blocks:
            lists = [bl for st, b in parts for _ in range(len(b)) for bl in st.blocks]
            ptr = np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int64)
            idx = np.concatenate(lists).astype(np.int32)
            fwd = Traffic(src, dst, share, None, ptr, idx, op)
            back = Traffic(dst, src, share, None, ptr, idx, np.full(len(src), COPY, np.int8))
        else:
            fwd = Traffic(src.astype(np.int32), dst.astype(np.int32), share)
            back = Traffic(dst.astype(np.int32), src.astype(np.int32), share)
        rs.append(Step(fwd, red, f"rs{len(rs)}"))
        ag.append(Step(back, Reduction.none(), f"ag{len(ag)}"))
    steps = tuple(rs + ag[::-1])
    return Schedule(NAME, plan.summary(), p, steps, p if blocks else None,
                    equal_block_share(p) if blocks else None,
                    {"p_eff": p, "plan_time_s": plan.time, "size": plan.size})


def build(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    """GenTree's allreduce on the tree ``topology`` for ``p`` ranks, planned
    for ``at`` bytes on the default network (:class:`flowemu.core.network.Network`);
    ``flowemu.simulate`` plans per size with the run's network instead
    (:func:`plans_for_sizes`).

    Parameters
    ----------
    p : int
        Ranks (the first ``p`` hosts).
    topology : Topology
        ``tree:``, ``leafspine:`` or ``fattree:`` (others are refused).
    blocks : bool
        Attach block content (``p`` blocks) for the verifier.
    rearrange : {"auto", "no"}
        ``no``: no data rearrangement (the paper's GenTree*).
    flat : {"auto", "no"}
        ``auto``: the plan is a flat cps, ring or rhd over every rank when
        GenModel prices it below the tree plan; ``no``: the tree plan only.
    at : "auto" or a size
        The vector size the plan is chosen for (``auto``: 256 MiB here).
    """
    opts = SPEC.parse_options(options)
    p = check_ranks(NAME, p)
    if topology is None:
        raise ConfigError("algorithm gentree: needs the topology (a tree, leaf-spine or fat "
                          "tree) to plan on")
    at = DEFAULT_AT if opts["at"] == "auto" else opts["at"]
    plan = make_plan(topology, Network(), float(at), p, opts["rearrange"] == "auto", blocks,
                     flat=opts["flat"] == "auto")
    return schedule_from_plan(plan, blocks)


def plans_for_sizes(p, topology, network, sizes, options, blocks=False):
    """``[(schedule, size indices)]``: GenTree's plan for every size of the
    run (or the ``at`` size for all), one schedule per distinct plan."""
    opts = SPEC.parse_options(options)
    rearrange, flat = opts["rearrange"] == "auto", opts["flat"] == "auto"
    view = tree_view(topology, network, p)
    sizes = np.asarray(sizes, dtype=np.float64)
    if opts["at"] != "auto":
        plan = make_plan(topology, network, float(opts["at"]), p, rearrange, blocks, view,
                         flat)
        return [(schedule_from_plan(plan, blocks), np.arange(len(sizes)))]
    groups: dict = {}
    for i, S in enumerate(sizes):
        plan = make_plan(topology, network, float(S), p, rearrange, blocks, view, flat)
        key = plan.key()
        if key not in groups:
            groups[key] = (plan, [])
        groups[key][1].append(i)
    return [(schedule_from_plan(plan, blocks), np.asarray(idx)) for plan, idx in
            groups.values()]


SPEC = register(AlgorithmSpec(
    NAME, build,
    (Param("rearrange", str, "auto", ("auto", "no"),
           "data rearrangement where GenModel says it pays (no: the paper's GenTree*)"),
     Param("flat", str, "auto", ("auto", "no"),
           "auto: a flat cps/ring/rhd over every rank where GenModel prices it below the "
           "tree plan (flowemu's addition to §4.2); no: always the tree plan"),
     Param("at", str, "auto", None, "auto (plan for every size) or the size to plan for, "
           "e.g. 400MB", convert=convert_size_or_auto)),
    "GenTree (GenModel paper §4.2): per switch-local sub-tree the cheapest of cps, "
    "hcps factorisations, ring, rhd (equal children) or acps, by GenModel, or a flat "
    "cps/ring/rhd over every rank where GenModel prices it lower; trees, leaf-spine "
    "and fat trees",
    sized=plans_for_sizes,
    families=("tree", "leafspine", "fattree"),
))
