"""Argument checks that need the topology layer: a topology given as a
:class:`~flowemu.topology.Topology` or its spec, and a routing mode (with its
seed). The other checks are in :mod:`flowemu.core.checks`."""

from __future__ import annotations

from ..core import checks
from ..core.errors import ConfigError, show, suggest
from . import parse_topology
from .base import ECMP_MODES, Topology

__all__ = ["ecmp", "routing", "topology"]


def topology(value):
    """A :class:`~flowemu.topology.Topology` or a spec string such as ``"torus:8x8"``."""
    if isinstance(value, Topology):
        return value
    if isinstance(value, str):
        return parse_topology(value)
    raise ConfigError(f"topology: {show(value)} is not allowed; expected a spec string such "
                      "as 'torus:8x8' or a Topology")


def ecmp(value) -> str:
    """One of the routing modes."""
    if not isinstance(value, str) or value not in ECMP_MODES:
        hint = suggest(value, ECMP_MODES) if isinstance(value, str) else ""
        raise ConfigError(f"ecmp: {show(value)} is not allowed{hint}; allowed: "
                          f"{', '.join(ECMP_MODES)}")
    return str(value)


def routing(ecmp_value, seed_value) -> tuple[str, int]:
    """``(ecmp, seed)`` checked together: a seed picks the paths of
    ``ecmp="hash"`` and nothing else, so a non-zero seed with another routing
    would be recorded in the results without having any effect."""
    mode, s = ecmp(ecmp_value), checks.seed(seed_value)
    if s != 0 and mode != "hash":
        raise ConfigError(f"seed: {s} applies only to ecmp='hash' (it picks each flow's path "
                          f"there); with ecmp={mode!r} leave seed at 0")
    return mode, s
