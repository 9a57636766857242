"""Helpers the command-line tests share: run ``flowemu`` in-process and read
its one error line (the ``no_work`` fixture is in tests/conftest.py)."""

from __future__ import annotations

import pytest

from flowemu.cli.app import main
from flowemu.core.errors import ConfigError
from flowemu.topology import parse_topology


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("flowemu: error: ") and "Traceback" not in err
    return lines[0]


def assert_bad_topology(capsys, spec: str, needle: str) -> None:
    """A bad topology spec is one ConfigError line, prefixed with the spec
    and containing ``needle``, through the API; through ``flowemu run`` it
    is one error line with exit status 2."""
    with pytest.raises(ConfigError) as exc:
        parse_topology(spec)
    msg = str(exc.value)
    assert msg.startswith(f"topology {spec!r}: ") and needle in msg and "\n" not in msg
    code, _, err = run(capsys, ["run", "-t", spec, "-a", "ring", "-s", "1KiB"])
    assert code == 2 and needle in one_error_line(err)
