"""Figures of a sweep dataset (matplotlib, Agg canvas; no pyplot state):
:func:`plot` draws one kind, :func:`figures` the standard set. The kinds:

- :func:`~flowemu.study.figures.goodput.plot_goodput` (and ``plot_time``),
  in :mod:`flowemu.study.figures.goodput`: goodput (time) vs vector
  size, one line per algorithm, one panel per scenario (topology, plus any
  other swept field such as the bandwidth) — like the Swing paper's Fig. 6,
  10 and 11. The size axis is log2; the value axis is logarithmic when the
  plotted values span more than two decades (:func:`~flowemu.study.figures.style.use_log_scale`).
  With ``relative=True`` each panel has a second one under it: every
  algorithm's goodput in percent of the best at each size
  (``relative_goodput``, linear axis), where goodputs a log axis puts
  together (700 and 800 Gb/s) are ranked at every size.
- :func:`~flowemu.study.figures.gain.plot_gain` (in
  :mod:`flowemu.study.figures.gain`): a heatmap of goodput gain (size ×
  scenario) — like its Fig. 7 and 8 — for one algorithm over the best other (default: Swing when
  present), or, without one, the best algorithm and its margin over the
  runner-up. Ties (:data:`~flowemu.results.TIE_RTOL`) are grey and marked "=".
- :func:`~flowemu.study.figures.gain.plot_gain_curves`: one algorithm's gain
  over the best other vs size, one line per value of a configuration column (e.g. the per-message
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
import os
from pathlib import Path

import pandas as pd

from ...core.errors import ConfigError, show, suggest
from ..results import (
    FIGURES_DIR,
    healthy_rows,
    load,
    result_frame,
    with_twins,
    with_whatif,
)
from ..rows import with_labels
from ..sweep.dataset import check_output
from .common import figure_path
from .gain import gain_curve_figure, gain_figure, plot_gain, plot_gain_curves
from .goodput import goodput_figure, plot_goodput, plot_time
from .slowdown import has_slowdown, plot_slowdown, slowdown_figure

__all__ = ["KINDS", "figures", "gain_curve_figure", "gain_figure", "goodput_figure", "plot",
           "plot_gain", "plot_gain_curves", "plot_goodput", "plot_slowdown", "plot_time",
           "slowdown_figure"]

KINDS = ("goodput", "time", "gain", "gain-curve", "slowdown")


def plot(dataset, out, kind: str = "goodput", **kwargs) -> Path:
    """:func:`plot_goodput`, :func:`plot_time`, :func:`plot_gain`,
    :func:`plot_gain_curves` or :func:`~flowemu.study.figures.slowdown.plot_slowdown`
    (``kind`` goodput, time, gain, gain-curve, slowdown) of a dataset path or
    DataFrame."""
    if kind not in KINDS:
        raise ConfigError(f"kind: unknown kind {kind!r}{suggest(str(kind), KINDS)}; "
                          f"allowed: {', '.join(KINDS)}")
    if isinstance(out, (str, os.PathLike)):   # (into a dataset: its _ directory made)
        check_output(out, dataset if isinstance(dataset, (str, os.PathLike)) else None, "out")
    figure_path(out)   # before anything is loaded or drawn
    # (frames concatenated without ignore_index repeat their index: rows are told apart by position)
    df = with_labels(result_frame(dataset, "plot")).reset_index(drop=True)
    if df.empty:
        raise ConfigError("plot: " + ("the DataFrame holds no result rows"
                                      if isinstance(dataset, pd.DataFrame)
                                      else f"{dataset} holds no results"))
    draw, figure = {"goodput": (plot_goodput, goodput_figure), "time": (plot_time, goodput_figure),
                    "gain": (plot_gain, gain_figure),
                    "gain-curve": (plot_gain_curves, gain_curve_figure),
                    "slowdown": (plot_slowdown, slowdown_figure)}[kind]
    allowed = sorted(set(inspect.signature(figure).parameters) - {"df", "metric"})
    wrong = sorted(set(kwargs) - set(allowed))
    if wrong:
        raise ConfigError(f"plot: option(s) {', '.join(wrong)} not allowed with kind {kind!r}; "
                          f"allowed: {', '.join(allowed)}")
    if kwargs.get("title") is not None and not isinstance(kwargs["title"], str):
        raise ConfigError(f"title: {show(kwargs['title'])} is not allowed; expected a string "
                          "(or None: the figure's own)")
    need = ["size_bytes", "goodput_Bps" if kind != "time" else "time_s"]
    lacking = [c for c in need if c not in df.columns] + \
        (["label or algorithm"] if not {"label", "algorithm"} & set(df.columns) else [])
    if lacking and kind != "slowdown":   # (slowdown names its own)
        raise ConfigError(f"plot: the data lacks column(s) {', '.join(lacking)}")
    return draw(df, out, **kwargs)


def figures(dataset, outdir=None, notes: list | None = None) -> list[Path]:
    """Every standard figure of a dataset: ``goodput`` and ``gain`` PNGs, one
    pair per group when the dataset has several (``goodput-<group>.png``), in
    ``outdir`` (default ``DATASET/_figures``, which parquet readers of the
    dataset skip); and ``slowdown`` (largest size) where a group holds
    what-if rows and their healthy twins are in the dataset (in the group,
    whose goodput and gain figures then show the healthy network, as the
    title says, or in another group: then the group has no goodput or gain
    figure of its own; where no twin is anywhere, those show every row). Jobs
    sharing a network have no goodput or gain figure (each job is a scenario
    of its own: there is nothing to rank), only the slowdown figure of their
    what-ifs. What is left out is said in ``notes`` (a list, when given)."""
    notes = [] if notes is None else notes
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
        of = f"group {g}" if suffix else "the dataset"
        jobs = sel["job"].notna() if "job" in sel.columns else pd.Series(False, sel.index)
        if jobs.any():
            pick = f"[d.group == {g!r}]" if suffix else ""
            notes.append(f"{of}: jobs sharing a network have no goodput or gain figure (each "
                         "job is a scenario of its own); their slowdown beside the other jobs "
                         "is the job_slowdown column of their rows: "
                         f"d = flowemu.load({str(dataset)!r}); "
                         f"d{pick}[['label', 'size_bytes', 'job_slowdown']]")
        healthy = healthy_rows(with_whatif(sel))
        twinned = with_twins(df, sel) if not healthy.all() else sel
        slowdowns = has_slowdown(twinned)
        # goodput and gain of the healthy network where the group holds it (of
        # every row where no healthy twin is anywhere; never of jobs); the
        # what-ifs are in the slowdown figure, against twins from any group
        base = sel[(healthy if slowdowns else True) & ~jobs]
        if not base.empty:
            base_title = f"{title} · healthy network" if slowdowns else title
            written.append(plot_goodput(base, outdir / f"goodput{suffix}.png", title=base_title))
            written.append(plot_gain(base, outdir / f"gain{suffix}.png", title=base_title))
        if slowdowns:
            try:
                written.append(plot_slowdown(twinned, outdir / f"slowdown{suffix}.png",
                                             title=title))
            except ConfigError as exc:   # what-ifs without a healthy twin (yet)
                notes.append(f"{of}: no slowdown figure: {exc}")
        elif not healthy.all():
            notes.append(f"{of}: no slowdown figure: its what-if rows have no healthy twin in "
                         "the dataset (add the healthy network: failures = [0, ...], or a "
                         "group without what-ifs)")
    return written
