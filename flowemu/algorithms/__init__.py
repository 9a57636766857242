"""Allreduce algorithms, registered by name (see :mod:`flowemu.algorithms.base`)."""

from .base import (COPY, REDUCE, AlgorithmSpec, Param, Reduction, Schedule, Step, Traffic,
                   algorithm_names, get_algorithm, parse_algorithm_spec, register)
from . import bucket, ring, recdoub, swing  # noqa: E402,F401  (registration)

__all__ = ["COPY", "REDUCE", "AlgorithmSpec", "Param", "Reduction", "Schedule", "Step",
           "Traffic", "algorithm_names", "get_algorithm", "parse_algorithm_spec", "register"]
