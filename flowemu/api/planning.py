"""The public :func:`plan`: GenTree's plan per switch-local sub-tree and size
(genmodel-gentree.txt §4.2, Table 6), with its arguments checked, as a table
(:func:`plan_table`, and :func:`table6` in the paper's form); the planner itself
is :mod:`flowemu.algorithms.gentree.planner`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..algorithms.gentree.planner import Plan, make_plan
from ..algorithms.gentree.treeview import TreeView, switches_bottom_up, tree_view
from ..core import checks
from ..core.errors import ConfigError, show
from ..whatif.faults import check_connected
from .run import build_topology

__all__ = ["PLAN_COLUMNS", "plan", "plan_table", "table6"]


def plan(topology, sizes="40MB,128MB,400MB", *, network=None, ranks=None, rearrange="auto",
         flat="auto", **network_params) -> pd.DataFrame:
    """GenTree's plan per switch-local sub-tree and size, with the GenModel
    cost of every candidate considered (the paper's Table 6, long form;
    :func:`table6` pivots it).

    Parameters
    ----------
    topology : str or Topology
        A tree (every preset), leaf-spine or fat tree.
    sizes : as for :func:`flowemu.simulate`
        Vector sizes in bytes.
    network : Network, optional
        Or its fields as keywords (``alpha="6.58ms"``, ``gamma=``, ...).
    ranks : int, optional
        Ranks (default: every host; fewer keep the first hosts).
    rearrange : {"auto", "no"}
        ``no`` plans without data rearrangement (the paper's GenTree*).
    flat : {"auto", "no"}
        ``auto`` also prices a flat cps, ring and rhd over every rank (rows
        ``flat cps`` ... of the root, their cost the whole allreduce) and takes
        one when it is cheaper than the tree plan; ``no``: the tree plan only.

    Returns
    -------
    pandas.DataFrame
        :data:`PLAN_COLUMNS`: per size, switch class and candidate its
        GenModel cost, ``chosen``, ``rearranged``, the class's finish time
        and the whole plan's GenModel time.
    """
    net = checks.network(network, network_params, "plan",
                         ("sizes", "network", "ranks", "rearrange", "flat"))
    n = checks.sizes(sizes)
    for name, value in (("rearrange", rearrange), ("flat", flat)):
        if value not in ("auto", "no"):
            raise ConfigError(f"{name}: {show(value)} is not allowed; expected auto or no")
    topo = build_topology(topology)
    p = checks.ranks(ranks, topo)
    # a faulted tree (apply_faults): every rank must still reach the others, as
    # simulate's gentree checks (the planner would price a cut-off host at 1/0)
    check_connected(topo, np.arange(p))
    view = tree_view(topo, net, p)
    return plan_table([make_plan(topo, net, float(S), p, rearrange == "auto", view=view,
                                 flat=flat == "auto") for S in n])


def plan_table(plans: list[Plan]) -> pd.DataFrame:
    """One row per switch class, size and candidate: the switches it covers,
    children and servers, the candidate's GenModel cost, whether it was
    chosen and whether children's data was rearranged (Table 6, long form)."""
    rows = []
    for pl in plans:
        view = pl.view
        groups: dict = {}
        for v in switches_bottom_up(view):
            groups.setdefault((view.tier[v], view.signature[v]), []).append(v)
        groups = sorted(((k, sorted(v)) for k, v in groups.items()),
                        key=lambda kv: (-int(view.depth[kv[1][0]]), kv[1][0]))
        for (tier, sig), members in groups:
            cp = pl.planner.plans[sig]
            for kind, cost in cp.candidates.items():
                chosen = (kind == f"flat {pl.flat[0]}") if pl.flat is not None \
                    else kind == cp.kind
                rows.append({
                    "topology": view.topology.spec, "size_bytes": int(pl.size),
                    "switch": _members_text(view, members), "tier": tier,
                    "switches": len(members), "children": len(view.children[members[0]]),
                    "servers": view.servers(members[0]), "candidate": kind, "cost_s": cost,
                    "chosen": chosen,
                    "rearranged": len(cp.rearranged) > 0 and not kind.startswith("flat"),
                    "rearrange_s": 0.0 if kind.startswith("flat") else cp.rearrange_cost,
                    "finish_s": cost if kind.startswith("flat") else cp.finish,
                    "plan_time_s": pl.time})
    return pd.DataFrame(rows, columns=PLAN_COLUMNS)


PLAN_COLUMNS = ["topology", "size_bytes", "switch", "tier", "switches", "children", "servers",
                "candidate", "cost_s", "chosen", "rearranged", "rearrange_s", "finish_s",
                "plan_time_s"]


def _members_text(view: TreeView, members: list[int]) -> str:
    names = [view.label[v] for v in members]
    if len(names) == 1:
        return names[0]
    head, tail = names[0].rsplit(" ", 1), names[-1].rsplit(" ", 1)
    if len(head) == 2 and head[0] == tail[0]:
        return f"{head[0]} {head[1]}-{tail[1]}"
    return ", ".join(names[:3]) + (" ..." if len(names) > 3 else "")


def table6(df: pd.DataFrame) -> pd.DataFrame:
    """The chosen plan per switch (rows) and size (columns), `` +r`` where
    the children's data was rearranged: the form of the paper's Table 6."""
    ch = df[df["chosen"]].copy()
    ch["plan"] = ch["candidate"] + np.where(ch["rearranged"] & ~ch["candidate"].str.startswith(
        "flat"), " +r", "")
    order = list(dict.fromkeys(df["switch"]))
    out = ch.pivot_table(index="switch", columns="size_bytes", values="plan",
                         aggfunc="first").reindex(order)
    # a flat plan over every rank leaves the lower switches' sub-plans unused
    out = out.reindex(columns=sorted(df["size_bytes"].unique())).fillna("-")
    out.columns = [int(c) for c in out.columns]     # the sizes in bytes
    out.index.name = "switch"
    return out
