"""Output files: checked before any work, named by the option the user gave,
written atomically, in the format their extension says."""

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import flowemu.api.simulation
from flowemu.core import outputs
from flowemu.core.errors import ConfigError
from tests.helpers.cli import one_error_line, run

RUN = ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB,1MiB"]
ROOT = os.geteuid() == 0


def _bad_places(tmp_path):
    """(label, path, words the message must hold) for every kind of bad place."""
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    places = [
        ("directory", str(tmp_path / "adir"), ["is a directory"]),
        ("trailing slash", str(tmp_path / "new") + "/", ["is a directory"]),
        ("missing directory", str(tmp_path / "missing" / "r.csv"), ["does not exist"]),
        ("file as directory", str(tmp_path / "afile" / "r.csv"), ["not a directory"]),
        ("read-only file system", "/proc/flowemu-test.csv", ["cannot write"]),
    ]
    if not ROOT:   # root writes through permissions: only a non-root user can be refused
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        places.append(("unwritable directory", str(locked / "r.csv"), ["cannot write"]))
    return places


def _argv(option, path, tmp_path):
    """A tiny command that writes ``path`` through ``option``."""
    if option == "compare --out":
        ds = tmp_path / "ds.csv"
        ds.write_text("size_bytes,goodput_Bps,algorithm\n1,1,ring\n")
        return ["compare", str(ds), "--out", path]
    return RUN + [option, path]


@pytest.mark.parametrize("option", ["--out", "--congestion", "--flows-out", "compare --out"])
def test_bad_output_place_fails_before_work(capsys, tmp_path, no_work, monkeypatch, option):
    if option == "compare --out":
        import flowemu.study.results
        monkeypatch.setattr(flowemu.results, "load", lambda *a: (_ for _ in ()).throw(
            AssertionError("compare loaded the dataset before checking --out")))
    for label, path, words in _bad_places(tmp_path):
        code, out, err = run(capsys, _argv(option, path, tmp_path))
        assert code == 2, (label, err)
        line = one_error_line(err)
        name = option.split()[-1]
        assert line.startswith(f"flowemu: error: {name}: "), (label, line)
        for word in words:
            assert word in line, (label, line)
        assert out == ""


@pytest.mark.skipif(ROOT, reason="root ignores directory permissions")
def test_unwritable_directory_named(capsys, tmp_path, no_work):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        code, _, err = run(capsys, RUN + ["--congestion", str(locked / "c.csv")])
    finally:
        locked.chmod(0o700)
    assert code == 2 and "--congestion: cannot write" in one_error_line(err)


def test_congestion_summary_path_is_checked_too(capsys, tmp_path, no_work):
    # the summary goes beside the steps file: a directory there is refused up front
    (tmp_path / "c_summary.csv").mkdir()
    code, _, err = run(capsys, RUN + ["--congestion", str(tmp_path / "c.csv")])
    assert code == 2
    line = one_error_line(err)
    assert line.startswith("flowemu: error: --congestion: ") and "c_summary.csv" in line


def test_two_options_one_file(capsys, tmp_path, no_work):
    path = str(tmp_path / "x.csv")
    code, _, err = run(capsys, RUN + ["-o", path, "--flows-out", path])
    assert code == 2
    line = one_error_line(err)
    assert "--flows-out" in line and "--out" in line


def test_output_over_the_input_is_refused(capsys, tmp_path, dataset):
    traffic = tmp_path / "t.csv"
    traffic.write_text("step,src,dst,bytes\n0,0,1,1000\n")
    code, _, err = run(capsys, ["run", "-t", "torus:4", "--traffic", str(traffic), "-o",
                                str(traffic)])
    assert code == 2 and "--out" in one_error_line(err) and "--traffic" in err
    assert traffic.read_text() == "step,src,dst,bytes\n0,0,1,1000\n"
    code, _, err = run(capsys, ["compare", dataset, "-o", dataset])
    assert code == 2 and "--out" in one_error_line(err) and "the dataset" in err


def test_full_disk_leaves_no_half_file(capsys, tmp_path, monkeypatch):
    path = tmp_path / "r.csv"
    path.write_text("previous results\n")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(outputs.os, "fsync", full)
    code, _, err = run(capsys, RUN + ["-o", str(path)])
    assert code == 2
    line = one_error_line(err)
    assert line.startswith("flowemu: error: --out: cannot write") and "No space left" in line
    # the previous file is intact and no temporary file is left beside it
    assert path.read_text() == "previous results\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]


@pytest.mark.parametrize("option", ["--congestion", "--flows-out"])
def test_full_disk_names_the_option(capsys, tmp_path, monkeypatch, option):
    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(outputs.os, "fsync", full)
    code, _, err = run(capsys, RUN + [option, str(tmp_path / "x.csv")])
    assert code == 2
    assert one_error_line(err).startswith(f"flowemu: error: {option}: cannot write")
    assert list(tmp_path.iterdir()) == []


