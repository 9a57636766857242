"""Where a run's bytes go: the share of them that travels between groups of
the topology (:meth:`flowemu.topology.Topology.endpoint_groups`: Dragonfly
groups, fat-tree pods, leaf-spine leaves, HammingMesh boards), the
``cross_group_bytes`` of a result row."""

from __future__ import annotations

import numpy as np

from ..algorithms.base import Schedule
from ..topology import Topology

__all__ = ["cross_group_share"]


def cross_group_share(sched: Schedule, topology: Topology, mapping) -> float:
    """Bytes, per byte of the size, that the schedule's flows carry between
    ranks in different groups of ``topology``
    (:meth:`~flowemu.topology.Topology.endpoint_groups`: Dragonfly groups,
    fat-tree pods, leaf-spine leaves, HammingMesh boards); NaN for a family
    without groups."""
    found = topology.endpoint_groups()
    if found is None:
        return float("nan")
    group = found[0] if mapping is None else found[0][np.asarray(mapping)]
    total = 0.0
    for pattern, count in zip(sched.steps.patterns, sched.steps.counts().tolist()):
        tr = pattern.traffic
        total += count * float(tr.share[group[tr.src] != group[tr.dst]].sum())
    return total
