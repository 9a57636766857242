"""The dataflow kernel (flows that start when their stages do, issue 27)
against the pure-Python oracle (``tests/helpers/maxmin_oracle.dataflow``: a
full progressive filling at every time), on random problems with stages,
latencies, reduction delays, incast, persistent flows and 0-byte flows."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowemu.kernels.dataflow import dataflow_kernel
from flowemu.kernels.fill import STATUS_OK
from tests.helpers.maxmin_oracle import OK
from tests.helpers.maxmin_oracle import dataflow as oracle_dataflow

RTOL = 1e-12


def _problem(seed: int, p: int, steps: int, n_res: int, incast: bool, n_bg: int):
    """A random dataflow problem: each step, every rank sends 0-3 flows to
    other ranks over random resources (plus, with ``incast``, its receiver's
    ingress resource); ``n_bg`` persistent flows. Stages are per rank and
    step, or (a job at a barrier, one time in three) one per step; first
    stages start at 0 or later."""
    rng = np.random.default_rng(seed)
    barrier = rng.random() < 1 / 3
    n_stages = steps if barrier else p * steps

    def stage(k, r):
        return k if barrier else k * p + r

    paths, byts, lat, src_stage, dst_stage = [], [], [], [], []
    stage_flows = [[] for _ in range(n_stages)]
    n_plain = n_res
    for k in range(steps):
        for r in range(p):
            for _ in range(int(rng.integers(0, 4))):
                q = int((r + rng.integers(1, p)) % p)
                m = int(rng.integers(0, 4))
                res = sorted(set(rng.integers(0, n_res, m).tolist()))
                path = [(x, float(rng.choice([1.0, 0.5, rng.uniform(0.1, 1)]))) for x in res]
                if incast:
                    path.append((n_plain + q, 1.0))
                f = len(paths)
                paths.append(path)
                byts.append(float(rng.choice([0.0, 1.0, rng.uniform(0.1, 3.0)],
                                             p=[0.05, 0.35, 0.6])))
                lat.append(float(rng.choice([0.0, rng.uniform(0, 0.5)])))
                src_stage.append(stage(k, r))
                dst_stage.append(stage(k, q))
                stage_flows[stage(k, r)].append(f)
    persistent = [False] * len(paths)
    for _ in range(n_bg):
        res = sorted(set(rng.integers(0, n_res, int(rng.integers(1, 4))).tolist()))
        paths.append([(x, 1.0) for x in res])
        byts.append(0.0)
        lat.append(0.0)
        src_stage.append(-1)
        dst_stage.append(-1)
        persistent.append(True)
    cap = rng.choice([1.0, 2.0, 3.0], n_res).tolist()
    if incast:
        cap += [2.0] * p
    delay = [float(rng.choice([0.0, rng.uniform(0, 0.3)])) for _ in range(n_stages)]
    step = 1 if barrier else p
    nxt = [s + step if s + step < n_stages else -1 for s in range(n_stages)]
    first = [float(rng.choice([0.0, 0.0, rng.uniform(0, 1.0)])) if s < step else -1.0
             for s in range(n_stages)]
    return {"paths": paths, "cap": cap, "byts": byts, "lat": lat, "src_stage": src_stage,
            "dst_stage": dst_stage, "stage_flows": stage_flows, "delay": delay, "nxt": nxt,
            "first": first, "persistent": persistent, "n_plain": n_plain}


def _kernel(pb, w_t=math.inf, eps=0.0, screen=False, rescreen_walk=-1.0, rescreen_stale=0.5):
    flow_ptr = np.zeros(len(pb["paths"]) + 1, dtype=np.int64)
    flow_ptr[1:] = np.cumsum([len(x) for x in pb["paths"]])
    res = np.array([r for x in pb["paths"] for r, _ in x], dtype=np.int32)
    frac = np.array([a for x in pb["paths"] for _, a in x], dtype=np.float64)
    n_stages = len(pb["delay"])
    counts = [len(x) for x in pb["stage_flows"]]
    stage_ptr = np.zeros(n_stages + 1, dtype=np.int64)
    stage_ptr[1:] = np.cumsum(counts)
    stage_flows = np.array([f for x in pb["stage_flows"] for f in x], dtype=np.int32)
    src_stage = np.array(pb["src_stage"], dtype=np.int64)
    dst_stage = np.array(pb["dst_stage"], dtype=np.int64)
    pending = np.ones(n_stages, dtype=np.int64)
    for arr in (src_stage, dst_stage):
        np.add.at(pending, arr[arr >= 0], 1)
    n_ingress = len(pb["cap"]) - pb["n_plain"]
    return dataflow_kernel(
        flow_ptr, res, frac, np.array(pb["cap"]), pb["n_plain"], np.full(n_ingress, w_t),
        np.full(n_ingress, eps), np.array(pb["byts"]), np.array(pb["persistent"]),
        np.array(pb["lat"]), src_stage, dst_stage, stage_ptr, stage_flows, pending,
        np.array(pb["delay"]), np.array(pb["nxt"], dtype=np.int64), np.array(pb["first"]),
        screen, rescreen_walk, rescreen_stale)


def _close(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    same_inf = np.isinf(a) == np.isinf(b)
    fin = np.isfinite(a) & np.isfinite(b)
    return bool(same_inf.all() and np.allclose(a[fin], b[fin], rtol=RTOL, atol=1e-300))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), p=st.integers(2, 5), steps=st.integers(1, 4),
       n_res=st.integers(1, 6), incast=st.booleans(), n_bg=st.integers(0, 2))
def test_dataflow_kernel_matches_the_oracle(seed, p, steps, n_res, incast, n_bg):
    _matches_the_oracle(_problem(seed, p, steps, n_res, incast, n_bg), incast)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), p=st.integers(2, 5), steps=st.integers(1, 4),
       n_res=st.integers(2, 8), incast=st.booleans(), n_bg=st.integers(1, 3),
       stale=st.sampled_from([0.0, 0.5, 1.0]))
def test_dataflow_kernel_screening_matches_the_oracle(seed, p, steps, n_res, incast, n_bg, stale):
    """With screening (resources far from capacity left aside from the
    first fill on; a flow entering brings its resources back), screening
    again after every event where the share of the candidates' entries on
    resources far from capacity passes ``stale`` (0: whenever there is
    one; 1: never)."""
    _matches_the_oracle(_problem(seed, p, steps, n_res, incast, n_bg), incast, screen=True,
                        rescreen_walk=0.0, rescreen_stale=stale)


def _matches_the_oracle(pb, incast, **screening):
    terms = (1.0, 0.25) if incast else (math.inf, 0.0)
    start, finish, end, moved, status = _kernel(pb, *terms, **screening)
    o_start, o_finish, o_end, o_moved, o_status = oracle_dataflow(
        pb["paths"], pb["cap"], pb["byts"], pb["lat"], pb["src_stage"], pb["dst_stage"],
        pb["stage_flows"], pb["delay"], pb["nxt"], pb["first"], pb["persistent"],
        pb["n_plain"], *terms)
    assert o_status == OK and status == STATUS_OK
    assert _close(end, o_end), (end, o_end)
    assert _close(start, o_start)
    assert _close(finish, o_finish)
    assert _close(moved, o_moved)
