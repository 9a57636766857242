"""The ``sync`` sweep field (issue 27 item 1): barrier and dataflow rows of one
grid, the same times as :func:`flowemu.simulate`, barrier configurations keep
the identity they had before the field existed, and a genmodel configuration
cannot ask for dataflow."""

from __future__ import annotations

import numpy as np
import pytest

import flowemu
from flowemu.study.results import load
from flowemu.study.sweep import SweepConfigError, load_sweep, sweep

GRID = """
topology = "torus:4x4"
algorithm = "swing:variant=bandwidth"
sizes = "1KiB,1MiB"
gamma = "1ns"
slow = "3=0.5"
sync = ["barrier", "dataflow"]
"""


def test_sync_field_times_each_mode_as_simulate(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(GRID)
    out = tmp_path / "out"
    sweep(path, out, progress=False, jobs=1)
    df = load(out)
    assert sorted(set(df["sync"])) == ["barrier", "dataflow"]
    for sync in ("barrier", "dataflow"):
        want = flowemu.simulate("torus:4x4", "swing:variant=bandwidth", [1024, 2**20],
                                gamma="1ns", slow="3=0.5", sync=sync)
        got = df[df["sync"] == sync].sort_values("size_bytes")
        np.testing.assert_allclose(got["time_s"], want["time_s"], rtol=1e-12)
    # the two modes differ here: the slow rank also sends and receives at half speed,
    # and under dataflow the ranks that do not wait for it go on
    assert len(set(df["config_hash"])) == 2


def test_barrier_configurations_keep_their_identity(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(GRID)
    configs = load_sweep(path).configs
    by_sync = {c.sync: c for c in configs}
    assert "sync" not in by_sync["barrier"].canonical()
    assert by_sync["dataflow"].canonical()["sync"] == "dataflow"
    assert "sync=" not in by_sync["barrier"].key and "sync=dataflow" in by_sync["dataflow"].key
    plain = tmp_path / "plain.toml"
    plain.write_text(GRID.replace('sync = ["barrier", "dataflow"]\n', ""))
    assert load_sweep(plain).configs[0].hash == by_sync["barrier"].hash


def test_genmodel_cannot_run_dataflow(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('topology = "tree:8"\nalgorithm = "ring"\nsizes = "1KiB"\n'
                    'model = "genmodel"\nsync = "dataflow"\n')
    with pytest.raises(SweepConfigError, match='sync.*needs model = "flow"'):
        load_sweep(path)
    path.write_text('topology = "tree:8"\nalgorithm = "ring"\nsizes = "1KiB"\nsync = "lockstep"\n')
    with pytest.raises(SweepConfigError, match="'lockstep' is not allowed; expected one of "
                                               "'barrier', 'dataflow'"):
        load_sweep(path)


def test_compare_by_sync_puts_the_two_modes_side_by_side(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(GRID.replace('algorithm = "swing:variant=bandwidth"',
                                 'algorithm = ["swing:variant=bandwidth", "ring"]'))
    out = tmp_path / "out"
    sweep(path, out, progress=False, jobs=1)
    cmp = flowemu.compare(load(out), by="sync")
    assert len(cmp) == 4   # 2 algorithms x 2 sizes
    for row in cmp.itertuples():
        want = {s: flowemu.simulate("torus:4x4", row.algorithm, [row.size_bytes], gamma="1ns",
                                    slow="3=0.5", sync=s).time_s.iloc[0]
                for s in ("barrier", "dataflow")}
        assert row.barrier_time_s == pytest.approx(want["barrier"], rel=1e-12)
        assert row.ratio == pytest.approx(want["dataflow"] / want["barrier"], rel=1e-12)
    with pytest.raises(flowemu.ConfigError, match="compare --by sync: the data holds sync"):
        flowemu.compare(load(out)[lambda d: d["sync"] == "barrier"], by="sync")
