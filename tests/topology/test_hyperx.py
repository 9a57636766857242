"""hyperx topology: structure, routes against a BFS enumeration of minimal
paths, the max-min oracle, Swing's Ξ = 1, every algorithm, bad specs."""

import itertools
import math
import pickle

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.algorithms import swing
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.engine.profiles import profile
from flowemu.kernels.maxmin import solve_completion
from flowemu.topology import HyperX, parse_topology, topology_families
from tests.helpers.cli import assert_bad_topology
from tests.helpers.grid_oracle import MinimalPaths, all_pairs, check_single_path
from tests.helpers.maxmin_oracle import completion, csr_to_lists

B = 50e9          # 400 Gb/s in bytes/s
LAT = 400e-9      # link 100 ns + hop 300 ns


# ------------------------------------------------------------------ structure

@pytest.mark.parametrize("spec,dims,bw", [
    ("hyperx:3x4", (3, 4), (1.0, 1.0)),
    ("hyperx:2x3x2,bw=2", (2, 3, 2), (2.0, 2.0, 2.0)),
    (" hyperx: 4 x 2 , bw = 0.5x3 ", (4, 2), (0.5, 3.0)),
    ("hyperx:5", (5,), (1.0,)),
])
def test_links_join_nodes_differing_in_one_coordinate(spec, dims, bw):
    t = parse_topology(spec)
    n = math.prod(dims)
    assert (t.num_nodes, t.num_endpoints, t.grid) == (n, n, dims)
    assert t.num_links == n * sum(d - 1 for d in dims)
    coords = list(itertools.product(*(range(d) for d in dims)))   # row-major ids
    expect = {}
    for u, cu in enumerate(coords):
        for v, cv in enumerate(coords):
            diff = [k for k in range(len(dims)) if cu[k] != cv[k]]
            if len(diff) == 1:
                expect[(u, v)] = bw[diff[0]]
    got = {(int(u), int(v)): float(c) for u, v, c in
           zip(t.link_src, t.link_dst, t.link_capacity_scale, strict=True)}
    assert len(got) == t.num_links and got == expect
    np.testing.assert_array_equal(t.coords(np.arange(n)), np.array(coords))
    assert parse_topology(t.spec).spec == t.spec
    t2 = pickle.loads(pickle.dumps(t))
    assert t2.spec == t.spec
    np.testing.assert_array_equal(t2.link_dst, t.link_dst)
    assert t.describe()["links"] == t.num_links


def test_canonical_spec_and_registry():
    assert parse_topology("hyperx:4x4,bw=1").spec == "hyperx:4x4"
    assert parse_topology("hyperx:4x4,bw=2x2").spec == "hyperx:4x4,bw=2"
    assert parse_topology("hyperx:4x4,bw=1x2.5").spec == "hyperx:4x4,bw=1x2.5"
    doc = topology_families()["hyperx"]
    assert "D0xD1" in doc and "bw=" in doc


# --------------------------------------------------------------------- routes

@pytest.mark.parametrize("spec", ["hyperx:3x4", "hyperx:2x3x2", "hyperx:3x3x3,bw=1x2x1"])
def test_split_matches_bfs_per_hop_split(spec):
    t = parse_topology(spec)
    paths = MinimalPaths(t)
    src, dst = all_pairs(t.num_endpoints)
    r = t.route(src, dst, "split")
    assert r.num_entries == t.route_entries(src, dst, "split")
    counts = np.diff(r.flow_ptr)
    assert counts.max() <= t.max_route_entries("split")
    for f, (s, d) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        assert r.hops[f] == paths.distance(s, d)
        link, frac = r.flow_links(f)
        assert len(set(link.tolist())) == len(link)
        expect = paths.split(s, d)
        assert dict(zip(link.tolist(), frac.tolist(), strict=True)) == pytest.approx(expect)


def test_split_fractions_closed_form_three_dims():
    """m differing coordinates: m! equally likely orders, so a link leaving
    a state with j coordinates fixed carries j!(m−j−1)!/m!."""
    t = parse_topology("hyperx:3x3x3")
    r = t.route(np.array([0]), np.array([26]), "split")
    assert r.hops[0] == 3 and r.num_entries == 3 * 2**2 == t.max_route_entries("split")
    c = t.coords(t.link_src[r.link])
    fixed = (c == 2).sum(axis=1)          # coordinates already equal to the destination's
    expect = np.array([math.factorial(j) * math.factorial(3 - j - 1) / 6 for j in fixed])
    np.testing.assert_allclose(r.frac, expect, rtol=1e-12)
    assert sorted(fixed.tolist()) == [0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2]


@pytest.mark.parametrize("ecmp", ["dor", "hash"])
def test_single_paths_are_minimal(ecmp):
    t = parse_topology("hyperx:3x2x3")
    paths = MinimalPaths(t)
    src, dst = all_pairs(t.num_endpoints)
    r = t.route(src, dst, ecmp, seed=5)
    assert r.num_entries == t.route_entries(src, dst, ecmp) == int(r.hops.sum())
    np.testing.assert_allclose(r.frac, 1.0)
    for f, (s, d) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        link, _ = r.flow_links(f)
        check_single_path(t, paths, s, d, link.tolist())
        if ecmp == "dor":
            # dimension order: the coordinate that changes never decreases
            cs, cd = t.coords(t.link_src[link]), t.coords(t.link_dst[link])
            moved = np.argmax(cs != cd, axis=1)
            assert (np.diff(moved) > 0).all()


