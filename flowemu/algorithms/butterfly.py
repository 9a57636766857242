"""``butterfly``: Kolmakov and Zhang's generalized allreduce for any number
of ranks ("A Generalization of the Allreduce Operation", §5–9).

The model (§5)
--------------
The vector is cut into ``P`` parts of ``u = n/P``. A *distributed vector at
placement k* holds, on rank ``j``, (a partial sum of) part ``(j − k) mod P``;
the communication operator ``t^(−s)`` (cyclic group ``T_P``, generator
``t = (0 1 … P−1)``) moves every element from rank ``j`` to rank
``(j − s) mod P`` and from placement ``k`` to ``k − s``, so one operator is one
step in which every rank sends one message. Vectors with equal placement
combine element-wise (eq. 9).

Reduction phase (§7, eqs. 17–24)
    ``N_0 = P`` vectors at placements ``0..P−1``; step ``i`` sends the
    ``⌊N_i/2⌋`` vectors at placements ``⌈N_i/2⌉..N_i−1`` by ``t^(−⌊N_i/2⌋)``
    and combines them with the kept ones (an odd ``N_i`` leaves placement 0,
    the paper's ``q*``, alone); ``N_(i+1) = ⌈N_i/2⌉``. After
    ``L = ⌈log2 P⌉`` steps placement 0 holds the full sum: rank ``j`` has
    part ``j`` (a reduce-scatter).
Distribution phase (§7)
    The reduction steps reversed, copying instead of combining (an
    allgather). ``r = 0`` is the bandwidth-optimal form: ``2L`` steps,
    eq. (25) ``2⌈log P⌉α + 2(P−1)uβ + (P−1)uγ``.
Fewer steps (§8, eq. 36)
    Option ``r`` removes the first ``r`` distribution steps: the reduction
    phase produces ``R = 2^r`` result vectors (placements ``0..R−1``), the
    reduction of placement ``o`` being the reduction of placement 0 shifted
    by ``o`` with the same operators (eqs. 26–31). The shifted reductions
    share every vector but their own ``q*``, so each step sends the union of
    their sent placements, ``⌈N_i/2⌉..N_i+R−2`` (``R − 1`` more parts than
    ``r = 0``, eq. 32), and combines each reduction's own ``q*`` separately
    from the shared vector of equal placement (eqs. 33–34: "q* and q′ cannot
    be combined even if they have the same placement"). The distribution
    then needs the last ``L − r`` reversed steps only, and skips the
    placements the reduction already produced. ``2L − r`` steps; with no
    wrap-around (``⌊N_i/2⌋ + R − 1 <= P`` at every step) the bytes sent are
    exactly eq. (36): ``(2(P−1) + (2^r − 1)(L − 1))·u``; otherwise fewer
    (placements modulo ``P`` coincide). The computation is counted exactly
    (eq. 36's γ term is the paper's worst case). For a ``P`` that is not a
    power of two the remaining ``L − r`` distribution steps would need only
    ``N_(L−r) = ⌈P/2^(L−r)⌉ <= 2^r`` results (fewer bytes); flowemu follows
    the paper's ``2^r``.
Latency-optimal (§9, eqs. 38–44)
    ``r = L``: every placement is a result (``R = P``), every step sends all
    ``P`` shared vectors (the whole vector) and the distribution is omitted:
    ``L`` steps, ``P·L·u`` bytes, eq. (44) (γ exact, at most eq. 44's
    worst case ``P(2L−2)u``).

Choosing ``r`` (``r=auto``): the cheapest form per size by the α-β-γ price
of the exact counts above, ``(2L − r)·α' + bytes·β + combined·γ'`` with
``α' = alpha + 2·(link_latency + hop_latency)`` (one switch between two
hosts), ``β = 1/bandwidth`` and ``γ' = gamma + 3·delta`` (fan-in 2). This is
the minimum that eq. (37) approximates analytically. ``flowemu.simulate``
chooses per size (``AlgorithmSpec.sized``); a plain ``build`` with
``r=auto`` chooses for ``at`` (default 256 MiB, the default network).

For a power-of-two ``P`` every vector of a step covers the same ranks, so the
shared vector and ``q*`` coincide (§7: the form is then recursive halving and
doubling on the cyclic group). For other ``P`` with ``r >= 1`` a rank keeps
two partial sums of one part (``q*`` and ``q′``) at once: their block-level
traffic uses two buffers per block (``Schedule.num_buffers = 2``; ``q*`` in
buffer 0, a distinct shared vector of the same placement in buffer 1), and
a step in which they part (``q*`` kept, ``q′`` combined) adds the received
part to buffer 0 and writes the sum into buffer 1.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ..core.errors import ConfigError
from ..core.network import Network
from ._blocks import COPY, REDUCE, check_ranks, equal_block_share, make_traffic
from .base import DEFAULT_AT, AlgorithmSpec, Param, Reduction, Schedule, Step, convert_size_or_auto
from .registry import register

__all__ = ["Form", "build", "cheapest_r", "choose_r", "form", "halvings", "price", "resolve_r", "schedule_of",
           "schedules_for_sizes"]

NAME = "butterfly"


def halvings(p: int) -> list[int]:
    """``[N_0, …, N_(L−1)]`` (eq. 18): ``N_0 = p``, ``N_(i+1) = ⌈N_i/2⌉``,
    while ``N_i >= 2``; ``L = ⌈log2 p⌉`` entries."""
    out, n = [], int(p)
    while n >= 2:
        out.append(n)
        n = (n + 1) // 2
    return out


@dataclass(frozen=True)
class _Phase:
    """One step: ranks send to ``(j + shift) mod P`` the parts at
    ``placements``; ``combined`` parts are combined per rank (fan-in 2)."""

    label: str
    shift: int
    placements: np.ndarray      # placement of every part sent (int64)
    reduce: bool
    combined: int


@dataclass(frozen=True)
class Form:
    """The steps of the butterfly with ``r`` removed distribution steps."""

    p: int
    r: int
    results: int               # R: result vectors of the reduction phase
    phases: tuple[_Phase, ...]
    #: the reduction keeps q* and q′ of one part on one rank at some step
    two_buffers: bool

    @property
    def parts_sent(self) -> int:
        """Parts of ``u`` each rank sends over the schedule."""
        return sum(len(ph.placements) for ph in self.phases)

    @property
    def parts_combined(self) -> int:
        return sum(ph.combined for ph in self.phases)


def _window(p: int, starts: int, lo: int, hi: int) -> np.ndarray:
    """Placements ``o + k`` (mod p) for ``o`` in ``0..starts−1`` and ``k`` in
    ``lo..hi−1``: the union of the shifted reductions' placements."""
    if hi <= lo:
        return np.zeros(0, np.int64)
    mask = np.zeros(p, bool)
    span = hi - lo + starts - 1
    mask[(lo + np.arange(min(span, p))) % p] = True
    return np.flatnonzero(mask)


