"""One look per algorithm across every figure, and the axis choices.

:func:`algorithm_style` maps an algorithm label (``name[:options]``) to a
colour, marker, line style and hatch that depend on the label alone — never
on which other algorithms a figure holds — so Swing is the same red in a
goodput plot, a gain heatmap and the alpha figure:

- the colour and marker come from the algorithm's *name*: fixed for the
  known ones (:data:`KNOWN`), a CRC-32 of the name into :data:`_OTHER_COLORS`
  and :data:`_OTHER_MARKERS` for others (deterministic across runs, unlike
  Python's ``hash``; two unknown names can share a colour);
- variants of one algorithm (``recdoub:variant=latency`` and
  ``recdoub:variant=bandwidth``) share the colour and differ in line style,
  marker fill and heatmap hatch (:data:`_VARIANTS`): fixed for the common
  options, a CRC-32 of the options for others.

Grey is kept for ties (:data:`TIE_COLOR`): no algorithm is drawn in it.

:func:`use_log_scale` decides a value axis: logarithmic when the values span
more than :data:`LOG_SPAN_DECADES` decades, linear otherwise.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

#: neutral colour of a tie in heatmaps (no algorithm uses it)
TIE_COLOR = "#d0d0d0"

#: fixed (colour, marker) of the known algorithms (tab10 colours; grey excluded)
KNOWN = {
    "swing": ("#d62728", "o"),      # red
    "bucket": ("#1f77b4", "s"),     # blue
    "ring": ("#2ca02c", "^"),       # green
    "recdoub": ("#ff7f0e", "D"),    # orange
}
_OTHER_COLORS = ("#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf",
                 "#393b79", "#637939", "#843c39", "#7b4173", "#3182bd")
_OTHER_MARKERS = ("v", "<", ">", "p", "h", "X", "*", "P")

#: (line style, marker fill, heatmap hatch) of a variant; entry 0 is the
#: algorithm with default options
_VARIANTS = (
    ("-", "full", ""),
    ("--", "none", "////"),
    (":", "bottom", "...."),
    ("-.", "top", "\\\\\\\\"),
    ((0, (5, 1.5, 1, 1.5, 1, 1.5)), "left", "xxx"),
    ((0, (1, 1)), "right", "++"),
    ((0, (8, 2)), "none", "---"),
    ((0, (3, 1, 1, 1)), "bottom", "|||"),
)
#: options with a fixed variant entry (others: CRC-32 over entries 3 and up)
_KNOWN_VARIANTS = {"": 0, "variant=latency": 1, "variant=bandwidth": 2}

#: a value axis spanning more decades than this is logarithmic
LOG_SPAN_DECADES = 2.0


@dataclass(frozen=True)
class AlgorithmStyle:
    """How one algorithm label is drawn (matplotlib keyword values)."""

    color: str
    marker: str
    linestyle: object
    fillstyle: str
    hatch: str

    def marker_kwargs(self) -> dict:
        """Keyword arguments of ``Axes.plot`` for this algorithm's markers
        (a hollow or half-filled marker has a white other half)."""
        return {"color": self.color, "marker": self.marker, "fillstyle": self.fillstyle,
                "markerfacecolor": self.color if self.fillstyle != "none" else "white",
                "markerfacecoloralt": "white"}

    def line_kwargs(self) -> dict:
        """Keyword arguments of ``Axes.plot`` for this algorithm's line."""
        return {"linestyle": self.linestyle, **self.marker_kwargs()}


def _crc(text: str) -> int:
    return zlib.crc32(text.encode())


def algorithm_style(label: str) -> AlgorithmStyle:
    """The style of an algorithm label such as ``swing`` or
    ``recdoub:variant=latency`` (name, then options after the first ``:``)."""
    name, _, options = str(label).partition(":")
    if name in KNOWN:
        color, marker = KNOWN[name]
    else:
        color = _OTHER_COLORS[_crc(name) % len(_OTHER_COLORS)]
        marker = _OTHER_MARKERS[_crc(name) % len(_OTHER_MARKERS)]
    k = _KNOWN_VARIANTS.get(options)
    if k is None:
        free = len(_VARIANTS) - len(_KNOWN_VARIANTS)
        k = len(_KNOWN_VARIANTS) + _crc(options) % free
    linestyle, fillstyle, hatch = _VARIANTS[k]
    return AlgorithmStyle(color, marker, linestyle, fillstyle, hatch)


def style_map(labels) -> dict[str, AlgorithmStyle]:
    """``{label: AlgorithmStyle}`` for every label (each independent of the others)."""
    return {str(lab): algorithm_style(lab) for lab in labels}


def use_log_scale(values) -> bool:
    """True when the positive finite ``values`` span more than
    :data:`LOG_SPAN_DECADES` decades (max / min > 10**2): a linear axis would
    flatten everything but the largest values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size < 2:
        return False
    return bool(np.log10(v.max() / v.min()) > LOG_SPAN_DECADES)


def text_color_on(rgba) -> str:
    """Dark or light text, whichever reads better on a cell of colour ``rgba``
    (relative luminance, WCAG weights on linearised sRGB)."""
    rgb = np.asarray(rgba, dtype=float)[:3]
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    luminance = float(lin @ np.array([0.2126, 0.7152, 0.0722]))
    return "#111111" if luminance > 0.18 else "white"
