"""Re-routes around failed links found by bounded searches
(``flowemu.kernels.faultroute.reroute_in_dag`` inside a flow's old split
routes, ``reroute_near`` within the healthy grid's distance bound) equal the
graph-wide search's (``FaultyTopology._reroute``: a breadth-first search over
the whole surviving graph) bit for bit: same links in the same order, same
fractions, same hop counts — on random tori and meshes, failures, modes and
seeds. The graph-wide search is itself held to enumerated shortest surviving
paths in ``test_faults.py``."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowemu.core.errors import ConfigError
from flowemu.kernels.faultroute import flows_on_failed
from flowemu.topology import parse_topology
from flowemu.whatif import faults
from flowemu.whatif.faults import apply_faults


def _assert_same_rows(got, moved, want):
    """Rows ``moved`` of ``got`` equal the rows of ``want``, bit for bit."""
    for j, f in enumerate(moved):
        a, b = got.flow_ptr[f], got.flow_ptr[f + 1]
        c, d = want.flow_ptr[j], want.flow_ptr[j + 1]
        np.testing.assert_array_equal(got.link[a:b], want.link[c:d])
        np.testing.assert_array_equal(got.frac[a:b], want.frac[c:d])
        assert got.hops[f] == want.hops[j]


@st.composite
def faulted_flows(draw):
    ndim = draw(st.integers(1, 3))
    dims = [draw(st.integers(2, 9)) for _ in range(ndim)]
    while np.prod(dims) > 200:
        dims[dims.index(max(dims))] //= 2
    dims = [max(d, 2) for d in dims]
    family = draw(st.sampled_from(["torus", "mesh"]))
    spec = f"{family}:" + "x".join(map(str, dims))
    fail = draw(st.integers(1, 12))
    ecmp = draw(st.sampled_from(["split", "dor", "hash"]))
    seed = draw(st.integers(0, 1000))
    return spec, fail, ecmp, seed


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faulted_flows())
def test_bounded_reroutes_equal_the_graph_wide_search(case):
    spec, fail, ecmp, seed = case
    base = parse_topology(spec)
    cables = int(base.link_exists.sum()) // 2
    topo = apply_faults(base, fail=f"random:{min(fail, cables)}:{seed}")
    rng = np.random.default_rng(seed)
    n = base.num_endpoints
    src = rng.integers(0, n, 300)
    dst = rng.integers(0, n, 300)
    try:
        got = topo.route(src, dst, ecmp, seed=seed)
    except ConfigError:
        return   # a cut-off pair: the graph-wide search raised, as before
    healthy = base.route(src, dst, ecmp, seed=seed)
    moved = flows_on_failed(healthy.flow_ptr, healthy.link, topo.failed)
    want = topo._reroute(src[moved], dst[moved], ecmp, seed)
    _assert_same_rows(got, moved, want)
    keep = np.setdiff1d(np.arange(len(src)), moved)
    np.testing.assert_array_equal(got.hops[keep], healthy.hops[keep])


def test_each_bounded_search_is_taken(monkeypatch):
    """On torus:16x16 with failed links, split flows that keep their length
    are found inside their old routes, the detours by the bounded search,
    and none reaches the graph-wide search."""
    base = parse_topology("torus:16x16")
    topo = apply_faults(base, fail="random:6:3")
    rng = np.random.default_rng(0)
    src = rng.integers(0, 256, 4000)
    dst = rng.integers(0, 256, 4000)
    calls = []
    real = {name: getattr(faults, name) for name in ("reroute_in_dag", "reroute_near")}

    def spy(name):
        def call(*args):
            out = real[name](*args)
            calls.append((name, int(out[0].sum()), int((~out[0]).sum())))
            return out
        return call

    for name in real:
        monkeypatch.setattr(faults, name, spy(name))
    monkeypatch.setattr(type(topo), "_reroute", lambda *a: (_ for _ in ()).throw(AssertionError))
    topo.route(src, dst, "split")
    (dag, found_dag, left), (near, found_near, unreachable) = calls
    assert dag == "reroute_in_dag" and near == "reroute_near"
    assert found_dag > 0 and found_near == left > 0 and unreachable == 0


FAMILIES = ["fattree:k=4", "fattree:k=6,taper=2", "fattree:k=4,levels=2",
            "leafspine:4x3x2,uplinks=2", "hyperx:3x4", "hyperx:4x4x3", "hx2mesh:2x2",
            "hx4mesh:2x2"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FAMILIES), st.integers(1, 6), st.integers(0, 1000))
def test_split_reroutes_inside_old_routes_on_every_grid_and_tree(spec, fail, seed):
    """Fat trees, leaf-spines, HyperX and HammingMesh route ``split`` over
    every minimal path, evenly per vertex: their re-routes of the old length
    are found inside the old routes, equal to the graph-wide search's."""
    base = parse_topology(spec)
    assert base.split_every_shortest
    try:
        topo = apply_faults(base, fail=f"random:{fail}:{seed}")
        rng = np.random.default_rng(seed)
        src = rng.integers(0, base.num_endpoints, 200)
        dst = rng.integers(0, base.num_endpoints, 200)
        got = topo.route(src, dst, "split")
    except ConfigError:
        return   # more cables than the fabric has, or a cut-off pair
    healthy = base.route(src, dst, "split")
    moved = flows_on_failed(healthy.flow_ptr, healthy.link, topo.failed)
    want = topo._reroute(src[moved], dst[moved], "split", 0)
    _assert_same_rows(got, moved, want)
