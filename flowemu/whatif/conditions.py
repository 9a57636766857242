"""What-if studies: one run's failed and degraded links, slow ranks and
background traffic, checked in one place for every door (``simulate``,
``flowemu run``, sweeps), and the slowdown against the healthy network.

A what-if never changes an algorithm: failures and degradation change the
topology (:func:`flowemu.whatif.faults.apply_faults`), slow ranks and background
traffic change the load the solver sees (:mod:`flowemu.whatif.stragglers`,
:mod:`flowemu.whatif.background`). Results keep each in its own column
(:data:`WHATIF_COLUMNS`); a row whose what-if columns are all empty is the
healthy network's, and :func:`flowemu.study.results.slowdown` pairs every
other row with it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..core.errors import ConfigError, show
from .background import parse_background
from .faults import (
    DEGRADE,
    FAIL,
    POLICIES,
    FaultyTopology,
    apply_faults,
    check_connected,
    split_selectors,
)
from .stragglers import parse_slow

__all__ = ["CONDITIONS", "HEALTHY", "WHATIF_COLUMNS", "WhatIf", "check_whatif"]

#: the what-if columns of every result row: the selectors and specs in
#: canonical form ("" for none), the policy, the cables that failed and the
#: background's throughput during the run (NaN without a background)
WHATIF_COLUMNS = ["fail", "degrade", "fail_policy", "slow", "background", "failed_links",
                  "background_Bps"]
#: the what-if columns of the healthy network (and of rows written before
#: the columns existed)
HEALTHY = {"fail": "", "degrade": "", "fail_policy": "strict", "slow": "", "background": "",
           "failed_links": 0, "background_Bps": np.nan}
#: the what-if columns that make a row not the healthy network's
CONDITIONS = ("fail", "degrade", "slow", "background")


@dataclass(frozen=True)
class WhatIf:
    """The what-ifs of one run (all empty: the healthy network).

    ``fail``/``degrade`` are selectors joined by ``;``
    (:mod:`flowemu.whatif.faults`), ``slow`` a slow-rank spec
    (:mod:`flowemu.whatif.stragglers`), ``background`` a generator spec or a
    traffic file (:mod:`flowemu.whatif.background`); ``fail_policy`` is
    ``"strict"`` or ``"reroute"``.
    """

    fail: str = ""
    degrade: str = ""
    fail_policy: str = "strict"
    slow: str = ""
    background: str = ""

    @property
    def healthy(self) -> bool:
        return not (self.fail or self.degrade or self.slow or self.background)


def unfaulted(topology, whatif: WhatIf):
    """``(topology, whatif)`` with a faulted topology (a
    :class:`~flowemu.whatif.faults.FaultyTopology`, e.g. from
    :func:`~flowemu.whatif.faults.apply_faults`) given back as its healthy
    base and its faults as ``fail``/``degrade``, so that a run records them
    and applies its failure policy as it does to ``fail=``. A faulted
    topology and ``fail``/``degrade`` together are refused: the faults are
    given once."""
    if not isinstance(topology, FaultyTopology):
        return topology, whatif
    if whatif.fail or whatif.degrade:
        raise ConfigError(f"topology: {topology.spec} is faulted already (fail "
                          f"{topology.fail!r}, degrade {topology.degrade!r}); give the faults "
                          "once: the healthy topology with fail=/degrade=, or the faulted one "
                          "alone")
    return topology.base, replace(whatif, fail=topology.fail, degrade=topology.degrade)


def check_whatif(fail=None, degrade=None, fail_policy="strict", slow=None,
                 background=None) -> WhatIf:
    """The checked what-ifs (cheap, before any topology is built): each a
    ConfigError naming the option when it has the wrong type or an unknown
    policy; the selectors and specs themselves are checked against the
    topology and ranks when the run is prepared."""
    if not isinstance(fail_policy, str) or fail_policy.strip() not in POLICIES:
        raise ConfigError(f"fail_policy: {show(fail_policy)} is not allowed; expected "
                          f"{' or '.join(POLICIES)}")
    texts = {}
    for name, value in (("slow", slow), ("background", background)):
        if value is None:
            texts[name] = ""
        elif isinstance(value, (str, Path)):
            texts[name] = str(value).strip()
        else:
            raise ConfigError(f"{name}: {show(value)} is not allowed; expected a string"
                              + (" (RANKS=FACTOR[:compute|:network]; ...)" if name == "slow"
                                 else " (perm:LOAD[:SEED], alltoall:LOAD, hotspot:LOAD"
                                      "[:TARGET] or a traffic file)"))
    return WhatIf(";".join(split_selectors(fail, FAIL)), ";".join(split_selectors(degrade, DEGRADE)),
                  fail_policy.strip(), texts["slow"], texts["background"])


def check_traffic_policy(whatif: WhatIf) -> None:
    """Refuse a failure policy other than ``"strict"`` for a user's traffic:
    the policy says whether a topology-bound algorithm's schedule may be
    rerouted around failed links, and traffic is always routed over the
    surviving links (the command line refuses ``--fail-policy`` with
    ``--traffic`` alike)."""
    if whatif.fail_policy != "strict":
        raise ConfigError(f"fail_policy: {whatif.fail_policy!r} applies to an algorithm's "
                          "schedule (whether a topology-bound one such as ring may be "
                          "rerouted around failed links); traffic is always routed over the "
                          "surviving links: leave fail_policy out")


@dataclass(frozen=True)
class Applied:
    """A what-if applied to one run: the topology with its faults, the
    parsed slow ranks and background (None for none) and the row columns."""

    topology: object
    slow: object
    background: object
    columns: dict


def apply(whatif: WhatIf, topology, p: int, network, mapping, used=None) -> Applied:
    """Apply ``whatif`` to a run of ``p`` ranks on ``topology`` (ranks on
    ``mapping``'s endpoints): faults on the topology (a rank cut off from the
    others is a ConfigError naming it; with ``used``, the ranks that send or
    receive, only those count: a user's traffic need not use every rank
    below its highest), slow ranks parsed for ``p``, the background for the
    topology and network."""
    topo = apply_faults(topology, whatif.fail or None, whatif.degrade or None)
    if mapping is not None or isinstance(topo, FaultyTopology):
        ends = np.arange(p) if mapping is None else np.asarray(mapping)
        if used is not None:
            used = np.asarray(used, dtype=np.int64)
            ends = ends[used]
        check_connected(topo, ends, used)
    slow = parse_slow(whatif.slow, p) if whatif.slow else None
    bg = parse_background(whatif.background, topo, network) if whatif.background else None
    faulty = isinstance(topo, FaultyTopology)
    columns = {"fail": topo.fail if faulty else "", "degrade": topo.degrade if faulty else "",
               "fail_policy": whatif.fail_policy, "slow": slow.spec if slow else "",
               "background": bg.spec if bg else "",
               "failed_links": int(np.ceil(topo.failed.sum() / 2)) if faulty else 0}
    return Applied(topo, slow, bg, columns)
