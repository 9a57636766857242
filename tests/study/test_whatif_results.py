"""What-if results: compare --by whatif (slowdown against the healthy network,
Monte-Carlo failure seeds aggregated), what-if conditions as scenario columns
in the plain comparison, and the slowdown figure (plot --kind slowdown)."""

import json

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.core.errors import ConfigError
from flowemu.study.figures.plots import figures, plot
from flowemu.study.figures.slowdown import plot_slowdown, slowdown_figure
from flowemu.study.results import (
    FIGURES_DIR,
    compare,
    compare_table,
    compare_whatif,
    scenario_columns,
    without_seed,
)
from tests.helpers.cli import one_error_line, run

PNG = b"\x89PNG\r\n\x1a\n"


def is_png(path):
    data = path.read_bytes()
    return data[:8] == PNG and len(data) > 5000


def row(topology, alg, size, time, fail="", failed=0, degrade="", policy="reroute", slow="",
        background=""):
    return {"topology": topology, "nodes": 64 if topology == "torus:8x8" else 16,
            "algorithm": alg.split(":")[0], "label": alg, "size_bytes": size, "time_s": time,
            "goodput_Bps": size / time, "fail": fail, "degrade": degrade,
            "fail_policy": policy if fail else "strict", "slow": slow,
            "background": background, "failed_links": failed, "background_Bps": np.nan}


# healthy times (s) and, per failure count, the time factor of seeds 0..3
HEALTHY = {("torus:8x8", "ring", 1024): 2.0, ("torus:8x8", "swing", 1024): 1.0,
           ("torus:8x8", "ring", 4096): 8.0, ("torus:8x8", "swing", 4096): 5.0,
           ("fattree:k=4", "ring", 1024): 3.0, ("fattree:k=4", "swing", 1024): 4.0}
FACTORS = {1: [1.25, 1.5, 1.0, 2.0], 4: [1.5, 2.5, 2.0, 3.0]}


def hand_frame():
    rows = []
    for (topo, alg, size), h in HEALTHY.items():
        rows.append(row(topo, alg, size, h))
        for k, factors in FACTORS.items():
            # swing suffers twice the extra time ring does
            for seed, f in enumerate(factors):
                f = f if alg == "ring" else 1 + 2 * (f - 1)
                rows.append(row(topo, alg, size, h * f, f"random:{k}:{seed}", k))
        rows.append(row(topo, alg, size, h * 1.5, degrade="link:0=0.5"))
    return pd.DataFrame(rows)


def swept(tmp_path, text, name="g"):
    """The dataset of the sweep file ``text``, run in ``tmp_path/name``."""
    from flowemu.study.sweep import sweep
    cfg = tmp_path / f"{name}.toml"
    cfg.write_text(text)
    sweep(cfg, tmp_path / name, jobs=1, progress=False)
    return flowemu.load(tmp_path / name)


def standard_figures(tmp_path, text):
    """``(paths, notes)`` of ``flowemu plot DATASET`` on the sweep ``text``."""
    swept(tmp_path, text)
    notes = []
    return figures(tmp_path / "g", tmp_path / "f", notes=notes), notes


def pick(cmp, **where):
    sel = cmp
    for k, v in where.items():
        sel = sel[sel[k] == v]
    assert len(sel) == 1, sel
    return sel.iloc[0]


# ------------------------------------------------------------------ compare --by whatif

def test_whatif_compare_hand_frame_closed_form():
    df = hand_frame()
    cmp = compare_whatif(df)
    assert cmp.equals(compare(df, by="whatif"))
    # per (topology, algorithm, size): healthy, fail random:1, fail random:4, degrade
    assert len(cmp) == 4 * len(HEALTHY)
    for (topo, alg, size), h in HEALTHY.items():
        r = pick(cmp, topology=topo, algorithm=alg, size_bytes=size, condition="healthy")
        assert (r.seeds, r.failed_links, r.fail, r.fail_policy) == (1, 0, "", "")
        assert r.healthy_time_s == h and r.time_s == h and r.slowdown == 1.0
        for k, factors in FACTORS.items():
            f = np.array(factors) if alg == "ring" else 1 + 2 * (np.array(factors) - 1)
            r = pick(cmp, topology=topo, algorithm=alg, size_bytes=size,
                     condition=f"fail random:{k}")
            assert (r.seeds, r.failed_links, r.fail, r.fail_policy) == \
                (4, k, f"random:{k}", "reroute")
            assert r.healthy_time_s == h
            assert r.slowdown == pytest.approx(f.mean())
            assert (r.slowdown_min, r.slowdown_max) == pytest.approx((f.min(), f.max()))
            assert r.time_s == pytest.approx(h * f.mean())
            assert (r.time_min_s, r.time_max_s) == pytest.approx((h * f.min(), h * f.max()))
        r = pick(cmp, topology=topo, algorithm=alg, size_bytes=size,
                 condition="degrade link:0=0.5")
        assert (r.seeds, r.slowdown, r.slowdown_min, r.slowdown_max) == (1, 1.5, 1.5, 1.5)
    # healthy first, then by failed links
    first = cmp[(cmp.topology == "torus:8x8") & (cmp.algorithm == "ring")
                & (cmp.size_bytes == 1024)]
    assert list(first.condition) == ["healthy", "degrade link:0=0.5", "fail random:1",
                                     "fail random:4"]
    table = compare_table(cmp).splitlines()
    assert len(table) == 1 + len(cmp) and "fail_policy" not in table[0]


