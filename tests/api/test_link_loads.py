"""flowemu.link_loads() and ``run --links``/``--links-plot``: loads against
closed forms and hand-counted paths, utilisation, names, the CLI's file."""

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu import ConfigError
from flowemu.algorithms.base import Traffic
from flowemu.api import linkloads
from flowemu.api.linkloads import LINK_COLUMNS
from flowemu.api.linknames import link_names
from flowemu.cli.app import main
from flowemu.core.network import Network
from flowemu.engine.linkloads import pattern_load
from flowemu.engine.profiles import make_context
from flowemu.topology import parse_topology

FAST = {"bandwidth": "8Gb/s", "link_latency": "0ns", "hop_latency": "0ns"}   # 1e9 B/s


def one_step(spec, src, dst, share, ecmp):
    """The PatternLoad of one step of hand-made flows."""
    topo = parse_topology(spec)
    ctx = make_context(topo, Network.from_si(bandwidth=1e9), ecmp)
    tr = Traffic(np.asarray(src, np.int32), np.asarray(dst, np.int32),
                 np.asarray(share, np.float64))
    return topo, pattern_load(ctx, tr)


def test_ring_on_a_ring_loads_one_pth_of_n_per_link_in_its_direction():
    p = 8
    df = flowemu.link_loads(f"torus:{p}", "ring:ports=1", **FAST)
    assert list(df.columns) == LINK_COLUMNS
    # 2(p-1) steps; each rank sends n/p to its ring neighbour: p links, one direction
    assert df["step"].nunique() == 2 * (p - 1)
    assert (df.groupby("step").size() == p).all()
    assert df["direction"].astype(str).nunique() == 1
    np.testing.assert_allclose(df["bytes_per_n"], 1 / p, rtol=1e-12)
    assert (df["flows"] == 1).all()
    # alone on its link, each flow runs at capacity for the whole step
    np.testing.assert_allclose(df["utilisation"], 1.0, rtol=1e-12)
    np.testing.assert_allclose(df["step_fluid_s_per_B"], 1 / p / 1e9, rtol=1e-12)
    np.testing.assert_allclose(df["capacity_Bps"], 1e9)


def test_a_single_flow_loads_exactly_the_links_of_its_path():
    # torus:4x4, (0,0) -> (1,1) by dimension order: +x to (1,0), then +y to (1,1)
    topo, load = one_step("torus:4x4", [0], [5], [1.0], "dor")
    first = int(topo.link_id(0, 0, 1))    # node 0, dimension 0 (x), + direction
    second = int(topo.link_id(4, 1, 1))   # node 4 = (1,0), dimension 1 (y), +
    assert sorted(load.link.tolist()) == sorted([first, second])
    np.testing.assert_allclose(load.load, 1.0)
    assert load.flows.tolist() == [1, 1]
    np.testing.assert_allclose(load.fluid_spb, 1e-9)   # 1 byte per byte of n at 1e9 B/s


@pytest.mark.parametrize("dst", [2, 6, 10])
def test_split_ecmp_loads_of_a_flow_sum_to_hops_times_share(dst):
    # (0,0) -> (0,2) is d/2 away: half each way; (1,2), (2,2): many minimal paths
    topo = parse_topology("torus:4x4")
    share = 0.75
    _, load = one_step("torus:4x4", [0], [dst], [share], "split")
    hops = int(topo.distance([0], [dst])[0])
    assert load.load.sum() == pytest.approx(hops * share, rel=1e-12)
    assert (load.load <= share + 1e-15).all() and (load.flows == 1).all()


def test_utilisation_is_one_on_the_bottleneck_and_relative_elsewhere():
    # two flows on disjoint links: the step lasts as long as the bigger one
    _, load = one_step("torus:4x4", [0, 8], [1, 9], [1.0, 0.25], "dor")
    topo = parse_topology("torus:4x4")
    capacity = 1e9
    util = load.load / (capacity * load.fluid_spb)
    by_link = dict(zip(load.link.tolist(), util.tolist(), strict=True))
    assert by_link[int(topo.link_id(0, 1, 1))] == pytest.approx(1.0)
    assert by_link[int(topo.link_id(8, 1, 1))] == pytest.approx(0.25)


