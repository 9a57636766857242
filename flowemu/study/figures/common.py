"""What every figure of a dataset shares: a figure on an Agg canvas, saving it
through the one output mechanism, the log2 size axis, panels, scenario
titles, legends, and choosing the rows and scenarios to draw.

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

from ...core.errors import ConfigError
from ...core.network import Network
from ...core.outputs import check_writable, write_atomic
from ...core.units import format_rate, format_size, format_time
from ...whatif.conditions import CONDITIONS, HEALTHY
from ..results import SCENARIO_COLUMNS, WHATIF_SCENARIO, query, scenario_columns, with_whatif
from ..sweep.dataset import NETWORK_COLUMNS
from ..sweep.where import unit_hint


def new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig: Figure, out) -> Path:
    """Write the figure through the one output mechanism: the place checked,
    the file written whole or not at all."""
    out = check_writable(out, "--out")
    fmt = out.suffix.lstrip(".").lower() or "png"
    return write_atomic(out, "--out", lambda fh: fig.savefig(fh, format=fmt,
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
    return " · ".join(parameter_text(c, row[c]) for c in cols)


def parameter_text(col: str, v) -> str:
    """One configuration column's value as a reader says it, with its unit:
    ``64 nodes``, ``400Gb/s``, ``link latency 100ns``, ``gamma 0.02ns/B``,
    ``ECMP hash``."""
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
    if col in ("seed", "placement"):
        return f"{col} {v}"
    if col == "fail_policy":
        return f"fail policy {v}"
    if col in ("topology", "group"):
        return str(v)
    if col in _WHATIF_NONE:
        return f"{col} {v}" if v else _WHATIF_NONE[col]
    return f"{col}={v}"


#: a what-if column's empty value in a title
_WHATIF_NONE = {"fail": "no failures", "degrade": "no degradation", "slow": "no slow ranks",
                "background": "no background"}


def filter_rows(df: pd.DataFrame, group=None, topologies=None, where=None) -> pd.DataFrame:
    if where:
        df = query(df, where)
    if group is not None:
        if "group" not in df.columns or group not in set(df["group"]):
            known = sorted(set(df["group"])) if "group" in df.columns else []
            raise ConfigError(f"--group: no group {group!r} in the data; groups: "
                              f"{', '.join(known) or '(none)'}")
        df = df[df["group"] == group]
    if topologies:
        missing = sorted(set(topologies) - set(df["topology"]))
        if missing:
            raise ConfigError(f"--topology: {', '.join(missing)} not in the data; topologies: "
                              f"{', '.join(sorted(set(df['topology'])))}")
        df = df[df["topology"].isin(topologies)]
    if df.empty:
        raise ConfigError("plot: no results to plot"
                          + (f" matching {where!r}{unit_hint(where)}" if where else ""))
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
                extra_height: float = 0.9):
    nc = min(ncols, n)
    nr = math.ceil(n / nc)
    fig = new_figure(width * nc + 0.4, height * nr + extra_height)
    axes = np.atleast_1d(fig.subplots(nr, nc, squeeze=False)).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def rows_of(df: pd.DataFrame, cols: list[str], key: tuple) -> pd.DataFrame:
    sub = df
    for c, v in zip(cols, key):
        sub = sub[sub[c] == v]
    return sub


def legend_below(fig: Figure, handles: list, labels: list[str], **kw) -> None:
    longest = max((len(lab) for lab in labels), default=1)
    per_row = max(1, int(fig.get_figwidth() / (0.075 * longest + 0.6)))
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), per_row),
               frameon=False, fontsize=9, **kw)


#: the longest line of a heatmap row label; a longer one wraps after a comma
LABEL_WRAP_CHARS = 40


#: the longest line of a panel title (a panel is 4.6 inches wide, 10 pt text)
PANEL_TITLE_CHARS = 45


def wrap_label(text: str, width: int = LABEL_WRAP_CHARS) -> str:
    """``text`` on lines of at most ``width`` characters, broken after a
    ``,``, a ``/`` or before a `` · `` (a topology spec, a path, the parts
    of a scenario title); a piece longer than ``width`` stays whole."""
    pieces = [p for p in re.split(r"(?<=[,/])|(?= · )", text) if p]
    lines, cur = [], ""
    for piece in pieces:
        if cur and len(cur) + len(piece) > width:
            lines.append(cur)
            cur = piece.lstrip()
        else:
            cur += piece
    lines.append(cur)
    return "\n".join(lines)


def suptitle(fig: Figure, title: str | None, note: str, fixed: str = "") -> None:
    """The figure's title: ``title``, then the parameters fixed in the rows
    drawn (:func:`fixed_parameters`, wrapped to the figure's width; parts
    the title already says left out), then ``note``."""
    if fixed:
        parts = [p for p in fixed.split(" · ") if not title or p not in title]
        width = max(40, int(fig.get_figwidth() * 72 / (0.6 * 11)))
        lines = []
        for part in parts:       # whole parts to a line: 400Gb/s never breaks at its /
            if lines and len(lines[-1]) + 3 + len(part) <= width:
                lines[-1] += " · " + part
            else:
                lines.append(part)
        fixed = "\n".join(lines)
    lines = [t for t in (title, fixed, note) if t]
    if lines:
        fig.suptitle("\n".join(lines), fontsize=11)
