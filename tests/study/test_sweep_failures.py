"""Failures are loud, results are kept: a worker killed by the OS, an
unreachable Dask scheduler."""

import os
import re
import signal
import sys
import time

import pytest

from flowemu.cli.app import main
from flowemu.core.errors import ConfigError
from flowemu.study.results import load, load_errors
from flowemu.study.sweep import load_sweep, sweep
from tests.helpers.sweeps import fail_when_run

# 2 topologies x 3 algorithms x 2 bandwidths = 12 configurations, 3 sizes each
SMALL = """
sizes = "1KiB..4KiB"
topology = ["torus:4x4", "torus:8"]
algorithm = ["ring", "recdoub:variant=latency", "recdoub:variant=bandwidth"]
bandwidth = ["100Gb/s", "400Gb/s"]
"""
KILLED = "worker process died (killed by signal 9, e.g. out of memory)"
#: what a sweep records when a worker died: the signal read from the pool's
#: processes (KILLED, as the victim's SIGKILL; rarely, under a loaded full run,
#: its exit status is gone and only the survivors' SIGTERM is read: the reason
#: text is then SIGTERM's, which test_death_reason_reads_the_exit_codes pins)
DIED = re.compile(r"worker process died \(killed by signal (9, e\.g\. out of memory|15, "
                  r"SIGTERM)\)")


@pytest.fixture
def killer(monkeypatch):
    """Make one configuration kill the process that runs it (as the OOM killer
    would); the pool's workers are forked, so they inherit the patch."""
    from flowemu.study.sweep import executor
    real = executor.config_rows
    victims = set()

    def run_config(cfg, threads=None, max_memory=None):
        if cfg.key in victims:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(cfg, threads, max_memory)

    monkeypatch.setattr(executor, "config_rows", run_config)
    return victims


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks its workers")
def test_killed_worker_is_isolated_and_the_sweep_goes_on(tmp_path, killer):
    path = tmp_path / "s.toml"
    path.write_text(SMALL)
    configs = load_sweep(path).configs
    victim = configs[4]
    killer.add(victim.key)
    out = tmp_path / "d"
    s = sweep(path, out, jobs=2, chunk_size=3, progress=False)
    assert (s.total, s.computed, s.failed) == (12, 11, 1)
    assert [key for key, _ in s.errors] == [victim.key]
    assert DIED.fullmatch(s.errors[0][1]), s.errors
    df = load(out)
    assert set(df["config_hash"]) == {c.hash for c in configs} - {victim.hash}
    assert len(df) == 11 * 3 and not df.duplicated(["config_hash", "size_bytes"]).any()
    errs = load_errors(out)
    assert list(errs["config_key"]) == [victim.key] and list(errs["error"]) == [s.errors[0][1]]
    assert list(errs["error_type"]) == ["WorkerDied"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks its workers")
def test_cli_names_the_killed_configurations(tmp_path, killer, capsys):
    path = tmp_path / "s.toml"
    path.write_text(SMALL)
    configs = load_sweep(path).configs
    victims = [configs[0], configs[7]]          # in different chunks
    killer.update(c.key for c in victims)
    code = main(["sweep", str(path), "--out", str(tmp_path / "d"), "-q", "--jobs", "2",
                 "--chunk-size", "4"])
    out, err = capsys.readouterr()
    assert code == 1 and "10 computed (30 rows)" in out and "2 failed" in out
    assert "Traceback" not in err and "BrokenProcessPool" not in err
    lines = err.splitlines()
    assert lines[0].startswith("sweep s: 2 of 12 configurations failed")
    assert sorted(line.partition(": worker")[0] for line in lines[1:]) == \
        sorted(f"  {c.key}" for c in victims)
    assert all(DIED.fullmatch("worker" + line.partition(": worker")[2]) for line in lines[1:])
    assert len(load(tmp_path / "d")) == 10 * 3


UNREACHABLE = ["tcp://127.0.0.1:1",          # nothing listens: refused
               "tcp://10.255.255.1:8786"]    # unrouted (drops packets), or not Dask


@pytest.mark.parametrize("address", UNREACHABLE)
def test_unreachable_scheduler_fails_after_the_timeout(tmp_path, capsys, address):
    pytest.importorskip("distributed", reason="dask.distributed not installed")
    path = tmp_path / "s.toml"
    path.write_text(SMALL)
    out = tmp_path / "d"
    t0 = time.monotonic()
    code = main(["sweep", str(path), "--out", str(out), "-q", "--scheduler", address,
                 "--scheduler-timeout", "1"])
    elapsed = time.monotonic() - t0
    err = capsys.readouterr().err
    assert code == 2 and elapsed < 1 + 5 + 3, elapsed   # the timeout, the watchdog, slack
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"flowemu: error: --scheduler: cannot connect to {address!r} within 1s")
    assert "--scheduler-timeout" in err and not out.exists()
    with pytest.raises(ConfigError, match="scheduler: cannot connect"):
        sweep(path, out, scheduler=address, scheduler_timeout=1, progress=False)