def test_whatif_compare_groups_by_failed_cables_and_rest_of_selector():
    rows = [row("torus:8x8", "ring", 1024, 1.0)]
    # random:2 plus link 7: seed 0 draws two other cables (3 fail), seed 1 draws link 7
    rows += [row("torus:8x8", "ring", 1024, 2.0, "random:2:0;link:7", 3),
             row("torus:8x8", "ring", 1024, 4.0, "random:2:5;link:7", 3),
             row("torus:8x8", "ring", 1024, 8.0, "random:2:1;link:7", 2),
             row("torus:8x8", "ring", 1024, 16.0, "random:2:0;link:9", 3)]
    cmp = compare_whatif(pd.DataFrame(rows))
    got = {(r.fail, r.failed_links): (r.seeds, r.slowdown) for r in cmp.itertuples()}
    assert got == {("", 0): (1, 1.0), ("random:2;link:7", 3): (2, 3.0),
                   ("random:2;link:7", 2): (1, 8.0), ("random:2;link:9", 3): (1, 16.0)}
    assert without_seed("random:16:3;node:5;random:2:11=0.5") == "random:16;node:5;random:2=0.5"
    assert without_seed("link:4;3,*") == "link:4;3,*"


def test_whatif_compare_without_a_healthy_twin_is_nan():
    df = pd.concat([hand_frame(), pd.DataFrame([row("torus:8x8", "ring", 2048, 5.0,
                                                    "random:1:0", 1)])])
    r = pick(compare_whatif(df), size_bytes=2048)
    assert r.seeds == 1 and np.isnan(r.healthy_time_s) and np.isnan(r.slowdown)
    assert r.time_s == 5.0


def test_whatif_compare_later_row_replaces_earlier():
    df = hand_frame()
    again = df[(df.fail == "random:4:0") & (df.label == "ring") & (df.size_bytes == 1024)
               & (df.topology == "torus:8x8")].assign(time_s=20.0)
    cmp = compare_whatif(pd.concat([df, again], ignore_index=True))
    r = pick(cmp, topology="torus:8x8", algorithm="ring", size_bytes=1024,
             condition="fail random:4")
    assert r.seeds == 4
    assert r.slowdown == pytest.approx((10.0 + 2.5 + 2.0 + 3.0) / 4)


def test_whatif_compare_refusals():
    df = hand_frame()
    healthy = df[(df.fail == "") & (df.degrade == "")]
    with pytest.raises(ConfigError, match="no what-if rows") as e:
        compare_whatif(healthy)
    assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="no what-if rows"):
        compare_whatif(healthy.drop(columns=["fail", "degrade", "slow", "background"]))
    with pytest.raises(ConfigError, match="no healthy rows"):
        compare_whatif(df[df.fail != ""])
    with pytest.raises(ConfigError, match="lacks column"):
        compare_whatif(df.drop(columns="time_s"))
    with pytest.raises(ConfigError, match="'whatif'"):
        compare(df, by="what")


@pytest.fixture(scope="module")
def simulated():
    """Every algorithm on a torus and a fat tree, healthy and with 1 or 2
    random failed cables over 3 seeds (independent simulate calls)."""
    frames = []
    for topo in ("torus:8x8", "fattree:k=4"):
        for alg in ("swing", "ring", "bucket", "recdoub"):
            frames.append(flowemu.simulate(topo, alg, "1KiB,1MiB", fail_policy="reroute"))
            for k in (1, 2):
                for seed in range(3):
                    frames.append(flowemu.simulate(topo, alg, "1KiB,1MiB",
                                                   fail=f"random:{k}:{seed}",
                                                   fail_policy="reroute"))
    return pd.concat(frames, ignore_index=True)


def test_whatif_compare_simulated_matches_independent_merge(simulated):
    df = simulated
    cmp = compare_whatif(df)
    # the oracle: each faulty row over the healthy row of its topology, algorithm, size
    healthy = df[df.fail == ""][["topology", "algorithm", "size_bytes", "time_s"]]
    assert not healthy.duplicated(["topology", "algorithm", "size_bytes"]).any()
    faulty = df[df.fail != ""].merge(healthy, on=["topology", "algorithm", "size_bytes"],
                                     suffixes=("", "_healthy"))
    assert len(faulty) == len(df[df.fail != ""])
    faulty["ratio"] = faulty["time_s"] / faulty["time_s_healthy"]
    faulty["k"] = faulty["fail"].str.split(":").str[1].astype(int)
    expect = faulty.groupby(["topology", "algorithm", "size_bytes", "k"])["ratio"].agg(
        ["mean", "min", "max", "size"])
    assert len(cmp) == len(expect) + len(healthy)
    for (topo, alg, size, k), e in expect.iterrows():
        r = pick(cmp, topology=topo, algorithm=alg, size_bytes=size,
                 condition=f"fail random:{k}")
        assert r.seeds == e["size"] == 3 and r.failed_links == k
        assert (r.slowdown, r.slowdown_min, r.slowdown_max) == \
            pytest.approx((e["mean"], e["min"], e["max"]), rel=1e-12)
    # a failure on the torus slows the topology-bound ring (its neighbour links)
    assert (cmp[(cmp.topology == "torus:8x8") & (cmp.algorithm == "ring")
                & (cmp.condition != "healthy")]["slowdown_min"] > 1).all()
    assert (cmp.loc[cmp.condition == "healthy", "slowdown"] == 1.0).all()


# ------------------------------------------------------------------ plain compare

def test_healthy_and_faulty_rows_never_compete():
    df = hand_frame()
    assert {"fail", "degrade"} <= set(scenario_columns(df))
    assert not {"failed_links", "background_Bps"} & set(scenario_columns(df))
    cmp = compare(df)
    assert len(cmp) == len(df)
    # every comparison cell holds one condition, and ranks the two algorithms of it
    cells = cmp.groupby(["topology", "size_bytes", "fail", "degrade"])
    assert (cells["algorithm"].nunique() == 2).all()
    # healthy torus 1 KiB: swing (1 s) beats ring (2 s) by 100 %
    r = pick(cmp, topology="torus:8x8", size_bytes=1024, fail="", degrade="",
             algorithm="swing")
    assert r.gain == pytest.approx(2.0 / 1.0 - 1) and r.best_other == "ring"
    # seed 3 of 4 failures: ring 2*3 = 6 s, swing 1*(1+2*2) = 5 s: swing by 6/5 - 1,
    # never against the healthy ring's 2 s
    r = pick(cmp, topology="torus:8x8", size_bytes=1024, fail="random:4:3",
             algorithm="swing")
    assert r.gain == pytest.approx(6.0 / 5.0 - 1)
    # the seed 3 torus cell does not see the healthy rows
    assert pick(cmp, topology="torus:8x8", size_bytes=1024, fail="random:4:3",
                algorithm="ring").best_goodput_Bps == pytest.approx(1024 / 5.0)


