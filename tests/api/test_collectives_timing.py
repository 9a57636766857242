"""Timing the collectives other than allreduce (issue 28): on one switch and
on a 1-D torus without contention every algorithm takes its α-β closed form
(to 1e-9); the result columns carry the collective, nccl-tests' algorithm and
bus bandwidth; the CLI, the sweep field and compare take the collective; an
allreduce configuration keeps the hash it had before the field existed."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.api.simulation import RESULT_COLUMNS
from flowemu.core.errors import ConfigError
from flowemu.study.results import compare, load
from flowemu.study.sweep import SweepConfigError, load_sweep, sweep
from tests.helpers.cli import one_error_line, run

ALPHA = 1e-6
B = 400e9 / 8          # the default 400 Gb/s in bytes/s
N = np.array([1024.0, 2.0**20, 2.0**30])
FREE = {"link_latency": 0, "hop_latency": 0, "alpha": "1us"}   # α only: no path latency


def times(topology, collective, algorithm, ranks=None):
    df = flowemu.simulate(topology, algorithm, N, collective=collective, ranks=ranks, **FREE)
    assert (df["collective"] == collective).all()
    return df["time_s"].to_numpy()


@pytest.mark.parametrize("p", [5, 8, 12])
def test_one_switch_closed_forms(p):
    """``tree:P`` is one switch: each host's link carries what the host
    sends (and receives), at B each way."""
    topo = f"tree:{p}"
    logp = math.ceil(math.log2(p))
    ring = (p - 1) * (ALPHA + N / (p * B))
    for coll in ("allgather", "reduce_scatter"):
        np.testing.assert_allclose(times(topo, coll, "ring"), ring, rtol=1e-9)
    np.testing.assert_allclose(times(topo, "alltoall", "pairwise"), ring, rtol=1e-9)
    tree = logp * (ALPHA + N / B)
    np.testing.assert_allclose(times(topo, "broadcast", "binomial:root=1"), tree, rtol=1e-9)
    np.testing.assert_allclose(times(topo, "reduce", "binomial"), tree, rtol=1e-9)
    # one step, the root's (every sender's) link carries (p − 1)/p of n
    once = ALPHA + (p - 1) / p * N / B
    for coll in ("gather", "scatter"):
        np.testing.assert_allclose(times(topo, coll, "linear:root=2"), once, rtol=1e-9)
    np.testing.assert_allclose(times(topo, "alltoall", "linear"), once, rtol=1e-9)
    # Bruck: step k moves min(2^k, p − 2^k) blocks (allgather), the blocks whose
    # offset has bit k set (all-to-all: about n/2)
    for name in ("bruck", "sparbit"):   # Sparbit: the same counts, far peers first
        np.testing.assert_allclose(times(topo, "allgather", name),
                                   logp * ALPHA + (p - 1) / p * N / B, rtol=1e-9)
    moved = sum(sum(1 for o in range(1, p) if o >> k & 1) for k in range(logp))
    np.testing.assert_allclose(times(topo, "alltoall", "bruck"),
                               logp * ALPHA + moved / p * N / B, rtol=1e-9)
    # pipelined chain: segments + p − 2 steps of n/segments
    for k in (1, 4):
        np.testing.assert_allclose(times(topo, "broadcast", f"chain:segments={k}"),
                                   (k + p - 2) * (ALPHA + N / (k * B)), rtol=1e-9)
        np.testing.assert_allclose(times(topo, "reduce", f"chain:segments={k},root=3"),
                                   (k + p - 2) * (ALPHA + N / (k * B)), rtol=1e-9)
    # Bine's broadcast and reduce (the MPICH port's forms for any p): with q =
    # 2^⌊log₂p⌋, log₂q tree steps in which every sender sends n to one peer and
    # every receiver gets n once, and for p ≠ q one more step of n over disjoint
    # pairs (the broadcast's v → v + q after the tree, the reduce's fold of odd
    # v < 2(p − q) into v − 1 before it): ⌊log₂p⌋ + 1 = ⌈log₂p⌉ steps of α + n/B
    # (p = 5: q = 4, 2 + 1 steps; p = 12: q = 8, 3 + 1)
    bine_tree = logp * (ALPHA + N / B)
    np.testing.assert_allclose(times(topo, "broadcast", "bine:root=3"), bine_tree, rtol=1e-9)
    np.testing.assert_allclose(times(topo, "reduce", "bine"), bine_tree, rtol=1e-9)
    np.testing.assert_allclose(times(topo, "reduce", f"bine:root={p - 1}"), bine_tree,
                               rtol=1e-9)
    if p & (p - 1) == 0:
        # Bine: log₂p steps of Swing's peers; the tree moves each subtree's blocks
        # (scatter, gather); all-to-all n/2 a step
        for coll in ("gather", "scatter"):
            np.testing.assert_allclose(times(topo, coll, "bine:root=1"),
                                       logp * ALPHA + (p - 1) / p * N / B, rtol=1e-9)
        np.testing.assert_allclose(times(topo, "alltoall", "bine"),
                                   logp * (ALPHA + N / (2 * B)), rtol=1e-9)
        # van de Geijn: binomial scatter (log₂p steps, (p−1)/p of n from the root)
        # then the ring allgather; Rabenseifner: recursive halving then the
        # binomial gather, each log₂p·α + (p−1)/p·n/B
        scatter = logp * ALPHA + (p - 1) / p * N / B
        np.testing.assert_allclose(times(topo, "broadcast", "vandegeijn"), scatter + ring,
                                   rtol=1e-9)
        np.testing.assert_allclose(times(topo, "reduce", "rabenseifner:root=5"), 2 * scatter,
                                   rtol=1e-9)
        # log₂p steps of n/2, n/4, ... (halving) or the reverse (doubling), and the
        # binomial gather/scatter: the subtrees' halves, quarters, ...
        halving = logp * ALPHA + (p - 1) / p * N / B
        np.testing.assert_allclose(times(topo, "reduce_scatter", "recdoub"), halving,
                                   rtol=1e-9)
        np.testing.assert_allclose(times(topo, "allgather", "recdoub"), halving, rtol=1e-9)
        for coll in ("gather", "scatter"):
            np.testing.assert_allclose(times(topo, coll, "binomial"), halving, rtol=1e-9)


def test_one_dimensional_torus_closed_forms():
    """On ``torus:12`` the ring's steps are neighbour exchanges and the
    binomial tree's flows of a step cross disjoint stretches (distances 1,
    2, 4 and 8 = 4 the other way; none is 6, which would split)."""
    p = 12
    for coll in ("allgather", "reduce_scatter"):
        np.testing.assert_allclose(times("torus:12", coll, "ring:ports=1"),
                                   (p - 1) * (ALPHA + N / (p * B)), rtol=1e-9)
        # both ways round (the default): half the vector each way, on its own links
        np.testing.assert_allclose(times("torus:12", coll, "ring"),
                                   (p - 1) * (ALPHA + N / (2 * p * B)), rtol=1e-9)
    for coll in ("broadcast", "reduce"):
        np.testing.assert_allclose(times("torus:12", coll, "binomial"), 4 * (ALPHA + N / B),
                                   rtol=1e-9)


def test_bandwidth_columns():
    df = flowemu.simulate("tree:8", "ring", "1MiB", collective="allgather")
    assert list(df.columns) == RESULT_COLUMNS and RESULT_COLUMNS[-5:] == [
        "sync", "collective", "algbw_Bps", "busbw_Bps", "cross_group_bytes"]
    row = df.iloc[0]
    assert row["algbw_Bps"] == row["goodput_Bps"] == row["size_bytes"] / row["time_s"]
    assert row["busbw_Bps"] == pytest.approx(row["algbw_Bps"] * 7 / 8, rel=1e-15)
    ar = flowemu.simulate("tree:8", "ring", "1MiB").iloc[0]
    assert ar["collective"] == "allreduce"
    assert ar["busbw_Bps"] == pytest.approx(ar["goodput_Bps"] * 2 * 7 / 8, rel=1e-15)
    bc = flowemu.simulate("tree:8", "binomial", "1MiB", collective="broadcast").iloc[0]
    assert bc["busbw_Bps"] == bc["algbw_Bps"]


def test_refusals():
    with pytest.raises(ConfigError, match="collective: 'bcast' is not one of allreduce"):
        flowemu.simulate("tree:8", "binomial", "1MiB", collective="bcast")
    with pytest.raises(ConfigError, match="'dualroot' is not an algorithm of allgather; known: "
                                          "bine, bruck, bucket, butterfly, mpich, nccl, "
                                          "recdoub, ring, sparbit, swing"):
        flowemu.simulate("tree:8", "dualroot", "1MiB", collective="allgather")
    with pytest.raises(ConfigError, match="collective: 'gather' needs model='flow'"):
        flowemu.simulate("tree:8", "linear", "1MiB", collective="gather", model="genmodel")
    with pytest.raises(ConfigError, match=r"recdoub \(allgather\): p=6 ranks must be a power of two"):
        flowemu.simulate("tree:8", "recdoub", "1MiB", collective="allgather", ranks=6)


def test_other_doors_take_the_collective():
    steps, summary = flowemu.congestion("tree:8", "pairwise", collective="alltoall")
    assert len(steps) == 7 and summary["steps"].iloc[0] == 7
    loads = flowemu.link_loads("tree:8", "linear", collective="gather")
    # 7 senders' host links up and the root's link down, which carries 7/8 of n
    into_root = loads[loads["dst_node"] == 0]
    assert len(loads) == 8 and into_root["bytes_per_n"].iloc[0] == pytest.approx(7 / 8)
    fl = flowemu.flows("tree:8", "binomial", size="1MiB", collective="broadcast")
    assert len(fl) == 7          # a flow to every rank but the root, the whole vector each
    assert (fl["bytes"] == 2**20).all() and sorted(fl["dst"]) == list(range(1, 8))


def test_dataflow_and_what_ifs_time_other_collectives():
    """A broadcast under dataflow: rank v waits only for its parent, so the
    time equals the barrier's on one switch (every step's flows end
    together); with a slow network rank the two differ."""
    base = flowemu.simulate("tree:8", "binomial", "1MiB", collective="broadcast", **FREE)
    flow = flowemu.simulate("tree:8", "binomial", "1MiB", collective="broadcast",
                            sync="dataflow", **FREE)
    assert flow["time_s"].iloc[0] == pytest.approx(base["time_s"].iloc[0], rel=1e-12)
    slow = flowemu.simulate("tree:8", "binomial", "1MiB", collective="broadcast",
                            slow="1=0.5:network", **FREE)
    assert slow["time_s"].iloc[0] > base["time_s"].iloc[0]


def test_cli_run(capsys):
    code, out, err = run(capsys, ["run", "-t", "tree:8", "-c", "allgather", "-a", "ring",
                                  "-s", "1MiB"])
    assert code == 0
    head = out.splitlines()[0].split()
    assert head[:3] == ["topology", "collective", "algorithm"] and "busbw" in head
    assert "allgather" in out.splitlines()[1]
    code, _, err = run(capsys, ["run", "-t", "tree:8", "-c", "allgather", "--traffic",
                                "x.csv"])
    assert code == 2 and "--collective" in one_error_line(err)
    code, _, err = run(capsys, ["run", "-t", "tree:8", "-c", "alltoall", "-a", "ring"])
    assert code == 2 and one_error_line(err) == (
        "flowemu: error: --algorithm: 'ring' is not an algorithm of alltoall; known: bine, bruck, "
        "linear, mpich, nccl, pairwise")


GRID = """
topology = "tree:8"
sizes = "1KiB,1MiB"
[groups.ag]
collective = "allgather"
algorithm = ["ring", "recdoub"]
[groups.ar]
algorithm = ["ring", "recdoub"]
"""


def test_sweep_field_and_compare(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(GRID)
    out = tmp_path / "out"
    sweep(path, out, progress=False, jobs=1)
    df = load(out)
    ag = df[df["group"] == "ag"]
    assert set(ag["collective"]) == {"allgather"}
    assert set(df[df["group"] == "ar"]["collective"]) == {"allreduce"}
    want = flowemu.simulate("tree:8", "ring", [1024, 2**20], collective="allgather")
    got = ag[ag["algorithm"] == "ring"].sort_values("size_bytes")
    np.testing.assert_allclose(got["time_s"], want["time_s"], rtol=1e-12)
    assert all("collective=allgather" in k for k in ag["config_key"])
    # compare ranks a collective's algorithms among themselves
    cmp = compare(df)
    assert set(cmp[cmp["group"] == "ag"]["collective"]) == {"allgather"}


def test_allreduce_configurations_keep_their_hash(tmp_path):
    """The hash of an allreduce configuration is the one written before the
    field existed: sha256 of the same canonical fields (computed here from
    the fields by hand, not by flowemu)."""
    path = tmp_path / "s.toml"
    path.write_text('topology = "tree:8"\nalgorithm = "recdoub:variant=latency"\n'
                    'sizes = "1KiB"\n')
    cfg = load_sweep(path).configs[0]
    canonical = {"group": "main", "topology": "tree:8", "algorithm": cfg.algorithm,
                 "ranks": None, "sizes": [1024], "ecmp": "split", "seed": 0,
                 "bandwidth": 5e10, "link_latency": 1e-7, "hop_latency": 3e-7, "alpha": 0.0,
                 "gamma": 0.0, "delta": 0.0, "incast_threshold": float("inf"),
                 "incast_slope": 0.0}
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    assert cfg.hash == hashlib.sha256(text.encode()).hexdigest()[:12]
    assert "collective" not in cfg.key


def sweep_problems(tmp_path, text: str) -> str:
    """What load_sweep refuses a sweep file of ``text`` with."""
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(SweepConfigError) as exc:
        load_sweep(path)
    return str(exc.value)


def test_sweep_refusals(tmp_path):
    text = sweep_problems(tmp_path, 'topology = "tree:8"\nsizes = "1KiB"\ncollective = '
                          '["allgather", "alltoall"]\nalgorithm = ["ring", "pairwise"]\n')
    assert "'pairwise' is not an algorithm of allgather" in text
    assert "'ring' is not an algorithm of alltoall" in text
    text = sweep_problems(tmp_path, 'topology = "tree:8"\ncollective = "bcast"\n'
                          'algorithm = "ring"\n')
    assert "collective: 'bcast' is not allowed" in text
    assert "missing required key" not in text
    text = sweep_problems(tmp_path, 'topology = "tree:8"\nsizes = "1KiB"\ncollective = '
                          '"gather"\nmodel = "genmodel"\nalgorithm = "linear"\n')
    assert 'needs model = "flow": GenModel prices allreduce only' in text


def test_datasets_from_before_read_as_allreduce():
    from flowemu.study.sweep.dataset import with_model
    old = pd.DataFrame({"topology": ["tree:8"], "algorithm": ["ring"], "ranks": [8],
                        "size_bytes": [1024], "time_s": [1e-5], "goodput_Bps": [1.024e8]})
    new = with_model(old)
    assert new["collective"].iloc[0] == "allreduce"
    assert new["algbw_Bps"].iloc[0] == 1.024e8
    assert new["busbw_Bps"].iloc[0] == pytest.approx(1.024e8 * 2 * 7 / 8)


# ------------------------------------------------------------------ locality

def test_endpoint_groups_follow_the_links():
    """A group is what the wiring says: hosts of one leaf are 2 links apart
    (4 otherwise), of one pod at most 4 (6 across pods); two hosts of one
    Dragonfly group are joined without a global link."""
    from flowemu.topology import parse_topology
    for spec, inside in (("leafspine:4x3x2", 2), ("fattree:k=4", 4)):
        topo = parse_topology(spec)
        group, _ = topo.endpoint_groups()
        src, dst = np.divmod(np.arange(topo.num_endpoints ** 2), topo.num_endpoints)
        keep = src != dst
        hops = topo.route(src[keep], dst[keep], "split").hops
        np.testing.assert_array_equal(hops <= inside, group[src[keep]] == group[dst[keep]])
    topo = parse_topology("dragonfly:a=4,p=2,h=2")
    group, kind = topo.endpoint_groups()
    n, g, a = topo.num_endpoints, 9, 4
    first_global = 2 * n + g * a * (a - 1)
    src, dst = np.divmod(np.arange(n * n), n)
    keep = src != dst
    routes = topo.route(src[keep], dst[keep], "split")
    flow = np.repeat(np.arange(keep.sum()), np.diff(routes.flow_ptr))
    crosses = np.bincount(flow, weights=routes.link >= first_global,
                          minlength=keep.sum()) > 0
    assert kind == "group"
    np.testing.assert_array_equal(crosses, group[src[keep]] != group[dst[keep]])
    # HammingMesh: node (r, c) of the 4x6 grid of hx2mesh:2x3 is on board (r//2, c//2)
    group, kind = parse_topology("hx2mesh:2x3").endpoint_groups()
    assert kind == "board" and group[7] == group[0] != group[8] and group[6] == group[1]
    assert parse_topology("torus:4x4").endpoint_groups() is None


def test_cross_group_bytes():
    """pairwise all-to-all on 16 hosts of 4 leaves: every rank sends n/16 to
    each of the 12 ranks on other leaves, 12n in all; a ring placed so that
    consecutive ranks sit on different leaves crosses with every flow."""
    ls = "leafspine:4x4x2"
    a2a = flowemu.simulate(ls, "pairwise", "1MiB", collective="alltoall")
    assert a2a["cross_group_bytes"].iloc[0] == 12 * 2**20
    ring = flowemu.simulate(ls, "ring:ports=1", "1MiB", collective="allgather")
    assert ring["cross_group_bytes"].iloc[0] == pytest.approx(15 * 4 / 16 * 2**20)
    import os
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "spread.txt")
        with open(path, "w") as fh:   # rank r on host 4(r mod 4) + r div 4
            fh.write("\n".join(str(4 * (r % 4) + r // 4) for r in range(16)))
        spread = flowemu.simulate(ls, "ring:ports=1", "1MiB", collective="allgather",
                                  placement=path)
    # rank r sits on leaf r mod 4, so every flow r → r+1 (15 → 0 too) crosses leaves:
    # 16 flows of n/16 in each of the 15 steps
    assert spread["cross_group_bytes"].iloc[0] == pytest.approx(15 * 2**20)
    assert np.isnan(flowemu.simulate("torus:4x4", "ring", "1MiB")["cross_group_bytes"].iloc[0])


# ------------------------------------------------------------------ trial fixes

def test_ina_reduce_is_a_reduce():
    """in-network aggregation as a reduce: through either door the row says
    reduce and its bus bandwidth is the algorithm bandwidth (factor 1)."""
    a = flowemu.simulate("fattree:k=4", "ina:collective=reduce,root=3", "1MiB").iloc[0]
    b = flowemu.simulate("fattree:k=4", "ina:root=3", "1MiB", collective="reduce").iloc[0]
    assert a["collective"] == b["collective"] == "reduce"
    assert a["time_s"] == b["time_s"] and a["busbw_Bps"] == a["algbw_Bps"]


def test_sweep_refuses_bad_roots_and_rank_counts_up_front(tmp_path):
    text = sweep_problems(
        tmp_path, 'sizes = "1KiB"\ntopology = ["torus:4x4", "torus:3x4"]\n'
        '[groups.e]\ncollective = "broadcast"\nalgorithm = "binomial:root=15"\n'
        '[groups.c]\ncollective = "alltoall"\nalgorithm = "bine"\n'
        '[groups.b]\ncollective = "broadcast"\nalgorithm = "bine:root=11"\n'
        '[groups.g]\ncollective = "allgather"\nalgorithm = "recdoub"\n')
    assert "3 problems" in text      # Bine's broadcast runs on 12 ranks (its other-p form)
    assert "bine (broadcast)" not in text
    assert "root=15 must be a rank of the 12 ranks (0..11)" in text
    assert "bine (alltoall): p=12 ranks must be a power of two" in text
    assert "use mpich (that fallback), bruck, pairwise or linear" in text
    assert "recdoub (allgather): p=12 ranks must be a power of two" in text


def test_an_algorithm_of_another_collective_is_named_as_such():
    with pytest.raises(ConfigError, match="'pairwise' is not an algorithm of allreduce; it "
                                          "serves reduce_scatter, alltoall"):
        flowemu.simulate("tree:8", "pairwise", "1MiB")
    with pytest.raises(ConfigError, match="unknown name 'nosuch'"):
        flowemu.simulate("tree:8", "nosuch", "1MiB")


def test_the_table_shows_the_root_beside_a_variant(capsys):
    """An option the variant does not show (the root) gets the options column."""
    code, out, _ = run(capsys, ["run", "-t", "tree:4", "-c", "reduce", "-a",
                                "dbtree:segments=4,root=2", "-s", "1MiB"])
    head, row = out.splitlines()[:2]
    assert code == 0 and "options" in head and "root=2,segments=4" in row
    code, out, _ = run(capsys, ["run", "-t", "tree:4", "-c", "allgather", "-a", "bruck",
                                "-s", "1MiB"])   # (no options at all: no column)
    assert "options" not in out.splitlines()[0]


def test_slow_note_says_the_collective_reduces_nothing(capsys):
    code, out, err = run(capsys, ["run", "-t", "tree:8", "-c", "gather", "-a",
                                  "binomial:root=5", "-s", "1MiB", "--slow", "3=0.5"])
    assert code == 0 and "gather reduces nothing" in err
    assert "root=5" in out.splitlines()[1]         # options tell such rows apart


@pytest.mark.parametrize("p", [7, 12])
def test_pipelined_binary_tree(p):
    """k segments down (up) a binary tree of depth D = ⌊log₂p⌋: k + D − 1
    steps, each sender feeding two children (two parents' sums meeting) on
    one link: (k + D − 1)(α + 2n/(kB)) on one switch (p = 7 and 12: the
    deepest level has a parent with two children)."""
    depth = p.bit_length() - 1
    for k in (1, 4):
        want = (k + depth - 1) * (ALPHA + 2 * N / (k * B))
        for coll in ("broadcast", "reduce"):
            np.testing.assert_allclose(times(f"tree:{p}", coll, f"bintree:segments={k}"),
                                       want, rtol=1e-9)


def _nccl_btree(nranks, rank):
    """NCCL's ``ncclGetBtree``, line for line: (up, down0, down1)."""
    bit = 1
    while bit < nranks:
        if bit & rank:
            break
        bit <<= 1
    if rank == 0:
        return -1, -1, (bit >> 1 if nranks > 1 else -1)
    up = (rank ^ bit) | (bit << 1)
    if up >= nranks:
        up = rank ^ bit
    lowbit = bit >> 1
    down0 = -1 if lowbit == 0 else rank - lowbit
    down1 = -1 if lowbit == 0 else rank + lowbit
    while down1 >= nranks:
        down1 = -1 if lowbit == 0 else rank + lowbit
        lowbit >>= 1
    return up, down0, down1


def _nccl_dtree_edges(p):
    """The edges {a, b} of NCCL's two trees (``ncclGetDtree``: the second
    shifted by one for odd p, mirrored for even p)."""
    trees = [set(), set()]
    for rank in range(p):
        up, _, _ = _nccl_btree(p, rank)
        if up >= 0:
            trees[0].add(frozenset((rank, up)))
        if p % 2 == 1:
            u, _, _ = _nccl_btree(p, (rank - 1 + p) % p)
            u = -1 if u == -1 else (u + 1) % p
        else:
            u, _, _ = _nccl_btree(p, p - 1 - rank)
            u = -1 if u == -1 else p - 1 - u
        if u >= 0:
            trees[1].add(frozenset((rank, u)))
    return trees


def _hung_tree_time(p, root, k, alpha, n, bw):
    """One switch: each tree (its edge set, on ranks relative to ``root``)
    hung from the root; a child of height h gets segment s in step
    T − 1 − (s + h), T = k + the tallest child's height + 1; a step costs α +
    the busiest host link's bytes / B (every flow of a step is n/(2k))."""
    plans = []
    for edges in _nccl_dtree_edges(p):
        adj = {v: set() for v in range(p)}
        for e in edges:
            a, b = tuple(e)
            adj[a].add(b)
            adj[b].add(a)
        parent, order, todo = {0: None}, [], [0]      # breadth first from the root
        while todo:
            v = todo.pop(0)
            order.append(v)
            for w in adj[v]:
                if w not in parent:
                    parent[w] = v
                    todo.append(w)
        height = {v: 0 for v in range(p)}
        for v in reversed(order):
            if parent[v] is not None:
                height[parent[v]] = max(height[parent[v]], height[v] + 1)
        plans.append([(parent[v], v, height[v]) for v in order if parent[v] is not None])
    T = max(k + max(h for _, _, h in plan) for plan in plans)
    total = 0.0
    for t in range(T):
        out, inn = [0] * p, [0] * p
        for plan in plans:
            for a, b, h in plan:
                if 0 <= T - 1 - t - h < k:
                    out[a] += 1
                    inn[b] += 1
        busiest = max(max(out), max(inn))
        if busiest:
            total += alpha + busiest * n / (2 * k) / bw
    return total


@pytest.mark.parametrize("p", [2, 4, 7, 8, 12])
def test_double_binary_tree_broadcast_and_reduce(p):
    """dbtree as a broadcast (reduce): NCCL's two trees, each hung from the
    root, half the vector down (up) each in k segments; on one switch every
    step costs α + its busiest host link's segments, counted here from a
    line-for-line copy of ncclGetBtree. p = 4 by hand: 0→2→{1,3} and
    0→1→{2,3}: k + 1 steps, the root or an inner node sending two
    segments in each, (k + 1)(α + n/(kB))."""
    for k in (1, 4):
        want = np.array([_hung_tree_time(p, 0, k, ALPHA, n, B) for n in N])
        for coll in ("broadcast", "reduce"):
            root = p // 2
            got = times(f"tree:{p}", coll, f"dbtree:segments={k},root={root}")
            np.testing.assert_allclose(got, want, rtol=1e-9)
        if p == 4:
            np.testing.assert_allclose(want, (k + 1) * (ALPHA + N / (k * B)), rtol=1e-12)


def test_torus_sub_blocks():
    """``torus:...,groups=AxB`` cuts the torus into blocks of AxB nodes:
    node (r, c) is in block (r // A, c // B); pairwise all-to-all on
    torus:4x4,groups=2x2 sends n/16 from every rank to the 12 outside its
    block (12n); a one-way ring allgather on torus:8,groups=4 crosses at
    3 → 4 and 7 → 0, two flows of n/8 in each of 7 steps (1.75n). Routing,
    and so every time, is the torus's own."""
    from flowemu.topology import parse_topology
    topo = parse_topology("torus:4x6,groups=2x3")
    group, kind = topo.endpoint_groups()
    r, c = np.divmod(np.arange(24), 6)
    assert kind == "sub-block" and topo.spec == "torus:4x6,groups=2x3"
    np.testing.assert_array_equal(group, (r // 2) * 2 + c // 3)
    mib = 2.0**20
    a2a = flowemu.simulate("torus:4x4,groups=2x2", "pairwise", "1MiB", collective="alltoall")
    assert a2a["cross_group_bytes"].iloc[0] == 12 * mib
    ring = flowemu.simulate("torus:8,groups=4", "ring:ports=1", "1MiB", collective="allgather")
    assert ring["cross_group_bytes"].iloc[0] == pytest.approx(1.75 * mib)
    plain = flowemu.simulate("torus:8x8", "swing", N)
    grouped = flowemu.simulate("torus:8x8,groups=4x4", "swing", N)
    np.testing.assert_array_equal(plain["time_s"], grouped["time_s"])
    assert np.isnan(plain["cross_group_bytes"]).all() and (grouped["cross_group_bytes"] > 0).all()
    assert parse_topology("mesh:8,groups=4").endpoint_groups()[0].tolist() == [0] * 4 + [1] * 4
    refusals = {"torus:4x4,groups=3x2": "block size 3 of dimension 0 does not divide 4",
                "torus:4x4,groups=2": "groups: 2 is not allowed; expected one block size",
                "torus:4x4,group=2x2": "option 'group=2x2' is not known; torus takes groups=",
                "mesh:4x4,groups=2xa": "groups: '2xa' is not block sizes",
                "torus:4x4,groups=2x2,groups=4x4": "option 'groups' is given twice",
                "torus:4x4,groups=0x2": "block size 0 of dimension 0 is not allowed; each "
                                        "block size is an integer >= 1"}
    for spec, message in refusals.items():
        with pytest.raises(ConfigError, match=message):
            parse_topology(spec)


def test_list_one_collective(capsys):
    """``flowemu list -c C`` lists only that collective's algorithms."""
    code, out, _ = run(capsys, ["list", "-c", "broadcast"])
    names = [line.split()[0] for line in out.splitlines()[1:]]
    assert code == 0 and out.startswith("  broadcast")
    assert names == flowemu.algorithms.algorithm_names("broadcast")
    code, out, _ = run(capsys, ["list", "-c", "allreduce"])
    assert code == 0 and out.startswith("algorithms:") and "\n  broadcast " not in out
    code, _, err = run(capsys, ["list", "-c", "bcast"])
    assert code == 2 and "collective: 'bcast' is not one of allreduce" in one_error_line(err)


def test_notes_that_differ_by_size_say_their_sizes(capsys):
    """nccl's note names NCCL's protocol per size: each note line says the
    sizes it is of; one note for every row has none."""
    code, out, _ = run(capsys, ["run", "-t", "torus:8x8", "-c", "broadcast", "-a",
                                "nccl:root=3", "-s", "1MiB,4MiB,8MiB"])
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert code == 0 and len(notes) == 2
    assert notes[0].startswith("note: 1MiB: NCCL") and "LL128" in notes[0]
    assert notes[1].startswith("note: 4MiB, 8MiB: NCCL") and notes[1].endswith("ring Simple")
    code, out, _ = run(capsys, ["run", "-t", "torus:8x8", "-c", "broadcast", "-a",
                                "nccl:root=3", "-s", "4MiB,8MiB"])
    assert [line for line in out.splitlines() if line.startswith("note: ")] == [
        "note: NCCL 2.30.7: ring Simple"]
