"""What-ifs through every door: ``flowemu.simulate`` / ``time_traffic`` /
``congestion`` keywords, ``flowemu run`` options, the result columns and the
slowdown against the healthy network (:mod:`flowemu.whatif.conditions`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.study.results import slowdown
from flowemu.whatif.conditions import WHATIF_COLUMNS
from tests.helpers.cli import one_error_line, run

NET = Network()
HOP = NET.link_latency + NET.hop_latency
N = 2**20


def test_result_columns_hold_the_what_ifs():
    assert set(WHATIF_COLUMNS) <= set(flowemu.RESULT_COLUMNS)
    healthy = flowemu.simulate("torus:4x4", "swing", "1MiB")
    row = healthy.iloc[0]
    assert (row.fail, row.degrade, row.fail_policy, row.slow, row.background) == \
        ("", "", "strict", "", "")
    assert row.failed_links == 0 and math.isnan(row.background_Bps)
    df = flowemu.simulate("torus:4x4", "swing", "1MiB", fail=["random:2:5", "0,0-1,0"],
                          degrade="1,*-2,*=0.5:lat=2", slow="3=0.5", background="perm:0.25")
    row = df.iloc[0]
    assert row.fail == "random:2:5;0,0-1,0" and row.degrade == "1,*-2,*=0.5:lat=2"
    assert row.slow == "3=0.5" and row.background == "perm:0.25"
    assert row.failed_links in (2, 3)   # the random two may include the named cable
    assert row.background_Bps > 0 and row.time_s > healthy.time_s.iloc[0]


def test_detour_on_a_failed_ring_through_simulate_and_run(capsys):
    """torus:8, cable 3-4 failed, one-port ring: the flow 3->4 detours 7 hops
    over links no other flow uses, so every one of the 2(p−1) = 14 steps
    costs 7 hops + (n/8)/B instead of 1 hop + (n/8)/B."""
    kw = {"fail": "3-4", "fail_policy": "reroute"}
    df = flowemu.simulate("torus:8", "ring:ports=1", N, **kw)
    t = df.time_s.iloc[0]
    assert math.isclose(t, 14 * (7 * HOP + N / 8 / NET.bandwidth), rel_tol=1e-12)
    assert df.failed_links.iloc[0] == 1 and df.fail_policy.iloc[0] == "reroute"
    code, out, _err = run(capsys, ["run", "-t", "torus:8", "-a", "ring:ports=1", "-s", "1MiB",
                                  "--fail", "3-4", "--fail-policy", "reroute", "-f", "csv"])
    assert code == 0
    got = pd.read_csv(pd.io.common.StringIO(out))
    healthy = 14 * (HOP + N / 8 / NET.bandwidth)
    assert math.isclose(got.time_s.iloc[0], t, rel_tol=1e-12)
    assert math.isclose(got.healthy_time_s.iloc[0], healthy, rel_tol=1e-12)
    assert math.isclose(got.slowdown.iloc[0], t / healthy, rel_tol=1e-12)


def test_strict_policy_refuses_a_broken_neighbour_ring(capsys):
    with pytest.raises(ConfigError, match=r"^fail: algorithm ring relies on link 3-4 .*"
                                          "fail_policy='reroute'"):
        flowemu.simulate("torus:8", "ring:ports=1", N, fail="3-4")
    code, out, err = run(capsys, ["run", "-t", "torus:8", "-a", "ring", "--fail", "3-4"])
    assert code == 2 and out == "" and "relies on link 3-4" in one_error_line(err)
    # swing is not bound to its links: it is routed around the failure
    assert flowemu.simulate("torus:8", "swing", N, fail="3-4").time_s.iloc[0] > 0


def test_degrade_on_the_only_path_through_time_traffic():
    """Two hosts under one leaf: the flow's only path has its host link at
    factor 0.25, so its fluid time is 4 n / B."""
    traffic = pd.DataFrame({"step": [0], "src": [0], "dst": [1], "bytes": [N]})
    healthy = flowemu.time_traffic("leafspine:2x1x1", traffic)
    slow = flowemu.time_traffic("leafspine:2x1x1", traffic, degrade="link:0=0.25")
    lat = healthy.time_s.iloc[0] - N / NET.bandwidth
    assert math.isclose(slow.time_s.iloc[0] - lat, 4 * N / NET.bandwidth, rel_tol=1e-12)
    assert slow.degrade.iloc[0] == "link:0=0.25"


def test_slowdown_pairs_each_row_with_its_healthy_twin():
    sizes = [1024, N]
    healthy = flowemu.simulate("torus:4x4", "recdoub", sizes)
    faulty = flowemu.simulate("torus:4x4", "recdoub", sizes, fail="random:3:1")
    other = flowemu.simulate("torus:4x4", "swing", sizes, fail="random:3:1")   # no twin
    got = slowdown(pd.concat([faulty, healthy, other], ignore_index=True))
    assert np.allclose(got.slowdown.iloc[:2], faulty.time_s / healthy.time_s, rtol=1e-15)
    assert np.array_equal(got.slowdown.iloc[2:4], [1.0, 1.0])
    assert got.slowdown.iloc[4:].isna().all()
    with pytest.raises(ConfigError, match="slowdown: expected result rows"):
        slowdown(pd.DataFrame({"a": [1]}))


def test_simulate_and_time_traffic_give_the_slowdown_on_request():
    """slowdown=True adds the healthy network's time and the slowdown, as
    results.slowdown gives them from the two runs side by side."""
    sizes = "1KiB,1MiB"
    got = flowemu.simulate("torus:8x8", "swing", sizes, background="perm:0.5", slowdown=True)
    sick = flowemu.simulate("torus:8x8", "swing", sizes, background="perm:0.5")
    healthy = flowemu.simulate("torus:8x8", "swing", sizes)
    want = slowdown(pd.concat([sick, healthy], ignore_index=True)).iloc[:2]
    assert list(got.columns) == list(sick.columns) + ["healthy_time_s", "slowdown"]
    assert np.array_equal(got.healthy_time_s, healthy.time_s)
    assert np.allclose(got.slowdown, want.slowdown, rtol=1e-15) and (got.slowdown > 1).all()
    assert (flowemu.simulate("torus:8x8", "swing", sizes, slowdown=True).slowdown == 1.0).all()
    traffic = pd.DataFrame({"step": [0, 0], "src": [0, 5], "dst": [9, 12], "bytes": [2**20] * 2})
    one = flowemu.time_traffic("torus:8x8", traffic, degrade="0,0-0,1=0.25", slowdown=True)
    alone = flowemu.time_traffic("torus:8x8", traffic)
    assert one.healthy_time_s.iloc[0] == alone.time_s.iloc[0]
    assert one.slowdown.iloc[0] == one.time_s.iloc[0] / alone.time_s.iloc[0] > 1
    with pytest.raises(ConfigError, match="slowdown: 'yes' is not allowed; expected True or"):
        flowemu.simulate("torus:8x8", "swing", sizes, slowdown="yes")


def test_congestion_and_adaptive_take_what_ifs():
    steps, _summary = flowemu.congestion("torus:4x4", "recdoub:variant=bandwidth",
                                        fail="random:3:1")
    healthy, _ = flowemu.congestion("torus:4x4", "recdoub:variant=bandwidth")
    assert steps.max_link_load.sum() >= healthy.max_link_load.sum()
    split = flowemu.simulate("torus:4x4", "recdoub", N, fail="random:3:1")
    adaptive = flowemu.simulate("torus:4x4", "recdoub", N, fail="random:3:1", ecmp="adaptive")
    assert adaptive.time_s.iloc[0] <= split.time_s.iloc[0] * (1 + 1e-9)


def test_congestion_refuses_what_ifs_that_change_no_byte(capsys):
    """Ψ and Ξ count bytes on links: a degraded link, a slow rank or a
    background changes none, so congestion() refuses them rather than
    returning the healthy figures as theirs; run --congestion says so."""
    for kw in ({"degrade": "0,0-1,0=0.5"}, {"slow": "1=0.5"}, {"background": "perm:0.5"}):
        name = next(iter(kw))
        with pytest.raises(ConfigError, match=f"^{name}: congestion counts the bytes on links "
                                              "and ports"):
            flowemu.congestion("torus:4x4", "recdoub:variant=bandwidth", **kw)
    code, out, err = run(capsys, ["run", "-t", "torus:4x4", "-a", "recdoub", "-s", "1KiB",
                                  "--congestion", "-", "--background", "perm:0.5"])
    assert code == 0 and "deficiencies" in out
    assert "note: --congestion: Ψ and Ξ count bytes on links, which --background does not " \
        "change" in err


@pytest.mark.parametrize("argv,needle", [
    (["--fail", "9,9-0,0"], "--fail: '9,9-0,0'"),
    (["--fail", "nonsense"], "--fail: 'nonsense'"),
    (["--degrade", "0,0-1,0=0"], "--degrade: "),
    (["--degrade", "0,0-1,0=1.5"], "--degrade: "),
    (["--fail", "0,0-1,0;0,0-0,1;0,0-3,0;0,0-0,3"], "cuts off"),
    (["--fail-policy", "maybe", "--fail", "0,0-1,0"], "--fail-policy: 'maybe' is not allowed"),
    (["--slow", "99=0.5"], "--slow: "),
    (["--slow", "1=2"], "--slow: "),
    (["--background", "perm:1.5"], "--background: "),
    (["--background", "/nonexistent/bg.csv"], "--background: "),
    (["--model", "genmodel", "--slow", "1=0.5"], "model genmodel: slow '1=0.5': failures"),
])
def test_bad_what_ifs_are_one_line_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, ["run", "-t", "torus:4x4", "-a", "recdoub", "-s", "1KiB",
                                  *argv])
    assert code == 2 and out == ""
    assert needle in one_error_line(err)


def test_bad_what_if_types_through_the_api():
    for kw, needle in (({"fail": 3}, "fail: 3 is not allowed"),
                       ({"slow": 0.5}, "slow: 0.5 is not allowed"),
                       ({"background": ["perm:0.5"]}, "background: "),
                       ({"fail_policy": None}, "fail_policy: None is not allowed")):
        with pytest.raises(ConfigError, match=needle):
            flowemu.simulate("torus:4x4", "recdoub", N, **kw)


def test_run_table_shows_the_slowdown(capsys):
    code, out, _err = run(capsys, ["run", "-t", "fattree:k=4", "-a", "recdoub", "-s", "1MiB",
                                  "--slow", "3=0.5", "--background", "perm:0.5"])
    assert code == 0
    head = out.splitlines()[0].split()
    assert {"background", "slow", "healthy", "slowdown", "bg_throughput"} <= set(head)


def test_flow_dump_takes_what_ifs(tmp_path, capsys):
    """The detour of the failed ring shows in the dump (7 hops for 3->4),
    and a background leaves the dump with the collective's flows only."""
    df = flowemu.flows("torus:8", "ring:ports=1", size=N, fail="3-4", fail_policy="reroute")
    step0 = df[df.step == 0]
    assert len(step0) == 8
    assert step0.set_index("src").hops.to_dict() == {s: (7 if s == 3 else 1) for s in range(8)}
    with pytest.raises(ConfigError, match="relies on link 3-4"):
        flowemu.flows("torus:8", "ring:ports=1", size=N, fail="3-4")
    bg = flowemu.flows("torus:4x4", "recdoub", size=N, background="perm:0.5", steps="0")
    alone = flowemu.flows("torus:4x4", "recdoub", size=N, steps="0")
    assert len(bg) == len(alone) == 16
    assert (bg.finish_s.to_numpy() >= alone.finish_s.to_numpy() - 1e-15).all()
    out = tmp_path / "flows.csv"
    code, _, _ = run(capsys, ["run", "-t", "torus:8", "-a", "ring:ports=1", "-s", "1MiB",
                              "--fail", "3-4", "--fail-policy", "reroute", "--flows-out",
                              str(out), "--flows-steps", "0"])
    assert code == 0
    dumped = pd.read_csv(out)
    assert sorted(dumped.hops.tolist()) == [1] * 7 + [7]


