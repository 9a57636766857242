"""The command line: every user mistake is one line, exit code 2, no traceback."""

import json

import pandas as pd
import pytest

import flowemu
from flowemu.cli.app import main
from flowemu.core.errors import ConfigError

SMALL = ["run", "--topology", "torus:4x4", "--algorithm", "ring", "--sizes", "1KiB,1MiB"]


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_run_table(capsys):
    code, out, err = run(capsys, SMALL)
    assert code == 0, err
    assert "torus:4x4" in out and "ring" in out and "1MiB" in out


def test_run_csv_columns(capsys, tmp_path):
    path = tmp_path / "r.csv"
    code, _, err = run(capsys, SMALL + ["--format", "csv", "--out", str(path)])
    assert code == 0, err
    df = pd.read_csv(path)
    for col in ("topology", "nodes", "algorithm", "variant", "size_bytes", "time_s",
                "goodput_Bps", "steps"):
        assert col in df.columns
    assert list(df.size_bytes) == [1024, 2**20]
    assert (df.goodput_Bps == df.size_bytes / df.time_s).all()
    assert (df.steps == 2 * (16 - 1)).all()


def test_run_json_and_parquet(capsys, tmp_path):
    code, out, _ = run(capsys, SMALL + ["--format", "json"])
    assert code == 0 and json.loads(out)[0]["algorithm"] == "ring"
    path = tmp_path / "r.parquet"
    code, _, _ = run(capsys, SMALL + ["--format", "parquet", "--out", str(path)])
    assert code == 0 and len(pd.read_parquet(path)) == 2


def test_auto_reports_variant(capsys, tmp_path):
    path = tmp_path / "r.csv"
    code, _, err = run(capsys, ["run", "-t", "torus:8x8", "-a", "recdoub:variant=auto", "-s",
                                "32B,512MiB", "-f", "csv", "-o", str(path)])
    assert code == 0, err
    df = pd.read_csv(path)
    # tiny vectors favour the log2(p)-step latency variant, huge ones Rabenseifner
    assert list(df.variant) == ["latency", "bandwidth"]


