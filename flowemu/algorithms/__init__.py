"""Collective algorithms, registered by collective and name
(:mod:`flowemu.algorithms.registry`; schedules and specs in
:mod:`flowemu.algorithms.base`, the collectives in
:mod:`flowemu.algorithms.collectives`)."""

from . import bucket, butterfly, classic, dualroot, ina, ps, recdoub, ring, swing, trees  # noqa: F401  (registration)
from .base import (
    COPY,
    REDUCE,
    AlgorithmSpec,
    Param,
    Reduction,
    Schedule,
    Step,
    Traffic,
    parse_algorithm_spec,
)
from .gentree import schedule as gentree  # noqa: F401  (registration)
from .registry import algorithm_names, get_algorithm, register

# isort: off
from . import halves  # noqa: F401  (registration: after the allreduces it halves)
from . import bine  # noqa: F401  (registration: after the halves it names)
from . import selectors  # noqa: F401  (registration: after what it selects among)
# isort: on

__all__ = ["COPY", "REDUCE", "AlgorithmSpec", "Param", "Reduction", "Schedule", "Step",
           "Traffic", "algorithm_names", "get_algorithm", "parse_algorithm_spec", "register"]