def test_whatif_columns_missing_text_reads_healthy():
    df = hand_frame()
    df.loc[(df.fail == "") & (df.degrade == ""), ["fail", "degrade", "fail_policy"]] = None
    cmp = compare_whatif(df)
    assert len(cmp) == 4 * len(HEALTHY)
    assert (cmp.loc[cmp.condition == "healthy", "slowdown"] == 1.0).all()
    assert compare(df)["fail"].isna().sum() == 0


# ------------------------------------------------------------------ command line

@pytest.fixture()
def hand_file(tmp_path):
    path = tmp_path / "wi.parquet"
    hand_frame().to_parquet(path)
    return path


def test_cli_compare_whatif_formats(hand_file, tmp_path, capsys):
    code, out, err = run(capsys, ["compare", str(hand_file), "--by", "whatif"])
    assert code == 0 and not err
    lines = out.splitlines()
    assert "condition" in lines[0] and "slowdown" in lines[0] and "min–max" in lines[0]
    assert len(lines) == 1 + 4 * len(HEALTHY)
    # torus ring 1 KiB, 4 failures: factors 1.5, 2.5, 2, 3 -> mean 2.25, 1.5–3
    line = [ln for ln in lines if "torus:8x8" in ln and " ring " in ln and "1KiB" in ln
            and "random:4" in ln]
    assert len(line) == 1 and "2.25" in line[0] and "1.5–3" in line[0]
    for fmt in ("csv", "json", "parquet"):
        out = tmp_path / f"c.{fmt}"
        code, _, err = run(capsys, ["compare", str(hand_file), "--by", "whatif", "-o",
                                    str(out)])
        assert code == 0 and not err
        got = (pd.read_csv(out, keep_default_na=False) if fmt == "csv" else
               pd.DataFrame(json.loads(out.read_text())) if fmt == "json" else
               pd.read_parquet(out))
        assert len(got) == 4 * len(HEALTHY)
        r = pick(got, topology="fattree:k=4", algorithm="swing", condition="fail random:1")
        f = 1 + 2 * (np.array(FACTORS[1]) - 1)
        assert float(r.slowdown) == pytest.approx(f.mean())
        assert int(r.seeds) == 4


def test_cli_compare_whatif_refusals(hand_file, tmp_path, capsys):
    healthy = tmp_path / "healthy.parquet"
    hand_frame().query("fail == '' and degrade == ''").to_parquet(healthy)
    code, _, err = run(capsys, ["compare", str(healthy), "--by", "whatif"])
    assert code == 2 and "no what-if rows" in one_error_line(err)
    # --where picks what-if rows; their healthy baselines stay (no "no healthy rows")
    code, out, err = run(capsys, ["compare", str(hand_file), "--by", "whatif", "--where",
                                  "fail != ''", "-f", "csv"])
    assert code == 0 and "healthy" in out
    code, _, err = run(capsys, ["compare", str(hand_file), "--by", "whatif", "--where",
                                "topology == 'none'"])
    assert code == 2 and "no results in" in one_error_line(err) and "matching" in err
    code, _, err = run(capsys, ["compare", str(hand_file), "--by", "whatever"])
    assert code == 2 and "whatif" in one_error_line(err)


# ------------------------------------------------------------------ the slowdown figure

def _panel_lines(fig):
    """{(panel title, label): (x, y)} of the figure's labelled lines."""
    out = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            if not line.get_label().startswith("_"):
                out[(ax.get_title(), line.get_label())] = (
                    np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float))
    return out


def test_slowdown_figure_has_no_panel_for_a_healthy_network_alone():
    """A dataset whose fat tree was run healthy only (no what-if beside it)
    drew a panel of one point at 1 for it; the torus's what-ifs keep theirs."""
    df = hand_frame()
    df = df[(df.degrade == "") & ((df.topology == "torus:8x8") | (df.fail == ""))]
    fig = slowdown_figure(df, size="1KiB")
    assert {t for t, _ in _panel_lines(fig)} == {"torus:8x8"}
    assert sum(1 for ax in fig.axes if ax.get_visible() and ax.get_lines()) == 1


def test_slowdown_figure_draws_the_means(tmp_path):
    df = hand_frame()
    df = df[df.degrade == ""]      # failures alone: x is the failed cables
    fig = slowdown_figure(df)      # the largest size: 4 KiB (torus only)
    lines = _panel_lines(fig)
    assert set(lines) == {("torus:8x8", "ring"), ("torus:8x8", "swing")}
    x, y = lines[("torus:8x8", "ring")]
    assert list(x) == [0, 1, 4]
    assert y == pytest.approx([1.0, np.mean(FACTORS[1]), np.mean(FACTORS[4])])
    ax = fig.axes[0]
    assert ax.get_xlabel() == "failed links (cables)"
    assert any(list(line.get_ydata()) == [1.0, 1.0] and line.get_linestyle() == "--"
               for line in ax.get_lines())            # the healthy line
    fig = slowdown_figure(df, size="1KiB")            # both topologies: a panel each
    assert {t for t, _ in _panel_lines(fig)} == {"torus:8x8", "fattree:k=4"}
    assert is_png(plot_slowdown(df, tmp_path / "s.png", size=1024))


