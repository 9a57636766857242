"""hammingmesh topology: structure, routes against a BFS enumeration of
minimal paths, path latency over split paths, the max-min oracle, Swing's Ξ
against HyperX and the torus, every algorithm, bad specs."""

import pickle
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.algorithms import swing
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.engine.profiles import profile
from flowemu.kernels.maxmin import solve_completion
from flowemu.topology import HammingMesh, parse_topology, topology_families
from tests.helpers.cli import assert_bad_topology
from tests.helpers.grid_oracle import MinimalPaths, all_pairs, check_single_path
from tests.helpers.maxmin_oracle import completion, csr_to_lists

B = 50e9            # 400 Gb/s in bytes/s
LINK, HOP = 100e-9, 300e-9

SMALL = ["hammingmesh:2x2,3x2", "hammingmesh:3x1,2x3", "hammingmesh:1x1,3x3",
         "hammingmesh:1x5,2x1", "hammingmesh:4x3,2x2", "hammingmesh:1x2,2x2"]


def expected_links(a, b, x, y, board_bw):
    """Multiset of (src, dst, capacity scale), built from the paper's
    description: mesh links between neighbours on a board, and every node
    on a board edge joined to the switch of its row or column."""
    rows, cols = a * x, b * y
    n = rows * cols
    node = lambda r, c: r * cols + c
    col_switch = lambda c: n + c           # the fat tree of column c (dimension 0)
    row_switch = lambda r: n + cols + r    # the fat tree of row r (dimension 1)
    links = Counter()
    for r in range(rows):
        for c in range(cols):
            for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                r2, c2 = r + dr, c + dc
                if 0 <= r2 < rows and 0 <= c2 < cols and r2 // a == r // a \
                        and c2 // b == c // b:
                    links[(node(r, c), node(r2, c2), board_bw)] += 1
            for side in (0, a - 1):          # north and south ports
                if r % a == side:
                    links[(node(r, c), col_switch(c), 1.0)] += 1
                    links[(col_switch(c), node(r, c), 1.0)] += 1
            for side in (0, b - 1):          # west and east ports
                if c % b == side:
                    links[(node(r, c), row_switch(r), 1.0)] += 1
                    links[(row_switch(r), node(r, c), 1.0)] += 1
    return links


# ------------------------------------------------------------------ structure

@pytest.mark.parametrize("spec,a,b,x,y,bw", [
    ("hammingmesh:2x2,3x2", 2, 2, 3, 2, 1.0),
    ("hammingmesh:3x1,2x3,board_bw=2", 3, 1, 2, 3, 2.0),
    ("hammingmesh:1x1,3x3", 1, 1, 3, 3, 1.0),
    (" hammingmesh: 4x3 , 2x2 , board_bw = 0.5 ", 4, 3, 2, 2, 0.5),
])
def test_links_and_switches(spec, a, b, x, y, bw):
    t = parse_topology(spec)
    n = a * b * x * y
    assert (t.num_endpoints, t.num_nodes, t.grid) == (n, n + a * x + b * y, (a * x, b * y))
    got = Counter(zip(t.link_src.tolist(), t.link_dst.tolist(),
                      t.link_capacity_scale.tolist(), strict=True))
    assert got == expected_links(a, b, x, y, bw)
    # board links have the board latency (1 ns against 20 ns by default)
    board = (t.link_src < n) & (t.link_dst < n)
    np.testing.assert_allclose(t.link_latency(Network()), np.where(board, 0.05, 1.0) * LINK,
                               rtol=1e-12)
    assert parse_topology(t.spec).spec == t.spec
    t2 = pickle.loads(pickle.dumps(t))
    assert t2.spec == t.spec
    np.testing.assert_array_equal(t2.link_src, t.link_src)
    d = t.describe()
    assert (d["board"], d["boards"], d["switches"]) == ([a, b], [x, y], a * x + b * y)


def test_presets_and_canonical_spec():
    t = parse_topology("hx2mesh:32x32")
    assert t.spec == "hammingmesh:2x2,32x32" and t.num_endpoints == 4096
    assert t.grid == (64, 64)
    t4 = parse_topology("hx4mesh:16x16,board_bw=2")
    assert t4.spec == "hammingmesh:4x4,16x16,board_bw=2" and t4.grid == (64, 64)
    assert parse_topology("hammingmesh:2x2,4x4,board_latency=0.05").spec == \
        "hammingmesh:2x2,4x4"
    assert parse_topology("hammingmesh:2x2,4x4,board_latency=0").spec == \
        "hammingmesh:2x2,4x4,board_latency=0"
    docs = topology_families()
    assert "AxB,XxY" in docs["hammingmesh"] and "hx2mesh" in docs \
        and "hx4mesh" in docs


# --------------------------------------------------------------------- routes

