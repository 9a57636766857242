"""Dataflow execution (``sync="dataflow"``, issue 27 item 1) against
hand-worked answers and against barrier execution where the two must agree.

The kernel itself is checked against the pure-Python oracle in
``tests/kernels/test_dataflow.py``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.algorithms import get_algorithm
from flowemu.algorithms.base import Reduction, Schedule, Step, Traffic
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.engine.dataflow import dataflow_run
from flowemu.engine.load import Background
from flowemu.engine.profiles import profile
from flowemu.topology import parse_topology

RTOL = 1e-12
B = 1e10          # bytes/s
A = 2e-6          # alpha, s
NET = Network.from_si(bandwidth=B, alpha=A, link_latency=0.0, hop_latency=0.0)


def _schedule(p, steps):
    """A schedule of ``steps`` = [[(src, dst, share), ...], ...] without reduction."""
    return Schedule("x", "x", p, tuple(
        Step(Traffic(np.array([s for s, _, _ in st]), np.array([d for _, d, _ in st]),
                     np.array([float(x) for _, _, x in st])), Reduction.none(), f"s{k}")
        for k, st in enumerate(steps)))


@pytest.mark.parametrize("spec, alg, opts", [
    ("torus:4x4", "swing", {"variant": "bandwidth"}),
    ("torus:4x4", "swing", {"variant": "latency"}),
    ("torus:8", "ring", {}),
    ("torus:4x4", "recdoub", {"variant": "bandwidth"}),
    ("torus:4x4", "bucket", {}),
    ("torus:4x2x2", "swing", {"variant": "bandwidth"}),
])
def test_steps_that_end_together_give_the_barrier_time(spec, alg, opts):
    """Every flow of a step ends its transfer at once with one latency and
    every rank reduces as much: every rank starts each step together, so
    dataflow and barrier agree (with α, link and hop latency, γ and δ)."""
    topo = parse_topology(spec)
    net = Network.from_si(bandwidth=B, alpha=A, link_latency=1e-7, hop_latency=3e-7,
                          gamma=1e-10, delta=2e-11)
    sched = get_algorithm(alg).build(topo.num_endpoints, topo, False, **opts)
    sizes = np.array([1e3, 1e6, 3e8])
    barrier = profile(sched, topo, net).times(sizes)
    dataflow = dataflow_run(sched, topo, net).times(sizes)
    np.testing.assert_allclose(dataflow, barrier, rtol=RTOL)


def test_a_slow_step_of_one_pair_delays_only_that_pair():
    """4 ranks on a 1-D torus, two steps on disjoint links: 0→1 carries 2n
    then n, 2→3 carries n then 2n. Barrier: each step waits for its slower
    pair, 2α + 4n/B. Dataflow: each pair runs its own steps back to back,
    2α + 3n/B."""
    topo = parse_topology("torus:4")
    sched = _schedule(4, [[(0, 1, 2.0), (2, 3, 1.0)], [(0, 1, 1.0), (2, 3, 2.0)]])
    n = np.array([1e3, 1e6, 1e9])
    np.testing.assert_allclose(profile(sched, topo, NET).times(n), 2 * A + 4 * n / B,
                               rtol=RTOL)
    np.testing.assert_allclose(dataflow_run(sched, topo, NET).times(n), 2 * A + 3 * n / B,
                               rtol=RTOL)


def test_a_rank_goes_on_while_its_neighbour_still_sends():
    """Step 0 sends 0→1 (n) and 1→2 (3n), step 1 sends 0→1 (n), on torus:4
    (single links at B). Rank 0 ends step 0 at α + n/B and its step-1 flow
    is delivered at 2α + 2n/B; rank 1 ends step 0 at α + 3n/B and step 1
    when that flow arrives. The run ends at max(2α + 2n/B, α + 3n/B);
    barrier: (α + 3n/B) + (α + n/B)."""
    topo = parse_topology("torus:4")
    sched = _schedule(4, [[(0, 1, 1.0), (1, 2, 3.0)], [(0, 1, 1.0)]])
    for n in (1e3, 1e9):
        want = max(2 * A + 2 * n / B, A + 3 * n / B)
        assert dataflow_run(sched, topo, NET).times([n])[0] == pytest.approx(want, rel=RTOL)
        assert profile(sched, topo, NET).times([n])[0] == pytest.approx(2 * A + 4 * n / B,
                                                                      rel=RTOL)


def test_flows_of_different_steps_share_a_link():
    """On mesh:4 (a line 0-1-2-3) step 0 sends 0→2 (n, over links 0→1 and
    1→2) and step 1 sends 1→2 (n). Rank 1 has nothing in step 0, so its
    step-1 flow starts at 0 and shares link 1→2 with 0→2: each gets B/2,
    both end at 2n/B, and the run at α + 2n/B. Barrier: 2α + 2n/B."""
    topo = parse_topology("mesh:4")
    sched = _schedule(4, [[(0, 2, 1.0)], [(1, 2, 1.0)]])
    for n in (1e3, 1e9):
        assert dataflow_run(sched, topo, NET).times([n])[0] == pytest.approx(A + 2 * n / B,
                                                                           rel=RTOL)
        assert profile(sched, topo, NET).times([n])[0] == pytest.approx(2 * A + 2 * n / B,
                                                                      rel=RTOL)


def test_ring_with_one_compute_slow_rank_pays_on_its_own_chain():
    """Ring allreduce (one ring) on torus:8 with rank 3 reducing at half
    speed. The slow rank reduces in every reduce-scatter step, so its own
    chain of stages costs C + 2R a step under either mode: (p−1)(C + 2R)
    for the reduce-scatter, then (p−1)C for the allgather, with C = α +
    n/(pB) and R = γ n/p (fan-in 2, δ = 0). Dataflow gains nothing here."""
    p, gamma = 8, 4e-10
    topo = parse_topology(f"torus:{p}")
    net = Network.from_si(bandwidth=B, alpha=A, link_latency=0.0, hop_latency=0.0, gamma=gamma)
    for n in (8e3, 8e8):
        c, r = A + n / p / B, gamma * n / p
        want = (p - 1) * (c + 2 * r) + (p - 1) * c
        for sync in ("barrier", "dataflow"):
            df = flowemu.simulate(topo, "ring:ports=1", [int(n)], network=net, sync=sync,
                                  slow="3=0.5:compute")
            assert df.time_s.iloc[0] == pytest.approx(want, rel=RTOL), sync


def test_a_network_slow_rank_delays_only_the_ranks_that_wait_for_it():
    """torus:4, rank 0's injection capped at a quarter of its two links (B/2):
    step 0 sends 0→1 (n: 2n/B), step 1 exchanges 2↔3 (n each way: n/B).
    Barrier: (α + 2n/B) + (α + n/B). Dataflow: ranks 2 and 3 have nothing
    in step 0 and go at once; the run ends with rank 0's flow, α + 2n/B."""
    topo = parse_topology("torus:4")
    steps = [[(0, 1, 1.0)], [(2, 3, 1.0), (3, 2, 1.0)]]
    for n in (1e3, 1e9):
        traffic = [Traffic(np.array([s for s, _, _ in st]), np.array([d for _, d, _ in st]),
                           np.array([x * n for _, _, x in st])) for st in steps]
        got = {sync: flowemu.time_traffic(topo, traffic, network=NET, slow="0=0.25:network",
                                          sync=sync).time_s.iloc[0]
               for sync in ("barrier", "dataflow")}
        assert got["barrier"] == pytest.approx(2 * A + 3 * n / B, rel=RTOL)
        assert got["dataflow"] == pytest.approx(A + 2 * n / B, rel=RTOL)


