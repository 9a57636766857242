"""Several jobs sharing one network (``flowemu.simulate_jobs``, issue 27
item 4): hand-worked times on a line of four nodes, start times, placements
and the errors a user gets."""

from __future__ import annotations

import pandas as pd
import pytest

import flowemu
from flowemu.core.errors import ConfigError

B = 1e10
A = 2e-6
N = 2**24
FLAT = {"bandwidth": "80Gb/s", "link_latency": "0s", "hop_latency": "0s"}   # B = 1e10 B/s


def _ids(tmp_path, name, ids):
    path = tmp_path / name
    path.write_text("\n".join(map(str, ids)) + "\n")
    return str(path)


def test_jobs_on_disjoint_links_do_not_slow_each_other():
    """Two 2-rank rings on torus:4 (endpoints 0,1 and 2,3, packed): every flow
    has its own link, so each takes what it takes alone: 2 steps of
    α + (n/2)/B."""
    df = flowemu.simulate_jobs("torus:4", [f"algorithm=ring:ports=1 size={N} ranks=2",
                                           f"algorithm=ring:ports=1 size={N} ranks=2"],
                               alpha="2us", **FLAT)
    assert list(df["placement"]) == ["packed", "packed"]
    for sync in ("barrier", "dataflow"):
        df = flowemu.simulate_jobs("torus:4", [f"algorithm=ring:ports=1 size={N} ranks=2"] * 2,
                                   alpha="2us", sync=sync, **FLAT)
        assert list(df["time_s"]) == pytest.approx([2 * A + N / B] * 2, rel=1e-12)
        assert list(df["slowdown"]) == pytest.approx([1.0, 1.0], rel=1e-12)
        assert list(df["sync"]) == [sync, sync]


def test_interleaved_jobs_share_the_middle_link(tmp_path):
    """mesh:4 is the line 0-1-2-3. Job 0 runs on endpoints 0 and 2, job 1 on
    1 and 3: 0→2 and 1→3 both cross link 1→2 (2→0 and 3→1 link 2→1), so
    together each flow gets B/2: 2(α + n/B) against 2(α + n/(2B)) alone."""
    jobs = [{"algorithm": "ring:ports=1", "size": N, "ranks": 2,
             "placement": _ids(tmp_path, "a.txt", [0, 2])},
            {"algorithm": "ring:ports=1", "size": N, "ranks": 2,
             "placement": _ids(tmp_path, "b.txt", [1, 3])}]
    df = flowemu.simulate_jobs("mesh:4", jobs, alpha="2us", **FLAT)
    together, alone = 2 * (A + N / B), 2 * A + N / B
    assert list(df["time_s"]) == pytest.approx([together] * 2, rel=1e-12)
    assert list(df["alone_s"]) == pytest.approx([alone] * 2, rel=1e-12)
    assert list(df["slowdown"]) == pytest.approx([together / alone] * 2, rel=1e-12)


def test_start_times_on_the_common_clock(tmp_path):
    """The same two jobs with α = 0. Job 1 starting when job 0 has ended
    alone (n/B) meets nothing. Starting at n/(2B), when job 0 begins its
    second step, both share link 1→2 at B/2: job 0's step and job 1's first
    step take n/B and end at 3n/(2B); job 1's second step then runs alone
    (n/(2B)) and ends at 2n/B. Both take 3n/(2B): slowdown 1.5."""
    a = _ids(tmp_path, "a.txt", [0, 2])
    b = _ids(tmp_path, "b.txt", [1, 3])

    def jobs(start):
        return [f"algorithm=ring:ports=1 size={N} ranks=2 placement={a}",
                f"algorithm=ring:ports=1 size={N} ranks=2 placement={b} start={start}"]

    t = N / B
    df = flowemu.simulate_jobs("mesh:4", jobs(f"{t * 1e9!r}ns"), **FLAT)
    assert list(df["start_s"]) == pytest.approx([0.0, t], rel=1e-12)
    assert list(df["end_s"]) == pytest.approx([t, 2 * t], rel=1e-12)
    assert list(df["slowdown"]) == pytest.approx([1.0, 1.0], rel=1e-12)
    for sync in ("barrier", "dataflow"):
        df = flowemu.simulate_jobs("mesh:4", jobs(f"{t / 2 * 1e9!r}ns"), sync=sync, **FLAT)
        assert list(df["end_s"]) == pytest.approx([1.5 * t, 2 * t], rel=1e-12)
        assert list(df["time_s"]) == pytest.approx([1.5 * t, 1.5 * t], rel=1e-12)
        assert list(df["slowdown"]) == pytest.approx([1.5, 1.5], rel=1e-12)


