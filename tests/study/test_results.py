"""Datasets (atomic part files, loading) and the goodput-gain comparison."""

import io
import math
import shutil

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.cli.app import main
from flowemu.core.errors import ConfigError
from flowemu.study.figures import goodput, plots
from flowemu.study.figures.plots import plot
from flowemu.study.results import (
    compare,
    compare_table,
    compare_whatif,
    load,
    load_errors,
    scenario_columns,
    slowdown,
)
from flowemu.study.sweep import sweep
from flowemu.study.sweep.dataset import clean_temp, result_hashes, write_rows
from tests.helpers.sweeps import fail_when_run


def frame(rows):
    cols = ["topology", "nodes", "size_bytes", "label", "goodput_Bps"]
    df = pd.DataFrame(rows, columns=cols)
    df["algorithm"] = df["label"].str.split(":").str[0]
    df["time_s"] = df["size_bytes"] / df["goodput_Bps"]
    return df


def gains(cmp, **where):
    sel = cmp
    for k, v in where.items():
        sel = sel[sel[k] == v]
    return dict(zip(sel["algorithm"], sel["gain"]))


# ------------------------------------------------------------------ compare

def test_gain_closed_form():
    df = frame([
        ("torus:8x8", 64, 1024, "swing", 10.0),
        ("torus:8x8", 64, 1024, "ring", 5.0),
        ("torus:8x8", 64, 1024, "recdoub:variant=latency", 2.0),
        ("torus:8x8", 64, 2048, "swing", 3.0),
        ("torus:8x8", 64, 2048, "ring", 12.0),
        ("torus:8x8", 64, 2048, "recdoub:variant=latency", 4.0),
        ("torus:4x4", 16, 1024, "swing", 7.0),
        ("torus:4x4", 16, 1024, "ring", 7.0),
    ])
    cmp = compare(df)
    assert len(cmp) == len(df)
    g = gains(cmp, topology="torus:8x8", size_bytes=1024)
    # goodput / best other - 1
    assert g == pytest.approx({"swing": 10 / 5 - 1, "ring": 5 / 10 - 1,
                               "recdoub:variant=latency": 2 / 10 - 1})
    g = gains(cmp, topology="torus:8x8", size_bytes=2048)
    assert g == pytest.approx({"swing": 3 / 12 - 1, "ring": 12 / 4 - 1,
                               "recdoub:variant=latency": 4 / 12 - 1})
    assert gains(cmp, topology="torus:4x4") == {"ring": 0.0, "swing": 0.0}   # a tie
    best = cmp[cmp.is_best].set_index(["topology", "size_bytes"])["algorithm"]
    assert best[("torus:8x8", 1024)] == "swing" and best[("torus:8x8", 2048)] == "ring"
    row = cmp[(cmp.algorithm == "ring") & (cmp.size_bytes == 1024)
              & (cmp.topology == "torus:8x8")].iloc[0]
    assert (row.best, row.best_goodput_Bps, row.best_other, row.best_other_goodput_Bps) == \
        ("swing", 10.0, "swing", 10.0)
    row = cmp[(cmp.algorithm == "swing") & (cmp.size_bytes == 1024)
              & (cmp.topology == "torus:8x8")].iloc[0]
    assert (row.best_other, row.best_other_goodput_Bps, bool(row.is_best)) == ("ring", 5.0, True)
    assert {"time_s", "nodes"} <= set(cmp.columns)


def test_gain_alone_is_nan_and_other_fields_split_scenarios():
    df = frame([
        ("torus:8x8", 64, 1024, "ring", 4.0),
        ("torus:8x8", 64, 1024, "recdoub", 8.0),
        ("torus:8x8", 64, 1024, "ring", 6.0),
        ("torus:8x8", 64, 1024, "recdoub", 3.0),
        ("torus:4x4", 16, 1024, "ring", 1.0),
    ])
    df["bandwidth_Bps"] = [1e10, 1e10, 5e10, 5e10, 1e10]
    df["hop_latency_s"] = 3e-7            # constant: not a scenario column
    assert scenario_columns(df) == ["topology", "nodes", "bandwidth_Bps"]
    cmp = compare(df)
    assert gains(cmp, bandwidth_Bps=1e10, topology="torus:8x8") == \
        pytest.approx({"ring": 4 / 8 - 1, "recdoub": 1.0})
    assert gains(cmp, bandwidth_Bps=5e10) == pytest.approx({"ring": 1.0, "recdoub": -0.5})
    alone = cmp[cmp.topology == "torus:4x4"].iloc[0]
    assert math.isnan(alone.gain) and alone.is_best and pd.isna(alone.best_other)


