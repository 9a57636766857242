"""Helpers the command-line tests share: run ``flowemu`` in-process and read
its one error line (the ``no_work`` fixture is in conftest.py)."""

from __future__ import annotations

from flowemu.cli import main


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("flowemu: error: ") and "Traceback" not in err
    return lines[0]
