"""GenTree (genmodel-gentree.txt §4.2, Algorithms 1 and 2): its schedules are
allreduces, its choices follow its own GenModel arithmetic (recomputed here
from Table 2's printed rows), and every door takes it."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.algorithms.gentree.planner import (
    candidate_types,
    factorisations,
    make_plan,
    tree_view,
)
from flowemu.algorithms.gentree.schedule import schedule_from_plan
from flowemu.algorithms.verify import verify_allreduce
from flowemu.api.planning import plan, table6
from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.core.presets import GENTREE_TABLE5
from flowemu.topology import parse_topology
from tests.helpers.cli import one_error_line, run

SERVER = GENTREE_TABLE5["Server"]
#: Table 5's host terms per byte (a float is 4 bytes)
TABLE5_NET = Network.from_si(alpha=SERVER["alpha"], gamma=SERVER["gamma"] / 4,
                     delta=SERVER["delta"] / 4)
#: the paper's sizes, 1e7, 3.2e7 and 1e8 floats, in bytes
PAPER_SIZES = [4e7, 12.8e7, 4e8]

INCAST_NET = Network(bandwidth="5Gb/s", alpha="1ms", gamma="0.2ns", delta="0.1ns",
                     incast_threshold=3, incast_slope="50ps")


# ------------------------------------------------------------------ allreduce proofs

TREES = ["tree:6", "tree:7", "tree:2", "tree:3x2", "tree:4x1", "tree:5x2", "tree:8x4+8x2",
         "tree:3+2x2", "tree:2x(4x3+5)", "tree:dc(3x4)+dc(2x3)", "tree:dc(4x4)+dc(2x2,uplinks=2)",
         "tree:2x1+3", "tree:2x(2x2)", "leafspine:4x3x2", "fattree:k=4",
         "fattree:k=4,levels=2", "tree:4x4,bw=5Gb/s:40Gb/s"]


def _valid(spec):
    try:
        return parse_topology(spec)
    except ConfigError:
        return None


@pytest.mark.parametrize("spec", [s for s in TREES if _valid(s) is not None])
@pytest.mark.parametrize("net", [Network(), INCAST_NET, TABLE5_NET], ids=["plain", "incast",
                                                                          "table5"])
def test_every_plan_is_an_allreduce(spec, net):
    topo = parse_topology(spec)
    for S in (1e3, 1e6, 1e9):
        for rearrange in (True, False):
            pl = make_plan(topo, net, S, None, rearrange, blocks=True)
            sched = schedule_from_plan(pl, blocks=True)
            rep = verify_allreduce(sched)
            assert rep.p == topo.num_endpoints


@pytest.mark.parametrize("p", [2, 3, 5, 9, 13])
def test_fewer_ranks_than_hosts(p):
    topo = parse_topology("tree:4x4")
    pl = make_plan(topo, INCAST_NET, 1e6, p, True, blocks=True)
    verify_allreduce(schedule_from_plan(pl, blocks=True))


def test_rearrangement_happens_and_is_an_allreduce():
    """A slow top link with many senders below: moving the blocks onto few
    servers first cuts the flows converging on it (Algorithm 2 l. 8-16)."""
    topo = parse_topology("tree:dc(4x4)+dc(4x4),bw=1Gb/s:100Gb/s:100Gb/s,eps=1ns::,wt=1::")
    pl = make_plan(topo, Network(), 1e8, None, True, blocks=True)
    root = pl.planner.plans[pl.view.signature[pl.view.root]]
    assert root.rearranged == (0, 1) and root.kind == "acps"
    verify_allreduce(schedule_from_plan(pl, blocks=True))
    plain = make_plan(topo, Network(), 1e8, None, False)
    assert pl.time < plain.time


# ------------------------------------------------------------------ GenModel arithmetic

def _table2(kind, N, S, a, b, g, d, e, wt):
    """Table 2's rows as printed (w = the fan-in, own included)."""
    inc = lambda w: max(w - wt, 0) * e
    fr = (N - 1) / N
    if kind == "cps":
        return 2 * a + 2 * fr * S * b + fr * S * g + (N + 1) / N * S * d + 2 * fr * S * inc(N)
    if kind == "ring":
        return 2 * (N - 1) * a + 2 * fr * S * b + fr * S * g + 3 * fr * S * d
    if kind == "rhd":
        L = int(math.log2(N))
        return 2 * L * a + 2 * fr * S * b + fr * S * g + 3 * fr * S * d
    f = [int(x) for x in kind.split("x")]
    m = len(f)
    P = np.cumprod(f)
    tail = sum(math.prod(f[i:]) for i in range(1, m))   # the schedule's δ (ps docstring)
    incast = sum(2 * (fi - 1) / Pi * S * inc(fi) for fi, Pi in zip(f, P, strict=True))
    return 2 * m * a + 2 * fr * S * b + fr * S * g + (N + 1 + 2 * tail) / N * S * d + incast