def test_goodputs_as_texts_are_refused_not_ranked_as_texts():
    # ranked as texts '14191946' came above '136031287' (its first digit)
    df = frame([("torus:8x8", 64, 1024, "ring", 14191946.0),
                ("torus:8x8", 64, 1024, "recdoub", 136031287.0)])
    assert compare(df).set_index("algorithm")["is_best"].to_dict() == \
        {"recdoub": True, "ring": False}
    for col in ("goodput_Bps", "size_bytes"):
        with pytest.raises(ConfigError, match=f"compare: column {col} holds .* not numbers"):
            compare(df.astype({col: str}))


def test_no_best_where_every_run_of_a_size_failed():
    df = frame([("torus:8x8", 64, 1024, "ring", np.nan),
                ("torus:8x8", 64, 1024, "recdoub", np.nan),
                ("torus:8x8", 64, 2048, "ring", 3.0),
                ("torus:8x8", 64, 2048, "recdoub", 2.0)])
    cmp = compare(df)
    failed = cmp[cmp.size_bytes == 1024]
    assert failed["best"].isna().all() and not failed["is_best"].any()
    assert set(cmp[cmp.size_bytes == 2048]["best"]) == {"ring"}
    text = compare_table(cmp)
    assert "nan" not in text
    line = next(ln for ln in text.splitlines() if "1KiB" in ln)
    assert line.split()[-3:] == ["-", "-", "-"]


def test_compare_by_algorithm_takes_best_variant_and_latest_row_wins():
    df = frame([
        ("torus:8x8", 64, 1024, "recdoub:variant=latency", 8.0),
        ("torus:8x8", 64, 1024, "recdoub:variant=bandwidth", 2.0),
        ("torus:8x8", 64, 1024, "ring", 4.0),
        ("torus:8x8", 64, 1024, "ring", 5.0),      # a later result of the same config
    ])
    cmp = compare(df)
    assert gains(cmp)["ring"] == pytest.approx(5 / 8 - 1)
    by_alg = compare(df, by="algorithm")
    assert gains(by_alg) == pytest.approx({"recdoub": 8 / 5 - 1, "ring": 5 / 8 - 1})
    with pytest.raises(ConfigError, match="by="):
        compare(df, by="colour")
    with pytest.raises(ConfigError, match="goodput_Bps"):
        compare(df.drop(columns="goodput_Bps"))


def test_ranks_is_a_scenario_only_when_it_differs_from_nodes():
    df = frame([("torus:8x8", 64, 1024, "ring", 1.0), ("torus:4x4", 16, 1024, "ring", 1.0)])
    df["ranks"] = df["nodes"]
    assert "ranks" not in scenario_columns(df)
    df["ranks"] = [32, 16]
    assert "ranks" in scenario_columns(df)


def test_compare_table_text():
    df = frame([("torus:8x8", 64, 1024, "swing", 10e9), ("torus:8x8", 64, 1024, "ring", 5e9)])
    text = compare_table(compare(df))
    assert "1KiB" in text and "80Gb/s (+100%)" in text and "40Gb/s (-50%)" in text
    assert text.splitlines()[1].rstrip().endswith("swing")
    df["group"] = ["a", "b"]
    assert "== group a ==" in compare_table(compare(df))


def test_compare_table_lists_smaller_networks_first():
    """torus:16x16 sorted before torus:8x8 as text; the rows follow the
    node count."""
    df = frame([("torus:16x16", 256, 1024, "ring", 5e9), ("torus:16x16", 256, 1024, "swing", 9e9),
                ("torus:8x8", 64, 1024, "ring", 5e9), ("torus:8x8", 64, 1024, "swing", 9e9)])
    lines = compare_table(compare(df)).splitlines()[1:]
    assert [line.split()[0] for line in lines] == ["torus:8x8", "torus:16x16"]


def test_compare_table_gives_latencies_their_units():
    """A swept alpha printed as 5.000000e-07 beside rates with units: it
    reads 500ns now, under a column named alpha."""
    rows = [("torus:8x8", 64, 1024, alg, g) for alg, g in (("swing", 10e9), ("ring", 5e9))]
    df = pd.concat([frame(rows).assign(alpha_s=a) for a in (0.0, 5e-7)], ignore_index=True)
    header, *lines = compare_table(compare(df)).splitlines()
    assert "alpha" in header.split() and "alpha_s" not in header
    assert [line.split()[2] for line in lines] == ["0s", "500ns"]


