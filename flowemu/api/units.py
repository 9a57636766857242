"""Rates and times with their unit, for Python callers.

A rate or a time given to flowemu carries its unit: a string (``"400Gb/s"``,
``"100ns"``, as on the command line and in TOML files) or one of these
helpers, which say the same thing as a call::

    >>> from flowemu.units import Gbps, ns
    >>> flowemu.simulate("torus:4x4", "ring", "1MiB", bandwidth=Gbps(400),
    ...                  link_latency=ns(100))

A bare number (``bandwidth=400``) is refused with a ConfigError naming the
parameter: 400 bits or bytes per second? 100 seconds or nanoseconds? Only 0
may be bare, for a time. Each helper returns a :class:`Quantity` whose
``str`` is the string it stands for (``Gbps(400)`` is ``"400Gb/s"``) and whose
``value`` is SI (bytes/s, seconds).

Rates: ``bps``, ``kbps``, ``Mbps``, ``Gbps``, ``Tbps`` (bits per second);
``Bps``, ``kBps``, ``MBps``, ``GBps``, ``TBps`` (bytes per second), decimal
prefixes. Times: ``s``, ``ms``, ``us``, ``ns``, ``ps``; the per-byte costs
(``gamma``, ``delta``, ``incast_slope``) are times per byte, e.g. ``ps(20)``.
"""

from __future__ import annotations

from ..core.units import Quantity, quantity

__all__ = ["Bps", "GBps", "Gbps", "MBps", "Mbps", "Quantity", "TBps", "Tbps", "bps", "kBps",
           "kbps", "ms", "ns", "ps", "s", "us"]


def _unit(unit: str, name: str):
    def make(number) -> Quantity:
        return quantity(number, unit, name)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"``{name}(x)``: x {unit}, the same as the string ``\"x{unit}\"``."
    return make


bps, kbps, Mbps, Gbps, Tbps = (_unit(f"{p}b/s", f"{p}bps") for p in ("", "k", "M", "G", "T"))
Bps, kBps, MBps, GBps, TBps = (_unit(f"{p}B/s", f"{p}Bps") for p in ("", "k", "M", "G", "T"))
s, ms, us, ns, ps = (_unit(u, u) for u in ("s", "ms", "us", "ns", "ps"))
