"""What every figure of a dataset shares: a figure on an Agg canvas, saving it
through the one output mechanism, the log2 size axis, panels, scenario
titles, the layout around the panels (title, legend, caption:
:func:`finish_layout`), and choosing the rows and scenarios to draw.

The figure modules (:mod:`.plots`, :mod:`.slowdown`, :mod:`.fit`) import
these; none of them imports another figure module.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display needed; figures below draw on an Agg canvas anyway

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.legend import Legend

from ...core.errors import ConfigError
from ...core.network import Network
from ...core.outputs import check_writable, write_atomic
from ...core.units import format_rate, format_size, format_time
from ...topology import canonical_spec
from ...whatif.conditions import CONDITIONS, HEALTHY
from ..results import SCENARIO_COLUMNS, WHATIF_SCENARIO, query, scenario_columns, with_whatif
from ..sweep.dataset import NETWORK_COLUMNS
from ..sweep.where import nothing_matched


def new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


#: the formats a figure is written in (its file's suffix; none: PNG)
FIGURE_FORMATS = tuple(sorted(FigureCanvasAgg.get_supported_filetypes()))


def figure_path(out) -> tuple[Path, str]:
    """``(path, format)`` of a figure to write to ``out``, checked before
    anything is drawn: a writable place, a format matplotlib writes."""
    path = check_writable(out, "out")
    fmt = path.suffix.lstrip(".").lower() or "png"
    if fmt not in FIGURE_FORMATS:
        raise ConfigError(f"out: {str(out)!r} is not a figure format flowemu writes; "
                          f"allowed suffixes: {', '.join('.' + f for f in FIGURE_FORMATS)}")
    return path, fmt


def save_figure(fig: Figure, out) -> Path:
    """Write the figure through the one output mechanism: the place checked,
    the file written whole or not at all."""
    out, fmt = figure_path(out)
    return write_atomic(out, "out", lambda fh: fig.savefig(fh, format=fmt,
                                                               bbox_inches="tight"))


#: at most this many distinct sizes get a tick each (at the sizes themselves)
FEW_SIZES = 8


def size_axis(ax, sizes) -> None:
    """A log2 vector-size axis. With at most :data:`FEW_SIZES` distinct sizes
    the ticks sit at the sizes drawn (a sparse sweep, 1KiB, 1MiB, 1GiB, or
    sizes that are no power of two); with more, at evenly spaced powers of
    two."""
    ax.set_xscale("log", base=2)
    values = sorted({float(v) for v in sizes})
    lo, hi = values[0], values[-1]
    k_lo, k_hi = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    if len(values) <= FEW_SIZES:
        major = values
    else:
        span = max(k_hi - k_lo, 1)
        step = max(1, math.ceil(span / 6))
        major = [2.0**k for k in range(k_lo, k_hi + 1, step)]
    ax.set_xticks(major, [format_size(v) for v in major])
    ax.set_xticks([2.0**k for k in range(k_lo, k_hi + 1)], minor=True)
    ax.set_xticklabels([], minor=True)
    ax.set_xlim(lo / 1.3, hi * 1.3)
    ax.set_xlabel("vector size")


def scenario_title(row: pd.Series, cols: list[str]) -> str:
    """The scenario's values as a reader says them, joined by `` · ``; a
    value said already is not said again (a group named after its
    collective: ``allreduce · fattree:k=16``, not ``allreduce · fattree:k=16
    · allreduce``)."""
    parts: list[str] = []
    for c in cols:
        text = parameter_text(c, row[c])
        if text not in parts:
            parts.append(text)
    return " · ".join(parts)


def scenario_keys(df: pd.DataFrame, exclude=(), only=None) -> tuple[list[str], list[tuple]]:
    """The scenario columns of ``df`` (or the columns ``only``) but ``nodes``
    and ``exclude``, and each distinct scenario as a tuple of them, smaller
    networks first."""
    cols = [c for c in (scenario_columns(df) if only is None else only)
            if c != "nodes" and c not in exclude]
    if not cols:   # one scenario (drop_duplicates of no column keeps every row)
        return cols, [()]
    keys = df[cols].drop_duplicates()
    if "nodes" in df.columns and "topology" in cols:   # bigger networks later, like the paper's panels
        keys = keys.merge(df[["topology", "nodes"]].drop_duplicates(), on="topology")
        keys = keys.sort_values(["nodes"] + cols, kind="stable").drop(columns="nodes")
    return cols, [tuple(r) for r in keys.itertuples(index=False)]


def text_inches(lines: list[str], fontsize: float) -> float:
    """A generous width of the longest line in inches (DejaVu Sans averages
    ~0.6 em per character)."""
    return max((len(line) for line in lines), default=0) * 0.6 * fontsize / 72


def parameter_text(col: str, v) -> str:
    """One configuration column's value as a reader says it, with its unit:
    ``64 nodes``, ``400Gb/s``, ``link latency 100ns``, ``gamma 0.02ns/B``,
    ``ECMP hash``, ``sync barrier``, ``allreduce``."""
    if col in ("nodes", "ranks"):
        return f"{v} {col}"
    if col == "bandwidth_Bps":
        return format_rate(v)
    if col in ("link_latency_s", "hop_latency_s"):
        return f"{col.split('_')[0]} latency {format_time(v)}"
    if col == "alpha_s":
        return f"alpha {format_time(v)}"
    if col.endswith("_s_per_B"):
        return f"{col[: -len('_s_per_B')].replace('_', ' ')} {format_time(v)}/B"
    if col == "incast_threshold":
        return f"incast threshold {v:g}" if isinstance(v, float) else f"incast threshold {v}"
    if col == "ecmp":
        return f"ECMP {v}"
    if col == "model":
        return f"{v} model"
    if col == "sync":
        return f"sync {v}"
    if col == "collective":
        return str(v)
    if col in ("seed", "placement"):
        return f"{col} {v}"
    if col == "fail_policy":
        return f"fail policy {v}"
    if col in ("topology", "group"):
        return str(v)
    if col == "job_set":   # (jobs[algorithm=ring size=... | algorithm=swing ...]: ring+swing)
        return "jobs " + "+".join(re.findall(r"algorithm=([^\s|\]]+)", str(v)))
    if col == "job":
        return f"job {v}"
    if col in _WHATIF_NONE:
        return f"{col} {v}" if v else _WHATIF_NONE[col]
    return f"{col}={v}"


#: a what-if column's empty value in a title
_WHATIF_NONE = {"fail": "no failures", "degrade": "no degradation", "slow": "no slow ranks",
                "background": "no background"}


def filter_rows(df: pd.DataFrame, group=None, topologies=None, where=None) -> pd.DataFrame:
    whole = df
    if where:
        df = query(df, where)
    if group is not None:
        if "group" not in df.columns or group not in set(df["group"]):
            known = sorted(set(df["group"])) if "group" in df.columns else []
            raise ConfigError(f"group: no group {group!r} in the data; groups: "
                              f"{', '.join(known) or '(none)'}")
        df = df[df["group"] == group]
    if isinstance(topologies, str):   # one topology, not its characters
        topologies = [topologies]
    elif topologies is not None:
        if not hasattr(topologies, "__iter__") or isinstance(topologies, (bytes, dict)):
            raise ConfigError(f"topologies: {topologies!r} is not allowed; expected a "
                              "topology spec or a list of them, e.g. ['torus:8x8']")
        topologies = [str(t) for t in topologies]
    if topologies:   # any spelling of a topology (hx2mesh:4x4 is hammingmesh:2x2,4x4)
        present = set(df["topology"])
        spelt = {t: t if t in present else canonical_spec(t) for t in topologies}
        topologies = list(spelt.values())
        missing = sorted(t for t, spec in spelt.items() if spec not in present)
        if missing:
            raise ConfigError(f"topologies: {', '.join(missing)} not in the data; topologies: "
                              f"{', '.join(sorted(set(df['topology'])))}")
        df = df[df["topology"].isin(topologies)]
    if df.empty:
        raise ConfigError("plot: no results to plot"
                          + (f" matching {where!r}{nothing_matched(whole, where)}"
                             if where else ""))
    return with_whatif(df)


#: the GenModel terms at the values that switch them off (gamma, delta: no
#: reduction cost; no incast)
_TERMS_OFF = {"gamma_s_per_B": 0.0, "delta_s_per_B": 0.0, "incast_threshold": math.inf,
              "incast_slope_s_per_B": 0.0}


def fixed_parameters(df: pd.DataFrame, shown=()) -> str:
    """Every configuration parameter with a single value in the rows drawn
    (bandwidth, latencies, ECMP mode, the what-if condition, ...), with its
    unit, joined by `` · ``: what tells two figures of one dataset apart
    when ``--where`` or the figure chose the rows. Columns in ``shown``
    (panel titles, axes) and the topology are left out; a healthy network is
    said once (``healthy network``), and so are the GenModel reduction and
    incast terms when all are off (``no reduction or incast cost``)."""
    parts, fixed = [], {}
    for c in SCENARIO_COLUMNS:
        if c not in df.columns or c in shown or c in ("group", "topology") \
                or c in WHATIF_SCENARIO:
            continue
        values = df[c].unique()
        if len(values) != 1 or pd.isna(values[0]):
            continue
        if c == "ranks" and "nodes" in df.columns and (df["nodes"] == values[0]).all():
            continue
        if c == "seed" and "ecmp" in df.columns and not (df["ecmp"] == "hash").any():
            continue   # (the seed of hashed routes: no other routing reads it)
        fixed[c] = values[0]
    # the GenModel reduction and incast terms all off (flowemu's default): one part
    terms_off = all(fixed.get(c) == off for c, off in _TERMS_OFF.items())
    for c, v in fixed.items():
        if terms_off and c in _TERMS_OFF:
            if c == next(iter(_TERMS_OFF)):
                parts.append("no reduction or incast cost")
            continue
        parts.append(parameter_text(c, v))
    conditions = [c for c in CONDITIONS if c in df.columns and c not in shown]
    if conditions and all(df[c].nunique(dropna=False) == 1 for c in conditions):
        value = {c: df[c].iloc[0] for c in conditions}
        if all(value[c] == HEALTHY[c] for c in conditions):
            # only when the conditions the panels show are healthy too
            drawn = [c for c in CONDITIONS if c in df.columns and c in shown]
            if all((df[c] == HEALTHY[c]).all() for c in drawn):
                parts.append("healthy network")
        else:
            parts += [parameter_text(c, value[c]) for c in conditions
                      if value[c] != HEALTHY[c]]
            if value.get("fail") and "fail_policy" in df.columns \
                    and df["fail_policy"].nunique(dropna=False) == 1:
                parts.append(parameter_text("fail_policy", df["fail_policy"].iloc[0]))
    return " · ".join(parts)


#: flowemu's defaults (the Swing paper's network), in dataset columns
BASELINE = {**{col: float(getattr(Network(), f)) for f, col in NETWORK_COLUMNS.items()},
             "ecmp": "split", "seed": 0, "placement": "linear", "model": "flow",
             # a what-if study's goodput and gain figures show the healthy network
             **{c: HEALTHY[c] for c in WHATIF_SCENARIO}}


def limit_scenarios(df: pd.DataFrame, limit: int, keep=()) -> tuple[pd.DataFrame, str]:
    """Fix swept fields other than the topology and ``keep`` (most values
    first; at the paper's network defaults when swept, else the middle value)
    until at most ``limit`` scenarios remain. Returns the rows and a note on
    what was fixed."""
    fixed = []
    while True:
        scenario = [c for c in scenario_columns(df) if c not in keep]
        cols = [c for c in scenario if c not in ("group", "topology", "nodes")]
        if len(df[scenario].drop_duplicates()) <= limit or not cols:
            break
        col = max(cols, key=lambda c: df[c].nunique())
        values = sorted(df[col].unique())
        base = BASELINE.get(col)
        value = base if base in values else values[len(values) // 2]
        df = df[df[col] == value]
        fixed.append(scenario_title(pd.Series({col: value}), [col]))
    note = f"(at {', '.join(fixed)}; choose others with --where)" if fixed else ""
    return df, note


def panel_grid(n: int, ncols: int, width: float = 4.6, height: float = 3.4,
                extra_height: float = 0.5):
    """A figure of ``n`` panels, ``ncols`` to a row, each ``width`` x
    ``height`` inches with its tick and axis labels, plus ``extra_height``
    for the title (:func:`finish_layout` adds the legend's and caption's)."""
    nc = min(ncols, n)
    nr = math.ceil(n / nc)
    fig = new_figure(width * nc + 0.4, height * nr + extra_height)
    axes = np.atleast_1d(fig.subplots(nr, nc, squeeze=False)).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def panel_pairs(n: int, ncols: int, width: float = 4.6, height: float = 3.0,
                below: float = 2.2, extra_height: float = 0.5):
    """Like :func:`panel_grid`, but each of the ``n`` panels has a second one
    under it (``below`` inches high) sharing its x axis, whose tick and axis
    labels it carries; the upper panel's are hidden. Returns the figure,
    the upper panels and the lower ones."""
    nc = min(ncols, n)
    nr = math.ceil(n / nc)
    fig = new_figure(width * nc + 0.4, (height + below) * nr + extra_height)
    grid = fig.add_gridspec(2 * nr, nc, height_ratios=[height, below] * nr)
    upper, lower = [], []
    for i in range(nr * nc):
        row, col = divmod(i, nc)
        top = fig.add_subplot(grid[2 * row, col])
        bottom = fig.add_subplot(grid[2 * row + 1, col], sharex=top)
        top.tick_params(axis="x", which="both", labelbottom=False)
        if i >= n:
            top.set_visible(False)
            bottom.set_visible(False)
        upper.append(top)
        lower.append(bottom)
    return fig, upper[:n], lower[:n]


def rows_of(df: pd.DataFrame, cols: list[str], key: tuple) -> pd.DataFrame:
    sub = df
    for c, v in zip(cols, key):
        sub = sub[sub[c] == v]
    return sub


def legend_below(fig: Figure, handles: list, labels: list[str], *, ncol: int | None = None,
                 max_ncol: int | None = None, **kw) -> Legend | None:
    """The figure's legend, to go below the axes in as many columns as fit the
    figure's width (measured, not guessed from character counts; at most
    ``max_ncol``), or in ``ncol`` columns. :func:`finish_layout` puts it in
    place, under the axes and above the caption; until then it is anchored
    at the figure's bottom edge, outside the constrained layout."""
    kw = {"frameon": False, "fontsize": 9, **kw}
    renderer = fig.canvas.get_renderer()
    room = fig.get_figwidth() * fig.dpi - 2 * _PAD_INCHES * fig.dpi
    tries = [ncol] if ncol else range(min(len(labels), max_ncol or len(labels)), 0, -1)
    for n in tries:
        legend = fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.0),
                            bbox_transform=fig.transFigure, borderaxespad=0.0,
                            ncol=max(n, 1), **kw)
        legend.set_gid(LEGEND_GID)
        if n == tries[-1] or legend.get_window_extent(renderer).width <= room:
            return legend
        legend.remove()
    return None


