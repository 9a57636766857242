"""What a reader of a figure needs (issue 26): the parameters fixed in the rows
drawn, equal lines that stay visible, a legend entry for every kind of
marker, clearly distinct algorithm colours, unordered what-if conditions not
joined by lines, and size ticks where the data is.

Every check reads the matplotlib Figure (texts, Line2D properties, ticks),
not pixels; every frame is built by hand."""

import itertools

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgb

from flowemu.algorithms import algorithm_names
from flowemu.core.errors import ConfigError
from flowemu.study.figures.common import caption_text
from flowemu.study.figures.plots import gain_curve_figure, gain_figure, goodput_figure
from flowemu.study.figures.slowdown import slowdown_figure
from flowemu.study.figures.style import (
    _OTHER_COLORS,
    KNOWN,
    MIN_COLOR_DELTA_E,
    TIE_COLOR,
    algorithm_style,
)
from tests.study.test_whatif_results import hand_frame, row

COLUMNS = ["topology", "nodes", "size_bytes", "algorithm", "goodput_Bps", "time_s"]


def frame(rows, **const):
    """Rows (topology, nodes, size, algorithm, goodput) plus constant columns."""
    df = pd.DataFrame([r + (r[2] / r[4],) for r in rows], columns=COLUMNS)
    for k, v in const.items():
        df[k] = v
    return df


def suptitle_text(fig) -> str:
    return fig._suptitle.get_text() if fig._suptitle is not None else ""


def stated(fig) -> str:
    """What the figure states beside its panels: the title, then the caption
    of the fixed parameters under the legend."""
    return suptitle_text(fig) + "\n" + caption_text(fig)


def labelled_lines(ax) -> dict:
    return {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}


# ------------------------------------------------------------------ 1. fixed parameters

def bandwidth_frame():
    """Two bandwidths, two hop latencies, two algorithms; ECMP hash and a
    100 ns link latency for every row."""
    rows, hop = [], []
    for bw in (1e10, 5e10):
        for h in (0.0, 3e-7):
            for alg, g in (("ring", 1e9), ("swing", 2e9)):
                for size in (1024, 2048, 4096):
                    rows.append(("torus:4x4", 16, size, alg, g * bw / 5e10 * (1 + size / 1e4)))
                    hop.append((bw, h))
    df = frame(rows, ecmp="hash", link_latency_s=1e-7)
    df["bandwidth_Bps"], df["hop_latency_s"] = zip(*hop)
    return df


def test_a_where_filtered_figure_states_its_bandwidth_and_what_else_is_fixed():
    """Two --where choices of one dataset looked the same: each figure now
    says the bandwidth (with its unit) and every other fixed parameter (in
    the caption under the legend)."""
    df = bandwidth_frame()
    low = stated(goodput_figure(df, where="bandwidth_Bps == 1e10"))
    high = stated(goodput_figure(df, where="bandwidth_Bps == 5e10"))
    assert "80Gb/s" in low and "400Gb/s" in high and low != high
    for text in (low, high):
        assert "link latency 100ns" in text and "ECMP hash" in text and "16 nodes" in text
        assert "hop latency" not in text          # it varies: the panel titles say it
    # every figure kind says it
    assert "80Gb/s" in stated(gain_figure(df, where="bandwidth_Bps == 1e10"))
    fig = gain_curve_figure(df, by="hop_latency_s", where="bandwidth_Bps == 1e10")
    assert "80Gb/s" in stated(fig) and "ECMP hash" in stated(fig)
    # a parameter fixed in the whole dataset is said too, without --where
    one = df[(df.bandwidth_Bps == 5e10) & (df.hop_latency_s == 0)]
    text = stated(goodput_figure(one))
    assert "400Gb/s" in text and "hop latency 0s" in text


def test_a_fixed_what_if_condition_is_stated():
    rows = [("torus:4x4", 16, s, a, g * s) for s in (1024, 4096)
            for a, g in (("ring", 1.0), ("swing", 2.0))]
    sick = frame(rows, fail="random:2:0", fail_policy="reroute", degrade="", slow="",
                 background="", bandwidth_Bps=5e10)
    text = stated(goodput_figure(sick))
    assert "fail random:2:0" in text and "fail policy reroute" in text
    assert "400Gb/s" in text
    healthy = sick.assign(fail="", fail_policy="strict")
    assert "healthy network" in stated(goodput_figure(healthy))
    # healthy rows beside rows under a background: the panels show the
    # background, and the caption no longer calls the network healthy
    loaded = pd.concat([healthy, healthy.assign(background="perm:0.5")])
    fig = goodput_figure(loaded)
    titles = {ax.get_title() for ax in fig.axes if ax.get_title()}
    assert any("perm:0.5" in t for t in titles), titles
    assert "healthy network" not in stated(fig)
    assert "healthy network" not in stated(goodput_figure(loaded[loaded.background != ""]))
    assert "background perm:0.5" in stated(goodput_figure(loaded[loaded.background != ""]))


