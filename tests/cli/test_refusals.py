"""Options that cannot take effect, and values beyond what flowemu can hold,
are refused up front with one line naming them."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import flowemu
from flowemu.core.errors import ConfigError
from flowemu.core.units import MAX_SIZE, parse_size
from flowemu.study.results import FIGURES_DIR
from tests.helpers.cli import one_error_line, run

SWEEP = 'topology = "torus:4x4"\nalgorithm = ["ring", "bucket"]\nsizes = "1KiB,2KiB"\n'


@pytest.fixture
def sweep_file(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SWEEP)
    return path


def test_sizes_beyond_exact_float_are_refused(capsys):
    assert parse_size(MAX_SIZE) == 2**53
    with pytest.raises(ConfigError, match=r"sizes: size '1e300' is larger than the 8PiB"):
        parse_size("1e300", "sizes")
    code, _, err = run(capsys, ["run", "-t", "torus:4x4", "-a", "ring", "-s", "1e300"])
    assert code == 2 and "--sizes" in one_error_line(err)


def test_sweep_of_a_directory_says_so(capsys, tmp_path):
    code, _, err = run(capsys, ["sweep", str(tmp_path)])
    assert code == 2 and "is a directory" in one_error_line(err)


@pytest.mark.parametrize("extra, option", [
    (["--scheduler-timeout", "3"], "--scheduler-timeout"),
    (["--dry-run", "--jobs", "2"], "--jobs"),
    (["--dry-run", "--prune"], "--prune"),
])
def test_sweep_options_that_cannot_apply(capsys, sweep_file, tmp_path, extra, option):
    out = tmp_path / "d"
    code, _, err = run(capsys, ["sweep", str(sweep_file), "-q"] + extra
                       + ([] if "--dry-run" in extra else ["-o", str(out)]))
    assert code == 2
    assert one_error_line(err).startswith(f"flowemu: error: {option}: ")
    assert not out.exists()


def test_sweep_messages_name_the_option(capsys, sweep_file, tmp_path):
    code, _, err = run(capsys, ["sweep", str(sweep_file), "-o", str(tmp_path / "d"),
                                "--jobs", "2", "--scheduler", "tcp://127.0.0.1:1"])
    assert code == 2 and one_error_line(err).startswith("flowemu: error: --jobs: ")


@pytest.fixture
def dataset(tmp_path, sweep_file):
    out = tmp_path / "d"
    flowemu.sweep(sweep_file, out, jobs=1, progress=False)
    return out


@pytest.mark.parametrize("extra, option", [
    (["--kind", "gain"], "--kind"), (["--group", "main"], "--group"),
    (["--where", "nodes > 1"], "--where"), (["--title", "x"], "--title"),
    (["--relative"], "--relative"),
])
def test_plot_filters_need_out(capsys, dataset, extra, option):
    code, _, err = run(capsys, ["plot", str(dataset)] + extra)
    line = one_error_line(err)
    assert code == 2 and line.startswith(f"flowemu: error: {option}: chooses one figure, "
                                         "which needs --out FILE")
    assert "drop it" not in line   # (it needs --out: dropping it is not the one way)
    assert not (dataset / FIGURES_DIR).exists()


@pytest.mark.parametrize("kind", ["time", "gain", "gain-curve", "slowdown"])
def test_relative_goes_with_the_goodput_figure(capsys, dataset, tmp_path, kind):
    code, _, err = run(capsys, ["plot", str(dataset), "--kind", kind, "--relative",
                                "-o", str(tmp_path / "r.png")])
    assert code == 2
    assert one_error_line(err) == (f"flowemu: error: --relative goes with --kind goodput, "
                                   f"not {kind}")
    assert not (tmp_path / "r.png").exists()


def test_gain_curve_needs_a_column_that_varies(capsys, dataset, tmp_path):
    code, _, err = run(capsys, ["plot", str(dataset), "--kind", "gain-curve",
                                "--by", "alpha_s", "-o", str(tmp_path / "g.png")])
    line = one_error_line(err)
    assert code == 2 and line.startswith("flowemu: error: --by: 'alpha_s' has a single value")
    assert not (tmp_path / "g.png").exists()


def test_each_local_worker_gets_a_share_of_the_memory_limit(monkeypatch):
    from flowemu.core import budget
    from flowemu.study.sweep import executor
    monkeypatch.setenv(budget.ENV_VAR, "6GiB")
    pool = executor.open_pool(3, None)
    try:
        assert pool.share.bytes == 2 * 2**30
    finally:
        pool.close()


def test_results_module_after_plain_import():
    code = "import flowemu; print(flowemu.results.TIE_RTOL > 0, callable(flowemu.results.load))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.getcwd()}, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]


def test_tied_demo_table_still_prints(dataset):
    from flowemu.cli.demo import comparison_table
    table = comparison_table(flowemu.load(dataset))
    assert isinstance(table, pd.DataFrame) and len(table) == 2


def test_algorithm_option_given_twice(capsys):
    with pytest.raises(ConfigError, match="option ports given twice"):
        flowemu.simulate("torus:4x4", "ring:ports=2,ports=1", "1KiB")
    code, _, err = run(capsys, ["run", "-t", "torus:4x4", "-a", "ring:ports=2,ports=1",
                                "-s", "1KiB"])
    assert code == 2 and "ports given twice" in one_error_line(err)


@pytest.mark.parametrize("call", [
    lambda: flowemu.simulate("torus:4x4", "ring", "1KiB", seed=3),
    lambda: flowemu.congestion("torus:4x4", "ring", ecmp="dor", seed=1),
    lambda: flowemu.flows("torus:4x4", "ring", size="1KiB", seed=2),
])
def test_seed_without_hash_is_refused(call):
    with pytest.raises(ConfigError, match="^seed: .* applies only to ecmp='hash'"):
        call()


def test_sweep_seeds_belong_to_hash(tmp_path):
    from flowemu.study.sweep import load_sweep
    path = tmp_path / "s.toml"
    path.write_text('topology = "torus:4x4"\nalgorithm = "ring"\nsizes = "1KiB"\n'
                    'ecmp = ["split", "hash"]\nseed = [0, 1, 2]\n')
    plan = load_sweep(path)
    # split takes no seed: one configuration; hash one per seed
    assert sorted((c.ecmp, c.seed) for c in plan.configs) == [
        ("hash", 0), ("hash", 1), ("hash", 2), ("split", 0)]
    path.write_text('topology = "torus:4x4"\nalgorithm = "ring"\nseed = [0, 1]\n')
    with pytest.raises(ConfigError, match=r"seed: a seed applies only to ecmp = \"hash\""):
        load_sweep(path)
    # reported beside another field's problem, not only once that one is mended
    path.write_text('topology = "torus:4x4"\nalgorithm = 5\nsizes = "1KiB"\nseed = [1, 2]\n')
    with pytest.raises(ConfigError) as err:
        load_sweep(path)
    assert [loc.split(": ")[-1] for loc, _ in err.value.problems] == ["algorithm", "seed"]


@pytest.mark.parametrize("extra, option", [
    (["--bandwidth", "-5Gb/s"], "--bandwidth"), (["--link-latency", "-1ns"], "--link-latency"),
    (["-s", "-1KiB"], "--sizes"),
])
def test_negative_values_are_values_not_options(capsys, extra, option):
    argv = ["run", "-t", "torus:4x4", "-a", "ring"] + (["-s", "1KiB"] if option != "--sizes"
                                                       else []) + extra
    code, _, err = run(capsys, argv)
    line = one_error_line(err)
    assert code == 2 and line.startswith(f"flowemu: error: {option}: ") and "expected" in line


def test_boolean_option_message_lists_every_spelling():
    with pytest.raises(ConfigError, match=r"allowed: true or false \(also yes/no, 1/0\)"):
        flowemu.simulate("torus:4x4", "recdoub:mirrored=maybe", "1KiB")
    for word in ("yes", "1", "true"):
        assert flowemu.simulate("torus:4x4", f"recdoub:mirrored={word}", "1KiB").shape[0] == 1


def test_refused_flow_dump_costs_no_simulation(capsys, tmp_path, no_work):
    # the dump is checked (and here refused) before the run's simulation starts
    code, _, err = run(capsys, ["run", "-t", "torus:8x8", "-a", "swing:variant=bandwidth",
                                "-s", "1MiB", "--flows-out", str(tmp_path / "f.csv"),
                                "--max-memory", "64KiB"])
    assert code == 2 and one_error_line(err).startswith("flowemu: error: --max-memory: ")
    assert not (tmp_path / "f.csv").exists()


def test_api_sizes_follow_the_one_size_rule():
    # the API took 2**60 bytes while --sizes refused it: one rule (units.parse_size) now
    with pytest.raises(ConfigError, match="sizes: size 1152921504606846976 is larger"):
        flowemu.simulate("torus:4x4", "ring", [2**60])


@pytest.mark.parametrize("call,needle", [
    (lambda: flowemu.Network(bandwidth=10**400), r"^bandwidth=100000\.\.\.\(401 digits\): a bare"),
    (lambda: flowemu.Network(link_latency=10**400), "^link_latency=100000"),
    (lambda: flowemu.Network(bandwidth=flowemu.units.Gbps(10**400)), "positive and finite"),
    (lambda: flowemu.Network(alpha=flowemu.units.ns(10**400)), "non-negative and finite"),
    (lambda: flowemu.simulate("torus:4x4", "ring", [10**400]), "is larger than the 8PiB"),
])
def test_numbers_too_large_for_a_double_are_config_errors(call, needle):
    with pytest.raises(ConfigError, match=needle):
        call()


def test_negative_rank_is_refused_where_ranks_are_mapped():
    from flowemu.algorithms.base import Reduction, Schedule, Step, Traffic
    from flowemu.api.flows import flow_table
    from flowemu.topology import parse_topology
    step = Step(Traffic(np.array([-1, 0]), np.array([0, 1]), np.ones(2)), Reduction.none())
    sched = Schedule("traffic", "t", 16, (step,))
    with pytest.raises(ConfigError, match=r"schedule: rank -1 is not allowed"):
        flow_table(sched, parse_topology("torus:4x4"), None, 1.0)


def test_sweep_seed_beyond_the_hash_range_is_refused_at_load(tmp_path):
    from flowemu.study.sweep import load_sweep
    path = tmp_path / "s.toml"
    path.write_text('topology = "torus:4x4"\nalgorithm = "ring"\necmp = "hash"\n'
                    'seed = 9223372036854775807\n')
    assert load_sweep(path).configs[0].seed == 2**63 - 1
    path.write_text('topology = "torus:4x4"\nalgorithm = "ring"\necmp = "hash"\n'
                    'seed = -1\n')
    with pytest.raises(ConfigError, match=r"seed: .*-1 is not allowed"):
        load_sweep(path)


def test_sweep_progress_must_be_a_flag(tmp_path, sweep_file):
    with pytest.raises(ConfigError, match="progress"):
        flowemu.sweep(sweep_file, tmp_path / "d", jobs=1, progress="no")


@pytest.mark.parametrize("argv, says", [
    # argparse said "unrecognized arguments: --slow 3=0.5" and no more (jobs takes no
    # slow ranks: they name ranks, which each job numbers from 0)
    (["jobs", "-t", "torus:4x4", "--job", "algorithm=ring size=1MiB ranks=8", "--slow", "3=0.5"],
     ("flowemu: error: unrecognized arguments: --slow 3=0.5 (jobs has no --slow option; run "
     "takes it; flowemu jobs --help lists its options)")),
    (["run", "-t", "torus:4x4", "-a", "ring", "--jobs=2"],
     ("flowemu: error: unrecognized arguments: --jobs=2 (run has no --jobs option; sweep takes "
     "it; flowemu run --help lists its options)")),
    (["list", "--nothing"],
     ("flowemu: error: unrecognized arguments: --nothing (list has no --nothing option; "
     "flowemu list --help lists its options)")),
    (["run", "-t", "torus:4x4", "-a", "ring", "extra"],
     "flowemu: error: unrecognized arguments: extra"),
])
def test_an_option_of_another_command_names_the_commands_that_take_it(argv, says, capsys):
    from flowemu.cli.app import main
    assert main(argv) == 2
    assert capsys.readouterr().err == says + "\n"


def test_an_algorithms_option_is_not_spelt_as_a_command_line_option(capsys):
    """ina's option collective=bcast was refused as "option --collective bcast
    is not allowed": the rewrite of Python keyword advice into options took
    the algorithm's option for the command's --collective."""
    from flowemu.cli.app import main
    assert main(["run", "-t", "tree:8", "-a", "ina:collective=bcast", "-s", "1KiB"]) == 2
    assert capsys.readouterr().err == ("flowemu: error: algorithm ina: option "
                                       "collective='bcast' is not allowed; allowed: allreduce, "
                                       "reduce\n")
