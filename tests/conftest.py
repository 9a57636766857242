"""Fixtures shared by the test modules."""

from __future__ import annotations

import os

import pytest

# the tests assert what commands print: the note of a first compile (which a
# fresh clone's run meets in whichever test compiles a kernel first) is
# tested on its own (tests/kernels/test_jit.py)
os.environ["FLOWEMU_COMPILE_NOTE"] = "0"

import flowemu.api.simulation


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if a simulation starts: refusals come before any work."""
    def boom(*a, **k):
        raise AssertionError("the simulation ran although the command line was refused")
    for name in ("simulate", "time_traffic", "congestion"):
        monkeypatch.setattr(flowemu.api.simulation, name, boom)