@pytest.mark.parametrize("preset, N", [("SS24", 24), ("SS32", 32)])
def test_single_switch_choices_follow_genmodel(preset, N):
    """Every candidate's cost is its Table 2 row with the switch's α (the
    network's α + two links of the tier + two hops), β of the 5 Gb/s tier
    and the tier's ε, w_t; GenTree takes the cheapest."""
    tier = GENTREE_TABLE5["Middle SW"]
    a = SERVER["alpha"] + 2 * tier["alpha"] + 2 * TABLE5_NET.hop_latency
    b = tier["beta"] / 4
    e, wt = tier["eps"] / 4, tier["wt"]
    df = plan(f"tree:{preset}", PAPER_SIZES, network=TABLE5_NET)
    assert len(df) == len(PAPER_SIZES) * len(candidate_types(N))
    for _, row in df.iterrows():
        want = _table2(row["candidate"], N, row["size_bytes"], a, b, TABLE5_NET.gamma,
                       TABLE5_NET.delta, e, wt)
        assert row["cost_s"] == pytest.approx(want, rel=1e-9), row["candidate"]
    for S, grp in df.groupby("size_bytes"):
        assert grp.loc[grp["chosen"], "cost_s"].item() == grp["cost_s"].min()


def test_single_switch_choices_are_table6():
    """The paper's Table 6 rows for SS24 and SS32 (CPS, 8×3, 8×3; 8×4 ×3)."""
    t24 = table6(plan("tree:SS24", PAPER_SIZES, network=TABLE5_NET))
    t32 = table6(plan("tree:SS32", PAPER_SIZES, network=TABLE5_NET))
    assert t24.loc["Root SW"].tolist() == ["cps", "8x3", "8x3"]
    assert t32.loc["Root SW"].tolist() == ["8x4", "8x4", "8x4"]


def test_candidates():
    assert factorisations(12) == [(2, 2, 3), (2, 3, 2), (2, 6), (3, 2, 2), (3, 4), (4, 3),
                                  (6, 2)]
    assert factorisations(7) == []
    assert candidate_types(4) == ["cps", "2x2", "ring", "rhd"]
    assert candidate_types(6) == ["cps", "2x3", "3x2", "ring"]


def test_two_level_finish_time_adds_the_levels():
    """Algorithm 2 line 30: the root finishes after its slowest child plus
    its own sub-plan, and the plan's time is the root's finish."""
    df = plan("tree:SYM384", [1e8], network=TABLE5_NET)
    ch = df[df["chosen"]]
    mid = ch[ch["tier"] == "Middle SW"].iloc[0]
    root = ch[ch["tier"] == "Root SW"].iloc[0]
    assert mid["finish_s"] == pytest.approx(mid["cost_s"])
    assert root["finish_s"] == pytest.approx(mid["finish_s"] + root["rearrange_s"]
                                             + root["cost_s"])
    assert root["plan_time_s"] == pytest.approx(root["finish_s"])


