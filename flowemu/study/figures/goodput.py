"""The goodput and time figures of a sweep dataset: :func:`plot_goodput`
and :func:`plot_time` (goodput or time vs vector size, one line per
algorithm, one panel per scenario, like the Swing paper's Fig. 6, 10 and
11), with the relative panels of ``relative=True``
(:func:`relative_goodput`) and how equal lines stay visible
(:mod:`flowemu.study.figures.equal`). The dispatcher is :mod:`flowemu.study.figures.plots`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.legend_handler import HandlerTuple
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullFormatter

from ...core import checks
from ...core.errors import ConfigError
from ...core.units import format_size, format_time
from .common import (
    filter_rows,
    finish_layout,
    fixed_parameters,
    legend_below,
    limit_scenarios,
    panel_grid,
    panel_pairs,
    panel_title,
    rows_of,
    save_figure,
    scenario_keys,
    scenario_title,
    size_axis,
    titled,
)
from .equal import covering_entry, covering_look, equal_line, note_equal
from .style import style_map, use_log_scale


def _labels(df: pd.DataFrame) -> pd.Series:
    return df["label"] if "label" in df.columns else df["algorithm"]



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
    relative = checks.flag("relative", relative)
    if relative and metric != "goodput":
        raise ConfigError(f"relative: goes with the goodput figure, not {metric}")
    column, scale, label, formatter = _METRICS[metric]
    df = filter_rows(df, group, topologies, where)
    title = titled(df, title, metric)
    # the two models of one configuration share a panel: a flow line and a dashed
    # GenModel line per algorithm, so the panel shows where they part
    df, note = limit_scenarios(df, max_panels, keep=("model",))
    cols, scen = scenario_keys(df, exclude=("model",))
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
                under, where_equal = equal_line(drawn, x, y, format_size)
                drawn.append((lab, x, y))
            if under is not None:
                depth = sum(1 for _, u, _ in equal if u == under) + 1
                kwargs, markersize = covering_look(style, depth)
                equal.append((lab, under, where_equal))
                entry = covering_entry(lab, depth)
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
        note_equal(ax, equal)
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