def test_a_late_start_times_a_job_as_at_0(tmp_path):
    """On the common clock a job started at 1e6 s was timed 6 % faster than
    alone (the solver's tie between finishing flows is 1e-12 of the clock:
    a microsecond there), and 1e10 s was taken. The closed forms of
    test_start_times_on_the_common_clock hold at any offset: jobs that overlap
    are solved on a clock of their own."""
    a = _ids(tmp_path, "a.txt", [0, 2])
    b = _ids(tmp_path, "b.txt", [1, 3])
    t = N / B
    for sync in ("barrier", "dataflow"):
        for late in ("1e6s", "3e8s"):
            df = flowemu.simulate_jobs("mesh:4", [
                f"algorithm=ring:ports=1 size={N} ranks=2 placement={a}",
                f"algorithm=ring:ports=1 size={N} ranks=2 placement={a} start={late}",
                f"algorithm=ring:ports=1 size={N} ranks=2 placement={b} start={late}"],
                sync=sync, **FLAT)
            # job 0 alone (n/B); jobs 1 and 2 together share link 1->2 (2 n/B)
            assert list(df["time_s"]) == pytest.approx([t, 2 * t, 2 * t], rel=1e-12)
            assert list(df["slowdown"]) == pytest.approx([1.0, 2.0, 2.0], rel=1e-12)
            assert df["end_s"].iloc[1] == pytest.approx(float(late[:-1]) + 2 * t, rel=1e-15)
    with pytest.raises(ConfigError, match=r"^jobs\[0\].start: '1e10s' is not allowed; expected "
                                          "a time from 0 to 1e9 s"):
        flowemu.simulate_jobs("mesh:4", ["algorithm=ring size=1MiB start=1e10s"])


def test_one_job_is_simulate():
    df = flowemu.simulate_jobs("torus:4x4", ["algorithm=swing:variant=bandwidth size=1MiB"],
                               sync="dataflow")
    want = flowemu.simulate("torus:4x4", "swing:variant=bandwidth", "1MiB", sync="dataflow")
    assert df["time_s"].iloc[0] == pytest.approx(want["time_s"].iloc[0], rel=1e-12)
    assert df["ranks"].iloc[0] == 16 and df["slowdown"].iloc[0] == 1.0
    auto = flowemu.simulate_jobs("torus:4x4", ["algorithm=swing size=32B"])
    assert auto["variant"].iloc[0] == "latency"   # the variant fastest alone at 32 B