def test_slowdown_figure_conditions_on_a_categorical_axis(tmp_path):
    fig = slowdown_figure(hand_frame(), size="1KiB", topologies=["torus:8x8"])
    x, y = _panel_lines(fig)[("torus:8x8", "ring")]
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["healthy", "degrade link:0=0.5", "fail random:1", "fail random:4"]
    assert list(np.round(x)) == [0, 1, 2, 3]      # each algorithm a little aside
    assert y == pytest.approx([1.0, 1.5, np.mean(FACTORS[1]), np.mean(FACTORS[4])])
    assert is_png(plot(hand_frame(), tmp_path / "c.png", "slowdown"))
    # one topology as a plain string is that topology, not its characters
    one = slowdown_figure(hand_frame(), size="1KiB", topologies="torus:8x8")
    assert _panel_lines(one).keys() == _panel_lines(fig).keys()
    with pytest.raises(ConfigError, match="topologies: 8 is not allowed; expected a "
                                          "topology spec or a list"):
        slowdown_figure(hand_frame(), topologies=8)


def test_slowdown_figure_of_simulated_runs(simulated, tmp_path):
    fig = slowdown_figure(simulated, size="1MiB")
    lines = _panel_lines(fig)
    assert {t for t, _ in lines} == {"torus:8x8", "fattree:k=4"}
    cmp = compare_whatif(simulated)
    for (topo, lab), (x, y) in lines.items():
        sel = cmp[(cmp.topology == topo) & (cmp.algorithm == lab)
                  & (cmp.size_bytes == 2**20)].sort_values("failed_links")
        assert list(x) == [0, 1, 2] and y == pytest.approx(sel["slowdown"].to_numpy())
    assert is_png(plot_slowdown(simulated, tmp_path / "sim.png"))


def test_slowdown_figure_refusals(tmp_path):
    df = hand_frame()
    with pytest.raises(ConfigError, match="size: 2KiB is not in the data; sizes: 1KiB, 4KiB"):
        slowdown_figure(df, size="2KiB")
    with pytest.raises(ConfigError, match="--size"):
        slowdown_figure(df, size="lots")
    with pytest.raises(ConfigError, match="no what-if rows"):
        slowdown_figure(df[(df.fail == "") & (df.degrade == "")])
    with pytest.raises(ConfigError, match="no healthy rows"):
        slowdown_figure(df[df.fail != ""])
    lonely = pd.concat([df, pd.DataFrame([row("torus:8x8", "ring", 2**20, 1.0, "random:1:0",
                                              1)])])
    with pytest.raises(ConfigError, match="at 1MiB: the data has no healthy rows"):
        slowdown_figure(lonely)
    # healthy rows, but not of the algorithm that ran with failures
    lonely = pd.concat([df[(df.fail == "") & (df.degrade == "")],
                        pd.DataFrame([row("torus:8x8", "recdoub", 4096, 1.0, "random:1:0", 1)])])
    with pytest.raises(ConfigError, match="healthy twin"):
        slowdown_figure(lonely)
    with pytest.raises(ConfigError, match="not allowed with kind 'goodput'"):
        plot(df, tmp_path / "x.png", "goodput", size="1KiB")


def test_slowdown_figure_says_what_it_leaves_out():
    """A what-if row without a healthy twin has no slowdown: the figure
    draws the others and says under its title what it left out."""
    df = hand_frame()
    assert "left out" not in slowdown_figure(df, size="4KiB")._suptitle.get_text()
    lonely = pd.concat([df, pd.DataFrame([row("torus:8x8", "recdoub", 4096, 1.0, f"random:1:{s}",
                                              1) for s in range(2)])])
    fig = slowdown_figure(lonely, size="4KiB")
    heading = fig._suptitle.get_text().replace("\n", " ")
    assert heading.startswith("slowdown at vector size 4KiB")   # (no title given)
    titled = slowdown_figure(lonely, size="4KiB", title="sd")._suptitle.get_text()
    assert titled.replace("\n", " ").startswith("sd · slowdown at vector size 4KiB")
    assert "(left out, no healthy twin in the data: recdoub (fail random:1))" in heading
    drawn = {ln.get_label() for ax in fig.axes for ln in ax.get_lines()}
    assert "recdoub" not in drawn and {"ring", "swing"} <= drawn
    # the other size has no recdoub rows: nothing left out there
    assert "left out" not in slowdown_figure(lonely, size="1KiB")._suptitle.get_text()
    many = pd.concat([lonely] + [pd.DataFrame([row("torus:8x8", alg, 4096, 1.0, f"random:{k}:0",
                                                   k)]) for alg in ("bucket", "recdoub")
                                 for k in (2, 3)])
    heading = slowdown_figure(many, size="4KiB")._suptitle.get_text().replace("\n", " ")
    assert "(left out, no healthy twin in the data: 5 what-if conditions of bucket, " \
        "recdoub)" in heading


def test_cli_plot_slowdown(hand_file, tmp_path, capsys):
    out = tmp_path / "s.png"
    code, printed, err = run(capsys, ["plot", str(hand_file), "--kind", "slowdown", "--size",
                                      "1KiB", "--title", "T", "-o", str(out)])
    assert code == 0 and not err and printed.strip() == str(out) and is_png(out)
    healthy = tmp_path / "healthy.parquet"
    hand_frame().query("fail == '' and degrade == ''").to_parquet(healthy)
    for argv, needle in (
            ([str(hand_file), "--kind", "slowdown", "--size", "3KiB"], "--size: 3KiB"),
            ([str(hand_file), "--kind", "slowdown", "--size", "big"], "--size"),
            ([str(healthy), "--kind", "slowdown"], "no what-if rows"),
            ([str(hand_file), "--kind", "slowdown", "--where", "topology == 'none'"],
             "--where"),
            ([str(hand_file), "--kind", "gain", "--size", "1KiB"],
             "--size goes with --kind slowdown"),
            ([str(hand_file), "--size", "1KiB"], "--size")):
        out_args = ["-o", str(tmp_path / "x.png")] if argv[1:2] == ["--kind"] else []
        code, _, err = run(capsys, ["plot"] + argv + out_args)
        assert code == 2 and needle in one_error_line(err), argv
    # --where picks what-if rows; their healthy baselines stay
    code, _, err = run(capsys, ["plot", str(hand_file), "--kind", "slowdown", "--where",
                                "fail != ''", "-o", str(tmp_path / "w.png")])
    assert code == 0 and is_png(tmp_path / "w.png")