#: gid of the legend of :func:`legend_below` and of the caption of :func:`finish_layout`
LEGEND_GID = "flowemu-legend"
CAPTION_GID = "flowemu-caption"

#: type size (points) of a figure's title and of its caption (the fixed parameters)
TITLE_FONTSIZE = 11
CAPTION_FONTSIZE = 7.5

#: space (inches) between the figure's edge, the caption, the legend and the axes
_PAD_INCHES = 0.08


#: the longest line of a heatmap row label; a longer one wraps after a comma
LABEL_WRAP_CHARS = 40


#: the longest line of a panel title (a panel is 4.6 inches wide, 10 pt text)
PANEL_TITLE_CHARS = 45


def wrap_label(text: str, width: int = LABEL_WRAP_CHARS) -> str:
    """``text`` on lines of at most ``width`` characters, broken after a
    ``,``, a ``/`` or a `` · `` (a topology spec, a path, the parts of a
    scenario title: a line ends with the separator, none starts with one);
    a piece longer than ``width`` stays whole."""
    # (not inside a rate's unit: Gb/s, GB/s)
    pieces = [p for p in re.split(r"(?<=,)|(?<=/)(?!s\b)|(?<= · )", text) if p]
    lines, cur = [], ""
    for piece in pieces:
        if cur and len(cur.rstrip()) + len(piece.rstrip()) > width:
            lines.append(cur.rstrip())
            cur = piece
        else:
            cur += piece
    lines.append(cur.rstrip())
    return "\n".join(lines)


