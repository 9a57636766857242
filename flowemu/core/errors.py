"""Exception hierarchy.

Every error flowemu raises on purpose derives from :class:`FlowEmuError`, so
callers (the CLI, sweeps) can tell a user mistake from a bug.
"""

import difflib
import functools
import inspect


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


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was caused by, a KeyboardInterrupt. A Ctrl-C
    that lands while a numba kernel runs may come out of it wrapped in a
    ``SystemError`` ("returned a result with an exception set"), which an
    ``except Exception`` would take for a failure of the work."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def show(value, limit: int = 80) -> str:
    """``repr`` of ``value`` as plain Python, for error messages.

    numpy scalars print as plain numbers (``3``, not ``np.int64(3)``), numpy
    arrays and pandas Series/Index as lists; long texts are cut to ``limit``
    characters. numpy and pandas are not imported here (this module stays
    cheap to import); their objects are recognised by their module name.
    """
    text = repr(_plain(value))
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Shown(str):
    """A text :func:`show` prints as it is (no quotes)."""

    def __repr__(self) -> str:
        return str(self)


def _plain(value):
    module = type(value).__module__ or ""
    if module.startswith("pandas") and getattr(value, "ndim", 0) == 2:   # a DataFrame
        names = [str(c) for c in value.columns]
        cols = ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")
        return _Shown(f"DataFrame({len(value)} rows; " +
                      (f"columns {cols})" if names else "no columns)"))
    if module.startswith(("numpy", "pandas")):
        try:
            if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
                return _plain(value.item())   # a numpy scalar or 0-d array
            if getattr(value, "ndim", 0) < 1:
                return value
            if hasattr(value, "to_numpy"):    # pandas Series / Index
                value = value.to_numpy()
            if hasattr(value, "ravel") and hasattr(value, "tolist"):
                # at most 21 elements: enough to print, never a copy of a huge array
                return _plain(value.ravel()[:21].tolist())
        except Exception:  # noqa: BLE001 - printing must never fail
            return value
        return value
    if isinstance(value, list):
        return [_plain(v) for v in value[:20]] + (["..."] if len(value) > 20 else [])
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value[:20]) + (("...",) if len(value) > 20 else ())
    return value


def suggest(word: str, allowed) -> str:
    """`` (did you mean 'x'?)`` for the entry of ``allowed`` closest to
    ``word``, or ``""`` when none is close: the hint every "unknown name"
    message appends."""
    close = difflib.get_close_matches(word, list(allowed), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_keywords(function: str, unknown, allowed) -> ConfigError:
    """The error of a call to ``function`` with keyword arguments it does not
    take: each named (with the closest allowed one), then every allowed one."""
    allowed = list(allowed)
    named = ", ".join(str(k) + suggest(str(k), allowed) for k in unknown)
    return ConfigError(f"{function}: unknown keyword argument(s) {named}; "
                       f"allowed: {', '.join(allowed)}")


def checked_keywords(target):
    """Decorate a public function (or a class: its ``__init__``) so that an
    unknown keyword argument raises :func:`unknown_keywords`' ConfigError,
    as the functions taking ``**network_params`` do, instead of Python's
    bare TypeError."""
    init = isinstance(target, type)
    function = target.__init__ if init else target
    params = inspect.signature(function).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        raise TypeError(f"{target.__name__} takes **kwargs: check them where they are read")
    allowed = tuple(p.name for p in params if p.name != "self" and p.kind in
                    (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    known = frozenset(allowed)

    @functools.wraps(function)
    def checked(*args, **kwargs):
        if not known.issuperset(kwargs):
            raise unknown_keywords(target.__name__, [k for k in kwargs if k not in known],
                                   allowed)
        return function(*args, **kwargs)

    if init:
        target.__init__ = checked
        return target
    return checked
