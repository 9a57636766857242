"""Network parameters: the α-β link model plus GenModel's γ, δ, ε, w_t.

GenModel (Xiong et al., "Revisiting the Time Cost Model of AllReduce", §3, eq. 7–11): a step costs
α + bytes·β (+ reduction γ per byte, memory access δ per byte) and a receiver
with fan-in w > w_t sees its per-byte cost grow to β + (w − w_t)·ε.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields

from .errors import ConfigError, checked_keywords, show, unknown_keywords
from .units import Quantity, spells_inf, user_rate, user_time

#: the Network fields that are times (or times per byte)
TIME_FIELDS = ("link_latency", "hop_latency", "alpha", "gamma", "delta", "incast_slope")


@checked_keywords
@dataclass(frozen=True)
class Network:
    """Parameters of the network and the end hosts.

    Rates and times carry their unit (:mod:`flowemu.core.units`): a string
    (``bandwidth="400Gb/s"``, ``link_latency="100ns"``, ``gamma="1ps"``: 1 ps
    per byte) or a :mod:`flowemu.units` helper (``bandwidth=Gbps(400)``). A
    bare number (``bandwidth=5e10``, ``link_latency=100``) is a ConfigError
    naming the field, except 0 for a time; ``incast_threshold`` is a flow
    count, a number. The attributes hold SI floats; flowemu builds a
    Network from its own SI floats with :meth:`from_si`.

    Attributes
    ----------
    bandwidth : float
        Link bandwidth in bytes/s (default 400 Gb/s = 5e10 B/s).
    link_latency : float
        Seconds per link traversed (default 100 ns).
    hop_latency : float
        Seconds of per-hop processing (default 300 ns).
    alpha : float
        Per-message overhead α in seconds (default 0).
    gamma : float
        GenModel reduce cost γ, seconds per byte reduced (default 0).
    delta : float
        GenModel memory-access cost δ, seconds per byte read or written (default 0).
    incast_threshold : float
        GenModel w_t: fan-in above which incast sets in (default inf = off).
    incast_slope : float
        GenModel ε, extra seconds per byte per flow above w_t (default 0 = off).
    """

    bandwidth: float = "400Gb/s"
    link_latency: float = "100ns"
    hop_latency: float = "300ns"
    alpha: float = 0.0
    gamma: float = 0.0
    delta: float = 0.0
    incast_threshold: float = math.inf
    incast_slope: float = 0.0

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)
        set_("bandwidth", user_rate(self.bandwidth, "bandwidth"))
        for name in TIME_FIELDS:
            set_(name, user_time(getattr(self, name), name))
        w = self.incast_threshold
        if isinstance(w, str):
            try:
                w = float(w)
            except ValueError:
                raise ConfigError(f"incast_threshold: {w!r} is not a number; expected a "
                                  "flow count >= 0 or 'inf' (off)") from None
            if math.isinf(w) and not spells_inf(self.incast_threshold):   # (1e400: not "off")
                raise ConfigError(f"incast_threshold: {self.incast_threshold!r} is not "
                                  "allowed; expected a flow count >= 0 or 'inf' (off)")
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or math.isnan(w) or w < 0:
            raise ConfigError(f"incast_threshold: {show(self.incast_threshold)} is not allowed; "
                              "expected a flow count >= 0 or inf (off)")
        set_("incast_threshold", float(w))

    @classmethod
    def from_si(cls, **values) -> Network:
        """A Network from SI floats (bytes/s, seconds) flowemu computed or
        parsed itself (a CLI option, a fit, a sweep's canonical values);
        a user's numbers go to the constructor, which wants their unit."""
        return cls(**si_values(values))

    @property
    def incast_on(self) -> bool:
        return self.incast_slope > 0 and math.isfinite(self.incast_threshold)

    def per_hop_latency(self) -> float:
        """Seconds each hop adds to a flow: link latency + per-hop processing."""
        return self.link_latency + self.hop_latency

    def replace(self, **changes) -> Network:
        """This network with some fields changed, each given as the
        constructor takes it (``net.replace(bandwidth="800Gb/s")``); the
        others keep their values. (``dataclasses.replace`` hands the kept
        SI floats back to the constructor, which refuses a bare number.)"""
        names = self.field_names()
        unknown = [k for k in changes if k not in names]
        if unknown:
            raise unknown_keywords("Network.replace", unknown, names)
        kept = si_values({k: v for k, v in self.as_dict().items() if k not in changes})
        return type(self)(**kept, **changes)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def si_values(values: dict) -> dict:
    """Network fields with the rates and times given as SI numbers wrapped
    as :class:`~flowemu.core.units.Quantity` (so the constructor takes them);
    strings, quantities and the flow count pass as they are."""
    def wrap(name, v):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            return v   # a string, a Quantity, or a wrong type the constructor names
        kind = "rate" if name == "bandwidth" else "time" if name in TIME_FIELDS else None
        return v if kind is None else Quantity.si(v, kind)
    return {k: wrap(k, v) for k, v in values.items()}