@lru_cache(maxsize=64)
def form(p: int, r: int) -> Form:
    """The reduction and distribution steps for ``p`` ranks and ``r`` removed
    distribution steps (``0 <= r <= L``; ``r = L`` is the latency-optimal
    form of §9)."""
    ns = halvings(p)
    L = len(ns)
    if not 0 <= r <= L:
        raise ValueError(f"r={r} outside 0..{L} for p={p}")
    results = p if r == L else 1 << r
    # offset sets (ranks j + d whose contributions a vector on rank j holds)
    # of the shared vectors (q′) and of a reduction's own q* (§7 eq. 17)
    shared = np.zeros(p, bool)
    shared[0] = True
    own = shared.copy()
    two_buffers = False
    phases = []
    for i, n in enumerate(ns):
        half, keep = n // 2, (n + 1) // 2
        same = bool(np.array_equal(own, shared))
        sent = _window(p, results, keep, n)
        regular_next = _window(p, results, 1, keep)   # shared vectors combined (l >= 1)
        specials = np.arange(min(results, p))         # each reduction's q* (l = 0)
        if n % 2 == 0:
            if same:
                combined = len(np.union1d(regular_next, specials))
            else:
                combined = len(regular_next) + len(specials)
            own = own | np.roll(shared, half)
        else:
            combined = len(regular_next)
        # q* and a shared vector of one placement on one rank, both kept
        regular_now = _window(p, results, 1, n)
        if not same and results > 1 and len(np.intersect1d(regular_now, specials)):
            two_buffers = True
        shared = shared | np.roll(shared, half)
        sent.flags.writeable = False      # forms are cached and shared
        phases.append(_Phase(f"rs{i}", -half, sent, True, combined))
    dist = []
    for i in range(L - r):
        n = ns[i]
        half, keep = n // 2, (n + 1) // 2
        sources = np.arange(max(keep, results), n, dtype=np.int64) - half
        sources.flags.writeable = False
        dist.append(_Phase(f"ag{i}", half, sources, False, 0))
    return Form(p, r, results, tuple(phases) + tuple(reversed(dist)), two_buffers)