def test_genmodel_backend_prices_gentree_by_its_plan():
    df = flowemu.simulate("tree:SS24", "gentree", PAPER_SIZES, network=TABLE5_NET,
                          model="genmodel")
    pl = plan("tree:SS24", PAPER_SIZES, network=TABLE5_NET)
    best = pl[pl["chosen"]].sort_values("size_bytes")["cost_s"].to_numpy()
    assert np.allclose(df["time_s"].to_numpy(), best, rtol=1e-12)


# ------------------------------------------------------------------ the flow backend

def test_flow_time_follows_the_plan_per_size():
    """simulate plans per size: the variant names the plan GenModel chose
    there, and the time equals that plan's schedule timed alone."""
    df = flowemu.simulate("tree:SS24", "gentree", PAPER_SIZES, network=TABLE5_NET)
    assert df["variant"].tolist() == ["Root SW: cps", "Root SW: 8x3", "Root SW: 8x3"]
    cps = flowemu.simulate("tree:SS24", "cps", PAPER_SIZES[:1], network=TABLE5_NET)
    assert df["time_s"].iloc[0] == pytest.approx(cps["time_s"].iloc[0], rel=1e-12)
    hc = flowemu.simulate("tree:SS24", "hcps:factors=8x3", PAPER_SIZES[1:],
                          network=TABLE5_NET)
    assert np.allclose(df["time_s"].iloc[1:], hc["time_s"], rtol=1e-12)


def test_fixed_plan_size():
    df = flowemu.simulate("tree:SS24", "gentree:at=400MB", PAPER_SIZES, network=TABLE5_NET)
    assert set(df["variant"]) == {"Root SW: 8x3"}


@pytest.mark.parametrize("spec", ["leafspine:4x4x2", "fattree:k=4", "fattree:k=8,levels=2",
                                  "tree:4x4"])
def test_runs_on_every_tree_family(spec):
    df = flowemu.simulate(spec, "gentree", "1KiB,1MiB", network=INCAST_NET)
    assert (df["time_s"] > 0).all() and df["variant"].str.len().min() > 0


def test_nonblocking_fat_tree_lanes_run_at_line_rate():
    """On a non-blocking fat tree with no α, δ, γ, every level's lanes move
    (c−1)/c of their data through links that are never shared by more than
    their fair share: the allreduce takes 2·(N−1)/N·n/B, as a flat ring does."""
    net = Network(link_latency=0, hop_latency=0)
    n = 2**24
    t = flowemu.simulate("fattree:k=4", "gentree", [n], network=net)["time_s"].item()
    N = 16
    assert t == pytest.approx(2 * (N - 1) / N * n / net.bandwidth, rel=1e-9)


# ------------------------------------------------------------------ doors and refusals

def test_plan_table_and_table6():
    df = flowemu.plan("tree:ASY384", PAPER_SIZES, network=TABLE5_NET)
    assert set(df["tier"]) == {"Middle SW", "Root SW"}
    wide = table6(df)
    assert list(wide.index) == ["Middle SW 0-7", "Middle SW 8-15", "Root SW"]
    assert (wide.loc["Root SW"].str.startswith("acps")).all()   # unequal children


@pytest.mark.parametrize("spec", ["torus:4x4", "hyperx:4x4", "dragonfly:a=2,p=1,h=1"])
def test_refuses_non_trees(spec, capsys):
    needle = f"gentree does not run on {spec} (it runs on tree, leafspine, fattree)"
    with pytest.raises(ConfigError, match=re.escape(needle)):
        flowemu.simulate(spec, "gentree", "1KiB")
    code, _, err = run(capsys, ["run", "-t", spec, "-a", "gentree", "-s", "1KiB"])
    assert code == 2 and needle in one_error_line(err)
    code, _, err = run(capsys, ["plan", "-t", spec])
    assert code == 2 and "is not a tree" in one_error_line(err)


