"""A kill loses at most the configuration each worker was running: finished
configurations are journaled (``DATASET/_journal/``) before their chunk's part
file exists, and the next run saves them, under its lock, before anything else
(kill -9 of the sweep, of a worker, and of the run that saves them)."""

import os
import random
import shutil
import signal
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from flowemu.cli.app import main
from flowemu.study.results import load, load_errors
from flowemu.study.sweep import dataset as ds
from flowemu.study.sweep import journal, load_sweep, sweep
from tests.helpers.processes import alive, children, start_sweep

# 300 configurations of a few milliseconds each
TINY = """
sizes = "1KiB..4KiB"
topology = ["torus:4x4", "torus:8"]
algorithm = ["ring", "recdoub:variant=latency", "recdoub:variant=bandwidth"]
bandwidth = ["100Gb/s", "200Gb/s", "400Gb/s", "800Gb/s", "1.6Tb/s"]
hop_latency = ["100ns", "200ns", "300ns", "500ns", "1us", "2us", "3us", "5us", "10us", "20us"]
"""


def sorted_rows(df):
    return df.sort_values(["config_hash", "size_bytes"]).reset_index(drop=True)


def same_as_clean(out: Path, ref: Path) -> None:
    """The rows of a clean run, bit for bit, each configuration once."""
    final = load(out)
    assert not final.duplicated(["config_hash", "size_bytes"]).any()
    pd.testing.assert_frame_equal(sorted_rows(final), sorted_rows(load(ref)), check_exact=True)
    assert load_errors(out).empty
    assert not (out / journal.JOURNAL_DIR).exists()


def journaled(out: Path) -> set[str]:
    """The configurations the journals record (complete lines only; a
    journal deleted meanwhile, having become part files, counts none)."""
    found = set()
    for path in sorted((out / journal.JOURNAL_DIR).glob("*.jsonl")):
        try:
            batches, _ = journal.read(path)
        except FileNotFoundError:
            continue
        found |= {fields["config_hash"] for fields, _ in batches}
    return found


def journal_lines(out: Path) -> int:
    n = 0
    for path in (out / journal.JOURNAL_DIR).glob("*.jsonl"):
        try:
            n += path.read_bytes().count(b"\n")
        except FileNotFoundError:
            pass
    return n


def _wait(proc, count, target: int, pause: float) -> None:
    """Poll ``count()`` every ``pause`` seconds until it reaches ``target``,
    the sweep ``proc`` still running."""
    deadline = time.monotonic() + 120
    while count() < target:
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline
        time.sleep(pause)


def wait_journaled(proc, out: Path, target: int) -> None:
    """Poll until the journals of the running sweep ``proc`` hold ``target`` lines."""
    _wait(proc, lambda: journal_lines(out), target, 0.002)


def wait_finished(proc, out: Path, target: int) -> None:
    """Poll until the running sweep ``proc`` has finished ``target``
    configurations, journaled or saved: on a Dask cluster the sweep turns its
    journal into part files every few dozen (38 here), so its journal alone
    may never hold ``target`` lines."""
    _wait(proc, lambda: len(journaled(out) | ds.result_hashes(out)), target, 0.01)


def random_target(most: int = 40) -> tuple[int, int]:
    """``(seed, configurations to wait for)``: 1 to ``most``, the seed reported on failure."""
    seed = random.Random().randrange(10**6)
    return seed, random.Random(seed).randint(1, most)


