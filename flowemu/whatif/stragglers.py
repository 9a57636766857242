"""Slow ranks (stragglers): per-rank compute and network speed fractions.

``parse_slow("3,7-9=0.5; 12=0.25:compute", p)`` gives each listed rank a
speed FACTOR from 1e-6 to 1 (0.5 = half speed) for its compute (the reduction
work after a step: its γ/δ time divided by FACTOR) and/or its network
(its injection and ejection capped at FACTOR × the capacity of its
endpoint's outgoing / incoming links, as two private virtual resources every
flow from / to it crosses, background flows included; the physical links
keep their capacity, since on a torus they also carry other nodes' transit
traffic). Steps are bulk
synchronous, so one slow rank delays every step it takes part in.

Grammar: items separated by ``;``, each ``RANKS=FACTOR[:compute|:network]``
(both by default). RANKS is a comma list of ranks ``3`` and ranges ``7-9``
(inclusive), or ``random:K:SEED`` (K distinct ranks drawn with a seeded
generator; K may be 0). Items apply in order: a later item overrides what an
earlier one set for the same rank and kind (``0-7=0.5; 3=0.25`` makes rank 3
a quarter speed, ranks 0-2 and 4-7 half speed).
"""

from __future__ import annotations

import numpy as np

from ..core import checks
from ..core.errors import ConfigError, show
from ..core.units import number_text
from ..engine.load import Slow

#: what a FACTOR may be followed by
KINDS = ("compute", "network")

_GRAMMAR = ("expected RANKS=FACTOR[:compute|:network] items separated by ';' (RANKS: 3, 3,5, "
            "7-9 or random:K:SEED; FACTOR from 1e-6 to 1)")
#: the slowest a rank may be: a millionth of full speed (a slower one made a
#: run's time inf, or its rates underflow, 1e-300)
MIN_FACTOR = 1e-6


def parse_slow(spec, p) -> Slow:
    """Parse a slow-rank spec for ``p`` ranks (grammar in the module doc).

    Raises
    ------
    ConfigError
        Naming ``slow``, the bad value and what is allowed: a rank out of
        ``0..p-1``, a factor outside [1e-6, 1], an unknown kind, a malformed item.
    """

    p = checks.integer("slow: ranks p", p, lo=1)
    if isinstance(spec, Slow):
        if spec.p != p:
            raise ConfigError(f"slow: {spec.spec!r} was parsed for {spec.p} ranks, not {p}")
        return spec
    if not isinstance(spec, str):
        raise ConfigError(f"slow: {show(spec)} is not allowed; {_GRAMMAR}")
    compute = np.ones(p)
    network = np.ones(p)
    items = [item.strip() for item in spec.split(";")]
    if not any(items):
        raise ConfigError(f"slow: {spec!r} is empty; {_GRAMMAR}")
    for item in items:
        if not item:
            continue
        ranks, factor, kinds = _parse_item(item, p)
        if "compute" in kinds:
            compute[ranks] = factor
        if "network" in kinds:
            network[ranks] = factor
    return Slow(p, compute, network, slow_text(spec))


def slow_text(spec: str) -> str:
    """The canonical text of a slow-rank spec, as it is written: no spaces,
    a factor's shortest number (``0.50``: ``0.5``), a kind in lower case, a
    range of one rank as the rank (``3-3``: ``3``), ``random:K:SEED`` with
    plain integers; the items in their order. A text that does not read (a
    bad spec, refused where it is read) as it is."""
    items = []
    try:
        for item in filter(None, (item.strip() for item in spec.split(";"))):
            left, factor, kind = _read_item(item)
            ranks = _read_ranks(left, item)
            text = (f"random:{ranks[1]}:{ranks[2]}" if ranks[0] == "random" else
                    ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranks[1]))
            items.append(f"{text}={number_text(factor)}" + (f":{kind}" if kind else ""))
    except ConfigError:
        return spec.strip()
    return ";".join(items)