@pytest.mark.parametrize("spec", SMALL)
def test_split_matches_bfs_per_hop_split(spec):
    t = parse_topology(spec)
    paths = MinimalPaths(t)
    src, dst = all_pairs(t.num_endpoints)
    r = t.route(src, dst, "split")
    assert r.num_entries == t.route_entries(src, dst, "split")
    counts = np.diff(r.flow_ptr)
    # the bound is exact: some flow has that many entries
    assert counts.max() == t.max_route_entries("split")
    for f, (s, d) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        assert r.hops[f] == paths.distance(s, d)
        link, frac = r.flow_links(f)
        assert len(set(link.tolist())) == len(link)
        assert dict(zip(link.tolist(), frac.tolist(), strict=True)) == \
            pytest.approx(paths.split(s, d))


@pytest.mark.parametrize("spec", SMALL)
@pytest.mark.parametrize("ecmp", ["dor", "hash"])
def test_single_paths_are_minimal(spec, ecmp):
    t = parse_topology(spec)
    paths = MinimalPaths(t)
    src, dst = all_pairs(t.num_endpoints)
    r = t.route(src, dst, ecmp, seed=9)
    assert r.num_entries == t.route_entries(src, dst, ecmp) == int(r.hops.sum())
    assert np.diff(r.flow_ptr).max() == t.max_route_entries(ecmp)
    np.testing.assert_allclose(r.frac, 1.0)
    for f, (s, d) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        check_single_path(t, paths, s, d, r.flow_links(f)[0].tolist())


def test_dor_finishes_dimension_zero_first():
    t = parse_topology("hammingmesh:2x3,3x3")
    n = t.num_endpoints
    src, dst = all_pairs(n)
    r = t.route(src, dst, "dor")
    cols = t.grid[1]
    for f in range(r.num_flows):
        link = r.flow_links(f)[0]
        ends = [v for v in t.link_dst[link].tolist() if v < n]
        # the column (dimension-1 coordinate) stays put until the row is reached
        rows = [v // cols for v in ends]
        moved_col = [v % cols != src[f] % cols for v in ends]
        if any(moved_col):
            assert all(r_ == dst[f] // cols for r_, m in zip(rows, moved_col,
                                                              strict=True) if m)


def test_hash_seeded():
    t = parse_topology("hammingmesh:3x3,3x3")
    src, dst = all_pairs(t.num_endpoints)
    r1 = t.route(src, dst, "hash", seed=1)
    np.testing.assert_array_equal(r1.link, t.route(src, dst, "hash", seed=1).link)
    assert (t.route(src, dst, "hash", seed=2).link != r1.link).any()


# ------------------------------------------------------- latency and rates

def test_path_latency_is_the_slowest_split_path():
    """On a 1x5 board whose row switch joins its two ends, local 1 -> 4 has
    two minimal paths of 3 cables: three board links (3 · 0.05) or one board
    link and two switch cables (0.05 + 2). The flow's latency is the larger;
    it is split half on each path, so it runs at twice the link rate."""
    t = parse_topology("hammingmesh:1x5,2x1")
    r = t.route(np.array([1]), np.array([4]), "split")
    assert r.hops[0] == 3 and r.num_entries == 6
    lat = t.path_latency(r, t.link_latency(Network()))
    assert lat[0] == pytest.approx(2.05 * LINK, rel=1e-12)
    m = 2.0**20
    traffic = pd.DataFrame({"step": [0], "src": [1], "dst": [4], "bytes": m})
    row = flowemu.time_traffic("hammingmesh:1x5,2x1", traffic).iloc[0]
    assert row["time_s"] == pytest.approx(3 * HOP + 2.05 * LINK + m / (2 * B), rel=1e-9)
    # one path (dimension order takes the + mesh link first): board links only
    row = flowemu.time_traffic("hammingmesh:1x5,2x1", traffic, ecmp="dor").iloc[0]
    assert row["time_s"] == pytest.approx(3 * HOP + 0.15 * LINK + m / B, rel=1e-9)


def test_board_bandwidth_and_latency_options():
    m = 2.0**20
    traffic = pd.DataFrame({"step": [0], "src": [0], "dst": [1], "bytes": m})
    spec = "hammingmesh:2x2,2x2,board_bw=2,board_latency=0.5"
    row = flowemu.time_traffic(spec, traffic).iloc[0]
    assert row["time_s"] == pytest.approx(HOP + 0.5 * LINK + m / (2 * B), rel=1e-9)
    # between boards: one switch, two cables at the network's speed
    traffic = pd.DataFrame({"step": [0], "src": [1], "dst": [2], "bytes": m})
    row = flowemu.time_traffic(spec, traffic).iloc[0]
    assert row["time_s"] == pytest.approx(2 * (HOP + LINK) + m / B, rel=1e-9)


