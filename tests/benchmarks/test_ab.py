"""The side-by-side timing tool (tests/benchmarks/ab.py) against this very
commit: both sides run, their results agree, and a line a workload is
printed with both figures and their ratio."""

import io
import re
import shutil

import pytest

from tests.benchmarks import ab


@pytest.mark.slow   # (~40 s: the other side compiles its kernels afresh)
@pytest.mark.skipif(shutil.which("git") is None or not (ab.ROOT / ".git").exists(),
                    reason="needs the git checkout")
def test_a_commit_against_itself_agrees_and_prints_both_sides():
    out = io.StringIO()
    assert ab.compare("HEAD", ["tiny"], rounds=1, out=out)
    lines = out.getvalue().splitlines()
    assert re.fullmatch(r"1 GiB copy: \d+ ms", lines[0])
    assert re.match(r"tiny: here [\d.]+ ms \(median [\d.]+\), HEAD [\d.]+ ms \(median [\d.]+\), "
                    r"ratio [\d.]+  \[.*; 1 problem\(s\)\]$", lines[1])
    assert "RESULTS DIFFER" not in lines[1]
    assert not any(m.startswith(ab.REF_NAME) for m in __import__("sys").modules)


def test_an_unknown_workload_is_refused_by_name(capsys):
    with pytest.raises(SystemExit) as exit_:
        ab.main(["HEAD", "nope"])
    assert exit_.value.code == 2 and "unknown workload(s) nope" in capsys.readouterr().err