def test_compare_table_gives_costs_per_byte_their_units():
    """A swept gamma printed as 1.000000e-12 and 0.000000e+00: it reads
    1ps/B under a column named gamma, as the sweep file gives it."""
    rows = [("torus:8x8", 64, 1024, alg, g) for alg, g in (("swing", 10e9), ("ring", 5e9))]
    df = pd.concat([frame(rows).assign(gamma_s_per_B=g) for g in (0.0, 1e-12)],
                   ignore_index=True)
    header, *lines = compare_table(compare(df)).splitlines()
    assert "gamma" in header.split() and "gamma_s_per_B" not in header
    assert [line.split()[2] for line in lines] == ["0s/B", "1ps/B"]


# ------------------------------------------------------------------ datasets

SMALL = """
sizes = "1KiB,1MiB"
topology = ["torus:4x4", "torus:8"]
algorithm = ["ring", "recdoub:variant=latency"]
ranks = [4, 8]
"""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ds")
    cfg = tmp / "small.toml"
    cfg.write_text(SMALL)
    out = tmp / "small"
    with pytest.MonkeyPatch.context() as mp:   # 8 ranks on torus:8 fail when they run
        fail_when_run(mp, lambda c: c.topology == "torus:8" and c.ranks == 8)
        s = sweep(cfg, out, jobs=1, progress=False, chunk_size=2)
    assert s.failed == 2
    return out


def test_load_dataset(dataset):
    df = load(dataset)
    assert len(df) == 6 * 2
    assert df["ranks"].dtype == np.int64 and df["size_bytes"].dtype == np.int64
    assert df["incast_threshold"].eq(np.inf).all()
    assert set(result_hashes(dataset)) == set(df["config_hash"])
    errs = load_errors(dataset)
    assert len(errs) == 2 and errs["topology"].eq("torus:8").all()


def test_temp_files_are_ignored_and_cleaned(dataset, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy)
    (copy / ".tmp-part-x.parquet").write_bytes(b"torn")
    assert len(load(copy)) == len(load(dataset))
    assert clean_temp(copy) == 1 and not list(copy.glob(".tmp-*"))


def test_write_rows_is_atomic_and_typed(tmp_path):
    df = pd.DataFrame({"config_hash": ["a", "b"], "size_bytes": [1, 2], "time_s": [1.0, 2.0],
                       "ranks": [4, 4]})
    path = write_rows(tmp_path, df, "part-x")
    assert path.name == "part-x.parquet" and not list(tmp_path.glob(".tmp-*"))
    back = load(tmp_path)
    assert back["ranks"].dtype == np.int64 and list(back["config_hash"]) == ["a", "b"]


