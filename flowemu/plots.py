"""Figures of a sweep dataset (matplotlib, Agg canvas; no pyplot state).

- :func:`plot_goodput`: goodput vs vector size, one line per algorithm, one
  panel per scenario (topology, plus any other swept field such as the
  bandwidth) — like the Swing paper's Fig. 6, 10 and 11.
- :func:`plot_gain`: a heatmap of goodput gain (size × scenario) — like its
  Fig. 7 and 8 — for one algorithm over the best other (default: Swing when
  present), or, without one, the best algorithm's margin over the runner-up.
- :func:`figures`: every standard figure of a dataset (per group).
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display needed; figures below draw on an Agg canvas anyway

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import BoundaryNorm, ListedColormap, TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .errors import ConfigError
from .network import Network
from .results import _NETWORK_COLUMNS, compare, load, query, scenario_columns
from .units import format_rate, format_size, format_time

KINDS = ("goodput", "gain")
_MARKERS = "os^vD<>phX*"


def _new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, out) -> Path:
    out = Path(out)
    if not out.parent.is_dir():
        raise ConfigError(f"--out: directory {str(out.parent)!r} does not exist")
    fig.savefig(out, format=out.suffix.lstrip(".").lower() or "png", bbox_inches="tight")
    return out


def _size_axis(ax, sizes) -> None:
    ax.set_xscale("log", base=2)
    lo, hi = float(min(sizes)), float(max(sizes))
    k_lo, k_hi = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    span = max(k_hi - k_lo, 1)
    step = max(1, math.ceil(span / 6))
    major = [2.0**k for k in range(k_lo, k_hi + 1, step)]
    ax.set_xticks(major, [format_size(v) for v in major])
    ax.set_xticks([2.0**k for k in range(k_lo, k_hi + 1)], minor=True)
    ax.set_xticklabels([], minor=True)
    ax.set_xlim(lo / 1.3, hi * 1.3)
    ax.set_xlabel("vector size")


def _scenario_title(row: pd.Series, cols: list[str]) -> str:
    parts = []
    for c in cols:
        v = row[c]
        if c == "nodes":
            parts.append(f"{v} nodes")
        elif c == "bandwidth_Bps":
            parts.append(format_rate(v))
        elif c in ("link_latency_s", "hop_latency_s", "alpha_s"):
            parts.append(f"{c.split('_')[0]} {format_time(v)}")
        elif c in ("topology", "group"):
            parts.append(str(v))
        else:
            parts.append(f"{c}={v}")
    return " · ".join(parts)


def _labels(df: pd.DataFrame) -> pd.Series:
    return df["label"] if "label" in df.columns else df["algorithm"]


def _filter(df: pd.DataFrame, group=None, topologies=None, where=None) -> pd.DataFrame:
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
        raise ConfigError("plot: no results to plot")
    return df


#: flowemu's defaults (the Swing paper's network), in dataset columns
_BASELINE = {**{col: float(getattr(Network(), f)) for f, col in _NETWORK_COLUMNS.items()},
             "ecmp": "split", "seed": 0}


def _limit_scenarios(df: pd.DataFrame, limit: int) -> tuple[pd.DataFrame, str]:
    """Fix swept fields other than the topology (most values first; at the
    paper's network defaults when swept, else the middle value) until at most
    ``limit`` scenarios remain. Returns the rows and a note on what was fixed."""
    fixed = []
    while True:
        scenario = scenario_columns(df)
        cols = [c for c in scenario if c not in ("group", "topology", "nodes")]
        if len(df[scenario].drop_duplicates()) <= limit or not cols:
            break
        col = max(cols, key=lambda c: df[c].nunique())
        values = sorted(df[col].unique())
        base = _BASELINE.get(col)
        value = base if base in values else values[len(values) // 2]
        df = df[df[col] == value]
        fixed.append(_scenario_title(pd.Series({col: value}), [col]))
    note = f"(at {', '.join(fixed)}; choose others with --where)" if fixed else ""
    return df, note


def _scenarios(df: pd.DataFrame) -> tuple[list[str], list[tuple]]:
    cols = [c for c in scenario_columns(df) if c != "nodes"]
    keys = df[cols].drop_duplicates()
    if "nodes" in df.columns and "topology" in cols:   # bigger networks later, like the paper's panels
        keys = keys.merge(df[["topology", "nodes"]].drop_duplicates(), on="topology")
        keys = keys.sort_values(["nodes"] + cols, kind="stable").drop(columns="nodes")
    return cols, [tuple(r) for r in keys.itertuples(index=False)]


def plot_goodput(df: pd.DataFrame, out, *, title: str | None = None, group=None,
                 topologies=None, where: str | None = None, ncols: int = 3,
                 max_panels: int = 24) -> Path:
    """Goodput (Gb/s) vs vector size, one line per algorithm label, one panel
    per scenario. Where an ``auto`` algorithm switches variant, a large dot
    marks the first size of the new variant (as in the paper's Fig. 6). With
    more than ``max_panels`` scenarios, swept fields other than the topology
    are fixed (see the title) — pick others with ``where``."""
    df = _filter(df, group, topologies, where)
    df, note = _limit_scenarios(df, max_panels)
    cols, scen = _scenarios(df)
    labels = sorted(_labels(df).unique())
    colors = matplotlib.colormaps["tab10"].colors
    style = {lab: (colors[i % len(colors)], _MARKERS[i % len(_MARKERS)])
             for i, lab in enumerate(labels)}
    n = len(scen)
    nc = min(ncols, n)
    nr = math.ceil(n / nc)
    fig = _new_figure(4.6 * nc + 0.4, 3.4 * nr + 0.9)
    axes = np.atleast_1d(fig.subplots(nr, nc, squeeze=False)).ravel()
    handles = {}
    for ax, key in zip(axes, scen):
        sub = df
        for c, v in zip(cols, key):
            sub = sub[sub[c] == v]
        for lab in labels:
            s = sub[_labels(sub) == lab].sort_values("size_bytes")
            if s.empty:
                continue
            color, marker = style[lab]
            (line,) = ax.plot(s["size_bytes"], s["goodput_Bps"] * 8 / 1e9, color=color,
                              marker=marker, markersize=3.5, linewidth=1.4, label=lab)
            handles.setdefault(lab, line)
            if "variant" in s.columns:
                var = s["variant"].to_numpy()
                switch = np.flatnonzero(var[1:] != var[:-1]) + 1
                if len(switch) and s["variant"].nunique() > 1:
                    ax.plot(s["size_bytes"].iloc[switch], s["goodput_Bps"].iloc[switch] * 8 / 1e9,
                            "o", color=color, markersize=8, alpha=0.6)
        _size_axis(ax, sub["size_bytes"])
        ax.set_ylabel("goodput (Gb/s)")
        ax.set_ylim(bottom=0)
        ax.grid(True, which="major", alpha=0.3)
        ax.set_title(_scenario_title(pd.Series(dict(zip(cols, key))), cols), fontsize=10)
    for ax in axes[n:]:
        ax.set_visible(False)
    longest = max((len(lab) for lab in handles), default=1)
    per_row = max(1, int(fig.get_figwidth() / (0.075 * longest + 0.6)))
    fig.legend(list(handles.values()), list(handles), loc="outside lower center",
               ncol=min(len(handles), per_row), frameon=False, fontsize=9)
    if title or note:
        fig.suptitle("\n".join(t for t in (title, note) if t), fontsize=11)
    return _save(fig, out)


def plot_gain(df: pd.DataFrame, out, *, algorithm: str | None = None, title: str | None = None,
              group=None, topologies=None, where: str | None = None,
              max_rows: int = 60) -> Path:
    """Heatmap of goodput gain, sizes across, scenarios down.

    With ``algorithm`` (a label; default ``swing`` when present): its gain over
    the best other algorithm, diverging colors centered on 0, cells annotated
    in percent. Without: the best algorithm's gain over the runner-up, cells
    annotated with the best algorithm's letter.
    """
    df = _filter(df, group, topologies, where)
    df, note = _limit_scenarios(df, max_rows)
    cmp = compare(df)
    labels = sorted(cmp["algorithm"].unique())
    if algorithm is None:
        swing = [lab for lab in labels if lab.split(":")[0] == "swing"]
        algorithm = "swing" if "swing" in labels else (swing[0] if swing else None)
    elif algorithm not in labels:
        raise ConfigError(f"--algorithm: {algorithm!r} is not in the data; algorithms: "
                          f"{', '.join(labels)}")
    cols, scen = _scenarios(df)
    sizes = np.sort(cmp["size_bytes"].unique())
    pick = cmp[cmp["algorithm"] == algorithm] if algorithm else cmp[cmp["is_best"]]
    gain = np.full((len(scen), len(sizes)), np.nan)
    winner = np.full(gain.shape, np.nan)
    index = {k: i for i, k in enumerate(scen)}
    col_of = {s: j for j, s in enumerate(sizes)}
    lab_of = {lab: k for k, lab in enumerate(labels)}
    for r in pick.to_dict("records"):
        i = index.get(tuple(r[c] for c in cols))
        if i is None:
            continue
        j = col_of[r["size_bytes"]]
        gain[i, j] = 100.0 * r["gain"] if np.isfinite(r["gain"]) else np.nan
        winner[i, j] = lab_of[r["algorithm"]]
    fig = _new_figure(max(6.5, 0.45 * len(sizes) + 4.0), max(2.8, 0.42 * len(scen) + 2.0))
    ax = fig.subplots()
    if algorithm:
        finite = gain[np.isfinite(gain)]
        lim = max(float(np.abs(finite).max()) if finite.size else 1.0, 1.0)
        im = ax.imshow(gain, aspect="auto", cmap="RdBu", interpolation="nearest",
                       norm=TwoSlopeNorm(vcenter=0.0, vmin=-lim, vmax=lim))
        fig.colorbar(im, ax=ax, label=f"gain of {algorithm} over the best other (%)",
                     shrink=0.9)
    else:
        # which algorithm wins (color) and by how much over the runner-up (text)
        colors = matplotlib.colormaps["tab10"].colors
        cmap = ListedColormap([colors[k % len(colors)] for k in range(len(labels))])
        norm = BoundaryNorm(np.arange(len(labels) + 1) - 0.5, len(labels))
        ax.imshow(winner, aspect="auto", cmap=cmap, norm=norm, alpha=0.55,
                  interpolation="nearest")
        used = sorted({int(w) for w in winner[np.isfinite(winner)]})
        fig.legend([Patch(color=colors[k % len(colors)], alpha=0.55) for k in used],
                   [labels[k] for k in used], loc="outside lower center", frameon=False,
                   ncol=min(len(used), 4), fontsize=9,
                   title="best algorithm (cell: its gain over the runner-up, %)",
                   title_fontsize=9)
    if len(sizes) * len(scen) <= 1500:
        for i in range(len(scen)):
            for j in range(len(sizes)):
                if np.isfinite(gain[i, j]):
                    ax.text(j, i, f"{gain[i, j]:.0f}", ha="center", va="center", fontsize=7)
    step = max(1, math.ceil(len(sizes) / 14))
    ax.set_xticks(range(0, len(sizes), step), [format_size(s) for s in sizes[::step]],
                  rotation=45, ha="right")
    ax.set_yticks(range(len(scen)), [_scenario_title(pd.Series(dict(zip(cols, k))), cols)
                                     for k in scen])
    ax.set_xlabel("vector size")
    if title or note:
        fig.suptitle("\n".join(t for t in (title, note) if t), fontsize=11)
    return _save(fig, out)


def plot(dataset, out, kind: str = "goodput", **kwargs) -> Path:
    """:func:`plot_goodput` or :func:`plot_gain` of a dataset path or DataFrame."""
    if kind not in KINDS:
        raise ConfigError(f"--kind: unknown kind {kind!r}; allowed: {', '.join(KINDS)}")
    df = dataset if isinstance(dataset, pd.DataFrame) else load(dataset)
    if df.empty:
        raise ConfigError(f"plot: {dataset} holds no results")
    return (plot_goodput if kind == "goodput" else plot_gain)(df, out, **kwargs)


def figures(dataset, outdir=None) -> list[Path]:
    """Every standard figure of a dataset: ``goodput`` and ``gain`` PNGs, one
    pair per group when the dataset has several (``goodput-<group>.png``), in
    ``outdir`` (default ``DATASET/figures``)."""
    df = load(dataset)
    if df.empty:
        raise ConfigError(f"plot: {dataset} holds no results")
    outdir = Path(outdir) if outdir is not None else Path(dataset) / "figures"
    outdir.mkdir(parents=True, exist_ok=True)
    name = str(df["sweep"].iloc[0]) if "sweep" in df.columns else Path(dataset).name
    groups = sorted(df["group"].unique()) if "group" in df.columns else [None]
    written = []
    for g in groups:
        suffix = f"-{g}" if g is not None and len(groups) > 1 else ""
        sel = df[df["group"] == g] if g is not None else df
        title = f"{name}" + (f" / {g}" if suffix else "")
        written.append(plot_goodput(sel, outdir / f"goodput{suffix}.png", title=title))
        written.append(plot_gain(sel, outdir / f"gain{suffix}.png", title=title))
    return written
