"""Figures: goodput lines and gain heatmaps are written as non-empty PNGs."""

import pandas as pd
import pytest

from flowemu.cli.app import main
from flowemu.core.errors import ConfigError
from flowemu.study.figures.plots import figures, plot, plot_gain, plot_goodput
from flowemu.study.results import FIGURES_DIR
from flowemu.study.sweep import sweep

PNG = b"\x89PNG\r\n\x1a\n"

CFG = """
sizes = "32B..1MiB"
algorithm = ["ring", "recdoub", "recdoub:variant=latency"]
[groups.tori]
topology = ["torus:4x4", "torus:8", "torus:2x2x2"]
[groups.bw]
topology = "torus:4x4"
bandwidth = ["100Gb/s", "400Gb/s"]
"""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plots")
    (tmp / "p.toml").write_text(CFG)
    sweep(tmp / "p.toml", tmp / "p", jobs=1, progress=False)
    return tmp / "p"


def is_png(path):
    data = path.read_bytes()
    return data[:8] == PNG and len(data) > 5000


def test_goodput_and_gain_png(dataset, tmp_path):
    for kind in ("goodput", "gain"):
        out = plot(dataset, tmp_path / f"{kind}.png", kind)
        assert is_png(out)
    out = plot(dataset, tmp_path / "ring.png", "gain", algorithm="ring", group="bw")
    assert is_png(out)


def test_figures_per_group(dataset, tmp_path):
    paths = figures(dataset, tmp_path)
    assert sorted(p.name for p in paths) == ["gain-bw.png", "gain-tori.png",
                                             "goodput-bw.png", "goodput-tori.png"]
    assert all(is_png(p) for p in paths)


def test_hand_made_frame_without_sweep_columns(tmp_path):
    df = pd.DataFrame({
        "topology": ["torus:8x8"] * 4, "nodes": 64, "size_bytes": [32, 1024, 32, 1024],
        "algorithm": ["swing", "swing", "ring", "ring"],
        "goodput_Bps": [1e8, 5e9, 1e7, 2e9]})
    assert is_png(plot_goodput(df, tmp_path / "g.png"))
    assert is_png(plot_gain(df, tmp_path / "h.png"))      # swing's gain by default


def test_where_and_too_many_scenarios(tmp_path):
    rows = []
    for bw in (1e10, 5e10, 2e11):
        for hop in (0.0, 3e-7):
            for alg, g in (("ring", 1e9), ("recdoub", 2e9)):
                for size in (1024, 2048):
                    rows.append(("torus:4x4", 16, size, alg, g * bw / 5e10, bw, hop))
    df = pd.DataFrame(rows, columns=["topology", "nodes", "size_bytes", "algorithm",
                                     "goodput_Bps", "bandwidth_Bps", "hop_latency_s"])
    from flowemu.study.figures.common import limit_scenarios
    kept, note = limit_scenarios(df, 2)
    # bandwidth (3 values) is fixed first, at the paper's 400 Gb/s
    assert set(kept["bandwidth_Bps"]) == {5e10} and set(kept["hop_latency_s"]) == {0.0, 3e-7}
    assert "400Gb/s" in note and "--where" in note
    assert limit_scenarios(df, 6)[1] == ""
    assert is_png(plot_goodput(df, tmp_path / "g.png", max_panels=2))
    assert is_png(plot_gain(df, tmp_path / "h.png", where="hop_latency_s > 0"))
    with pytest.raises(ConfigError, match="^where: "):
        plot_gain(df, tmp_path / "h.png", where="no_such_column > 1")


def test_plot_mistakes(dataset, tmp_path, capsys):
    with pytest.raises(ConfigError, match="kind"):
        plot(dataset, tmp_path / "x.png", "pie")
    with pytest.raises(ConfigError, match="no group 'nope'"):
        plot(dataset, tmp_path / "x.png", group="nope")
    with pytest.raises(ConfigError, match="not in the data"):
        plot(dataset, tmp_path / "x.png", "gain", algorithm="swing")
    with pytest.raises(ConfigError, match="does not exist"):
        plot(dataset, tmp_path / "no" / "x.png")
    assert main(["plot", str(dataset), "--out", str(tmp_path / "x.png"), "--kind", "pie"]) == 2
    assert main(["plot", str(dataset), "--out", str(tmp_path / "x.txt")]) == 2
    assert main(["plot", str(dataset), "-o", str(tmp_path / "x.png"), "-t", "torus:9x9"]) == 2
    assert capsys.readouterr().err.count("flowemu: error:") == 3