def test_figures_add_slowdown_only_with_whatifs(hand_file, tmp_path):
    names = sorted(p.name for p in figures(hand_file, tmp_path / "a"))
    assert names == ["gain.png", "goodput.png", "slowdown.png"]
    assert is_png(tmp_path / "a" / "slowdown.png")
    healthy = tmp_path / "healthy.parquet"
    hand_frame().query("fail == '' and degrade == ''").to_parquet(healthy)
    assert sorted(p.name for p in figures(healthy, tmp_path / "b")) == ["gain.png",
                                                                         "goodput.png"]


def test_goodput_figure_of_a_whatif_dataset_shows_the_healthy_network():
    from flowemu.study.figures.plots import goodput_figure
    fig = goodput_figure(hand_frame(), max_panels=2)
    titles = {ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()}
    assert titles == {"torus:8x8", "fattree:k=4"}
    assert "no failures" in fig._suptitle.get_text()
    ring = next(line for ax in fig.axes if ax.get_title() == "torus:8x8"
                for line in ax.get_lines() if line.get_label() == "ring")
    # the healthy ring: 1 KiB in 2 s, 4 KiB in 8 s, in Gb/s
    assert np.asarray(ring.get_ydata()) == pytest.approx([1024 / 2 * 8e-9, 4096 / 8 * 8e-9])


# ------------------------------------------------------------------ a sweep's dataset

def _sweep_has_whatifs() -> bool:
    from flowemu.study.sweep import config
    return "failures" in getattr(config, "WHATIF_FIELDS", ())


@pytest.mark.skipif(not _sweep_has_whatifs(), reason="this tree's sweeps lack what-if fields")
def test_sweep_dataset_compare_and_figures(tmp_path, capsys):
    df = swept(tmp_path, 'sizes = ["1KiB", "64KiB"]\ntopology = ["torus:4x4", "fattree:k=4"]\n'
                         'algorithm = ["swing", "ring"]\nfail_policy = "reroute"\n'
                         'failures = [0, 1, 2]\nfailure_seed = [0, 1]\n', "wf")
    # 2 topologies x 2 algorithms x (1 + 2 x 2) configurations, 2 sizes each
    assert len(df) == 2 * 2 * 5 * 2
    cmp = compare_whatif(df)
    assert len(cmp) == 2 * 2 * 2 * 3
    assert set(cmp["seeds"]) == {1, 2} and set(cmp["failed_links"]) == {0, 1, 2}
    healthy = df[df.fail == ""].set_index(["topology", "label", "size_bytes"])["time_s"]
    for r in cmp.itertuples():
        rows = df[(df.topology == r.topology) & (df.label == r.algorithm)
                  & (df.size_bytes == r.size_bytes) & (df.failed_links == r.failed_links)]
        ratio = rows["time_s"] / healthy[(r.topology, r.algorithm, r.size_bytes)]
        assert r.seeds == len(rows)
        assert (r.slowdown, r.slowdown_min, r.slowdown_max) == \
            pytest.approx((ratio.mean(), ratio.min(), ratio.max()), rel=1e-12)
    # plain compare: one condition per cell
    plain = compare(df)
    assert (plain.groupby(["topology", "size_bytes", "fail"])["algorithm"].nunique() == 2).all()
    code, out, err = run(capsys, ["compare", str(tmp_path / "wf"), "--by", "whatif"])
    assert code == 0 and "fail random:2" in out
    code, out, err = run(capsys, ["plot", str(tmp_path / "wf")])
    assert code == 0 and not err
    assert is_png(tmp_path / "wf" / FIGURES_DIR / "slowdown.png")


def test_slowdown_figure_panels_keep_their_own_axis():
    """torus:8x8 with failures only and fattree:k=4 with a degraded link only:
    the torus panel counts failed cables, the fat-tree panel lists its own
    two conditions (not the torus' failures)."""
    df = hand_frame()
    df = df[((df.topology == "torus:8x8") & (df.degrade == ""))
            | ((df.topology == "fattree:k=4") & (df.fail == ""))]
    fig = slowdown_figure(df, size="1KiB")
    lines = _panel_lines(fig)
    torus_ax = next(ax for ax in fig.axes if ax.get_title() == "torus:8x8")
    tree_ax = next(ax for ax in fig.axes if ax.get_title() == "fattree:k=4")
    assert torus_ax.get_xlabel() == "failed links (cables)"
    assert list(lines[("torus:8x8", "ring")][0]) == [0, 1, 4]
    assert [t.get_text() for t in tree_ax.get_xticklabels()] == ["healthy",
                                                                  "degrade link:0=0.5"]
    x, y = lines[("fattree:k=4", "ring")]
    assert list(np.round(x)) == [0, 1] and y == pytest.approx([1.0, 1.5])


def test_the_healthy_twin_may_be_in_another_group(tmp_path, capsys):
    """The docs advise adding "a group without what-ifs" for a baseline, but
    twins were matched within a group only: every slowdown was NaN and the
    slowdown figure refused to draw. The twin's time is the healthy run's
    (checked against the healthy group's own row)."""
    df = swept(tmp_path, 'sizes = ["1MiB"]\ntopology = "torus:8x8"\n'
                         '[groups.healthy]\nalgorithm = ["swing"]\n'
                         '[groups.faulty]\nalgorithm = ["swing", "recdoub"]\nfailures = [1]\n'
                         'failure_seed = [0, 1]\n')
    out = flowemu.results.slowdown(df)
    base = float(df.loc[(df.group == "healthy"), "time_s"].iloc[0])
    swing = out[(out.group == "faulty") & (out.algorithm == "swing")]
    assert len(swing) == 2 and (swing["healthy_time_s"] == base).all()
    np.testing.assert_allclose(swing["slowdown"], swing["time_s"] / base, rtol=1e-15)
    # recdoub has no healthy row anywhere: no slowdown
    assert out[out.algorithm == "recdoub"]["slowdown"].isna().all()
    code, _, err = run(capsys, ["plot", str(tmp_path / "g"), "--kind", "slowdown",
                                "--out", str(tmp_path / "s.png")])
    assert code == 0 and is_png(tmp_path / "s.png"), err


