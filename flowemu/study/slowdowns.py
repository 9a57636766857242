"""The slowdown of what-if rows against the healthy network:
:func:`slowdown` pairs each row with its healthy twin (same scenario, no
failure, degradation, slow rank or background), :func:`compare_whatif`
aggregates the Monte-Carlo runs of each condition."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.units import format_rate, format_size, format_time
from ..whatif.conditions import CONDITIONS
from .rows import WHATIF_SCENARIO, query, result_frame, scenario_columns, with_labels, with_whatif

#: a random selector's seed (``random:K:SEED`` -> ``random:K``): Monte-Carlo
#: runs that differ only in it are one condition
_RANDOM_SEED = re.compile(r"(?:^|(?<=;))(random:\d+):\d+(?=$|[;=])")

#: the columns of :func:`compare_whatif` after the scenario columns
WHATIF_RESULT_COLUMNS = ["size_bytes", "algorithm", "condition", "fail", "degrade",
                         "fail_policy", "slow", "background", "failed_links", "seeds",
                         "healthy_time_s", "time_s", "time_min_s", "time_max_s", "slowdown",
                         "slowdown_min", "slowdown_max"]


#: the columns that identify a scenario apart from its what-ifs (matched by
#: :func:`slowdown` where present). Not a sweep's ``group``: a group is a
#: label, and the healthy twin may be in another group of the sweep (a
#: group without what-ifs, as the docs advise). The collective and a job's
#: index are: ring's allgather or job #1 is not the healthy twin of ring's
#: allreduce or of job #0
_TWIN_KEYS = ("sweep", "topology", "nodes", "ranks", "collective", "algorithm", "model",
              "sync", "job", "job_set", "options",
              "size_bytes", "ecmp", "seed", "placement", "bandwidth_Bps", "link_latency_s",
              "hop_latency_s", "alpha_s", "gamma_s_per_B", "delta_s_per_B", "incast_threshold",
              "incast_slope_s_per_B")


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
    return with_twins(df, query(df, where))


def with_twins(df: pd.DataFrame, picked: pd.DataFrame) -> pd.DataFrame:
    """``picked`` (rows of ``df``) plus the healthy rows of ``df`` of the
    scenarios they belong to (:func:`slowdown`'s twins, from any group)."""
    keys = [c for c in _TWIN_KEYS if c in df.columns and c != "options"]
    healthy = df[healthy_rows(df) & ~df.index.isin(picked.index)]
    if healthy.empty or picked.empty:
        return picked
    wanted = picked[keys].drop_duplicates()
    twins = healthy.reset_index().merge(wanted, on=keys, how="inner").set_index("index")
    twins.index.name = df.index.name
    return pd.concat([picked, twins[df.columns]]).sort_index()


def slowdown(df) -> pd.DataFrame:
    """``df`` with ``healthy_time_s`` (the time of the same scenario — topology,
    ranks, collective, algorithm, model, sync, size, routing, placement,
    network, job and its set — on the healthy network: the twin in the row's
    own group where the group holds one, else the fastest in any group) and
    ``slowdown`` (``time_s / healthy_time_s``; 1 on healthy rows, NaN where
    the dataset has no healthy twin).

    The algorithm is matched by the sweep's ``algorithm_spec`` where the
    rows have it (an ``auto`` option is one spec whatever variant it
    chose), else by ``options``; there, a row of an ``auto`` option whose
    what-if made another variant the fastest (``options`` differ) is then
    paired with the one healthy row of its algorithm, when there is one
    (rows without a spec cannot tell it from a variant given)."""
    df = result_frame(df, "slowdown")
    if not {"time_s", "size_bytes"} <= set(df.columns):
        raise ConfigError("slowdown: expected result rows (with time_s and size_bytes)")
    loose = [c for c in _TWIN_KEYS if c in df.columns and c != "options"]
    work = df.drop(columns=[c for c in ("healthy_time_s", "slowdown") if c in df.columns])
    # the algorithm as the rows name it: a sweep's spec, else (rows of a run
    # beside a sweep's, or no spec at all) the options
    spec = work["algorithm_spec"] if "algorithm_spec" in work.columns else \
        pd.Series(np.nan, index=work.index, dtype=object)
    options = work["options"].astype(str) if "options" in work.columns else ""
    work["_twin_alg"] = spec.where(spec.notna(), "options " + options)
    exact = loose + ["_twin_alg"]
    healthy = work[healthy_rows(work)]
    out = _paired(work, healthy, exact)
    # (a sweep's spec tells an auto option from the variants given: an auto row
    # is matched by it already, and variant=latency must not fall back on
    # variant=bandwidth's healthy row; only a row without a spec may)
    unique = healthy.groupby(loose, dropna=False, sort=False)["time_s"].transform("size") == 1
    fallback = _twins(healthy[unique], loose).rename(columns={"healthy_time_s": "_fallback"})
    out = out.merge(fallback, on=loose, how="left", validate="many_to_one")
    out["healthy_time_s"] = out["healthy_time_s"].fillna(
        out.pop("_fallback").where(spec.isna().to_numpy()))
    out = out.drop(columns="_twin_alg")
    with np.errstate(divide="ignore", invalid="ignore"):
        out["slowdown"] = out["time_s"] / out["healthy_time_s"]
    out.index = df.index
    return out


def _paired(work: pd.DataFrame, healthy: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``work`` with ``healthy_time_s``: its twin's time, from its own group
    where the group holds one (a healthy row is then its own twin), else from
    any group (a baseline group of its own)."""
    out = work.merge(_twins(healthy, keys), on=keys, how="left", validate="many_to_one")
    if "group" in work.columns:
        own = work.merge(_twins(healthy, keys + ["group"]), on=keys + ["group"], how="left",
                         validate="many_to_one")["healthy_time_s"]
        out["healthy_time_s"] = own.where(own.notna(), out["healthy_time_s"]).to_numpy()
    return out


def _twins(healthy: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The healthy time of each scenario ``keys`` tell apart."""
    return healthy.groupby(keys, dropna=False, sort=False)["time_s"].min() \
        .rename("healthy_time_s").reset_index()


def without_seed(selectors: str) -> str:
    """``selectors`` with each random selector's seed left out:
    ``"random:16:3;node:5"`` -> ``"random:16;node:5"``,
    ``"random:4:1=0.5"`` -> ``"random:4=0.5"``."""
    return _RANDOM_SEED.sub(r"\1", selectors)


def condition_label(fail="", degrade="", slow="", background="") -> str:
    """A what-if condition in words: ``"healthy"`` when there is none, else
    its parts (``"fail random:16 · slow 3=0.5"``)."""
    parts = [f"{name} {value}" for name, value in (
        ("fail", fail), ("degrade", degrade), ("slow", slow), ("background", background))
        if value]
    return " · ".join(parts) or "healthy"


def compare_whatif(df, who: str = "compare_whatif") -> pd.DataFrame:
    """The slowdown of every what-if condition against the healthy network.

    Each row is paired with the healthy twin of its configuration
    (:func:`slowdown`: same topology, ranks, collective, algorithm and
    options, size, routing, placement, network and job, no failure,
    degradation, slow rank or background). A scenario with no what-if row (a
    group of healthy runs, kept only for its twins) has no rows of its own;
    a what-if scenario whose twins are there gets a ``healthy`` line with
    their time. Monte-Carlo runs — rows that differ only in the
    seed of their ``random:K:SEED`` selectors and have the same number of
    failed cables — are one condition: ``seeds`` runs, their mean, smallest
    and largest time and slowdown.

    Parameters
    ----------
    df : DataFrame
        Result rows (``size_bytes``, ``time_s``, the what-if columns and a
        ``label`` or ``algorithm``), holding healthy rows and what-if rows.
        Algorithms are told apart by ``label`` (a sweep's); rows without one
        by name (add a ``label`` column to compare variants of one).
    who : str
        The command named in error messages.

    Returns
    -------
    DataFrame
        One row per (scenario, size, algorithm label, condition): the
        scenario columns (:func:`scenario_columns` without the what-ifs),
        then :data:`WHATIF_RESULT_COLUMNS` — ``condition`` (words, see
        :func:`condition_label`; ``healthy`` rows have slowdown 1), ``fail``
        and ``degrade`` without random seeds, ``fail_policy`` ("" where
        nothing fails: it changes nothing there), ``failed_links`` (cables),
        ``seeds`` (runs aggregated), ``healthy_time_s``, ``time_s`` (mean),
        ``time_min_s``, ``time_max_s``, ``slowdown`` (mean of time /
        healthy time), ``slowdown_min``, ``slowdown_max``. NaN slowdowns
        where the data holds no healthy twin. Sorted by scenario, size,
        algorithm, failed links and condition (healthy first).
    """
    df = with_labels(result_frame(df, who))
    if {"condition", "seeds", "slowdown_min"} <= set(df.columns):   # (its own output)
        raise ConfigError(f"{who}: the data is a what-if comparison (its condition and seeds "
                          "columns), not result rows; compare the dataset or the rows it came "
                          "from")
    missing = [c for c in ("size_bytes", "time_s") if c not in df.columns]
    source = "label" if "label" in df.columns else "algorithm"
    if source not in df.columns:
        missing.append("label or algorithm")
    if missing:
        raise ConfigError(f"{who}: the data lacks column(s) {', '.join(missing)}")
    d = with_whatif(df)
    conds = [c for c in CONDITIONS if c in d.columns]
    healthy = healthy_rows(d)
    if not conds or healthy.all():
        raise ConfigError(f"{who}: the data has no what-if rows (fail, degrade, slow or "
                          "background); run what-ifs beside the healthy network (sweep fields "
                          "fail, failures, degrade, slow, background)")
    if not healthy.any():
        raise ConfigError(f"{who}: the data has no healthy rows (no fail, degrade, slow or "
                          "background) to measure the slowdown against; add them (sweep field "
                          "failures = [0, ...], or a group without what-ifs)")
    d = d.copy()
    # without labels (e.g. simulate frames) an algorithm is its name: an auto variant
    # resolves per size and per what-if, so its options would split one algorithm
    d["_alg"] = d[source].astype(str)
    keys = [c for c in scenario_columns(d) if c not in WHATIF_SCENARIO]
    # jobs: each its own (simulate_jobs frames; a sweep's label tells them),
    # in its set where the rows hold several
    if "job_set" in d.columns and d["job_set"].nunique() > 1:
        keys.append("job_set")
    if "job" in d.columns and d["job"].notna().any():
        keys.append("job")
    for c in WHATIF_SCENARIO:
        if c not in d.columns:
            d[c] = ""
    # the policy says what a failure may do to a schedule: where nothing fails it
    # changes nothing (and simulate writes "strict" whatever was asked)
    d["fail_policy"] = d["fail_policy"].astype(str).where(d["fail"].astype(str) != "", "")
    # a later row of the same configuration and size replaces an earlier one
    ident = keys + ["size_bytes", "_alg"] + WHATIF_SCENARIO
    d = slowdown(d.drop_duplicates(ident, keep="last"))
    if "failed_links" not in d.columns:
        d["failed_links"] = 0
    for c in ("fail", "degrade", "slow"):   # (random:K:SEED ranks too)
        d[c] = d[c].astype(str).map(without_seed)
    gk = keys + ["size_bytes", "_alg", "fail", "degrade", "fail_policy", "slow", "background",
                 "failed_links"]
    out = d.groupby(gk, dropna=False, sort=False).agg(
        seeds=("time_s", "size"), healthy_time_s=("healthy_time_s", "first"),
        time_s=("time_s", "mean"), time_min_s=("time_s", "min"), time_max_s=("time_s", "max"),
        slowdown=("slowdown", "mean"), slowdown_min=("slowdown", "min"),
        slowdown_max=("slowdown", "max")).reset_index().rename(columns={"_alg": "algorithm"})
    out["condition"] = [condition_label(*r) for r in zip(
        out["fail"], out["degrade"], out["slow"], out["background"])]
    out["failed_links"] = out["failed_links"].astype(int)
    out["_sick"] = out["condition"] != "healthy"
    out = _with_healthy_lines(out, keys + ["size_bytes", "algorithm"])
    if "job" in out.columns and out["job"].notna().all():
        out["job"] = out["job"].astype("int64")   # (a dataset's job column is float)
    # a scenario of healthy rows only (another group's baseline) says nothing
    # here: its times are the healthy_time_s of the what-if rows that use them
    out = out[out.groupby(keys, dropna=False, sort=False)["_sick"].transform("any")]
    out = out.sort_values(keys + ["size_bytes", "algorithm", "_sick", "failed_links",
                                  "condition"], kind="stable")
    return out[keys + WHATIF_RESULT_COLUMNS].reset_index(drop=True)


def _with_healthy_lines(out: pd.DataFrame, ident: list[str]) -> pd.DataFrame:
    """``out`` with a ``healthy`` line for each (scenario, size, algorithm)
    whose what-if rows found their twin in another group (a baseline group
    of its own): its time is theirs, so a block reads as one with the
    healthy rows in it (and a slowdown figure has its point at 0)."""
    sick = out[out["_sick"] & out["healthy_time_s"].notna()]
    have = out.loc[~out["_sick"], ident].drop_duplicates()
    lacking = sick.merge(have, on=ident, how="left", indicator=True)
    lacking = lacking[lacking["_merge"] == "left_only"].drop(columns="_merge")
    if lacking.empty:
        return out
    lines = lacking.groupby(ident, dropna=False, sort=False).first().reset_index()
    h = lines["healthy_time_s"]
    lines = lines.assign(fail="", degrade="", fail_policy="", slow="", background="",
                         failed_links=0, seeds=1, time_s=h, time_min_s=h, time_max_s=h,
                         slowdown=1.0, slowdown_min=1.0, slowdown_max=1.0,
                         condition="healthy", _sick=False)
    return pd.concat([out, lines[out.columns]], ignore_index=True)


def compare_whatif_table(cmp: pd.DataFrame) -> str:
    """A readable table of :func:`compare_whatif`: times with their unit,
    slowdowns to 4 digits (``min–max`` over the seeds where there are
    several); one block per group when there are several."""
    if cmp.empty:
        return "(no results)"
    show = cmp.drop(columns=["fail", "degrade", "slow", "background", "time_min_s",
                             "time_max_s"])
    if cmp.loc[cmp["fail_policy"] != "", "fail_policy"].nunique() <= 1:
        show = show.drop(columns="fail_policy")
    show["size_bytes"] = show["size_bytes"].map(format_size)
    for c in ("healthy_time_s", "time_s"):
        show[c] = show[c].map(lambda t: "-" if pd.isna(t) else format_time(t))
    span = [("" if n == 1 or pd.isna(lo) else f"{lo:.4g}–{hi:.4g}")
            for n, lo, hi in zip(cmp["seeds"], cmp["slowdown_min"], cmp["slowdown_max"])]
    show["slowdown"] = show["slowdown"].map(lambda v: "-" if pd.isna(v) else f"{v:.4g}")
    show["slowdown_min"] = span
    show = show.drop(columns="slowdown_max").rename(columns={
        "size_bytes": "size", "failed_links": "failed links", "healthy_time_s": "healthy",
        "time_s": "time", "slowdown_min": "min–max"})
    if "bandwidth_Bps" in show.columns:
        show["bandwidth_Bps"] = show["bandwidth_Bps"].map(format_rate)
        show = show.rename(columns={"bandwidth_Bps": "bandwidth"})
    if "group" in show.columns:   # (rows of a run beside a sweep's have no group)
        show["group"] = show["group"].fillna("(none)")
        return "\n\n".join(f"== group {g} ==\n" + sub.drop(columns="group").to_string(index=False)
                           for g, sub in show.groupby("group", sort=True))
    return show.to_string(index=False)
