"""Argument checks of the public Python API (the checking layer).

Each function takes what a numpy/pandas user may pass — plain Python values,
numpy scalars and arrays, pandas Series — and returns a plain value, or raises
:class:`~flowemu.core.errors.ConfigError` naming the argument, the value (printed
by :func:`~flowemu.core.errors.show`, so ``np.int64(3)`` reads ``3``) and what is
allowed. Nothing from inside numpy or pandas (ValueError, TypeError, ...)
escapes from here.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .errors import ConfigError, show, unknown_keywords
from .network import Network
from .presets import BUILTIN, is_preset, preset_network
from .units import Quantity, parse_size, parse_sizes

#: largest seed (the hash takes 64 bits; result tables store it as int64)
MAX_SEED = 2**63 - 1


def is_integer(value) -> bool:
    """A Python or numpy integer (a 0-d integer array too: ``np.array(8)``
    printed as 8 and was refused as no integer), not a bool."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
        return True
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def integer(name: str, value, *, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as a plain int within ``lo..hi`` (either may be None)."""
    if not is_integer(value):
        raise ConfigError(f"{name}: {show(value)} is not allowed; expected an integer"
                          + _range_text(lo, hi))
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ConfigError(f"{name}: {value} is not allowed; expected an integer"
                          + _range_text(lo, hi))
    return value


def _range_text(lo, hi) -> str:
    if lo is not None and hi is not None:
        return f" in {lo}..{hi}"
    if lo is not None:
        return f" >= {lo}"
    if hi is not None:
        return f" <= {hi}"
    return ""


def seed(value) -> int:
    """Seed of ``ecmp="hash"``: an integer in ``0..2**63-1``."""
    return integer("seed", value, lo=0, hi=MAX_SEED)


def flag(name: str, value) -> bool:
    """A Python or numpy bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"{name}: {show(value)} is not allowed; expected True or False")
    return bool(value)


def path(name: str, value, what: str) -> Path:
    """A path: a string or an ``os.PathLike`` (``pathlib.Path``), not empty;
    ``what`` says what it names (``"a sweep file (.toml)"``)."""
    if not isinstance(value, (str, os.PathLike)) or not str(os.fspath(value)).strip():
        given = f"a {type(value).__name__} (loaded already)" \
            if type(value).__name__ in ("DataFrame", "Series") else show(value)
        raise ConfigError(f"{name}: {given} is not allowed; expected the path of {what}")
    return Path(os.fspath(value))