def test_hash_seeded_and_spreads_over_orders():
    t = parse_topology("hyperx:4x4x4")
    src, dst = all_pairs(t.num_endpoints)
    r1 = t.route(src, dst, "hash", seed=1)
    np.testing.assert_array_equal(r1.link, t.route(src, dst, "hash", seed=1).link)
    assert (t.route(src, dst, "hash", seed=2).link != r1.link).any()
    # flows differing in all three coordinates use every one of the 3! orders
    far = np.flatnonzero(r1.hops == 3)
    first = t.coords(t.link_dst[r1.link[r1.flow_ptr[far]]]) \
        != t.coords(src[far])
    assert set(np.argmax(first, axis=1).tolist()) == {0, 1, 2}


def test_unknown_mode_refused():
    t = parse_topology("hyperx:3x3")
    with pytest.raises(ConfigError, match="ecmp: 'valiant' does not apply to hyperx:3x3; allowed: split, dor, hash"):
        t.route(np.array([0]), np.array([4]), "valiant")


# ----------------------------------------------------------- max-min, timing

@pytest.mark.parametrize("ecmp", ["split", "dor", "hash"])
def test_permutation_rates_match_oracle(ecmp):
    t = parse_topology("hyperx:3x4,bw=1x2")
    rng = np.random.default_rng(11)
    src = np.repeat(np.arange(t.num_endpoints), 2)
    dst = rng.integers(0, t.num_endpoints, len(src))
    r = t.route(src, dst, ecmp, seed=3)
    cap = t.link_capacity_scale
    sizes = rng.uniform(0.5, 2.0, len(src))
    sol = solve_completion(r, cap, sizes)
    rate0, finish, status = completion(csr_to_lists(r.flow_ptr, r.link, r.frac),
                                       list(map(float, cap)), list(map(float, sizes)))
    assert status == 0
    np.testing.assert_allclose(sol.rate0, rate0, rtol=1e-9)
    np.testing.assert_allclose(sol.finish, finish, rtol=1e-9)


def test_bw_sets_dimension_rate():
    # one flow per dimension, alone on its link: its dimension's bandwidth
    m = 2.0**20
    for dst, bw in ((4, 0.5), (1, 2.0)):        # node 4 is (1, 0), node 1 is (0, 1)
        traffic = pd.DataFrame({"step": [0], "src": [0], "dst": [dst], "bytes": m})
        row = flowemu.time_traffic("hyperx:3x4,bw=0.5x2", traffic).iloc[0]
        assert row["time_s"] == pytest.approx(LAT + m / (bw * B), rel=1e-9)


# ----------------------------------------------------------------- algorithms

@pytest.mark.parametrize("spec", ["hyperx:8x8", "hyperx:16x4", "hyperx:4x4x4", "hyperx:6x6"])
def test_swing_bandwidth_one_flow_per_link(spec):
    """Swing talks to peers on its row or column only, each one hop away on
    a HyperX, so no two flows share a link: Ξ = 1 (Swing §5.4.2)."""
    t = parse_topology(spec)
    prof = profile(swing.build(t.num_endpoints, t, False, variant="bandwidth"), t,
                   Network(), congestion=True)
    steps, summary = prof.congestion_report()
    # every link carries no more than the busiest port injects
    np.testing.assert_allclose(steps.max_link_load, steps.max_port_injection, rtol=1e-12)
    assert summary["xi"] == pytest.approx(1.0, rel=1e-12)
    if spec in ("hyperx:8x8", "hyperx:4x4x4"):
        # power-of-two sides: distinct peers in every step, one flow a link
        assert (steps.max_flows_per_link == 1).all()


@pytest.mark.parametrize("alg", ["ring", "recdoub", "swing", "bucket"])
@pytest.mark.parametrize("ecmp", ["split", "dor", "hash"])
def test_every_algorithm_runs(alg, ecmp):
    df = flowemu.simulate("hyperx:4x4", alg, ["1KiB", "1MiB"], ecmp=ecmp)
    assert len(df) == 2 and (df["time_s"] > 0).all()
    # a bigger vector never takes less time
    assert df["time_s"].iloc[1] > df["time_s"].iloc[0]


def test_ring_on_hyperx_rows_closed_form():
    """Ring allreduce on a 1-D HyperX (a complete graph): every step sends
    n/p to the next rank over its own direct link."""
    p, n = 6, 2.0**20
    df = flowemu.simulate(f"hyperx:{p}", "ring:ports=1", n)
    assert df["time_s"].iloc[0] == pytest.approx(2 * (p - 1) * (LAT + n / p / B), rel=1e-9)


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("spec,needle", [
    ("hyperx:", "no dimensions given"),
    ("hyperx:4x1", "dimension 1 is 1"),
    ("hyperx:4xa", "dimension 1 is 'a', not an integer"),
    ("hyperx:4x4,bw=0", "bw is '0'; expected a number > 0"),
    ("hyperx:4x4,bw=1x2x3", "3 values for 2 dimensions"),
    ("hyperx:4x4,bw=fast", "bw is 'fast'"),
    ("hyperx:4x4,bw=2x", ("bw is '2x'; expected a number > 0, or one per dimension joined by "
                         "'x' such as bw=1x2")),
    ("hyperx:4x4,trunk=2", "unknown option 'trunk'; options: bw="),
    ("hyperx:4x4,bw", "not key=value"),
    ("hyperx:8192x4096", "at most 16777216"),
    ("hyperx:8192x1024", "at most 67108864"),
])
def test_bad_specs(spec, needle, capsys):
    assert_bad_topology(capsys, spec, needle)


def test_bad_constructor_args():
    with pytest.raises(ConfigError, match=r"dims: dimension 0 is 1"):
        HyperX((1, 4))
    with pytest.raises(ConfigError, match=r"bw: -1 is not allowed"):
        HyperX((4, 4), bw=-1)
    with pytest.raises(ConfigError, match=r"bw: \(1, 2, 3\) is not allowed"):
        HyperX((4, 4), bw=(1, 2, 3))
