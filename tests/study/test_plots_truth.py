"""Plots that tell the truth: ties are ties (in compare and in the heatmap),
one look per algorithm across figures, log axes where values span decades,
and the gain-curve figure (one line per value of a configuration column).

Every frame here is built by hand, so the expected gains are closed forms."""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba

from flowemu.cli.app import main
from flowemu.core.errors import ConfigError
from flowemu.study.figures.plots import (
    gain_curve_figure,
    gain_figure,
    goodput_figure,
    plot,
    plot_gain_curves,
)
from flowemu.study.figures.style import (
    KNOWN,
    TIE_COLOR,
    algorithm_style,
    style_map,
    text_color_on,
    use_log_scale,
)
from flowemu.study.results import TIE_RTOL, compare, compare_table


def frame(rows, extra=None):
    df = pd.DataFrame(rows, columns=["topology", "nodes", "size_bytes", "algorithm",
                                     "goodput_Bps"])
    for k, v in (extra or {}).items():
        df[k] = v
    return df


def lines_by_label(fig):
    return {ln.get_label(): ln for ax in fig.axes for ln in ax.get_lines()
            if not ln.get_label().startswith("_")}


# ------------------------------------------------------------------ ties in compare

@pytest.mark.parametrize("bucket_goodput", [8e9, 8e9 * (1 + 1e-15), 8e9 * (1 - 1e-15)])
def test_equal_goodputs_are_a_tie(bucket_goodput):
    df = frame([("torus:8x8", 64, 1024, "ring", 8e9),
                ("torus:8x8", 64, 1024, "bucket", bucket_goodput),
                ("torus:8x8", 64, 1024, "swing", 2e9)])
    cmp = compare(df).set_index("algorithm")
    assert bool(cmp.loc["ring", "is_best"]) and bool(cmp.loc["bucket", "is_best"])
    assert not cmp.loc["swing", "is_best"]
    # a tied best has gain exactly 0 (not +1e-15 shown as a win)
    assert cmp.loc["ring", "gain"] == 0.0 and cmp.loc["bucket", "gain"] == 0.0
    assert cmp.loc["swing", "gain"] == pytest.approx(2 / 8 - 1, rel=1e-12)
    assert set(cmp["best"]) == {"bucket=ring"} and cmp["tie"].all()
    text = compare_table(compare(df))
    assert "bucket=ring" in text and text.count("(tie)") == 2 and "+0%" not in text


def test_a_real_difference_is_not_a_tie():
    rel = 1e3 * TIE_RTOL                  # far above noise: a (small) win
    df = frame([("torus:8x8", 64, 1024, "ring", 8e9),
                ("torus:8x8", 64, 1024, "bucket", 8e9 * (1 + rel))])
    cmp = compare(df).set_index("algorithm")
    assert bool(cmp.loc["bucket", "is_best"]) and not cmp.loc["ring", "is_best"]
    assert cmp.loc["bucket", "gain"] == pytest.approx(rel, rel=1e-6)
    assert set(cmp["best"]) == {"bucket"} and not cmp["tie"].any()


def test_ties_only_where_they_are_and_by_algorithm():
    df = frame([("torus:8x8", 64, 1024, "ring", 4.0), ("torus:8x8", 64, 1024, "swing", 4.0),
                ("torus:8x8", 64, 2048, "ring", 4.0), ("torus:8x8", 64, 2048, "swing", 6.0),
                ("torus:8x8", 64, 1024, "recdoub:variant=latency", 1.0),
                ("torus:8x8", 64, 1024, "recdoub:variant=bandwidth", 4.0)])
    df["label"] = df["algorithm"]
    df["algorithm"] = df["label"].str.split(":").str[0]
    cmp = compare(df)
    small = cmp[cmp.size_bytes == 1024].set_index("algorithm")
    assert set(small["best"]) == {"recdoub:variant=bandwidth=ring=swing"}
    assert list(small.index[small.is_best]) == ["recdoub:variant=bandwidth", "ring", "swing"]
    big = cmp[cmp.size_bytes == 2048].set_index("algorithm")
    assert not big["tie"].any() and big.loc["swing", "gain"] == pytest.approx(0.5)
    # merging the variants: recdoub's better variant ties too
    by_alg = compare(df, by="algorithm")
    assert set(by_alg[by_alg.size_bytes == 1024]["best"]) == {"recdoub=ring=swing"}


# ------------------------------------------------------------------ the heatmap

def cell_texts(ax):
    return {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in ax.texts}


