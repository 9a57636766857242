"""Fixtures shared by the test modules."""

from __future__ import annotations

import pytest

import flowemu.api.simulation


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if a simulation starts: refusals come before any work."""
    def boom(*a, **k):
        raise AssertionError("the simulation ran although the command line was refused")
    for name in ("simulate", "time_traffic", "congestion"):
        monkeypatch.setattr(flowemu.api.simulation, name, boom)
