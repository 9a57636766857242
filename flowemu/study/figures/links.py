"""Figures of a link table (:func:`flowemu.link_loads`, ``flowemu run --links-plot``).

* A 2-D torus or mesh: a heat map per direction (+x, −x, +y, −y), a row per
  (variant, step): each cell is the node the link leaves, coloured by the
  link's utilisation (0 to 1, the same scale everywhere); grey cells carry
  nothing (or do not exist, at a mesh's edges).
* Anything else (trees, fat trees, leaf-spines, Dragonfly, HyperX, 1-D and
  3-D tori): the utilisation of the links of each tier and direction as box
  plots, a panel per variant, pooled over the steps of the table.

matplotlib loads when a figure is drawn, not when this module is imported:
``flowemu run`` imports it and draws only for ``--links-plot``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.errors import ConfigError
from ...core.outputs import check_writable, write_atomic
from ...topology import checks as topology_checks
from ...topology.torus import Torus

#: most (variant, step) rows a heat map draws
MAX_HEATMAP_STEPS = 16

#: the panels of a 2-D heat map: (title, dimension, direction)
DIRECTIONS = (("+x", 0, "+"), ("−x", 0, "-"), ("+y", 1, "+"), ("−y", 1, "-"))


def plot_links(table: pd.DataFrame, topology, out, *, title: str | None = None,
               option: str = "--out"):
    """Draw the link table ``table`` of a run on ``topology`` (a spec or a
    Topology) into ``out`` (.png, .pdf or .svg); returns its path.

    Raises
    ------
    ConfigError
        A heat map of more than :data:`MAX_HEATMAP_STEPS` steps (select
        steps), or an empty table.
    """
    topo = topology_checks.topology(topology)
    if len(table) == 0:
        raise ConfigError(f"{option}: the link table is empty (no step carries bytes); "
                          "nothing to draw")
    if isinstance(topo, Torus) and topo.ndim == 2:
        fig = _heatmap(table, topo, option)
    else:
        fig = _tiers(table, topo)
    if title:
        fig.suptitle(title)
    target = check_writable(out, option)
    fmt = target.suffix.lstrip(".").lower() or "png"
    return write_atomic(target, option,
                        lambda fh: fig.savefig(fh, format=fmt, bbox_inches="tight"))


def _figure(width: float, height: float):
    """A figure on an Agg canvas (as :func:`.common.new_figure`, whose module
    loads matplotlib on import)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _steps(table: pd.DataFrame) -> pd.DataFrame:
    """The (variant, step, label) of the table, in its order."""
    return table[["variant", "step", "label"]].astype(object).drop_duplicates()


def _heatmap(table: pd.DataFrame, topo: Torus, option: str):
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    steps = _steps(table)
    if len(steps) > MAX_HEATMAP_STEPS:
        raise ConfigError(f"{option}: the heat map draws a row per step, at most "
                          f"{MAX_HEATMAP_STEPS}; this run has {len(steps)} (variant, step) "
                          "pairs: select steps (--links-steps 0-3, steps=)")
    rows, cols = topo.dims
    nrow = len(steps)
    fig = _figure(1.9 * len(DIRECTIONS) + 0.9, 1.9 * nrow * rows / cols + 0.8)
    axes = fig.subplots(nrow, len(DIRECTIONS), squeeze=False)
    cmap = colormaps["viridis"].with_extremes(bad="#dddddd")
    norm = Normalize(0.0, 1.0)
    link = table["link"].to_numpy(np.int64)
    util = table["utilisation"].to_numpy(np.float64)
    variant_of = table["variant"].astype(str).to_numpy()
    step_of = table["step"].to_numpy(np.int64)
    several = table["variant"].nunique() > 1
    per_node = 2 * topo.ndim
    for r, (variant, step, label) in enumerate(steps.itertuples(index=False)):
        mine = (variant_of == str(variant)) & (step_of == int(step))
        grid = np.full(topo.num_links, np.nan)
        grid[link[mine]] = util[mine]
        grid = grid.reshape(topo.num_nodes, per_node)
        for c, (name, dim, sign) in enumerate(DIRECTIONS):
            ax = axes[r, c]
            column = 2 * dim + (0 if sign == "+" else 1)
            ax.imshow(np.ma.masked_invalid(grid[:, column].reshape(rows, cols)), cmap=cmap,
                      norm=norm, origin="lower", interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(name)
            if c == 0:
                head = f"{variant} · " if several else ""
                ax.set_ylabel(f"{head}step {step}\n{label}", fontsize=8)
    fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=axes, shrink=0.8,
                 label="utilisation (1 = busy the whole step)")
    fig.suptitle(f"{topo.spec}: link utilisation per step (x up, y right; grey: no load)",
                 fontsize=10)
    return fig


def _tiers(table: pd.DataFrame, topo):
    variants = list(dict.fromkeys(table["variant"].astype(str)))
    fig = _figure(max(4.5, 1.2 * table["tier"].nunique() * 2 + 1.5),
                     2.8 * len(variants) + 0.6)
    axes = fig.subplots(len(variants), 1, squeeze=False)[:, 0]
    group = table["tier"].astype(str) + np.where(table["direction"].astype(str) == "", "",
                                                 " " + table["direction"].astype(str))
    for ax, variant in zip(axes, variants, strict=True):
        mine = table["variant"].astype(str) == variant
        names = sorted(set(group[mine]))
        data = [table["utilisation"][mine & (group == g)].to_numpy(np.float64) for g in names]
        steps = table.loc[mine, "step"].nunique()
        ax.boxplot(data, tick_labels=names, whis=(0, 100), widths=0.6)
        rng = np.random.default_rng(0)
        for i, values in enumerate(data, start=1):   # every link, jittered, over the box
            shown = values if len(values) <= 2000 else rng.choice(values, 2000, replace=False)
            ax.plot(i + rng.uniform(-0.18, 0.18, len(shown)), shown, ".", ms=2, alpha=0.3,
                    color="C0")
        ax.set_ylim(-0.03, 1.05)
        ax.set_ylabel("utilisation")
        ax.set_title(f"{variant}: {steps} step{'s' if steps != 1 else ''} pooled", fontsize=9)
        ax.tick_params(axis="x", labelrotation=20)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{topo.spec}: link utilisation per tier and direction (whiskers: min, max)",
                 fontsize=10)
    return fig
