"""``make bench``'s comparison (``tests/benchmarks/compare.py``) on synthetic
saved runs in pytest-benchmark's format: a benchmark that got 2x slower
against the yardstick fails the run, naming it; equal runs and a machine
uniformly 2x slower pass. And the suite's benchmark names are unique, with
one yardstick."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from tests.benchmarks import compare
from tests.benchmarks.yardstick import YARDSTICK_BENCHMARK

HERE = Path(__file__).parent
BASE = {YARDSTICK_BENCHMARK: 0.080, "test_bench_solver": 0.640, "test_bench_route[split]": 0.008}


def saved_run(path: Path, medians: dict, when: str = "2026-01-01T00:00:00+00:00",
              extra: dict | None = None) -> Path:
    """A run as ``--benchmark-autosave`` writes it; ``extra``: the
    ``extra_info`` of benchmarks by name."""
    def bench(name, median):
        stats = {"min": median * 0.95, "max": median * 1.2, "mean": median, "stddev": 0.0,
                 "rounds": 5, "median": median, "iqr": 0.0, "q1": median, "q3": median,
                 "iqr_outliers": 0, "stddev_outliers": 0, "outliers": "0;0",
                 "ld15iqr": median, "hd15iqr": median, "ops": 1 / median,
                 "total": 5 * median, "iterations": 1}
        return {"group": None, "name": name, "params": None, "param": None,
                "extra_info": (extra or {}).get(name, {}),
                "fullname": f"tests/benchmarks/test_bench_x.py::{name}", "stats": stats,
                "options": {"disable_gc": False, "timer": "perf_counter", "min_rounds": 5,
                            "max_time": 1.0, "min_time": 5e-06, "warmup": False}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "machine_info": {"node": "n", "machine": "x86_64", "python_version": "3.11"},
        "commit_info": {"id": "0" * 40, "dirty": False, "branch": "main"},
        "benchmarks": [bench(n, m) for n, m in medians.items()],
        "datetime": when, "version": "5.1.0"}))
    return path


def run_compare(tmp_path, old: dict, new: dict, capsys):
    a = saved_run(tmp_path / "old.json", old)
    b = saved_run(tmp_path / "new.json", new)
    status = compare.main([str(a), str(b)])
    out = capsys.readouterr()
    return status, out.out + out.err


def test_equal_runs_pass(tmp_path, capsys):
    status, text = run_compare(tmp_path, BASE, BASE, capsys)
    assert status == 0 and "regressed" not in text


def test_uniformly_slower_machine_passes(tmp_path, capsys):
    status, text = run_compare(tmp_path, BASE, {k: 2 * v for k, v in BASE.items()}, capsys)
    assert status == 0 and "regressed" not in text


def test_faster_machine_hides_no_regression(tmp_path, capsys):
    # raw time unchanged on a machine whose copy is twice as fast: 2x slower really
    new = {**{k: v / 2 for k, v in BASE.items()}, "test_bench_solver": BASE["test_bench_solver"]}
    status, text = run_compare(tmp_path, BASE, new, capsys)
    assert status == 1 and "regressed: test_bench_solver" in text


def test_a_benchmark_twice_as_slow_fails_naming_it(tmp_path, capsys):
    new = {**BASE, "test_bench_solver": 2 * BASE["test_bench_solver"]}
    status, text = run_compare(tmp_path, BASE, new, capsys)
    assert status == 1
    line = next(t for t in text.splitlines() if t.startswith("regressed:"))
    assert "test_bench_solver" in line and "8 -> 16 copies" in line
    assert f"threshold +{100 * compare.THRESHOLD:.0f} %" in line
    assert sum(t.startswith("regressed:") for t in text.splitlines()) == 1


def test_growth_within_the_threshold_passes(tmp_path, capsys):
    within = 1 + 0.8 * compare.THRESHOLD
    new = {**BASE, "test_bench_solver": within * BASE["test_bench_solver"]}
    assert run_compare(tmp_path, BASE, new, capsys)[0] == 0


def test_a_copy_slowed_by_other_work_hides_no_regression(tmp_path, capsys):
    """The yardstick benchmark ran while other work took the memory bus (3x
    slower); a copy another benchmark recorded shows the machine's speed."""
    new = {**BASE, YARDSTICK_BENCHMARK: 3 * BASE[YARDSTICK_BENCHMARK],
           "test_bench_solver": 2 * BASE["test_bench_solver"]}
    a = saved_run(tmp_path / "old.json", BASE)
    b = saved_run(tmp_path / "new.json", new,
                  extra={"test_bench_route[split]": {"copy_1gib_ms": 81.0}})
    assert compare.main([str(a), str(b)]) == 1
    assert "regressed: test_bench_solver" in capsys.readouterr().err


def test_last_two_saved_runs_are_compared(tmp_path, capsys):
    root = tmp_path / ".benchmarks"
    saved_run(root / "Linux-CPython-3.11-64bit" / "0001_a.json", BASE, "2026-01-01T00:00:00")
    partial = {"test_bench_solver": 1.0}     # a -k run without the yardstick: skipped as old
    saved_run(root / "Linux-CPython-3.11-64bit" / "0002_b.json", partial, "2026-01-02T00:00:00")
    slower = {**BASE, "test_bench_route[split]": 3 * BASE["test_bench_route[split]"]}
    saved_run(root / "Linux-CPython-3.12-64bit" / "0001_c.json", slower, "2026-01-03T00:00:00")
    assert compare.main(["--root", str(root)]) == 1
    text = capsys.readouterr()
    assert "0001_a.json" in text.out and "0001_c.json" in text.out
    assert "regressed: test_bench_route[split]" in text.err


def test_nothing_to_compare_passes(tmp_path, capsys):
    assert compare.main(["--root", str(tmp_path / "none")]) == 0
    saved_run(tmp_path / "r" / "m" / "0001_a.json", BASE)
    assert compare.main(["--root", str(tmp_path / "r")]) == 0
    assert "nothing to compare" in capsys.readouterr().out


@pytest.mark.parametrize("new, message", [
    ({"test_bench_solver": 1.0}, "no test_bench_yardstick_1gib_copy"),
    ("duplicate", "two benchmarks named 'test_bench_solver'"),
])
def test_runs_that_cannot_be_compared_are_refused(tmp_path, capsys, new, message):
    b = saved_run(tmp_path / "new.json", new if isinstance(new, dict) else BASE)
    if new == "duplicate":
        data = json.loads(b.read_text())
        data["benchmarks"].append(data["benchmarks"][1])
        b.write_text(json.dumps(data))
    a = saved_run(tmp_path / "old.json", BASE)
    assert compare.main([str(a), str(b)]) == 2
    assert message in capsys.readouterr().err


def test_benchmark_names_are_unique_with_one_yardstick():
    """pytest-benchmark names a benchmark by its test function (and
    parameters), not its file: a name defined in two files would be two
    benchmarks the comparison cannot tell apart."""
    where: dict[str, list[str]] = {}
    for path in sorted(HERE.glob("test_bench_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                where.setdefault(node.name, []).append(path.name)
    twice = {name: files for name, files in where.items() if len(files) > 1}
    assert not twice, f"benchmarks defined in more than one file: {twice}"
    assert where[YARDSTICK_BENCHMARK] == ["test_bench_yardstick.py"]
    assert not [n for n in where if "yardstick" in n and n != YARDSTICK_BENCHMARK]
