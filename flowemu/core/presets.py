"""Network presets: a :class:`~flowemu.core.network.Network` by name or from a file.

A preset is either a built-in name (:data:`BUILTIN`, listed by ``flowemu
list``) or a TOML file::

    # my cluster, fitted by `flowemu fit ... --save cluster.toml`
    [network]
    bandwidth = "100Gb/s"      # rates and times carry their unit, as in sweep files
    alpha = "6.58ms"
    gamma = "0.15ns"           # per byte
    incast_threshold = 8       # a flow count: a bare number
    incast_slope = "30.5ps"    # per byte per flow above the threshold

    [fit]                      # optional, free-form: where the values came from
    rms = 0.012

``[network]`` may set any :class:`~flowemu.core.network.Network` field; the ones
it leaves out keep their defaults. Values follow the rule of sweep files
(:mod:`flowemu.study.sweep.fields`): ``bandwidth`` and the times (``link_latency``,
``hop_latency``, ``alpha``, ``gamma``, ``delta``, ``incast_slope``) are
strings with their unit; a bare number is refused (bits or bytes? seconds or
nanoseconds?), except 0 for a time. ``incast_threshold`` is a flow count.
Where a preset is used (``flowemu run --network``,
``flowemu.simulate(network=...)``, a sweep's ``network`` field), a network
value given explicitly beside it overrides the preset's. Incast needs both
``incast_threshold`` and ``incast_slope``: a preset that ends up with only
one of them once the overrides are applied is refused. Built-in names are
case-insensitive.

Built-in presets
----------------
``genmodel-table5``
    The "Server" row of Table 5 of the GenModel paper (Xiong et al.,
    "Revisiting the Time Cost Model of AllReduce", §5.3), per byte: α = 6.58 ms per message, γ = 6.00e-10/4 s and δ =
    1.87e-10/4 s per byte (the table counts 4-byte floats). Read from
    :data:`GENTREE_TABLE5`. The link rows (β, ε, w_t per
    tier) belong to the links, not the hosts: the ``tree:SS24`` ... presets
    set them per level.
"""

from __future__ import annotations

import decimal
import math
import os
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .errors import ConfigError, show
from .network import TIME_FIELDS, Network, si_values
from .outputs import check_writable, write_text
from .units import RATE_FORMS, TIME_FORMS, bare_number, shown

__all__ = ["BUILTIN", "Preset", "builtin_presets", "is_preset", "load_preset",
           "preset_network", "write_preset"]

#: bytes of one value in the GenTree paper's data sizes (a float)
FLOAT_BYTES = 4

#: Table 5 of the GenModel/GenTree paper (network parameters of the GenTree
#: testbeds), as printed: seconds (α), seconds per float (β, γ, δ), seconds per
#: float per flow above w_t (ε), flows (w_t); its link rows are the tiers of
#: the ``tree:`` presets (:mod:`flowemu.topology.treepresets`), its "Server" row
#: the built-in preset ``genmodel-table5``
GENTREE_TABLE5 = {
    "Cross DC": {"alpha": 3.00e-2, "beta": 6.40e-9, "eps": 6.00e-11, "wt": 9},
    "Root SW": {"alpha": 6.58e-3, "beta": 6.40e-10, "eps": 6.00e-12, "wt": 9},
    "Middle SW": {"alpha": 6.58e-3, "beta": 6.40e-9, "eps": 1.22e-10, "wt": 9},
    "Server": {"alpha": 6.58e-3, "gamma": 6.00e-10, "delta": 1.87e-10},
}

#: built-in preset name -> one-line description (``flowemu list``)
BUILTIN = {
    "genmodel-table5": "GenModel Table 5 'Server' row per byte: alpha 6.58ms, "
                       "gamma 6.00e-10/4 s/B, delta 1.87e-10/4 s/B (other fields default)",
}

#: the two fields incast needs together
_INCAST = ("incast_threshold", "incast_slope")

#: top-level tables a preset file may hold
_TABLES = ("network", "fit")


