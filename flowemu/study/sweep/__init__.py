"""Sweeps: grids of configurations from a TOML file, run on local processes
or a Dask cluster, written to a resumable parquet dataset.

A sweep file (``configs/*.toml``, read with :mod:`tomllib`)::

    description = "ring vs recursive doubling on small tori"
    sizes = "1KiB..512KiB"             # keys at the top are defaults for every group
    bandwidth = "400Gb/s"

    [groups.square]                    # one grid per group
    topology = ["torus:4x4", "torus:8x8"]
    algorithm = ["ring", "recdoub:variant=latency",
                 { name = "ring", ports = [1, 2] }]   # option lists expand too
    bandwidth = ["100Gb/s", "400Gb/s"]

    [[groups.square.exclude]]          # drop the configurations that match
    topology = "torus:4x4"
    algorithm = "ring:ports=2"         # name + the options given (subset match)

    [groups.cubes]
    topology = "torus:4x4x4"
    algorithm = "recdoub"
    where = "nodes <= 64 and bandwidth >= rate('200Gb/s')"   # keep only these

``model = ["flow", "genmodel"]`` times every configuration by the flow
engine and by GenModel's analytic prediction (:mod:`flowemu.models.genmodel`; a
pair it cannot price is refused before anything runs); flow configurations
keep the hash they had before the field existed.

Every list of a grid field expands as a cartesian product; ``sizes`` is not a
grid dimension (all sizes of one configuration come from one profile, they
are the rows). Without a ``[groups.*]`` table the top level is one group,
``main``. ``[[exclude]]`` at the top applies to every group.

Each configuration has a readable key (``config_key``:
``group|topology|algorithm|...``) and a 12-hex-digit hash of its canonical
fields (``config_hash``); the hash is its identity in the dataset, so
re-running a sweep computes only what is missing, and the dataset holds
exactly the sweep's configurations. See :mod:`flowemu.study.sweep.dataset` for the
dataset layout.

The package, one idea a module: :mod:`.config` (a configuration, its key and
hash), :mod:`.fields` and :mod:`.where` (validating values, where/exclude),
:mod:`.paths` (the files a sweep file names, read relative to it),
:mod:`.plan` (reading and expanding a file), :mod:`.executor` (running
chunks in this process, local processes or Dask; surviving dead workers),
:mod:`.progress`, :mod:`.dataset` (parts, manifest, load, prune) and
:mod:`.run` (the sweep into its dataset).
"""

from __future__ import annotations

import sys
import types

from .config import (
    DEFAULT_GROUP,
    DEFAULT_SIZES,
    FIELDS,
    GRID_FIELDS,
    GROUP_KEYS,
    NETWORK_FIELDS,
    REQUIRED,
    TOP_KEYS,
    Config,
    config_hash,
    config_key,
    sizes_text,
)
from .executor import default_jobs, run_chunk, run_config
from .fields import SweepConfigError
from .plan import SweepPlan, load_sweep
from .progress import Progress
from .run import SweepSummary, run_sweep, sweep

__all__ = [
    "DEFAULT_GROUP", "DEFAULT_SIZES", "FIELDS", "GRID_FIELDS", "GROUP_KEYS", "NETWORK_FIELDS",
    "REQUIRED", "TOP_KEYS", "Config", "Progress", "SweepConfigError", "SweepPlan",
    "SweepSummary", "config_hash", "config_key", "default_jobs", "load_sweep", "run_chunk",
    "run_config", "run_sweep", "sizes_text", "sweep",
]


class _CallableModule(types.ModuleType):
    """``flowemu.sweep`` is both this package and the function :func:`sweep`."""

    def __call__(self, *args, **kwargs):
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