@pytest.mark.parametrize("ecmp", ["split", "dor", "hash"])
def test_random_traffic_rates_match_oracle(ecmp):
    t = parse_topology("hammingmesh:2x2,2x3,board_bw=2")
    rng = np.random.default_rng(5)
    src = np.repeat(np.arange(t.num_endpoints), 2)
    dst = rng.integers(0, t.num_endpoints, len(src))
    r = t.route(src, dst, ecmp, seed=4)
    cap = t.link_capacity_scale
    sizes = rng.uniform(0.5, 2.0, len(src))
    sol = solve_completion(r, cap, sizes)
    rate0, finish, status = completion(csr_to_lists(r.flow_ptr, r.link, r.frac),
                                       list(map(float, cap)), list(map(float, sizes)))
    assert status == 0
    np.testing.assert_allclose(sol.rate0, rate0, rtol=1e-9)
    np.testing.assert_allclose(sol.finish, finish, rtol=1e-9)


# ----------------------------------------------------------------- algorithms

def swing_xi(spec):
    t = parse_topology(spec)
    prof = profile(swing.build(t.num_endpoints, t, False, variant="bandwidth"), t,
                   Network(), congestion=True)
    return prof.congestion_report()[1]["xi"]


def test_swing_xi_between_hyperx_and_torus():
    """Swing §5.4: the fat-tree links of a HammingMesh lower Swing's
    congestion deficiency below the torus's, the more so the smaller the
    boards; HyperX has none (16x16 analogues of the 64x64 networks)."""
    hyperx, hx2, hx4, torus = (swing_xi(s) for s in (
        "hyperx:16x16", "hx2mesh:8x8", "hx4mesh:4x4", "torus:16x16"))
    assert hyperx == pytest.approx(1.0, rel=1e-12)
    assert hyperx <= hx2 + 1e-12 and hx2 < hx4 < torus


@pytest.mark.slow
def test_swing_xi_between_hyperx_and_torus_4096_nodes():
    hyperx, hx2, hx4, torus = (swing_xi(s) for s in (
        "hyperx:64x64", "hx2mesh:32x32", "hx4mesh:16x16", "torus:64x64"))
    assert hyperx == pytest.approx(1.0, rel=1e-12)
    assert hyperx <= hx2 + 1e-12 and hx2 < hx4 < torus


@pytest.mark.parametrize("alg", ["ring", "recdoub", "swing", "bucket"])
@pytest.mark.parametrize("ecmp", ["split", "dor", "hash"])
def test_every_algorithm_runs(alg, ecmp):
    df = flowemu.simulate("hx2mesh:2x2", alg, ["1KiB", "1MiB"], ecmp=ecmp)
    assert len(df) == 2 and (df["time_s"] > 0).all()
    assert df["time_s"].iloc[1] > df["time_s"].iloc[0]


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("spec,needle", [
    ("hammingmesh:", "no shape given"),
    ("hammingmesh:2x2", "expected AxB,XxY"),
    ("hammingmesh:2x2,board_bw=2", "expected AxB,XxY"),
    ("hammingmesh:2x2x2,4x4", "board '2x2x2' has 3 field(s)"),
    ("hammingmesh:2x0,4x4", "board columns is 0; expected an integer >= 1"),
    ("hammingmesh:2x2,4xq", "boards columns is 'q', not an integer"),
    ("hammingmesh:1x1,1x4", "every dimension needs at least 2 nodes"),
    ("hammingmesh:2x2,4x4,board_bw=0", "board_bw is '0'; expected a number > 0"),
    ("hammingmesh:2x2,4x4,board_latency=-1", "board_latency is '-1'"),
    ("hammingmesh:2x2,4x4,board_latency=nan", "board_latency is 'nan'"),
    ("hammingmesh:2x2,4x4,planes=4", "unknown option 'planes'; options: board_bw="),
    ("hammingmesh:2x2,4x4,board_bw=2,board_bw=3", "'board_bw' is given twice"),
    ("hammingmesh:4x4,2048x2048", "at most 16777216"),
    ("hx2mesh:", "no boards given"),
    ("hx4mesh:4", "boards '4' has 1 field(s)"),
])
def test_bad_specs(spec, needle, capsys):
    assert_bad_topology(capsys, spec, needle)


def test_bad_constructor_args():
    with pytest.raises(ConfigError, match=r"board: \(2, 0\) is not allowed"):
        HammingMesh((2, 0), (2, 2))
    with pytest.raises(ConfigError, match=r"boards: 4 is not allowed"):
        HammingMesh((2, 2), 4)
    with pytest.raises(ConfigError, match=r"board_bw: True is not allowed"):
        HammingMesh((2, 2), (2, 2), board_bw=True)
