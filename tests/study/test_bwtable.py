"""Bandwidth tables (``flowemu global TABLE``, :mod:`flowemu.study.bwtable`):
the global, shift all-to-all and allreduce columns on instances worked by
hand, and table files that are refused."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from flowemu.core.errors import ConfigError
from flowemu.core.network import Network
from flowemu.study.bwtable import bandwidth_table, read_table, shift_alltoall
from flowemu.topology import parse_topology
from tests.helpers.cli import one_error_line, run
from tests.helpers.processes import REPO_ROOT

TABLE = """
description = "two rows worked by hand"
link_latency = "20ns"

[[rows]]
cluster = "tiny"
name = "ring of 4"
topology = "torus:4"
bandwidth = "400Gb/s"
shift = true
paper_global = 0.7

[[rows]]
name = "leaf-spine"
topology = "leafspine:4x3x2"
bandwidth = "400Gb/s"
allreduce = "ring:ports=1"
paper_allreduce = 1.0
"""


def test_shift_alltoall_on_a_ring_of_four():
    # step 1: every node sends one hop +, step 3 one hop −, step 2 two hops, half
    # each way (each link then carries two halves): every step takes b/C, so each
    # node sends 3b in 3b/C: the link rate C
    rate = shift_alltoall("torus:4", network=Network(bandwidth="400Gb/s"))
    assert rate == pytest.approx(50e9, rel=1e-12)


def test_table_columns_worked_by_hand(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(TABLE)
    df = bandwidth_table(path)
    ring, ls = df.iloc[0], df.iloc[1]
    # the ring of 4 at once: a + link carries 1 (dx = 1) + 1 (two halves of dx = 2)
    # = 2 messages; 3 messages in the time of 2 over 2 links: 0.75; one shift after
    # another: C over 2C
    assert ring["global"] == pytest.approx(0.75, rel=1e-12)
    assert ring["global_shift"] == pytest.approx(0.5, rel=1e-12)
    assert (ring["cluster"], ring["name"], ring["paper_global"]) == ("tiny", "ring of 4", 0.7)
    assert pd.isna(ring["allreduce"])
    # ring allreduce on 12 hosts of one link each: 2(p − 1) steps of n/p at the link
    # rate C, so n/T = pC/(2(p − 1)): p/(p − 1) = 12/11 of the optimum C/2
    assert ls["allreduce"] == pytest.approx(12 / 11, rel=1e-9)
    assert ls["global"] == pytest.approx(11 / 13.5, rel=1e-12)
    assert pd.isna(ls["global_shift"])


@pytest.mark.parametrize("row, message", [
    ('topology = "torus:4"\ncolour = 1', "unknown key"),
    ('name = "x"', "no topology"),
    ('topology = "hyperx:4x4"\nnic = "1Tb/s"\nshift = true', "shift = true with a nic"),
    ('topology = "torus:4"\nallreduce_sizes = ["1GiB", "1GiB"]', "two equal sizes"),
    ('topology = "torus:4"\npaper_global = "25%"', "is not a number"),
])
def test_bad_rows_are_named(tmp_path, row, message):
    path = tmp_path / "bad.toml"
    path.write_text(f"[[rows]]\n{row}\n")
    with pytest.raises(ConfigError, match=message) as err:
        read_table(path)
    assert "rows[0]" in str(err.value)


def test_command_line(tmp_path, capsys):
    path = tmp_path / "t.toml"
    path.write_text(TABLE)
    code, out, _ = run(capsys, ["global", str(path), "--format", "csv"])
    assert code == 0
    df = pd.read_csv(io.StringIO(out))
    assert list(df["name"]) == ["ring of 4", "leaf-spine"]
    assert df["global"].iloc[0] == pytest.approx(0.75)
    code, out, _ = run(capsys, ["global", "-t", "torus:4x4", "--format", "csv"])
    assert code == 0
    assert pd.read_csv(io.StringIO(out))["global_bw"].iloc[0] == pytest.approx(15 / 32)
    code, out, err = run(capsys, ["global"])
    assert code == 2 and "table file or --topology" in one_error_line(err)
    code, out, err = run(capsys, ["global", str(path), "--nic", "1Tb/s"])
    assert code == 2 and "--nic" in one_error_line(err)


@pytest.mark.parametrize("where", ["repository", "elsewhere"])
def test_the_table2_file_reads_and_builds(monkeypatch, tmp_path, where):
    # configs/tables/hammingmesh-table2.toml: every row checks, and its networks are the
    # sizes the paper gives (App. C-1); its graph files are named beside it, so it
    # reads from any directory (they were read from the current one: the help's
    # example failed outside the repository)
    monkeypatch.chdir(REPO_ROOT if where == "repository" else tmp_path)
    _, rows = read_table(REPO_ROOT / "configs/tables/hammingmesh-table2.toml")
    small = [r for r in rows if r["cluster"] == "small"]
    large = [r for r in rows if r["cluster"] == "large"]
    assert len(small) + len(large) == len(rows)
    sizes = {r["name"]: parse_topology(r["topology"]).num_endpoints for r in small}
    assert sizes == {"nonbl. FT": 1024, "50% tap. FT": 1050, "75% tap. FT": 1071,
                     "Dragonfly": 1024, "Dragonfly, Valiant": 1024, "2D HyperX": 1024,
                     "Hx1Mesh": 1024, "Hx2Mesh": 1024, "Hx4Mesh": 1024,
                     "Hx2Mesh, board-row switches": 1024,
                     "Hx4Mesh, board-row switches": 1024, "2D torus": 1024}
    assert {r["name"] for r in large} == {"nonbl. FT", "50% tap. FT", "75% tap. FT",
                                          "Dragonfly", "2D HyperX", "Hx2Mesh", "Hx4Mesh",
                                          "2D torus"}


def test_a_graph_file_is_read_beside_the_table_else_here(monkeypatch, tmp_path):
    """A relative graph: file is the one beside the table file; one only in
    the current directory (tables written before) is still found."""
    graph = REPO_ROOT / "configs/graphs/hx2mesh-16x16-boardswitch.json"
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "g.json").write_bytes(graph.read_bytes())
    (tmp_path / "t" / "a.toml").write_text('[[rows]]\ntopology = "graph:g.json,split=paths"\n')
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "h.json").write_bytes(graph.read_bytes())
    (tmp_path / "t" / "b.toml").write_text('[[rows]]\ntopology = "graph:h.json"\n')
    monkeypatch.chdir(tmp_path / "here")
    _, [row] = read_table(tmp_path / "t" / "a.toml")
    assert row["topology"] == f"graph:{tmp_path / 't' / 'g.json'},split=paths"
    assert parse_topology(row["topology"]).num_endpoints == 1024
    _, [row] = read_table(tmp_path / "t" / "b.toml")
    assert row["topology"] == "graph:h.json"


def test_a_binary_table_file_is_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "b.json"
    path.write_bytes(bytes(range(200, 256)) * 4)
    code, _, err = run(capsys, ["global", str(path)])
    assert code == 2 and one_error_line(err) == (f"flowemu: error: {path}: not UTF-8 text (byte "
                                                 "0); expected a TOML table file")