@pytest.mark.parametrize("jobs, message", [
    (["algorithm=ring"], r"jobs\[0\]: size is missing"),
    (["algorithm=ring size=1MiB colour=red"], r"jobs\[0\]: unknown key 'colour'"),
    (["algorithm=ring size=1MiB ranks=1"],
     r"jobs\[0\].ranks: 1 is not allowed; expected an integer >= 2"),
    # an int, as simulate's ranks: 8.0 is refused there too
    ([{"algorithm": "ring", "size": "1MiB", "ranks": 8.0}],
     r"^jobs\[0\].ranks: 8.0 is not allowed; expected an integer >= 2$"),
    (["algorithm=ring size=1MiB ranks=8.0"], r"^jobs\[0\].ranks: '8.0' is not allowed"),
    (["algorithm=ring size=1MiB ranks=12", "algorithm=ring size=1MiB ranks=8"],
     r"jobs\[1\].ranks: 8 ranks do not fit on the 4 endpoints"),
    (["algorithm=ring size=1MiB ranks=12", "algorithm=ring size=1MiB ranks=8 placement=random:1"],
     r"jobs\[1\].ranks: 8 ranks do not fit on the 4 endpoints of torus:4x4 the jobs before it leave"),
    (["algorithm=ring size=1MiB start=5"], r"jobs\[0\].start: '5' has no unit"),
    ([{"algorithm": "ring", "size": "1MiB", "start": 1e-6}], r"jobs\[0\].start: .* needs its unit"),
    (["algorithm=gentree size=1MiB"], r"jobs\[0\].algorithm"),
    # the field named once; the first job has no jobs before it
    (["algorithm=swign size=1MiB"],
     r"^jobs\[0\].algorithm: unknown name 'swign' \(did you mean 'swing'\?\); known: "),
    (["algorithm=ring size=1MiB ranks=40"],
     r"^jobs\[0\].ranks: 40 ranks do not fit on the 16 endpoints of torus:4x4$"),
    ([], r"jobs: .* expected a list of one or more jobs"),
    # a DataFrame's items are its column names ("jobs[0]: 'algorithm' is not key=value")
    (pd.DataFrame({"algorithm": ["ring"], "size": ["1MiB"]}),
     (r"^jobs: DataFrame\(1 rows; columns algorithm, size\) is not allowed; .* "
     r"df.to_dict\('records'\)")),
    ("algorithm=ring size=1MiB", r"jobs: .* expected a list"),
])
def test_bad_jobs_are_named(jobs, message):
    with pytest.raises(ConfigError, match=message):
        flowemu.simulate_jobs("torus:4x4", jobs)


def test_jobs_on_the_same_endpoints_share_their_links():
    """Two 2-rank rings both placed linear (endpoints 0 and 1 of torus:4):
    their flows 0→1 (and 1→0) share one link, B/2 each."""
    df = flowemu.simulate_jobs("torus:4", [(f"algorithm=ring:ports=1 size={N} ranks=2 "
                                           "placement=linear")] * 2, alpha="2us", **FLAT)
    assert list(df["time_s"]) == pytest.approx([2 * (A + N / B)] * 2, rel=1e-12)
    assert list(df["alone_s"]) == pytest.approx([2 * A + N / B] * 2, rel=1e-12)


def test_algorithms_that_plan_per_size_plan_for_the_jobs_size():
    """dualroot (blocks=auto) and gentree choose their plan for the size; one
    job alone is the same run as simulate's."""
    for alg in ("dualroot", "gentree"):
        df = flowemu.simulate_jobs("tree:SS24", [f"algorithm={alg} size=64MiB"],
                                   network="genmodel-table5")
        want = flowemu.simulate("tree:SS24", alg, "64MiB", network="genmodel-table5")
        assert df["time_s"].iloc[0] == pytest.approx(want["time_s"].iloc[0], rel=1e-12)
        assert df["variant"].iloc[0] == want["variant"].iloc[0]


def test_failures_follow_the_fail_policy_per_job():
    """A ring job whose neighbour link fails is refused under the strict
    policy, naming the job, as simulate refuses it; reroute runs it."""
    jobs = ["algorithm=ring size=1MiB ranks=8", "algorithm=recdoub size=1MiB ranks=8"]
    with pytest.raises(ConfigError, match=r"jobs\[0\]: fail: algorithm ring relies on link"):
        flowemu.simulate_jobs("torus:4x4", jobs, fail="random:2:1")
    df = flowemu.simulate_jobs("torus:4x4", jobs, fail="random:2:1", fail_policy="reroute")
    assert list(df["failed_links"]) == [2, 2] and (df["time_s"] > 0).all()


def test_a_bad_placement_names_the_field_once_and_lists_packed():
    """simulate_jobs' message names jobs[1].placement once and lists every
    placement a job takes, its default packed first."""
    with pytest.raises(ConfigError) as info:
        flowemu.simulate_jobs("torus:8x8", ["algorithm=ring size=1MiB ranks=16",
                                            "algorithm=ring size=1MiB ranks=16 placement=rndom:1"])
    assert str(info.value) == (
        "jobs[1].placement 'rndom:1': no such file; expected \"packed\" (the default: the next "
        "endpoints no earlier job took), \"linear\", \"random:SEED\" (SEED an integer >= 0) or "
        "a file of endpoint ids (\"FILE\" or \"file:FILE\", one per rank)")
