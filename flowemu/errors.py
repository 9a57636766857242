"""Exception hierarchy.

Every error flowemu raises on purpose derives from :class:`FlowEmuError`, so
callers (the CLI, sweeps) can tell a user mistake from a bug.
"""


class FlowEmuError(Exception):
    """Base class of flowemu's own errors."""


class ConfigError(FlowEmuError, ValueError):
    """A configuration value is invalid: the message names the field, the value
    and what is allowed."""


class ScheduleError(FlowEmuError):
    """An algorithm produced (or was asked for) an impossible schedule."""


class RoutingError(FlowEmuError):
    """A flow cannot be routed on the topology."""


class SolverError(FlowEmuError):
    """The max-min solver returned a bad status for a configuration."""