def test_gain_heatmap_marks_ties_and_reads_well():
    # one topology, three sizes: swing ties ring (1 KiB), wins big (2 KiB), loses (4 KiB)
    df = frame([("torus:8x8", 64, 1024, "swing", 5e9 * (1 + 1e-15)),
                ("torus:8x8", 64, 1024, "ring", 5e9),
                ("torus:8x8", 64, 2048, "swing", 9e9), ("torus:8x8", 64, 2048, "ring", 3e9),
                ("torus:8x8", 64, 4096, "swing", 4e9), ("torus:8x8", 64, 4096, "ring", 5e9)])
    fig = gain_figure(df)                                 # swing's gain by default
    ax = fig.axes[0]
    img = ax.images[0].get_array()
    assert np.allclose(img[0, 0], to_rgba(TIE_COLOR))     # the tie is grey, not a blue win
    texts = cell_texts(ax)
    assert texts[(0, 0)].get_text() == "="
    assert texts[(0, 1)].get_text() == "+200"             # 9/3 - 1, in percent
    assert texts[(0, 2)].get_text() == "-20"              # 4/5 - 1
    assert img[0, 1][2] > img[0, 1][0] and img[0, 2][0] > img[0, 2][2]  # blue win, red loss
    # text colour against the cell: the +200 % cell is the darkest blue -> light text
    assert texts[(0, 1)].get_color() == "white"
    assert texts[(0, 0)].get_color() != "white"
    legend_texts = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert any(t.startswith("= tie") for t in legend_texts)


def test_gain_heatmap_winner_mode_ties_and_colours():
    df = frame([("torus:8x8", 64, 1024, "bucket", 5e9), ("torus:8x8", 64, 1024, "ring", 5e9),
                ("torus:8x8", 64, 2048, "bucket", 9e9), ("torus:8x8", 64, 2048, "ring", 3e9)])
    fig = gain_figure(df)                                 # no swing: the best's margin
    ax = fig.axes[0]
    img = ax.images[0].get_array()
    assert np.allclose(img[0, 0], to_rgba(TIE_COLOR))
    assert cell_texts(ax)[(0, 0)].get_text() == "="
    assert cell_texts(ax)[(0, 1)].get_text() == "+200"
    # the winner's colour is the algorithm's colour (lightened for the text)
    bucket = np.array(to_rgba(KNOWN["bucket"][0]))[:3]
    assert np.allclose(img[0, 1][:3], 0.6 * bucket + 0.4)
    legend_texts = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert "bucket" in legend_texts and "ring" not in legend_texts   # ring never wins alone


def test_gain_range_is_symmetric_and_clipped_at_a_percentile():
    rows = []
    for k, size in enumerate(2 ** np.arange(5, 25)):
        rows += [("torus:8x8", 64, int(size), "swing", 1e9 * (1.1 if k else 50.0)),
                 ("torus:8x8", 64, int(size), "ring", 1e9)]
    fig = gain_figure(frame(rows))
    cbar = fig.axes[1]
    lo, hi = cbar.get_ylim()
    assert lo == pytest.approx(-hi)
    # 19 cells at +10 % and one outlier at +4900 %: the range is not the outlier's
    assert hi < 100
    assert "clipped" in cbar.get_ylabel() and "percentile" in cbar.get_ylabel()
    assert cell_texts(fig.axes[0])[(0, 0)].get_text() == "+4900"    # true value in the cell


def test_a_small_heatmap_is_not_clipped():
    """Three cells (+11 %, +167 %, -8.2 %): a 95th percentile of three values
    clipped at the middle one, so +11 % and +167 % looked alike. Below 20
    cells the range is the largest |gain| and nothing is clipped."""
    rows = []
    for size, swing in ((1024, 1.11), (2048, 2.67), (4096, 1 / 1.082)):
        rows += [("torus:8x8", 64, size, "swing", 1e9 * swing), ("torus:8x8", 64, size, "ring", 1e9)]
    fig = gain_figure(frame(rows))
    cbar = fig.axes[1]
    lo, hi = cbar.get_ylim()
    assert hi == pytest.approx(167.0) and lo == pytest.approx(-167.0)
    assert "clipped" not in cbar.get_ylabel()


def test_text_colour_contrast():
    assert text_color_on((1, 1, 1, 1)) != "white"
    assert text_color_on((0, 0, 0.3, 1)) == "white"
    assert text_color_on(to_rgba(TIE_COLOR)) != "white"


# ------------------------------------------------------------------ stable styles

