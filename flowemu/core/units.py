"""Parsing and printing of sizes, rates and times — units are never guessed.

One rule for the Python API, the command line and TOML files: a rate or a
time a user gives carries its unit — a string (``"400Gb/s"``, ``"100ns"``)
or a :class:`Quantity` made by a helper (``Gbps(400)``, ``ns(100)``; public as
:mod:`flowemu.units`). A bare number (``bandwidth=400``: bits or bytes per
second? ``link_latency=100``: seconds or nanoseconds?) is refused by
:func:`user_rate` and :func:`user_time`, naming the parameter and the forms
accepted, except 0 for a time (0 s is 0 ns: no unit is missing). Sizes are
bytes, so a bare number of bytes is a size. Below the public boundary the
code keeps SI floats (bytes, bytes/s, seconds): :func:`parse_rate` and
:func:`parse_time` take them as such. The string forms:

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
    "PB": (15, 0), "PiB": (0, 50),
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


def _decimal(number: str, exp10: int = 0, exp2: int = 0, divide: int = 1) -> decimal.Decimal:
    """``number · 10**exp10 · 2**exp2 / divide``, exactly (200 digits)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        try:
            return decimal.Decimal(number).scaleb(exp10) * (decimal.Decimal(2) ** exp2) / divide
        except decimal.Overflow:  # e.g. "1e999999999ns": refused as not finite by the caller
            return decimal.Decimal("Infinity")


def _exact(number: str, exp10: int = 0, exp2: int = 0, divide: int = 1) -> float:
    """``number · 10**exp10 · 2**exp2 / divide`` rounded to a double once."""
    return float(_decimal(number, exp10, exp2, divide))


def spells_inf(text: str) -> bool:
    """Whether ``text`` writes infinity itself (``inf``, ``+Infinity``), not a
    number too large for a double that ``float`` reads as inf (``1e400``)."""
    return text.strip().lower().lstrip("+") in ("inf", "infinity")


