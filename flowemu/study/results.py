"""Sweep results: the goodput-gain comparison of a dataset's rows, and the
slowdown of what-if rows against the healthy network (:func:`slowdown` pairs
each row with its healthy twin, :func:`compare_whatif` aggregates).

The dataset itself (parquet schema, atomic part files, the manifest, loading,
pruning) lives in :mod:`flowemu.study.sweep.dataset`; what readers use (``load``,
``load_errors``, the column names) is importable from here too.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pandas as pd

from ..core.errors import ConfigError, checked_keywords, show
from ..core.units import format_rate, format_size, format_time
from ..whatif.conditions import CONDITIONS, HEALTHY, WHATIF_COLUMNS
from .sweep.dataset import (  # noqa: F401 (re-exported)
    ASIDE_DIR,
    ERRORS_DIR,
    FIGURES_DIR,
    MANIFEST,
    SWEEP_COLUMNS,
    load,
    load_errors,
)
from .sweep.where import where_rows

#: the what-if columns that are conditions of a run (failed and degraded links,
#: the policy, slow ranks, background traffic): scenario columns, so a healthy
#: and a faulty row are never ranked against each other as algorithms.
#: ``failed_links`` and ``background_Bps`` are outputs of a run, not conditions.
WHATIF_SCENARIO = [c for c in WHATIF_COLUMNS if c not in ("failed_links", "background_Bps")]

#: configuration columns that make a comparison scenario when they vary
SCENARIO_COLUMNS = ["group", "topology", "nodes", "ranks", "bandwidth_Bps", "link_latency_s",
                    "hop_latency_s", "alpha_s", "gamma_s_per_B", "delta_s_per_B",
                    "incast_threshold", "incast_slope_s_per_B", "ecmp", "seed", "placement",
                    "model", "sync", "collective"] + WHATIF_SCENARIO


def with_whatif(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with missing what-if text read as the healthy defaults (``""``,
    policy ``"strict"``): rows written before the columns existed, or a file
    that lost empty strings (CSV), compare like rows that have them."""
    fill = {c: HEALTHY[c] for c in WHATIF_SCENARIO if c in df.columns and df[c].isna().any()}
    return df.fillna(fill) if fill else df


# ------------------------------------------------------------------ comparison

def result_frame(data, who: str) -> pd.DataFrame:
    """``data`` as result rows: a DataFrame as it is, a dataset (a sweep's
    directory, a parquet or CSV file, as a path) loaded (:func:`load`);
    anything else is a ConfigError naming ``who``."""
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, (str, os.PathLike)):
        return load(data)
    raise ConfigError(f"{who}: {type(data).__name__} {show(data, 40)} is not allowed; expected "
                      "a DataFrame of results or a dataset's path (a sweep's directory, a "
                      "parquet or CSV file)")