def test_same_label_same_look_in_figures_with_different_algorithms():
    sizes = [32, 1024, 32768]
    few = frame([("torus:4x4", 16, s, a, g * s) for s in sizes
                 for a, g in (("swing", 3.0), ("ring", 1.0))])
    many = frame([("torus:4x4", 16, s, a, g * s) for s in sizes
                  for a, g in (("aardvark", 0.5), ("bucket", 2.0), ("ring", 1.0),
                               ("recdoub:variant=latency", 1.5),
                               ("recdoub:variant=bandwidth", 1.2))])
    a, b = lines_by_label(goodput_figure(few)), lines_by_label(goodput_figure(many))
    look = ("get_color", "get_marker", "get_linestyle", "get_fillstyle")
    assert [getattr(a["ring"], f)() for f in look] == [getattr(b["ring"], f)() for f in look]
    assert a["swing"].get_color() == KNOWN["swing"][0]
    assert b["ring"].get_color() == KNOWN["ring"][0]
    # variants share the colour and marker, and differ in line style and fill
    lat, bw = b["recdoub:variant=latency"], b["recdoub:variant=bandwidth"]
    assert lat.get_color() == bw.get_color() == KNOWN["recdoub"][0]
    assert (lat.get_linestyle(), lat.get_fillstyle()) != (bw.get_linestyle(), bw.get_fillstyle())
    # an unknown algorithm: not a known one's colour, not the tie grey
    other = b["aardvark"].get_color()
    assert other not in [c for c, _ in KNOWN.values()] + [TIE_COLOR]
    assert style_map(["ring", "aardvark"]) == {"ring": algorithm_style("ring"),
                                               "aardvark": algorithm_style("aardvark")}


def test_style_is_the_same_in_another_process():
    # a CRC, not Python's salted hash(): the same colour in every run
    code = ("from flowemu.study.figures.style import algorithm_style as s; "
            "print(s('zebra:k=3').color, s('zebra:k=3').linestyle, sep='|')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONHASHSEED": "123"}).stdout.strip().split("|")
    style = algorithm_style("zebra:k=3")
    assert out == [style.color, str(style.linestyle)]


# ------------------------------------------------------------------ log axes

def test_log_scale_only_when_values_span_decades():
    assert not use_log_scale([1.0, 100.0])          # exactly two decades: linear
    assert use_log_scale([1.0, 100.5])
    assert not use_log_scale([5.0, 5.0, 0.0, np.nan])
    sizes = 2 ** np.arange(5, 30, 4)
    # goodput of a latency-bound-then-bandwidth-bound line: size / (1 us + size / 50 GB/s)
    good = sizes / (1e-6 + sizes / 5e10)
    span = frame([("torus:4x4", 16, int(s), "ring", g) for s, g in zip(sizes, good)])
    span["time_s"] = sizes / good
    ax = goodput_figure(span).axes[0]
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()
    ax = goodput_figure(span, metric="time").axes[0]
    assert ax.get_yscale() == "log" and ax.get_ylabel().startswith("time")
    narrow = span[span.size_bytes >= 2 ** 21].copy()    # within ~1.3x of 400 Gb/s
    ax = goodput_figure(narrow).axes[0]
    assert ax.get_yscale() == "linear" and "log" not in ax.get_ylabel()
    assert ax.get_ylim()[0] == 0.0


# ------------------------------------------------------------------ gain curves

def alpha_frame():
    rows = []
    for alpha, bonus in ((0.0, 2.0), (1e-6, 1.0), (2e-6, 0.5)):
        for s in (1024, 2048, 4096):
            rows += [("torus:8x8", 64, s, "swing", bonus * s),
                     ("torus:8x8", 64, s, "ring", 1.0 * s),
                     ("torus:8x8", 64, s, "bucket", 0.8 * s)]
    return frame(rows, {"alpha_s": [r for r in (0.0, 1e-6, 2e-6) for _ in range(9)]})


def test_gain_curve_one_line_per_value():
    fig = gain_curve_figure(alpha_frame(), by="alpha_s")
    lines = lines_by_label(fig)
    curves = {k: v for k, v in lines.items() if k.startswith("alpha")}
    assert sorted(curves) == ["alpha 0s", "alpha 1us", "alpha 2us"]
    # swing's gain over the best other (ring), in percent: bonus / 1 - 1
    for name, gain in (("alpha 0s", 100.0), ("alpha 1us", 0.0), ("alpha 2us", -50.0)):
        assert np.allclose(curves[name].get_ydata(), gain)
        assert list(curves[name].get_xdata()) == [1024, 2048, 4096]
    # every curve in swing's colour family; the points in the best other's colour
    assert lines["best other: ring"].get_color() == KNOWN["ring"][0]


