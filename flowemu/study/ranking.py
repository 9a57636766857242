"""The goodput-gain comparison of a dataset's rows (the Swing paper's
"goodput gain", §5): per scenario and size, each algorithm's goodput, the
best and each one's gain over the best other; the two models or the two
synchronisations side by side; and the tables ``flowemu compare`` prints."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.errors import ConfigError, checked_keywords
from ..core.units import format_rate, format_size, format_time
from .rows import result_frame, same_goodput, scenario_columns, with_labels, with_whatif
from .slowdowns import compare_whatif, compare_whatif_table


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

    Goodputs within :data:`~flowemu.study.rows.TIE_RTOL` (relative) of each other are equal: every
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
        size replaces an earlier one. ``algorithm`` is what was compared: the
        rows' ``label`` (name and options that differ from the defaults,
        ``recdoub:variant=bandwidth``) with ``by="label"``, their name with
        ``by="algorithm"``; join with the rows on ``label`` in the first case.
    """
    df = with_labels(result_frame(df, who))
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
    gain[same_goodput(goodput, other)] = 0.0
    d["gain"] = gain
    d["is_best"] = same_goodput(goodput, d["best_goodput_Bps"].to_numpy(dtype=float))
    n_best = d.groupby(gk, sort=False, dropna=False)["is_best"].transform("sum").to_numpy()
    d["tie"] = n_best > 1
    # (no best where no row of the scenario and size has a goodput: all failed)
    d["best"] = d["_first"].where(d["best_goodput_Bps"].notna())
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
    # (a run without a goodput, its row an error: '-', not 'nanb/s')
    cell = cmp["goodput_Bps"].map(lambda g: "-" if pd.isna(g) else format_rate(g)) + gain
    wide = cmp.assign(_cell=cell).pivot_table(index=gk, columns="algorithm", values="_cell",
                                              aggfunc="first", sort=True)
    # "best" names every tied best (bucket=ring), the same on each of their rows
    best = cmp[cmp["is_best"]].drop_duplicates(gk).set_index(gk)["best"]
    wide.columns.name = None
    wide = wide.fillna("-")
    wide["best"] = best.reindex(wide.index).fillna("-")
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
    # and the costs per byte as the sweep file gives them (gamma = "1ps": per byte)
    for col in ("gamma_s_per_B", "delta_s_per_B", "incast_slope_s_per_B"):
        if col in wide.columns:
            wide[col] = wide[col].map(lambda v: f"{format_time(v)}/B")
            wide = wide.rename(columns={col: col.removesuffix("_s_per_B")})
    return wide.to_string(index=False)


def format_gain(g) -> str:
    """``+12%``; under 1 % one significant digit (``-0.5%``, not ``-0%``,
    which reads as a tie), under 0.01 % ``-<0.01%``; near -100 % the digits
    that tell it from a goodput of 0 (``-99.5%``); empty for NaN."""
    if pd.isna(g):
        return ""
    if abs(g) >= 0.01 or g == 0:
        text = f"{g:+.0%}"
        # -100% is a goodput of 0: a slower one keeps its digits (-99.5%)
        return f"{100 * g:+.4g}%" if text == "-100%" and g > -1 else text
    if abs(g) < 1e-4:
        return f"{'+' if g > 0 else '-'}<0.01%"
    return f"{100 * g:+.1g}%"


def _gain_text(g) -> str:
    """`` (gain)`` of :func:`format_gain`, empty for NaN."""
    text = format_gain(g)
    return f" ({text})" if text else ""