def test_slowdown_figure_labels_stay_readable():
    """Three things a reader could not read: a log axis within one decade
    labelled its minor ticks 1.4×10^0; twelve conditions' slanted labels
    overlapped; and the caption said "fail policy reroute" of panels with no
    failed link."""
    base = {"nodes": 16, "ranks": 16, "algorithm": "ring", "size_bytes": 2**20, "slow": "",
            "background": "", "failed_links": 0, "fail_policy": "", "fail": "", "degrade": ""}
    rows = [dict(base, topology="fattree:k=4", degrade=d, time_s=t)
            for d, t in (("", 1.0), ("core:0=0.5", 1.4), ("agg:*=0.5:lat=2", 1.6))]
    rows += [dict(base, topology="torus:8x8", nodes=64, ranks=64, failed_links=k, time_s=t,
                  fail=f"random:{k}:0" if k else "", fail_policy="reroute" if k else "")
             for k, t in ((0, 1.0), (1, 3.0), (4, 200.0))]
    fig = slowdown_figure(pd.DataFrame(rows))
    fig.canvas.draw()
    narrow, wide = (ax for ax in fig.axes if ax.get_title())
    assert narrow.get_yscale() == "log"   # (200x on the torus spans the decades)
    minor = [t.get_text() for t in narrow.get_yticklabels(minor=True) if t.get_text()]
    assert {"1.2", "1.4"} <= set(minor) and not any("10^" in m or "e" in m for m in minor)
    assert not any(t.get_text() for t in wide.get_yticklabels(minor=True))
    assert "fail policy reroute where links fail" in [t.get_text() for t in fig.texts]
    # twelve conditions: upright labels
    rows = [dict(base, topology="torus:16x16", background=bg, slow=sl, time_s=1.0 + i / 10)
            for i, (bg, sl) in enumerate((bg, sl) for bg in ("", "perm:0.3", "perm:0.6",
                                                             "hotspot:0.5")
                                         for sl in ("", "0=0.5", "random:4:1=0.25"))]
    fig = slowdown_figure(pd.DataFrame(rows))
    ax = next(ax for ax in fig.axes if ax.get_title())
    labels = ax.get_xticklabels()
    assert len(labels) == 12 and all(t.get_rotation() == 90 for t in labels)
    assert "fail policy" not in " ".join(t.get_text() for t in fig.texts)


def test_the_healthy_twin_is_of_the_same_collective():
    """ring's allreduce and allgather share topology, label and options; the
    healthy twin of a failed allreduce was the (twice as fast) allgather, so
    the healthy allreduce read a slowdown of 2 and the failure twice its
    own. Each twin is now the healthy row of the same collective."""
    a = flowemu.simulate("torus:4x4", "ring", "1MiB")
    g = flowemu.simulate("torus:4x4", "ring", "1MiB", collective="allgather")
    f = flowemu.simulate("torus:4x4", "ring", "1MiB", fail="0,0-0,1", fail_policy="reroute")
    out = flowemu.results.slowdown(pd.concat([a, g, f], ignore_index=True))
    assert out.loc[0, "slowdown"] == 1.0 and out.loc[1, "slowdown"] == 1.0
    assert out.loc[2, "healthy_time_s"] == a.loc[0, "time_s"]
    assert out.loc[2, "slowdown"] == f.loc[0, "time_s"] / a.loc[0, "time_s"]


def test_the_healthy_twin_of_a_job_is_the_same_job():
    """Two jobs of one set share every configuration column but ``job``:
    job #1's twin was the faster of the two healthy jobs."""
    rows = []
    for job, healthy in ((0, 1.0), (1, 2.0)):
        for bg, factor in (("", 1.0), ("perm:0.5", 1.5)):
            r = row("torus:8x8", "jobs:ring+ring", 1024, healthy * factor, background=bg)
            rows.append(dict(r, job=float(job), algorithm_spec="jobs[ring | ring]"))
    out = flowemu.results.slowdown(pd.DataFrame(rows))
    assert out["healthy_time_s"].tolist() == [1.0, 1.0, 2.0, 2.0]
    assert out["slowdown"].tolist() == [1.0, 1.5, 1.0, 1.5]


def test_a_baseline_group_shows_no_block_of_its_own(tmp_path, capsys):
    """A group of healthy runs kept as the baseline made `compare --by
    whatif` print a block of its own (every row "healthy", slowdown 1), and
    `--where "group == 'faulty'"` pulled it in too; its times are the
    healthy column of the rows that use them."""
    df = swept(tmp_path, 'sizes = ["1MiB"]\ntopology = "torus:8x8"\n'
                         '[groups.healthy]\nalgorithm = ["swing", "ring"]\n'
                         '[groups.faulty]\nalgorithm = ["swing"]\nfailures = [1]\n')
    cmp = flowemu.results.compare_whatif(df)
    assert cmp["group"].unique().tolist() == ["faulty"]
    base = float(df.loc[(df.group == "healthy") & (df.algorithm == "swing"), "time_s"].iloc[0])
    # the block reads as one holding its healthy rows: a healthy line first
    assert cmp["condition"].tolist() == ["healthy", "fail random:1"]
    assert cmp["healthy_time_s"].tolist() == [base, base]
    assert cmp["time_s"].iloc[0] == base and cmp["slowdown"].iloc[0] == 1.0
    for where in ([], ["--where", "group == 'faulty'"]):
        code, out, err = run(capsys, ["compare", str(tmp_path / "g"), "--by", "whatif", *where])
        assert code == 0, err
        assert "group faulty" in out and "group healthy" not in out, out