@dataclass(frozen=True)
class Preset:
    """A loaded preset: its ``name`` (built-in name or the path as given),
    the Network fields it sets (``values``, as written: strings or numbers),
    the ``[fit]`` metadata and the file (None for a built-in)."""

    name: str
    values: dict
    fit: dict = field(default_factory=dict)
    path: str | None = None

    def network(self, overrides: dict | None = None, spelt: dict | None = None) -> Network:
        """The Network of the preset with ``overrides`` (field -> value)
        taking precedence; a bad value names the preset, and an override as
        ``spelt`` spells it (``incast_slope`` -> ``--incast-slope`` on the
        command line)."""
        overrides = overrides or {}
        merged = {**self.values, **overrides}
        try:
            net = Network(**merged)
        except ConfigError as exc:
            field_ = str(exc).partition(":")[0]
            where = "" if field_ in overrides else f"network preset {self.name}: "
            raise ConfigError(f"{where}{exc}") from None
        self._check_incast(merged, overrides, net, spelt or {})
        return net

    def _check_incast(self, merged: dict, overrides: dict, net: Network, spelt: dict) -> None:
        """Refuse one incast field without the other: the Network would run
        with incast silently off (its default threshold inf / slope 0)."""
        given = [k for k in _INCAST if k in merged]
        if len(given) != 1:
            return
        (one,), other = given, _INCAST[1 - _INCAST.index(given[0])]
        if not (math.isfinite(net.incast_threshold) if one == "incast_threshold"
                else net.incast_slope > 0):
            return   # the one field given says "off" itself: nothing is silently lost
        who = ("is given beside the preset" if one in overrides
               else "is set by the preset")
        one = spelt.get(one, one) if one in overrides else one
        raise ConfigError(f"network preset {self.name}: incast needs both incast_threshold "
                          f"and incast_slope; {one} {who} but {other} is not: set {other} "
                          "too (in the preset or beside it) or drop "
                          f"{one}")


def builtin_presets() -> dict[str, str]:
    """Name -> description of every built-in preset."""
    return dict(BUILTIN)


def _builtin_values(name: str) -> dict:
    if name == "genmodel-table5":
        server = GENTREE_TABLE5["Server"]
        return si_values({"alpha": server["alpha"], "gamma": server["gamma"] / FLOAT_BYTES,
                          "delta": server["delta"] / FLOAT_BYTES})
    raise AssertionError(name)


def is_preset(value) -> bool:
    """Whether ``value`` names a preset (a string or path), not a Network."""
    return isinstance(value, (str, os.PathLike))


def _looks_like_file(text: str) -> bool:
    return text.endswith(".toml") or "/" in text or os.sep in text


def load_preset(value, option: str = "network") -> Preset:
    """The preset named ``value``: a built-in name or a TOML file.

    Raises
    ------
    ConfigError
        Naming ``option``, the file, the field and the value: an unknown
        name, a missing or unreadable file, invalid TOML, a table or field
        that is not allowed, a value Network refuses.
    """
    if not is_preset(value):
        raise ConfigError(f"{option}: {show(value)} is not allowed; expected a preset name "
                          f"({', '.join(BUILTIN)}) or a .toml file")
    text = os.fspath(value)
    if text.strip().lower() in BUILTIN and not isinstance(value, os.PathLike):
        name = text.strip().lower()   # case-insensitive, as the tree presets
        return Preset(name, _builtin_values(name), {"source": "built-in"})
    path = Path(text)
    if not path.is_file():
        if not _looks_like_file(text):
            raise ConfigError(f"{option}: {text!r} is neither a built-in preset "
                              f"({', '.join(BUILTIN)}) nor a file")
        why = "is a directory" if path.is_dir() else "file not found"
        raise ConfigError(f"{option}: {_path_text(text)}: {why}; expected a preset file with "
                          "a [network] table")
    try:
        st = path.stat()
        return _load_file(str(path.resolve()), st.st_mtime_ns, st.st_size, text)
    except OSError as exc:
        raise ConfigError(f"{option}: {_path_text(text)}: cannot read: "
                          f"{exc.strerror or exc}") from None


def _unit_problem(key: str, raw) -> str | None:
    """The sweep files' rule for a bare number (same test, same words): a
    rate or a time needs its unit (bits or bytes? seconds or nanoseconds?),
    except 0 for a time."""
    if key == "bandwidth" and bare_number(raw):
        return f"{shown(raw)} has no unit; write a rate with its unit: {RATE_FORMS}"
    if key in TIME_FIELDS and bare_number(raw) and float(raw) != 0:
        return f"{shown(raw)} has no unit; write a time with its unit: {TIME_FORMS}"
    return None


