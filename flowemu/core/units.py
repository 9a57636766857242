"""Parsing and printing of sizes, rates and times — units are never guessed.

A Python number (``int``, ``float``, a numpy scalar) is taken in SI base
units: bytes, bytes per second, seconds — ``Network(bandwidth=5e10)``. A
*string* must carry its unit, except where a bare number has only one
meaning:

=========  ==========================================  ==========================
quantity   string forms                                bare number string
=========  ==========================================  ==========================
size       ``32B``, ``1KB`` = 1000 B, ``1kB`` = 1000 B,  bytes: ``"4096"``,
           ``4KiB`` = 1024 B, ``MB``/``MiB``,           ``"1e6"``
           ``GB``/``GiB``, ``TB``/``TiB``
rate       ``400Gb/s``, ``400Gbps`` (b = bits),        refused (``"400"``: bits
           ``50GB/s``, ``50GBps`` (B = bytes);         or bytes? per second?)
           prefixes ``k``/``K``, ``M``, ``G``, ``T``
           (decimal)
time       ``100ns``, ``1.5us``, ``1µs``, ``2ms``,      refused, except ``"0"``
           ``1s``, ``10ps``
=========  ==========================================  ==========================

Sizes are bytes: a lowercase ``b`` in a size (``1Mb``, ``1kb``: bits) is an
error, and so is a bare prefix (``1k``, ``1M``: 1000 or 1024?). Decimal
prefixes are exact: ``"100ns"`` is the double nearest to 1e-7, the same as
the literal ``1e-7`` (the digits are scaled in decimal, then rounded once).

Ranges of sizes: ``32B..512MiB`` = every power of two from 32 B to 512 MiB.
"""

from __future__ import annotations

import decimal
import math
import numbers
import re

from .errors import ConfigError, show

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"

# size units: (power of ten, power of two) by exact spelling; lowercase 'b' = bits is refused
_SIZE_UNITS = {
    "": (0, 0), "B": (0, 0),
    "kB": (3, 0), "KB": (3, 0), "MB": (6, 0), "GB": (9, 0), "TB": (12, 0),
    "KiB": (0, 10), "MiB": (0, 20), "GiB": (0, 30), "TiB": (0, 40),
}
_SIZE_FORMS = ("bytes with a unit: 32B, 4KiB, 1MiB, 1GiB (powers of 2), 1KB, 1MB (powers "
               "of 10), or a bare number of bytes (4096, 1e6)")

# rate prefixes (decimal); 'b' = bits, 'B' = bytes
_RATE_PREFIX = {"": 0, "k": 3, "K": 3, "M": 6, "G": 9, "T": 12}
_RATE_FORMS = "400Gb/s, 400Gbps (bits), 50GB/s, 50GBps (bytes), 1.6Tb/s, 100Mb/s"

_TIME_UNITS = {"s": 0, "ms": -3, "us": -6, "µs": -6, "μs": -6, "ns": -9, "ps": -12}
_TIME_FORMS = "100ns, 1.5us, 1µs, 2ms, 1s, 10ps (or 0)"


def _float(value, field: str, kind: str) -> float:
    """A Python/numpy number as a float; an int too large for a double is a
    ConfigError, not an OverflowError."""
    try:
        return float(value)
    except OverflowError:
        raise ConfigError(f"{field}: {kind} {show(value)} is too large") from None