def test_traffic_file(capsys, tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame({"step": [0, 0, 1], "src": [0, 1, 2], "dst": [1, 0, 3],
                  "bytes": [1e6, 1e6, 5e5]}).to_csv(path, index=False)
    out = tmp_path / "o.csv"
    code, _, err = run(capsys, ["run", "-t", "torus:4", "--traffic", str(path), "--bandwidth",
                                "8Gb/s", "--link-latency", "0", "--hop-latency", "0", "-f", "csv",
                                "-o", str(out)])
    assert code == 0, err
    df = pd.read_csv(out)
    # step 0: two 1 MB flows on opposite links (1 GB/s each) = 1 ms; step 1: 0.5 ms
    assert df.time_s.iloc[0] == pytest.approx(1.5e-3, rel=1e-12)
    assert df.steps.iloc[0] == 2
    # the table: a traffic file has no bus bandwidth, shown as "-" (was "nanb/s")
    code, table, err = run(capsys, ["run", "-t", "torus:4", "--traffic", str(path)])
    assert code == 0, err
    header, row = table.strip().splitlines()[:2]
    assert "busbw" in header and "nan" not in row
    assert header.split()[-2:] == ["busbw", "steps"] and row.split()[-2] == "-"


def test_flows_out(capsys, tmp_path):
    path = tmp_path / "f.csv"
    code, _, err = run(capsys, ["run", "-t", "torus:8", "-a", "recdoub:variant=latency", "-s",
                                "1MiB", "--flows-out", str(path), "--ecmp", "dor"])
    assert code == 0, err
    df = pd.read_csv(path)
    for col in ("step", "src", "dst", "bytes", "hops", "rate_Bps", "finish_s", "links", "path"):
        assert col in df.columns
    assert len(df) == 3 * 8
    last = df[(df.step == 2) & (df.src == 0)].iloc[0]
    assert last.path == "0>1>2>3>4" and last.hops == 4


def test_list(capsys):
    code, out, _ = run(capsys, ["list"])
    assert code == 0
    for word in ("ring", "recdoub", "variant", "torus", "mesh"):
        assert word in out


BAD = [
    (["run", "-t", "torus:4x4", "-a", "nosuch"], "unknown name"),
    (["run", "-t", "hypercube:4", "-a", "ring"], "hypercube"),
    (["run", "-t", "torus:1x4", "-a", "ring"], "torus:1x4"),
    (["run", "-t", "torus:", "-a", "ring"], "torus"),
    (["run", "-t", "torus:4xa", "-a", "ring"], "torus:4xa"),
    (["run", "-t", "torus4x4", "-a", "ring"], "torus4x4"),
    (SMALL[:-2] + ["--sizes", "12XB"], "12XB"),
    (SMALL[:-2] + ["--sizes", "1MiB..1KiB"], "1MiB..1KiB"),
    (SMALL[:-2] + ["--sizes", "1.5B"], "1.5B"),
    (SMALL + ["--bandwidth", "0"], "--bandwidth"),
    (SMALL + ["--bandwidth=-400Gb/s"], "rate"),
    (SMALL + ["--bandwidth", "nan"], "bandwidth"),
    (SMALL + ["--bandwidth", "fast"], "bandwidth"),
    (SMALL + ["--link-latency=-1ns"], "--link-latency"),
    (SMALL + ["--hop-latency", "100lightyears"], "--hop-latency"),
    (SMALL + ["--incast-threshold=-2"], "--incast-threshold"),
    (SMALL + ["--gamma", "nan"], "--gamma"),
    (SMALL + ["--ecmp", "random"], "ecmp"),
    (SMALL + ["--format", "xml"], "format"),
    (SMALL + ["--format", "parquet"], "--out"),
    (SMALL + ["--out", "/nonexistent/dir/x.csv"], "--out"),
    (["run", "-t", "torus:4x4", "-a", "ring:ports=3"], "ports"),
    (["run", "-t", "torus:4x4", "-a", "ring:ports=two"], "ports"),
    (["run", "-t", "torus:4x4", "-a", "ring:colour=red"], "colour"),
    (["run", "-t", "torus:4x4", "-a", "ring:ports"], "key=value"),
    (["run", "-t", "torus:4x4", "-a", "recdoub:variant=foo"], "variant"),
    (["run", "-t", "torus:4x4", "-a", "ring", "--ranks", "1"], "ranks"),
    (["run", "-t", "torus:4x4", "-a", "ring", "--ranks", "17"], "ranks"),
    (["run", "-t", "torus:4x4", "-a", "ring", "--seed", "x"], "seed"),
    (["run", "-a", "ring"], "topology"),
    (["run", "-t", "torus:4x4"], "algorithm"),
    (["run", "-t", "torus:4x4", "-a", "ring", "--traffic", "x.csv"], "not allowed"),
    (["run", "-t", "torus:4x4", "--traffic", "/nonexistent.csv"], "does not exist"),
    (["frobnicate"], "frobnicate"),
    (SMALL + ["--flows-out", "f.csv", "--flows-size", "lots"], "flows-size"),
]


@pytest.mark.parametrize("argv,needle", BAD, ids=[" ".join(a[1:6]) for a, _ in BAD])
def test_bad_input_is_one_line_exit_2(capsys, argv, needle):
    code, _out, err = run(capsys, argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("flowemu: error:")
    assert needle in lines[0]
    assert "Traceback" not in err


#: a new user's mistakes, each with the whole line it must print (written out by hand)
MISTAKES = [
    (["-s", "32B...512MiB"],
     ("flowemu: error: --sizes: '32B...512MiB' is not a size range; expected LO..HI with two "
      "dots, e.g. 32B..512MiB (every power of two from LO to HI), or a comma list such as "
      "1KiB,1MiB")),
    (["-s", "1MiB,"],
     ("flowemu: error: --sizes: '1MiB,' has an empty entry (a comma at either end or two in a "
      "row); expected sizes separated by commas, e.g. 1KiB,1MiB")),
    (["-a", "swing:"],
     ("flowemu: error: --algorithm: 'swing:' has no options after the ':'; expected swing "
      "alone or swing:key=val[,key=val...]")),
    (["-a", "swign"],
     "flowemu: error: --algorithm: unknown name 'swign' (did you mean 'swing'?); known: acps, "),
    (["--fail", "randm:2:0"],
     ("flowemu: error: --fail: 'randm:2:0': 'randm:' is not a selector of torus:8x8 (did you "
      "mean 'random'?); allowed: link:ID[-ID]; node:V; coordinates X0,X1 ('*' any) of the 8x8 "
      "grid; A-B (the cables between two of these); random:K:SEED")),
    (["--ecmp", "splt"],
     ("flowemu: error: --ecmp: 'splt' is not allowed (did you mean 'split'?); allowed: split, "
      "dor, hash, valiant, dmodk, adaptive\n")),
    (["-t", "fatree:k=8"],
     ("flowemu: error: --topology 'fatree:k=8': unknown family 'fatree' (did you mean "
      "'fattree'?); known families: dragonfly, fattree, graph, hammingmesh, hx2mesh, hx4mesh, "
      "hyperx, leafspine, mesh, torus, tree\n")),
    (["--sync", "eventualy"],
     "flowemu: error: --sync: 'eventualy' is not allowed; expected one of barrier, dataflow\n"),
    (["--fail-policy", "rerout", "--fail", "link:0"],
     "flowemu: error: --fail-policy: 'rerout' is not allowed; expected strict or reroute\n"),
    (["--placement", "rndom:1"],
     ("flowemu: error: --placement 'rndom:1': no such file; expected \"linear\", "
      "\"random:SEED\" (SEED an integer >= 0) or a file of endpoint ids (\"FILE\" or "
      "\"file:FILE\", one per rank)\n")),
    (["--ranks", "100"],
     "flowemu: error: --ranks: 100 ranks do not fit on torus:8x8 (64 endpoints)\n"),
    (["-c", "allreduc"],
     "flowemu: error: --collective: 'allreduc' is not one of allreduce, reduce_scatter, "),
    (["--slow", "0=2"],
     "flowemu: error: --slow: "),
    (["--degrade", "link:0"],
     "flowemu: error: --degrade: 'link:0' has no factor; "),
    (["--background", "prem:0.5"],
     "flowemu: error: --background: unknown generator 'prem' in 'prem:0.5'; "),
]


@pytest.mark.parametrize("extra,line", MISTAKES, ids=[" ".join(a) for a, _ in MISTAKES])
def test_new_user_mistakes_name_the_value_and_what_is_allowed(capsys, extra, line):
    argv = ["run", "-t", "torus:8x8", "-a", "ring", "-s", "1MiB"]
    for i in range(0, len(extra), 2):   # the mistake replaces the option's good value
        if extra[i] in argv:
            argv[argv.index(extra[i]) + 1] = extra[i + 1]
        else:
            argv += extra[i:i + 2]
    code, _out, err = run(capsys, argv)
    assert code == 2
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith(line), err


def test_python_api_messages_keep_the_argument_names():
    """Only the command line names its options; Python callers keep ``ecmp: ...``."""
    with pytest.raises(ConfigError) as info:
        flowemu.simulate("torus:4x4", "ring", "1MiB", ecmp="splt")
    assert str(info.value) == ("ecmp: 'splt' is not allowed (did you mean 'split'?); allowed: "
                               "split, dor, hash, valiant, dmodk, adaptive")


@pytest.mark.parametrize("command", ["run", "jobs"])
def test_ecmp_help_lists_every_allowed_mode(capsys, command):
    """--ecmp's help names the modes its check allows (valiant was left out), in its order."""
    assert main([command, "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    start = help_text.index("--ecmp ECMP ") + len("--ecmp ECMP ")
    shown = help_text[start:help_text.index("--seed SEED", start)]
    modes = [part.split(" (")[0].split(";")[0].strip() for part in shown.split(" | ")]
    assert modes == ["split", "dor", "hash", "valiant", "dmodk", "adaptive"], shown
    assert "valiant (dragonfly)" in shown and "dmodk (fattree)" in shown


@pytest.mark.parametrize("rows,needle", [
    ("step,src,dst\n0,0,1\n", "missing column"),
    ("step,src,dst,bytes\n0,0,1,-5\n", "bytes"),
    ("step,src,dst,bytes\n0,0,0,5\n", "src equals dst"),
    ("step,src,dst,bytes\n0,0,99,5\n", "rank 99"),
    ("step,src,dst,bytes\n0,0.5,1,5\n", "src"),
    ("step,src,dst,bytes\n", "no rows"),
    ("step,src,dst,bytes\nx,0,1,5\n", "step"),
])
def test_bad_traffic_file(capsys, tmp_path, rows, needle):
    path = tmp_path / "t.csv"
    path.write_text(rows)
    code, _, err = run(capsys, ["run", "-t", "torus:4x4", "--traffic", str(path)])
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert needle in err


def test_congestion_of_another_collective_says_its_yardstick(capsys, tmp_path):
    """Ψ is measured against an allreduce's optimum: Bruck's all-to-all on
    one switch reads 0.8571 (6/7), which looked like beating the optimum
    under a header that did not say so."""
    code, out, err = run(capsys, ["run", "-t", "tree:8", "-c", "alltoall", "-a", "bruck",
                                  "-s", "8MB", "--congestion", "-"])
    assert code == 0, err
    assert "optimal; against an allreduce's optimum, not alltoall's)" in out
    code, out, err = run(capsys, ["run", "-t", "tree:8", "-a", "ring", "-s", "8MB",
                                  "--congestion", "-"])
    assert code == 0 and "= bandwidth time / optimal):" in out
    # the collective as the table names it; a file's columns said nothing
    code, out, err = run(capsys, ["run", "-t", "tree:8", "-c", "reduce-scatter", "-a", "ring",
                                  "-s", "8MB", "--congestion", str(tmp_path / "c.csv")])
    assert code == 0 and ("note: --congestion: psi, xi and psi_xi are against an allreduce's "
                          "optimum, not reduce_scatter's") in err


def test_congestion_report(capsys, tmp_path):
    code, out, err = run(capsys, ["run", "-t", "torus:8", "-a", "ring:ports=2", "-s", "1MiB",
                                  "--congestion", "-"])
    assert code == 0, err
    assert "max_flows_per_link" in out and "psi" in out
    path = tmp_path / "c.csv"
    code, _, err = run(capsys, ["run", "-t", "torus:8", "-a", "recdoub:variant=auto", "-s", "1MiB",
                                "--congestion", str(path)])
    assert code == 0, err
    steps = pd.read_csv(path)
    summary = pd.read_csv(tmp_path / "c_summary.csv")
    assert set(steps.variant) == {"latency", "bandwidth"}
    # a bidirectional ring on a ring: one flow per link direction, every port busy
    assert list(summary.variant) == ["latency", "bandwidth"]
    # Rabenseifner on 8 nodes: latency variant sends log2(8) whole vectors
    lat = steps[steps.variant == "latency"]
    assert len(lat) == 3


def test_public_names_are_exported():
    import flowemu
    assert set(flowemu.__all__) >= set(flowemu._LAZY)
    for name in flowemu.__all__:
        assert getattr(flowemu, name) is not None
