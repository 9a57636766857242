"""The ``jobs`` sweep field (issue 27 item 4): job sets timed in place of an
algorithm, one row per job with the job columns, the same times as
:func:`flowemu.simulate_jobs`, and every misuse reported with its location."""

from __future__ import annotations

import numpy as np
import pytest

import flowemu
from flowemu.study.results import load
from flowemu.study.sweep import SweepConfigError, load_sweep, sweep

SETS = [["algorithm=ring size=1MiB ranks=8 placement=random:1",
         "algorithm=recdoub size=1MiB ranks=8 placement=random:2"],
        ["algorithm=ring size=1MiB ranks=8", "algorithm=swing size=2MiB ranks=8 start=5us"]]


def _write(tmp_path, text):
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


def _toml(sets) -> str:
    return "[" + ", ".join("[" + ", ".join(f'"{j}"' for j in s) + "]" for s in sets) + "]"


def test_job_sets_write_a_row_per_job(tmp_path):
    path = _write(tmp_path, f'topology = "torus:4x4"\njobs = {_toml(SETS)}\n'
                            'sync = ["barrier", "dataflow"]\n')
    sweep(path, tmp_path / "out", progress=False, jobs=1)
    df = load(tmp_path / "out")
    assert len(df) == 8 and set(df["label"]) == {"jobs:ring+recdoub#0", "jobs:ring+recdoub#1",
                                                  "jobs:ring+swing#0", "jobs:ring+swing#1"}
    for sync in ("barrier", "dataflow"):
        for jobs in SETS:
            want = flowemu.simulate_jobs("torus:4x4", jobs, sync=sync)
            label = "jobs:" + "+".join(j.split()[0].split("=")[1] for j in jobs)
            got = df[(df["sync"] == sync) & df["label"].str.startswith(label + "#")] \
                .sort_values("job")
            np.testing.assert_allclose(got["time_s"], want["time_s"], rtol=1e-12)
            np.testing.assert_allclose(got["job_slowdown"], want["slowdown"], rtol=1e-12)
            np.testing.assert_allclose(got["job_alone_s"], want["alone_s"], rtol=1e-12)
            assert list(got["job"]) == [0.0, 1.0]
            assert list(got["algorithm"]) == list(want["algorithm"])
            assert list(got["size_bytes"]) == list(want["size_bytes"])
    assert df["job_start_s"].max() == pytest.approx(5e-6)


def test_one_job_set_may_be_written_flat_and_keeps_its_identity(tmp_path):
    flat = _write(tmp_path, f'topology = "torus:4x4"\njobs = {_toml(SETS[:1])[1:-1]}\n')
    nested = tmp_path / "n.toml"
    nested.write_text(f'topology = "torus:4x4"\njobs = {_toml(SETS[:1])}\n')
    a, b = load_sweep(flat).configs, load_sweep(nested).configs
    assert len(a) == len(b) == 1 and a[0].hash == b[0].hash
    assert a[0].algorithm.startswith("jobs[algorithm=ring size=1048576 ranks=8")
    plain = tmp_path / "p.toml"
    plain.write_text('topology = "torus:4x4"\nalgorithm = "ring"\nsizes = "1KiB"\n')
    assert "jobs" not in load_sweep(plain).configs[0].canonical()


@pytest.mark.parametrize("extra, message", [
    ('sizes = "1KiB"\n', r"sizes: does not apply beside jobs"),
    ('algorithm = "ring"\n', r"algorithm: does not apply beside jobs"),
    ("ranks = 8\n", r"jobs: ranks does not apply to a job set"),
    ('model = "genmodel"\n', r"jobs: model does not apply to a job set"),
])
def test_misuse_is_reported_with_its_location(tmp_path, extra, message):
    path = _write(tmp_path, f'topology = "torus:4x4"\njobs = {_toml(SETS[:1])}\n' + extra)
    with pytest.raises(SweepConfigError, match=message):
        load_sweep(path)


