"""Failures of the system, not of the input: one line on stderr, no traceback."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from flowemu.cli import app as cli


def test_sweep_out_that_cannot_be_made_is_refused_before_work(tmp_path, capsys):
    cfg = tmp_path / "s.toml"
    cfg.write_text('topology = "torus:4x4"\nalgorithm = "ring"\nsizes = "1KiB"\n')
    code = cli.main(["sweep", str(cfg), "-o", "/proc/flowemu-no/such", "-q"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "out:" in err[0] and "Traceback" not in err[0]


def test_sweep_out_subprocess_no_traceback(tmp_path):
    cfg = tmp_path / "s.toml"
    cfg.write_text('topology = "torus:4x4"\nalgorithm = "ring"\nsizes = "1KiB"\n')
    proc = subprocess.run([sys.executable, "-m", "flowemu", "sweep", str(cfg), "-o",
                           "/proc/flowemu-no/such", "-q"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.getcwd()}, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_disk_full_mid_sweep_is_one_line_and_keeps_written_parts(tmp_path, capsys,
                                                                 monkeypatch):
    from flowemu.study.sweep import dataset
    cfg = tmp_path / "s.toml"
    cfg.write_text('topology = "torus:4x4"\nalgorithm = ["ring", "bucket", "swing"]\n'
                   'sizes = "1KiB"\n')
    real = dataset.write_part
    calls = []

    def full_after_first(directory, table, name):
        calls.append(name)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(directory))
        return real(directory, table, name)

    monkeypatch.setattr(dataset, "write_part", full_after_first)
    out = tmp_path / "ds"
    code = cli.main(["sweep", str(cfg), "-o", str(out), "-q", "--jobs", "1",
                     "--chunk-size", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    if len(calls) < 2:
        pytest.skip("the sweep wrote a single part; nothing to fail after it")
    assert code == 1
    assert err and "No space left on device" in err[-1] and "Traceback" not in "\n".join(err)
    parts = sorted(out.glob("part-*.parquet"))
    assert len(parts) == 1   # the part written before the disk filled is kept