def test_adaptive_beats_split_under_background_load(tmp_path):
    """torus:4x4, one flow 0 -> 5 (two minimal paths, 0-1-5 and 0-4-5) and a
    background flow 0 -> 1 capped at C/2. Split sends half over 0-1: the
    background freezes at its cap and the flow gets C (0-1 full at
    r/2 + C/2). Adaptive balances over the capacity the background leaves
    (C/2 on 0-1, C on 0-4): a third over 0-1, two thirds over 0-4, and the
    flow gets 1.5 C (both links full at r/3 + C/2 = C and 2r/3 = C)."""
    C = NET.bandwidth
    bg = tmp_path / "bg.csv"
    pd.DataFrame({"step": [0], "src": [0], "dst": [1], "bytes": [C / 2]}).to_csv(bg, index=False)
    traffic = pd.DataFrame({"step": [0], "src": [0], "dst": [5], "bytes": [N]})
    lat = 2 * HOP
    split = flowemu.time_traffic("torus:4x4", traffic, background=str(bg))
    adaptive = flowemu.time_traffic("torus:4x4", traffic, background=str(bg), ecmp="adaptive")
    assert math.isclose(split.time_s.iloc[0], lat + N / C, rel_tol=1e-9)
    assert math.isclose(adaptive.time_s.iloc[0], lat + N / (1.5 * C), rel_tol=1e-6)
    # the background keeps its cap in both
    assert math.isclose(split.background_Bps.iloc[0], C / 2, rel_tol=1e-9)
    assert math.isclose(adaptive.background_Bps.iloc[0], C / 2, rel_tol=1e-9)