def test_the_slowdown_figure_states_its_fixed_parameters():
    df = hand_frame().assign(bandwidth_Bps=1.25e10, ecmp="split")
    text = stated(slowdown_figure(df, size="1KiB"))
    assert "100Gb/s" in text and "ECMP split" in text and "vector size 1KiB" in text


# ------------------------------------------------------------------ 2. equal lines

def test_lines_with_equal_values_stay_distinguishable():
    """bucket and ring with the same goodputs (as on a fat tree): the line
    drawn on top is dashed with larger hollow markers, so the one beneath
    shows through, and the panel names the equality."""
    sizes = (1024, 4096, 16384)
    rows = [("fattree:k=4", 16, s, a, 1e9 * (1 + s / 1e4)) for s in sizes
            for a in ("bucket", "ring")]
    rows += [("fattree:k=4", 16, s, "swing", 3e9 * (1 + s / 1e4)) for s in sizes]
    ax = goodput_figure(frame(rows)).axes[0]
    lines = labelled_lines(ax)
    bucket, ring = lines["bucket"], lines["ring"]       # ring is drawn over bucket
    assert np.allclose(bucket.get_ydata(), ring.get_ydata())
    assert str(bucket.get_linestyle()) != str(ring.get_linestyle())
    assert ring.get_markersize() > bucket.get_markersize()
    assert ring.get_fillstyle() == "none" and bucket.get_fillstyle() == "full"
    assert any("ring = bucket" in t.get_text() for t in ax.texts)
    # swing differs from both: drawn in its own look, named in no note
    assert lines["swing"].get_linestyle() == "-" and lines["swing"].get_fillstyle() == "full"
    assert not any("swing" in t.get_text() for t in ax.texts)


def test_equal_slowdown_lines_stay_distinguishable():
    """Three algorithms slowed alike by the failures (slowdowns 1.0 and 1.5
    for each): the lines drawn over an equal one are dashed with hollow
    markers, larger over two, and the panel names the equalities."""
    rows = []
    for alg, healthy in (("bucket", 1.0), ("recdoub", 2.0), ("ring", 3.0)):
        rows.append(row("torus:8x8", alg, 1024, healthy))
        rows.append(row("torus:8x8", alg, 1024, healthy, "random:1:0", 1))
        rows.append(row("torus:8x8", alg, 1024, healthy * 1.5, "random:4:0", 4))
    fig = slowdown_figure(pd.DataFrame(rows))
    ax = fig.axes[0]
    lines = labelled_lines(ax)
    assert list(lines) == ["bucket", "recdoub", "ring"]
    for line in lines.values():
        assert line.get_ydata() == pytest.approx([1.0, 1.0, 1.5])
    bucket, recdoub, ring = lines.values()
    assert str(bucket.get_linestyle()) == "-"
    assert str(recdoub.get_linestyle()) != "-" and str(ring.get_linestyle()) != "-"
    assert bucket.get_markersize() < recdoub.get_markersize() < ring.get_markersize()
    assert recdoub.get_markerfacecolor() == "none"
    told = [t.get_text() for t in ax.texts]
    assert told == ["recdoub = bucket\nring = bucket"], told
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "recdoub, over an equal line (see the panel)" in legend
    assert "ring, over 2 equal lines (see the panel)" in legend
    # lines apart at every count are drawn as they are
    rows += [row("torus:8x8", "swing", 1024, 1.0), row("torus:8x8", "swing", 1024, 2.0,
                                                       "random:4:0", 4)]
    swing = labelled_lines(slowdown_figure(pd.DataFrame(rows)).axes[0])["swing"]
    assert str(swing.get_linestyle()) == "-" and swing.get_markersize() == 4