def test_bad_scheduler_timeout(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(SMALL)
    for bad in (0, -1, float("inf"), "10", True):
        with pytest.raises(ConfigError, match="scheduler_timeout"):
            sweep(path, tmp_path / "d", scheduler="tcp://127.0.0.1:1", scheduler_timeout=bad)
    code = main(["sweep", str(path), "--scheduler-timeout", "soon"])
    err = capsys.readouterr().err
    assert code == 2 and "--scheduler-timeout" in err and err.count("\n") == 1
    assert not (tmp_path / "d").exists()


def test_many_failures_show_the_first_five(tmp_path, capsys, monkeypatch):
    path = tmp_path / "many.toml"
    # 7 rank counts that fail when they run (as out of memory would), 1 that runs
    path.write_text('sizes = "1KiB"\ntopology = "torus:4x4"\nalgorithm = "ring"\n'
                    "ranks = [9, 10, 11, 12, 13, 14, 15, 8]\n")
    fail_when_run(monkeypatch, lambda cfg: cfg.ranks > 8)
    code = main(["sweep", str(path), "--out", str(tmp_path / "d"), "-q", "--jobs", "1"])
    out, err = capsys.readouterr()
    assert code == 1 and "1 computed (1 row)" in out and "7 failed" in out
    lines = err.splitlines()
    assert lines[0].startswith("sweep many: 7 of 8 configurations failed")
    assert [line.split("|ranks=")[1].split("|")[0] for line in lines[1:6]] == \
        ["9", "10", "11", "12", "13"]
    assert lines[6] == "  ... and 2 more (flowemu.results.load_errors)" and len(lines) == 7
    s = sweep(path, tmp_path / "d", progress=False)      # the Python summary carries them all
    assert len(s.errors) == 7 and s.failed == 0 and s.failed_earlier == 7


def test_numpy_counts_are_accepted_and_bad_ones_print_plainly(tmp_path):
    np = pytest.importorskip("numpy")
    path = tmp_path / "s.toml"
    path.write_text(SMALL)
    s = sweep(path, tmp_path / "d", jobs=np.int64(1), chunk_size=np.int32(5), progress=False)
    assert s.computed == 12
    with pytest.raises(ConfigError) as err:
        sweep(path, tmp_path / "e", jobs=np.int64(0), progress=False)
    assert str(err.value) == "jobs: 0 is not allowed; expected an integer >= 1"
    with pytest.raises(ConfigError, match=r"^scheduler_timeout: 0.0 is not allowed"):
        sweep(path, tmp_path / "e", scheduler="tcp://127.0.0.1:1",
              scheduler_timeout=np.float64(0))
    assert not (tmp_path / "e").exists()


def test_death_reason_reads_the_exit_codes():
    """The reason names the signal of the worker that died, not the SIGTERM
    the pool sends the survivors."""
    from flowemu.study.sweep.executor import _death_reason
    assert _death_reason([-signal.SIGTERM, -signal.SIGKILL, None]) == KILLED
    assert _death_reason([-signal.SIGKILL]) == KILLED
    assert _death_reason([-signal.SIGTERM, 0]) == \
        "worker process died (killed by signal 15, SIGTERM)"
    assert _death_reason([3, -signal.SIGTERM]) == "worker process died (exit status 3)"
    assert _death_reason([None, 0]) == "worker process died"