def test_slowdown_pairs_an_auto_variant_that_changed():
    """recdoub:variant=auto may pick another variant under failures; the
    row still pairs with the healthy run of the same algorithm."""
    sizes = [1024, 38967, 2**20]
    healthy = flowemu.simulate("torus:8x8", "recdoub", sizes)
    faulty = flowemu.simulate("torus:8x8", "recdoub", sizes, fail="random:4:2")
    assert (healthy.variant != faulty.variant).tolist() == [False, True, False]
    got = slowdown(pd.concat([faulty, healthy], ignore_index=True))
    n = len(sizes)
    assert np.allclose(got.healthy_time_s.iloc[:n], healthy.time_s, rtol=0, atol=0)
    assert np.allclose(got.slowdown.iloc[:n], faulty.time_s / healthy.time_s, rtol=1e-15)


@pytest.mark.parametrize("spec,alg,fail", [("fattree:k=8", "recdoub", "random:16:3"),
                                           ("fattree:k=8", "recdoub", "random:32:1"),
                                           ("leafspine:8x4x4", "swing", "random:4:0"),
                                           ("dragonfly:a=4,p=2,h=2", "swing", "random:4:1")])
def test_adaptive_on_failed_switch_networks(spec, alg, fail):
    """Adaptive fractions on rerouted flows stay in (0, 1] (a rounding of
    1 + 2e-16 used to reach the solver) and the run is never slower than
    its healthy network."""
    df = flowemu.simulate(spec, alg, N, fail=fail, ecmp="adaptive")
    healthy = flowemu.simulate(spec, alg, N, ecmp="adaptive")
    assert df.time_s.iloc[0] >= healthy.time_s.iloc[0] * (1 - 1e-9)