def default_title(df: pd.DataFrame, what: str) -> str:
    """A figure's title when none is given: ``what`` it shows, after the
    collective when the rows drawn have one (``allreduce goodput``)."""
    if "collective" in df.columns:
        values = df["collective"].dropna().unique()
        if len(values) == 1:
            return f"{values[0]} {what}"
    return what


def titled(df: pd.DataFrame, title: str | None, what: str) -> str:
    """The title of a figure whose cells or lines need ``what`` to be read
    (whose gain over whom): :func:`default_title` without ``title``, else
    ``title`` followed by ``what`` unless it says it already."""
    if not title:
        return default_title(df, what)
    return title if what in title else f"{title} · {what}"


def panel_title(ax, text: str, title: str | None, panels: int) -> None:
    """Title a panel with its scenario ``text`` (wrapped), unless the figure
    has this one panel and its ``title`` already says it (``allreduce
    goodput on torus:16x16`` over a panel ``torus:16x16``)."""
    if text and not (panels == 1 and title and text in title):
        ax.set_title(wrap_label(text, PANEL_TITLE_CHARS), fontsize=10)


def _text_width(fig: Figure, text: str, fontsize: float) -> float:
    """Width of ``text`` in inches at ``fontsize`` points."""
    renderer = fig.canvas.get_renderer()
    width, _, _ = renderer.get_text_width_height_descent(
        text, FontProperties(size=fontsize), ismath=False)
    return width / renderer.points_to_pixels(72.0)