def price(f: Form, size: float, alpha: float, beta: float, gamma: float) -> float:
    """α-β-γ time of a form for ``size`` bytes (the module docstring)."""
    u = size / f.p
    return len(f.phases) * alpha + f.parts_sent * u * beta + f.parts_combined * u * gamma


def _network_terms(network) -> tuple[float, float, float]:
    alpha = network.alpha + 2 * (network.link_latency + network.hop_latency)
    return alpha, 1.0 / network.bandwidth, network.gamma + 3 * network.delta


def choose_r(p: int, size: float, network) -> int:
    """The ``r`` of the cheapest form for ``size`` bytes (ties: fewer bytes)."""
    return cheapest_r(int(p), size, *_network_terms(network))


def cheapest_r(p: int, size: float, a: float, b: float, g: float) -> int:
    forms = [form(p, r) for r in range(len(halvings(p)) + 1)]
    return min(forms, key=lambda f: (price(f, size, a, b, g), f.parts_sent)).r


def _convert_r(raw):
    if isinstance(raw, (bool, np.bool_)):
        raise TypeError(raw)
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text in ("auto", "bandwidth", "latency"):
            return text
        raw = int(text)
    if not isinstance(raw, (int, np.integer)) or raw < 0:
        raise ValueError(raw)
    return int(raw)


def resolve_r(p: int, value, size: float, network) -> int:
    L = len(halvings(p))
    if value == "bandwidth":
        return 0
    if value == "latency":
        return L
    if value == "auto":
        return choose_r(p, size, network)
    if value > L:
        raise ConfigError(f"algorithm {NAME}: option r={value} is not allowed for p={p}; "
                          f"allowed: 0..{L} (⌈log2 p⌉), bandwidth, latency or auto")
    return value


def schedule_of(f: Form, blocks: bool = False) -> Schedule:
    """The bulk-synchronous schedule of a form; ``blocks`` attaches the parts
    each flow carries (block ``b`` = part ``b``)."""
    p, L = f.p, len(halvings(f.p))
    buffered = _buffer_entries(p, f.r) if blocks and f.two_buffers else None
    ranks = np.arange(p, dtype=np.int64)
    steps = []
    for i, ph in enumerate(f.phases):
        dst = (ranks + ph.shift) % p
        share = np.full(p, len(ph.placements) / p)
        if buffered is not None and ph.reduce:
            rows = buffered[i]        # (placement sent, src buffer, dst buffer, base buffer)
            blocks2d = (ranks[:, None] - rows[None, :, 0]) % p
            traffic = make_traffic(ranks, dst, share, None, blocks2d, REDUCE)
            traffic = replace(traffic, block_buffers=np.tile(rows[:, 1:], (p, 1)))
        else:
            blocks2d = (ranks[:, None] - ph.placements[None, :]) % p if blocks else None
            traffic = make_traffic(ranks, dst, share, None, blocks2d,
                                   REDUCE if ph.reduce else COPY)
        if ph.reduce:
            red = Reduction(ranks, np.full(p, ph.combined / p), np.full(p, 2, np.int32))
        else:
            red = Reduction.none()
        steps.append(Step(traffic, red, ph.label))
    variant = ("bandwidth" if f.r == 0 else "latency" if f.r == L else f"r={f.r}")
    return Schedule(NAME, variant, p, tuple(steps), p if blocks else None,
                    equal_block_share(p) if blocks else None,
                    {"p_eff": p, "r": f.r, "results": f.results, "log_steps": L,
                     "parts_sent": f.parts_sent, "parts_combined": f.parts_combined},
                    num_buffers=2 if buffered is not None else 1)


