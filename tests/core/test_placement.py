"""Rank placement: linear, random:SEED and files, through the API, the CLI
and sweeps, with closed-form times."""

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.core.errors import ConfigError
from flowemu.core.placement import Placement, parse_placement
from flowemu.study.results import load
from flowemu.study.sweep import sweep
from flowemu.study.sweep.config import Config, config_hash
from flowemu.topology import parse_topology
from tests.helpers.cli import one_error_line, run

B = 50e9              # 400 Gb/s in bytes/s
HOP = 100e-9 + 300e-9  # link latency + per-hop processing


def ring_time(p: int, n: float, hops: int, flows_per_link: int) -> float:
    """One-port ring allreduce on a 1-D torus: 2(p-1) steps of n/p bytes,
    every flow ``hops`` away and sharing each link with ``flows_per_link``."""
    return 2 * (p - 1) * (hops * HOP + (n / p) * flows_per_link / B)


def test_linear_is_the_default_and_reported():
    df = flowemu.simulate("torus:8", "ring:ports=1", "1MiB")
    assert df["placement"].tolist() == ["linear"]
    assert df["time_s"].iloc[0] == pytest.approx(ring_time(8, 2**20, 1, 1), rel=1e-12)


def test_file_placement_stride_three_on_a_ring(tmp_path):
    """Rank r on node 3r mod 8 of an 8-ring: every ring neighbour is 3 hops
    away in one direction, so each link carries 3 flows (closed form)."""
    path = tmp_path / "stride3.txt"
    path.write_text("# stride 3\n" + "\n".join(str(3 * r % 8) for r in range(8)) + "\n")
    df = flowemu.simulate("torus:8", "ring:ports=1", "1MiB", placement=str(path))
    assert df["placement"].tolist() == [str(path)]
    assert df["time_s"].iloc[0] == pytest.approx(ring_time(8, 2**20, 3, 3), rel=1e-12)
    # the same file with commas and a file: prefix
    path2 = tmp_path / "stride3.csv"
    path2.write_text(",".join(str(3 * r % 8) for r in range(8)))
    df2 = flowemu.simulate("torus:8", "ring:ports=1", "1MiB", placement=f"file:{path2}")
    assert df2["time_s"].iloc[0] == df["time_s"].iloc[0]


def test_reversed_placement_keeps_a_ring_of_neighbours(tmp_path):
    path = tmp_path / "rev.txt"
    path.write_text(" ".join(str(7 - r) for r in range(8)))
    df = flowemu.simulate("torus:8", "ring:ports=1", "1MiB", placement=str(path))
    assert df["time_s"].iloc[0] == pytest.approx(ring_time(8, 2**20, 1, 1), rel=1e-12)


def test_random_placement_is_the_seeded_permutation():
    topo = parse_topology("torus:4x4")
    m = parse_placement("random:5").mapping(6, topo)
    np.testing.assert_array_equal(m, np.random.default_rng(5).permutation(16)[:6])
    assert parse_placement(" random:5 ") == Placement("random", seed=5)
    assert parse_placement("random:5").text == "random:5"
    assert parse_placement(None) == parse_placement("linear") == Placement()


def test_random_placement_runs_the_mapped_flows():
    """The flow dump shows each rank on its placed endpoint."""
    mapping = np.random.default_rng(2).permutation(16)
    fl = flowemu.flows("torus:4x4", "ring:ports=1", size="1KiB", placement="random:2",
                       steps=[0])
    np.testing.assert_array_equal(fl["src_node"], mapping[fl["src"]])
    np.testing.assert_array_equal(fl["dst_node"], mapping[fl["dst"]])
    df = flowemu.simulate("torus:4x4", "ring:ports=1", "1MiB", placement="random:2")
    lin = flowemu.simulate("torus:4x4", "ring:ports=1", "1MiB")
    assert df["placement"].iloc[0] == "random:2"
    assert df["time_s"].iloc[0] > lin["time_s"].iloc[0]   # scattered neighbours are farther


