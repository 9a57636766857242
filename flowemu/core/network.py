"""Network parameters: the α-β link model plus GenModel's γ, δ, ε, w_t.

GenModel (Xiong et al., "Revisiting the Time Cost Model of AllReduce", §3, eq. 7–11): a step costs
α + bytes·β (+ reduction γ per byte, memory access δ per byte) and a receiver
with fan-in w > w_t sees its per-byte cost grow to β + (w − w_t)·ε.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields

from .errors import ConfigError, show
from .units import parse_rate, parse_time

#: the Network fields that are times (or times per byte)
TIME_FIELDS = ("link_latency", "hop_latency", "alpha", "gamma", "delta", "incast_slope")


@dataclass(frozen=True)
class Network:
    """Parameters of the network and the end hosts.

    Numbers are SI (bytes/s, seconds, seconds per byte); strings carry
    their unit (:mod:`flowemu.core.units`): ``bandwidth="400Gb/s"``,
    ``link_latency="100ns"``, ``gamma="1ps"`` (1 ps per byte). A string
    without a unit (``"400"``) is a ConfigError, except ``"0"`` for times.

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

    bandwidth: float = 400e9 / 8
    link_latency: float = 100e-9
    hop_latency: float = 300e-9
    alpha: float = 0.0
    gamma: float = 0.0
    delta: float = 0.0
    incast_threshold: float = math.inf
    incast_slope: float = 0.0

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)
        set_("bandwidth", parse_rate(self.bandwidth, "bandwidth"))
        for name in TIME_FIELDS:
            set_(name, parse_time(getattr(self, name), name))
        w = self.incast_threshold
        if isinstance(w, str):
            try:
                w = float(w)
            except ValueError:
                raise ConfigError(f"incast_threshold: {w!r} is not a number; expected a "
                                  "flow count >= 0 or 'inf' (off)") from None
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or math.isnan(w) or w < 0:
            raise ConfigError(f"incast_threshold: {show(self.incast_threshold)} is not allowed; "
                              "expected a flow count >= 0 or inf (off)")
        set_("incast_threshold", float(w))

    @property
    def incast_on(self) -> bool:
        return self.incast_slope > 0 and math.isfinite(self.incast_threshold)

    def per_hop_latency(self) -> float:
        """Seconds each hop adds to a flow: link latency + per-hop processing."""
        return self.link_latency + self.hop_latency

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}
