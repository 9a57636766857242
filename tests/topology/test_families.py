"""Every registered topology family, through one door: its documented
example parses, re-parses from its canonical spec, pickles, routes every
mode it declares, and runs every algorithm (issue: every existing algorithm
runs on every topology)."""

import pickle
import re
from pathlib import Path

import numpy as np
import pytest

import flowemu
from flowemu.algorithms import algorithm_names
from flowemu.core.errors import ConfigError
from flowemu.topology import MODE_DOCS, parse_topology, topology_families, topology_modes
from tests.helpers.maxmin_oracle import completion, csr_to_lists

FAMILIES = sorted(topology_families())
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    """Examples name files as a user at the repository's root does
    (graph:configs/graphs/...)."""
    monkeypatch.chdir(ROOT)


def example(family: str) -> str:
    """The first ``e.g.`` spec of the family's ``flowemu list`` line."""
    m = re.search(r"e\.g\. (" + re.escape(family) + r":[^\s;]+?)(?:,? |$|;)",
                  topology_families()[family])
    assert m, f"{family}: its list line gives no example spec (e.g. {family}:...)"
    return m.group(1)


@pytest.mark.parametrize("family", FAMILIES)
def test_example_parses_and_round_trips(family):
    topo = parse_topology(example(family))
    # a preset family (hx2mesh) names its network in the family it presets
    assert topo.spec.split(":")[0] in FAMILIES
    assert parse_topology(topo.spec) == topo
    again = pickle.loads(pickle.dumps(topo))
    assert again == topo and again.num_links == topo.num_links
    np.testing.assert_array_equal(again.link_src, topo.link_src)
    assert tuple(topo.ecmp_modes) == topology_modes()[family]
    assert tuple(topo.ecmp_modes) == topology_modes()[topo.spec.split(":")[0]]
    assert topo.ecmp_modes[0] == "split"
    assert all(m in MODE_DOCS for m in topo.ecmp_modes)
    assert topo.num_endpoints >= 2 and topo.describe()


@pytest.mark.parametrize("family", FAMILIES)
def test_modes_route_every_pair_and_refuse_the_others(family):
    topo = parse_topology(example(family))
    n = min(topo.num_endpoints, 24)
    src, dst = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n)))
    for mode in topo.ecmp_modes:
        routes = topo.route(src, dst, mode)
        assert routes.num_flows == len(src)
        assert np.all((routes.hops == 0) == (src == dst))
        assert np.all(routes.frac > 0) and np.all(routes.frac <= 1 + 1e-12)
        assert topo.route_entries(src, dst, mode) == routes.num_entries
        worst = topo.max_route_entries(mode)
        if worst is not None:
            assert np.diff(routes.flow_ptr).max() <= worst
        # every flow leaves its source and enters its destination in full
        out = np.zeros(len(src))
        into = np.zeros(len(src))
        flow = np.repeat(np.arange(len(src)), np.diff(routes.flow_ptr))
        np.add.at(out, flow, np.where(topo.link_src[routes.link] == src[flow],
                                      routes.frac, 0.0))
        np.add.at(into, flow, np.where(topo.link_dst[routes.link] == dst[flow],
                                       routes.frac, 0.0))
        moving = src != dst
        np.testing.assert_allclose(out[moving], 1.0, rtol=1e-12)
        np.testing.assert_allclose(into[moving], 1.0, rtol=1e-12)
    for mode in set(MODE_DOCS) - set(topo.ecmp_modes):
        with pytest.raises(ConfigError, match=f"ecmp: '{mode}'"):
            topo.route(src[:1], dst[:1], mode)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("algorithm", algorithm_names())
def test_every_algorithm_runs(family, algorithm):
    spec = example(family)
    topo = parse_topology(spec)
    ranks = min(topo.num_endpoints, 16)
    if algorithm in ("gentree", "ina") and family not in ("tree", "leafspine", "fattree"):
        # GenTree plans on trees only (§4.2), in-network aggregation needs switches
        # that aggregate; the others are refused by name
        with pytest.raises(ConfigError, match=f"{algorithm} does not run on"):
            flowemu.simulate(spec, algorithm, "1KiB,1MiB", ranks=ranks)
        return
    df = flowemu.simulate(spec, algorithm, "1KiB,1MiB", ranks=ranks)
    assert len(df) == 2 and (df["time_s"] > 0).all() and np.isfinite(df["time_s"]).all()
    assert (df["topology"] == topo.spec).all()
    # a bigger vector never takes less time
    assert df["time_s"].iloc[1] > df["time_s"].iloc[0]


