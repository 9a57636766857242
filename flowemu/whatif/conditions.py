"""What-if studies: one run's failed and degraded links, slow ranks and
background traffic, checked in one place for every door (``simulate``,
``flowemu run``, sweeps), and the slowdown against the healthy network.

A what-if never changes an algorithm: failures and degradation change the
topology (:func:`flowemu.whatif.faults.apply_faults`), slow ranks and background
traffic change the load the solver sees (:mod:`flowemu.whatif.stragglers`,
:mod:`flowemu.whatif.background`). Results keep each in its own column
(:data:`WHATIF_COLUMNS`); a row whose what-if columns are all empty is the
healthy network's, and :func:`slowdown` pairs every other row with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import ConfigError, show
from .background import parse_background
from .faults import (DEGRADE, FAIL, POLICIES, FaultyTopology, apply_faults, check_connected,
                     split_selectors)
from .stragglers import parse_slow

__all__ = ["CONDITIONS", "HEALTHY", "WHATIF_COLUMNS", "WhatIf", "check_whatif", "slowdown"]

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
#: the columns that identify a scenario apart from its what-ifs (matched by
#: :func:`slowdown` where present)
_SCENARIO = ("sweep", "group", "topology", "nodes", "ranks", "algorithm", "model", "options",
             "size_bytes", "ecmp", "seed", "placement", "bandwidth_Bps", "link_latency_s",
             "hop_latency_s", "alpha_s", "gamma_s_per_B", "delta_s_per_B", "incast_threshold",
             "incast_slope_s_per_B")


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


@dataclass(frozen=True)
class Applied:
    """A what-if applied to one run: the topology with its faults, the
    parsed slow ranks and background (None for none) and the row columns."""

    topology: object
    slow: object
    background: object
    columns: dict


def apply(whatif: WhatIf, topology, p: int, network, mapping) -> Applied:
    """Apply ``whatif`` to a run of ``p`` ranks on ``topology`` (ranks on
    ``mapping``'s endpoints): faults on the topology (a rank cut off from the
    others is a ConfigError naming it), slow ranks parsed for ``p``, the
    background for the topology and network."""
    topo = apply_faults(topology, whatif.fail or None, whatif.degrade or None)
    if mapping is not None or isinstance(topo, FaultyTopology):
        ends = np.arange(p) if mapping is None else np.asarray(mapping)
        check_connected(topo, ends)
    slow = parse_slow(whatif.slow, p) if whatif.slow else None
    bg = parse_background(whatif.background, topo, network) if whatif.background else None
    faulty = isinstance(topo, FaultyTopology)
    columns = {"fail": topo.fail if faulty else "", "degrade": topo.degrade if faulty else "",
               "fail_policy": whatif.fail_policy, "slow": slow.spec if slow else "",
               "background": bg.spec if bg else "",
               "failed_links": int(np.ceil(topo.failed.sum() / 2)) if faulty else 0}
    return Applied(topo, slow, bg, columns)


def healthy_rows(df: pd.DataFrame) -> pd.Series:
    """bool per row: no failure, degradation, slow rank or background (rows
    without the what-if columns, written before they existed, are healthy)."""
    mask = pd.Series(True, index=df.index)
    for col in CONDITIONS:
        if col in df.columns:
            mask &= df[col].fillna("").astype(str) == ""
    return mask


def query_with_twins(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """The rows of ``df`` matching ``where`` (:func:`flowemu.results.query`)
    plus the healthy rows of the scenarios they belong to, so that a filter
    on a what-if (``fail == 'random:4:0'``) keeps the baseline its slowdown
    is measured against."""
    from ..study.results import query
    picked = query(df, where)
    keys = [c for c in _SCENARIO if c in df.columns and c != "options"]
    healthy = df[healthy_rows(df) & ~df.index.isin(picked.index)]
    if healthy.empty or picked.empty:
        return picked
    wanted = picked[keys].drop_duplicates()
    twins = healthy.reset_index().merge(wanted, on=keys, how="inner").set_index("index")
    twins.index.name = df.index.name
    return pd.concat([picked, twins[df.columns]]).sort_index()


def slowdown(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``healthy_time_s`` (the time of the same scenario — topology,
    ranks, algorithm, model, size, routing, placement, network — on the
    healthy network) and ``slowdown`` (``time_s / healthy_time_s``; 1 on
    healthy rows, NaN where the dataset has no healthy twin).

    The algorithm is matched by the sweep's ``algorithm_spec`` where the
    rows have it, else by ``options``; a row of an ``auto`` option whose
    what-if made another variant the fastest (``options`` differ) is then
    paired with the one healthy row of its algorithm, when there is one."""
    if not {"time_s", "size_bytes"} <= set(df.columns):
        raise ConfigError("slowdown: expected result rows (with time_s and size_bytes)")
    loose = [c for c in _SCENARIO if c in df.columns and c != "options"]
    exact = loose + (["algorithm_spec"] if "algorithm_spec" in df.columns
                     else ["options"] if "options" in df.columns else [])
    healthy = df[healthy_rows(df)]
    out = df.drop(columns=[c for c in ("healthy_time_s", "slowdown") if c in df.columns])
    out = out.merge(_twins(healthy, exact), on=exact, how="left", validate="many_to_one")
    if exact != loose:
        unique = healthy.groupby(loose, dropna=False, sort=False)["time_s"].transform("size") == 1
        fallback = _twins(healthy[unique], loose).rename(
            columns={"healthy_time_s": "_fallback"})
        out = out.merge(fallback, on=loose, how="left", validate="many_to_one")
        out["healthy_time_s"] = out["healthy_time_s"].fillna(out.pop("_fallback"))
    with np.errstate(divide="ignore", invalid="ignore"):
        out["slowdown"] = out["time_s"] / out["healthy_time_s"]
    out.index = df.index
    return out


def _twins(healthy: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The healthy time of each scenario ``keys`` tell apart."""
    return healthy.groupby(keys, dropna=False, sort=False)["time_s"].min() \
        .rename("healthy_time_s").reset_index()