def test_write_atomic_failure_midway(tmp_path):
    path = tmp_path / "f.parquet"

    def half(fh):
        fh.write(b"PAR1 half a file")
        raise OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(ConfigError) as e:
        outputs.write_atomic(path, "--flows-out", half)
    assert str(e.value).startswith("--flows-out: cannot write")
    assert list(tmp_path.iterdir()) == []


def test_write_to_a_device(tmp_path):
    # /dev/null is not replaced by a rename, it is written through
    outputs.check_writable("/dev/null", "--out")
    outputs.write_text("/dev/null", "--out", "x")
    assert Path("/dev/null").is_char_device()


# ----------------------------------------------------------------- format by extension

@pytest.mark.parametrize("ext,read", [
    (".parquet", pd.read_parquet), (".pq", pd.read_parquet), (".csv", pd.read_csv),
    (".json", lambda p: pd.DataFrame(json.loads(Path(p).read_text()))),
])
def test_run_format_follows_extension(capsys, tmp_path, ext, read):
    path = tmp_path / f"r{ext}"
    code, out, err = run(capsys, RUN + ["-o", str(path)])
    assert code == 0, err
    assert out == ""       # the results went to the file
    df = read(path)
    assert list(df.size_bytes) == [1024, 2**20] and set(df.algorithm) == {"ring"}


@pytest.mark.parametrize("name", ["r.txt", "r"])
def test_run_table_for_txt_and_no_extension(capsys, tmp_path, name):
    path = tmp_path / name
    code, _, err = run(capsys, RUN + ["-o", str(path)])
    assert code == 0, err
    text = path.read_text()
    assert text.split()[:3] == ["topology", "algorithm", "variant"] and "1MiB" in text


def test_no_extension_takes_format(capsys, tmp_path):
    path = tmp_path / "r"
    code, _, err = run(capsys, RUN + ["-f", "csv", "-o", str(path)])
    assert code == 0, err
    assert list(pd.read_csv(path).size_bytes) == [1024, 2**20]


def test_unknown_extension_with_format(capsys, tmp_path):
    path = tmp_path / "r.dat"
    code, _, err = run(capsys, RUN + ["-f", "json", "-o", str(path)])
    assert code == 0, err
    assert len(json.loads(path.read_text())) == 2


@pytest.mark.parametrize("extra,words", [
    (["-f", "csv", "-o", "x.parquet"], ["--format csv", "--out", "x.parquet", "parquet"]),
    (["-f", "table", "-o", "x.json"], ["--format table", "--out", "x.json"]),
    (["--format", "parquet", "-o", "x.csv"], ["--format parquet", "x.csv"]),
    (["-o", "x.xlsx"], ["--out", ".xlsx", "--format"]),
    (["-f", "parquet"], ["--format parquet", "--out"]),
    (["-f", "xml"], ["--format", "xml", "table, csv, json, parquet"]),
])
def test_run_format_conflicts(capsys, tmp_path, no_work, extra, words):
    argv = RUN + [str(tmp_path / a) if a.startswith("x.") else a for a in extra]
    code, _, err = run(capsys, argv)
    assert code == 2
    line = one_error_line(err)
    for word in words:
        assert word in line, line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option,name,words", [
    ("--congestion", "c.txt", ["--congestion", "table", ".csv, .json"]),
    ("--congestion", "c.xlsx", ["--congestion", ".xlsx"]),
    ("--flows-out", "f.json", ["--flows-out", "json", ".csv"]),
])
def test_side_outputs_refuse_other_formats(capsys, tmp_path, no_work, option, name, words):
    code, _, err = run(capsys, RUN + [option, str(tmp_path / name)])
    assert code == 2
    line = one_error_line(err)
    for word in words:
        assert word in line, line


def test_congestion_parquet_and_summary(capsys, tmp_path):
    path = tmp_path / "c.parquet"
    code, _, err = run(capsys, ["run", "-t", "torus:8", "-a", "ring", "-s", "1MiB",
                                "--congestion", str(path)])
    assert code == 0, err
    steps = pd.read_parquet(path)
    summary = pd.read_parquet(tmp_path / "c_summary.parquet")
    # a bidirectional ring on an 8-ring: 2(p-1) steps
    assert len(steps) == 2 * (8 - 1) and len(summary) == 1


def test_flows_out_parquet(capsys, tmp_path):
    path = tmp_path / "f.pq"
    code, _, err = run(capsys, ["run", "-t", "torus:8", "-a", "recdoub:variant=latency",
                                "-s", "1MiB", "--flows-out", str(path)])
    assert code == 0, err
    assert len(pd.read_parquet(path)) == 3 * 8    # log2(8) steps of 8 flows


