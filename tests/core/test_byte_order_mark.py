"""A byte-order mark, as some editors write at the head of a UTF-8 file, is
not part of the text: every file flowemu reads takes it (traffic and
background files did; sweep files, presets, graph files, placement files,
bandwidth tables and measurements refused it, some with a message that did
not say why)."""

from __future__ import annotations

import flowemu
from flowemu.core.placement import parse_placement
from flowemu.core.presets import preset_network
from flowemu.models.measurements import read_measurements
from flowemu.study.bwtable import read_table
from flowemu.study.sweep import load_sweep
from flowemu.topology import parse_topology
from tests.helpers.processes import REPO_ROOT

BOM = b"\xef\xbb\xbf"


def marked(path, text: str):
    path.write_bytes(BOM + text.replace("\n", "\r\n").encode())
    return path


def test_every_file_takes_a_byte_order_mark(tmp_path):
    sweep = marked(tmp_path / "s.toml", 'sizes = ["1KiB"]\ntopology = "torus:4x4"\n'
                                         'algorithm = ["ring"]\n')
    assert [c.algorithm for c in load_sweep(sweep).configs] == ["ring:ports=max"]
    preset = marked(tmp_path / "n.toml", '[network]\nalpha = "1us"\n')
    assert preset_network(str(preset)).alpha == 1e-6
    ids = marked(tmp_path / "p.txt", "3\n2\n1\n0\n")
    mapping = parse_placement(str(ids)).mapping(4, parse_topology("torus:4x4"))
    assert list(mapping) == [3, 2, 1, 0]
    text = (REPO_ROOT / "tests/data/graph_two_sites.toml").read_text()
    graph = marked(tmp_path / "g.toml", text)
    assert parse_topology(f"graph:{graph}").num_endpoints == 4
    table = marked(tmp_path / "t.toml", '[[rows]]\ntopology = "torus:4x4"\n')
    assert read_table(table)[1][0]["topology"] == "torus:4x4"
    data = marked(tmp_path / "m.csv", "algorithm,ranks,size,time\nring,8,1MiB,1ms\n")
    assert len(read_measurements(str(data))) == 1
    # and the results: the preset's alpha is read
    row = flowemu.simulate("torus:4", "ring", "1KiB", network=str(preset)).iloc[0]
    assert row["alpha_s"] == 1e-6