@lru_cache(maxsize=64)
def _load_file(resolved: str, mtime_ns: int, size: int, shown: str) -> Preset:
    """Read and check a preset file (cached by path, mtime and size: a sweep
    names the same file in many configurations)."""
    try:
        with open(resolved, "rb") as fh:   # (utf-8-sig: a byte-order mark is not TOML)
            doc = tomllib.loads(fh.read().decode("utf-8-sig"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"network preset {shown}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"network preset {shown}: not a text (TOML) file") from None
    unknown = [k for k in doc if k not in _TABLES]
    if unknown:
        raise ConfigError(f"network preset {shown}: unknown key {unknown[0]!r}; allowed: "
                          "[network] (Network fields) and [fit] (metadata)")
    net = doc.get("network")
    if not isinstance(net, dict):
        raise ConfigError(f"network preset {shown}: no [network] table; expected [network] "
                          f"with any of {', '.join(Network.field_names())}")
    fit = doc.get("fit", {})
    if not isinstance(fit, dict):
        raise ConfigError(f"network preset {shown}: fit: expected a table [fit], got "
                          f"{show(fit)}")
    fields_ = Network.field_names()
    for key, raw in net.items():
        if key not in fields_:
            raise ConfigError(f"network preset {shown}: network.{key}: unknown field; "
                              f"allowed: {', '.join(fields_)}")
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            raise ConfigError(f"network preset {shown}: network.{key}: {show(raw)} is not "
                              "allowed; expected a string with its unit (e.g. '400Gb/s', "
                              "'100ns') or, for incast_threshold, a flow count")
        problem = _unit_problem(key, raw)
        if problem:
            raise ConfigError(f"network preset {shown}: network.{key}: {problem}")
        try:
            Network(**{key: raw})
        except ConfigError as exc:
            raise ConfigError(f"network preset {shown}: network.{exc}") from None
    return Preset(shown, dict(net), dict(fit), resolved)


def _path_text(text: str) -> str:
    """A file name for a one-line message: as written, or quoted (escapes
    shown) when it holds a newline or another unprintable character."""
    return text if text.isprintable() else repr(text)


def preset_network(value, overrides: dict | None = None, option: str = "network",
                   spelt: dict | None = None) -> Network:
    """``load_preset(value).network(overrides, spelt)``."""
    return load_preset(value, option).network(overrides, spelt)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            return "inf" if v > 0 else ("-inf" if v < 0 else "nan")
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    text = str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
    return f'"{text}"'


#: what each Network field means, for the comments of a written preset
_MEANING = {"bandwidth": "link bandwidth", "link_latency": "per link traversed",
            "hop_latency": "per hop", "alpha": "per message (step)",
            "gamma": "per byte reduced", "delta": "per byte read or written",
            "incast_threshold": "flows into a receiver",
            "incast_slope": "per byte per flow above the threshold"}

_TIME_UNITS = (("s", 0), ("ms", -3), ("us", -6), ("ns", -9), ("ps", -12))
_RATE_UNITS = (("Tb/s", 12), ("Gb/s", 9), ("Mb/s", 6), ("kb/s", 3), ("b/s", 0))


def _decimal_text(d: decimal.Decimal) -> str:
    return format(d.normalize(), "f")


def _with_unit(key: str, value) -> str | float:
    """A Network field's SI value as the preset file writes it: rates and
    times as strings with their unit (the file rule), exact — the decimal
    digits of ``repr`` are scaled in decimal, so reading the string back
    (:mod:`flowemu.core.units` scales in decimal too) gives the same double."""
    v = float(value)
    if key == "incast_threshold" or not math.isfinite(v):
        return v
    if key == "bandwidth":
        bits = decimal.Decimal(repr(v)) * 8
        unit, exp = next(((u, e) for u, e in _RATE_UNITS if bits >= decimal.Decimal(10) ** e),
                         _RATE_UNITS[-1])
        return _decimal_text(bits.scaleb(-exp)) + unit
    if v == 0:
        return "0s"
    d = decimal.Decimal(repr(v))
    unit, exp = next(((u, e) for u, e in _TIME_UNITS if d >= decimal.Decimal(10) ** e),
                     _TIME_UNITS[-1])
    return _decimal_text(d.scaleb(-exp)) + unit


def write_preset(path, values: dict, fit: dict | None = None, comment: str = "") -> Path:
    """Write a preset file (``[network]`` from ``values``, SI numbers,
    written with their unit and what they mean in a comment; ``[fit]`` from
    ``fit``), whole or not at all."""
    fields_ = Network.field_names()
    bad = sorted(set(values) - set(fields_))
    if bad:
        raise ConfigError(f"network: unknown field {bad[0]!r}; allowed: {', '.join(fields_)}")
    net = Network.from_si(**values)   # refuse a bad value before anything is written
    lines = [f"# {line}" for line in comment.splitlines()] if comment else []
    lines.append("[network]")
    width = max((len(k) for k in values), default=0)
    texts = {key: _toml_value(_with_unit(key, getattr(net, key)))
             for key in fields_ if key in values}
    vwidth = max((len(t) for t in texts.values()), default=0)
    for key, text in texts.items():
        lines.append(f"{key:<{width}} = {text:<{vwidth}}  # {_MEANING[key]}")
    if fit:
        lines += ["", "[fit]"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in fit.items()]
    out = check_writable(path, "--save")
    write_text(out, "--save", "\n".join(lines) + "\n")
    return Path(out)