def _buffer_entries(p: int, r: int) -> list[np.ndarray]:
    """Block entries of the reduction steps of a two-buffer form: per step an
    int64[E, 4] of rows ``(placement sent, sender's buffer, receiver's
    buffer, base buffer)``, the same on every rank (cyclic symmetry).

    Replays the shifted reductions (§8, eqs. 26–34) with each vector as
    ``(placement, contributors)`` — contributors a bit set of rank offsets,
    equal vectors being one shared vector (eq. 32). On a rank, ``q*`` of
    reduction ``o`` lives in buffer 0 of placement ``o``; any other vector
    in buffer 0 of its placement, or in buffer 1 when a distinct ``q*``
    holds buffer 0. The block-level verifier then proves the result."""
    ns = halvings(p)
    results = p if r == len(ns) else 1 << r
    full = (1 << p) - 1

    def moved(bits: int, s: int) -> int:      # contributors seen from the rank s below
        return ((bits << s) | (bits >> (p - s))) & full

    def buffer(vec, qstar) -> int:
        x = vec[0]
        return 1 if x < results and vec != qstar[x] else 0

    vecs = [[((o + k) % p, 1) for k in range(p)] for o in range(results)]
    out = []
    for n in ns:
        half, keep = n // 2, (n + 1) // 2
        before = [v[0] for v in vecs]
        rows, targets = set(), set()
        for o in range(results):
            v, new = vecs[o], list(vecs[o][:keep])
            for k in range(keep, n):
                sent, old = v[k], v[k - half]
                new[k - half] = (old[0], old[1] | moved(sent[1], half))
                rows.add((sent, old, new[k - half]))
                targets.add(new[k - half])
            vecs[o] = new
        after = [v[0] for v in vecs]
        for vec in {w for v in vecs for w in v} - targets:   # kept as they were
            if buffer(vec, before) != buffer(vec, after):
                raise AssertionError(f"butterfly p={p} r={r}: a kept vector changes buffer")
        table = sorted({(sent[0], buffer(sent, before), buffer(made, after), buffer(old, before))
                        for sent, old, made in rows})
        out.append(np.array(table, dtype=np.int64).reshape(-1, 4))
    return out


def build(p: int, topology=None, blocks: bool = False, **options) -> Schedule:
    """Kolmakov's generalized butterfly allreduce on ``p`` ranks.

    Parameters
    ----------
    p : int
        Ranks (any ``p >= 2``).
    topology : Topology or None
        Unused: the pattern is on rank ids (cyclic group ``T_P``).
    blocks : bool
        Attach block content (``p`` blocks, block ``b`` = part ``b``; two
        buffers per block for the two-buffer forms, module docstring) for
        the verifier.
    r : "auto", "bandwidth", "latency" or int
        Distribution steps removed (§8): ``0``/``bandwidth`` eq. (25),
        ``1..L−1`` eq. (36), ``L``/``latency`` eq. (44); ``auto`` picks the
        cheapest for ``at`` on the default network.
    at : "auto" or a size
        Size ``r=auto`` chooses for here (``auto``: 256 MiB).

    Returns
    -------
    Schedule
        Steps ``rs0..rs{L−1}`` (REDUCE) then ``ag{L−r−1}..ag0`` (COPY).
    """
    opts = SPEC.parse_options(options)
    p = check_ranks(NAME, p)
    at = DEFAULT_AT if opts["at"] == "auto" else opts["at"]
    r = resolve_r(p, opts["r"], float(at), Network())
    return schedule_of(form(p, r), blocks)


def schedules_for_sizes(p, topology, network, sizes, options, blocks=False):
    """``[(schedule, size indices)]``: with ``r=auto`` the cheapest form for
    every size (one schedule per distinct ``r``), else the one form."""
    opts = SPEC.parse_options(options)
    p = check_ranks(NAME, p)
    sizes = np.asarray(sizes, dtype=np.float64)
    if opts["r"] != "auto":
        r = resolve_r(p, opts["r"], 0.0, network)
        return [(schedule_of(form(p, r), blocks), np.arange(len(sizes)))]
    if opts["at"] != "auto":
        r = choose_r(p, float(opts["at"]), network)
        return [(schedule_of(form(p, r), blocks), np.arange(len(sizes)))]
    groups: dict[int, list[int]] = {}
    for i, size in enumerate(sizes):
        groups.setdefault(choose_r(p, float(size), network), []).append(i)
    return [(schedule_of(form(p, r), blocks), np.asarray(idx)) for r, idx in groups.items()]


SPEC = register(AlgorithmSpec(
    NAME, build,
    (Param("r", str, "auto", None,
           "distribution steps removed (Kolmakov §8): 0 or bandwidth (eq. 25, 2⌈log2 p⌉ "
           "steps), 1..⌈log2 p⌉−1 (eq. 36), ⌈log2 p⌉ or latency (eq. 44, ⌈log2 p⌉ steps), "
           "auto: the cheapest per size", convert=_convert_r),
     Param("at", str, "auto", None, "auto (choose r per size) or the one size r=auto "
           "chooses for, e.g. 1MiB (ignored with a fixed r)", convert=convert_size_or_auto)),
    "Kolmakov's generalized butterfly for any p (cyclic group): reduce-scatter by "
    "halving the vectors, allgather reversed; r trades distribution steps for bytes "
    "(eqs. 25, 36, 44); r=auto picks the cheapest per size",
    sized=schedules_for_sizes,
))
