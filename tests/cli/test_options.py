"""The command line never guesses: values need their units, an option is given
once, an option the run would ignore is refused, fallbacks are said, and
``--version`` answers."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest

import flowemu
import flowemu.api.simulation
from flowemu.api.units import GBps, ns
from tests.helpers.cli import one_error_line, run

ROOT_DIR = Path(flowemu.__file__).parents[1]
RUN = ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB"]


@pytest.fixture
def traffic(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("step,src,dst,bytes\n0,0,1,1000\n0,1,0,1000\n")
    return str(path)


def refused(capsys, argv, *words):
    code, out, err = run(capsys, argv)
    assert code == 2, err
    assert out == ""
    line = one_error_line(err)
    for word in words:
        assert word in line, line
    return line


# --------------------------------------------------------------------------- units

@pytest.mark.parametrize("extra,start,words", [
    (["--bandwidth", "400"], "--bandwidth: '400' has no unit", ["400Gb/s", "50GB/s"]),
    (["--bandwidth=5e10"], "--bandwidth: '5e10' has no unit", ["400Gb/s"]),
    (["--link-latency", "100"], "--link-latency: '100' has no unit", ["100ns", "1.5us"]),
    (["--hop-latency", "3e-7"], "--hop-latency: '3e-7' has no unit", ["100ns"]),
    (["--alpha", "1"], "--alpha: '1' has no unit", ["100ns"]),
    (["--gamma", "1e-12"], "--gamma: '1e-12' has no unit", ["ps"]),
    (["--bandwidth", "400gb/s"], "--bandwidth: cannot read '400gb/s'", ["400Gb/s"]),
])
def test_values_need_units(capsys, no_work, extra, start, words):
    line = refused(capsys, RUN + extra, *words)
    assert line.startswith("flowemu: error: " + start), line


@pytest.mark.parametrize("sizes,words", [
    ("1Mb", ["--sizes", "'1Mb'", "bits", "KiB"]),
    ("1kb..1MiB", ["--sizes", "'1kb'", "bits"]),
    ("1M", ["--sizes", "'1M'", "1MiB", "1MB"]),
])
def test_sizes_are_bytes(capsys, no_work, sizes, words):
    refused(capsys, ["run", "-t", "torus:4x4", "-a", "ring", "-s", sizes], *words)


def test_flows_size_in_bits_refused(capsys, no_work, tmp_path):
    refused(capsys, RUN + ["--flows-out", str(tmp_path / "f.csv"), "--flows-size", "8Mb"],
            "--flows-size", "bits")


def test_units_in_bits_and_bytes_agree(capsys, tmp_path):
    # 400Gb/s and 50GB/s are the same link: identical times; a bare "0" is a time
    times = []
    for bw in ("400Gb/s", "50GB/s"):
        path = tmp_path / f"{bw[-4]}.csv"
        code, _, err = run(capsys, RUN + ["--bandwidth", bw, "--link-latency", "0", "-o",
                                          str(path)])
        assert code == 0, err
        df = pd.read_csv(path)
        assert df.bandwidth_Bps.iloc[0] == 5e10 and df.link_latency_s.iloc[0] == 0
        times.append(df.time_s.iloc[0])
    assert times[0] == times[1]


def test_python_api_numbers_need_their_unit():
    a = flowemu.simulate("torus:4", "ring", [1024], bandwidth=GBps(50), link_latency=ns(100))
    b = flowemu.simulate("torus:4", "ring", [1024], bandwidth="400Gb/s", link_latency="100ns")
    assert a.time_s.iloc[0] == b.time_s.iloc[0]
    for field, bare in (("bandwidth", 5e10), ("link_latency", 1e-7)):
        with pytest.raises(flowemu.ConfigError, match=f"^{field}=.*: a bare number has no "
                                                      "unit"):
            flowemu.simulate("torus:4", "ring", [1024], **{field: bare})
    with pytest.raises(flowemu.ConfigError) as e:
        flowemu.simulate("torus:4", "ring", [1024], bandwidth="400")
    assert str(e.value).startswith("bandwidth: '400' has no unit")


# ----------------------------------------------------------------- repeated options

@pytest.mark.parametrize("argv,start", [
    (RUN + ["--bandwidth", "1Gb/s", "--bandwidth", "2Gb/s"],
     "--bandwidth: given twice ('1Gb/s' and '2Gb/s')"),
    (["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB", "--sizes=2KiB"],
     "--sizes: given twice ('1KiB' and '2KiB')"),
    (RUN + ["-t", "torus:8"], "--topology: given twice"),
    (RUN + ["-a", "recdoub"], "--algorithm: given twice"),
    (RUN + ["--seed", "1", "--seed", "1", "--ecmp", "hash"], "--seed: given twice (1 and 1)"),
    (RUN + ["-f", "csv", "--format", "json"], "--format: given twice"),
    (["compare", "x", "--by", "label", "--by", "algorithm"], "--by: given twice"),
    (["sweep", "configs/smoke.toml", "--dry-run", "--dry-run"], "--dry-run: given twice"),
    (["sweep", "configs/smoke.toml", "-j", "1", "--jobs", "2"], "--jobs: given twice"),
    (["plot", "x", "--kind", "gain", "-k", "goodput"], "--kind: given twice"),
])
def test_repeated_option_is_refused(capsys, no_work, argv, start):
    line = refused(capsys, argv, "give it once")
    assert line.startswith("flowemu: error: " + start), line


# -------------------------------------------------------------- inapplicable options

@pytest.mark.parametrize("extra,start,words", [
    (["-s", "1KiB"], "--sizes: does not apply to --traffic", []),
    (["--ranks", "2"], "--ranks: does not apply to --traffic", []),
    (["--gamma", "1ps"], "--gamma: does not apply to --traffic", ["reduction"]),
    (["--delta", "0"], "--delta: does not apply to --traffic", []),
    (["--congestion", "-"], "--congestion works with --algorithm", []),
    (["-a", "ring"], "argument", ["--algorithm", "--traffic"]),
])
def test_options_refused_with_traffic(capsys, no_work, traffic, extra, start, words):
    line = refused(capsys, ["run", "-t", "torus:4x4", "--traffic", traffic] + extra, *words)
    assert line.startswith("flowemu: error: " + start), line


@pytest.mark.parametrize("extra,start,words", [
    (["--flows-size", "1KiB"], "--flows-size: applies only with --flows-out", []),
    (["--seed", "3"], "--seed: applies only to --ecmp hash", ["split"]),
    (["--seed", "3", "--ecmp", "dor"], "--seed: applies only to --ecmp hash", ["dor"]),
    (["--incast-threshold", "4"], "--incast-threshold: incast needs both",
     ["give --incast-slope"]),
    (["--incast-slope", "1ps"], "--incast-slope: incast needs both",
     ["give --incast-threshold"]),
    (["-f", "csv", "--congestion", "-"], "--congestion: '-' prints text into the csv", []),
])
def test_options_that_do_not_apply(capsys, no_work, extra, start, words):
    line = refused(capsys, RUN + extra, *words)
    assert line.startswith("flowemu: error: " + start), line


def test_applicable_combinations_run(capsys, tmp_path, traffic):
    # the same options where they apply: seed with hash, both incast terms, traffic alone
    code, _, err = run(capsys, RUN + ["--seed", "3", "--ecmp", "hash", "--incast-threshold",
                                      "4", "--incast-slope", "1ps"])
    assert code == 0, err
    code, out, err = run(capsys, ["run", "-t", "torus:4x4", "--traffic", traffic, "--alpha",
                                  "1us", "-f", "csv"])
    assert code == 0, err
    assert "traffic" in out


@pytest.mark.parametrize("threshold, slope", [("inf", "1ps"), ("3", "0")])
def test_incast_off_by_one_of_its_two_options_runs_as_in_python(capsys, threshold, slope):
    """Both incast options given, one of them "off", was refused on the
    command line ("--network: its incast_slope is set and its
    incast_threshold is not", an option never given), while simulate() with
    the same two keywords runs with incast off. The rows are now the same."""
    code, out, err = run(capsys, ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1MiB", "-f",
                                  "json", "--incast-threshold", threshold, "--incast-slope", slope])
    assert code == 0, err
    row = json.loads(out)[0]
    py = flowemu.simulate("torus:4x4", "ring", "1MiB", incast_threshold=float(threshold),
                          incast_slope=slope).iloc[0]
    for col in ("time_s", "incast_threshold", "incast_slope_s_per_B"):
        want = py[col]
        assert (row[col] if row[col] is not None else float("inf")) == want, col
    # incast off: the ring's time without any incast term
    assert row["time_s"] == flowemu.simulate("torus:4x4", "ring", "1MiB").time_s.iloc[0]


def test_incast_beside_a_preset_is_checked_as_in_python(capsys):
    """Beside a preset without incast, --incast-slope 0 (off) was refused
    ("give --incast-threshold and --incast-slope"); simulate(network=preset,
    incast_slope=0) runs. One that turns incast on alone is refused by
    both, naming the options."""
    base = ["run", "-t", "tree:8", "-a", "ring", "-s", "1MiB", "--network", "genmodel-table5"]
    code, _, err = run(capsys, base + ["--incast-slope", "0"])
    assert code == 0, err
    line = refused(capsys, base + ["--incast-slope", "1ps"])
    assert "incast_threshold and incast_slope; --incast-slope is given beside the preset but " \
        "incast_threshold is not: set incast_threshold too (in the preset or beside it) or " \
        "drop --incast-slope" in line


# ------------------------------------------------------------------- fallback notes

def test_note_under_table_and_in_rows(capsys, tmp_path):
    # 8 ranks are not the torus:4x4 grid: bucket runs on a 1-D ring of ranks
    argv = ["run", "-t", "torus:4x4", "-a", "bucket", "--ranks", "8", "-s", "1KiB,2KiB"]
    code, out, err = run(capsys, argv)
    assert code == 0, err
    notes = [ln for ln in out.splitlines() if ln.startswith("note: ")]
    assert len(notes) == 1 and "8 ranks" in notes[0] and "torus:4x4" in notes[0]
    assert out.rstrip("\n").splitlines()[-1] == notes[0]          # under the table
    assert err.splitlines() == ["flowemu: note: " + notes[0][len("note: "):]]
    path = tmp_path / "r.txt"
    code, _, _ = run(capsys, argv + ["-o", str(path)])
    assert code == 0 and path.read_text().splitlines()[-1] == notes[0]
    path = tmp_path / "r.csv"
    code, _, _ = run(capsys, argv + ["-o", str(path)])
    assert code == 0 and (pd.read_csv(path).note == notes[0][len("note: "):]).all()


def test_no_note_no_line(capsys):
    code, out, err = run(capsys, RUN)
    assert code == 0 and "note" not in out and err == ""


# ------------------------------------------------------------------------- version

def test_version(capsys):
    code, out, err = run(capsys, ["--version"])
    declared = tomllib.loads((ROOT_DIR / "pyproject.toml").read_text())["project"]
    version = declared["version"]
    assert code == 0 and err == ""
    assert out == f"flowemu {version}\n" and version.count(".") == 2


# ------------------------------------------------------- a real process per class

@pytest.mark.parametrize("argv,start", [
    (RUN + ["--bandwidth", "400"], "--bandwidth: '400' has no unit"),
    (RUN + ["-s", "1KiB"], "--sizes: given twice"),
    (RUN + ["--seed", "2"], "--seed: applies only to --ecmp hash"),
    (RUN + ["-f", "csv", "-o", "x.parquet"], "--format csv conflicts with --out"),
    (RUN + ["-o", "/nonexistent-dir/r.csv"], "--out: directory"),
], ids=["unit", "repeat", "inapplicable", "format", "path"])
def test_subprocess(tmp_path, argv, start):
    proc = subprocess.run([sys.executable, "-m", "flowemu", *argv], check=False, capture_output=True,
                          text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT_DIR)})
    assert proc.returncode == 2 and proc.stdout == ""
    line = one_error_line(proc.stderr)
    assert line.startswith("flowemu: error: " + start), line
    assert list(tmp_path.iterdir()) == []


def test_subprocess_version():
    proc = subprocess.run([sys.executable, "-m", "flowemu", "--version"], check=False,
                          capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT_DIR)})
    assert proc.returncode == 0 and proc.stdout == f"flowemu {flowemu.__version__}\n"


@pytest.mark.parametrize("argv", [
    ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB", "--ranks", "1e1"],
    ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB", "--ecmp", "hash", "--seed", "1.5"],
    ["jobs", "-t", "torus:4x4", "--job", "algorithm=ring size=1KiB", "--seed", ""],
    ["verify", "-t", "torus:4x4", "-a", "ring", "--ranks", "eight"],
])
def test_integer_options_say_what_they_take(capsys, argv):
    """argparse said only "invalid int value: '1e1'"."""
    line = refused(capsys, argv)
    option, value = argv[-2], argv[-1]
    assert line == (f"flowemu: error: argument {option}: {value!r} is not allowed; expected a "
                    "whole number written with digits, e.g. 8")


@pytest.mark.parametrize("command", [["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB"],
                                     ["jobs", "-t", "torus:4x4", "--job",
                                      "algorithm=ring size=1KiB"]])
@pytest.mark.parametrize("option", ["--fail", "--degrade", "--background"])
def test_an_empty_whatif_option_is_refused_by_run_and_jobs(capsys, command, option):
    """`--background ''` ran without a background and jobs' `--fail ''`
    without a failure, while run refused an empty --fail."""
    line = refused(capsys, command + [option, ""])
    assert line.startswith(f"flowemu: error: {option}: '' is empty; give ")
    assert line.endswith("or drop the option")


def test_jobs_refuses_one_incast_option_alone(capsys):
    """jobs ran with incast silently off when given only --incast-threshold
    (run refused it, and simulate_jobs(incast_threshold=3) does)."""
    line = refused(capsys, ["jobs", "-t", "tree:16", "--job", "algorithm=cps size=1MiB ranks=8",
                            "--incast-threshold", "3"])
    assert line.startswith("flowemu: error: --incast-threshold: incast needs both")
