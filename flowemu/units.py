"""Parsing and printing of sizes, rates and times.

Sizes: ``32B``, ``4KiB``, ``1MiB``, ``2GiB``, ``1KB`` (=1000 B), ``1e6``, ``4096``.
Rates: ``400Gb/s``, ``400Gbps``, ``50GB/s``, ``1.6Tb/s``, ``5e10`` (bytes/s).
Times: ``100ns``, ``1.5us``, ``1µs``, ``2ms``, ``1s``, ``3e-7`` (seconds).
Ranges of sizes: ``32B..512MiB`` = every power of two from 32 B to 512 MiB.
"""

from __future__ import annotations

import math
import re

from .errors import ConfigError

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"

_SIZE_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
    "k": 2**10, "m": 2**20, "g": 2**30,
}
_SIZE_FORMS = "a number of bytes with an optional unit: 32B, 4KiB, 1MiB, 1GiB, 1KB (=1000B), 1e6"

# rate units in bytes per second; lowercase 'b' = bits, uppercase 'B' = bytes
_RATE_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_RATE_FORMS = "a number with a unit: 400Gb/s, 400Gbps, 50GB/s, 1.6Tb/s, or plain bytes/s (5e10)"

_TIME_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "ps": 1e-12}
_TIME_FORMS = "a number with a unit: 100ns, 1.5us, 2ms, 1s, or plain seconds (3e-7)"


def _fail(kind: str, field: str, text, forms: str):
    return ConfigError(f"{field}: cannot read {text!r} as a {kind}; expected {forms}")


def parse_size(text, field: str = "size") -> int:
    """Bytes as an int (> 0). Raises ConfigError naming ``field`` and the forms."""
    if isinstance(text, bool):
        raise _fail("size", field, text, _SIZE_FORMS)
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = re.fullmatch(_NUM + r"\s*([A-Za-z]*)", str(text).strip())
        if not m or m.group(2).lower() not in _SIZE_UNITS:
            raise _fail("size", field, text, _SIZE_FORMS)
        value = float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{field}: size {text!r} must be a positive, finite number of bytes")
    if value != int(value):
        raise ConfigError(f"{field}: size {text!r} is not a whole number of bytes")
    return int(value)


def parse_sizes(text, field: str = "sizes") -> list[int]:
    """``32B..512MiB`` (every power of two in the range), a comma list, or a
    list of sizes -> sorted unique list of ints."""
    if isinstance(text, (list, tuple)):
        items = list(text)
    else:
        s = str(text).strip()
        if ".." in s:
            lo_s, _, hi_s = s.partition("..")
            lo, hi = parse_size(lo_s, field), parse_size(hi_s, field)
            if lo > hi:
                raise ConfigError(f"{field}: range {s!r} is empty (start > end)")
            k_lo = math.ceil(math.log2(lo) - 1e-12)
            k_hi = math.floor(math.log2(hi) + 1e-12)
            out = [2**k for k in range(k_lo, k_hi + 1)]
            if not out:
                raise ConfigError(f"{field}: range {s!r} holds no power of two")
            return out
        items = [x for x in s.split(",") if x.strip()]
    if not items:
        raise ConfigError(f"{field}: no sizes given; expected e.g. 32B..512MiB or 1KiB,1MiB")
    return sorted({parse_size(x, field) for x in items})


def format_size(nbytes: float) -> str:
    """Binary units: 32B, 4KiB, 1.5MiB."""
    n = float(nbytes)
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            v = n / scale
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.3g}{unit}"
    return f"{n:.0f}B" if n == int(n) else f"{n:.3g}B"


def parse_rate(text, field: str = "bandwidth") -> float:
    """Bytes per second (> 0)."""
    if isinstance(text, bool):
        raise _fail("rate", field, text, _RATE_FORMS)
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        s = str(text).strip()
        m = re.fullmatch(_NUM + r"\s*(?:([kKmMgGtT]?)(b|B)(?:/s|ps))?", s)
        if not m:
            raise _fail("rate", field, text, _RATE_FORMS)
        value = float(m.group(1))
        if m.group(3):
            value *= _RATE_PREFIX[m.group(2).lower()]
            if m.group(3) == "b":
                value /= 8.0
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{field}: rate {text!r} must be positive and finite")
    return value


def format_rate(bytes_per_s: float) -> str:
    """Bits per second with a decimal prefix, as network people say it."""
    bits = float(bytes_per_s) * 8
    for unit, scale in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if abs(bits) >= scale:
            return f"{bits / scale:.4g}{unit}"
    return f"{bits:.4g}b/s"


def parse_time(text, field: str = "time") -> float:
    """Seconds (>= 0)."""
    if isinstance(text, bool):
        raise _fail("time", field, text, _TIME_FORMS)
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = re.fullmatch(_NUM + r"\s*([a-zµ]*)", str(text).strip())
        if not m or m.group(2) not in _TIME_UNITS:
            raise _fail("time", field, text, _TIME_FORMS)
        value = float(m.group(1)) * _TIME_UNITS[m.group(2)]
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{field}: time {text!r} must be non-negative and finite")
    return value


def format_time(seconds: float) -> str:
    s = float(seconds)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(s) >= scale:
            return f"{s / scale:.4g}{unit}"
    return f"{s / 1e-12:.4g}ps" if s else "0s"
