"""flowemu: a vectorized flow-level performance emulator for collective communication.

>>> import flowemu
>>> df = flowemu.simulate("torus:8x8", "ring", "1KiB..1MiB")
>>> df = flowemu.simulate("torus:8x8", "ring", "1MiB", bandwidth="100Gb/s")   # with its unit

The heavy parts (numba kernels, pandas) load on first use, so importing a
submodule such as ``flowemu.core.units`` stays cheap.
"""

import sys as _sys
from typing import ClassVar as _ClassVar

from .api import units
from .core.errors import ConfigError, FlowEmuError, RoutingError, ScheduleError, SolverError
from .core.network import Network
from .core.version import __version__

# flowemu.units is flowemu/api/units.py (the top level holds only the layers);
# registered under its public name so that `from flowemu.units import Gbps` works
_sys.modules[f"{__name__}.units"] = units

_LAZY = {
    "simulate": "api.simulation", "congestion": "api.simulation",
    "time_traffic": "api.simulation", "read_traffic": "api.simulation",
    "RESULT_COLUMNS": "api.simulation", "flows": "api.flows",
    "link_loads": "api.linkloads", "schedule": "api.schedules",
    "simulate_jobs": "api.jobs", "JOB_COLUMNS": "api.jobs",
    "global_bandwidth": "api.globalbw",
    "profile": "api.profiling", "Profile": "engine.steptimes", "StepProfile": "engine.steptimes",
    "sweep": "study.sweep", "fit": "study.fit", "plan": "api.planning",
    "load": "study.results", "compare": "study.results", "results": "study.results",
    "plot": "study.figures.plots",
    "verify": "api.verification", "register_algorithm": "api.plugins",
    "unregister_algorithm": "algorithms.registry", "Traffic": "algorithms.base",
}
#: the public names that are whole (callable) modules
_MODULES = {"sweep", "fit", "results"}


class _PublicModules:
    """Makes ``import flowemu.results`` (and ``from flowemu.sweep import
    run_sweep``, ``import flowemu.fit``) import the module the public name
    stands for, on first use as ``flowemu.results`` does: the top level
    holds only the layers, so there is no ``flowemu/results.py`` to find."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        short = fullname.removeprefix(f"{__name__}.")
        if short == fullname or short not in _MODULES:
            return None
        import importlib.util
        return importlib.util.spec_from_loader(fullname, _PublicModules)

    #: each module's own spec, which the import system replaces
    _specs: _ClassVar[dict] = {}

    @staticmethod
    def create_module(spec):
        import importlib
        module = importlib.import_module(f".{_LAZY[spec.name.rsplit('.', 1)[1]]}", __name__)
        _PublicModules._specs[spec.name] = module.__spec__
        return module

    @staticmethod
    def exec_module(module):
        # (imported by create_module) its own spec back: flowemu.study.results, its file
        module.__spec__ = _PublicModules._specs[module.__spec__.name]


_sys.meta_path.append(_PublicModules)

__all__ = [
    "JOB_COLUMNS",
    "RESULT_COLUMNS",
    "ConfigError",
    "FlowEmuError",
    "Network",
    "Profile",
    "RoutingError",
    "ScheduleError",
    "SolverError",
    "StepProfile",
    "Traffic",
    "__version__",
    "compare",
    "congestion",
    "fit",
    "flows",
    "global_bandwidth",
    "link_loads",
    "load",
    "plan",
    "plot",
    "profile",
    "read_traffic",
    "register_algorithm",
    "results",
    "schedule",
    "simulate",
    "simulate_jobs",
    "sweep",
    "time_traffic",
    "units",
    "unregister_algorithm",
    "verify",
]


def __dir__():
    # the names loaded on first use too (tab completion, dir(flowemu))
    return sorted({n for n in globals() if not n.startswith("_")} | set(__all__)
                  | {"__version__"})


def __getattr__(name):
    if name in _LAZY:
        import importlib
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        # flowemu.sweep and flowemu.fit are callable modules: flowemu.sweep(...) runs
        # a sweep and flowemu.sweep.run_sweep etc. stay reachable
        return module if name in _MODULES else getattr(module, name)
    raise AttributeError(f"module 'flowemu' has no attribute {name!r}")
