"""The public :func:`plan`: GenTree's plan per switch-local sub-tree and size
(genmodel-gentree.txt §4.2, Table 6), with its arguments checked; the planner
itself is :mod:`flowemu.algorithms.gentree.planner`."""

from __future__ import annotations

import pandas as pd

from ..algorithms.gentree.planner import make_plan, plan_table, tree_view
from ..core import checks
from ..core.errors import ConfigError, show
from .simulation import build_topology

__all__ = ["plan"]


def plan(topology, sizes="40MB,128MB,400MB", *, network=None, ranks=None, rearrange="auto",
         flat="auto", **network_params) -> pd.DataFrame:
    """GenTree's plan per switch-local sub-tree and size, with the GenModel
    cost of every candidate considered (the paper's Table 6, long form;
    :func:`flowemu.algorithms.gentree.planner.table6` pivots it).

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
        :data:`flowemu.algorithms.gentree.planner.PLAN_COLUMNS`: per size, switch class and candidate its
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
    view = tree_view(topo, net, p)
    return plan_table([make_plan(topo, net, float(S), p, rearrange == "auto", view=view,
                                 flat=flat == "auto") for S in n])
