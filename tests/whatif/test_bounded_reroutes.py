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
    for j, f in enumerate(moved):
        a, b = got.flow_ptr[f], got.flow_ptr[f + 1]
        c, d = want.flow_ptr[j], want.flow_ptr[j + 1]
        np.testing.assert_array_equal(got.link[a:b], want.link[c:d])
        np.testing.assert_array_equal(got.frac[a:b], want.frac[c:d])
        assert got.hops[f] == want.hops[j]
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
