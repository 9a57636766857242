"""The gain figures of a sweep dataset: :func:`plot_gain` (a heatmap of
one algorithm's goodput gain over the best other, or of the best algorithm
and its margin, size × scenario, like the Swing paper's Fig. 7 and 8) and
:func:`plot_gain_curves` (one algorithm's gain vs size, a line per value of
a configuration column). The dispatcher is
:mod:`flowemu.study.figures.plots`."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize, to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from ...core.errors import ConfigError
from ...core.units import format_size
from ..results import (
    SCENARIO_COLUMNS,
    TIE_RTOL,
    compare,
    scenario_columns,
)
from .common import (
    filter_rows,
    finish_layout,
    fixed_parameters,
    legend_below,
    limit_scenarios,
    new_figure,
    panel_grid,
    panel_title,
    rows_of,
    save_figure,
    scenario_keys,
    scenario_title,
    size_axis,
    text_inches,
    titled,
    wrap_label,
)
from .style import TIE_COLOR, style_map, text_color_on

#: a gain heatmap clips its colours at a percentile of |gain| from this many
#: cells on (one outlier in 20 left out at the 95th)
CLIP_MIN_CELLS = 20


def _pick_algorithm(labels: list[str], algorithm: str | None, required: bool) -> str | None:
    if algorithm is None:
        swing = [lab for lab in labels if lab.split(":")[0] == "swing"]
        algorithm = "swing" if "swing" in labels else (swing[0] if swing else None)
        if algorithm is None and required:
            raise ConfigError(f"algorithm: no swing in the data; choose one of: "
                              f"{', '.join(labels)}")
    elif algorithm not in labels:
        raise ConfigError(f"algorithm: {algorithm!r} is not in the data; algorithms: "
                          f"{', '.join(labels)}")
    return algorithm


def _gain_text(g: float) -> str:
    """A gain in percent, short: one decimal below 10 % so +0.3 does not read as 0."""
    return f"{g:+.0f}" if abs(g) >= 9.95 else f"{g:+.1f}"


def _blend(color, weight: float) -> np.ndarray:
    """``color`` at ``weight`` over white (light enough to read text on)."""
    rgba = np.array(to_rgba(color))
    rgba[:3] = weight * rgba[:3] + (1 - weight)
    return rgba


def gain_figure(df: pd.DataFrame, *, algorithm: str | None = None, title: str | None = None,
                group=None, topologies=None, where: str | None = None, max_rows: int = 60,
                clip_percentile: float = 95.0) -> Figure:
    """The figure of :func:`plot_gain`, not yet saved."""
    df = filter_rows(df, group, topologies, where)
    df, note = limit_scenarios(df, max_rows)
    cmp = compare(df)
    labels = sorted(cmp["algorithm"].unique())
    styles = style_map(labels)
    algorithm = _pick_algorithm(labels, algorithm, required=False)
    title = titled(df, title, f"gain of {algorithm} over the best other" if algorithm
                   else "best algorithm at each size")
    cols, scen = scenario_keys(df)
    sizes = np.sort(cmp["size_bytes"].unique())
    gk = cols + ["size_bytes"]
    pick = (cmp[cmp["algorithm"] == algorithm] if algorithm
            else cmp[cmp["is_best"]].drop_duplicates(gk))    # one row per cell, ties or not
    gain = np.full((len(scen), len(sizes)), np.nan)
    tie = np.zeros(gain.shape, dtype=bool)
    winner = np.full(gain.shape, None, dtype=object)
    index = {k: i for i, k in enumerate(scen)}
    col_of = {s: j for j, s in enumerate(sizes)}
    for r in pick.to_dict("records"):
        i = index.get(tuple(r[c] for c in cols))
        if i is None:
            continue
        j = col_of[r["size_bytes"]]
        gain[i, j] = 100.0 * r["gain"] if np.isfinite(r["gain"]) else np.nan
        tie[i, j] = bool(r["tie"] and r["is_best"])
        winner[i, j] = r["algorithm"]
    # long row labels (a dragonfly spec with its link classes) wrap after a comma, and
    # the figure grows by their width and line count: a fixed size collapsed the
    # heatmap to nothing ("constrained_layout not applied")
    row_labels = [wrap_label(scenario_title(pd.Series(dict(zip(cols, k))), cols))
                  for k in scen]
    label_w = text_inches([ln for lab in row_labels for ln in lab.split("\n")], 10)
    lines = max((lab.count("\n") + 1 for lab in row_labels), default=1)
    row_h = max(0.42, 0.19 * lines + 0.12)
    fig = new_figure(max(6.5, 0.45 * len(sizes) + 3.0 + label_w),
                      max(2.8, row_h * len(scen) + 2.2))
    ax = fig.subplots()
    img = np.ones(gain.shape + (4,))
    img[..., 3] = 0.0                                  # no result: blank
    legend = []
    if algorithm:
        # diverging colours centred on 0, symmetric, clipped at a percentile of
        # |gain| so that one outlier does not wash every other cell out
        wins = gain[np.isfinite(gain) & ~tie]
        # "lower": an actual cell's value, so one outlier in 20 cells is left out;
        # with fewer cells than that a percentile would clip real values (3
        # cells: the middle one), so the range is the largest
        lim = (float(np.percentile(np.abs(wins), clip_percentile, method="lower"))
               if wins.size >= CLIP_MIN_CELLS else
               float(np.abs(wins).max()) if wins.size else 1.0)
        lim = max(lim, 1.0)
        clipped = bool(wins.size and (np.abs(wins) > lim).any())
        norm = Normalize(vmin=-lim, vmax=lim)
        cmap = matplotlib.colormaps["RdBu"]
        have = np.isfinite(gain)
        img[have] = cmap(norm(np.clip(gain[have], -lim, lim)))
        # (the title says whose gain over what)
        label = "gain (%), blue: faster"
        if clipped:
            label += f"\nclipped at ±{lim:.0f}% ({clip_percentile:g}th percentile)"
        fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, label=label, shrink=0.9,
                     extend="both" if clipped else "neither")
    else:
        # which algorithm wins (its colour; variants hatched) and by how much
        # over the runner-up (text)
        for i, j in zip(*np.nonzero(pd.notna(winner))):
            img[i, j] = _blend(styles[winner[i, j]].color, 0.6)
        used = sorted({w for w, t in zip(winner.ravel(), tie.ravel()) if w is not None
                       and not t})
        for lab in used:
            st = styles[lab]
            legend.append((Patch(facecolor=_blend(st.color, 0.6), hatch=st.hatch,
                                 edgecolor=(0, 0, 0, 0.3), linewidth=0), lab))
    img[tie] = to_rgba(TIE_COLOR)
    if tie.any():
        legend.append((Patch(facecolor=TIE_COLOR),
                       f"= tie (goodputs within {TIE_RTOL:g} relative)".replace("e-0", "e-")))
    ax.imshow(img, aspect="auto", interpolation="nearest")
    if not algorithm:
        for i, j in zip(*np.nonzero(pd.notna(winner) & ~tie)):
            hatch = styles[winner[i, j]].hatch
            if hatch:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch=hatch,
                                       edgecolor=(0, 0, 0, 0.3), linewidth=0))
    if len(sizes) * len(scen) <= 1500:
        for i, j in zip(*np.nonzero(np.isfinite(gain) | tie)):
            text = "=" if tie[i, j] else _gain_text(gain[i, j])
            ax.text(j, i, text, ha="center", va="center", fontsize=7,
                    color=text_color_on(img[i, j]),
                    fontweight="bold" if tie[i, j] else "normal")
    step = max(1, math.ceil(len(sizes) / 14))
    ax.set_xticks(range(0, len(sizes), step), [format_size(s) for s in sizes[::step]],
                  rotation=45, ha="right")
    ax.set_yticks(range(len(scen)), row_labels)
    ax.set_xlabel("vector size")
    if legend:
        kw = {} if algorithm else {
            "title": "best algorithm (cell: its gain over the runner-up, %)",
            "title_fontsize": 9}
        legend_below(fig, [h for h, _ in legend], [t for _, t in legend], max_ncol=3, **kw)
    finish_layout(fig, title, note, fixed_parameters(df, shown=cols))
    return fig


def plot_gain(df: pd.DataFrame, out, **kwargs) -> Path:
    """Heatmap of goodput gain, sizes across, scenarios down.

    With ``algorithm`` (a label; default ``swing`` when present): its gain over
    the best other algorithm, diverging colours centred on 0 (blue: faster),
    symmetric and clipped at the ``clip_percentile`` of |gain| (the colour
    bar says so; cells show the true value in percent). Without: the best
    algorithm (its colour from :func:`~flowemu.study.figures.style.algorithm_style`,
    variants hatched) and its gain over the runner-up. Ties (goodputs within
    :data:`~flowemu.results.TIE_RTOL`) are grey cells marked "=", never a
    win; text is dark on light cells and light on dark ones. Keywords: those
    of :func:`gain_figure`.
    """
    return save_figure(gain_figure(df, **kwargs), out)


def _check_by(df: pd.DataFrame, by: str) -> None:
    allowed = [c for c in SCENARIO_COLUMNS if c in df.columns]
    if by not in allowed:
        raise ConfigError(f"by: {by!r} is not a configuration column of the data; "
                          f"allowed: {', '.join(allowed) or '(none)'}")


def _column_name(col: str) -> str:
    """``alpha_s`` -> ``alpha``, ``link_latency_s`` -> ``link latency``."""
    for suffix in ("_s_per_B", "_Bps", "_s"):
        if col.endswith(suffix):
            col = col[: -len(suffix)]
            break
    return col.replace("_", " ")


def _by_text(col: str, value) -> str:
    return scenario_title(pd.Series({col: value}), [col])


def gain_curve_figure(df: pd.DataFrame, *, by: str = "alpha_s", algorithm: str | None = None,
                      title: str | None = None, group=None, topologies=None,
                      where: str | None = None, ncols: int = 2,
                      max_panels: int = 12) -> Figure:
    """The figure of :func:`plot_gain_curves`, not yet saved."""
    _check_by(df, by)
    df = filter_rows(df, group, topologies, where)
    df, note = limit_scenarios(df, max_panels, keep=(by,))
    values = sorted(df[by].dropna().unique())
    if len(values) < 2:
        varying = [c for c in scenario_columns(df) if c != "nodes" and df[c].nunique() > 1]
        raise ConfigError(f"by: {by!r} has a single value in the data, so there is one curve "
                          f"and nothing to compare; columns that vary: "
                          f"{', '.join(varying) or '(none)'}")
    parts = []
    for v in values:
        sub = df[df[by] == v]
        part = compare(sub)
        part[by] = v
        for c in scenario_columns(df):     # constant within this value: not in part yet
            if c not in part.columns:
                part[c] = sub[c].iloc[0]
        parts.append(part)
    cmp = pd.concat(parts, ignore_index=True)
    labels = sorted(cmp["algorithm"].unique())
    styles = style_map(labels)
    algorithm = _pick_algorithm(labels, algorithm, required=True)
    title = titled(df, title, f"gain of {algorithm} by {_column_name(by)}")
    cols, scen = scenario_keys(df, exclude=(by,))
    mine = cmp[cmp["algorithm"] == algorithm]
    fig, axes = panel_grid(len(scen), ncols, width=5.6, height=3.8)
    style = styles[algorithm]
    dashes = ["-", "--", "-.", ":"]
    # one shade of the algorithm's colour per value, light to dark in value order
    shades = [_blend(style.color, w) for w in np.linspace(0.35, 1.0, len(values))]
    line_handles, others = {}, set()
    for ax, key in zip(axes, scen):
        sub = rows_of(mine, cols, key)
        for k, v in enumerate(values):
            s = sub[sub[by] == v].sort_values("size_bytes")
            if s.empty:
                continue
            x, y = s["size_bytes"].to_numpy(), 100.0 * s["gain"].to_numpy(dtype=float)
            (line,) = ax.plot(x, y, color=shades[k], linestyle=dashes[k % len(dashes)],
                              linewidth=1.6, zorder=2, label=_by_text(by, v))
            line_handles.setdefault(k, line)
            # each point: the best other algorithm, in its own marker and colour
            for other, pts in s.assign(_y=y).groupby("best_other", sort=True):
                ost = styles[other]
                ax.plot(pts["size_bytes"], pts["_y"], linestyle="none", markersize=4.5,
                        label=f"best other: {other}", markeredgewidth=0.9, zorder=3,
                        **ost.marker_kwargs())
                others.add(other)
        ax.axhline(0.0, color="black", linewidth=0.8, zorder=1)
        size_axis(ax, sub["size_bytes"] if not sub.empty else mine["size_bytes"])
        ax.set_ylabel(f"gain of {algorithm} over\nthe best other (%)")
        ax.grid(True, which="major", alpha=0.3)
        panel_title(ax, scenario_title(pd.Series(dict(zip(cols, key))), cols), title,
                    len(scen))
    # two legend columns: the lines (values of `by`), the markers (best other)
    ks, others = sorted(line_handles), sorted(others)
    blank = Line2D([], [], linestyle="none")
    rows = max(len(ks), len(others))
    lines = [line_handles[k] for k in ks] + [blank] * (rows - len(ks))
    marks = [Line2D([], [], linestyle="none", markersize=5, **styles[o].marker_kwargs())
             for o in others] + [blank] * (rows - len(others))
    texts = ([_column_name(by)] + [_by_text(by, values[k]) for k in ks] + [""] * (rows - len(ks))
             + ["best other algorithm"] + others + [""] * (rows - len(others)))
    legend_below(fig, [blank] + lines + [blank] + marks, texts, ncol=2)
    finish_layout(fig, title, note, fixed_parameters(df, shown=cols + [by]))
    return fig


def plot_gain_curves(df: pd.DataFrame, out, **kwargs) -> Path:
    """One algorithm's goodput gain over the best other vs vector size, one
    line per value of the configuration column ``by`` (default the
    per-message overhead ``alpha_s``), one panel per remaining scenario.
    Above 0 the algorithm is faster than every other; where a line crosses 0
    another algorithm takes over. Each point's marker is the best other
    algorithm's (:func:`~flowemu.study.figures.style.algorithm_style`). The
    ``algorithm`` defaults to Swing when present. Keywords: those of
    :func:`gain_curve_figure`."""
    return save_figure(gain_curve_figure(df, **kwargs), out)