def _wrap_parts(fig: Figure, parts: list[str], fontsize: float, sep: str = " · ") -> list[str]:
    """``parts`` joined by ``sep`` on lines as wide as the figure, whole parts
    to a line (400Gb/s never breaks at its /)."""
    room = fig.get_figwidth() - 2 * _PAD_INCHES
    lines: list[str] = []
    for part in parts:
        if lines and _text_width(fig, lines[-1] + sep + part, fontsize) <= room:
            lines[-1] += sep + part
        else:
            lines.append(part)
    return lines


def finish_layout(fig: Figure, title: str | None, note: str = "", fixed: str = "") -> None:
    """Lay out what surrounds the panels, so that they keep most of the figure:

    - the title on top: ``title``, then ``note`` (what the figure fixed to
      limit its panels), each on one line where the width allows;
    - the legend of :func:`legend_below`, under the panels in columns;
    - a caption in small type under it: the parameters fixed in the rows
      drawn (:func:`fixed_parameters`; parts the title says left out), so two
      ``--where`` choices of one dataset never look alike, without a title of
      six lines squeezing the panels.

    The figure grows by the height of the legend and caption (measured), and
    the constrained layout places title and panels in the rest."""
    parts = [p for p in fixed.split(" · ") if p and not (title and p in title)]
    heading = [line for text in (title, note) if text
               for line in _wrap_parts(fig, text.split(" "), TITLE_FONTSIZE, sep=" ")]
    if heading:
        fig.suptitle("\n".join(heading), fontsize=TITLE_FONTSIZE)
    caption = None
    if parts:
        caption = fig.text(0.5, 0.0, "\n".join(_wrap_parts(fig, parts, CAPTION_FONTSIZE)),
                           ha="center", va="bottom", fontsize=CAPTION_FONTSIZE,
                           color="#444444", gid=CAPTION_GID)
    legends = [leg for leg in fig.legends if leg.get_gid() == LEGEND_GID]
    if caption is None and not legends:
        return
    renderer = fig.canvas.get_renderer()
    dpi = fig.dpi
    # bottom up: pad, caption, pad, legend, pad; then the panels
    heights = [(a, a.get_window_extent(renderer).height / dpi)
               for a in ([caption] if caption is not None else []) + legends]
    strip = _PAD_INCHES + sum(h + _PAD_INCHES for _, h in heights)
    width, height = fig.get_size_inches()
    total = height + strip
    fig.set_size_inches(width, total)
    y = _PAD_INCHES
    for artist, h in heights:
        if artist is caption:
            artist.set_y(y / total)
        else:
            artist.set_bbox_to_anchor((0.5, y / total), transform=fig.transFigure)
        y += h + _PAD_INCHES
    fig.get_layout_engine().set(rect=(0.0, strip / total, 1.0, 1.0 - strip / total))


def caption_text(fig: Figure) -> str:
    """The caption :func:`finish_layout` wrote (``""`` without one)."""
    return next((t.get_text() for t in fig.texts if t.get_gid() == CAPTION_GID), "")