def test_placement_with_fewer_ranks_and_traffic(tmp_path):
    df = flowemu.simulate("torus:4x4", "ring:ports=1", "1MiB", ranks=4, placement="random:1")
    assert (df["ranks"].iloc[0], df["placement"].iloc[0]) == (4, "random:1")
    path = tmp_path / "p.txt"
    path.write_text("0 5")
    traffic = pd.DataFrame({"step": [0], "src": [0], "dst": [1], "bytes": [1e6]})
    row = flowemu.time_traffic("torus:16", traffic, placement=str(path), hop_latency=0,
                               link_latency=0)
    # rank 1 sits 5 hops away on a 16-ring: one flow at full rate, shortest way
    assert row["time_s"].iloc[0] == pytest.approx(1e6 / B, rel=1e-12)
    assert row["placement"].iloc[0] == str(path)
    cong, summary = flowemu.congestion("torus:4x4", "ring:ports=1", placement="random:1")
    assert len(summary) == 1 and len(cong) > 0


@pytest.mark.parametrize("text, words", [
    ("", "empty"), ("random:", "not an integer"), ("random:-1", "not an integer"),
    ("random:x", "random:SEED"), ("no/such/file.txt", "no such file"), ("file:", "no file"),
])
def test_bad_placement_text(text, words):
    with pytest.raises(ConfigError, match="placement") as e:
        flowemu.simulate("torus:8", "ring", "1KiB", placement=text)
    assert words in str(e.value)


def test_bad_placement_values():
    with pytest.raises(ConfigError, match="placement: 3 is not allowed"):
        flowemu.simulate("torus:8", "ring", "1KiB", placement=3)
    with pytest.raises(ConfigError, match="do not fit"):
        Placement("random", seed=1).mapping(9, parse_topology("torus:8"))


@pytest.mark.parametrize("body, words", [
    ("0 1 2", "lists 3 endpoint ids; expected exactly one per rank (8)"),
    ("0 1 2 3 4 5 6 8", "entry 7 is endpoint 8"),
    ("0 1 2 3 4 5 6 6", "ranks 6 and 7 are both placed on endpoint 6"),
    ("0 1 2\n3 x", "line 2: 'x' is not an endpoint id"),
    ("0 1 2 3 4 5 6 -7", "'-7' is not an endpoint id"),
])
def test_impossible_placement_files(tmp_path, body, words):
    path = tmp_path / "p.txt"
    path.write_text(body)
    with pytest.raises(ConfigError) as e:
        flowemu.simulate("torus:8", "ring", "1KiB", placement=str(path))
    assert words in str(e.value) and str(path) in str(e.value)


def test_cli_placement(tmp_path, capsys):
    code, out, err = run(capsys, ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB",
                                  "--placement", "random:3", "-f", "csv"])
    assert code == 0 and "random:3" in out
    code, out, err = run(capsys, ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB",
                                  "--placement", "random:3"])
    assert code == 0 and out.splitlines()[0].split()[:2] == ["topology", "placement"]
    assert "random:3" in out.splitlines()[1]
    code, out, err = run(capsys, ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB"])
    assert code == 0 and "placement" not in out
    path = tmp_path / "bad.txt"
    path.write_text("0 0")
    code, out, err = run(capsys, ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB",
                                  "--ranks", "2", "--placement", str(path)])
    assert code == 2 and "both placed on endpoint 0" in one_error_line(err)
    code, out, err = run(capsys, ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1KiB",
                                  "--placement", "random:1", "--placement", "random:2"])
    assert code == 2 and "--placement" in one_error_line(err)


SWEEP = """
sizes = "1KiB,1MiB"
topology = "torus:4x4"
algorithm = "ring:ports=1"
placement = ["linear", "random:1", "random:2"]
"""


def test_sweep_placement_field(tmp_path):
    path = tmp_path / "pl.toml"
    path.write_text(SWEEP)
    out = tmp_path / "d"
    summary = sweep(path, out, jobs=1, progress=False)
    assert (summary.total, summary.failed) == (3, 0)
    df = load(out)
    assert sorted(set(df["placement"])) == ["linear", "random:1", "random:2"]
    direct = flowemu.simulate("torus:4x4", "ring:ports=1", "1KiB,1MiB", placement="random:2")
    got = df[df["placement"] == "random:2"].sort_values("size_bytes")
    np.testing.assert_array_equal(got["time_s"].to_numpy(), direct["time_s"].to_numpy())
    assert any("placement=random:2" in k for k in df["config_key"])
    assert not any("placement" in k for k in df[df["placement"] == "linear"]["config_key"])