@pytest.mark.parametrize("argv, needle", [
    (["plan", "-t", "tree:4x4", "-a", "ring"], "--algorithm"),
    (["plan", "-t", "tree:4x4", "-a", "gentree:rearrange=maybe"], "--algorithm"),
    (["plan", "-t", "tree:4x4", "-s", "big"], "--sizes"),
    (["plan", "-t", "tree:4x4", "--ranks", "99"], "ranks"),
    (["run", "-t", "tree:4x4", "-a", "gentree:at=-3", "-s", "1KiB"], "at"),
])
def test_cli_refusals(argv, needle, capsys):
    code, _, err = run(capsys, argv)
    assert code == 2 and needle in one_error_line(err)


def test_cli_plan_prints_table6(capsys):
    code, out, _ = run(capsys, ["plan", "-t", "tree:SS24", "--network", "genmodel-table5"])
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split() == ["Root", "SW", "cps", "8x3", "8x3"]
    assert lines[2].startswith("GenModel time (s)")
    code, out, _ = run(capsys, ["plan", "-t", "tree:SS24", "--candidates", "-f", "csv"])
    assert code == 0 and "candidate" in out.splitlines()[0]


def test_tree_view_of_a_fat_tree_aggregates_the_pods():
    """A pod is one node whose uplink is every agg-core link of the pod."""
    net = Network()
    view = tree_view(parse_topology("fattree:k=4"), net)
    root = view.root
    pods = view.children[root]
    assert len(pods) == 4 and all(view.servers(p) == 4 for p in pods)
    assert view.up_capacity[pods[0]] == pytest.approx(4 * net.bandwidth)
    edges = view.children[pods[0]]
    assert view.up_capacity[edges[0]] == pytest.approx(2 * net.bandwidth)


def test_plan_dataframe_columns():
    df = flowemu.plan("tree:3x2", "1MiB", flat="no")
    assert isinstance(df, pd.DataFrame)
    assert df["chosen"].sum() == 2       # one per switch class
    df = flowemu.plan("tree:3x2", "1MiB")
    assert df["chosen"].sum() == 1       # a flat baseline beats the tree plan here
    chosen = df.loc[df["chosen"]].iloc[0]
    assert chosen["candidate"].startswith("flat ") and not chosen["rearranged"]
    tree_only = flowemu.plan("tree:3x2", "1MiB", flat="no")["plan_time_s"].iloc[0]
    assert chosen["cost_s"] == chosen["plan_time_s"] < tree_only


# ------------------------------------------------------------------ the study's claims

PRESETS = ["SS24", "SS32", "SYM384", "SYM512", "ASY384", "CDC384"]


@pytest.mark.parametrize("preset", PRESETS)
def test_never_slower_than_ring_rhd_cps(preset):
    """On every preset, at sizes from 4 KB to 4 GB, the flow-level time of
    GenTree's plan is at most the best of ring, RHD (powers of two) and CPS
    timed the same way (§5.3's comparison, Table 7)."""
    spec = f"tree:{preset}"
    sizes = [4e3, 4e5, 4e6, 4e7, 12.8e7, 4e8, 4e9]
    algs = ["ring", "cps"]
    if parse_topology(spec).num_endpoints in (32, 512):
        algs.append("recdoub:variant=bandwidth")
    g = flowemu.simulate(spec, "gentree", sizes, network="genmodel-table5")["time_s"]
    best = np.min([flowemu.simulate(spec, a, sizes, network="genmodel-table5")["time_s"]
                   for a in algs], axis=0)
    assert np.all(g.to_numpy() <= best * (1 + 1e-9)), (g.to_numpy() / best)


def test_cross_datacentre_rearranges_and_genmodel_says_it_pays():
    """CDC384's cross-DC sub-tree is ACPS on rearranged data (Table 6), and
    GenModel prices GenTree below GenTree* (Table 7's GenTree vs GenTree*)."""
    df = plan("tree:CDC384", PAPER_SIZES, network=TABLE5_NET)
    cross = df[(df["switch"] == "Cross DC") & df["chosen"]]
    assert (cross["candidate"] == "acps").all() and cross["rearranged"].all()
    star = plan("tree:CDC384", PAPER_SIZES, network=TABLE5_NET, rearrange="no")
    t = df.groupby("size_bytes")["plan_time_s"].first()
    t_star = star.groupby("size_bytes")["plan_time_s"].first()
    assert (t < t_star).all()


