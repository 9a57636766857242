"""flowemu: a vectorized flow-level performance emulator for collective communication.

>>> import flowemu
>>> df = flowemu.simulate("torus:8x8", "ring", "1KiB..1MiB")

The heavy parts (numba kernels, pandas) load on first use, so importing a
submodule such as ``flowemu.units`` stays cheap.
"""

__version__ = "0.1.0"

from .errors import ConfigError, FlowEmuError, RoutingError, ScheduleError, SolverError
from .network import Network

_LAZY = {
    "simulate": "api", "congestion": "api", "time_traffic": "api", "read_traffic": "api",
    "RESULT_COLUMNS": "api", "flows": "flowdump",
    "profile": "engine", "Profile": "engine", "StepProfile": "engine",
    "sweep": "sweep", "fit": "fit", "plan": "gentree", "load": "results", "compare": "results", "results": "results",
    "verify": "verification", "register_algorithm": "plugins", "unregister_algorithm": "plugins",
}

__all__ = [
    "RESULT_COLUMNS",
    "ConfigError",
    "FlowEmuError",
    "Network",
    "Profile",
    "RoutingError",
    "ScheduleError",
    "SolverError",
    "StepProfile",
    "__version__",
    "compare",
    "congestion",
    "fit",
    "flows",
    "load",
    "plan",
    "profile",
    "read_traffic",
    "register_algorithm",
    "results",
    "simulate",
    "sweep",
    "time_traffic",
    "unregister_algorithm",
    "verify",
]


def __getattr__(name):
    if name in _LAZY:
        import importlib
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        # flowemu.sweep and flowemu.fit are callable modules: flowemu.sweep(...) runs
        # a sweep and flowemu.sweep.run_sweep etc. stay reachable
        return module if name == _LAZY[name] else getattr(module, name)
    raise AttributeError(f"module 'flowemu' has no attribute {name!r}")