def kill(proc, workers=()):
    """SIGKILL the sweep and wait until it and its workers are gone."""
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    deadline = time.monotonic() + 10
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(alive(w) for w in workers)


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The sweep file and a dataset of an uninterrupted run."""
    base = tmp_path_factory.mktemp("clean")
    path = base / "tiny.toml"
    path.write_text(TINY)
    sweep(path, base / "ref", jobs=1, progress=False)
    return path, base / "ref"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
@pytest.mark.parametrize("jobs", [1, 2])
def test_sigkill_of_the_sweep_loses_at_most_the_running_configurations(tmp_path, clean, jobs,
                                                                      capsys):
    path, ref = clean
    total = len(load_sweep(path).configs)
    seed, target = random_target()
    out = tmp_path / "killed"
    # chunks so large that no part file would be written before the kill
    proc = start_sweep(path, out, "--jobs", str(jobs), "--chunk-size", str(total // jobs))
    wait_journaled(proc, out, target)
    workers = children(proc.pid)   # they write journals: they have started
    assert len(workers) == jobs - (jobs == 1)
    kill(proc, workers)
    assert not list(out.glob("part-*.parquet")), f"seed {seed}"
    finished = journaled(out)
    assert target <= len(finished) < total, f"seed {seed}"
    # the dry run counts the journaled configurations as the run will (it said all to run)
    capsys.readouterr()
    assert main(["sweep", str(path), "--dry-run", "--out", str(out)]) == 0
    assert (f"into {out}: {total - len(finished)} to run, {len(finished)} reused"
            in capsys.readouterr().out), f"seed {seed}"
    res = sweep(path, out, jobs=1, progress=False)
    assert (res.reused, res.computed) == (len(finished), total - len(finished)), f"seed {seed}"
    same_as_clean(out, ref)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_sigkill_while_saving_the_journal_loses_and_duplicates_nothing(tmp_path, clean):
    path, ref = clean
    total = len(load_sweep(path).configs)
    out = tmp_path / "killed"
    proc = start_sweep(path, out, "--jobs", "1", "--chunk-size", "7")   # a journal per 7
    deadline = time.monotonic() + 120
    while len(list(out.glob("part-*.parquet"))) < 3 or journal_lines(out) < 3:
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline
        time.sleep(0.002)
    kill(proc)
    # a plain parquet reader sees the saved part files, not the journal
    plain, saved = pd.read_parquet(out), load(out)
    assert len(plain) == len(saved) and set(plain["config_hash"]) == set(saved["config_hash"])
    finished = set(ds.result_hashes(out)) | journaled(out)
    rng = random.Random()
    seed = rng.randrange(10**6)
    rng.seed(seed)
    # the next run, killed anywhere (while it saves the journal, or later)
    proc = start_sweep(path, out, "--jobs", "1", "--chunk-size", "7")
    time.sleep(rng.uniform(0, 1.5))
    kill(proc)
    assert finished <= set(ds.result_hashes(out)) | journaled(out), f"seed {seed}"
    res = sweep(path, out, jobs=1, progress=False)
    assert res.reused >= len(finished) and res.reused + res.computed == total, f"seed {seed}"
    same_as_clean(out, ref)


@pytest.mark.parametrize("after", [False, True])
def test_a_run_stopped_at_any_step_of_saving_the_journal_is_finished_by_the_next(
        tmp_path, clean, monkeypatch, after):
    """Every step of saving a journal is a whole file written or removed: a
    stop right before (or right after) each write leaves what the next run
    needs, and the result is the clean run's."""
    path, ref = clean
    total = len(load_sweep(path).configs)
    killed = tmp_path / "killed"
    shutil.copytree(ref, killed)
    # a dataset as a kill leaves it: the last 40 configurations only in
    # journals of 4 tasks, one of them with its part file written already
    parts = ds.result_parts(killed)
    table = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    for p in parts:
        p.unlink()
    hashes = list(dict.fromkeys(table["config_hash"]))
    kept, journals = hashes[:-40], hashes[-40:]
    ds.write_rows(killed, table[table.config_hash.isin(kept)], "part-20000101T000000-1-00000")
    jdir = killed / journal.JOURNAL_DIR
    jdir.mkdir()
    for task in range(4):
        name = f"20000101T000000-1-{task + 1:05d}"
        chunk = journals[task * 10:(task + 1) * 10]
        writer = journal.JournalWriter(str(jdir / f"{name}.jsonl"))
        for h in chunk:
            rows = table[table.config_hash == h]
            fields = rows[ds.SWEEP_COLUMNS].iloc[0].to_dict()
            writer.rows(fields, rows.drop(columns=ds.SWEEP_COLUMNS).to_dict("records"))
        writer.close()
        if task == 0:   # its part file was written, the journal not yet removed
            ds.write_rows(killed, table[table.config_hash.isin(chunk)], f"part-{name}")
    with open(jdir / "20000101T000000-1-00004.jsonl", "ab") as fh:
        fh.write(b'{"config": {"config_hash": "cut sh')   # a line the kill cut short
    steps = 0
    real = ds.write_part

    def stopping(*args, **kwargs):
        nonlocal steps
        steps += 1
        if steps == stop_at:
            if after:
                real(*args, **kwargs)
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(ds, "write_part", stopping)
    stops = 0
    for run in range(10):
        # each run saves one journal more: stopped at its first write, or at
        # its second (which leaves the first written)
        stop_at, steps = (1 if after or not run else 2), 0
        try:
            res = sweep(path, killed, jobs=1, progress=False)
        except KeyboardInterrupt:
            stops += 1
            assert set(kept) | set(journals) <= ds.result_hashes(killed) | journaled(killed)
        else:
            break
    assert stops == 3      # three journals to save, each stopped at
    assert (res.reused, res.computed) == (total, 0)
    same_as_clean(killed, ref)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks its workers")