def test_cli_plot(dataset, tmp_path, capsys):
    out = tmp_path / "fig.png"
    assert main(["plot", str(dataset), "--out", str(out), "--kind", "gain", "--group",
                 "tori", "--title", "T"]) == 0
    assert is_png(out)
    out = tmp_path / "one.png"
    assert main(["plot", str(dataset), "-o", str(out), "-t", "torus:4x4,torus:8"]) == 0
    assert is_png(out)
    # a second panel under each goodput panel: the share of the best at each size
    out = tmp_path / "relative.png"
    assert main(["plot", str(dataset), "-o", str(out), "--group", "tori", "--relative"]) == 0
    assert is_png(out)
    assert main(["plot", str(dataset)]) == 0            # every figure into DATASET/_figures
    assert len(list((dataset / FIGURES_DIR).glob("*.png"))) == 4


# ------------------------------------------------------------------ looks and layout

def _frame(topologies, algorithms, sizes=(1024, 2048, 2**20)):
    """Results by hand: each algorithm a constant factor apart (no ties)."""
    rows = []
    for t in topologies:
        for k, alg in enumerate(algorithms):
            for size in sizes:
                g = 1e9 * (1 + 0.1 * k) * (1 + size / 1e4)
                rows.append((t, 72, size, alg, g, size / g))
    return pd.DataFrame(rows, columns=["topology", "nodes", "size_bytes", "algorithm",
                                       "goodput_Bps", "time_s"])


def _line_looks(fig) -> dict:
    """label -> (colour, marker, line style, fill) of the figure's lines."""
    from matplotlib.colors import to_hex
    looks = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            lab = line.get_label()
            if not lab.startswith("_"):
                looks[lab] = (to_hex(line.get_color()), line.get_marker(),
                              str(line.get_linestyle()), line.get_fillstyle())
    return looks


def test_every_algorithm_looks_different_in_a_time_plot():
    """cps and reduce-broadcast were both brown pentagons: every registered
    algorithm has its own colour and marker, and the variants of one differ
    in line style and fill."""
    from flowemu.algorithms import algorithm_names
    from flowemu.study.figures.plots import goodput_figure
    labels = list(algorithm_names()) + ["recdoub:variant=latency", "recdoub:variant=bandwidth"]
    fig = goodput_figure(_frame(["tree:8"], labels), metric="time")
    looks = _line_looks(fig)
    assert sorted(looks) == sorted(labels)
    assert len(set(looks.values())) == len(labels)
    names = {lab: lab.partition(":")[0] for lab in labels}
    pairs = {}
    for lab, (color, marker, _, _) in looks.items():
        pairs.setdefault(names[lab], set()).add((color, marker))
    assert all(len(p) == 1 for p in pairs.values())     # one look per algorithm name
    assert len({p.pop() for p in pairs.values()}) == len(pairs)   # no two names alike
    assert looks["cps"][:2] != looks["reduce-broadcast"][:2]


def test_unknown_names_hashing_alike_differ_in_one_figure():
    from flowemu.study.figures.style import KNOWN, _name_look, algorithm_style, style_map
    seen, clash = {}, None
    for i in range(2000):       # two names whose hashed looks coincide
        name = f"alg{i}"
        look = _name_look(name)
        if look in seen:
            clash = (seen[look], name)
            break
        seen[look] = name
    assert clash is not None
    a, b = clash
    assert algorithm_style(a).color == algorithm_style(b).color
    styles = style_map([a, b, "ring"])
    assert (styles[a].color, styles[a].marker) != (styles[b].color, styles[b].marker)
    assert styles["ring"] == algorithm_style("ring")
    # many unknown names (more than the colours): still no two alike, none like a known one
    many = [f"alg{i}" for i in range(40)] + list(KNOWN)
    looks = {(s.color, s.marker) for s in style_map(many).values()}
    assert len(looks) == len(many)


LONG = ("dragonfly:a=4,p=2,h=2,g=9,local=200Gb/s,global=100Gb/s,local_latency=100ns,"
        "global_latency={}us")


@pytest.mark.parametrize("n", [1, 4])
def test_gain_with_long_topology_labels_lays_out(n):
    """Long row labels collapsed the heatmap ("constrained_layout not
    applied"): with warnings as errors, every figure kind draws, the heatmap
    keeps a real size and no two panel titles overlap."""
    import warnings

    from flowemu.study.figures.plots import gain_figure, goodput_figure
    df = _frame([LONG.format(i) for i in range(n)], ["ring", "cps", "reduce-broadcast"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for alg in (None, "ring"):
            fig = gain_figure(df, algorithm=alg)
            fig.canvas.draw()
            heat = fig.axes[0]
            w, h = heat.get_position().width * fig.get_figwidth(), \
                heat.get_position().height * fig.get_figheight()
            assert w > 2 and h > 0.3 * n
        fig = goodput_figure(df, metric="time")
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_title()]
    assert len(boxes) == n
    for i, a in enumerate(boxes):
        assert all(not a.overlaps(b) for b in boxes[i + 1:])