def test_the_busiest_link_of_every_step_is_the_congestion_reports():
    steps, _ = flowemu.congestion("torus:8x8", "recdoub:variant=bandwidth", **FAST)
    df = flowemu.link_loads("torus:8x8", "recdoub:variant=bandwidth", **FAST)
    busiest = df.groupby("step")["bytes_per_n"].max().to_numpy()
    np.testing.assert_allclose(busiest, steps["max_link_load"], rtol=1e-12)
    flows = df.groupby("step")["flows"].max().to_numpy()
    np.testing.assert_array_equal(flows, steps["max_flows_per_link"])
    # some link is the bottleneck of every step, none is over capacity
    top = df.groupby("step")["utilisation"].max()
    np.testing.assert_allclose(top, 1.0, rtol=1e-9)


def test_steps_variants_and_names():
    df = flowemu.link_loads("torus:4x4", "recdoub:variant=auto", steps="0,rs1", **FAST)
    assert set(df["variant"].astype(str)) == {"latency", "bandwidth"}
    assert set(df["step"]) == {0, 1}
    row = df[df["link"] == 0].iloc[0]
    assert (row["name"], row["tier"], row["direction"]) == ("0,0 +x", "x", "+")
    assert (row["src_node"], row["dst_node"]) == (0, 4)


def test_steps_no_variant_has_are_refused_naming_every_variants_steps(tmp_path, capsys):
    # recdoub on 16 ranks: latency 4 steps (x0..x3), bandwidth 8 (rs0..ag3); the
    # message gave the latency variant's range alone
    with pytest.raises(ConfigError, match=r"steps: '0-20' is a step of no variant \(latency: "
                                          r"steps 0\.\.3 \(x0\.\.x3\); bandwidth: steps "
                                          r"0\.\.7 \(rs0\.\.ag3\)\)"):
        flowemu.link_loads("torus:4x4", "recdoub:variant=auto", steps="0-20", **FAST)
    # the command refuses them before it times anything (no result file)
    out = tmp_path / "r.csv"
    code = main(["run", "-t", "torus:4x4", "-a", "recdoub", "-s", "1MiB", "--links",
                 str(tmp_path / "l.csv"), "--links-steps", "0-20", "-o", str(out)])
    assert code == 2 and "--links-steps: '0-20' is a step of no variant" in \
        capsys.readouterr().err
    assert not out.exists()


def test_tree_tiers_and_directions():
    topo = parse_topology("fattree:k=4")
    name, tier, direction = link_names(topo, np.arange(topo.num_links))
    up = (tier == "host-edge") & (direction == "up")
    assert up.sum() == topo.num_endpoints   # one uplink per host
    assert set(tier) == {"host-edge", "edge-agg", "agg-core"}
    host0 = np.flatnonzero(np.asarray(topo.link_src) == 0)[0]
    assert name[host0] == "host:0>edge:0"


def test_the_table_is_refused_beyond_the_memory_limit(monkeypatch):
    monkeypatch.setattr(linkloads, "ROW_BYTES", 1 << 40)
    with pytest.raises(ConfigError, match="link table of torus:4x4 ring"):
        flowemu.link_loads("torus:4x4", "ring", **FAST)


def test_unknown_keyword_is_named():
    with pytest.raises(ConfigError, match="link_loads: unknown keyword"):
        flowemu.link_loads("torus:4x4", "ring", sizes="1MiB")


# ------------------------------------------------------------------- the CLI