def query(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """Rows matching a where expression as a sweep file writes it
    (:func:`flowemu.study.sweep.where.where_rows`), e.g.
    ``"bandwidth == rate('100Gb/s') and hop_latency < time('1us')"``; the
    dataset's column names work too (``"bandwidth_Bps == 1.25e10"``).
    An expression outside that language is still tried as a pandas query
    (``@name``, backquoted names, ``.str`` methods), as ``--where`` took
    before; when neither reads it, the language's refusal is raised."""
    try:
        return df[where_rows(df, where)]
    except ConfigError as refused:
        try:
            return df.query(where, engine="python")
        except Exception:  # noqa: BLE001 - not a pandas query either: say what is allowed
            raise refused from None


def scenario_columns(df: pd.DataFrame) -> list[str]:
    """Columns that tell comparison scenarios apart: topology and nodes, plus
    every other configuration column that varies in ``df`` (group, bandwidth,
    latencies, ...). ``ranks`` counts only where it differs from ``nodes``."""
    cols = []
    for c in SCENARIO_COLUMNS:
        if c not in df.columns:
            continue
        if c in ("topology", "nodes"):
            cols.append(c)
        elif c == "ranks":
            if "nodes" in df.columns and (df["ranks"] != df["nodes"]).any() \
                    and df["ranks"].nunique(dropna=False) > 1:
                cols.append(c)
        elif df[c].nunique(dropna=False) > 1:
            cols.append(c)
    return cols


#: goodputs whose relative difference is at most this are a tie: floating-point
#: noise (two algorithms that move the same bytes over the same links agree to
#: ~1e-15, rarely exactly), far below any difference a model can claim
TIE_RTOL = 1e-9


@checked_keywords
def compare(df, by: str = "label", *, who: str = "compare") -> pd.DataFrame:
    """Per scenario and size: each algorithm's goodput, the best algorithm(s),
    and each algorithm's gain over the best *other* one.

    The two models never mix: when a dataset holds rows of both ``flow`` and
    ``genmodel``, ``model`` is a scenario column and algorithms are compared
    within each model; ``by="model"`` (:func:`compare_models`) puts the two
    models of each configuration side by side instead.

    ``gain = goodput / (best goodput among the other algorithms) − 1`` — the
    Swing paper's "goodput gain" (§5: 100 % = twice as fast as the best other).

    Goodputs within :data:`TIE_RTOL` (relative) of each other are equal: every
    algorithm within it of the highest goodput is best (``is_best``), ``best``
    names them all joined by ``=`` in alphabetical order (``bucket=ring``),
    ``tie`` is true on every row of that scenario and size, and the gain of
    an algorithm tied with its best other is exactly 0.

    Parameters
    ----------
    df : DataFrame or path
        Rows with ``size_bytes`` and ``goodput_Bps`` (e.g. :func:`load`), and a
        ``label`` or ``algorithm`` column; or a dataset's path, loaded.
    by : {"label", "algorithm", "model", "sync", "whatif"}
        ``label`` compares algorithm variants (name + options that differ from
        the defaults, e.g. ``ring:ports=2``); ``algorithm`` merges the variants
        of one algorithm, taking the best per size; ``model`` returns
        :func:`compare_models`, ``sync`` :func:`compare_syncs`, ``whatif``
        :func:`compare_whatif`.
    who : str
        The command named in error messages.

    What-if conditions (``fail``, ``degrade``, ``fail_policy``, ``slow``,
    ``background``) are scenario columns: algorithms are ranked within one
    condition (one failure seed), never a healthy row against a faulty one.

    Returns
    -------
    DataFrame
        One row per (scenario, size, algorithm): the scenario columns
        (:func:`scenario_columns`), ``size_bytes``, ``algorithm``,
        ``goodput_Bps``, ``time_s``, ``best``, ``best_goodput_Bps`` (the
        highest), ``best_other``, ``best_other_goodput_Bps``, ``gain`` (NaN
        when the algorithm is alone), ``is_best`` and ``tie`` (several
        algorithms share the best). A later row of the same configuration and
        size replaces an earlier one.
    """
    df = result_frame(df, who)
    if by == "model":
        return compare_models(df)
    if by == "sync":
        return compare_syncs(df)
    if by == "whatif":
        return compare_whatif(df, who=f"{who} by whatif")
    if by not in ("label", "algorithm"):
        raise ConfigError(f"{who}: by={by!r} is not allowed; expected 'label', 'algorithm', "
                          "'model', 'sync' or 'whatif'")
    df = with_whatif(df)
    need = ["size_bytes", "goodput_Bps"]
    missing = [c for c in need if c not in df.columns]
    source = "label" if by == "label" and "label" in df.columns else "algorithm"
    if source not in df.columns:
        missing.append("label or algorithm")
    if missing:
        raise ConfigError(f"{who}: the data lacks column(s) {', '.join(missing)}")
    keys = scenario_columns(df)
    d = df.copy()
    extra = [c for c in ("time_s", "variant") if c in d.columns]
    # a later row of the same configuration (label) and size replaces an earlier one
    variant_of = "label" if "label" in d.columns else "algorithm"
    d = d.drop_duplicates(keys + ["size_bytes", variant_of], keep="last")
    d["_alg"] = d[source].astype(str)
    if by == "algorithm":
        # best variant of each algorithm per scenario and size
        d = d.sort_values("goodput_Bps", ascending=False, kind="stable")
        d = d.drop_duplicates(keys + ["size_bytes", "_alg"], keep="first")
    gk = keys + ["size_bytes"]
    d = d[gk + ["_alg", "goodput_Bps"] + extra].rename(columns={"_alg": "algorithm"})
    d = d.sort_values(gk + ["goodput_Bps", "algorithm"],
                      ascending=[True] * len(gk) + [False, True], kind="stable")
    d = d.reset_index(drop=True)
    rank = d.groupby(gk, sort=False, dropna=False).cumcount().to_numpy()
    first = d[rank == 0][gk + ["algorithm", "goodput_Bps"]].rename(
        columns={"algorithm": "_first", "goodput_Bps": "best_goodput_Bps"})
    second = d[rank == 1][gk + ["algorithm", "goodput_Bps"]].rename(
        columns={"algorithm": "_second", "goodput_Bps": "_second_goodput"})
    d = d.merge(first, on=gk, how="left").merge(second, on=gk, how="left")
    top = rank == 0
    d["best_other"] = np.where(top, d["_second"], d["_first"])
    d["best_other_goodput_Bps"] = np.where(top, d["_second_goodput"], d["best_goodput_Bps"])
    goodput = d["goodput_Bps"].to_numpy(dtype=float)
    other = d["best_other_goodput_Bps"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = goodput / other - 1.0
    gain[_same_goodput(goodput, other)] = 0.0
    d["gain"] = gain
    d["is_best"] = _same_goodput(goodput, d["best_goodput_Bps"].to_numpy(dtype=float))
    n_best = d.groupby(gk, sort=False, dropna=False)["is_best"].transform("sum").to_numpy()
    d["tie"] = n_best > 1
    d["best"] = d["_first"]
    if d["tie"].any():
        # name every tied best; only the (few) tied scenario-sizes pay for the join
        tied = d[d["tie"] & d["is_best"]]
        names = tied.groupby(gk, sort=False, dropna=False)["algorithm"].agg(
            lambda s: "=".join(sorted(s))).rename("_tied").reset_index()
        d = d.merge(names, on=gk, how="left")
        d["best"] = d["_tied"].where(d["tie"], d["best"])
    cols = gk + ["algorithm", "goodput_Bps"] + extra + [
        "best", "best_goodput_Bps", "best_other", "best_other_goodput_Bps", "gain", "is_best",
        "tie"]
    d = d[cols].sort_values(gk + ["algorithm"], kind="stable").reset_index(drop=True)
    return d


def compare_models(df: pd.DataFrame) -> pd.DataFrame:
    """Where the analytic GenModel prediction and the flow-level time part:
    per configuration (scenario without ``model``, algorithm label) and size,
    both times and their ratio, and the best algorithm by each model.

    Parameters
    ----------
    df : DataFrame
        Result rows with ``model``, ``size_bytes``, ``time_s``,
        ``goodput_Bps`` and ``label`` (or ``algorithm``), holding rows of
        both models (e.g. a sweep with ``model = ["flow", "genmodel"]``).

    Returns
    -------
    DataFrame
        One row per (scenario, size, algorithm) that both models timed: the
        scenario columns, ``size_bytes``, ``algorithm``, ``flow_time_s``,
        ``genmodel_time_s``, ``ratio`` (genmodel / flow: above 1 the model
        is slower than the flow engine), ``best_flow`` and ``best_genmodel``
        (the best algorithm(s) of that scenario and size under each model,
        among the algorithms both models timed there; ties joined by ``=``)
        and ``same_best`` (they agree). Configurations only one model timed
        are left out.
    """
    return _compare_pair(df, "model", "flow", "genmodel",
                         'sweep field model = ["flow", "genmodel"]')


def compare_syncs(df: pd.DataFrame) -> pd.DataFrame:
    """Barrier against dataflow execution: per configuration (scenario
    without ``sync``, algorithm label) and size, both times, their ratio
    (``dataflow_time_s / barrier_time_s``: below 1 dataflow is faster) and
    the best algorithm under each (``best_barrier``, ``best_dataflow``,
    ``same_best``), as :func:`compare_models` does for the two models."""
    d = df if "sync" not in df.columns else df.assign(sync=df["sync"].fillna("barrier"))
    return _compare_pair(d, "sync", "barrier", "dataflow",
                         'sweep field sync = ["barrier", "dataflow"]')


def _compare_pair(df: pd.DataFrame, column: str, a: str, b: str, how: str) -> pd.DataFrame:
    """The configurations timed under both values ``a`` and ``b`` of
    ``column`` side by side: ``{a}_time_s``, ``{b}_time_s``, ``ratio`` (b / a),
    ``best_{a}``, ``best_{b}`` and ``same_best``."""
    need = [c for c in (column, "size_bytes", "time_s", "goodput_Bps") if c not in df.columns]
    if need:
        raise ConfigError(f"compare: the data lacks column(s) {', '.join(need)}")
    values = set(df[column].fillna(a))
    if not {a, b} <= values:
        raise ConfigError(f"compare --by {column}: the data holds {column}(s) "
                          f"{', '.join(sorted(values))} only; it needs rows of {a} and "
                          f"{b} ({how})")
    d = df.assign(**{column: df[column].fillna(a)})
    # the scenario of a configuration is the same under both values
    keys = [c for c in scenario_columns(d) if c != column]
    # both rank the same algorithms: those timed under both there
    label = "label" if "label" in d.columns else "algorithm"
    both = d.groupby(keys + [label, "size_bytes"], dropna=False, sort=False)[column] \
        .transform("nunique") == 2
    d = d[both]
    cols_a, cols_b = f"{a}_time_s", f"{b}_time_s"
    if d.empty:
        return pd.DataFrame(columns=keys + ["size_bytes", "algorithm", cols_a, cols_b,
                                            "ratio", f"best_{a}", f"best_{b}", "same_best"])
    per = {m: compare(d[d[column] == m]) for m in (a, b)}
    gk = keys + ["size_bytes", "algorithm"]
    side = []
    for m, cmp in per.items():
        missing = [c for c in keys if c not in cmp.columns]
        if missing:   # a column that varies in the whole data but not in this value's rows
            cmp = cmp.merge(d[d[column] == m][missing].drop_duplicates(), how="cross")
        side.append(cmp[gk + ["time_s", "best"]].rename(
            columns={"time_s": f"{m}_time_s", "best": f"best_{m}"}))
    out = side[0].merge(side[1], on=gk, how="inner")
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = out[cols_b] / out[cols_a]
    out["same_best"] = out[f"best_{a}"] == out[f"best_{b}"]
    cols = gk + [cols_a, cols_b, "ratio", f"best_{a}", f"best_{b}", "same_best"]
    return out[cols].sort_values(gk, kind="stable").reset_index(drop=True)


def compare_models_table(cmp: pd.DataFrame) -> str:
    """A readable table of :func:`compare_models` (or :func:`compare_syncs`):
    times printed with their unit, the ratio to 4 digits; one block per
    group when there are several."""
    a, b = ("flow", "genmodel") if "genmodel_time_s" in cmp.columns else ("barrier", "dataflow")
    if cmp.empty:
        return "(no configuration timed both ways)"
    show = cmp.copy()
    show["size_bytes"] = show["size_bytes"].map(format_size)
    show[f"{a}_time_s"] = show[f"{a}_time_s"].map(format_time)
    show[f"{b}_time_s"] = show[f"{b}_time_s"].map(format_time)
    show["ratio"] = show["ratio"].map(lambda r: f"{r:.4g}")
    show = show.rename(columns={"size_bytes": "size", f"{a}_time_s": a,
                                f"{b}_time_s": b, "ratio": f"{b}/{a}"})
    if "group" in show.columns:
        return "\n\n".join(f"== group {g} ==\n" + sub.drop(columns="group").to_string(index=False)
                           for g, sub in show.groupby("group", sort=True))
    return show.to_string(index=False)


# ------------------------------------------------------------------ what-ifs

#: a random selector's seed (``random:K:SEED`` -> ``random:K``): Monte-Carlo
#: runs that differ only in it are one condition
_RANDOM_SEED = re.compile(r"(?:^|(?<=;))(random:\d+):\d+(?=$|[;=])")

#: the columns of :func:`compare_whatif` after the scenario columns
WHATIF_RESULT_COLUMNS = ["size_bytes", "algorithm", "condition", "fail", "degrade",
                         "fail_policy", "slow", "background", "failed_links", "seeds",
                         "healthy_time_s", "time_s", "time_min_s", "time_max_s", "slowdown",
                         "slowdown_min", "slowdown_max"]


#: the columns that identify a scenario apart from its what-ifs (matched by
#: :func:`slowdown` where present)
_TWIN_KEYS = ("sweep", "group", "topology", "nodes", "ranks", "algorithm", "model", "sync",
              "options",
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
    picked = query(df, where)
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
    ranks, algorithm, model, sync, size, routing, placement, network — on the
    healthy network) and ``slowdown`` (``time_s / healthy_time_s``; 1 on
    healthy rows, NaN where the dataset has no healthy twin).

    The algorithm is matched by the sweep's ``algorithm_spec`` where the
    rows have it, else by ``options``; a row of an ``auto`` option whose
    what-if made another variant the fastest (``options`` differ) is then
    paired with the one healthy row of its algorithm, when there is one."""
    df = result_frame(df, "slowdown")
    if not {"time_s", "size_bytes"} <= set(df.columns):
        raise ConfigError("slowdown: expected result rows (with time_s and size_bytes)")
    loose = [c for c in _TWIN_KEYS if c in df.columns and c != "options"]
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
    (:func:`slowdown`: same topology, ranks, algorithm and
    options, size, routing, placement and network, no failure, degradation,
    slow rank or background). Monte-Carlo runs — rows that differ only in the
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
    df = result_frame(df, who)
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
    d["fail"] = d["fail"].astype(str).map(without_seed)
    d["degrade"] = d["degrade"].astype(str).map(without_seed)
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
    out = out.sort_values(keys + ["size_bytes", "algorithm", "_sick", "failed_links",
                                  "condition"], kind="stable")
    return out[keys + WHATIF_RESULT_COLUMNS].reset_index(drop=True)


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
    if "group" in show.columns:
        return "\n\n".join(f"== group {g} ==\n" + sub.drop(columns="group").to_string(index=False)
                           for g, sub in show.groupby("group", sort=True))
    return show.to_string(index=False)


def compare_table(cmp: pd.DataFrame) -> str:
    """A readable wide table of :func:`compare`: one line per scenario and
    size, one column per algorithm with ``goodput (gain)``, and the best;
    one block per group when there are several."""
    if cmp.empty:
        return "(no results)"
    if "genmodel_time_s" in cmp.columns or "dataflow_time_s" in cmp.columns:
        return compare_models_table(cmp)
    if "slowdown_max" in cmp.columns:
        return compare_whatif_table(cmp)
    if "group" in cmp.columns:
        blocks = []
        for g, sub in cmp.groupby("group", sort=True):
            blocks.append(f"== group {g} ==\n" + _wide_table(sub.drop(columns="group")))
        return "\n\n".join(blocks)
    return _wide_table(cmp)


def _wide_table(cmp: pd.DataFrame) -> str:
    gk = [c for c in cmp.columns if c not in (
        "algorithm", "goodput_Bps", "time_s", "variant", "best", "best_goodput_Bps",
        "best_other", "best_other_goodput_Bps", "gain", "is_best", "tie")]
    gain = cmp["gain"].map(_gain_text)
    if "tie" in cmp.columns:      # a tied best: "(tie)", not "(+0%)" that reads as a win
        gain = gain.where(~(cmp["tie"] & cmp["is_best"]), " (tie)")
    cell = cmp["goodput_Bps"].map(format_rate) + gain
    wide = cmp.assign(_cell=cell).pivot_table(index=gk, columns="algorithm", values="_cell",
                                              aggfunc="first", sort=True)
    # "best" names every tied best (bucket=ring), the same on each of their rows
    best = cmp[cmp["is_best"]].drop_duplicates(gk).set_index(gk)["best"]
    wide.columns.name = None
    wide = wide.fillna("-")
    wide["best"] = best.reindex(wide.index)
    wide = wide.reset_index()
    if "nodes" in gk:   # smaller networks first (torus:8x8 before torus:16x16)
        order = [c for c in gk if c == "group"] + ["nodes"] + [c for c in gk
                                                              if c not in ("group", "nodes")]
        wide = wide.sort_values(order, kind="stable").reset_index(drop=True)
    wide["size_bytes"] = wide["size_bytes"].map(format_size)
    wide = wide.rename(columns={"size_bytes": "size"})
    if "bandwidth_Bps" in wide.columns:
        wide["bandwidth_Bps"] = wide["bandwidth_Bps"].map(format_rate)
        wide = wide.rename(columns={"bandwidth_Bps": "bandwidth"})
    # latencies and alpha in their units, as the table's rates and sizes are
    for col in ("link_latency_s", "hop_latency_s", "alpha_s"):
        if col in wide.columns:
            wide[col] = wide[col].map(format_time)
            wide = wide.rename(columns={col: col[:-2]})
    return wide.to_string(index=False)


def format_gain(g) -> str:
    """``+12%``; under 1 % one significant digit (``-0.5%``, not ``-0%``,
    which reads as a tie), under 0.01 % ``-<0.01%``; empty for NaN."""
    if pd.isna(g):
        return ""
    if abs(g) >= 0.01 or g == 0:
        return f"{g:+.0%}"
    if abs(g) < 1e-4:
        return f"{'+' if g > 0 else '-'}<0.01%"
    return f"{100 * g:+.1g}%"


def _gain_text(g) -> str:
    """`` (gain)`` of :func:`format_gain`, empty for NaN."""
    text = format_gain(g)
    return f" ({text})" if text else ""


def _same_goodput(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: ``a`` and ``b`` differ by at most :data:`TIE_RTOL` of the
    larger (NaN never ties)."""
    with np.errstate(invalid="ignore"):
        return np.abs(a - b) <= TIE_RTOL * np.maximum(np.abs(a), np.abs(b))