def test_genmodel_rows_name_each_sizes_plan():
    df = flowemu.simulate("tree:SS24", "gentree", PAPER_SIZES, network=TABLE5_NET,
                          model="genmodel")
    assert df["variant"].tolist() == ["Root SW: cps", "Root SW: 8x3", "Root SW: 8x3"]
    assert df["steps"].tolist() == [2, 4, 4]
    flow = flowemu.simulate("tree:SS24", "gentree", PAPER_SIZES, network=TABLE5_NET)
    assert flow["steps"].tolist() == [2, 4, 4]


def test_genmodel_prices_a_fixed_plan_at_each_size():
    """gentree:at=400MB keeps the 8×3 plan chosen for 400 MB and prices it at
    every size: Table 2's 8×3 row at 40 MB, not the 400 MB time."""
    tier = GENTREE_TABLE5["Middle SW"]
    a = SERVER["alpha"] + 2 * tier["alpha"] + 2 * TABLE5_NET.hop_latency
    df = flowemu.simulate("tree:SS24", "gentree:at=400MB", PAPER_SIZES, network=TABLE5_NET,
                          model="genmodel")
    want = [_table2("8x3", 24, S, a, tier["beta"] / 4, TABLE5_NET.gamma, TABLE5_NET.delta,
                    tier["eps"] / 4, tier["wt"]) for S in PAPER_SIZES]
    np.testing.assert_allclose(df["time_s"], want, rtol=1e-9)
    assert set(df["variant"]) == {"Root SW: 8x3"}
    cdc = flowemu.simulate("tree:CDC384", "gentree:at=400MB", PAPER_SIZES,
                           network=TABLE5_NET, model="genmodel")["time_s"]
    assert cdc.is_monotonic_increasing and cdc.iloc[0] < cdc.iloc[-1] / 2


def test_compare_by_model_ranks_the_algorithms_both_models_timed():
    """cps timed by the flow engine only (genmodel cannot price it on two
    levels) must not be anybody's best in compare --by model."""
    from flowemu.study.results import compare_models
    rows = [flowemu.simulate("tree:2x4", a, "1KiB,1MiB", model=m)
            for a, m in (("gentree", "flow"), ("gentree", "genmodel"), ("cps", "flow"))]
    out = compare_models(pd.concat(rows, ignore_index=True))
    assert set(out["algorithm"]) == {"gentree"}
    assert (out["best_flow"] == "gentree").all() and out["same_best"].all()


def test_sweep_refuses_gentree_off_trees_before_running(tmp_path, capsys):
    cfg = tmp_path / "s.toml"
    cfg.write_text('sizes = "1MiB"\ntopology = ["torus:4x4", "tree:4x4"]\n'
                   'algorithm = ["gentree", "ring"]\n')
    code, _, err = run(capsys, ["sweep", str(cfg), "--out", str(tmp_path / "out")])
    line = one_error_line(err)
    assert code == 2 and "gentree does not run on torus:4x4" in line
    assert not (tmp_path / "out").exists()


def test_placement_other_than_linear_is_noted():
    for model in ("flow", "genmodel"):
        df = flowemu.simulate("tree:4x4", "gentree", "1MiB", placement="random:1", model=model)
        assert "chose its plan for rank r on endpoint r" in df["note"].item()
    assert flowemu.simulate("tree:4x4", "gentree", "1MiB")["note"].item() == ""


def test_plan_sizes_are_whole_bytes():
    """plan -f csv wrote size_bytes as 40000000.0; simulate's are integers."""
    df = flowemu.plan("tree:8", "40MB,1MiB")
    assert df["size_bytes"].dtype.kind == "i" and set(df["size_bytes"]) == {40_000_000, 2**20}
