"""The slowdown figure of a what-if dataset (issue 16): how much slower each
algorithm runs on a network with failed or degraded links, slow ranks or
background traffic than on the healthy network.

:func:`slowdown_figure` draws, for one vector size, the slowdown
(:func:`flowemu.results.compare_whatif`) against the number of failed
cables — one line per algorithm with its min–max band over the Monte-Carlo
seeds — or against the what-if condition when the conditions are not (only)
failures — unordered categories: unconnected markers with min–max bars — one
panel per topology (scenario). It shares the layout
helpers of :mod:`flowemu.study.figures.common` and the algorithm styles of
:mod:`flowemu.study.figures.style` with the other figures.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullFormatter

from ...core.errors import ConfigError
from ...core.units import format_size, parse_size
from ...whatif.conditions import CONDITIONS
from ..results import (
    WHATIF_SCENARIO,
    compare_whatif,
    healthy_rows,
    query_with_twins,
    with_twins,
    with_whatif,
)
from .common import (
    filter_rows,
    finish_layout,
    fixed_parameters,
    legend_below,
    limit_scenarios,
    panel_grid,
    panel_title,
    rows_of,
    save_figure,
    scenario_keys,
    scenario_title,
    titled,
    wrap_label,
)
from .equal import covering_entry, covering_look, equal_line, note_equal
from .style import style_map, use_log_scale

WHO = "slowdown figure"


def _pick_size(df: pd.DataFrame, size) -> int:
    """The vector size to draw: ``size`` (a byte count or size text) when the
    data has it, else the largest in the data."""
    sizes = sorted({int(s) for s in df["size_bytes"].dropna()})
    if size is None:
        return sizes[-1]
    nbytes = parse_size(size, "--size")
    if nbytes not in sizes:
        raise ConfigError(f"size: {format_size(nbytes)} is not in the data; sizes: "
                          f"{', '.join(format_size(s) for s in sizes)}")
    return nbytes


def _x_positions(cmp: pd.DataFrame) -> tuple[bool, dict]:
    """``(numeric, x of each condition)``: the failed cables when every
    condition is failures alone and one count means one condition, else the
    conditions in order (healthy first, then by failed cables)."""
    only_fail = (cmp[["degrade", "slow", "background"]] == "").all(axis=None)
    per_count = cmp.groupby("failed_links")["condition"].nunique()
    if only_fail and (per_count == 1).all():
        return True, dict(zip(cmp["condition"], cmp["failed_links"].astype(float)))
    order = (cmp.assign(_sick=cmp["condition"] != "healthy")
             .sort_values(["_sick", "failed_links", "condition"], kind="stable")
             ["condition"].drop_duplicates())
    return False, {c: float(i) for i, c in enumerate(order)}


def slowdown_figure(df: pd.DataFrame, *, size=None, title: str | None = None, group=None,
                    topologies=None, where: str | None = None, ncols: int = 3,
                    max_panels: int = 24) -> Figure:
    """The figure of :func:`plot_slowdown`, not yet saved."""
    if where:   # keep the baselines of what is chosen
        df = query_with_twins(df, where)
        if df.empty:
            raise ConfigError(f"where: no results match {where!r}")
    whole = df
    df = filter_rows(df, group, topologies, None)
    if group is not None:   # (its healthy twins may be in another group)
        df = with_twins(whole, df)
    if "size_bytes" not in df.columns:
        raise ConfigError(f"{WHO}: the data lacks column size_bytes")
    nbytes = _pick_size(df, size)
    df = df[df["size_bytes"] == nbytes]
    df, note = limit_scenarios(df, max_panels, keep=tuple(WHATIF_SCENARIO))
    cmp = compare_whatif(df, who=f"{WHO} at {format_size(nbytes)}")
    measured = np.isfinite(cmp["slowdown"].to_numpy(dtype=float))
    note = " ".join(p for p in (note, _left_out(cmp[~measured])) if p)
    cmp = cmp[measured]
    if not (cmp["condition"] != "healthy").any():
        raise ConfigError(f"{WHO}: no what-if row of size {format_size(nbytes)} has a healthy "
                          "twin (the same configuration without fail, degrade, slow or "
                          "background) in the data")
    cols = [c for c in _panel_columns(cmp) if c != "nodes"]
    if cmp.loc[cmp["fail_policy"] != "", "fail_policy"].nunique() > 1:
        # one line per algorithm still: the policy is part of the condition
        cmp = cmp.assign(condition=cmp["condition"].where(
            cmp["fail_policy"] == "", cmp["condition"] + " (" + cmp["fail_policy"] + ")"))
    # a panel per configuration with a what-if (one of the healthy network
    # alone would hold a lone point at 1)
    _, scen = scenario_keys(cmp[cmp["condition"] != "healthy"], only=cols)
    labels = sorted(cmp["algorithm"].unique())
    styles = style_map(labels)
    fig, axes = panel_grid(len(scen), ncols, width=5.0, height=3.6)
    heading = titled(df, title, f"slowdown at vector size {format_size(nbytes)}")
    handles, spreads = {}, set()     # spreads: how min–max over seeds is drawn
    covering = {}                    # legend entries of lines drawn over equal ones
    for ax, key in zip(axes, scen):
        sub = rows_of(cmp, cols, key)
        numeric, xpos = _x_positions(sub)   # each panel its own conditions
        drawn, equal = [], []    # this panel's lines; (label, the line it covers, where)
        for lab in labels:
            s = sub[sub["algorithm"] == lab]
            if s.empty:
                continue
            x = s["condition"].map(xpos).to_numpy(dtype=float)
            order = np.argsort(x, kind="stable")
            x = x[order]
            y, lo, hi = (s[c].to_numpy(dtype=float)[order]
                         for c in ("slowdown", "slowdown_min", "slowdown_max"))
            style = styles[lab]
            seeded = bool((s["seeds"] > 1).any())
            if numeric:        # an ordered count: a line through it, a band around it
                under, where = equal_line(drawn, x, y, lambda v: f"{v:g}", "failure counts")
                drawn.append((lab, x, y))
                kwargs, markersize = style.line_kwargs(), 4
                if under is not None:   # dashed over the equal line, which shows through
                    depth = sum(1 for _, u, _ in equal if u == under) + 1
                    kwargs, markersize = covering_look(style, depth)
                    equal.append((lab, under, where))
                    covering[covering_entry(lab, depth)] = Line2D(
                        [], [], linewidth=1.5, markersize=markersize, **kwargs)
                ax.plot(x, y, markersize=markersize, linewidth=1.5, label=lab, **kwargs)
                if seeded:
                    ax.fill_between(x, lo, hi, color=style.color, alpha=0.18, linewidth=0)
                    spreads.add("band")
            else:              # unordered conditions: markers side by side, no line
                x = x + _dodge(labels.index(lab), len(labels))
                ax.plot(x, y, linestyle="none", markersize=5.5, label=lab,
                        **style.marker_kwargs())
                if seeded:
                    ax.vlines(x, lo, hi, color=style.color, alpha=0.45, linewidth=2.5)
                    spreads.add("bar")
            handles.setdefault(lab, _proxy(style, numeric))
        note_equal(ax, equal)
        ax.axhline(1.0, color="black", linestyle="--", linewidth=0.9, zorder=1)
        ax.grid(True, which="major", alpha=0.3)
        panel_title(ax, scenario_title(pd.Series(dict(zip(cols, key))), cols), heading,
                    len(scen))
        _condition_axis(ax, numeric, xpos)
    _slowdown_axis(axes, cmp[["slowdown_min", "slowdown_max"]].to_numpy(dtype=float).ravel())
    handles.update(covering)
    names, lines = list(handles), list(handles.values())
    if spreads:
        seeds = sorted(set(cmp.loc[cmp["seeds"] > 1, "seeds"]))
        spread = f"min–max over {'/'.join(str(n) for n in seeds)} seeds"
        if "band" in spreads:
            lines.append(Patch(facecolor="grey", alpha=0.3))
            names.append(spread + (" (band)" if len(spreads) > 1 else ""))
        if "bar" in spreads:
            lines.append(Line2D([], [], color="grey", alpha=0.45, linewidth=2.5))
            names.append(spread + (" (bar)" if len(spreads) > 1 else ""))
    legend_below(fig, lines, names)
    fixed = fixed_parameters(df, shown=cols + list(CONDITIONS))
    policies = sorted(set(cmp.loc[cmp["fail_policy"] != "", "fail_policy"]))
    if len(policies) == 1:
        # (said of the conditions with failed links: the others have none to route around)
        unfailed = ((cmp["condition"] != "healthy") & (cmp["fail_policy"] == "")).any()
        policy = f"fail policy {policies[0]}" + (" where links fail" if unfailed else "")
        fixed = " · ".join(p for p in (fixed, policy) if p)
    finish_layout(fig, heading, note, fixed)
    return fig


def _left_out(lost: pd.DataFrame) -> str:
    """What the figure leaves out for want of a healthy twin (the what-if
    conditions whose slowdown is NaN): a line under the title, or ''."""
    if lost.empty:
        return ""
    pairs = sorted(set(zip(lost["algorithm"].astype(str), lost["condition"].astype(str))))
    if len(pairs) <= 3:
        what = ", ".join(f"{alg} ({cond})" for alg, cond in pairs)
    else:
        what = (f"{len(pairs)} what-if conditions of "
                f"{', '.join(sorted({alg for alg, _ in pairs}))}")
    return f"(left out, no healthy twin in the data: {what})"


def _dodge(k: int, n: int) -> float:
    """The x offset of the ``k``-th of ``n`` algorithms at one categorical
    condition: side by side within ±0.3, so equal slowdowns stay visible."""
    step = min(0.15, 0.6 / max(n, 1))
    return (k - (n - 1) / 2) * step


def _proxy(style, numeric: bool) -> Line2D:
    """A legend handle drawn like the algorithm's line (ordered axis) or
    marker (categorical axis)."""
    if numeric:
        return Line2D([], [], markersize=4, linewidth=1.5, **style.line_kwargs())
    return Line2D([], [], linestyle="none", markersize=5.5, **style.marker_kwargs())


def _panel_columns(cmp: pd.DataFrame) -> list[str]:
    """The scenario columns :func:`compare_whatif` kept in front."""
    return list(cmp.columns[: list(cmp.columns).index("size_bytes")])


#: categorical conditions in one panel above which their labels stand upright
CROWDED = 6


def _condition_axis(ax, numeric: bool, xpos: dict) -> None:
    if numeric:
        counts = sorted(set(xpos.values()))
        if max(counts) >= 8:          # 0, 1, 4, 16 spread evenly, not crowded at 0
            ax.set_xscale("symlog", linthresh=1.0, linscale=0.5)
            ax.set_xlim(-0.3, max(counts) * 1.25)
        ax.set_xticks(counts, [f"{c:g}" for c in counts])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks([], minor=True)
        ax.set_xlabel("failed links (cables)")
    else:
        ordered = sorted(xpos, key=xpos.get)
        if len(ordered) > CROWDED:   # upright: slanted labels of 12 conditions overlapped
            ax.set_xticks([xpos[c] for c in ordered], [wrap_label(c, 28) for c in ordered],
                          rotation=90, ha="center", fontsize=7)
        else:
            ax.set_xticks([xpos[c] for c in ordered], [wrap_label(c, 18) for c in ordered],
                          rotation=30, ha="right", fontsize=8)
        ax.set_xlim(-0.5, len(ordered) - 0.5)
        ax.set_xlabel("what-if condition")


def _slowdown_axis(axes, values) -> None:
    """Logarithmic when the slowdowns span more than two decades, else linear;
    1 (healthy) always in view."""
    values = values[np.isfinite(values)]
    log = use_log_scale(np.append(values, 1.0))
    for ax in axes:
        if log:
            ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        if log:   # a panel within one decade labels its minor ticks: 1.4, not 1.4×10^0
            ax.yaxis.set_minor_formatter(FuncFormatter(
                lambda v, _, ax=ax: f"{v:g}" if _decades(ax) <= 1 else ""))
        ax.set_ylabel("slowdown vs healthy (1 = healthy)" + (", log scale" if log else ""))
        lo, hi = ax.get_ylim()
        if not log:
            ax.set_ylim(min(lo, 0.95), max(hi, 1.05))


def _decades(ax) -> float:
    """The decades a log y axis spans as drawn."""
    lo, hi = ax.get_ylim()
    return float(np.log10(hi / lo)) if lo > 0 and hi > lo else 0.0


def plot_slowdown(df: pd.DataFrame, out, **kwargs) -> Path:
    """Slowdown against the healthy network vs failed links, for one vector
    size (``size``; default the largest in the data).

    x: the failed cables (symmetric-log when they reach 8 or more) when every
    what-if is failures alone, else the what-if conditions; y: time / time
    on the healthy network (:func:`flowemu.results.compare_whatif`; the
    dashed line at 1 is the healthy network); one line per algorithm label
    through the mean over the Monte-Carlo seeds, a band from the smallest to
    the largest — or, on the conditions, which have no order, one marker per
    algorithm and condition, side by side, with a bar from the smallest to
    the largest and no line between conditions; one panel per topology
    (scenario); the title states the size, the caption under the legend
    every parameter fixed in the rows drawn. A dataset without
    what-if rows, or without the healthy rows to compare them with, is a
    ConfigError. Keywords: those of :func:`slowdown_figure`."""
    return save_figure(slowdown_figure(df, **kwargs), out)


def has_slowdown(df: pd.DataFrame) -> bool:
    """Whether ``df`` holds what-if rows and healthy rows (so a slowdown
    figure can be drawn)."""
    if not {"fail", "size_bytes", "time_s"} <= set(df.columns):
        return False
    healthy = healthy_rows(with_whatif(df))
    return bool(healthy.any() and not healthy.all())