def test_standard_figures_find_twins_in_another_group(tmp_path, capsys):
    """`plot DATASET` drew the slowdown figure of a group only from its own
    rows: with the healthy network in a group of its own (the docs' advice)
    the what-if group got no slowdown figure, and goodput and gain figures of
    its failure runs instead. Now it gets the slowdown figure (its twins from
    the other group) and no goodput or gain figure of its own."""
    df = swept(tmp_path, 'sizes = ["1KiB", "1MiB"]\ntopology = "torus:8x8"\n'
                         '[groups.healthy]\nalgorithm = ["swing", "ring"]\n'
                         '[groups.faulty]\nalgorithm = ["swing", "ring"]\nfailures = [1]\n'
                         'failure_seed = [0, 1]\nfail_policy = "reroute"\n')
    notes = []
    paths = figures(tmp_path / "g", tmp_path / "f", notes=notes)
    assert sorted(p.name for p in paths) == ["gain-healthy.png", "goodput-healthy.png",
                                             "slowdown-faulty.png"]
    assert notes == [] and all(is_png(p) for p in paths)
    # its points are the slowdowns against the other group's rows
    cmp = flowemu.results.compare_whatif(df)
    assert set(cmp["group"]) == {"faulty"} and cmp["slowdown"].notna().all()


def test_standard_figures_of_jobs_rank_nothing(tmp_path, capsys):
    """A group of jobs sharing a network got goodput and gain figures that
    ranked each job against the other (or a one-job "scenario" against
    nothing); it now gets none, and plot says where its job_slowdown is."""
    paths, notes = standard_figures(
        tmp_path, 'sizes = ["1MiB"]\ntopology = "torus:4x4"\n[groups.alone]\n'
                  'algorithm = ["ring", "swing"]\n[groups.shared]\n'
                  'jobs = [["algorithm=ring size=1MiB ranks=8", '
                  '"algorithm=swing size=1MiB ranks=8"]]\n')
    assert sorted(p.name for p in paths) == ["gain-alone.png", "goodput-alone.png"]
    assert len(notes) == 1 and notes[0].startswith("group shared: jobs sharing a network "
                                                   "have no goodput or gain figure")
    # the way to read it, with the dataset's path, and what it gives
    assert notes[0].endswith(f"rows: d = flowemu.load({str(tmp_path / 'g')!r}); "
                             "d[d.group == 'shared'][['label', 'size_bytes', 'job_slowdown']]")
    d = flowemu.load(tmp_path / "g")
    shown = d[d.group == "shared"][["label", "size_bytes", "job_slowdown"]]
    assert len(shown) == 2 and shown["job_slowdown"].notna().all()
    code, out, err = run(capsys, ["plot", str(tmp_path / "g")])
    assert code == 0 and out.count(".png") == 2
    assert err.startswith("flowemu: note: group shared: jobs sharing a network"), err


def test_a_variant_given_is_not_the_twin_of_another():
    """A sweep's recdoub:variant=latency under a degraded link was measured
    against variant=bandwidth's healthy row (the fallback for an auto option,
    whose rows' options differ, took it as the one healthy row of recdoub).
    With algorithm_spec an auto option is one spec: its rows match by it."""
    def spec_row(topology, spec, options, time, **kw):
        return dict(row(topology, "recdoub", 1024, time, **kw), algorithm_spec=spec,
                    options=options)
    df = pd.DataFrame([
        spec_row("torus:4x4", "recdoub:variant=bandwidth", "variant=bandwidth", 1.0),
        spec_row("torus:4x4", "recdoub:variant=latency", "variant=latency", 3.0,
                 degrade="link:0=0.5"),
        spec_row("torus:8x8", "recdoub", "variant=latency", 2.0),             # auto, healthy
        spec_row("torus:8x8", "recdoub", "variant=bandwidth", 5.0,            # auto, degraded
                 degrade="link:0=0.5"),
    ])
    out = flowemu.results.slowdown(df)
    assert np.isnan(out.loc[1, "slowdown"])          # no healthy variant=latency row
    assert out.loc[3, "healthy_time_s"] == 2.0 and out.loc[3, "slowdown"] == 2.5


def test_jobs_of_one_set_stay_apart_in_compare_whatif():
    """Two jobs of a set that share algorithm, size and placement collapsed
    into one row of compare_whatif (job 0's failure row was lost)."""
    rows = []
    for job, healthy in ((0, 1.0), (1, 2.0)):
        for fail, factor in (("", 1.0), ("random:2:0", 1.5)):
            r = row("torus:8x8", "ring", 1024, healthy * factor, fail=fail, failed=2 * bool(fail))
            rows.append(dict(r, job=job))
    cmp = flowemu.results.compare_whatif(pd.DataFrame(rows))
    assert len(cmp) == 4 and cmp["job"].tolist() == [0, 0, 1, 1]
    assert cmp["slowdown"].tolist() == [1.0, 1.5, 1.0, 1.5]
    assert cmp["healthy_time_s"].tolist() == [1.0, 1.0, 2.0, 2.0]


def test_a_slowdown_figure_of_one_group_finds_its_twins_elsewhere(tmp_path, capsys):
    """plot --kind slowdown --group G refused ("no healthy rows ... add a
    group without what-ifs") when the healthy rows were in that group."""
    swept(tmp_path, 'sizes = ["1MiB"]\ntopology = "torus:8x8"\n'
                    '[groups.base]\nalgorithm = ["swing"]\n'
                    '[groups.fail]\nalgorithm = ["swing"]\nfailures = [1]\n')
    code, _, err = run(capsys, ["plot", str(tmp_path / "g"), "--kind", "slowdown", "--group",
                                "fail", "--out", str(tmp_path / "s.png")])
    assert code == 0 and is_png(tmp_path / "s.png"), err


