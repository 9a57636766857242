"""``flowemu jobs`` (issue 27 item 4)."""

from __future__ import annotations

import io

import pandas as pd
import pytest

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
    assert code == 2 and "job 1 (the 2nd --job): no endpoints are left for it" in err
    code, out, err = run(capsys, ["jobs", "-t", "torus:8x8", *JOBS, "--background", "perm:0.2"])
    assert code == 0 and "background=perm:0.2" in out.splitlines()[0]
    code, _, err = run(capsys, ["jobs", "-t", "torus:8x8", "--job", "algorithm=nosuch size=1MiB"])
    assert code == 2 and "job 0 (the 1st --job), algorithm: unknown name 'nosuch'" in err
    code, _, err = run(capsys, ["jobs", "-t", "torus:8x8", "--job",
                                "algorithm=ring size=1MiB ranks=4 placement=random:x"])
    assert code == 2 and "job 0 (the 1st --job), placement 'random:x': the seed 'x'" in err


def test_job_errors_number_the_jobs_as_the_table_does(capsys):
    """The table's job column counts from 0, and so do the messages (each also says
    which --job it was); the field is named once; the first job has no jobs before it."""
    code, _, err = run(capsys, ["jobs", "-t", "torus:4x4",
                                "--job", "algorithm=ring size=1MiB ranks=4",
                                "--job", "algorithm=swign size=1MiB ranks=4"])
    assert code == 2
    assert err.startswith("flowemu: error: job 1 (the 2nd --job), algorithm: unknown name "
                          "'swign' (did you mean 'swing'?); known: "), err
    code, _, err = run(capsys, ["jobs", "-t", "torus:4x4",
                                "--job", "algorithm=ring size=1MiB ranks=40"])
    assert code == 2
    assert err == ("flowemu: error: job 0 (the 1st --job), ranks: 40 ranks do not fit on the "
                   "16 endpoints of torus:4x4\n")
    code, _, err = run(capsys, ["jobs", "-t", "torus:4x4",
                                "--job", "algorithm=ring size=1MiB ranks=8",
                                "--job", "algorithm=ring size=1MiB ranks=10"])
    assert code == 2
    assert err == ("flowemu: error: job 1 (the 2nd --job), ranks: 10 ranks do not fit on the "
                   "8 endpoints of torus:4x4 the jobs before it leave\n")


def test_job_of_another_collective_and_a_builder_refusal_name_the_job(capsys):
    """An algorithm of another collective was refused with a hint to give
    ``--collective``, which ``jobs`` does not take; what an algorithm's
    builder refuses (ring's ports=4 on ranks that are no 2-D grid) came
    without the job it was about."""
    code, _, err = run(capsys, ["jobs", "-t", "tree:8",
                                "--job", "algorithm=ring size=1MiB ranks=4",
                                "--job", "algorithm=bruck size=1MiB ranks=4"])
    assert code == 2 and "--collective" not in err
    assert err.startswith("flowemu: error: job 1 (the 2nd --job), algorithm: 'bruck' serves "
                          "allgather, alltoall; a job is an allreduce"), err
    code, _, err = run(capsys, ["jobs", "-t", "tree:8",
                                "--job", "algorithm=ring:ports=4 size=1MiB ranks=4"])
    assert code == 2
    assert err.startswith("flowemu: error: job 0 (the 1st --job), algorithm ring: "
                          "ports=4 needs a 2-D torus"), err
    code, _, err = run(capsys, ["jobs", "-t", "tree:8",     # said "algorithm" twice
                                "--job", "algorithm=ring:ports=7 size=1MiB ranks=4"])
    assert code == 2
    assert err.startswith("flowemu: error: job 0 (the 1st --job), algorithm ring: option "
                          "ports='7' is not allowed; allowed: max, 1, 2, 4"), err


#: a new user's mistakes with jobs, each with the whole line it must print (written by hand)
JOB_MISTAKES = [
    (["--job", "algorithm=ring size=1MiB ranks=16",
      "--job", "algorithm=ring size=1MiB ranks=16 placement=rndom:1"],
     ("flowemu: error: job 1 (the 2nd --job), placement 'rndom:1': no such file; expected "
      "\"packed\" (the default: the next endpoints no earlier job took), \"linear\", "
      "\"random:SEED\" (SEED an integer >= 0) or a file of endpoint ids (\"FILE\" or "
      "\"file:FILE\", one per rank)\n")),
    (["--job", "algoritm=ring size=1MiB"],
     ("flowemu: error: job 0 (the 1st --job): unknown key 'algoritm' (did you mean "
      "'algorithm'?); expected algorithm, size, ranks, placement, start\n")),
    (["--job", "algorithm=ring size=1MiB", "--ecmp", "splt"],
     ("flowemu: error: --ecmp: 'splt' is not allowed (did you mean 'split'?); allowed: split, "
      "dor, hash, valiant, dmodk, adaptive\n")),
    (["--job", "algorithm=ring size=1MiB", "--sync", "dataflw"],
     "flowemu: error: --sync: 'dataflw' is not allowed; expected one of barrier, dataflow\n"),
]


@pytest.mark.parametrize("extra,line", JOB_MISTAKES, ids=[a[-1] for a, _ in JOB_MISTAKES])
def test_job_mistakes_name_the_field_once_and_suggest(capsys, extra, line):
    code, _, err = run(capsys, ["jobs", "-t", "torus:8x8", *extra])
    assert code == 2
    assert err == line


def test_jobs_topology_error_names_the_option(capsys):
    code, _, err = run(capsys, ["jobs", "-t", "fatree:k=8", "--job", "algorithm=ring size=1MiB"])
    assert code == 2
    assert err.startswith("flowemu: error: --topology 'fatree:k=8': unknown family 'fatree' "
                          "(did you mean 'fattree'?); known families: dragonfly, "), err