def test_lines_equal_at_some_sizes_are_told_apart_there():
    """Swing and recdoub the same from 1 MiB up (bandwidth-bound): recdoub,
    drawn over Swing, takes the covering look, the note says where."""
    sizes = (1024, 2**20, 2**30)
    rows = [("torus:8x8", 64, s, "swing", 2e9 * (1 + s / 1e4)) for s in sizes]
    rows += [("torus:8x8", 64, s, "recdoub", (1e9 if s == 1024 else 2e9) * (1 + s / 1e4))
             for s in sizes]
    ax = goodput_figure(frame(rows)).axes[0]
    lines = labelled_lines(ax)
    assert lines["swing"].get_fillstyle() == "none"          # drawn after recdoub
    assert str(lines["swing"].get_linestyle()) != str(lines["recdoub"].get_linestyle())
    assert [t.get_text() for t in ax.texts] == ["swing = recdoub at 1MiB–1GiB"]


# ------------------------------------------------------------------ 3. markers in the legend

def test_every_marker_drawn_has_a_legend_entry():
    """The large dots where an auto variant switches were explained nowhere;
    the hollow markers of a line over an equal one are explained too."""
    rows, variants = [], []
    for s in (1024, 4096, 16384, 65536):
        for a in ("bucket", "ring", "swing"):
            rows.append(("torus:4x4", 16, s, a, (3e9 if a == "swing" else 1e9) * s))
            variants.append("latency" if s < 16384 else "bandwidth")
    df = frame(rows)
    df["variant"] = variants
    fig = goodput_figure(df)
    drawn = {(ln.get_marker(), round(ln.get_markersize(), 2), ln.get_fillstyle())
             for ax in fig.axes for ln in ax.get_lines()
             if ln.get_marker() not in (None, "None", "none", "")}
    legend = fig.legends[0]
    entries = {(h.get_marker(), round(h.get_markersize(), 2), h.get_fillstyle())
               for h in legend.legend_handles}
    assert drawn <= entries
    texts = [t.get_text() for t in legend.get_texts()]
    assert any("variant" in t for t in texts) and any("equal line" in t for t in texts)


# ------------------------------------------------------------------ 4. palette

