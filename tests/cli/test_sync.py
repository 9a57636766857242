"""``flowemu run --sync`` and ``flowemu list`` (issue 27 item 1)."""

from __future__ import annotations

import io

import pandas as pd

import flowemu
from flowemu.cli.app import main

BASE = ["run", "-t", "torus:4x4", "-a", "swing", "-s", "1MiB", "--slow", "3=0.5"]


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_run_sync_dataflow_matches_simulate(capsys):
    code, out, err = run(capsys, BASE + ["--sync", "dataflow", "-f", "csv"])
    assert code == 0, err
    df = pd.read_csv(io.StringIO(out))
    assert list(df["sync"]) == ["dataflow"]
    want = flowemu.simulate("torus:4x4", "swing", "1MiB", slow="3=0.5", sync="dataflow")
    assert df["time_s"].iloc[0] == want["time_s"].iloc[0]
    code, out, err = run(capsys, BASE + ["--sync", "dataflow"])
    assert code == 0 and " sync " in out.splitlines()[0] and "dataflow" in out


def test_run_sync_refusals(capsys, tmp_path):
    code, _, err = run(capsys, BASE + ["--sync", "eventually"])
    assert code == 2 and "sync: 'eventually' is not allowed; expected one of barrier, " \
                         "dataflow" in err
    code, _, err = run(capsys, BASE + ["--sync", "dataflow", "--flows-out",
                                       str(tmp_path / "f.csv")])
    assert code == 2 and "--flows-out" in err and "--sync dataflow" in err


def test_list_names_the_synchronisations(capsys):
    code, out, _ = run(capsys, ["list"])
    assert code == 0 and "run --sync" in out and "dataflow " in out and "barrier " in out