def _is_number(value) -> bool:
    """int, float and numpy numeric scalars (not bool; numpy's bool is not Real)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _exact(number: str, exp10: int = 0, exp2: int = 0, divide: int = 1) -> float:
    """``number · 10**exp10 · 2**exp2 / divide`` rounded to a double once."""
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        try:
            d = decimal.Decimal(number).scaleb(exp10) * (decimal.Decimal(2) ** exp2) / divide
        except decimal.Overflow:  # e.g. "1e999999999ns": refused as not finite by the caller
            return math.inf
        return float(d)


def _fail(kind: str, field: str, text, forms: str):
    return ConfigError(f"{field}: cannot read {show(text)} as a {kind}; expected {forms}")


def _no_unit(field: str, text, forms: str):
    return ConfigError(f"{field}: {show(text)} has no unit; expected {forms}")


#: the largest vector size: byte counts are exact in float64 up to 2**53
MAX_SIZE = 2**53


def parse_size(text, field: str = "size") -> int:
    """Bytes as an int (> 0).

    Raises
    ------
    ConfigError
        Naming ``field``, the value and the accepted forms.
    """
    if _is_number(text):
        value = _float(text, field, "size")
    elif isinstance(text, str):
        m = re.fullmatch(_NUM + r"\s*([A-Za-zµ/]*)", text.strip())
        if not m:
            raise _fail("size", field, text, _SIZE_FORMS)
        unit = m.group(2)
        if unit not in _SIZE_UNITS:
            if unit.endswith("b") and unit[:-1] in ("", "k", "K", "M", "m", "G", "g", "T", "t",
                                                    "Ki", "Mi", "Gi", "Ti", "ki", "mi", "gi",
                                                    "ti"):
                raise ConfigError(f"{field}: {show(text)}: a lowercase b means bits, and sizes "
                                  "are bytes; write B, KB, KiB, MB, MiB, GB, GiB")
            if unit in ("k", "K", "M", "m", "G", "g", "T", "t"):
                raise ConfigError(f"{field}: {show(text)}: a bare prefix is ambiguous; write "
                                  f"{m.group(1)}{unit.upper()}iB (powers of 2) or "
                                  f"{m.group(1)}{unit.upper()}B (powers of 10)")
            raise _fail("size", field, text, _SIZE_FORMS)
        value = _exact(m.group(1), *_SIZE_UNITS[unit])
    else:
        raise _fail("size", field, text, _SIZE_FORMS)
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{field}: size {show(text)} must be a positive, finite number of "
                          "bytes")
    if value > MAX_SIZE:
        raise ConfigError(f"{field}: size {show(text)} is larger than the 8PiB (2**53 bytes) "
                          "a size may be (byte counts stay exact in float64 up to there)")
    if value != int(value):
        raise ConfigError(f"{field}: size {show(text)} is not a whole number of bytes")
    return int(value)


def parse_sizes(text, field: str = "sizes") -> list[int]:
    """``32B..512MiB`` (every power of two in the range), a comma list, a
    number, or a sequence of sizes (list, tuple, numpy array) -> sorted unique
    list of ints."""
    if _is_number(text):
        items = [text]
    elif isinstance(text, str):
        s = text.strip()
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
    elif hasattr(text, "__iter__") and not isinstance(text, (bytes, dict)):
        items = list(text)
    else:
        raise _fail("size list", field, text, "e.g. 32B..512MiB, 1KiB,1MiB or a list of sizes")
    if not items:
        raise ConfigError(f"{field}: no sizes given; expected e.g. 32B..512MiB or 1KiB,1MiB")
    return sorted({parse_size(x, field) for x in items})


_BINARY_UNITS = (("B", 1), ("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30), ("TiB", 2**40))


def _size_digits(v: float) -> str:
    """Exact when whole, else 3 significant digits — never an exponent
    (``1.02e+03``): from 100 up, whole units."""
    if v == int(v):
        return f"{v:.0f}"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def format_size(nbytes: float) -> str:
    """Binary units: 32B, 4KiB, 1.5MiB; the smallest unit in which the
    printed number is below 1024 (1073741823 bytes, 1023.999… MiB, prints
    as 1GiB, not 1024MiB)."""
    n = float(nbytes)
    for i, (unit, scale) in enumerate(_BINARY_UNITS):
        last = i == len(_BINARY_UNITS) - 1
        if not last and abs(n) >= _BINARY_UNITS[i + 1][1]:
            continue
        text = _size_digits(n / scale)
        if last or abs(float(text)) < 1024:
            return text + unit
        # rounded up to 1024 of this unit: it is 1 of the next
        return _size_digits(n / _BINARY_UNITS[i + 1][1]) + _BINARY_UNITS[i + 1][0]
    raise AssertionError(nbytes)


def parse_rate(text, field: str = "bandwidth") -> float:
    """Bytes per second (> 0): a number is bytes/s; a string needs its unit.

    Raises
    ------
    ConfigError
        Naming ``field``, the value and the accepted forms; a string without
        a unit (``"400"``) is refused.
    """
    if _is_number(text):
        value = _float(text, field, "rate")
    elif isinstance(text, str):
        s = text.strip()
        m = re.fullmatch(_NUM + r"\s*(?:([kKMGT]?)(b|B)(?:/s|ps))?", s)
        if not m:
            raise _fail("rate", field, text, _RATE_FORMS)
        if not m.group(3):
            raise _no_unit(field, text, _RATE_FORMS)
        value = _exact(m.group(1), _RATE_PREFIX[m.group(2)], 0, 8 if m.group(3) == "b" else 1)
    else:
        raise _fail("rate", field, text, _RATE_FORMS)
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{field}: rate {show(text)} must be positive and finite")
    return value


def format_rate(bytes_per_s: float) -> str:
    """Bits per second with a decimal prefix, as network people say it."""
    bits = float(bytes_per_s) * 8
    for unit, scale in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if abs(bits) >= scale:
            return f"{bits / scale:.4g}{unit}"
    return f"{bits:.4g}b/s"


def parse_time(text, field: str = "time") -> float:
    """Seconds (>= 0): a number is seconds; a string needs its unit (``"0"`` excepted).

    Raises
    ------
    ConfigError
        Naming ``field``, the value and the accepted forms; a string without
        a unit (``"100"``, ``"1e-7"``) is refused.
    """
    if _is_number(text):
        value = _float(text, field, "time")
    elif isinstance(text, str):
        m = re.fullmatch(_NUM + r"\s*([a-zµμ]*)", text.strip())
        if not m:
            raise _fail("time", field, text, _TIME_FORMS)
        if m.group(2) == "":
            if float(m.group(1)) != 0:
                raise _no_unit(field, text, _TIME_FORMS)
            value = 0.0
        elif m.group(2) not in _TIME_UNITS:
            raise _fail("time", field, text, _TIME_FORMS)
        else:
            value = _exact(m.group(1), _TIME_UNITS[m.group(2)])
    else:
        raise _fail("time", field, text, _TIME_FORMS)
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{field}: time {show(text)} must be non-negative and finite")
    return value


def format_time(seconds: float) -> str:
    s = float(seconds)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(s) >= scale:
            return f"{s / scale:.4g}{unit}"
    return f"{s / 1e-12:.4g}ps" if s else "0s"


# ------------------------------------------------ values without their unit

#: the accepted forms of rates and times, quoted as a TOML file writes them:
#: shown when a sweep file or a network preset gives a bare number
RATE_FORMS = ("\"400Gb/s\", \"400Gbps\", \"1.6Tb/s\" (bits) or \"50GB/s\" (bytes per "
              "second)")
TIME_FORMS = ("\"100ns\", \"1.5us\", \"2ms\", \"1s\" (0 may be bare; gamma, delta and "
              "incast_slope are times per byte, e.g. \"0.02ns\")")


def bare_number(raw) -> bool:
    """A TOML number, or a string that is only a number: a rate or time
    without its unit (ambiguous: bits or bytes, seconds or nanoseconds)."""
    if isinstance(raw, bool):
        return False
    if isinstance(raw, (int, float)):
        return True
    try:
        float(str(raw).strip())
    except ValueError:
        return False
    return True


def shown(raw) -> str:
    """A value as the user wrote it: numbers plain, strings quoted."""
    return repr(raw) if isinstance(raw, str) else f"{raw:g}" if isinstance(raw, float) \
        else str(raw)
