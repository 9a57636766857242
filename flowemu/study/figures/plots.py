"""Figures of a sweep dataset (matplotlib, Agg canvas; no pyplot state).

- :func:`plot_goodput` (and :func:`plot_time`): goodput (time) vs vector
  size, one line per algorithm, one panel per scenario (topology, plus any
  other swept field such as the bandwidth) — like the Swing paper's Fig. 6,
  10 and 11. The size axis is log2; the value axis is logarithmic when the
  plotted values span more than two decades (:func:`~flowemu.study.figures.style.use_log_scale`).
  With ``relative=True`` each panel has a second one under it: every
  algorithm's goodput in percent of the best at each size
  (:func:`relative_goodput`, linear axis), where goodputs a log axis puts
  together (700 and 800 Gb/s) are ranked at every size.
- :func:`plot_gain`: a heatmap of goodput gain (size × scenario) — like its
  Fig. 7 and 8 — for one algorithm over the best other (default: Swing when
  present), or, without one, the best algorithm and its margin over the
  runner-up. Ties (:data:`~flowemu.results.TIE_RTOL`) are grey and marked "=".
- :func:`plot_gain_curves`: one algorithm's gain over the best other vs size,
  one line per value of a configuration column (e.g. the per-message
  overhead ``alpha_s``): how a parameter moves the crossovers.
- :func:`~flowemu.study.figures.slowdown.plot_slowdown` (in :mod:`flowemu.study.figures.slowdown`):
  the slowdown of what-if rows against the healthy network vs failed links.
- :func:`figures`: every standard figure of a dataset (per group).

Every figure draws an algorithm in the same colour and marker
(:func:`~flowemu.study.figures.style.algorithm_style`), whatever else it shows;
the layout helpers the figures share are in :mod:`flowemu.study.figures.common`.
Every figure is laid out by :func:`~flowemu.study.figures.common.finish_layout`:
a title of a line or two on top, the legend in columns under the panels, and
under it a caption in small type stating the parameters fixed in the rows
drawn (:func:`~flowemu.study.figures.common.fixed_parameters`), so two
``--where`` choices of one dataset never look alike and the panels keep most
of the figure.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize, to_rgba
from matplotlib.figure import Figure
from matplotlib.legend_handler import HandlerTuple
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter, NullFormatter

from ...core.errors import ConfigError, suggest
from ...core.units import format_size, format_time
from ..results import (
    FIGURES_DIR,
    SCENARIO_COLUMNS,
    TIE_RTOL,
    compare,
    healthy_rows,
    load,
    scenario_columns,
    with_whatif,
)
from .common import (
    default_title,
    filter_rows,
    finish_layout,
    fixed_parameters,
    legend_below,
    limit_scenarios,
    new_figure,
    panel_grid,
    panel_pairs,
    panel_title,
    rows_of,
    save_figure,
    scenario_title,
    size_axis,
    wrap_label,
)
from .slowdown import has_slowdown, plot_slowdown, slowdown_figure
from .style import TIE_COLOR, style_map, text_color_on, use_log_scale

KINDS = ("goodput", "time", "gain", "gain-curve", "slowdown")
#: a gain heatmap clips its colours at a percentile of |gain| from this many
#: cells on (one outlier in 20 left out at the 95th)
CLIP_MIN_CELLS = 20


def _labels(df: pd.DataFrame) -> pd.Series:
    return df["label"] if "label" in df.columns else df["algorithm"]


def _scenarios(df: pd.DataFrame, exclude=()) -> tuple[list[str], list[tuple]]:
    cols = [c for c in scenario_columns(df) if c != "nodes" and c not in exclude]
    keys = df[cols].drop_duplicates()
    if "nodes" in df.columns and "topology" in cols:   # bigger networks later, like the paper's panels
        keys = keys.merge(df[["topology", "nodes"]].drop_duplicates(), on="topology")
        keys = keys.sort_values(["nodes"] + cols, kind="stable").drop(columns="nodes")
    return cols, [tuple(r) for r in keys.itertuples(index=False)]


def _text_inches(lines: list[str], fontsize: float) -> float:
    """A generous width of the longest line in inches (DejaVu Sans averages
    ~0.6 em per character)."""
    return max((len(line) for line in lines), default=0) * 0.6 * fontsize / 72


#: what a line plot draws: (column, scale to display unit, axis label, tick formatter)
_METRICS = {
    "goodput": ("goodput_Bps", 8 / 1e9, "goodput (Gb/s)", lambda v, _: f"{v:g}"),
    "time": ("time_s", 1.0, "time", lambda v, _: format_time(v)),
}


def _value_axis(axes, values, label: str, formatter) -> bool:
    """Logarithmic value axis on every panel when ``values`` (all the
    figure's, so panels read alike) span more than two decades, else linear
    from 0. Returns whether it is logarithmic."""
    log = use_log_scale(values)
    for ax in axes:
        if log:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(formatter))
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_ylabel(f"{label}, log scale")
        else:
            ax.set_ylim(bottom=0)
            ax.yaxis.set_major_formatter(FuncFormatter(formatter))
            ax.set_ylabel(label)
    return log


def goodput_figure(df: pd.DataFrame, *, metric: str = "goodput", title: str | None = None,
                   group=None, topologies=None, where: str | None = None, ncols: int = 3,
                   max_panels: int = 24, relative: bool = False) -> Figure:
    """The figure of :func:`plot_goodput` (``metric="goodput"``) or
    :func:`plot_time` (``metric="time"``), not yet saved. ``relative`` (goodput
    only) adds under each panel one of :func:`relative_goodput`."""
    if metric not in _METRICS:
        raise ConfigError(f"metric: {metric!r} is not allowed; allowed: {', '.join(_METRICS)}")
    if relative and metric != "goodput":
        raise ConfigError(f"relative: goes with the goodput figure, not {metric}")
    column, scale, label, formatter = _METRICS[metric]
    df = filter_rows(df, group, topologies, where)
    title = title or default_title(df, metric)
    # the two models of one configuration share a panel: a flow line and a dashed
    # GenModel line per algorithm, so the panel shows where they part
    df, note = limit_scenarios(df, max_panels, keep=("model",))
    cols, scen = _scenarios(df, exclude=("model",))
    labels = sorted(_labels(df).astype(str).unique())
    styles = style_map(labels)   # no two labels of the figure alike
    models = _models(df)
    if relative:
        fig, axes, below = panel_pairs(len(scen), ncols)
    else:
        (fig, axes), below = panel_grid(len(scen), ncols), [None] * len(scen)
    handles, covering, switched_to, switched = {}, set(), set(), {}
    for ax, low, key in zip(axes, below, scen):
        sub = rows_of(df, cols, key)
        share = relative_goodput(sub) if relative else None
        drawn, equal = [], []    # this panel's flow lines; (label, the line it covers)
        for lab, model in ((lab, m) for lab in labels for m in models):
            s = sub[(_labels(sub).astype(str) == lab)
                    & (_model_of(sub) == model)].sort_values("size_bytes")
            if s.empty:
                continue
            style = styles[lab]
            x = s["size_bytes"].to_numpy(dtype=float)
            y = s[column].to_numpy(dtype=float) * scale
            name = lab if model == "flow" else f"{lab} · {model}"
            kwargs = style.line_kwargs() if model == "flow" else {
                "color": style.color, "linestyle": "--", "marker": "none"}
            markersize, under = 3.5, None
            if model == "flow":
                under, where_equal = _equal_line(drawn, x, y)
                drawn.append((lab, x, y))
            if under is not None:
                depth = sum(1 for _, u, _ in equal if u == under) + 1
                kwargs, markersize = _covering_look(style, depth)
                equal.append((lab, under, where_equal))
                entry = (f"{lab}, over an equal line (see the panel)" if depth == 1 else
                         f"{lab}, over {depth} equal lines (see the panel)")
                covering.add(entry)
                handles.setdefault(entry, _proxy(kwargs, markersize))
            ax.plot(x, y, markersize=markersize, linewidth=1.4, label=name, **kwargs)
            if low is not None:     # the same line, as a share of the best
                low.plot(x, share[s.index].to_numpy(), markersize=markersize, linewidth=1.4,
                         label=name, **kwargs)
            # the legend shows the algorithm's own look, drawn over an equal line or not
            handles.setdefault(name, _proxy(style.line_kwargs() if model == "flow" else kwargs,
                                            3.5))
            if "variant" in s.columns and model == "flow":
                var = s["variant"].to_numpy()
                switch = np.flatnonzero(var[1:] != var[:-1]) + 1
                if len(switch) and s["variant"].nunique() > 1:
                    ax.plot(x[switch], y[switch], **switch_halo(style.color))
                    if low is not None:
                        low.plot(x[switch], share[s.index].to_numpy()[switch],
                                 **switch_halo(style.color))
                    switched_to.update(str(v) for v in var[switch])
                    switched.setdefault(lab, style.color)
        if equal:
            ax.text(0.98, 0.03, "\n".join(f"{a} = {b}{w}" for a, b, w in equal),
                    transform=ax.transAxes, ha="right", va="bottom", fontsize=7,
                    bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none",
                          "pad": 1.5})
        size_axis(ax, sub["size_bytes"])
        ax.grid(True, which="major", alpha=0.3)
        panel_title(ax, scenario_title(pd.Series(dict(zip(cols, key))), cols), title,
                    len(scen))
        if low is not None:
            ax.set_xlabel("")           # the panel below says it, under its tick labels
            size_axis(low, sub["size_bytes"])
            _relative_axis(low)
    _value_axis(axes, df[column].to_numpy(dtype=float) * scale, label, formatter)
    # the algorithms first, then how a line over an equal one looks
    names = [n for n in handles if n not in covering] + [n for n in handles if n in covering]
    lines = [handles[n] for n in names]
    if switched_to:
        # the halo as drawn: one in the colour of each algorithm that switches
        lines.append(tuple(Line2D([], [], **switch_halo(c)) for c in switched.values()))
        names.append(switch_label(switched_to))
    legend_below(fig, lines, names, handler_map={tuple: HandlerTuple(ndivide=None, pad=0.2)})
    finish_layout(fig, title, note, fixed_parameters(df, shown=cols))
    return fig


def switch_label(variants) -> str:
    """The legend entry of the halo where an algorithm run as
    ``variant=auto`` (Swing's and recursive doubling's default) changes
    variant with the size: ``switch to bandwidth variant (auto)`` when every
    halo switches to one variant, else ``switch of variant (auto)``."""
    variants = sorted(set(variants))
    if len(variants) == 1:
        return f"switch to {variants[0]} variant (auto)"
    return "switch of variant (auto)"


#: the halo (a large translucent dot) where an ``auto`` algorithm switches
#: variant, and its legend entry (:func:`switch_halo`)
SWITCH_MARKER = {"marker": "o", "markersize": 8}
SWITCH_ALPHA = 0.6


def switch_halo(color) -> dict:
    """Plot keywords of the halo (a large translucent dot in the algorithm's
    colour) where an ``auto`` algorithm switches variant; its legend entry is
    drawn with the same keywords, a halo per algorithm that switches."""
    return {"linestyle": "none", "color": color, "alpha": SWITCH_ALPHA, **SWITCH_MARKER}


def relative_goodput(df: pd.DataFrame) -> pd.Series:
    """Each row's goodput in percent of the best goodput at its size (per
    model: a GenModel row is compared with GenModel rows), on the index of
    ``df``, which holds one scenario's rows: 100 for the fastest algorithm,
    87.5 for one that reaches 7/8 of its goodput."""
    good = df["goodput_Bps"].astype(float)
    best = good.groupby([_model_of(df), df["size_bytes"]]).transform("max")
    return 100.0 * good / best


#: the relative panel's y axis: 0 to a little over 100 %, so a line at 100 is not cut
_RELATIVE_TOP = 104.0


def _relative_axis(ax) -> None:
    """The y axis of a panel of :func:`relative_goodput`: linear, 0 to 100 %."""
    ax.set_ylim(0.0, _RELATIVE_TOP)
    ax.set_yticks([0, 25, 50, 75, 100])
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_ylabel("goodput, % of the\nbest at each size")
    ax.grid(True, which="major", alpha=0.3)


#: dash patterns of a line drawn over an equal one (depth 1, 2, ...): the
#: line beneath shows through the gaps
_COVERING_DASHES = ((0, (4, 3)), (0, (1.5, 2.5)), (0, (6, 2, 1.5, 2)))


def _equal_line(drawn: list, x: np.ndarray, y: np.ndarray) -> tuple[str | None, str]:
    """``(label, where)`` of the line in ``drawn`` that ``(x, y)`` would hide
    or be hidden by: equal values (within :data:`~flowemu.results.TIE_RTOL`)
    at every size, or at two sizes or more (the one equal at the most sizes,
    the first drawn on a tie). ``where`` is empty when they are equal at
    every size of the line, else the sizes (`` at 1MiB–1GiB``, or `` at 3
    of 8 sizes`` when they are not consecutive); ``(None, "")`` when no line
    is equal."""
    best, best_mask = None, None
    for lab, dx, dy in drawn:
        common, i, j = np.intersect1d(x, dx, return_indices=True)
        if not len(common):
            continue
        same = np.isclose(y[i], dy[j], rtol=TIE_RTOL, atol=0.0)
        mask = np.zeros(len(x), dtype=bool)
        mask[i[same]] = True
        if (mask.all() or mask.sum() >= 2) and (best is None or mask.sum() > best_mask.sum()):
            best, best_mask = lab, mask
    if best is None:
        return None, ""
    if best_mask.all():
        return best, ""
    idx = np.flatnonzero(best_mask)
    if idx[-1] - idx[0] + 1 == len(idx):
        return best, f" at {format_size(x[idx[0]])}–{format_size(x[idx[-1]])}"
    return best, f" at {len(idx)} of {len(x)} sizes"


def _covering_look(style, depth: int) -> tuple[dict, float]:
    """``(plot keywords, marker size)`` of a line drawn over ``depth`` equal
    ones: dashed, so the line beneath shows in the gaps, and hollow markers
    larger with each depth, so the markers beneath show inside them (both
    survive greyscale print, unlike colour alone)."""
    kwargs = {**style.marker_kwargs(), "fillstyle": "none", "markerfacecolor": "none",
              "markeredgewidth": 1.1,
              "linestyle": _COVERING_DASHES[(depth - 1) % len(_COVERING_DASHES)]}
    return kwargs, 3.5 + 3.0 * depth


def _proxy(kwargs: dict, markersize: float) -> Line2D:
    """A legend handle drawn like a line of the figure."""
    return Line2D([], [], linewidth=1.4, markersize=markersize, **kwargs)


def _model_of(df: pd.DataFrame) -> pd.Series:
    """The model of each row (``flow`` for rows written before models)."""
    if "model" not in df.columns:
        return pd.Series("flow", index=df.index)
    return df["model"].fillna("flow").astype(str)


def _models(df: pd.DataFrame) -> list[str]:
    """The models in ``df``, flow first (its lines are drawn under the dashed ones)."""
    return sorted(set(_model_of(df)), key=lambda m: (m != "flow", m))


def plot_goodput(df: pd.DataFrame, out, **kwargs) -> Path:
    """Goodput (Gb/s) vs vector size, one line per algorithm label, one panel
    per scenario. Where an algorithm run as ``variant=auto`` switches variant
    (latency-optimal for small vectors, bandwidth-optimal for large), a
    translucent halo in its colour marks the first size of the new variant
    (as in the paper's Fig. 6; the legend shows one such halo per algorithm
    that switches and says ``switch to bandwidth variant (auto)``). A line equal to one drawn before it in its panel (at
    every size, within :data:`~flowemu.results.TIE_RTOL`) is dashed with
    larger hollow markers, so the one beneath shows, and the panel names the
    pair (``ring = bucket``). The
    goodput axis is logarithmic when the values span more than two decades;
    on it goodputs a few percent apart lie together, so ``relative=True``
    adds under each panel one sharing its size axis with the same lines as a
    percentage of the best goodput at each size (:func:`relative_goodput`;
    linear, 0 to 100 %): the ranking at every size, as ``flowemu compare``
    and ``make demo``'s table give it. Rows of ``model`` genmodel (the analytic GenModel prediction) are drawn
    dashed, without markers, in their algorithm's colour, beside the flow
    line of the same configuration (legend ``label · genmodel``).
    With more than ``max_panels`` scenarios, swept fields other than the
    topology are fixed (see the title) — pick others with ``where``.
    Keywords: those of :func:`goodput_figure`."""
    return save_figure(goodput_figure(df, metric="goodput", **kwargs), out)


def plot_time(df: pd.DataFrame, out, **kwargs) -> Path:
    """Allreduce time vs vector size, like :func:`plot_goodput` (log axes
    when the times span more than two decades, which they do from bytes to
    hundreds of MiB)."""
    return save_figure(goodput_figure(df, metric="time", **kwargs), out)


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
    title = title or default_title(df, f"gain of {algorithm} over the best other" if algorithm
                                   else "best algorithm at each size")
    cols, scen = _scenarios(df)
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
    label_w = _text_inches([ln for lab in row_labels for ln in lab.split("\n")], 10)
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
        varying = [c for c in scenario_columns(df) if c not in ("topology", "nodes")
                   and df[c].nunique() > 1]
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
    title = title or default_title(df, f"gain of {algorithm} by {_column_name(by)}")
    cols, scen = _scenarios(df, exclude=(by,))
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


def plot(dataset, out, kind: str = "goodput", **kwargs) -> Path:
    """:func:`plot_goodput`, :func:`plot_time`, :func:`plot_gain`,
    :func:`plot_gain_curves` or :func:`~flowemu.study.figures.slowdown.plot_slowdown`
    (``kind`` goodput, time, gain, gain-curve, slowdown) of a dataset path or
    DataFrame."""
    if kind not in KINDS:
        raise ConfigError(f"kind: unknown kind {kind!r}{suggest(str(kind), KINDS)}; "
                          f"allowed: {', '.join(KINDS)}")
    df = dataset if isinstance(dataset, pd.DataFrame) else load(dataset)
    if df.empty:
        raise ConfigError(f"plot: {dataset} holds no results")
    draw, figure = {"goodput": (plot_goodput, goodput_figure), "time": (plot_time, goodput_figure),
                    "gain": (plot_gain, gain_figure),
                    "gain-curve": (plot_gain_curves, gain_curve_figure),
                    "slowdown": (plot_slowdown, slowdown_figure)}[kind]
    allowed = sorted(set(inspect.signature(figure).parameters) - {"df", "metric"})
    wrong = sorted(set(kwargs) - set(allowed))
    if wrong:
        raise ConfigError(f"plot: option(s) {', '.join(wrong)} not allowed with kind {kind!r}; "
                          f"allowed: {', '.join(allowed)}")
    return draw(df, out, **kwargs)


def figures(dataset, outdir=None) -> list[Path]:
    """Every standard figure of a dataset: ``goodput`` and ``gain`` PNGs, one
    pair per group when the dataset has several (``goodput-<group>.png``), in
    ``outdir`` (default ``DATASET/_figures``, which parquet readers of the
    dataset skip); and ``slowdown`` (largest size)
    where a group holds what-if rows beside healthy ones, whose goodput and
    gain figures then show the healthy network (the title says so)."""
    df = load(dataset)
    if df.empty:
        raise ConfigError(f"plot: {dataset} holds no results")
    if outdir is None:
        outdir = Path(dataset) / FIGURES_DIR
        old = Path(dataset) / "figures"   # where figures went before: parquet readers
        if old.is_dir() and not outdir.exists():   # of the dataset fail on a PNG there
            old.rename(outdir)   # (both there: the next sweep run joins them)
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    name = str(df["sweep"].iloc[0]) if "sweep" in df.columns else Path(dataset).name
    groups = sorted(df["group"].unique()) if "group" in df.columns else [None]
    written = []
    for g in groups:
        suffix = f"-{g}" if g is not None and len(groups) > 1 else ""
        sel = df[df["group"] == g] if g is not None else df
        title = f"{name}" + (f" / {g}" if suffix else "")
        whatifs = has_slowdown(sel)
        # goodput and gain of the healthy network; the what-ifs are in the slowdown figure
        base = sel[healthy_rows(with_whatif(sel))] if whatifs else sel
        base_title = f"{title} · healthy network" if whatifs else title
        written.append(plot_goodput(base, outdir / f"goodput{suffix}.png", title=base_title))
        written.append(plot_gain(base, outdir / f"gain{suffix}.png", title=base_title))
        if whatifs:
            try:
                written.append(plot_slowdown(sel, outdir / f"slowdown{suffix}.png",
                                             title=title))
            except ConfigError:   # what-ifs without a healthy twin (yet): no figure
                pass
    return written