@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_cli_writes_the_api_table(tmp_path, capsys, ext):
    out = tmp_path / f"links.{ext}"
    png = tmp_path / "links.png"
    code = main(["run", "-t", "torus:4x4", "-a", "swing:variant=bandwidth", "-s", "1MiB",
                 "--bandwidth", "8Gb/s", "--link-latency", "0ns", "--hop-latency", "0ns",
                 "--links", str(out), "--links-plot", str(png)])
    assert code == 0, capsys.readouterr().err
    got = pd.read_csv(out) if ext == "csv" else pd.read_parquet(out)
    want = flowemu.link_loads("torus:4x4", "swing:variant=bandwidth", **FAST)
    assert list(got.columns) == LINK_COLUMNS and len(got) == len(want)
    for col in LINK_COLUMNS:
        a, b = got[col], want[col]
        if b.dtype.kind == "f":
            np.testing.assert_allclose(a.to_numpy(float), b.to_numpy(float), rtol=1e-12)
        else:
            assert a.astype(str).tolist() == b.astype(str).tolist(), col
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(("argv", "message"), [
    (["--links", "x.txt"], "--links: .*cannot write table"),
    (["--links-plot", "x.csv"], "--links-plot: .*should end in .png"),
    (["--links-steps", "0"], "--links-steps: applies only with --links"),
    # a file named '-' was written (--congestion - prints; these tables are files')
    (["--links", "-"], "--links: '-' is not allowed; give a file name"),
    (["--flows-out", "-"], "--flows-out: '-' is not allowed; give a file name"),
    # the result table's --format is no answer for the links' file
    (["--links", "x.dat", "--format", "csv"], (r"--links: cannot tell the format of 'x.dat' "
                                              r"from its extension '.dat'; use .csv, .parquet, "
                                              r".pq$")),
    (["--links", "x.csv", "--model", "genmodel"], "--links: works with --model flow"),
])
def test_cli_refusals(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code = main(["run", "-t", "torus:4x4", "-a", "ring", "-s", "1MiB", *argv])
    assert code == 2
    assert pytest.importorskip("re").search(message, capsys.readouterr().err)


def test_traffic_loads_are_its_bytes_and_its_steps_fluid_seconds():
    """A user's traffic carries its own bytes (n is one byte): two flows on
    separate links in step 0 (4 MB and 2 MB) and one in step 1 (1 MB), each
    alone on its one link at 50 GB/s: the step's fluid time is its largest
    flow over the bandwidth, a link's utilisation its bytes over what it
    could carry in that time, and the steps' times add up to time_traffic's
    without latencies."""
    tr = pd.DataFrame({"step": [0, 0, 1], "src": [0, 1, 2], "dst": [1, 2, 3],
                       "bytes": [4e6, 2e6, 1e6]})
    got = flowemu.link_loads("torus:4x4", traffic=tr, **FAST)
    assert list(got.columns) == LINK_COLUMNS
    assert got["variant"].astype(str).tolist() == ["traffic"] * 3
    assert got["step"].tolist() == [0, 0, 1] and got["flows"].tolist() == [1, 1, 1]
    assert got["bytes_per_n"].tolist() == [4e6, 2e6, 1e6]
    np.testing.assert_allclose(got["step_fluid_s_per_B"], [4e6 / 1e9] * 2 + [1e6 / 1e9],
                               rtol=1e-12)
    np.testing.assert_allclose(got["utilisation"], [1.0, 0.5, 1.0], rtol=1e-12)
    alone = flowemu.time_traffic("torus:4x4", tr, **FAST, alpha=0)["time_s"].iloc[0]
    assert abs(got.groupby("step")["step_fluid_s_per_B"].first().sum() - alone) <= 1e-12 * alone


def test_traffic_refusals():
    tr = pd.DataFrame({"step": [0], "src": [0], "dst": [1], "bytes": [1e6]})
    for kw, needle in (({}, "give exactly one of algorithm= and traffic="),
                       ({"algorithm": "ring", "traffic": tr}, "give exactly one"),
                       ({"traffic": tr, "ranks": 4}, "ranks: applies to an algorithm"),
                       ({"traffic": tr, "collective": "alltoall"},
                        "collective: applies to an algorithm"),
                       ({"traffic": tr, "fail": "0,0-1,0", "fail_policy": "reroute"},
                        "fail_policy: 'reroute' applies to an algorithm's schedule")):
        with pytest.raises(ConfigError, match=needle):
            flowemu.link_loads("torus:4x4", **kw)


def test_cli_writes_the_links_of_traffic(tmp_path, capsys):
    traffic = tmp_path / "t.csv"
    traffic.write_text("step,src,dst,bytes\n0,0,1,4000000\n0,1,2,2000000\n1,2,3,1000000\n")
    out = tmp_path / "l.csv"
    code = main(["run", "-t", "torus:4x4", "--traffic", str(traffic), "--bandwidth", "400Gb/s",
                 "--links", str(out), "--links-plot", str(tmp_path / "l.png")])
    assert code == 0, capsys.readouterr().err
    got = pd.read_csv(out)
    want = flowemu.link_loads("torus:4x4", traffic=str(traffic), bandwidth="400Gb/s")
    assert got["variant"].tolist() == ["t.csv"] * 3
    np.testing.assert_allclose(got["bytes_per_n"], want["bytes_per_n"], rtol=1e-12)
    np.testing.assert_allclose(got["utilisation"], want["utilisation"], rtol=1e-12)
    code = main(["run", "-t", "torus:4x4", "--traffic", str(traffic), "--congestion", "-"])
    assert code == 2
    assert "--congestion works with --algorithm, not --traffic" in capsys.readouterr().err


def test_heat_map_refuses_too_many_steps(tmp_path):
    from flowemu.study.figures.links import plot_links

    df = flowemu.link_loads("torus:4x4", "ring:ports=1", **FAST)   # 30 steps
    with pytest.raises(ConfigError, match="at most 16"):
        plot_links(df, "torus:4x4", tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
    tiers = flowemu.link_loads("fattree:k=4", "ring", **FAST)
    assert plot_links(tiers, "fattree:k=4", tmp_path / "t.png").stat().st_size > 0


def test_tiers_run_from_the_hosts_up_on_trees_and_dragonflies():
    tree = parse_topology("tree:4x4")   # depth0 is the root, so depth1 sits below it
    _, tier, direction = link_names(tree, np.arange(tree.num_links))
    src = np.asarray(tree.link_src)
    assert set(tier) == {"host-depth1", "depth1-depth0"}
    assert (direction[src < tree.num_endpoints] == "up").all()
    fly = parse_topology("dragonfly:a=4,p=2,h=2")
    _, tier, _ = link_names(fly, np.arange(fly.num_links))
    assert {"host-router", "local", "global"} == set(tier)


def test_links_plot_alone_writes_only_the_figure(tmp_path, capsys):
    png = tmp_path / "l.png"
    code = main(["run", "-t", "tree:4x4", "-a", "ring", "-s", "1MiB", "--links-plot", str(png)])
    assert code == 0, capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["l.png"]


def test_a_faulted_topology_keeps_its_familys_link_names():
    """Names, tiers and directions came from a generic fallback as soon as one
    link was failed or degraded ('0,0>3,0 x +' for the wrap-around link
    0,0 -x; 'node:0>node:16', tier 'link' on a fat tree)."""
    tr = pd.DataFrame({"step": [0, 0], "src": [0, 0], "dst": [12, 3], "bytes": [1e6, 1e6]})
    cols = ["link", "name", "tier", "direction"]
    healthy = flowemu.link_loads("torus:4x4", traffic=tr)[cols]
    degraded = flowemu.link_loads("torus:4x4", traffic=tr, degrade="link:40=0.5")[cols]
    pd.testing.assert_frame_equal(degraded, healthy)
    assert healthy["name"].astype(str).tolist() == ["0,0 -x", "0,0 -y"]
    failed = flowemu.link_loads("fattree:k=4", "ring", fail="core:0", steps="0")
    ups = failed[failed["name"].astype(str).str.startswith("host:")]
    assert len(ups) and set(ups["tier"].astype(str)) == {"host-edge"} \
        and set(ups["direction"].astype(str)) == {"up"}
