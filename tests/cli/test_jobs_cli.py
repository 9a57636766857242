"""``flowemu jobs`` (issue 27 item 4)."""

from __future__ import annotations

import io

import pandas as pd

import flowemu
from flowemu.cli.app import main

JOBS = ["--job", "algorithm=ring size=1MiB ranks=32 placement=random:1",
        "--job", ("algorithm=recdoub:variant=bandwidth size=1MiB ranks=32 placement=random:2 "
                 "start=5us")]


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_jobs_csv_is_simulate_jobs(capsys):
    code, out, err = run(capsys, ["jobs", "-t", "torus:8x8", *JOBS, "--sync", "dataflow",
                                  "-f", "csv"])
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out))
    want = flowemu.simulate_jobs("torus:8x8", [JOBS[1], JOBS[3]], sync="dataflow")
    assert list(got["time_s"]) == list(want["time_s"])
    assert list(got["job"]) == [0, 1] and (got["slowdown"] >= 1.0 - 1e-12).all()


def test_jobs_table_and_errors(capsys):
    code, out, err = run(capsys, ["jobs", "-t", "torus:8x8", *JOBS])
    assert code == 0, err
    assert "sync=barrier" in out and "slowdown" in out and "random:2" in out
    code, _, err = run(capsys, ["jobs", "-t", "torus:8x8", "--job", "algorithm=ring size=1MiB",
                                "--job", "algorithm=ring size=1MiB ranks=8"])
    assert code == 2 and "--job 2: no endpoints are left for it" in err
    code, out, err = run(capsys, ["jobs", "-t", "torus:8x8", *JOBS, "--background", "perm:0.2"])
    assert code == 0 and "background=perm:0.2" in out.splitlines()[0]
    code, _, err = run(capsys, ["jobs", "-t", "torus:8x8", "--job", "algorithm=nosuch size=1MiB"])
    assert code == 2 and "--job 1, algorithm:" in err
    code, _, err = run(capsys, ["jobs", "-t", "torus:8x8", "--job",
                                "algorithm=ring size=1MiB ranks=4 placement=random:x"])
    assert code == 2 and "--job 1, placement: placement 'random:x'" in err