def test_linear_configuration_keeps_its_identity():
    """Datasets written before placement existed keep their configuration
    hashes: a linear configuration hashes as it did without the field."""
    cfg = Config(sweep="s", group="g", topology="torus:4x4", algorithm="ring", label="ring",
                 ranks=None, sizes=(1024,), bandwidth=5e10, link_latency=1e-7,
                 hop_latency=3e-7, alpha=0.0, gamma=0.0, delta=0.0,
                 incast_threshold=float("inf"), incast_slope=0.0, ecmp="split", seed=0)
    canon = cfg.canonical()
    assert "placement" not in canon
    moved = Config(**{**cfg.__dict__, "placement": "random:1"})
    assert config_hash(moved.canonical()) != config_hash(canon)


def test_sweep_bad_placement_is_reported(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(SWEEP.replace('"random:2"]', '"random:x", "nofile.txt"]'))
    code, _out, err = run(capsys, ["sweep", str(path), "-o", str(tmp_path / "d"), "-q"])
    assert code == 2
    assert "placement[2]" in err and "placement[3]" in err and "Traceback" not in err


def test_sweep_checks_placement_files_before_running(tmp_path, capsys, no_work):
    """A placement file that does not fit a configuration (wrong count, a
    duplicate) is reported with every other problem of the file, before any
    configuration runs."""
    four = tmp_path / "four.txt"
    four.write_text("0 1 2 3")
    dup = tmp_path / "dup.txt"
    dup.write_text(" ".join(["0", "1", "1"] + [str(i) for i in range(3, 16)]))
    path = tmp_path / "fit.toml"
    path.write_text(f'sizes = "1KiB"\ntopology = "torus:4x4"\nalgorithm = "ring"\n'
                    f'ranks = [4, 16]\nplacement = ["{four}", "{dup}"]\n')
    code, _, err = run(capsys, ["sweep", str(path), "-o", str(tmp_path / "d"), "-q"])
    assert code == 2 and "Traceback" not in err
    assert "3 problems" in err
    assert "'four.txt'" not in err   # paths are shown whole
    assert f"placement '{four}': the file lists 4 endpoint ids; expected exactly one per rank " \
           "(16) (on torus:4x4, 16 ranks)" in err
    assert f"placement '{dup}': ranks 1 and 2 are both placed on endpoint 1" in err
    assert f"placement '{dup}': the file lists 16 endpoint ids; expected exactly one per " \
           "rank (4)" in err
    assert not (tmp_path / "d").exists()


def test_editing_a_placement_or_graph_file_makes_new_configurations(tmp_path):
    """A configuration read from a file is identified by the file's contents:
    after an edit the sweep computes it again instead of reusing stale rows."""
    import shutil
    place = tmp_path / "p.txt"
    place.write_text(" ".join(str(i) for i in range(4)))
    graph = tmp_path / "g.toml"
    shutil.copy("configs/graphs/two-sites.toml", graph)
    path = tmp_path / "f.toml"
    path.write_text(f'sizes = "1MiB"\nalgorithm = "ring"\n[groups.t]\ntopology = "torus:4x4"\n'
                    f'ranks = 4\nplacement = "{place}"\n[groups.g]\n'
                    f'topology = "graph:{graph}"\n')
    out = tmp_path / "d"
    first = sweep(path, out, jobs=1, progress=False)
    assert (first.computed, first.failed) == (2, 0)
    again = sweep(path, out, jobs=1, progress=False)
    assert (again.computed, again.skipped) == (0, 2)
    place.write_text("0 5 10 15")      # ranks spread over the torus
    graph.write_text(graph.read_text().replace('"100Gb/s"', '"10Gb/s"'))
    edited = sweep(path, out, jobs=1, progress=False, prune=True)
    assert edited.computed == 2
    df = load(out)
    assert len(df) == 2
    torus_row = df[df["group"] == "t"].iloc[0]
    direct = flowemu.simulate("torus:4x4", "ring", "1MiB", ranks=4, placement=str(place))
    assert torus_row["time_s"] == direct["time_s"].iloc[0]
    graph_row = df[df["group"] == "g"].iloc[0]
    assert graph_row["time_s"] == flowemu.simulate(f"graph:{graph}", "ring",
                                                   "1MiB")["time_s"].iloc[0]