def test_background_flows_share_the_dataflow_solve():
    """A flow 0→1 (n bytes) beside a background flow 0→1 of demand B/4 on
    torus:4 (one link of B): max-min leaves the background its demand and
    gives the collective 3B/4, so the run takes α + 4n/(3B); the background
    runs at B/4 from start to end."""
    topo = parse_topology("torus:4")
    sched = _schedule(4, [[(0, 1, 1.0)]])
    bg = Background(np.array([0]), np.array([1]), np.array([B / 4]), 4, "one flow")
    n = 1e9
    times, carried = dataflow_run(sched, topo, NET, background=bg).times_and_background([n])
    assert times[0] == pytest.approx(A + 4 * n / (3 * B), rel=RTOL)
    assert carried[0] == pytest.approx(B / 4, rel=RTOL)
    times, carried = dataflow_run(sched, topo, NET).times_and_background([n])
    assert times[0] == pytest.approx(A + n / B, rel=RTOL) and np.isnan(carried[0])


def test_sync_is_checked_everywhere():
    with pytest.raises(ConfigError, match="sync: 'lockstep' is not allowed; expected one of "
                                          "barrier, dataflow"):
        flowemu.simulate("torus:4", "ring", "1KiB", sync="lockstep")
    with pytest.raises(ConfigError, match="needs model='flow'"):
        flowemu.simulate("tree:8", "ring", "1KiB", sync="dataflow", model="genmodel")
    df = flowemu.simulate("torus:4", "ring", "1KiB", sync="dataflow")
    assert list(df.sync) == ["dataflow"]
    assert list(flowemu.simulate("torus:4", "ring", "1KiB").sync) == ["barrier"]


