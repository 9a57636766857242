"""One look per algorithm across every figure, and the axis choices.

:func:`algorithm_style` maps an algorithm label (``name[:options]``) to a
colour, marker, line style and hatch that depend on the label alone — never
on which other algorithms a figure holds — so Swing is the same red in a
goodput plot, a gain heatmap and the alpha figure:

- the colour and marker come from the algorithm's *name*: fixed for every
  registered algorithm (:data:`KNOWN`, one colour each, every pair at least
  :data:`MIN_COLOR_DELTA_E` apart in CIEDE2000, so two algorithms never look
  alike), a CRC-32 of the name into :data:`_OTHER_COLORS` (colours far from
  every known algorithm's) and :data:`_OTHER_MARKERS` for others
  (deterministic across runs, unlike Python's ``hash``). Two unknown names
  can hash alike: :func:`style_map`, which a figure uses for all its labels,
  then moves the later one (in name order) to a free colour, or marker;
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

#: fixed (colour, marker) of every registered algorithm, one colour each. Every
#: pair is at least :data:`MIN_COLOR_DELTA_E` apart in CIEDE2000 (tests check
#: it), so no two read alike in a legend or in print: tab10 colours for the
#: paper's algorithms, deep or dark colours for the rest; grey excluded
KNOWN = {
    "swing": ("#d62728", "o"),              # red
    "bucket": ("#1f77b4", "s"),             # blue
    "ring": ("#2ca02c", "^"),               # green
    "recdoub": ("#ff7f0e", "D"),            # orange
    "cps": ("#9467bd", "v"),                # purple
    "hcps": ("#ff7fa7", "<"),               # pink
    "acps": ("#17becf", ">"),               # cyan
    "reduce-broadcast": ("#645403", "p"),   # olive brown
    "gentree": ("#bcbd22", "*"),            # olive
    "binomial": ("#000000", "h"),           # black
    "butterfly": ("#0504aa", "X"),          # royal blue
    "dbtree": ("#005249", "P"),             # dark teal
    "dualroot": ("#750851", "d"),           # plum
    "ina": ("#776666", "8"),                # taupe
    "mpich": ("#22ff11", "H"),              # lime: what MPICH picks
    "nccl": ("#708070", "D"),               # sage grey: what NCCL runs
}
#: the smallest CIEDE2000 colour difference between two registered algorithms
#: (20: clearly different colours side by side, not shades of one)
MIN_COLOR_DELTA_E = 20.0
#: colours of other names: each at least 17 (CIEDE2000) from every known
#: algorithm's colour and from each other, so a plug-in never passes for one
_OTHER_COLORS = ("#8ab8fe", "#006400", "#742802", "#ac7e04", "#04d8b2",
                 "#deb887", "#ceaefa", "#d90166", "#ff00ff", "#0a437a")
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


def _name_look(name: str) -> tuple[str, str]:
    """(colour, marker) of an algorithm name on its own."""
    if name in KNOWN:
        return KNOWN[name]
    return (_OTHER_COLORS[_crc(name) % len(_OTHER_COLORS)],
            _OTHER_MARKERS[_crc(name) % len(_OTHER_MARKERS)])


def algorithm_style(label: str, look: tuple[str, str] | None = None) -> AlgorithmStyle:
    """The style of an algorithm label such as ``swing`` or
    ``recdoub:variant=latency`` (name, then options after the first ``:``);
    ``look`` overrides the name's (colour, marker) (see :func:`style_map`)."""
    name, _, options = str(label).partition(":")
    color, marker = look or _name_look(name)
    k = _KNOWN_VARIANTS.get(options)
    if k is None:
        free = len(_VARIANTS) - len(_KNOWN_VARIANTS)
        k = len(_KNOWN_VARIANTS) + _crc(options) % free
    linestyle, fillstyle, hatch = _VARIANTS[k]
    return AlgorithmStyle(color, marker, linestyle, fillstyle, hatch)


def _name_looks(names) -> dict[str, tuple[str, str]]:
    """(colour, marker) of each name of one figure, no two alike: known
    names keep theirs; an unknown name whose hashed look another unknown
    name (earlier in name order) already has moves to the next colour no
    name of the figure has, or, with every colour taken, to the next
    marker free with its colour."""
    names = sorted(set(names))
    looks = {n: KNOWN[n] for n in names if n in KNOWN}
    used_colors = {c for c, _ in looks.values()}
    used = set(looks.values())
    for name in (n for n in names if n not in KNOWN):
        color, marker = _name_look(name)
        if (color, marker) in used:
            start = _OTHER_COLORS.index(color)
            free = [_OTHER_COLORS[(start + i) % len(_OTHER_COLORS)]
                    for i in range(1, len(_OTHER_COLORS))]
            free = [c for c in free if c not in used_colors]
            if free:
                color = free[0]
            else:
                m0 = _OTHER_MARKERS.index(marker)
                markers = [_OTHER_MARKERS[(m0 + i) % len(_OTHER_MARKERS)]
                           for i in range(len(_OTHER_MARKERS))]
                pairs = [(c, m) for m in markers for c in _OTHER_COLORS]
                color, marker = next((p for p in pairs if p not in used), (color, marker))
        looks[name] = (color, marker)
        used.add((color, marker))
        used_colors.add(color)
    return looks


def style_map(labels) -> dict[str, AlgorithmStyle]:
    """``{label: AlgorithmStyle}`` for every label of one figure. A label's
    style is :func:`algorithm_style`'s, except that two unknown algorithm
    names never share a (colour, marker) in one figure (see
    :func:`_name_looks`): distinct names differ in colour or marker, and the
    variants of one name in line style and marker fill."""
    labels = [str(lab) for lab in labels]
    looks = _name_looks(_look_name(lab) for lab in labels)
    return {lab: algorithm_style(lab, looks[_look_name(lab)]) for lab in labels}


def _look_name(label: str) -> str:
    """The name that chooses a label's (colour, marker): its algorithm's, or
    a job's whole label (``jobs:ring+swing#0``: every job of a sweep is named
    ``jobs``, and they would all look alike)."""
    return label if label.startswith("jobs:") else label.partition(":")[0]


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
