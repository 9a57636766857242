"""Small pieces every topology family uses: array and value checks, the
seeded path hash of ``ecmp="hash"``, and the ``key=value`` option parser of
spec strings (``leafspine:8x4x2,uplinks=2``). Public, because whatever builds a
Topology outside this package (the faulted topology of
:mod:`flowemu.whatif.faults`) uses them too."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..core.errors import ConfigError, show
from ..core.units import parse_rate, parse_time

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)

#: largest number of endpoints (hosts, nodes), and of directed links, any
#: family builds (its arrays are int32 ids; the memory limit applies too)
MAX_ENDPOINTS = 2**24
MAX_LINKS = 2**26


def readonly(a: np.ndarray) -> np.ndarray:
    """``a`` made read-only (topology arrays are shared by every run)."""
    a.setflags(write=False)
    return a


def is_int(x) -> bool:
    """A Python or numpy integer, not a bool."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def is_number(x) -> bool:
    """A Python or numpy real number, not a bool."""
    return isinstance(x, (int, float, np.integer, np.floating)) \
        and not isinstance(x, (bool, np.bool_))


def fmt(x: float) -> str:
    """A number as a spec prints it: ``2`` for 2.0, ``0.5`` for 0.5."""
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def check_seed(seed) -> int:
    """The ``seed`` argument of ``route``: an integer, else ConfigError."""
    if not is_int(seed):
        raise ConfigError(f"seed: {show(seed)} is not allowed; expected an integer")
    return int(seed)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser on a uint64 array (as flowemu.kernels.hashing.mix64;
    numpy uint64 arithmetic wraps)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def flow_hash(src: np.ndarray, dst: np.ndarray, seed: int = 0, salt: int = 0) -> np.ndarray:
    """A uint64 hash of each flow's ``(seed, salt, src, dst)``, uint64[F]: the
    seeded choice of ``ecmp="hash"`` (a switch hashes the flow's header).
    ``salt`` separates independent choices of one flow (one per tier)."""
    # arrays throughout: numpy uint64 arrays wrap silently, scalars warn
    key0 = np.array([(int(seed) + int(salt) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF],
                    dtype=np.uint64)
    salt_mix = mix64(key0 + _GOLDEN)
    pair = (np.asarray(src).astype(np.uint64) << np.uint64(32)) \
        | np.asarray(dst).astype(np.uint64)
    return mix64((pair ^ salt_mix) + _GOLDEN)


def parse_int(name: str, text: str, example: str, low: int = 1,
              kind: str = "an integer") -> int:
    """``text`` as an integer ``>= low``; ConfigError naming ``name`` and
    what is expected (``kind``: ``"an even integer"`` for a value the caller
    checks further)."""
    text = text.strip()
    body = text[1:] if text[:1] in "+-" else text
    if not (body.isascii() and body.isdigit()):
        raise ConfigError(f"{name} is {text!r}, not an integer; expected {kind} >= {low} "
                          f"({example})")
    v = int(text)
    if v < low:
        raise ConfigError(f"{name} is {v}; expected {kind} >= {low} ({example})")
    return v


def parse_dims(family: str, params: str) -> tuple[int, ...]:
    """``"D0xD1x..."`` -> the grid dimensions, each an integer >= 2, at most
    :data:`MAX_ENDPOINTS` nodes in all (the shape of ``torus:``, ``mesh:``
    and ``hyperx:``); ConfigError with ``family`` in its examples."""
    example = f"e.g. {family}:8x8, {family}:16, {family}:8x8x8"
    if not params:
        raise ConfigError(f"no dimensions given; expected sizes separated by 'x' ({example})")
    dims = []
    for i, part in enumerate(params.split("x")):
        part = part.strip()
        if not part:
            raise ConfigError(f"dimension {i} is empty; expected sizes separated by 'x' "
                              f"({example})")
        body = part[1:] if part[0] in "+-" else part
        if not (body.isascii() and body.isdigit()):
            raise ConfigError(f"dimension {i} is {part!r}, not an integer; expected sizes "
                              f"separated by 'x' ({example})")
        d = int(part)
        if d < 2:
            raise ConfigError(f"dimension {i} is {d}; every dimension must be an integer >= 2 "
                              f"(e.g. {family}:8x8)")
        dims.append(d)
    nodes = math.prod(dims)
    if nodes > MAX_ENDPOINTS:
        raise ConfigError(f"{'x'.join(map(str, dims))} has {nodes} nodes; at most "
                          f"{MAX_ENDPOINTS} (2**24) are allowed")
    return tuple(dims)


def parse_positive(name: str, text: str, what: str, zero: bool = False) -> float:
    """``text`` as a finite number > 0 (>= 0 with ``zero``); ConfigError
    naming ``name`` and ``what`` it means."""
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not (np.isfinite(v) and (v >= 0 if zero else v > 0)):
        raise ConfigError(f"{name} is {text.strip()!r}; expected a number "
                          f"{'>=' if zero else '>'} 0 ({what})")
    return v


def parse_options(opts: list[str], parsers: dict[str, Callable[[str], object]],
                  accepted: str) -> dict:
    """``["key=value", ...]`` -> ``{key: parsers[key](value)}``.

    ``accepted`` is the one-line list of options shown in messages (e.g.
    ``"uplinks=INT >= 1, uplink=NUMBER > 0"``). Refuses an option that is not
    ``key=value``, an unknown key, and a key given twice."""
    values: dict = {}
    for opt in opts:
        key, eq, val = (x.strip() for x in opt.partition("="))
        if not eq or not key:
            raise ConfigError(f"option {opt!r} is not key=value; options: {accepted}")
        if key not in parsers:
            raise ConfigError(f"unknown option {key!r}; options: {accepted}")
        if key in values:
            raise ConfigError(f"option {key!r} is given twice")
        values[key] = parsers[key](val)
    return values


def _shortest(v: float, units, parse, fallback: str) -> str:
    """The shortest ``<number><unit>`` of ``units`` (name, scale) that
    ``parse`` reads back as exactly ``v``, else ``fallback``."""
    candidates = []
    for unit, scale in units:
        text = f"{fmt(v / scale)}{unit}"
        try:
            if parse(text) == v:
                candidates.append(text)
        except ConfigError:
            pass
    return min(candidates, key=len) if candidates else fallback


def rate_text(v: float) -> str:
    """A rate as a spec prints it: the shortest ``<number><prefix>b/s`` (or ``B/s``) that parses back to
    exactly ``v`` bytes/s."""
    return _shortest(v, (("Tb/s", 1e12 / 8), ("Gb/s", 1e9 / 8), ("Mb/s", 1e6 / 8),
                         ("kb/s", 1e3 / 8), ("b/s", 1 / 8), ("GB/s", 1e9), ("MB/s", 1e6),
                         ("B/s", 1.0)),
                     lambda t: parse_rate(t, "bw"), f"{v!r}B/s")


def time_text(v: float) -> str:
    """A time as a spec prints it: the shortest ``<number><unit>`` that parses back to exactly ``v`` seconds."""
    if v == 0:
        return "0s"
    return _shortest(v, (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("ps", 1e-12)),
                     lambda t: parse_time(t, "lat"), f"{v!r}s")