@pytest.fixture
def dataset(tmp_path):
    """A two-algorithm result table to compare."""
    df = pd.concat([flowemu.api.simulation.simulate("torus:4x4", a, "1KiB,1MiB")
                    for a in ("ring", "recdoub")])
    path = tmp_path / "ds.parquet"
    df.to_parquet(path)
    return str(path)


@pytest.mark.parametrize("ext", [".parquet", ".csv", ".json", ".txt"])
def test_compare_format_follows_extension(capsys, tmp_path, dataset, ext):
    path = tmp_path / f"cmp{ext}"
    code, _, err = run(capsys, ["compare", dataset, "-o", str(path)])
    assert code == 0, err
    if ext == ".parquet":
        cmp = pd.read_parquet(path)
    elif ext == ".csv":
        cmp = pd.read_csv(path)
    elif ext == ".json":
        cmp = pd.DataFrame(json.loads(path.read_text()))
    else:
        assert "ring" in path.read_text() and "recdoub" in path.read_text()
        return
    # one row per (size, algorithm)
    assert len(cmp) == 4 and set(cmp.algorithm) == {"ring", "recdoub"}


@pytest.mark.parametrize("extra,words", [
    (["-f", "csv", "-o", "x.parquet"], ["--format csv", "x.parquet"]),
    (["-f", "parquet"], ["--format parquet", "--out"]),
    (["-o", "x.xlsx"], ["--out", ".xlsx"]),
    (["--by", "colour"], ["--by", "colour", "label, algorithm, model, sync or whatif"]),
])
def test_compare_refusals(capsys, tmp_path, dataset, extra, words):
    argv = ["compare", dataset] + [str(tmp_path / a) if a.startswith("x.") else a
                                   for a in extra]
    code, _, err = run(capsys, argv)
    assert code == 2
    line = one_error_line(err)
    for word in words:
        assert word in line, line


# ----------------------------------------------------------------- a real process

def test_subprocess_bad_output(tmp_path):
    # a 64x64 torus would take seconds: the bad path is refused before it starts
    proc = subprocess.run(
        [sys.executable, "-m", "flowemu", "run", "-t", "torus:64x64", "-a", "ring", "-s",
         "1MiB", "--congestion", str(tmp_path / "missing" / "c.csv")],
        check=False, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(flowemu.api.simulation.__file__).parents[1])})
    assert proc.returncode == 2 and proc.stdout == ""
    line = one_error_line(proc.stderr)
    assert line.startswith("flowemu: error: --congestion: directory") and "missing" in line


def test_dash_is_standard_output(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, RUN + ["-o", "-", "-f", "csv"])
    assert code == 0, err
    assert out.splitlines()[0].startswith("topology,") and len(out.splitlines()) == 3
    assert list(tmp_path.iterdir()) == []     # no file called '-'


def test_bad_flows_size_fails_before_work(capsys, tmp_path, no_work):
    code, _, err = run(capsys, RUN + ["--flows-out", str(tmp_path / "f.csv"),
                                      "--flows-size", "lots"])
    assert code == 2 and one_error_line(err).startswith("flowemu: error: --flows-size: ")


def test_written_file_has_the_usual_mode(tmp_path):
    # the temporary file is private (0600) while written; the result gets 0666 minus umask
    mask = os.umask(0)
    os.umask(mask)
    path = outputs.write_text(tmp_path / "r.csv", "--out", "a,b")
    assert path.read_text() == "a,b\n"
    assert (path.stat().st_mode & 0o777) == 0o666 & ~mask


def test_json_keeps_every_digit_of_a_number(capsys, tmp_path):
    """pandas' to_json kept 10 decimals: gamma = 0.15 ns/B came out as
    0.0000000002 and an incast slope of 30.5 ps/B as 0.0 (incast off). The
    JSON rows now read back as the CSV's, number for number."""
    net = ["--gamma", "0.15ns", "--incast-threshold", "4", "--incast-slope", "30.5ps"]
    for fmt in ("json", "csv"):
        code, _, err = run(capsys, RUN + net + ["-o", str(tmp_path / f"r.{fmt}")])
        assert code == 0, err
    rows = json.loads((tmp_path / "r.json").read_text())
    assert rows[0]["gamma_s_per_B"] == 1.5e-10 and rows[0]["incast_slope_s_per_B"] == 3.05e-11
    csv = pd.read_csv(tmp_path / "r.csv")
    for col in csv.columns:
        got = [r[col] for r in rows]
        if csv[col].dtype.kind == "f" and not any(isinstance(v, str) for v in got):
            want = [None if pd.isna(v) else float(v) for v in csv[col]]
            assert got == want, col