def test_two_job_sets_sharing_a_job_keep_their_own_twins():
    """simulate_jobs frames of two sets with the same job 0: set B's healthy
    job 0 took set A's time as its twin (slowdown 1.05 on a healthy row), and
    compare_whatif dropped set A's job. Each row carries its set (job_set)."""
    ring = "algorithm=ring size=1MiB ranks=4 placement=random:1"
    sets = {"a": [ring, "algorithm=recdoub size=1MiB ranks=4 placement=random:2"],
            "b": [ring, "algorithm=swing size=1MiB ranks=8 placement=random:3"]}
    frames = {(k, fail): flowemu.simulate_jobs("torus:4x4", jobs, fail=fail,
                                               fail_policy="reroute")
              for k, jobs in sets.items() for fail in (None, "random:2:0")}
    df = pd.concat(frames.values(), ignore_index=True)
    out = flowemu.results.slowdown(df)
    healthy = out["fail"] == ""
    assert (out.loc[healthy, "slowdown"] == 1.0).all()
    for k in sets:   # each failed job against the same job of its own set
        h, f = frames[(k, None)], frames[(k, "random:2:0")]
        got = out[(out["job_set"] == f["job_set"].iloc[0]) & ~healthy]
        assert got["slowdown"].tolist() == (f["time_s"] / h["time_s"]).tolist()
    cmp = flowemu.results.compare_whatif(df)
    assert len(cmp) == 8 and cmp["job"].dtype == "int64"


def test_random_slow_ranks_are_one_condition_over_their_seeds():
    """random:K:SEED selectors of slow ranks were separate conditions (one
    seed each), while fail and degrade were aggregated as the docs say."""
    rows = [row("torus:8x8", "ring", 1024, 1.0)]
    rows += [row("torus:8x8", "ring", 1024, t, slow=f"random:4:{seed}=0.25")
             for seed, t in ((1, 2.0), (2, 4.0))]
    cmp = flowemu.results.compare_whatif(pd.DataFrame(rows))
    sick = cmp[cmp["condition"] != "healthy"]
    assert len(sick) == 1 and sick["seeds"].iloc[0] == 2 and sick["slow"].iloc[0] == \
        "random:4=0.25"
    assert (sick["slowdown"].iloc[0], sick["slowdown_min"].iloc[0],
            sick["slowdown_max"].iloc[0]) == (3.0, 2.0, 4.0)


def test_jobs_under_what_ifs_get_their_slowdown_figure(tmp_path):
    paths, notes = standard_figures(
        tmp_path, 'topology = "torus:4x4"\njobs = [["algorithm=ring size=1MiB ranks=8", '
                  '"algorithm=swing size=1MiB ranks=8"]]\nfailures = [0, 1]\n'
                  'fail_policy = "reroute"\n')
    assert [p.name for p in paths] == ["slowdown.png"] and is_png(paths[0])
    assert notes[0].startswith("the dataset: jobs sharing a network have no goodput or gain")


def test_the_twin_in_a_rows_own_group_comes_first():
    """Two groups held healthy twins with different times (datasets joined
    from two versions, an edited file): the fastest was taken for every row,
    so a healthy row read a slowdown of 1.111."""
    rows = []
    for group, healthy, failed in (("base", 1.0, None), ("base2", 0.9, None),
                                   ("wi", 1.2, 2.4), ("alone", None, 3.6)):
        if healthy is not None:
            rows.append(dict(row("torus:8x8", "ring", 1024, healthy), group=group))
        if failed is not None:
            rows.append(dict(row("torus:8x8", "ring", 1024, failed, fail="random:2:0", failed=2),
                             group=group))
    out = flowemu.results.slowdown(pd.DataFrame(rows))
    assert out["healthy_time_s"].tolist() == [1.0, 0.9, 1.2, 1.2, 0.9]
    assert out["slowdown"].tolist() == [1.0, 1.0, 1.0, 2.0, 4.0]


def test_rows_without_a_spec_beside_a_sweeps_keep_their_options():
    """A run's rows (no algorithm_spec) beside a sweep's: their spec read as
    one (NaN), so variant=bandwidth's healthy row took variant=latency's time
    (1.31 on a healthy row)."""
    def run_row(variant, time, fail=""):
        return dict(row("torus:4x4", "swing", 1024, time, fail=fail, failed=2 * bool(fail)),
                    options=f"variant={variant}", algorithm_spec=np.nan)
    df = pd.DataFrame([run_row("latency", 2.0), run_row("bandwidth", 3.0),
                       run_row("latency", 4.0, "random:2:0"),
                       run_row("bandwidth", 9.0, "random:2:0"),
                       dict(row("torus:8x8", "swing", 1024, 1.0), options="variant=latency",
                            algorithm_spec="swing")])
    out = flowemu.results.slowdown(df)
    assert out["slowdown"].tolist() == [1.0, 1.0, 2.0, 3.0, 1.0]


def test_a_comparison_is_not_taken_as_result_rows(tmp_path, capsys):
    """compare --by whatif of its own CSV output read every condition as one
    seed and made up healthy lines."""
    cmp = flowemu.results.compare_whatif(hand_frame())
    path = tmp_path / "cmp.csv"
    cmp.to_csv(path, index=False)
    code, _, err = run(capsys, ["compare", str(path), "--by", "whatif"])
    assert code == 2 and "is a what-if comparison (its condition and seeds columns), not " \
        "result rows" in one_error_line(err)


def test_plot_of_a_file_without_out_says_what_it_needs(tmp_path, capsys):
    path = tmp_path / "rows.csv"
    hand_frame().to_csv(path, index=False)
    code, _, err = run(capsys, ["plot", str(path)])
    assert code == 2 and one_error_line(err) == (
        f"flowemu: error: plot: {path} is a file; the standard figures are a sweep dataset's "
        "(a directory: DATASET/_figures/); for a file give --out FIG.png (and --kind)")


def test_jobs_in_a_figure_look_apart_and_their_set_reads_short():
    """Every job of a sweep is named "jobs": its lines all had one colour and
    marker; a set's panel title was its whole text (overlapping)."""
    from flowemu.study.figures.common import parameter_text
    from flowemu.study.figures.style import style_map
    labels = ["jobs:ring+recdoub#0", "jobs:ring+swing#0", "jobs:ring+recdoub#1"]
    looks = {(s.color, s.marker) for s in style_map(labels).values()}
    assert len(looks) == 3
    text = "jobs[algorithm=ring size=65536 ranks=8 | algorithm=swing:variant=latency size=1]"
    assert parameter_text("job_set", text) == "jobs ring+swing:variant=latency"
    assert parameter_text("job", 1) == "job 1"
