"""Lines of a figure that would hide each other: a line equal to one drawn
before it (within :data:`~flowemu.results.TIE_RTOL`, at every x or at two x
or more) is drawn over it dashed, with hollow markers larger with each line
it covers, and the panel says which equals which (``bucket = ring``), so
the line beneath shows through and the equality is read, not guessed. The
goodput and slowdown figures use it."""

from __future__ import annotations

import numpy as np

from ..results import TIE_RTOL

#: the dashes of a line over 1, 2, 3 equal lines
COVERING_DASHES = ((0, (4, 3)), (0, (1.5, 2.5)), (0, (6, 2, 1.5, 2)))


def equal_line(drawn: list, x: np.ndarray, y: np.ndarray, fmt,
               noun: str = "sizes") -> tuple[str | None, str]:
    """``(label, where)`` of the line in ``drawn`` that ``(x, y)`` would hide
    or be hidden by: equal values (within :data:`~flowemu.results.TIE_RTOL`)
    at every size, or at two sizes or more (the one equal at the most sizes,
    the first drawn on a tie). ``where`` is empty when they are equal at
    every size of the line, else the sizes (`` at 1MiB–1GiB``, or `` at 3
    of 8 sizes`` when they are not consecutive; ``fmt`` writes an x value,
    ``noun`` names the x values);
    ``(None, "")`` when no line is equal."""
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
        return best, f" at {fmt(x[idx[0]])}–{fmt(x[idx[-1]])}"
    return best, f" at {len(idx)} of {len(x)} {noun}"


def covering_look(style, depth: int) -> tuple[dict, float]:
    """``(plot keywords, marker size)`` of a line drawn over ``depth`` equal
    ones: dashed, so the line beneath shows in the gaps, and hollow markers
    larger with each depth, so the markers beneath show inside them (both
    survive greyscale print, unlike colour alone)."""
    kwargs = {**style.marker_kwargs(), "fillstyle": "none", "markerfacecolor": "none",
              "markeredgewidth": 1.1,
              "linestyle": COVERING_DASHES[(depth - 1) % len(COVERING_DASHES)]}
    return kwargs, 3.5 + 3.0 * depth


def note_equal(ax, equal: list) -> None:
    """Say in the panel ``ax`` which line equals which: ``equal`` holds
    ``(label, label of the line it covers, where)``; nothing when empty."""
    if equal:
        ax.text(0.98, 0.03, "\n".join(f"{a} = {b}{w}" for a, b, w in equal),
                transform=ax.transAxes, ha="right", va="bottom", fontsize=7,
                bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1.5})


def covering_entry(label: str, depth: int) -> str:
    """The legend's entry of ``label`` drawn over ``depth`` equal lines."""
    return (f"{label}, over an equal line (see the panel)" if depth == 1 else
            f"{label}, over {depth} equal lines (see the panel)")
