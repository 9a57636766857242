"""The figure of a GenModel fit (:func:`flowemu.study.fit.fit`): measured
allreduce times against vector size beside the fitted model, one panel per
algorithm, one colour per rank count (``flowemu fit --plot``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib import colormaps

from ...core.outputs import check_writable, write_atomic
from .common import new_figure, size_axis
from .style import algorithm_style

#: panels per row of the fit figure: more algorithms wrap into a grid
FIT_PLOT_COLUMNS = 3


def fit_figure(rows: pd.DataFrame, what: str = "GenModel fit"):
    """The figure of :func:`plot_fit`: one panel per algorithm, at most
    :data:`FIT_PLOT_COLUMNS` to a row (a row of 7 panels would be 3,000+
    pixels wide). ``rows`` are a fit's :attr:`~flowemu.study.fit.FitResult.rows`
    (``algorithm``, ``ranks``, ``size``, ``time``, ``fit``)."""
    algs = list(dict.fromkeys(rows["algorithm"]))
    ncols = min(len(algs), FIT_PLOT_COLUMNS)
    nrows = -(-len(algs) // ncols)
    fig = new_figure(4.2 * ncols + 0.8, 3.4 * nrows + 0.4)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[len(algs):]:
        ax.set_visible(False)   # the last row may be short
    cmap = colormaps["viridis"]
    for ax, alg in zip(axes, algs, strict=False):
        part = rows[rows["algorithm"] == alg]
        marker = algorithm_style(alg).marker
        rank_values = sorted(set(part["ranks"]))
        for i, p in enumerate(rank_values):
            sub = part[part["ranks"] == p].sort_values("size")
            color = cmap(i / max(len(rank_values) - 1, 1) * 0.9)
            ax.plot(sub["size"], sub["time"], marker, color=color, fillstyle="none",
                    label=f"{p} ranks")
            curve = sub.groupby("size", as_index=False)["fit"].first()
            ax.plot(curve["size"], curve["fit"], "-", color=color, linewidth=1)
        size_axis(ax, part["size"])
        ax.set_yscale("log")
        ax.set_xlabel("vector size")
        ax.set_ylabel("allreduce time (s)")
        # the panel says only its algorithm: what markers and lines are is said once
        ax.set_title(alg, fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"measured (markers) and {what} (lines)", fontsize=10)
    return fig


def plot_fit(fit, out, what: str = "GenModel fit") -> Path:
    """Time vs size, one panel per algorithm: measurements as markers, the
    fitted model as a line, one colour per rank count (log–log axes).
    ``fit`` is what :func:`flowemu.study.fit.fit` returned (or its
    ``rows``); ``out`` a .png, .pdf or .svg file (named ``--plot`` in
    errors); ``what`` names the lines (``fit`` holds flowemu's prediction
    for ``flowemu fit --compare``). Returns the path written."""
    rows = fit if isinstance(fit, pd.DataFrame) else fit.rows
    fig = fit_figure(rows, what)
    out = check_writable(out, "--plot")
    fmt = out.suffix.lstrip(".").lower() or "png"
    return write_atomic(out, "--plot", lambda fh: fig.savefig(fh, format=fmt,
                                                                bbox_inches="tight"))