@pytest.mark.parametrize("spec, alg, whatif", [
    ("torus:4x4", "swing:variant=bandwidth", {"slow": "3=0.5"}),
    ("fattree:k=4", "ring", {}),
    ("torus:4x4", "recdoub:variant=bandwidth", {"degrade": "0,0-1,0=0.25"}),
    ("torus:4x4", "bucket", {"background": "perm:0.5"}),
    ("tree:2x4,eps=20ps:80ps,wt=2:1", "cps", {}),
])
def test_barrier_stages_reproduce_the_barrier_profile(spec, alg, whatif):
    """A job at a barrier is one stage per step (it ends when every flow of
    the step is delivered, plus the slowest rank's reduction): the event
    solve of all steps gives the barrier profile's times, what-ifs, mixed
    latencies and incast classes included."""
    net = Network.from_si(bandwidth=B, alpha=A, link_latency=1e-7, hop_latency=3e-7,
                          gamma=1e-10, delta=2e-11)
    sizes = [1e3, 1e6, 3e8]
    want = flowemu.simulate(spec, alg, sizes, network=net, **whatif).time_s.to_numpy()
    run = flowemu.api.simulation.check_simulation(spec, alg, sizes, network=net, **whatif)
    sched = run.spec.build(run.p, run.topology, False, **run.candidates[0])
    w = run.whatif
    got = dataflow_run(sched, run.topology, net, sync="barrier",
                       background=None if w is None else w.background,
                       slow=None if w is None else w.slow).times(sizes)
    np.testing.assert_allclose(got, want, rtol=RTOL)


def test_aggregation_streams_are_refused_by_the_engine():
    topo = parse_topology("fattree:k=4")
    sched = get_algorithm("ina").build(16, topo, False)
    with pytest.raises(ConfigError, match="ina: in-network aggregation streams are timed at a "
                                          "barrier"):
        dataflow_run(sched, topo, NET)


def test_barrier_only_algorithms_are_refused_up_front():
    with pytest.raises(ConfigError, match="sync: 'dataflow' does not apply to ina"):
        flowemu.api.simulation.check_simulation("fattree:k=4", "ina", "1MiB", sync="dataflow")
    with pytest.raises(ConfigError, match=r"jobs\[0\].algorithm: ina times its in-network"):
        flowemu.simulate_jobs("fattree:k=4", ["algorithm=ina size=1MiB ranks=8"])


def test_slowdown_pairs_rows_of_the_same_sync():
    """A dataflow row's healthy twin is the dataflow run on the healthy network."""
    rows = [flowemu.simulate("torus:4x4", "swing", "1MiB", sync=s, **w)
            for s in ("barrier", "dataflow") for w in ({}, {"slow": "3=0.5"})]
    out = flowemu.results.slowdown(pd.concat(rows, ignore_index=True))
    for sync in ("barrier", "dataflow"):
        mine = out[out["sync"] == sync]
        healthy = mine[mine["slow"] == ""]["time_s"].iloc[0]
        assert (mine["healthy_time_s"] == healthy).all()