def text(name: str, value, example: str) -> str:
    """A non-empty string (numpy ``str_`` included)."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name}: {show(value)} is not allowed; expected a non-empty "
                          f"string such as {example!r}")
    return str(value)


def sizes(value, name: str = "sizes") -> np.ndarray:
    """Vector sizes in bytes: a spec string (``"32B..512MiB"``, ``"1KiB,1MiB"``),
    one number, or a list / tuple / numpy array / pandas Series of numbers or
    size strings. Returns the sorted distinct sizes as float64[k] (whole
    positive byte counts)."""

    if isinstance(value, str):
        return np.asarray(parse_sizes(value, name), dtype=np.float64)
    if is_integer(value) or (isinstance(value, (float, np.floating))):
        value = [value]
    if hasattr(value, "to_numpy") and getattr(value, "ndim", 0) == 1:  # Series, Index
        value = value.to_numpy()
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ConfigError(f"{name}: expected a 1-D array of sizes, got shape "
                              f"{tuple(int(d) for d in value.shape)}")
        value = value.tolist()   # numpy scalars -> plain Python, checked below
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{name}: {show(value)} is not allowed; expected a size spec such as "
                          "'32B..512MiB' or '1KiB,1MiB', or a list/array of byte counts")
    if not value:
        raise ConfigError(f"{name}: no sizes given; expected e.g. '32B..512MiB', '1KiB,1MiB' "
                          "or a list of byte counts")
    out = []
    for item in value:
        out.append(_one_size(name, item.item() if isinstance(item, np.generic) else item))
    return np.asarray(sorted(set(out)), dtype=np.float64)


def size_points(value, name: str = "sizes") -> np.ndarray:
    """The vector sizes to evaluate a solved profile at, float64[k], in the
    order given: a spec string as :func:`sizes` reads it, or a number or
    1-D sequence / array / Series of byte counts or size strings
    (``[2**20, "4KiB"]``). The model is continuous in the size, so a number
    need not be whole; it must be positive and finite. A numeric array is
    checked at once."""
    if isinstance(value, str):
        return np.asarray(parse_sizes(value, name), dtype=np.float64)
    if hasattr(value, "to_numpy") and getattr(value, "ndim", 0) == 1:  # Series, Index
        value = value.to_numpy()
    if isinstance(value, np.ndarray):
        if value.ndim > 1:
            raise ConfigError(f"{name}: an array of shape {value.shape} is not allowed; "
                              "expected a 1-D list/array of byte counts")
        if value.dtype.kind in "iuf":
            return _positive(name, np.atleast_1d(value.astype(np.float64)), value)
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        points = [_point(name, x) for x in value]
    elif is_integer(value) or isinstance(value, (float, np.floating)):
        points, value = [float(value)], [value]
    else:
        raise ConfigError(f"{name}: {show(value)} is not allowed; expected a size or size spec "
                          "('1MiB', '32B..512MiB'), or a 1-D list/array of byte counts")
    return _positive(name, np.asarray(points, dtype=np.float64), value)


def _point(name: str, item) -> float:
    """One entry of :func:`size_points`: a size string, or a number."""
    if isinstance(item, str):
        return float(parse_size(item, name))
    if is_integer(item) or isinstance(item, (float, np.floating)):
        return float(item)
    raise ConfigError(f"{name}: {show(item)} is not a size; expected a byte count > 0 "
                      "or a size such as '4KiB'")


def _positive(name: str, n: np.ndarray, given) -> np.ndarray:
    """``n``, unless it is empty or an entry is not positive and finite: a
    ConfigError showing it as ``given`` holds it."""
    if n.size == 0:
        raise ConfigError(f"{name}: no sizes given; expected e.g. '32B..512MiB', '1KiB,1MiB' "
                          "or a list of byte counts")
    bad = ~(np.isfinite(n) & (n > 0))
    if bad.any():
        raise ConfigError(f"{name}: size {show(given[int(np.argmax(bad))])} is not allowed; "
                          "expected a positive, finite number of bytes")
    return n


def _one_size(name: str, item) -> int:
    if isinstance(item, bool) or not isinstance(item, (str, int, float)):
        raise ConfigError(f"{name}: {show(item)} is not a size; expected a byte count > 0 "
                          "or a size such as '4KiB'")
    return parse_size(item, name)   # the one size rule (positive, whole, <= 2**53)


def network(value, params: dict, function: str, keywords: tuple = ()):
    """The :class:`~flowemu.core.network.Network` of a call: ``value`` itself, a
    preset it names (:mod:`flowemu.core.presets`; ``params`` override its
    values), or one built from keyword arguments ``params`` (numpy scalars
    become plain numbers; a rate or time needs its unit, see
    :class:`~flowemu.core.network.Network`). A keyword that is neither a parameter of ``function`` nor a
    network field is named with what is allowed."""
    fields = Network.field_names()
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise unknown_keywords(function, unknown, list(keywords) + list(fields))
    if isinstance(value, Network) and params:
        raise ConfigError(f"network: pass either network=Network(...) or its fields "
                          f"({', '.join(sorted(params))}), not both")
    if value is not None and not isinstance(value, Network) and not is_preset(value):
        raise ConfigError(f"network: {show(value)} is not allowed; expected a "
                          f"flowemu.Network, a preset ({', '.join(BUILTIN)} or a .toml "
                          "file) or None")
    if isinstance(value, Network):
        threshold, slope = value.incast_threshold != float("inf"), value.incast_slope > 0
        if threshold != slope:   # (as the keywords: one alone leaves incast off)
            given, other = ("incast_threshold", "incast_slope") if threshold else \
                ("incast_slope", "incast_threshold")
            raise ConfigError(f"network: its {given} is set and its {other} is not; incast "
                              f"needs both (Network(..., {other}=...)), or neither")
        return value
    plain = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in params.items()}
    for k, v in plain.items():
        if not isinstance(v, (str, int, float, Quantity)) or isinstance(v, bool):
            raise ConfigError(f"{k}: {show(v)} is not allowed; expected a string with its "
                              "unit (e.g. '400Gb/s', '100ns'), a flowemu.units helper "
                              "(Gbps(400), ns(100)) or, for incast_threshold, a flow count")
    if value is not None:   # a preset: the fields given beside it override its values
        return preset_network(value, plain)
    net = Network(**plain)   # (each value checked first)
    pair = [k for k in ("incast_threshold", "incast_slope") if k in plain]
    if len(pair) == 1:   # (the default of the other turns incast off: no effect)
        other = "incast_slope" if pair[0] == "incast_threshold" else "incast_threshold"
        raise ConfigError(f"{pair[0]}: incast needs both incast_threshold and incast_slope; "
                          f"give {other} too, or drop {pair[0]}")
    return net


def ranks(value, topology) -> int:
    """Number of ranks: None (every endpoint) or an integer in
    ``2..topology.num_endpoints``."""
    if value is None:
        return int(topology.num_endpoints)
    if not is_integer(value) or value < 2:
        raise ConfigError(f"ranks: {show(value)} is not allowed; expected an integer >= 2")
    if value > topology.num_endpoints:
        raise ConfigError(f"ranks: {int(value)} ranks do not fit on {topology.spec} "
                          f"({topology.num_endpoints} endpoints)")
    return int(value)


def threads(value) -> int | None:
    """None (the default) or an integer >= 1."""
    return None if value is None else integer("threads", value, lo=1)