def test_gain_curve_bad_by_and_algorithm(tmp_path):
    df = alpha_frame()
    with pytest.raises(ConfigError, match="^by: 'latency' is not a configuration column"):
        plot_gain_curves(df, tmp_path / "x.png", by="latency")
    with pytest.raises(ConfigError, match="^algorithm: 'pie'"):
        plot_gain_curves(df, tmp_path / "x.png", algorithm="pie")
    with pytest.raises(ConfigError, match="^algorithm: no swing"):
        plot_gain_curves(df[df.algorithm != "swing"], tmp_path / "x.png")
    out = plot_gain_curves(df, tmp_path / "ok.png", algorithm="ring")
    assert out.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ConfigError, match="option\\(s\\) by not allowed with kind 'goodput'"):
        plot(df, tmp_path / "x.png", "goodput", by="alpha_s")
    with pytest.raises(ConfigError, match="metric: 'pie'"):
        goodput_figure(df, metric="pie")


def test_cli_gain_curve(tmp_path, capsys):
    data = tmp_path / "alpha.csv"
    alpha_frame().to_csv(data, index=False)
    out = tmp_path / "gc.png"
    assert main(["plot", str(data), "--kind", "gain-curve", "--by", "alpha_s",
                 "-o", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()
    for argv, names in (
            (["--kind", "gain-curve", "--by", "colour"], ("--by", "'colour'", "alpha_s")),
            (["--kind", "goodput", "--by", "alpha_s"], ("--by", "gain-curve")),
            (["--kind", "time", "--algorithm", "swing"], ("--algorithm",))):
        assert main(["plot", str(data), "-o", str(tmp_path / "bad.png"), *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("flowemu: error:")
        assert "Traceback" not in err and all(n in err for n in names)
    assert not (tmp_path / "bad.png").exists()


def test_cli_gain_curve_subprocess(tmp_path):
    data = tmp_path / "alpha.csv"
    alpha_frame().to_csv(data, index=False)
    res = subprocess.run([sys.executable, "-m", "flowemu", "plot", str(data), "--kind",
                          "gain-curve", "--by", "nope", "-o", str(tmp_path / "x.png")],
                         check=False, capture_output=True, text=True)
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.splitlines()) == 1 and "Traceback" not in res.stderr
    assert "--by: 'nope'" in res.stderr


def test_small_gains_are_not_printed_as_zero():
    """A loss of 0.5 % reads (-0.5%), not (-0%), which looks like a tie."""
    from flowemu.study.ranking import _gain_text, format_gain
    assert _gain_text(-0.005) == " (-0.5%)" and _gain_text(0.0003) == " (+0.03%)"
    assert _gain_text(0.12) == " (+12%)" and _gain_text(-2e-7) == " (-<0.01%)"
    assert _gain_text(float("nan")) == "" and format_gain(-0.1234) == "-12%"


def test_a_gain_near_minus_100_percent_is_not_a_goodput_of_zero():
    """-99.5 % read (-100%), a goodput of 0; the digits that tell them apart
    are kept. A gain of -100 % is shown as such, +99.6 % rounds as before."""
    from flowemu.study.ranking import format_gain
    assert format_gain(-0.995) == "-99.5%" and format_gain(-0.9996) == "-99.96%"
    assert format_gain(-1.0) == "-100%" and format_gain(0.996) == "+100%"
    assert format_gain(-0.994) == "-99%"


def test_a_panel_title_says_each_value_once():
    """A group named after its collective was titled 'allreduce ·
    fattree:k=16 · allreduce · no background'."""
    from flowemu.study.figures.common import scenario_title
    row = pd.Series({"group": "allreduce", "topology": "fattree:k=16",
                     "collective": "allreduce", "background": ""})
    assert scenario_title(row, list(row.index)) == "allreduce · fattree:k=16 · no background"
    row["group"] = "big"
    assert scenario_title(row, list(row.index)) == ("big · fattree:k=16 · allreduce · "
                                                    "no background")


def test_a_gain_curve_by_topology_is_one_panel():
    """by='topology' (the column the refusal of a single-valued `by`
    suggests) left no scenario column, and a panel was drawn for every row
    (18 identical untitled panels for 3 topologies x 6 sizes)."""
    import flowemu
    from flowemu.study.figures.common import scenario_keys
    from flowemu.study.figures.gain import gain_curve_figure
    df = pd.concat([flowemu.simulate(t, a, "1KiB..4KiB") for t in ("torus:4x4", "fattree:k=4")
                    for a in ("ring", "recdoub")], ignore_index=True)
    assert scenario_keys(df, exclude=("topology",)) == ([], [()])
    fig = gain_curve_figure(df, by="topology", algorithm="recdoub")
    panels = [ax for ax in fig.axes if ax.get_lines()]
    assert len(panels) == 1
    assert {line.get_label() for line in panels[0].get_lines()} >= {"torus:4x4", "fattree:k=4"}