def _fail(kind: str, field: str, text, forms: str):
    if isinstance(text, str) and text.strip().startswith("-"):
        if kind == "time":
            return ConfigError(f"{field}: {show(text)}: a time cannot be negative; expected 0 "
                               f"or more: {forms}")
        return ConfigError(f"{field}: {show(text)}: a {kind} must be positive; expected "
                           f"{forms}")
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
        # (exact: 2**53 + 1 as an int, or its text, is refused, not rounded to 2**53)
        exact = decimal.Decimal(int(text)) if isinstance(text, numbers.Integral) \
            else decimal.Decimal(_float(text, field, "size"))
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
        exact = _decimal(m.group(1), *_SIZE_UNITS[unit])
    else:
        raise _fail("size", field, text, _SIZE_FORMS)
    if not exact.is_finite() or exact <= 0:
        raise ConfigError(f"{field}: size {show(text)} must be a positive, finite number of "
                          "bytes")
    if exact > MAX_SIZE:
        raise ConfigError(f"{field}: size {show(text)} is larger than the 8PiB (2**53 bytes) "
                          "a size may be (byte counts stay exact in float64 up to there)")
    if exact != exact.to_integral_value():
        raise ConfigError(f"{field}: size {show(text)} is not a whole number of bytes")
    return int(exact)


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
            if not lo_s.strip() or not hi_s.strip() or lo_s.endswith(".") \
                    or hi_s.startswith(".") or "," in s:
                raise ConfigError(f"{field}: {s!r} is not a size range; expected LO..HI with "
                                  "two dots, e.g. 32B..512MiB (every power of two from LO to "
                                  "HI), or a comma list such as 1KiB,1MiB")
            lo, hi = parse_size(lo_s, field), parse_size(hi_s, field)
            if lo > hi:
                raise ConfigError(f"{field}: range {s!r} is empty (start > end)")
            k_lo = math.ceil(math.log2(lo) - 1e-12)
            k_hi = math.floor(math.log2(hi) + 1e-12)
            out = [2**k for k in range(k_lo, k_hi + 1)]
            if not out:
                raise ConfigError(f"{field}: range {s!r} holds no power of two")
            return out
        items = s.split(",") if s else []
        if any(not x.strip() for x in items):
            raise ConfigError(f"{field}: {s!r} has an empty entry (a comma at either end or "
                              "two in a row); expected sizes separated by commas, e.g. "
                              "1KiB,1MiB")
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
    as 1GiB, not 1024MiB). A size that binary units do not print exactly
    but a decimal unit does is printed in it: 8MB (8,000,000 bytes), not
    7.63MiB. NaN and infinities print as ``nan``, ``inf``."""
    n = float(nbytes)
    if not math.isfinite(n):
        return _not_finite(n)
    binary = _binary_size(n)
    if n >= 1000 and not _exact_size(binary, n):
        # the decimal unit in which it is below 1000, if it is whole there
        unit, scale = next((u, sc) for u, sc in reversed(_DECIMAL_UNITS) if n >= sc)
        if n % scale == 0 and (n < 1000 * scale or unit == "TB"):
            return f"{n / scale:.0f}{unit}"
    return binary


_DECIMAL_UNITS = (("KB", 10**3), ("MB", 10**6), ("GB", 10**9), ("TB", 10**12))


def _exact_size(text: str, n: float) -> bool:
    """Whether the printed size ``text`` (binary units) reads back as ``n``."""
    for unit, scale in reversed(_BINARY_UNITS):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * scale == n
    return False


def _binary_size(n: float) -> str:
    for i, (unit, scale) in enumerate(_BINARY_UNITS):
        last = i == len(_BINARY_UNITS) - 1
        if not last and abs(n) >= _BINARY_UNITS[i + 1][1]:
            continue
        if last and abs(n / scale) >= 10**4:   # (beyond any real size: 4 digits, no more)
            return f"{n / scale:.4g}{unit}"
        text = _size_digits(n / scale)
        if last or abs(float(text)) < 1024:
            return text + unit
        # rounded up to 1024 of this unit: it is 1 of the next
        return _size_digits(n / _BINARY_UNITS[i + 1][1]) + _BINARY_UNITS[i + 1][0]
    raise AssertionError(n)


def number_text(value: float) -> str:
    """The shortest text that reads back as ``value``, without a trailing
    ``.0`` (``0.5`` for 0.50, ``1`` for 1.0): one spelling of a number in
    a spec's canonical text."""
    return repr(float(value)).removesuffix(".0")


def _not_finite(v: float) -> str:
    """``nan``, ``inf`` or ``-inf`` (with no unit: 'nanb/s' read as a rate)."""
    return "nan" if math.isnan(v) else "inf" if v > 0 else "-inf"


def parse_rate(text, field: str = "bandwidth") -> float:
    """Bytes per second (> 0): a number is bytes/s (SI, from inside flowemu;
    a user's value goes through :func:`user_rate`); a string needs its unit;
    a :class:`Quantity` must be a rate.

    Raises
    ------
    ConfigError
        Naming ``field``, the value and the accepted forms; a string without
        a unit (``"400"``) is refused.
    """
    if isinstance(text, Quantity):
        value = text.of_kind("rate", field)
    elif _is_number(text):
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
        shown = text.text if isinstance(text, Quantity) else show(text)
        raise ConfigError(f"{field}: rate {shown} must be positive and finite")
    return value


def format_rate(bytes_per_s: float) -> str:
    """Bits per second with a decimal prefix, as network people say it
    (NaN and infinities as ``nan``, ``inf``)."""
    bits = float(bytes_per_s) * 8
    if not math.isfinite(bits):
        return _not_finite(bits)
    for unit, scale in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if abs(bits) >= scale:
            return f"{bits / scale:.4g}{unit}"
    return f"{bits:.4g}b/s"