def cielab(color) -> np.ndarray:
    """CIELAB (D65) of an sRGB colour."""
    rgb = np.array(to_rgb(color))
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124564, 0.3575761, 0.1804375],
                    [0.2126729, 0.7151522, 0.0721750],
                    [0.0193339, 0.1191920, 0.9503041]]) @ lin / [0.95047, 1.0, 1.08883]
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e_2000(lab1, lab2) -> float:
    """CIEDE2000 colour difference of two CIELAB colours (Sharma, Wu and
    Dalal 2005)."""
    (L1, a1, b1), (L2, a2, b2) = lab1, lab2
    c_mean = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_mean**7 / (c_mean**7 + 25.0**7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1, c2 = np.hypot(a1, b1), np.hypot(a2, b2)
    h1, h2 = np.degrees(np.arctan2(b1, a1)) % 360, np.degrees(np.arctan2(b2, a2)) % 360
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    d_hue = 2 * np.sqrt(c1 * c2) * np.sin(np.radians(dh / 2))
    l_mean, c_mean = (L1 + L2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        h_mean = h1 + h2
    elif abs(h1 - h2) <= 180:
        h_mean = (h1 + h2) / 2
    else:
        h_mean = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (1 - 0.17 * np.cos(np.radians(h_mean - 30)) + 0.24 * np.cos(np.radians(2 * h_mean))
         + 0.32 * np.cos(np.radians(3 * h_mean + 6)) - 0.20 * np.cos(np.radians(4 * h_mean - 63)))
    rotation = -np.sin(np.radians(60 * np.exp(-(((h_mean - 275) / 25) ** 2)))) \
        * 2 * np.sqrt(c_mean**7 / (c_mean**7 + 25.0**7))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / np.sqrt(20 + (l_mean - 50) ** 2)
    s_c, s_h = 1 + 0.045 * c_mean, 1 + 0.015 * c_mean * t
    dl, dc, dhh = (L2 - L1) / s_l, (c2 - c1) / s_c, d_hue / s_h
    return float(np.sqrt(dl**2 + dc**2 + dhh**2 + rotation * dc * dhh))


@pytest.mark.parametrize("lab1, lab2, expected", [       # Sharma et al.'s test data
    ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
    ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
    ((22.7233, 20.0904, -46.6940), (23.0331, 14.9730, -42.5619), 2.0373),
])
def test_delta_e_2000_reference_values(lab1, lab2, expected):
    assert delta_e_2000(lab1, lab2) == pytest.approx(expected, abs=1e-4)


def test_every_pair_of_built_in_algorithms_has_clearly_distinct_colours():
    """butterfly's colour was almost swing's (ΔE2000 10): every pair of
    registered algorithms is now at least MIN_COLOR_DELTA_E apart, and none
    is near the tie grey or white."""
    names = sorted(algorithm_names())
    colors = {n: algorithm_style(n).color for n in names}
    close = [(a, b, round(delta_e_2000(cielab(colors[a]), cielab(colors[b])), 1))
             for a, b in itertools.combinations(names, 2)
             if delta_e_2000(cielab(colors[a]), cielab(colors[b])) < MIN_COLOR_DELTA_E]
    assert close == []
    assert set(names) <= set(KNOWN)                  # a fixed look each, no hashing
    for n, c in colors.items():
        for background in (TIE_COLOR, "#ffffff"):
            assert delta_e_2000(cielab(c), cielab(background)) >= MIN_COLOR_DELTA_E, n
    # a plug-in's colour never passes for a built-in's
    for other in _OTHER_COLORS:
        assert min(delta_e_2000(cielab(other), cielab(c)) for c in colors.values()) >= 17


# ------------------------------------------------------------------ 5. slowdown categories

def test_slowdown_does_not_join_unordered_conditions():
    """Failures and a degraded link are categories: markers, no line between
    them; failure counts alone are ordered and keep their lines."""
    fig = slowdown_figure(hand_frame(), size="1KiB", topologies=["torus:8x8"])
    ax = fig.axes[0]
    lines = labelled_lines(ax)
    assert set(lines) == {"ring", "swing"}
    for line in lines.values():
        assert line.get_linestyle() == "None" and len(line.get_xdata()) == 4
    # every other Line2D is the healthy reference (flat at 1), none joins conditions
    others = [ln for ln in ax.get_lines() if ln.get_label().startswith("_")]
    assert all(set(np.asarray(ln.get_ydata(), float)) == {1.0} for ln in others)
    # the algorithms sit side by side at each condition, never on one another
    assert not np.allclose(lines["ring"].get_xdata(), lines["swing"].get_xdata())
    df = hand_frame()
    fig = slowdown_figure(df[df.degrade == ""], size="1KiB", topologies=["torus:8x8"])
    assert all(ln.get_linestyle() == "-" for ln in labelled_lines(fig.axes[0]).values())


# ------------------------------------------------------------------ 6. size ticks

@pytest.mark.parametrize("sizes", [(2**10, 2**20, 2**30), (1000, 400_000_000), (96, 3 * 2**20)])
def test_sparse_sizes_get_ticks_at_their_sizes(sizes):
    rows = [("torus:4x4", 16, s, "ring", 1e9 * (1 + s / 1e6)) for s in sizes]
    ax = goodput_figure(frame(rows)).axes[0]
    assert list(ax.get_xticks()) == pytest.approx(list(sizes))


def test_dense_sizes_keep_evenly_spaced_power_of_two_ticks():
    sizes = [2**k for k in range(5, 21)]
    rows = [("torus:4x4", 16, s, "ring", 1e9 * (1 + s / 1e6)) for s in sizes]
    ticks = goodput_figure(frame(rows)).axes[0].get_xticks()
    assert len(ticks) <= 7 and all(np.log2(t) == int(np.log2(t)) for t in ticks)


def test_a_gain_curve_by_a_single_value_names_what_varies():
    """One value of ``by`` draws one curve: the refusal lists the columns a
    curve could follow, the topology included (``--by topology`` works)."""
    rows = [(t, 16, s, a, g * s) for t in ("torus:4x4", "fattree:k=4") for s in (1024, 4096)
            for a, g in (("ring", 1.0), ("swing", 2.0))]
    df = frame(rows, alpha_s=0.0)
    with pytest.raises(ConfigError, match=r"by: 'alpha_s' has a single value in the data, .*"
                                          r"columns that vary: topology$"):
        gain_curve_figure(df, by="alpha_s")
    fig = gain_curve_figure(df, by="topology")
    assert {ln.get_label() for ax in fig.axes for ln in ax.get_lines()} >= {"torus:4x4",
                                                                          "fattree:k=4"}