def test_load_missing_and_empty(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load(tmp_path / "nope")
    assert load(tmp_path).empty and "config_hash" in load(tmp_path).columns


def test_load_says_what_it_was_given_instead_of_results(dataset, tmp_path):
    """A folder of datasets (results/) and a traffic file are not results:
    both are named (they read as an empty table and as traffic rows)."""
    folder = tmp_path / "results"
    shutil.copytree(dataset, folder / "small")
    shutil.copytree(dataset, folder / "again")
    with pytest.raises(ConfigError, match=r"^dataset: '.*results' holds datasets, not results "
                                          r"of its own; give one of them: .*again, .*small$"):
        load(folder)
    traffic = tmp_path / "halo.csv"
    traffic.write_text("step,src,dst,bytes\n0,0,1,100\n")
    with pytest.raises(ConfigError, match=r"holds no result rows \(no column size_bytes\): a "
                                          r"traffic file; time it with flowemu run"):
        load(traffic)
    assert len(load(folder / "small")) == len(load(dataset))


def test_cli_compare_formats(dataset, tmp_path, capsys):
    assert main(["compare", str(dataset)]) == 0
    out = capsys.readouterr().out
    assert "best" in out and "recdoub:variant=latency" in out and "1MiB" in out
    csv = tmp_path / "c.csv"
    assert main(["compare", str(dataset), "-f", "csv", "-o", str(csv)]) == 0
    cmp = pd.read_csv(csv)
    # torus:8 at 8 ranks and torus:4x4 at 8 / 16 ranks: ranks differ from nodes
    assert {"topology", "nodes", "ranks", "size_bytes", "algorithm", "gain"} <= set(cmp.columns)
    assert len(cmp) == 12
    pq = tmp_path / "c.parquet"
    assert main(["compare", str(dataset), "-f", "parquet", "-o", str(pq)]) == 0
    assert len(pd.read_parquet(pq)) == 12
    assert main(["compare", str(dataset), "--where", "topology == 'torus:8'", "-f", "csv"]) == 0
    assert set(pd.read_csv(io.StringIO(capsys.readouterr().out))["topology"]) == {"torus:8"}
    assert main(["compare", str(dataset), "--where", "nodes > 1000"]) == 2
    assert main(["compare", str(dataset), "-f", "parquet"]) == 2
    assert main(["compare", str(dataset), "-f", "xml"]) == 2
    assert main(["compare", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("flowemu: error:") == 4


# ------------------------------------------------------------------ what the functions take

def test_compare_and_slowdown_take_a_dataset_path_or_say_what_they_take(dataset, tmp_path):
    assert compare(str(dataset)).equals(compare(load(dataset)))
    assert compare(dataset, by="algorithm").equals(compare(load(dataset), by="algorithm"))
    assert slowdown(dataset).equals(slowdown(load(dataset)))
    wrong = "is not allowed; expected a DataFrame of results or a dataset's path"
    for call, who in ((lambda: compare([1, 2, 3]), "compare"),
                      (lambda: slowdown([1]), "slowdown"),
                      (lambda: compare_whatif(3.5), "compare_whatif"),
                      (lambda: plot(load(dataset)["time_s"], tmp_path / "s.png"), "plot")):
        with pytest.raises(ConfigError, match=f"^{who}: .*{wrong}"):
            call()
    with pytest.raises(ConfigError, match="^compare by whatif: the data has no what-if rows"):
        compare(dataset, by="whatif")
    with pytest.raises(ConfigError, match="^plot: the DataFrame holds no result rows$"):
        plot(load(dataset).iloc[:0], tmp_path / "e.png")


def test_a_figure_format_is_checked_before_anything_is_drawn(dataset, tmp_path, capsys,
                                                             monkeypatch):
    drawn = []
    monkeypatch.setattr(goodput, "goodput_figure", lambda *a, **k: drawn.append(1))
    with pytest.raises(ConfigError, match=r"^out: '.*w\.xlsx' is not a figure format flowemu "
                                          r"writes; allowed suffixes: .*\.pdf, .*\.png"):
        plots.plot(dataset, tmp_path / "w.xlsx")   # through the module: it is patched
    assert drawn == []
    assert main(["plot", str(dataset), "--out", str(tmp_path / "w.xlsx")]) == 2
    assert "--out: " in capsys.readouterr().err


def test_outputs_stay_out_of_the_dataset(dataset, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy)
    for argv in (["compare", str(copy), "--out", str(copy / "gains.csv")],
                 ["plot", str(copy), "--out", str(copy / "sub" / "g.png")]):
        (copy / "sub").mkdir(exist_ok=True)
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"--out: '{argv[-1]}' is inside the dataset" in err, err
        assert "write it outside the dataset" in err
    with pytest.raises(ConfigError, match="^out: .* is inside the dataset"):
        plot(copy, copy / "g.png")
    assert not list(copy.glob("*.csv")) and not list(copy.rglob("*.png"))
    assert len(pd.read_parquet(copy)) == len(load(dataset))   # still readable whole
    # a file or directory of it that parquet readers skip (as make paper and
    # make whatif write _compare.csv), and anywhere outside, are fine
    (copy / "_mine").mkdir()
    assert main(["compare", str(copy), "--out", str(copy / "_mine" / "gains.csv")]) == 0
    assert main(["compare", str(copy), "--out", str(copy / "_compare.csv")]) == 0
    assert main(["compare", str(copy), "--out", str(tmp_path / "gains.csv")]) == 0
    assert len(pd.read_parquet(copy)) == len(load(dataset))
    assert len(pd.read_csv(copy / "_compare.csv")) > 0
    # a _ directory of it is made as needed (a single figure before `flowemu plot DATASET`
    # made _figures/), a directory outside is not
    assert main(["plot", str(copy), "--out", str(copy / "_figures" / "one.png")]) == 0
    assert (copy / "_figures" / "one.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["compare", str(copy), "--out", str(copy / "_tables" / "gains.csv")]) == 0
    assert main(["compare", str(copy), "--out", str(tmp_path / "nowhere" / "g.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert len(pd.read_parquet(copy)) == len(load(dataset))
    # the dataset's own files are no output's (the manifest was overwritten, and the
    # next load failed on it); nor is another dataset's top level
    for name, fmt in (("_manifest.json", []), ("_config.toml", ["-f", "csv"])):
        before = (copy / name).read_bytes() if (copy / name).exists() else None
        assert main(["compare", str(copy), *fmt, "--out", str(copy / name)]) == 2
        assert f"is the dataset's own {name}" in capsys.readouterr().err
        assert ((copy / name).read_bytes() if (copy / name).exists() else None) == before
    other = tmp_path / "other"
    shutil.copytree(dataset, other)
    assert main(["compare", str(copy), "--out", str(other / "cmp.csv")]) == 2
    assert f"is inside the dataset {str(other.resolve())!r}" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="is inside the dataset"):
        plot(copy, other / "g.png")
    # nor any other command's output (run -o, --links, global --out wrote there)
    for argv in (["run", "-t", "torus:4", "-a", "ring", "-s", "1KiB", "-o", str(other / "r.csv")],
                 ["run", "-t", "torus:4", "-a", "ring", "-s", "1KiB", "--links",
                  str(other / "l.csv")],
                 ["global", "-t", "torus:4", "--out", str(other / "g.csv")]):
        assert main(argv) == 2
        assert "is inside the dataset" in capsys.readouterr().err
    assert main(["run", "-t", "torus:4", "-a", "ring", "-s", "1KiB", "-o",
                 str(other / "_r.csv")]) == 0
    assert len(pd.read_parquet(other)) == len(load(dataset))


def test_a_compare_file_keeps_what_its_rows_share(dataset, capsys):
    """compare keeps the scenario columns that vary; a file of a filtered
    dataset lost the others (two CSVs of torus:8 and of torus:4x4 at 4 ranks
    could not be told apart, and their columns changed with the data). A
    file keeps them, first; the table on screen is as before."""
    assert main(["compare", str(dataset), "--where", "topology == 'torus:8'", "-f", "csv"]) == 0
    one = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert main(["compare", str(dataset), "--where", "ranks == 4", "-f", "csv"]) == 0
    other = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(one.columns) == list(other.columns)
    assert set(one["topology"]) == {"torus:8"} and set(one["ranks"]) == {4}
    assert set(one["collective"]) == {"allreduce"} and set(one["ecmp"]) == {"split"}
    assert one.columns[0] == "group" and "gain" in one.columns
    # the Python frame and the text table keep the varying columns only
    assert "collective" not in compare(load(dataset)).columns
    assert main(["compare", str(dataset), "--where", "topology == 'torus:8'"]) == 0
    assert "allreduce" not in capsys.readouterr().out


def test_variants_simulated_side_by_side_are_compared_apart():
    """simulate's rows have no label: compare kept the last row of each
    algorithm name, so two variants of recdoub merged into one whose goodput
    depended on the order of the frames. Variants of one name at one
    scenario and size are told apart by the options that differ; an auto
    option (one variant a size) keeps the name."""
    lat = flowemu.simulate("torus:4x4", "recdoub:variant=latency", "1KiB,1MiB")
    bw = flowemu.simulate("torus:4x4", "recdoub:variant=bandwidth", "1KiB,1MiB")
    auto = flowemu.simulate("torus:4x4", "swing", "1KiB,1MiB")
    assert auto["options"].nunique() == 2   # (auto: a variant a size)
    one = compare(pd.concat([lat, bw, auto]))
    other = compare(pd.concat([bw, lat, auto]))
    pd.testing.assert_frame_equal(one, other)
    assert sorted(set(one["algorithm"])) == ["recdoub:variant=bandwidth",
                                             "recdoub:variant=latency", "swing"]
    got = one.set_index(["size_bytes", "algorithm"])["goodput_Bps"]
    for df, alg in ((lat, "recdoub:variant=latency"), (bw, "recdoub:variant=bandwidth")):
        for size, rate in zip(df["size_bytes"], df["goodput_Bps"]):
            assert got[(size, alg)] == rate
    best = compare(pd.concat([lat, bw, auto]), by="algorithm").set_index(
        ["size_bytes", "algorithm"])["goodput_Bps"]
    for size in (1024, 2**20):
        assert best[(size, "recdoub")] == max(lat.set_index("size_bytes")["goodput_Bps"][size],
                                              bw.set_index("size_bytes")["goodput_Bps"][size])


def test_a_figure_of_variants_simulated_side_by_side(tmp_path):
    """plot of the same frames drew one recdoub line zig-zagging between the
    variants, and with relative=True failed on the frames' repeated index
    (pd.concat without ignore_index)."""
    frames = [flowemu.simulate("torus:4x4", alg, "1KiB..64KiB")
              for alg in ("recdoub:variant=latency", "recdoub:variant=bandwidth", "swing")]
    out = plot(pd.concat(frames), tmp_path / "g.png", relative=True)
    assert out.exists()
    from flowemu.study.rows import with_labels
    fig = goodput.goodput_figure(with_labels(pd.concat(frames, ignore_index=True)))
    drawn = {line.get_label() for line in fig.axes[0].get_lines()}
    assert {"recdoub:variant=latency", "recdoub:variant=bandwidth", "swing"} <= drawn