def parse_time(text, field: str = "time") -> float:
    """Seconds (>= 0): a number is seconds (SI, from inside flowemu; a
    user's value goes through :func:`user_time`); a string needs its unit
    (``"0"`` excepted); a :class:`Quantity` must be a time.

    Raises
    ------
    ConfigError
        Naming ``field``, the value and the accepted forms; a string without
        a unit (``"100"``, ``"1e-7"``) is refused.
    """
    if isinstance(text, Quantity):
        value = text.of_kind("time", field)
    elif _is_number(text):
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
    """Seconds in the largest unit below them: 1.5ms, 100ns, 20ps (NaN and
    infinities as ``nan``, ``inf``)."""
    s = float(seconds)
    if not math.isfinite(s):
        return _not_finite(s)
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


# ------------------------------------------------ quantities: a number and its unit

class Quantity:
    """A rate or a time with its unit, as a Python user writes it:
    ``Gbps(400)``, ``GBps(50)``, ``ns(100)``, ``us(1.5)`` (the helpers of
    :mod:`flowemu.units`). ``value`` is SI (bytes/s or seconds), ``text``
    the number with its unit as written (``"400Gb/s"``), which is also its
    ``str`` and how a CLI option or a TOML file would say it.

    Accepted wherever a rate or a time is (``bandwidth=Gbps(400)``,
    ``link_latency=ns(100)``, ``Network(alpha=us(2))``); a time given for a
    rate, or the reverse, is a ConfigError naming the parameter.
    """

    __slots__ = ("kind", "text", "value")

    def __init__(self, value: float, kind: str, text: str):
        if kind not in ("rate", "time"):
            raise ConfigError(f"Quantity: kind {kind!r} is not allowed; expected 'rate' or "
                              "'time'")
        self.value, self.kind, self.text = float(value), kind, text

    @classmethod
    def si(cls, value: float, kind: str) -> Quantity:
        """A value already in SI (bytes/s, seconds): how flowemu hands its own
        floats to a constructor that takes user values."""
        unit = "B/s" if kind == "rate" else "s"
        return cls(value, kind, f"{float(value)!r}{unit}")

    def of_kind(self, kind: str, field: str) -> float:
        """``value``, or a ConfigError naming ``field`` when this is not a ``kind``."""
        if self.kind != kind:
            raise ConfigError(f"{field}: {self.text} is a {self.kind}; expected a {kind} "
                              f"({_RATE_FORMS if kind == 'rate' else _TIME_FORMS})")
        return self.value

    def __eq__(self, other):
        return isinstance(other, Quantity) and (self.kind, self.value) == (other.kind,
                                                                           other.value)

    def __hash__(self):
        return hash((self.kind, self.value))

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"Quantity({self.text!r})"


def quantity(number, unit: str, field: str | None = None) -> Quantity:
    """``number`` with ``unit`` (``"Gb/s"``, ``"ns"``, ...): the string
    ``f"{number}{unit}"`` read by :func:`parse_rate` or :func:`parse_time`
    (the same double as the string), kept as a :class:`Quantity`."""
    field = field or unit
    if not _is_number(number):
        raise ConfigError(f"{field}: {show(number)} is not allowed; expected a number")
    if not isinstance(number, numbers.Integral) and not math.isfinite(float(number)):
        # (an int past a double's range is refused below, as the string it makes)
        raise ConfigError(f"{field}: {float(number)} is not allowed; expected a finite number")
    digits = str(int(number)) if isinstance(number, numbers.Integral) else repr(float(number))
    text = digits.removesuffix(".0") + unit
    if unit.endswith("/s"):
        return Quantity(parse_rate(text, field), "rate", text)
    return Quantity(parse_time(text, field), "time", text)


#: a bare rate from this many bytes/s up, or a bare time below this many
#: seconds, reads as SI: its refusal leads with that reading (1e11 is
#: "800Gb/s", 1e-07 is "100ns"), not with "1e+11Gb/s" or "1e-07ns"
SI_RATE = 1e6
SI_TIME = 1e-3


def _helper(text: str) -> str:
    """The :mod:`flowemu.units` call that makes ``text`` (``"800Gb/s"`` ->
    ``Gbps(800)``, ``"100ns"`` -> ``ns(100)``), as :func:`format_rate` and
    :func:`format_time` write it."""
    m = re.fullmatch(r"([0-9.e+-]+)(.*)", text)
    unit = m.group(2)
    name = unit.replace("b/s", "bps") if unit.endswith("b/s") else unit
    return f"{name}({m.group(1)})"


