"""Figures: goodput lines and gain heatmaps are written as non-empty PNGs."""

import pandas as pd
import pytest

from flowemu.cli import main
from flowemu.errors import ConfigError
from flowemu.plots import figures, plot, plot_gain, plot_goodput
from flowemu.sweep import sweep

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
    from flowemu.plots import _limit_scenarios
    kept, note = _limit_scenarios(df, 2)
    # bandwidth (3 values) is fixed first, at the paper's 400 Gb/s
    assert set(kept["bandwidth_Bps"]) == {5e10} and set(kept["hop_latency_s"]) == {0.0, 3e-7}
    assert "400Gb/s" in note and "--where" in note
    assert _limit_scenarios(df, 6)[1] == ""
    assert is_png(plot_goodput(df, tmp_path / "g.png", max_panels=2))
    assert is_png(plot_gain(df, tmp_path / "h.png", where="hop_latency_s > 0"))
    with pytest.raises(ConfigError, match="--where"):
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
    assert main(["plot", str(dataset)]) == 0            # every figure into DATASET/figures
    assert len(list((dataset / "figures").glob("*.png"))) == 4
