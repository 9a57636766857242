"""Sweep files, their validation, and running them: resume after SIGKILL,
local processes vs in-process vs Dask, the errors table, progress output."""

import io
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import flowemu
from flowemu.cli.app import main
from flowemu.core.errors import ConfigError, interrupted
from flowemu.study.results import ERRORS_DIR, load, load_errors
from flowemu.study.sweep import (
    Config,
    Progress,
    SweepConfigError,
    journal,
    load_sweep,
    run_sweep,
    sweep,
)
from flowemu.study.sweep.fields import topo_info
from flowemu.study.sweep.run import DatasetLock
from tests.helpers.processes import alive, children, start_sweep
from tests.helpers.sweeps import NO_MEMORY, fail_when_run

REPO_ROOT = Path(flowemu.__file__).resolve().parents[1]

SMALL = """
sizes = "1KiB..64KiB"
[groups.g]
topology = ["torus:4x4", "torus:8"]
algorithm = ["ring", "recdoub:variant=latency", "recdoub:variant=bandwidth"]
bandwidth = ["100Gb/s", "400Gb/s"]
"""


def write(tmp_path, text, name="cfg.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def sorted_rows(df):
    return df.sort_values(["config_hash", "size_bytes"]).reset_index(drop=True)


def quiet(path, out, **kw):
    return sweep(path, out, progress=False, **kw)


# ------------------------------------------------------------------ grids

def test_grid_expands_as_cartesian_product(tmp_path):
    plan = load_sweep(write(tmp_path, SMALL))
    assert len(plan.configs) == 2 * 3 * 2
    assert {c.group for c in plan.configs} == {"g"}
    assert all(c.sizes == tuple(2**k for k in range(10, 17)) for c in plan.configs)
    assert len({c.hash for c in plan.configs}) == len({c.key for c in plan.configs}) == 12


def test_groups_defaults_exclude_where_and_option_tables(tmp_path):
    text = """
    description = "x"
    sizes = ["1KiB", 4096]
    bandwidth = "400Gb/s"
    algorithm = "ring"

    [[exclude]]                  # everywhere
    topology = "torus:8"
    bandwidth = "100Gb/s"

    [groups.a]
    topology = ["torus:4x4", "torus:8", "torus:2x2x2"]
    algorithm = [{ name = "recdoub", variant = ["latency", "bandwidth"] }, "ring"]
    bandwidth = ["100Gb/s", "400Gb/s"]
    where = "nodes >= 8 and bandwidth >= rate('100Gb/s')"

    [[groups.a.exclude]]
    algorithm = "recdoub:variant=latency"     # subset match: any layout
    where = "ndims == 3"

    [groups.b]
    topology = "torus:4x4"
    where = "nodes < 8"
    """
    # group b is empty -> a problem; check group a on its own first
    with pytest.raises(ConfigError, match=r"groups\.b: the grid is empty"):
        load_sweep(write(tmp_path, text))
    plan = load_sweep(write(tmp_path, text.replace('where = "nodes < 8"', "")))
    a = plan.groups["a"]
    # 3 topologies x 3 algorithms x 2 bandwidths = 18, minus torus:8@100G (3 algs)
    # minus recdoub latency on the 3-D torus (2 bandwidths)
    assert len(a) == 18 - 3 - 2
    assert not any(c.topology == "torus:8" and c.bandwidth == 100e9 / 8 for c in a)
    assert {c.label for c in a} == {"ring", "recdoub:variant=latency",
                                    "recdoub:variant=bandwidth"}
    assert [c.sizes for c in plan.groups["b"]] == [(1024, 4096)]
    assert plan.groups["b"][0].algorithm.startswith("ring")   # top-level default


def test_equal_values_have_one_hash(tmp_path):
    base = 'topology = "torus:4x4"\nalgorithm = "ring"\nsizes = "1KiB"\n'
    h1 = load_sweep(write(tmp_path, base, "a.toml")).configs[0]
    h2 = load_sweep(write(tmp_path, base + 'link_latency = "100ns"\nbandwidth = "50GB/s"\n'
                                           'ecmp = "split"\nseed = 0\n', "b.toml")).configs[0]
    h3 = load_sweep(write(tmp_path, base.replace("ring", "recdoub:variant=auto")
                          + "link_latency = \"0.1us\"\n", "c.toml")).configs[0]
    h4 = load_sweep(write(tmp_path, base.replace("ring", "recdoub"), "d.toml")).configs[0]
    assert h1.hash == h2.hash and h1.key == h2.key
    assert h3.hash == h4.hash and h3.key == h4.key and h3.label == "recdoub"
    assert h1.key.startswith("main|torus:4x4|ring")
    # the hash is stable across runs (and machines): a pure function of the fields
    assert load_sweep(write(tmp_path, base, "a.toml")).configs[0].hash == h1.hash


def test_values_of_a_list_that_are_one_value_are_noted(tmp_path, capsys):
    """Grid values that read as one (a rate in two units, an option spelt at
    its default, a topology with its default written out) counted once with
    no word: the dry run showed fewer configurations than the file seemed
    to list. Each is noted, naming the field and both values."""
    path = write(tmp_path, 'sizes = "1KiB"\n'
                           'topology = ["fattree:k=4", "fattree:k=4,levels=3", "torus:4x4"]\n'
                           'algorithm = ["ring", "recdoub", "ring:ports=max"]\n'
                           'bandwidth = ["400Gb/s", "50GB/s", "100Gb/s"]\n'
                           'seed = [0, 0]\n', "d.toml")
    plan = load_sweep(path)
    assert len(plan.configs) == 2 * 2 * 2
    assert plan.notes == [
        "topology: 'fattree:k=4,levels=3' is the same as 'fattree:k=4'; the grid counts it once",
        "algorithm: 'ring:ports=max' is the same as 'ring'; the grid counts it once",
        "bandwidth: '50GB/s' is the same as '400Gb/s'; the grid counts it once",
        "seed: 0 repeats 0; the grid counts it once"]
    assert main(["sweep", str(path), "--dry-run"]) == 0
    assert "flowemu: note: bandwidth: '50GB/s' is the same as '400Gb/s'" in capsys.readouterr().err
    # an option table, a job set, a traffic file: as the file writes them
    (tmp_path / "t.csv").write_text("step,src,dst,bytes\n0,0,1,1000\n")
    tables = write(tmp_path, 'sizes = "1KiB"\ntopology = "torus:4x4"\n[groups.a]\n'
                             'algorithm = [{ name = "recdoub", variant = ["latency"] }, '
                             '{ name = "recdoub", variant = ["latency"] }]\n[groups.t]\n'
                             'traffic = ["t.csv", "./t.csv"]\n[groups.j]\n'
                             'jobs = [["algorithm=ring size=1MiB ranks=4"], '
                             '["algorithm=ring size=1MiB ranks=4"]]\n', "f.toml")
    assert load_sweep(tables).notes == [
        ("groups.a.algorithm: {name = 'recdoub', variant = ['latency']} repeats "
         "{name = 'recdoub', variant = ['latency']}; the grid counts it once"),
        "groups.t.traffic: './t.csv' is the same as 't.csv'; the grid counts it once",
        ("groups.j.jobs: ['algorithm=ring size=1MiB ranks=4'] repeats "
         "['algorithm=ring size=1MiB ranks=4']; the grid counts it once")]
    # the values of an option list, each read with the table's other options
    options = write(tmp_path, 'sizes = "1KiB"\ntopology = "torus:4x4"\nalgorithm = '
                              '[{ name = "ring", ports = [1, 1, 2, 4, "max"] }]\n', "o.toml")
    plan = load_sweep(options)
    assert plan.notes == ["algorithm[0].ports: 1 repeats 1; the grid counts it once"]
    assert len(plan.configs) == 4   # (ports=4 and max are two: max is what the topology has)
    # distinct values, and the seeds of a grid without hash (said in the docs), say nothing
    plain = write(tmp_path, 'sizes = "1KiB"\ntopology = "torus:4x4"\nalgorithm = "ring"\n'
                            'ecmp = ["split", "hash"]\nseed = [0, 1]\n', "e.toml")
    assert load_sweep(plain).notes == []


BUILT_IN = """
sizes = "1KiB,1MiB"
[groups.main]
topology = ["torus:4x4", "fattree:k=4"]
algorithm = ["ring", "recdoub:variant=latency"]
[groups.jobs]
topology = "torus:4x4"
jobs = [["algorithm=ring size=1MiB ranks=8", "algorithm=recdoub size=1MiB ranks=8"]]
"""

#: the hashes of BUILT_IN's configurations, recorded before a plug-in's code
#: was part of a configuration's identity
BUILT_IN_HASHES = {
    "main|torus:4x4|ring:ports=max|sizes=1KiB,1MiB": "f138095afb48",
    "main|torus:4x4|recdoub:layout=auto,mirrored=False,variant=latency|sizes=1KiB,1MiB":
        "993b14e2cecf",
    "main|fattree:k=4|ring:ports=max|sizes=1KiB,1MiB": "9f8f1d7e4d85",
    "main|fattree:k=4|recdoub:layout=auto,mirrored=False,variant=latency|sizes=1KiB,1MiB":
        "e82f6b5ad3ca",
    "jobs|torus:4x4|jobs[algorithm=ring size=1048576 ranks=8 | algorithm=recdoub "
    "size=1048576 ranks=8]": "6e3fa6e4dd1b",
}


def test_built_in_configurations_keep_their_hash(tmp_path):
    """Only a plug-in's configurations are identified by its code: the
    built-in ones keep their hashes, so the datasets written before are
    reused, not computed again."""
    plan = load_sweep(write(tmp_path, BUILT_IN))
    assert {c.key: c.hash for c in plan.configs} == BUILT_IN_HASHES
    assert not any("files" in c.canonical() for c in plan.configs)


def test_shipped_configs_validate():
    configs = sorted((REPO_ROOT / "configs").glob("*.toml"))
    names = {p.stem for p in configs}
    assert {"smoke", "demo", "paper"} <= names
    for path in configs:
        try:
            plan = load_sweep(path)
        except SweepConfigError as exc:
            # valid once swing and bucket are registered: no other problem allowed
            for _, msg in exc.problems:
                assert msg.startswith(("unknown name 'swing'", "unknown name 'bucket'")), msg
            continue
        assert plan.configs, path
    smoke = load_sweep(REPO_ROOT / "configs" / "smoke.toml")
    assert all(c.sizes and len(c.sizes) == 10 for c in smoke.configs)
    assert max(topo_info(c.topology).nodes for c in smoke.configs) <= 64


# ------------------------------------------------------------------ bad files

BAD = {
    "unknown key": ('topology = "torus:4x4"\nalgorithm = "ring"\nbandwith = "1Gb/s"\n',
                    ["bandwith", "unknown key", "bandwidth"]),
    "unknown algorithm": ('topology = "torus:4x4"\nalgorithm = ["ring", "rnig"]\n',
                          ["algorithm[1]", "unknown name 'rnig'"]),
    "bad option": ('topology = "torus:4x4"\nalgorithm = "recdoub:variant=fast"\n',
                   ["algorithm", "variant", "fast"]),
    "bad option key": ('topology = "torus:4x4"\nalgorithm = "ring:color=red"\n',
                       ["algorithm", "unknown option", "color"]),
    "bad topology": ('topology = ["torus:4x4", "torus:1x4"]\nalgorithm = "ring"\n',
                     ["topology[1]", "torus:1x4"]),
    "unknown family": ('topology = "donut:4"\nalgorithm = "ring"\n',
                       ["topology", "unknown family"]),
    "bad size": ('topology = "torus:4x4"\nalgorithm = "ring"\nsizes = "1KiB..lots"\n',
                 ["sizes", "lots"]),
    "bad bandwidth": (('topology = "torus:4x4"\nalgorithm = "ring"\n'
                      'bandwidth = ["400Gb/s", "fast"]\n'), ["bandwidth[1]", "fast", "rate"]),
    "negative latency": ('topology = "torus:4x4"\nalgorithm = "ring"\nhop_latency = "-5ns"\n',
                         ["hop_latency", "-5ns"]),
    "bad ecmp": ('topology = "torus:4x4"\nalgorithm = "ring"\necmp = "random"\n',
                 ["ecmp", "random"]),
    "bad seed": ('topology = "torus:4x4"\nalgorithm = "ring"\nseed = -1\n', ["seed", "-1"]),
    "bad ranks": ('topology = "torus:4x4"\nalgorithm = "ring"\nranks = 1\n', ["ranks", ">= 2"]),
    "empty grid": (('topology = "torus:4x4"\nalgorithm = "ring"\n[[exclude]]\n'
                   'topology = "torus:4x4"\n'), ["grid is empty", "exclude"]),
    "empty where": ('topology = "torus:4x4"\nalgorithm = "ring"\nwhere = "nodes > 100"\n',
                    ["grid is empty"]),
    "exclude unknown key": (('topology = "torus:4x4"\nalgorithm = "ring"\n[[exclude]]\n'
                            'topology = "torus:4x4"\nport = 2\n'),
                            ["exclude[0].port", "unknown key"]),
    "exclude sizes": (('topology = "torus:4x4"\nalgorithm = "ring"\n[[exclude]]\n'
                      'sizes = "1KiB"\n'), ["exclude[0].sizes", "not a grid dimension"]),
    "wrong type exclude": ('topology = "torus:4x4"\nalgorithm = "ring"\nexclude = "ring"\n',
                           ["exclude", "array of tables", "a string"]),
    "wrong type topology": ('topology = 44\nalgorithm = "ring"\n',
                            ["topology", "expected a topology spec string", "an integer"]),
    "wrong type table": ('topology = "torus:4x4"\nalgorithm = "ring"\nbandwidth = {a = 1}\n',
                         ["bandwidth", "table"]),
    "wrong type where": ('topology = "torus:4x4"\nalgorithm = "ring"\nwhere = ["x"]\n',
                         ["where", "expression string"]),
    "nested list": ('topology = [["torus:4x4"]]\nalgorithm = "ring"\n',
                    ["topology[0]", "nested arrays"]),
    "empty list": ('topology = []\nalgorithm = "ring"\n', ["topology", "empty array"]),
    "where unknown name": ('topology = "torus:4x4"\nalgorithm = "ring"\nwhere = "nods > 2"\n',
                           ["where", "unknown name 'nods'", "nodes"]),
    "where not allowed": (('topology = "torus:4x4"\nalgorithm = "ring"\n'
                          'where = "__import__(\'os\')"\n'), ["where", "only these functions"]),
    "malformed toml": ('topology = "torus:4x4\nalgorithm = "ring"\n', ["not valid TOML"]),
    "missing required": ('algorithm = "ring"\n', ["missing required key 'topology'"]),
    "missing in group": ('algorithm = "ring"\n[groups.a]\nsizes = "1KiB"\n',
                         ["groups.a", "missing required key 'topology'"]),
    "bad group value": (('algorithm = "ring"\n[groups.a]\ntopology = "torus:4x4"\n'
                        'alpha = "soon"\n'), ["groups.a.alpha", "soon"]),
    "groups not tables": ('algorithm = "ring"\ngroups = "a"\n', ["groups", "[groups.NAME]"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_file_fails_before_any_work(tmp_path, case):
    text, needles = BAD[case]
    path = write(tmp_path, text, "bad_sweep.toml")
    out = tmp_path / "dataset"
    with pytest.raises(ConfigError) as err:
        quiet(path, out)
    msg = str(err.value)
    assert "bad_sweep.toml" in msg
    for needle in needles:
        assert needle in msg, (needle, msg)
    assert not out.exists()


def test_every_problem_in_one_error(tmp_path):
    text = """
    bandwith = "1Gb/s"
    [groups.a]
    topology = ["torus:4x4", "torus:0"]
    algorithm = ["ring", "nope"]
    hop_latency = "-1ns"
    [groups.b]
    topology = "torus:4x4"
    algorithm = "recdoub:variant=fast"
    [[groups.b.exclude]]
    colour = "red"
    """
    with pytest.raises(SweepConfigError) as err:
        load_sweep(write(tmp_path, text))
    locs = [loc for loc, _ in err.value.problems]
    assert locs == ["bandwith", "groups.a.topology[1]", "groups.a.algorithm[1]",
                    "groups.a.hop_latency", "groups.b.algorithm", "groups.b.exclude[0].colour"]
    assert str(err.value).startswith(f"{tmp_path / 'cfg.toml'}: 6 problems")


def test_cli_bad_file_exit_2(tmp_path, capsys):
    path = write(tmp_path, BAD["unknown algorithm"][0])
    code = main(["sweep", str(path), "--out", str(tmp_path / "d"), "-q"])
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("flowemu: error: ") and "rnig" in err
    assert "Traceback" not in err and not (tmp_path / "d").exists()


def test_bad_jobs_and_scheduler(tmp_path):
    path = write(tmp_path, SMALL)
    for kw in ({"jobs": 0}, {"jobs": "2"}, {"scheduler": "localhost"},
               {"jobs": 2, "scheduler": "tcp://x:1"}, {"chunk_size": 0}):
        with pytest.raises(ConfigError):
            quiet(path, tmp_path / "d", **kw)
    assert not (tmp_path / "d").exists()


# ------------------------------------------------------------------ running

def test_sweep_writes_dataset_and_resumes(tmp_path):
    path = write(tmp_path, SMALL)
    out = tmp_path / "d"
    s1 = quiet(path, out, jobs=1)
    assert (s1.total, s1.computed, s1.skipped, s1.failed) == (12, 12, 0, 0)
    df = load(out)
    assert len(df) == 12 * 7 == s1.rows
    assert not df.duplicated(["config_hash", "size_bytes"]).any()
    assert df["flowemu_version"].eq(flowemu.__version__).all()
    for col in ("sweep", "group", "config_key", "config_hash", "label", "algorithm_spec",
                "sizes_spec", *flowemu.RESULT_COLUMNS):
        assert col in df.columns
    assert (df["goodput_Bps"] == df["size_bytes"] / df["time_s"]).all()
    assert (out / "_config.toml").read_text() == path.read_text()
    assert not list(out.glob(".tmp-*"))
    s2 = quiet(path, out, jobs=1)
    assert (s2.computed, s2.skipped, s2.rows) == (0, 12, 0)
    pd.testing.assert_frame_equal(sorted_rows(load(out)), sorted_rows(df))
    # a grown grid computes only the new configurations
    write(tmp_path, SMALL.replace('"400Gb/s"]', '"400Gb/s", "800Gb/s"]'))
    s3 = quiet(path, out, jobs=1)
    assert (s3.computed, s3.skipped) == (6, 12)
    assert len(load(out)) == 18 * 7


def test_rows_equal_direct_simulate(tmp_path):
    out = tmp_path / "d"
    quiet(write(tmp_path, SMALL), out, jobs=1)
    df = load(out)
    row = df[(df.topology == "torus:4x4") & (df.label == "recdoub:variant=latency")
             & (df.bandwidth_Bps == 100e9 / 8)].sort_values("size_bytes")
    ref = flowemu.simulate("torus:4x4", "recdoub:variant=latency", "1KiB..64KiB",
                           bandwidth="100Gb/s")
    assert list(row["time_s"]) == pytest.approx(list(ref["time_s"]), rel=1e-12)
    assert list(row["variant"]) == list(ref["variant"])


def test_one_simulate_call_per_configuration(tmp_path, monkeypatch):
    from flowemu.api import simulation as api
    calls = []
    real = api.simulate_rows

    def counting(topology, algorithm, sizes, **kw):
        calls.append((algorithm, tuple(sizes)))
        return real(topology, algorithm, sizes, **kw)

    monkeypatch.setattr(api, "simulate_rows", counting)
    plan = load_sweep(write(tmp_path, SMALL))
    quiet(plan.path, tmp_path / "d", jobs=1)
    assert len(calls) == len(plan.configs)
    assert all(sizes == plan.configs[0].sizes for _, sizes in calls)


def test_jobs_1_equals_jobs_2(tmp_path):
    path = write(tmp_path, SMALL)
    a = quiet(path, tmp_path / "a", jobs=1, chunk_size=5)
    b = quiet(path, tmp_path / "b", jobs=2, chunk_size=2)
    assert a.computed == b.computed == 12
    assert len(list((tmp_path / "b").glob("part-*.parquet"))) == 6
    pd.testing.assert_frame_equal(sorted_rows(load(a)), sorted_rows(load(b)))


def test_dask_cluster_equals_local(tmp_path):
    distributed = pytest.importorskip("distributed", reason="dask.distributed not installed")
    path = write(tmp_path, SMALL)
    local = quiet(path, tmp_path / "local", jobs=1)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        remote = quiet(path, tmp_path / "dask", scheduler=cluster.scheduler_address,
                       chunk_size=3)
    assert remote.computed == 12 and remote.failed == 0
    pd.testing.assert_frame_equal(sorted_rows(load(local)), sorted_rows(load(remote)))


SLOW = """
sizes = "1KiB..1MiB"
topology = ["torus:32x32", "torus:64x16"]
algorithm = ["ring", "ring:ports=2", "recdoub:variant=latency", "recdoub:variant=bandwidth"]
bandwidth = ["100Gb/s", "400Gb/s", "1.6Tb/s"]
hop_latency = ["300ns", "1us"]
"""


def test_sigkill_then_resume_equals_uninterrupted(tmp_path):
    path = write(tmp_path, SLOW)
    total = len(load_sweep(path).configs)
    ref = quiet(path, tmp_path / "ref", jobs=1)
    out = tmp_path / "killed"
    rng = random.Random()
    seed = rng.randrange(10**6)
    rng.seed(seed)
    target = rng.randint(1, total // 2)
    proc = start_sweep(path, out, "--jobs", "1", "--chunk-size", "1")
    deadline = time.monotonic() + 120
    while len(list(out.glob("part-*.parquet"))) < target:
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline
        time.sleep(0.002)
    time.sleep(rng.uniform(0, 0.02))      # anywhere, even in the middle of a write
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    written = len(list(out.glob("part-*.parquet")))
    assert target <= written < total, f"seed {seed}"
    partial = load(out)
    assert len(partial) == written * 11          # whole parts only
    # and the configuration finished since, if any, in the journal
    journaled = {fields["config_hash"] for j in (out / journal.JOURNAL_DIR).glob("*")
                 for fields, _ in journal.read(j)[0]} - set(partial["config_hash"])
    assert len(journaled) <= 1, f"seed {seed}"
    res = quiet(path, out, jobs=1)
    assert res.skipped == written + len(journaled), f"seed {seed}"
    assert res.computed == total - written - len(journaled), f"seed {seed}"
    assert not list(out.glob(".tmp-*"))
    final = load(out)
    assert not final.duplicated(["config_hash", "size_bytes"]).any()
    pd.testing.assert_frame_equal(sorted_rows(final), sorted_rows(load(ref)))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_killed_parent_takes_its_workers_along(tmp_path):
    path = write(tmp_path, SLOW)
    out = tmp_path / "d"
    proc = start_sweep(path, out, "--jobs", "2", "--chunk-size", "1",
                       stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(out.glob("part-*.parquet")):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    workers = children(proc.pid)
    assert len(workers) == 2
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(w) for w in workers)


ERRORS = """
sizes = "1KiB,1MiB"
topology = "torus:4x4"
algorithm = ["ring", "recdoub"]
ranks = [4, 8, 16]            # 16 ranks: refused when they run (fail_when_run)
"""


def test_failing_configuration_is_recorded_and_sweep_goes_on(tmp_path, capsys, monkeypatch):
    fail_when_run(monkeypatch, lambda cfg: cfg.ranks == 16)
    path = write(tmp_path, ERRORS)
    out = tmp_path / "d"
    s = quiet(path, out, jobs=1, chunk_size=1)
    assert (s.total, s.computed, s.failed, s.internal) == (6, 4, 2, 0)
    errs = load_errors(out)
    assert len(errs) == 2 and set(errs["ranks"]) == {16}
    assert (errs["error"] == NO_MEMORY).all()
    assert set(errs["error_type"]) == {"ConfigError"}
    assert (out / ERRORS_DIR).is_dir()
    assert len(load(out)) == 4 * 2
    # not retried on resume ...
    s2 = quiet(path, out, jobs=1)
    assert (s2.computed, s2.failed, s2.skipped) == (0, 0, 6)
    # ... unless asked; they fail again, recorded once each
    s3 = quiet(path, out, jobs=1, retry_errors=True)
    assert (s3.computed, s3.failed, s3.skipped) == (0, 2, 4)
    assert len(load_errors(out)) == 2
    assert [k for k, _ in s3.errors] == [c.key for c in load_sweep(path).configs
                                         if c.ranks == 16]
    assert all(m == NO_MEMORY for _, m in s3.errors)
    # the CLI keeps the results, says how many failed and the first errors, exits 1
    code = main(["sweep", str(path), "--out", str(tmp_path / "e"), "-q", "--jobs", "2"])
    out_text, err = capsys.readouterr()
    assert code == 1 and "2 failed" in out_text
    lines = err.splitlines()
    assert lines[0].startswith("sweep cfg: 2 of 6 configurations failed") and len(lines) == 3
    assert all("|ranks=16|" in line and NO_MEMORY in line for line in lines[1:])
    assert "Traceback" not in err and len(load(tmp_path / "e")) == 4 * 2
    # a re-run still fails (the dataset is incomplete) and says the failures are older
    code = main(["sweep", str(path), "--out", str(tmp_path / "e"), "-q"])
    err = capsys.readouterr().err
    assert code == 1 and "2 of them in an earlier run" in err


def test_unexpected_exception_is_recorded_as_internal(tmp_path, monkeypatch):
    import flowemu.study.sweep.executor as sw
    real = sw.config_rows

    def buggy(cfg, threads=None, max_memory=None):
        if cfg.label == "ring":
            raise ZeroDivisionError("oops")
        return real(cfg, threads, max_memory)

    monkeypatch.setattr(sw, "config_rows", buggy)
    s = quiet(write(tmp_path, SMALL), tmp_path / "d", jobs=1)
    assert s.failed == s.internal == 4 and s.computed == 8
    errs = load_errors(tmp_path / "d")
    assert errs["internal"].all() and errs["error"].str.contains("oops").all()
    assert "bugs" in s.text()


def test_ctrl_c_inside_a_kernel_stops_the_sweep_and_records_no_failure(tmp_path, monkeypatch):
    """A Ctrl-C that lands while a numba kernel runs comes out of it as a
    SystemError chained to the KeyboardInterrupt; with ``jobs=1`` the sweep
    took it for a bug of that configuration, recorded it (lost until
    --retry-errors) and ran on. It stops as a Ctrl-C does: what finished
    before is saved, the rest runs on the next call."""
    import flowemu.study.sweep.executor as sw
    real = sw.config_rows
    ran = []

    def interrupted_in_kernel(cfg, threads=None, max_memory=None):
        if len(ran) == 2:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as exc:
                raise SystemError("CPUDispatcher(<function dataflow_kernel>) returned a result "
                                  "with an exception set") from exc
        ran.append(cfg.key)
        return real(cfg, threads, max_memory)

    monkeypatch.setattr(sw, "config_rows", interrupted_in_kernel)
    path = write(tmp_path, SMALL)
    with pytest.raises(KeyboardInterrupt):
        quiet(path, tmp_path / "d", jobs=1, chunk_size=1)
    assert not (tmp_path / "d" / ERRORS_DIR).exists() or load_errors(tmp_path / "d").empty
    assert set(load(tmp_path / "d")["config_key"]) == set(ran)
    monkeypatch.setattr(sw, "config_rows", real)
    s = quiet(path, tmp_path / "d", jobs=1)
    assert (s.skipped, s.failed, s.computed) == (2, 0, s.total - 2)


def test_interrupted_reads_the_exception_chain():
    def chained(inner, outer):   # (as ``raise outer from inner`` leaves them)
        outer.__cause__ = inner
        return outer

    assert interrupted(chained(KeyboardInterrupt(), SystemError("x")))
    assert interrupted(chained(chained(KeyboardInterrupt(), SystemError("x")), ValueError("y")))
    assert not interrupted(chained(ValueError("a"), SystemError("b")))
    assert not interrupted(SystemError("c"))
    assert interrupted(KeyboardInterrupt())


def test_locked_dataset_is_refused(tmp_path):
    path = write(tmp_path, SMALL)
    out = tmp_path / "d"
    out.mkdir()
    with DatasetLock(out), pytest.raises(ConfigError, match="in use by another sweep"):
        quiet(path, out, jobs=1)


def test_python_entry_points(tmp_path, monkeypatch):
    path = write(tmp_path, SMALL, "tiny.toml")
    monkeypatch.chdir(tmp_path)
    p = run_sweep(path, jobs=1, progress=False)
    assert p == Path("results") / "tiny" and len(load(p)) == 84
    s = flowemu.sweep(path, jobs=1, progress=False)     # the module is callable
    assert os.fspath(s) == str(p) and s.skipped == 12
    assert len(flowemu.load(s)) == 84
    assert flowemu.sweep.run_sweep is run_sweep


def test_cli_sweep_and_dry_run(tmp_path, capsys):
    path = write(tmp_path, SMALL)
    assert main(["sweep", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "12 configurations in 1 group, 84 rows" in out
    assert "g|torus:4x4|ring" in out
    code = main(["sweep", str(path), "--out", str(tmp_path / "d"), "--jobs", "1"])
    out, err = capsys.readouterr()
    assert code == 0 and "12 computed (84 rows)" in out
    assert "12/12 100%" in err                 # plain progress lines (not a terminal)
    # a dry run into the dataset says what a run would reuse, and writes nothing
    before = sorted(p.name for p in (tmp_path / "d").rglob("*"))
    (tmp_path / "more").mkdir()
    bigger = write(tmp_path / "more", SMALL.replace('"400Gb/s"]', '"400Gb/s", "200Gb/s"]'))
    assert main(["sweep", str(bigger), "--dry-run", "--out", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if "|" in ln]
    assert sum(ln.endswith("(reuse)") for ln in lines) == 12
    assert sum(ln.endswith("(run)") for ln in lines) == len(lines) - 12 == 6
    assert f"into {tmp_path / 'd'}: 6 to run, 12 reused\n" in out
    assert sorted(p.name for p in (tmp_path / "d").rglob("*")) == before
    # ... and what it would set aside (it said nothing of them)
    (tmp_path / "less").mkdir()
    smaller = write(tmp_path / "less", SMALL.replace('"100Gb/s", ', ""))
    assert main(["sweep", str(smaller), "--dry-run", "--out", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    kept = sum(ln.endswith("(reuse)") for ln in out.splitlines())
    assert 0 < kept < 12
    assert (f"into {tmp_path / 'd'}: 0 to run, {kept} reused, {12 - kept} set aside (the file "
            "no longer lists them; --prune deletes them)\n") in out
    assert sorted(p.name for p in (tmp_path / "d").rglob("*")) == before
    # another sweep file's dry run into it says the run would be refused
    other = write(tmp_path, SMALL, "other.toml")
    assert main(["sweep", str(other), "--dry-run", "--out", str(tmp_path / "d")]) == 0
    out, err = capsys.readouterr()
    assert f"note: {tmp_path / 'd'} holds the results of sweep 'cfg', not of 'other': a run " \
        "into it is refused" in err
    assert "(reuse)" not in out and "into " not in out
    assert main(["sweep", str(other), "--out", str(tmp_path / "d"), "-q"]) == 2
    assert "holds the results of sweep 'cfg'" in capsys.readouterr().err


# ------------------------------------------------------------------ files a sweep file names

GRAPH = """[[nodes]]
id = "a"
endpoint = true
[[nodes]]
id = "b"
endpoint = true
[[nodes]]
id = "s"
[[links]]
src = "a"
dst = "s"
[[links]]
src = "b"
dst = "s"
"""

#: a sweep file naming a file of every kind (traffic files: test_sweep_traffic.py)
NAMES_FILES = """
sizes = "1KiB"
algorithm = "ring"
[groups.graph]
topology = ["graph:net.toml", "graph:net.toml,split=paths", "torus:4"]
[[groups.graph.exclude]]
topology = "graph:net.toml,split=paths"
[groups.files]
topology = "torus:4"
ranks = 2
placement = "p.txt"
network = "n.toml"
background = "bg.csv"
[groups.jobs]
topology = "torus:4"
jobs = [["algorithm=ring size=1KiB ranks=2 placement=file:j.txt"]]
"""


def files_beside(directory: Path, bandwidth: str = "100Gb/s") -> None:
    """The files NAMES_FILES names, in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "net.toml").write_text(GRAPH)
    (directory / "p.txt").write_text("1 0\n")
    (directory / "j.txt").write_text("2 3\n")
    (directory / "n.toml").write_text(f'[network]\nbandwidth = "{bandwidth}"\n')
    (directory / "bg.csv").write_text("step,src,dst,bytes\n0,0,1,1e9\n")


def test_files_are_read_beside_the_sweep_file_from_any_directory(tmp_path, monkeypatch,
                                                                 capsys):
    """Every file a sweep file names is read relative to its directory, the
    current directory's file of the same name left alone."""
    study = tmp_path / "study"
    files_beside(study)
    write(study, NAMES_FILES, "s.toml")
    files_beside(tmp_path / "elsewhere", bandwidth="1Gb/s")   # same names, not used
    monkeypatch.chdir(tmp_path / "elsewhere")
    plan = load_sweep("../study/s.toml")
    assert plan.notes == []
    # the configurations are the same from any directory: a file by its name
    # in the sweep file (and its contents), not by the path opened from here
    monkeypatch.chdir(study)
    here = {c.key.replace(f"{study}/", ""): c.hash for c in load_sweep("s.toml").configs}
    assert {c.key.replace(f"{study}/", ""): c.hash for c in plan.configs} == here
    monkeypatch.chdir(tmp_path)
    assert {c.hash for c in load_sweep("study/s.toml").configs} == set(here.values())
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert [c.topology for c in plan.groups["graph"]] == [f"graph:{study / 'net.toml'}",
                                                          "torus:4"]
    (files,) = plan.groups["files"]
    assert (files.placement, files.network_preset, files.background, files.bandwidth) == (
        str(study / "p.txt"), str(study / "n.toml"), str(study / "bg.csv"), 100e9 / 8)
    (jobs,) = plan.groups["jobs"]
    assert jobs.jobs == (f"algorithm=ring size=1024 ranks=2 placement={study / 'j.txt'}",)
    summary = sweep("../study/s.toml", tmp_path / "out", jobs=1, progress=False)
    assert (summary.computed, summary.errors) == (4, [])
    assert capsys.readouterr().err == ""
    # the rows name the file as the sweep file does (timed on the one beside it)
    row = load(tmp_path / "out").set_index("topology").loc["graph:net.toml"]
    assert row["time_s"] == flowemu.simulate(f"graph:{study / 'net.toml'}", "ring",
                                             "1KiB")["time_s"].iloc[0]
    # beside a sweep file in the current directory, a path stays as written
    monkeypatch.chdir(study)
    for path in ("s.toml", study / "s.toml"):
        plan = load_sweep(path)
        assert plan.groups["graph"][0].topology == "graph:net.toml"
        assert plan.groups["files"][0].placement == "p.txt"


def test_a_sweep_run_from_another_directory_writes_the_same_rows(tmp_path, monkeypatch):
    """The rows of a sweep named each file by the path opened from the
    current directory (placement 'study/p.txt' run from above it, 'p.txt'
    beside it): one scenario became two in compare and plot, and a where
    naming a file ('placement == "p.txt"') held only beside the sweep file.
    Every column is now the same from any directory."""
    study = tmp_path / "study"
    files_beside(study)
    write(study, NAMES_FILES + '\n[groups.where]\ntopology = "torus:4"\nranks = 2\n'
                 'placement = ["linear", "p.txt"]\nwhere = "placement == \'p.txt\'"\n',
          "s.toml")
    monkeypatch.chdir(study)
    sweep("s.toml", tmp_path / "beside", jobs=1, progress=False)
    monkeypatch.chdir(tmp_path)
    sweep("study/s.toml", tmp_path / "above", jobs=1, progress=False)
    beside, above = (load(tmp_path / d).drop(columns="flowemu_version")
                     .sort_values(["config_key", "job"]).reset_index(drop=True)
                     for d in ("beside", "above"))
    pd.testing.assert_frame_equal(beside, above)
    assert set(above["placement"]) == {"linear", "p.txt", "j.txt"}
    assert set(above["background"]) == {"", "bg.csv"}
    assert "graph:net.toml" in set(above["topology"])
    assert any("placement=j.txt]" in k for k in above["config_key"])
    assert list(above.loc[above.group == "where", "placement"]) == ["p.txt"]
    assert not any(str(study) in str(v) or "study/" in str(v) for v in above.to_numpy().ravel())
    # and the dataset is the one resumed from anywhere
    summary = sweep("study/s.toml", tmp_path / "beside", jobs=1, progress=False)
    assert summary.computed == 0


def test_a_file_written_two_ways_is_one_file_from_any_directory(tmp_path, monkeypatch):
    """``p.txt`` and ``./p.txt`` were two configurations beside the sweep
    file and one from above it (where a where naming 'p.txt' then matched
    neither): a file's name is taken without its ./ and dir/.. parts."""
    study = tmp_path / "study"
    files_beside(study)
    write(study, 'sizes = "1KiB"\ntopology = "torus:4"\nalgorithm = "ring"\nranks = 2\n'
                 'placement = ["p.txt", "./p.txt", "sub/../p.txt", "linear"]\n'
                 'background = ["bg.csv", "./bg.csv"]\n'
                 "where = \"placement == 'p.txt' and background == 'bg.csv'\"\n", "s.toml")
    plans = []
    for here, name in ((study, "s.toml"), (tmp_path, "study/s.toml")):
        monkeypatch.chdir(here)
        plan = load_sweep(name)
        plans.append(({c.key: c.hash for c in plan.configs}, plan.notes))
    assert plans[0] == plans[1]
    keys, notes = plans[0]
    assert list(keys) == [("main|torus:4|ring:ports=max|ranks=2|placement=p.txt|"
                          "background=bg.csv|sizes=1KiB")]
    assert notes == [
        "placement: './p.txt' is the same as 'p.txt'; the grid counts it once",
        "placement: 'sub/../p.txt' is the same as 'p.txt'; the grid counts it once",
        "background: './bg.csv' is the same as 'bg.csv'; the grid counts it once"]


def test_a_file_only_in_the_current_directory_is_used_with_a_note(tmp_path, monkeypatch,
                                                                  capsys):
    """A sweep file naming its files relative to the directory flowemu runs
    in (as files other than traffic files were read): they are still found
    there, their configurations keep the hashes they had, and a note says
    which file was read from where."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "net.toml").write_text(GRAPH)
    (files / "p.txt").write_text("1 0\n")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub",
          'sizes = "1KiB"\nalgorithm = "ring"\n[groups.g]\ntopology = "graph:files/net.toml"\n'
          '[groups.p]\ntopology = "torus:4"\nranks = 2\nplacement = "files/p.txt"\n', "s.toml")
    monkeypatch.chdir(tmp_path)
    plan = load_sweep("sub/s.toml")
    # recorded before files were read beside the sweep file
    assert {c.key: c.hash for c in plan.configs} == {
        "g|graph:files/net.toml|ring:ports=max|sizes=1KiB": "bd2164d95798",
        "p|torus:4|ring:ports=max|ranks=2|placement=files/p.txt|sizes=1KiB": "79f145fcbd95"}
    assert plan.notes == [
        f"sub/s.toml: groups.{loc}: read {files / name} from the current directory: there is "
        f"no {tmp_path / 'sub' / 'files' / name} beside the sweep file, where its paths are "
        "read from" for loc, name in (("g.topology", "net.toml"), ("p.placement", "p.txt"))]
    code = main(["sweep", "sub/s.toml", "--out", str(tmp_path / "d"), "--jobs", "1", "-q"])
    out, err = capsys.readouterr()
    assert code == 0 and "2 computed" in out
    assert err.splitlines() == [f"flowemu: note: {note}" for note in plan.notes]
    assert main(["sweep", "sub/s.toml", "--dry-run"]) == 0
    assert capsys.readouterr().err.count("flowemu: note: sub/s.toml: groups.") == 2


def test_a_missing_file_names_where_it_was_looked_for(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", 'sizes = "1KiB"\nalgorithm = "ring"\n[groups.g]\n'
                            'topology = "graph:gone.toml"\n[groups.p]\ntopology = "torus:4"\n'
                            'placement = "gone.txt"\nnetwork = "gone-net.toml"\n', "s.toml")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SweepConfigError) as exc:
        load_sweep("sub/s.toml")
    problems = dict(exc.value.problems)
    for loc, name in (("groups.g.topology", "gone.toml"), ("groups.p.placement", "gone.txt"),
                      ("groups.p.network", "gone-net.toml")):
        assert f"{name}: file not found; looked for {tmp_path / 'sub' / name} (beside the " \
               f"sweep file) and {tmp_path / name} (in the current directory)" in problems[loc]
    assert problems["groups.g.topology"].startswith("'graph:gone.toml': graph file ")


# ------------------------------------------------------------------ progress

class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_on_a_terminal():
    stream = _Tty()
    bar = Progress(10, "sweep x", stream=stream)
    for _ in range(10):
        bar.update(1)
    bar.close()
    text = stream.getvalue()
    assert text.startswith("\rsweep x [") and "10/10 100%" in text and "cfg/s" in text
    assert "ETA" in text and text.endswith("\n") and text.count("\n") == 1


def test_progress_plain_lines_otherwise():
    stream = io.StringIO()
    bar = Progress(4, "sweep x", stream=stream, interval=3600)
    bar.update(1)
    bar.update(3, errors=1)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "sweep x: 4 configurations to run"
    assert "1/4  25%" in lines[1] and "ETA" in lines[1]
    assert lines[-1].startswith("sweep x: 4/4 100%") and lines[-1].endswith(", 1 error")
    assert "\r" not in stream.getvalue()
    silent = io.StringIO()
    Progress(3, "x", stream=silent, enabled=False).update(3)
    assert silent.getvalue() == ""


def test_config_is_plain_data():
    import pickle
    plan_cfg = Config("s", "g", "torus:4x4", "ring:ports=max", "ring", None, (1024,), 5e10,
                      1e-7, 3e-7, 0.0, 0.0, 0.0, float("inf"), 0.0, "split", 0, "k", "h")
    assert pickle.loads(pickle.dumps(plan_cfg)) == plan_cfg


def test_a_retry_that_succeeds_leaves_no_error_record(tmp_path, monkeypatch):
    """After --retry-errors succeeded, _errors/ still held the old records:
    load_errors left them out, but pd.read_parquet of the folder showed
    them as current failures. They are deleted, and a configuration that
    failed again keeps its latest record only."""
    failing = {8, 16}
    fail_when_run(monkeypatch, lambda cfg: cfg.ranks in failing)
    path = write(tmp_path, ERRORS)
    out = tmp_path / "d"
    quiet(path, out, jobs=1)
    assert sorted(pd.read_parquet(out / ERRORS_DIR)["ranks"]) == [8, 8, 16, 16]
    failing.discard(8)   # (the workers are forked: they see this)
    s = quiet(path, out, jobs=1, retry_errors=True)
    assert (s.computed, s.failed) == (2, 2)
    plain = pd.read_parquet(out / ERRORS_DIR)
    assert sorted(plain["ranks"]) == [16, 16] and len(load_errors(out)) == 2
    failing.clear()
    quiet(path, out, jobs=1, retry_errors=True)
    assert not list((out / ERRORS_DIR).glob("*.parquet")) and load_errors(out).empty


def test_a_where_reads_an_option_some_algorithms_lack(tmp_path):
    """options['variant'] failed with a KeyError at ring's configuration,
    so one expression could not filter a set of algorithms; an option no
    algorithm of the grid has is still refused, as a misspelling."""
    path = tmp_path / "o.toml"
    head = ('sizes = ["1MiB"]\ntopology = "torus:4x4"\nalgorithm = ["ring", '
            '"recdoub:variant=latency", "recdoub:variant=bandwidth"]\n')
    path.write_text(head + "where = \"options['variant'] != 'latency'\"\n")
    assert [c.label for c in load_sweep(path).configs] == ["ring", "recdoub:variant=bandwidth"]
    path.write_text(head + "exclude = [{where = \"options['variant'] == 'latency'\"}]\n")
    assert [c.label for c in load_sweep(path).configs] == ["ring", "recdoub:variant=bandwidth"]
    path.write_text(head + "where = \"options['varient'] != 'latency'\"\n")
    with pytest.raises(SweepConfigError, match=r"where: \"options\['varient'\] != 'latency'\": "
                                               r"no algorithm has the option 'varient' \(did "
                                               r"you mean 'variant'\?\); their options: layout, "
                                               r"mirrored, ports, variant"):
        load_sweep(path)


def test_a_top_level_value_every_group_overrides_is_checked_and_noted(tmp_path):
    """bandwidth = 400 (no unit) at the top of the file passed when every
    group gave its own bandwidth: the value was never read."""
    head = 'sizes = ["1KiB"]\ntopology = "torus:4x4"\nalgorithm = "ring"\n'
    groups = '[groups.a]\nbandwidth = "100Gb/s"\n[groups.b]\nbandwidth = "200Gb/s"\n'
    path = tmp_path / "t.toml"
    path.write_text(head + "bandwidth = 400\n" + groups)
    with pytest.raises(SweepConfigError, match=r"bandwidth: 400 has no unit"):
        load_sweep(path)
    path.write_text(head + 'bandwidth = "400Gb/s"\n' + groups)
    plan = load_sweep(path)
    assert len(plan.configs) == 2
    assert "bandwidth: every group gives its own; the top-level value is not used" in plan.notes
    path.write_text(head + 'bandwidth = "400Gb/s"\n[groups.a]\nseed = 0\n')
    assert not [n for n in load_sweep(path).notes if "not used" in n]


def test_a_where_names_a_topology_in_any_spelling(tmp_path):
    """A configuration holds the canonical spec ('tree:4x4,uplinks=2:1' is
    'tree:4x4,uplinks=2:', 500ns is 0.5us); an exclude written with the
    file's own spelling matched nothing, silently (a dataset's where already
    compared the canonical specs)."""
    path = tmp_path / "s.toml"
    path.write_text('sizes = ["1KiB"]\n'
                    'topology = ["tree:4x4,uplinks=2:1", "leafspine:2x2x1,uplink_latency=500ns", '
                    '"tree:4x4"]\nalgorithm = ["cps", "ring"]\n'
                    '[[exclude]]\nalgorithm = "cps"\n'
                    "where = \"topology in ['tree:4x4,uplinks=2:1', "
                    "'leafspine:2x2x1,uplink_latency=500ns']\"\n")
    got = sorted((c.topology, c.label) for c in load_sweep(path).configs)
    assert got == [("leafspine:2x2x1,uplink_latency=0.5us", "ring"), ("tree:4x4", "cps"),
                   ("tree:4x4", "ring"), ("tree:4x4,uplinks=2:", "ring")]