def test_bad_jobs_are_named(tmp_path):
    path = _write(tmp_path, 'topology = "torus:4x4"\njobs = [["algorithm=ring"], '
                            '["algorithm=ring size=1MiB colour=red"]]\n')
    with pytest.raises(SweepConfigError) as err:
        load_sweep(path)
    text = str(err.value)
    assert "jobs[0][0]: size is missing" in text and "jobs[1][0]: unknown key 'colour'" in text
    path = _write(tmp_path, 'topology = ["torus:4x4", "torus:8x8"]\n'
                            'jobs = [["algorithm=ring size=1MiB ranks=20"]]\n')
    with pytest.raises(SweepConfigError) as err:
        load_sweep(path)
    text = str(err.value)
    assert "on torus:4x4, job set jobs:ring: jobs[0].ranks: 20 ranks do not fit on the 16 " \
        "endpoints" in text
    assert "torus:8x8" not in text   # it fits there


def test_a_job_its_builder_refuses_is_reported_before_running(tmp_path):
    """ring:ports=4 on 12 ranks (no 2-D grid) passed the dry run and failed
    when the sweep ran; an algorithm's configuration is refused up front."""
    path = _write(tmp_path, 'topology = "torus:8x8"\n'
                            'jobs = [["algorithm=ring:ports=4 size=1MiB ranks=12"]]\n')
    with pytest.raises(SweepConfigError, match=r"jobs\[0\]\.algorithm ring: ports=4 "
                                               r"needs a 2-D torus"):
        load_sweep(path)
    path.write_text(path.read_text().replace("ranks=12", "ranks=16")   # (the whole 4x4 grid)
                    .replace("torus:8x8", "torus:4x4"))
    assert len(load_sweep(path).configs) == 1


def test_a_failure_that_breaks_a_ring_job_is_reported_before_running(tmp_path):
    path = _write(tmp_path, 'topology = "torus:4x4"\n'
                            'jobs = [["algorithm=ring size=1MiB ranks=8", '
                            '"algorithm=recdoub size=1MiB ranks=8"]]\n'
                            'failures = 2\nfailure_seed = 1\n')
    with pytest.raises(SweepConfigError, match=r"jobs\[0\]: fail: algorithm ring relies on link"):
        load_sweep(path)
    path.write_text(path.read_text() + 'fail_policy = "reroute"\n')
    assert len(load_sweep(path).configs) == 1


def test_compare_keeps_every_job_and_dry_run_counts_them(tmp_path, capsys):
    """Jobs of one set on the same placement (both packed) are two rows of
    compare, not one; --dry-run counts a row per job."""
    path = _write(tmp_path, 'topology = "torus:4x4"\njobs = [["algorithm=ring size=1MiB '
                            'ranks=8", "algorithm=swing size=1MiB ranks=8"]]\n')
    sweep(path, tmp_path / "out", progress=False, jobs=1)
    cmp = flowemu.compare(load(tmp_path / "out"))
    assert sorted(cmp["algorithm"]) == ["jobs:ring+swing#0", "jobs:ring+swing#1"]
    from flowemu.cli.app import main
    assert main(["sweep", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "1 configuration in 1 group, 2 rows" in out and "sizes=" not in out


def test_mixed_job_arrays_and_fractional_ranks_are_named(tmp_path):
    path = _write(tmp_path, 'topology = "torus:4x4"\njobs = [["algorithm=ring size=1MiB"], '
                            '"algorithm=swing size=1MiB"]\n')
    with pytest.raises(SweepConfigError, match="mixes job sets"):
        load_sweep(path)
    with pytest.raises(flowemu.ConfigError, match=r"jobs\[0\].ranks: 8.5 is not allowed"):
        flowemu.simulate_jobs("torus:4x4", [{"algorithm": "ring", "size": "1MiB",
                                             "ranks": 8.5}])