def _parse_item(item: str, p: int) -> tuple[np.ndarray, float, tuple[str, ...]]:
    left, factor, kind = _read_item(item)
    return _parse_ranks(left, item, p), factor, (kind,) if kind else KINDS


def _read_item(item: str) -> tuple[str, float, str]:
    """``(RANKS text, FACTOR, kind or "")`` of an item ``RANKS=FACTOR[:kind]``;
    a ConfigError naming what does not read."""
    if item.count("=") != 1:
        raise ConfigError(f"slow: item {item!r} is not allowed; {_GRAMMAR}")
    left, right = (part.strip() for part in item.split("="))
    value, _, kind = right.partition(":")
    kind = kind.strip().lower()
    if kind and kind not in KINDS:
        raise ConfigError(f"slow: kind {kind!r} in {item!r} is not allowed; expected compute "
                          "or network (nothing: both)")
    try:
        factor = float(value)
    except ValueError:
        factor = float("nan")
    if not MIN_FACTOR <= factor <= 1:
        raise ConfigError(f"slow: factor {value.strip()!r} in {item!r} is not allowed; expected "
                          "a speed fraction from 1e-6 to 1 (0.5 = half speed)")
    return left, factor, kind


def _read_ranks(text: str, item: str) -> tuple:
    """RANKS as written, before any rank count is known: ``("random", K,
    SEED)`` or ``("list", [(low, high), ...])``; a ConfigError naming what
    does not read."""
    if text.lower().startswith("random:"):
        parts = text.split(":")
        if len(parts) != 3 or not all(_is_uint(x) for x in parts[1:]):
            raise ConfigError(f"slow: ranks {text!r} in {item!r} is not allowed; expected "
                              "random:K:SEED with integers K >= 0 and SEED >= 0")
        return "random", int(parts[1]), int(parts[2])
    ranges = []
    for part in text.split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        if not _is_uint(lo) or (dash and not _is_uint(hi)):
            raise ConfigError(f"slow: ranks {part!r} in {item!r} is not allowed; expected a "
                              "rank (3), a range (7-9) or random:K:SEED")
        ranges.append((int(lo), int(hi) if dash else int(lo)))
    return "list", ranges


def _parse_ranks(text: str, item: str, p: int) -> np.ndarray:
    ranks = _read_ranks(text, item)
    if ranks[0] == "random":
        _, k, seed = ranks
        if k > p:
            raise ConfigError(f"slow: {k} random ranks in {item!r} is not allowed; expected at "
                              f"most {p} (the number of ranks)")
        return np.sort(np.random.default_rng(seed).choice(p, size=k, replace=False))
    out: list[np.ndarray] = []
    for (a, b), part in zip(ranks[1], text.split(","), strict=True):
        for r in (a, b):
            if r >= p:
                raise ConfigError(f"slow: rank {r} in {item!r} is out of range; expected ranks "
                                  f"0..{p - 1}")
        if b < a:
            raise ConfigError(f"slow: range {part.strip()!r} in {item!r} is empty; write "
                              "LOW-HIGH")
        out.append(np.arange(a, b + 1, dtype=np.int64))
    return np.concatenate(out)


def _is_uint(text: str) -> bool:
    text = text.strip()
    return text.isdigit() and text.isascii()


def compute_only(specs) -> list[str]:
    """The items of slow-rank specs (one text or several, items joined by
    ``;``) that slow a rank's compute alone (``:compute``): nothing where no
    reduction is charged, as in a user's traffic."""
    texts = [specs] if isinstance(specs, str) else list(specs or ())
    return [item.strip() for text in texts for item in text.split(";")
            if item.strip().endswith(":compute")]


def slows_compute(specs) -> bool:
    """Whether slow-rank specs (one text or several, items joined by ``;``)
    slow some rank's compute (an item that is not ``:network``): a cost only
    where the run charges reductions (gamma or delta above 0, a collective
    that reduces)."""
    texts = [specs] if isinstance(specs, str) else list(specs or ())
    return any(not item.strip().endswith(":network")
               for text in texts for item in text.split(";") if item.strip())