def _bare(field: str, value, kind: str) -> ConfigError:
    """The bare-number refusal: the parameter, the value, the forms to write
    (and what the number would be as SI, for a caller who meant SI)."""
    n = str(int(value)) if isinstance(value, numbers.Integral) else f"{float(value):g}"
    try:
        value = float(value)
    except OverflowError:   # a huge int: shown shortened, the examples with a usual number
        value = math.inf
    if isinstance(value, float) and len(n) <= 24 and not math.isfinite(value):
        return ConfigError(f"{field}={n} is not allowed; a {kind} is a finite number with its "
                           "unit, e.g. " + ('"400Gb/s" or flowemu.units.Gbps(400)'
                                           if kind == "rate"
                                           else '"100ns" or flowemu.units.ns(100)'))
    if len(n) > 24:
        return ConfigError(f"{field}={n[:6]}...({len(n)} digits): a bare number has no unit; "
                           "write it with its unit, e.g. "
                           + ('"400Gb/s"' if kind == "rate" else '"100ns"'))
    if kind == "rate" and not value > 0:   # no unit makes it a rate: say what is wrong
        return ConfigError(f"{field}={n}: a rate must be positive, with its unit, e.g. "
                           '"400Gb/s" or flowemu.units.Gbps(400)')
    if kind == "time" and value < 0:   # no unit makes it a time: say what is wrong
        return ConfigError(f"{field}={n}: a time cannot be negative; write 0 or more with its "
                           'unit, e.g. "100ns" or flowemu.units.ns(100)')
    if kind == "rate" and math.isfinite(value) and value >= SI_RATE:
        # a number that large is bytes (or bits) per second, not Gb/s
        si, bits = format_rate(value), format_rate(value / 8)
        return ConfigError(f"{field}={n}: a bare number has no unit; as bytes per second, {n} "
                           f"is \"{si}\" (as bits per second \"{bits}\"): write the one meant "
                           f"with its unit, e.g. \"{si}\" or flowemu.units.{_helper(si)}")
    if kind == "time" and math.isfinite(value) and 0 < value < SI_TIME:
        # a number that small is seconds, not ns or us
        si = format_time(value)
        return ConfigError(f"{field}={n}: a bare number has no unit; as seconds, {n} is "
                           f"\"{si}\": write \"{si}\" or flowemu.units.{_helper(si)} (a time "
                           "needs its unit: ps, ns, us, ms or s; 0 may be bare)")
    if kind == "rate":
        forms = (f'write "{n}Gb/s" (bits per second) or "{n}GB/s" (bytes per second), or '
                 f"flowemu.units.Gbps({n}) / flowemu.units.GBps({n})")
        si = format_rate(value) if math.isfinite(value) and value > 0 else None
        meant = f"; as bytes per second, {n} is \"{si}\"" if si else ""
    else:
        forms = (f'write "{n}ns", "{n}us", "{n}ms" or "{n}s", or flowemu.units.ns({n}) '
                 "(also ps, us, ms, s); 0 may be bare")
        si = format_time(value) if math.isfinite(value) and value > 0 else None
        meant = f"; as seconds, {n} is \"{si}\"" if si else ""
    return ConfigError(f"{field}={n}: a bare number has no unit; {forms}{meant}")


def user_rate(value, field: str = "bandwidth") -> float:
    """A rate a user gave, in bytes/s: a string with its unit or a rate
    :class:`Quantity`; a bare number (numpy's too) is refused, naming
    ``field``, the value and the forms accepted."""
    if _is_number(value):
        raise _bare(field, value, "rate")
    return parse_rate(value, field)


def user_time(value, field: str = "time") -> float:
    """A time a user gave, in seconds: a string with its unit or a time
    :class:`Quantity`; a bare number other than 0 is refused, naming
    ``field``, the value and the forms accepted."""
    if _is_number(value) and value != 0:
        raise _bare(field, value, "time")
    return parse_time(value, field)