def test_run_refuses_what_ifs_that_would_do_nothing(capsys, tmp_path):
    base = ["run", "-t", "torus:4x4", "-a", "swing", "-s", "1KiB"]
    for argv, needle in ((["--fail-policy", "reroute"], "--fail-policy: applies only with --fail"),
                         (["--fail", ""], "--fail: '' is empty"),
                         (["--fail", ";"], "--fail: ';' is empty"),
                         (["--slow", " "], "--slow: ' ' is empty")):
        code, out, err = run(capsys, base + argv)
        assert code == 2 and out == "" and needle in one_error_line(err), argv
    # --traffic is routed over the surviving links whatever the policy: refused, not ignored
    path = tmp_path / "t.csv"
    path.write_text("step,src,dst,bytes\n0,3,4,1e6\n")
    code, out, err = run(capsys, ["run", "-t", "torus:16", "--traffic", str(path), "--fail",
                                  "3-4", "--fail-policy", "reroute"])
    assert code == 2 and "--fail-policy: applies to an algorithm's schedule" in err
    # ... and so are the Python calls that take traffic
    tr = pd.DataFrame({"step": [0], "src": [3], "dst": [4], "bytes": [1e6]})
    for call in (lambda: flowemu.time_traffic("torus:16", tr, fail="3-4", fail_policy="reroute"),
                 lambda: flowemu.flows("torus:16", traffic=tr, fail="3-4",
                                       fail_policy="reroute"),
                 lambda: flowemu.time_traffic("torus:16", tr, fail_policy="reroute")):
        with pytest.raises(ConfigError, match="fail_policy: 'reroute' applies to an "
                                              "algorithm's schedule"):
            call()
    # traffic reduces nothing: what a reduction costs is refused, not recorded unused
    for kw, needle in (({"gamma": "1ns"}, "gamma: does not apply to traffic"),
                       ({"delta": "1ns"}, "delta: does not apply to traffic"),
                       ({"slow": "3=0.5:compute"},
                        "slow: '3=0.5:compute' slows a rank's reduction, and traffic has none")):
        with pytest.raises(ConfigError, match=needle):
            flowemu.time_traffic("torus:16", tr, **kw)
    # 0 costs nothing either way (a loop over gamma values may give it): allowed
    assert flowemu.time_traffic("torus:16", tr, gamma=0, delta="0ns")["time_s"].iloc[0] == \
        flowemu.time_traffic("torus:16", tr)["time_s"].iloc[0]
    # (its ports: a quarter of its two links' 100 GB/s, below the one link it sends on)
    slower = flowemu.time_traffic("torus:16", tr, slow="3=0.25")
    assert slower["time_s"].iloc[0] > flowemu.time_traffic("torus:16", tr)["time_s"].iloc[0]
    code, out, err = run(capsys, ["run", "-t", "torus:16", "--traffic", str(path), "--slow",
                                  "3=0.5:compute"])
    assert code == 2 and "--slow: '3=0.5:compute' slows a rank's reduction" in err
    # a compute slowdown with gamma = delta = 0 costs nothing: said on stderr
    code, out, err = run(capsys, base + ["--slow", "3=0.5:compute", "--slow", "5=0.5"])
    assert code == 0 and "a slower reduction costs nothing here" in err
    code, out, err = run(capsys, base + ["--slow", "3=0.5:compute", "--gamma", "1ps", "-f",
                                         "csv"])
    assert code == 0 and "costs nothing" not in err