@pytest.mark.parametrize("family", FAMILIES)
def test_engine_agrees_with_the_oracle_in_every_mode(family):
    """Random flows of random sizes on the family's example: the engine's
    time equals the pure-Python max-min oracle's slowest finish on the same
    routes, plus the flow's latency (α + hops·hop latency + the link
    latencies along its path)."""
    import pandas as pd

    from flowemu.core.network import Network

    topo = parse_topology(example(family))
    rng = np.random.default_rng(7)
    n = topo.num_endpoints
    src = rng.integers(0, n, 30)
    dst = (src + rng.integers(1, n, 30)) % n
    nbytes = rng.integers(1, 10, 30) * 1e5
    net = Network(alpha="1us")
    # rank ids are endpoint ids (linear placement)
    traffic = pd.DataFrame({"step": 0, "src": src, "dst": dst, "bytes": nbytes})
    for mode in topo.ecmp_modes:
        routes = topo.route(src, dst, mode)
        cap = topo.link_capacity(net)
        _, finish, status = completion(csr_to_lists(routes.flow_ptr, routes.link, routes.frac),
                                       list(cap), list(nbytes))
        assert status == 0
        lat = topo.link_latency(net)
        flow = np.repeat(np.arange(30), np.diff(routes.flow_ptr))
        mean = np.bincount(flow, weights=routes.frac * lat[routes.link], minlength=30)
        # the largest over the ECMP paths (each family checks its own against
        # enumerated paths); never below the split-weighted mean, equal to it
        # on a single path
        path = topo.path_latency(routes, lat)
        assert np.all(path >= mean * (1 - 1e-12))
        if mode == "hash":
            np.testing.assert_allclose(path, mean, rtol=1e-12)
        expect = np.max(net.alpha + routes.hops * net.hop_latency + path + np.array(finish))
        got = flowemu.time_traffic(topo, traffic, ecmp=mode, network=net)["time_s"].iloc[0]
        assert got == pytest.approx(expect, rel=1e-9), mode


def test_split_specs_keeps_each_specs_options():
    from flowemu.topology import split_specs
    text = "hx2mesh:4x4, torus:8x8,leafspine:8x4x2,uplinks=2,tree:dc(2x4)+dc(4),lat=30ms::"
    assert split_specs(text, canonical=False) == [
        "hx2mesh:4x4", "torus:8x8", "leafspine:8x4x2,uplinks=2", "tree:dc(2x4)+dc(4),lat=30ms::"]
    assert split_specs(text)[0] == "hammingmesh:2x2,4x4"
    assert split_specs("torus:8x8,nosuch:3") == ["torus:8x8", "nosuch:3"]


def test_plot_selects_specs_with_options(tmp_path, capsys):
    import pandas as pd

    from flowemu.cli.app import main
    frames = [flowemu.simulate(spec, "ring", "1KiB,1MiB") for spec in
              ("leafspine:2x2x2,uplinks=2", "hx2mesh:2x2", "torus:4x4")]
    data = tmp_path / "rows.parquet"
    pd.concat(frames, ignore_index=True).to_parquet(data)
    out = tmp_path / "f.png"
    code = main(["plot", str(data), "--topology", "leafspine:2x2x2,uplinks=2,hx2mesh:2x2",
                 "--out", str(out)])
    assert code == 0 and out.stat().st_size > 0, capsys.readouterr().err
    code = main(["plot", str(data), "--topology", "leafspine:2x2x2,uplinks=3",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "leafspine:2x2x2,uplinks=3 not in the data" in err


@pytest.mark.parametrize("spec", ["fattree:k=4", "tree:16", "dragonfly:a=2,p=2,h=1,g=2"])
def test_grid_algorithms_say_they_run_on_rank_ids_without_a_grid(spec):
    """Bucket on rank ids is the ring: a user comparing them sees why."""
    note = f"{parse_topology(spec).spec} offers no node grid: ranks form a 1-D ring of rank ids"
    for alg in ("bucket", "swing", "recdoub:layout=torus"):
        assert flowemu.simulate(spec, alg, "1MiB")["note"].iloc[0] == note, alg
    for alg in ("ring", "recdoub", "recdoub:layout=linear"):   # 1-D by design
        assert flowemu.simulate(spec, alg, "1MiB")["note"].iloc[0] == "", alg
    # a topology with a grid gives it to them, without a note
    assert flowemu.simulate("hyperx:4x4", "bucket", "1MiB")["note"].iloc[0] == ""