def test_a_killed_workers_finished_configurations_are_not_run_again(tmp_path, monkeypatch):
    """The configuration that kills its worker is recorded as failed; the
    ones its task finished before are saved from the journal, not rerun."""
    from flowemu.study.sweep import executor
    path = tmp_path / "s.toml"
    path.write_text(TINY.replace('"1.6Tb/s"]', ']').replace(', "20us"]', "]"))
    configs = load_sweep(path).configs
    log = tmp_path / "ran.txt"
    real = executor.config_rows
    chunks = executor.chunk_configs(configs, 2, 20)
    victim = chunks[1][7]

    def config_rows(cfg, threads=None, max_memory=None):
        if cfg.key == victim.key:
            os.kill(os.getpid(), signal.SIGKILL)
        rows = real(cfg, threads, max_memory)
        with open(log, "a") as fh:
            fh.write(cfg.hash + "\n")
        return rows

    monkeypatch.setattr(executor, "config_rows", config_rows)
    out = tmp_path / "d"
    s = sweep(path, out, jobs=2, chunk_size=20, progress=False)
    assert (s.computed, s.failed) == (len(configs) - 1, 1)
    assert [h for h, in load_errors(out)[["config_hash"]].itertuples(index=False)] == [victim.hash]
    # the summary says the workers died (in its chunk, alone, then alone again,
    # each time killed by SIGKILL): it said nothing of it
    assert len(s.worker_deaths) == 3
    assert ("the worker processes died 3 times (worker process died (killed by signal 9, "
            "e.g. out of memory)); what they finished was saved and the rest ran again") \
        in s.text()
    ran = log.read_text().split()
    # (the other worker, stopped when the pool broke, may lose the one it ran)
    assert len(ran) - len(set(ran)) <= 1
    df = load(out)
    assert set(df["config_hash"]) == {c.hash for c in configs} - {victim.hash}
    assert not df.duplicated(["config_hash", "size_bytes"]).any()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_sigkill_of_a_dask_sweep_loses_at_most_the_running_configurations(tmp_path, clean):
    """On a Dask cluster the workers write no journal: the sweep journals each
    configuration as its task returns, and the next run saves them."""
    distributed = pytest.importorskip("distributed", reason="dask.distributed not installed")
    path, ref = clean
    total = len(load_sweep(path).configs)
    seed, target = random_target()
    out = tmp_path / "killed"
    # tcp: the sweep runs in another process
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  protocol="tcp://", dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        proc = start_sweep(path, out, "--scheduler", address)
        wait_finished(proc, out, target)
        kill(proc)
        saved = ds.result_hashes(out)
        finished = saved | journaled(out)
        assert target <= len(finished) < total, f"seed {seed}"
        # part files of many configurations each, not one per configuration
        parts = list(out.glob("part-*.parquet"))
        assert len(parts) <= max(1, len(saved) // 10), f"seed {seed}"
        res = sweep(path, out, scheduler=address, progress=False)
    assert (res.reused, res.computed) == (len(finished), total - len(finished)), f"seed {seed}"
    assert len(list(out.glob("part-*.parquet"))) < total // 10
    same_as_clean(out, ref)