def test_slow_repeats_join():
    joined = flowemu.simulate("torus:4x4", "swing", N, slow="3=0.5:network;5=0.25:network")
    df = pd.read_csv(pd.io.common.StringIO(joined.to_csv(index=False)))
    assert df.slow.iloc[0] == "3=0.5:network;5=0.25:network"


@pytest.mark.parametrize("selector,needle", [
    ("node:-1", "fail: 'node:-1': vertex -1 is out of range; expected a vertex id in 0..15"),
    ("9,0", "fail: '9,0': coordinate 9 is out of range; expected 0..3 or '*' in dimension 0"),
])
def test_selector_messages_name_the_value(selector, needle):
    with pytest.raises(ConfigError) as err:
        flowemu.simulate("torus:4x4", "swing", N, fail=selector)
    assert str(err.value).startswith(needle)


def test_selectors_in_canonical_form():
    df = flowemu.simulate("fattree:k=4", "swing", N, fail="aggregation:1 ; core:3;core:3")
    assert df.fail.iloc[0] == "agg:1;core:3"
    # agg 1 has 2 edge and 2 core cables, core 3 one cable per pod; one is shared
    assert df.failed_links.iloc[0] == 7


def test_where_keeps_the_healthy_baseline(tmp_path, capsys):
    sizes = [1024, N]
    frames = [flowemu.simulate("torus:4x4", "recdoub:variant=bandwidth", sizes, fail=f)
              for f in (None, "random:2:0", "random:2:1")]
    path = tmp_path / "d.parquet"
    pd.concat(frames, ignore_index=True).to_parquet(path)
    code, out, err = run(capsys, ["compare", str(path), "--by", "whatif", "--where",
                                  "fail == 'random:2:1'", "-f", "csv"])
    assert code == 0, err
    got = pd.read_csv(pd.io.common.StringIO(out))
    sick = got[got.failed_links == 2]
    assert len(sick) == 2 and (sick.seeds == 1).all()
    expect = frames[2].time_s.to_numpy() / frames[0].time_s.to_numpy()
    assert np.allclose(sick.sort_values("size_bytes").slowdown, expect, rtol=1e-12)


def test_genmodel_refuses_a_routing_mode(capsys):
    code, out, err = run(capsys, ["run", "-t", "tree:SS24", "-a", "ring", "--model", "genmodel",
                                  "--ecmp", "adaptive", "-s", "1MiB"])
    assert code == 2 and out == "" and "--ecmp: works with --model flow" in one_error_line(err)


def test_a_cut_off_host_no_flow_uses_does_not_refuse_user_traffic(tmp_path):
    """User traffic numbers its ranks up to its highest but need not use
    each: a failure that cuts off hosts 8-11 (leaf 2's uplinks) refused
    traffic between hosts 0-1 and 16-17 ('cuts off host 8 (rank 8)'). Only
    the ranks that send or receive must reach each other; the flows' leaves
    keep their uplinks, so the time is the healthy one."""
    tr = pd.DataFrame({"step": 0, "src": [0, 16], "dst": [1, 17], "bytes": 1e6})
    cut = flowemu.time_traffic("leafspine:8x4x2", tr, fail="leaf:2-spine:*")
    healthy = flowemu.time_traffic("leafspine:8x4x2", tr)
    assert cut["failed_links"][0] == 2 and cut["time_s"][0] == healthy["time_s"][0]
    fl = flowemu.flows("leafspine:8x4x2", traffic=tr, fail="leaf:2-spine:*")
    assert len(fl) == 2
    # a rank that does send is still refused, named by its own number
    tr.loc[1, "dst"] = 9
    with pytest.raises(ConfigError, match=r"cuts off host 9 \(rank 9\) from host 0 \(rank 0\)"):
        flowemu.time_traffic("leafspine:8x4x2", tr, fail="leaf:2-spine:*")
    path = tmp_path / "t.csv"
    tr.loc[1, "dst"] = 17
    tr.to_csv(path, index=False)
    from flowemu.cli.app import main
    assert main(["run", "-t", "leafspine:8x4x2", "--traffic", str(path), "--fail",
                 "leaf:2-spine:*"]) == 0


def test_a_faulted_topology_is_a_run_with_its_faults():
    """simulate(apply_faults(...), ...) timed the faults but wrote a healthy
    row (fail '', 0 failed links) and skipped fail_policy='strict'. It is
    the run with fail= now: the same row, the same refusal; faults given
    twice are refused; GenModel, which has no faults, refuses it; plan
    refuses a cut-off host instead of pricing it at 1/0."""
    from flowemu.topology import parse_topology
    from flowemu.whatif.faults import apply_faults
    faulted = apply_faults(parse_topology("torus:8x8"), "random:8:0", None)
    with pytest.raises(ConfigError, match=r"algorithm ring relies on link"):
        flowemu.simulate(faulted, "ring", "1MiB")
    a = flowemu.simulate(faulted, "ring", "1MiB", fail_policy="reroute")
    b = flowemu.simulate("torus:8x8", "ring", "1MiB", fail="random:8:0", fail_policy="reroute")
    pd.testing.assert_frame_equal(a.drop(columns="flowemu_version"),
                                  b.drop(columns="flowemu_version"))
    assert a["fail"][0] == "random:8:0" and a["failed_links"][0] == 8
    with pytest.raises(ConfigError, match=r"topology: torus:8x8 is faulted already"):
        flowemu.simulate(faulted, "ring", "1MiB", fail="random:1:0")
    with pytest.raises(ConfigError, match=r"model genmodel: torus:8x8 has failed"):
        flowemu.simulate(faulted, "ring", "1MiB", model="genmodel")
    traffic = pd.DataFrame({"step": [0], "src": [0], "dst": [9], "bytes": [1e6]})
    assert flowemu.time_traffic(faulted, traffic)["failed_links"][0] == 8
    cut = apply_faults(parse_topology("tree:SS24"), "random:1:0", None)
    with pytest.raises(ConfigError, match=r"cuts off host 20 \(rank 20\)"):
        flowemu.plan(cut, "1MiB")
