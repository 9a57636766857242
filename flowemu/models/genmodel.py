"""GenModel: the analytic allreduce cost model of Xiong et al., "Revisiting
the Time Cost Model of AllReduce" (§3), as a backend beside the
flow-level engine.

GenModel (§3.3, eq. 11) prices one allreduce plan as

    T = A·α + B·β + C·γ + D·δ + max(w − w_t, 0)·B·ε

with ``A`` rounds, ``B`` data received over the network, ``C`` data reduced,
``D`` memory reads and writes of the reductions (a fan-in-``f`` reduction of
``x`` bytes reads ``f·x`` and writes ``x``, §3.1 eq. 3–5) and ``w`` the fan-in
of a many-to-one step (§3.2 eq. 7–10). The functions below are the closed
forms of its Table 2 (one switch, N servers, every server holding S).

Units
-----
The paper counts floats (S floats, β seconds per float); flowemu counts
bytes. Every formula is linear in S, so with S in **bytes** the coefficients
are per byte: β = 1/bandwidth (s/B), γ (s per byte reduced), δ (s per byte
read or written), ε (s/B per unit of fan-in above ``w_t``). ``w`` is the
paper's fan-in, the number of servers in the many-to-one group (N for
Co-located PS, f_i for step i of HCPS). The flow engine counts the flows
into a receiver instead (N − 1 for Co-located PS, 2 for a ring run both
ways), so with incast on the two part by one in the excess.

Degenerate cases
----------------
N = 1 is no communication: every function returns 0 (the printed CPS and
Reduce-Broadcast rows would charge 2α for it).

The analytic backend
--------------------
``flowemu.simulate(..., model="genmodel")`` (``flowemu run --model genmodel``,
sweep field ``model``) prices a configuration with a *predictor* registered
for its algorithm (:func:`register_predictor`) instead of a schedule and a
max-min solve. Table 2's rows are registered for ``ring``, ``recdoub``,
``cps``, ``hcps`` and ``reduce-broadcast``; they need a single switch (a
tree with one switch level: ``tree:24``, ``tree:SS24``) and read its terms
with :func:`single_switch_terms`. ``hcps:factors=auto`` is priced for the
factors the schedule picks (:func:`flowemu.algorithms.ps.resolve_factors`).
Where the flow engine on the same switch differs from a row, it is by the
conventions above (fan-in counted in flows, RHD for N no power of two, the
printed HCPS terms) and the broadcast of Reduce-Broadcast, whose row charges
the incast of the reduce a second time (tests/models/test_model_backend.py checks
each relation exactly).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..algorithms import butterfly
from ..algorithms.base import parse_algorithm_spec
from ..algorithms.gentree.planner import make_plan, switches_bottom_up, tree_view
from ..algorithms.ps import parse_factors as ps_factors
from ..algorithms.ps import resolve_factors
from ..core import checks
from ..core.errors import ConfigError, show
from ..core.network import Network
from ..topology.tree import Tree

__all__ = ["KNOWN_ALGORITHMS", "MODELS", "Prediction", "SwitchTerms", "check_model",
           "check_priceable", "chi", "cps", "hcps", "incast_factor", "parse_factors",
           "plan_row", "predict", "prediction", "predictor_names", "reduce_broadcast",
           "register_predictor", "rhd", "ring", "single_switch_terms", "steps"]

#: algorithm names :func:`predict` knows (as the algorithm registry spells them)
KNOWN_ALGORITHMS = ("cps", "hcps", "recdoub", "reduce-broadcast", "ring")


# --------------------------------------------------------------------------- checks

def _count(name: str, value, lo: int = 1) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or int(value) < lo:
        raise ConfigError(f"{name}: {show(value)} is not allowed; expected an integer >= {lo}")
    return int(value)


def _rate(name: str, value, allow_inf: bool = False) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{name}: {show(value)} is not allowed; expected a number >= 0")
    v = float(value)
    if math.isnan(v) or v < 0 or (math.isinf(v) and not allow_inf):
        raise ConfigError(f"{name}: {show(value)} is not allowed; expected a "
                          + ("number >= 0 or inf" if allow_inf else "finite number >= 0"))
    return v


def _size(S) -> np.ndarray:
    try:
        s = np.asarray(S, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"S: {show(S)} is not allowed; expected bytes (a number or "
                          "an array of numbers >= 0)") from None
    if s.ndim > 1 or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ConfigError(f"S: {show(S)} is not allowed; expected bytes (a number or "
                          "a 1-D array of finite numbers >= 0)")
    return s


def _out(value: np.ndarray):
    return float(value) if np.ndim(value) == 0 else value


def _terms(N, S, alpha, beta, gamma, delta, epsilon=0.0, w_t=math.inf):
    return (_count("N", N), _size(S), _rate("alpha", alpha), _rate("beta", beta),
            _rate("gamma", gamma), _rate("delta", delta), _rate("epsilon", epsilon),
            _rate("w_t", w_t, allow_inf=True))


# --------------------------------------------------------------------------- Table 2

def chi(x: int) -> int:
    """χ(x) of Tables 1–2: 0 when ``x`` is a power of two, else 1."""
    x = _count("x", x)
    return 0 if x & (x - 1) == 0 else 1


def incast_factor(w: float, w_t: float, epsilon: float) -> float:
    """max(w − w_t, 0)·ε (eq. 7/10): the extra seconds per byte a receiver of
    a ``w``-server many-to-one step pays; 0 when ``w_t`` is inf or ε is 0."""
    excess = w - w_t
    return excess * epsilon if excess > 0 and epsilon > 0 else 0.0


def reduce_broadcast(N, S, alpha, beta, gamma, delta, epsilon=0.0, w_t=math.inf):
    """Reduce-Broadcast (Table 2 row 1): one root receives the N − 1 other
    vectors, reduces the N vectors at once and sends the result back.

    2α + 2(N−1)Sβ + (N−1)Sγ + (N+1)Sδ + 2(N−1)S·max(N − w_t, 0)ε.

    ``S`` in bytes (float or 1-D array); ``beta``, ``gamma``, ``delta`` and
    ``epsilon`` in seconds per byte, ``alpha`` in seconds, ``w_t`` a flow
    count (inf: no incast). Returns seconds (float, or an array like ``S``).
    """
    N, S, a, b, g, d, e, wt = _terms(N, S, alpha, beta, gamma, delta, epsilon, w_t)
    if N == 1:
        return _out(0.0 * S)
    k = N - 1
    return _out(2 * a + 2 * k * S * b + k * S * g + (N + 1) * S * d
                + 2 * k * S * incast_factor(N, wt, e))


def ring(N, S, alpha, beta, gamma, delta, epsilon=0.0, w_t=math.inf):
    """Ring Allreduce (Table 2 row 2, §2.1): 2(N−1) steps, each moving one
    S/N block to the next server; N − 1 of them add it (fan-in 2).

    2(N−1)α + 2(N−1)S/N·β + (N−1)S/N·γ + 3(N−1)S/N·δ.

    The paper charges Ring no incast (each server receives one flow; its
    fan-in 2 lies below every measured w_t, §3.3.1 "Ring Allreduce generates
    no competing flows"): ``epsilon`` and ``w_t`` are accepted for a uniform
    signature and do not enter. Arguments as for :func:`reduce_broadcast`.
    """
    N, S, a, b, g, d, _, _ = _terms(N, S, alpha, beta, gamma, delta, epsilon, w_t)
    frac = (N - 1) / N
    return _out(2 * (N - 1) * a + 2 * frac * S * b + frac * S * g + 3 * frac * S * d)


def rhd(N, S, alpha, beta, gamma, delta, epsilon=0.0, w_t=math.inf):
    """Recursive Halving and Doubling (Table 2 row 3, §2.1), as printed:

    2⌈log₂N⌉α + 2(N−1)S/N·β + (N−1)S/N·γ + 3(N−1)S/N·δ
    + χ(N)(2Sβ + Sγ + 3Sδ).

    For N not a power of two the paper adds two steps (the extra ranks fold
    their whole vector into a partner, which reduces it, and get the result
    back) and keeps N in the halving/doubling terms. The plan itself runs
    halving/doubling on p' = 2^⌊log₂N⌋ ranks, i.e. moves 2(p'−1)S/p' there,
    not 2(N−1)S/N: this row is the paper's accounting, exact for powers of
    two and within S/p' − S/N per term otherwise. No incast term (pairwise
    exchanges, as for :func:`ring`). Arguments as for :func:`reduce_broadcast`.
    """
    N, S, a, b, g, d, _, _ = _terms(N, S, alpha, beta, gamma, delta, epsilon, w_t)
    frac = (N - 1) / N
    steps = 2 * (N - 1).bit_length()          # 2⌈log₂N⌉ for N >= 1
    return _out(steps * a + 2 * frac * S * b + frac * S * g + 3 * frac * S * d
                + chi(N) * (2 * S * b + S * g + 3 * S * d))


def cps(N, S, alpha, beta, gamma, delta, epsilon=0.0, w_t=math.inf):
    """Co-located PS (Table 2 row 4, §2.1): every server is the PS of one
    S/N block; a ReduceScatter in which each server receives N − 1 blocks and
    reduces N at once, then an AllGather.

    2α + 2(N−1)S/N·β + (N−1)S/N·γ + (N+1)S/N·δ
    + 2(N−1)S/N·max(N − w_t, 0)ε.

    Arguments as for :func:`reduce_broadcast`.
    """
    N, S, a, b, g, d, e, wt = _terms(N, S, alpha, beta, gamma, delta, epsilon, w_t)
    if N == 1:
        return _out(0.0 * S)
    frac = (N - 1) / N
    return _out(2 * a + 2 * frac * S * b + frac * S * g + (N + 1) / N * S * d
                + 2 * frac * S * incast_factor(N, wt, e))


def hcps(factors, S, alpha, beta, gamma, delta, epsilon=0.0, w_t=math.inf):
    """Hierarchical Co-located PS (Table 2 row 5, §3.3, Fig. 5) with fan-ins
    ``factors`` = (f_0, …, f_{m−1}), N = ∏ f_i servers.

    Step i (i = 0 … m−1) is a Co-located PS ReduceScatter inside groups of
    f_i servers orthogonal to the earlier groups, on the S/P_{i−1} bytes each
    server still holds (P_i = f_0·…·f_i, P_{−1} = 1); the AllGather runs the
    steps in reverse. Step i: each server receives (f_i − 1)·S/P_i bytes,
    reduces f_i blocks of S/P_i (γ: (f_i − 1)S/P_i, δ: (f_i + 1)S/P_i), and
    its receive (ReduceScatter and AllGather) has fan-in f_i. Summed:

    2mα + 2(N−1)S/N·β + (N−1)S/N·γ
    + (N + 1 + 2·Σ_{i=0}^{m−2} ∏_{j=i+1}^{m−1} f_j)·S/N·δ
    + Σ_{i=0}^{m−1} max(f_i − w_t, 0)·2(f_i − 1)·S/P_i·ε.

    Reading of the printed row. The δ term is printed with
    ``2·Σ_{i=1}^{m−1} ∏_{j=1}^{i} f_j``; it equals the plan's
    Σ (f_i + 1)S/P_i for m ≤ 2 (both give 2f_1, e.g. 6×4 of Fig. 5) but for
    m ≥ 3 only with the factors listed in reverse, so the plan's suffix
    products are used (they also make the paper's remark hold: larger
    earlier fan-ins, less memory access). The ε term is printed as
    ``Σ_{i=0}^{m−1} max(0, f_i − w_t)·(f_{i−1} − 1)·∏_{j=i}^{m−1} f_j/N``,
    which names an f_{−1} at i = 0 and, for m = 1, does not give the
    Co-located PS row it must reduce to. Eq. 7 (excess fan-in × the data B
    received at that fan-in) with step i's own fan-in f_i and received
    2(f_i − 1)S/P_i gives the form above: the index i − 1 in the printed row
    is read as i (∏_{j=i+1}^{m−1} f_j/N = 1/P_i) and the factor 2 of the
    ReduceScatter + AllGather restored, so that m = 1 is exactly the
    Co-located PS row, as the paper says ("stacking each step's incast
    overhead"; zero when every f_i <= w_t).

    ``factors``: a sequence of integers >= 1 (or a text ``"6x4"``); a factor
    of 1 (groups of one server) adds no step, as in the schedule, and with N =
    1 the cost is 0; other arguments as for :func:`reduce_broadcast`.
    """
    f = parse_factors(factors)
    N = math.prod(f)
    _, S, a, b, g, d, e, wt = _terms(N, S, alpha, beta, gamma, delta, epsilon, w_t)
    if N == 1:
        return _out(0.0 * S)
    m = len(f)
    frac = (N - 1) / N
    suffix = sum(math.prod(f[i + 1:]) for i in range(m - 1))
    inc, held = 0.0, 1
    for fi in f:   # m steps, m <= log2 N: a loop over factors, not over data
        held *= fi
        inc += incast_factor(fi, wt, e) * 2 * (fi - 1) / held
    return _out(2 * m * a + 2 * frac * S * b + frac * S * g
                + (N + 1 + 2 * suffix) / N * S * d + inc * S)


def parse_factors(factors) -> tuple[int, ...]:
    """HCPS fan-ins from ``"8x3"`` or a sequence of ints, each >= 1; the
    factors of 1 are left out (they add no step: ``"6x4x1"`` is ``(6, 4)``;
    ``"1"`` is ``()``, N = 1)."""
    raw = factors
    if isinstance(factors, str):
        parts = factors.strip().lower().split("x")
        try:
            factors = [int(p) for p in parts]
        except ValueError:
            raise ConfigError(f"factors: {show(raw)} is not allowed; expected fan-ins "
                              "joined by 'x', each an integer >= 1, e.g. '8x3'") from None
    try:
        out = tuple(factors)
    except TypeError:
        out = None
    if not out or any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer))
                      or v < 1 for v in out):
        raise ConfigError(f"factors: {show(raw)} is not allowed; expected fan-ins joined "
                          "by 'x', each an integer >= 1, e.g. '8x3' (a factor 1 adds no step)")
    return tuple(int(v) for v in out if v > 1)


# --------------------------------------------------------------------------- predict

def _parse_spec(algorithm_spec) -> tuple[str, dict]:

    if not isinstance(algorithm_spec, str):
        raise ConfigError(f"algorithm: {show(algorithm_spec)} is not allowed; expected "
                          "NAME[:key=val,...], e.g. 'hcps:factors=8x3'")
    return parse_algorithm_spec(algorithm_spec)


def _refuse_options(name: str, opts: dict, allowed: dict) -> None:
    """Options that leave the plan Table 2 prices are accepted; anything else
    would change the plan, so the analytic model has no row for it."""
    for key, value in opts.items():
        ok = allowed.get(key)
        if ok is None or value.strip().lower() not in ok:
            forms = [k + "=" + "|".join(v) for k, v in allowed.items() if ok is None or k == key]
            raise ConfigError(f"algorithm {name}: option {key}={value} has no GenModel "
                              f"form; allowed with model genmodel: "
                              f"{', '.join(forms) or '(no options)'}")


def predict(algorithm_spec: str, p: int, sizes, network, *, hops: int = 0) -> np.ndarray:
    """GenModel Table 2 time of an allreduce on one switch, for many sizes.

    Parameters
    ----------
    algorithm_spec : str
        ``ring`` (Ring Allreduce), ``recdoub`` (RHD; variant ``bandwidth``
        or ``auto``, which on one switch is the bandwidth variant's row),
        ``cps`` (Co-located PS), ``hcps:factors=F0xF1x…`` (Hierarchical
        Co-located PS, ∏ F_i = p; ``factors=auto`` is refused: the model
        prices a given factorisation) or ``reduce-broadcast``.
    p : int
        Number of ranks N (>= 1).
    sizes : str, int, list, numpy array or pandas Series
        As for :func:`flowemu.simulate`; the result follows the sorted
        distinct sizes (the rows ``simulate`` returns).
    network : flowemu.core.network.Network
        β = 1/bandwidth, α = ``alpha`` (+ ``hops``·(link + hop latency)),
        γ = ``gamma``, δ = ``delta``, ε = ``incast_slope`` and
        w_t = ``incast_threshold`` when incast is on (both set), else none.
    hops : int
        Links a message crosses, if the step latency α should include the
        network's per-hop latency (2 on one switch); 0 (default) uses α only,
        as Table 2 does.

    Returns
    -------
    numpy.ndarray
        float64[k] seconds, one per size.

    Raises
    ------
    ConfigError
        An unknown algorithm (the known ones are named), an option the model
        has no row for, factors whose product is not ``p``, a bad ``p`` or
        sizes.
    """

    row = plan_row(algorithm_spec, p)
    if not isinstance(network, Network):
        raise ConfigError(f"network: {show(network)} is not allowed; expected a "
                          "flowemu.core.network.Network")
    hops = _count("hops", hops, lo=0)
    S = checks.sizes(sizes)
    alpha = network.alpha + hops * network.per_hop_latency()
    eps, wt = ((network.incast_slope, network.incast_threshold) if network.incast_on
               else (0.0, math.inf))
    return np.asarray(row(S, alpha=alpha, beta=1.0 / network.bandwidth, gamma=network.gamma,
                          delta=network.delta, epsilon=eps, w_t=wt), dtype=np.float64)


def steps(algorithm_spec: str, p: int) -> int:
    """Rounds A of the Table 2 row :func:`predict` uses (its α count), e.g.
    2(p − 1) for ``ring``, 2m for ``hcps`` with m factors."""
    return round(plan_row(algorithm_spec, p)(0.0, alpha=1.0, beta=0.0, gamma=0.0, delta=0.0))


def plan_row(algorithm_spec: str, p: int):
    """The Table 2 row of an algorithm spec on ``p`` ranks, as a function
    ``row(S, alpha, beta, gamma, delta, epsilon=0, w_t=inf)``; refuses (with
    a ConfigError naming what is accepted) what Table 2 has no row for."""
    name, opts = _parse_spec(algorithm_spec)
    N = _count("p", p)
    if name == "ring":
        _refuse_options(name, opts, {"ports": ("1", "2", "max")})
        return partial(ring, N)
    if name == "recdoub":
        _refuse_options(name, opts, {"variant": ("bandwidth", "auto"),
                                     "layout": ("auto", "linear"),
                                     "mirrored": ("false", "no", "0")})
        return partial(rhd, N)
    if name == "cps":
        _refuse_options(name, opts, {})
        return partial(cps, N)
    if name == "reduce-broadcast":
        _refuse_options(name, opts, {})
        return partial(reduce_broadcast, N)
    if name == "hcps":
        unknown = sorted(set(opts) - {"factors"})
        if unknown:
            raise ConfigError(f"algorithm hcps: option {unknown[0]} has no GenModel form; "
                              "allowed with model genmodel: factors=F0xF1x...")
        if N < 2:
            raise ConfigError(f"p: {N} is not allowed for hcps; expected >= 2 ranks")
        if "factors" not in opts or opts["factors"].strip().lower() == "auto":
            raise ConfigError("algorithm hcps: model genmodel needs factors=F0xF1x... "
                              f"(fan-ins whose product is the {N} ranks), e.g. hcps:factors="
                              + ("x".join(map(str, _example_factors(N)))))
        f = parse_factors(opts["factors"])
        if math.prod(f) != N:
            raise ConfigError(f"algorithm hcps: factors={opts['factors']} multiply to "
                              f"{math.prod(f)}, not the {N} ranks; expected fan-ins whose "
                              f"product is {N}")
        return partial(hcps, f)
    raise ConfigError(f"algorithm: {name!r} has no GenModel form; known with model "
                      f"genmodel: {', '.join(KNOWN_ALGORITHMS)}")


def _example_factors(N: int) -> tuple[int, ...]:
    """Two factors of N as close as possible (N itself when prime)."""
    best = 1
    for d in range(2, math.isqrt(N) + 1):
        if N % d == 0:
            best = d
    return (N // best, best) if best > 1 else (N,)


# --------------------------------------------------------------------------- the backend
#
# ``model="genmodel"`` of simulate/run/sweeps: a predictor per algorithm name
# prices a configuration from the topology's terms, without a schedule or a
# solve. Table 2's rows are registered below; GenTree registers its own.

@dataclass(frozen=True)
class SwitchTerms:
    """GenModel's terms of one switch, in flowemu's units (:func:`single_switch_terms`)."""

    alpha: float        # s per step: per-message overhead + one host-to-host path
    beta: float         # s per byte received by a host
    gamma: float        # s per byte reduced
    delta: float        # s per byte read or written
    epsilon: float      # s per byte per unit of fan-in above w_t (0: no incast)
    w_t: float          # fan-in threshold (inf: no incast)


def _single_switch(topology):
    """The topology as a one-switch tree, or a ConfigError saying what
    genmodel prices."""
    if not (isinstance(topology, Tree) and len(topology.sites) == 1
            and topology.num_levels == 1):
        spec = getattr(topology, "spec", show(topology))
        raise ConfigError(f"model genmodel: topology {spec} is not a single switch; Table 2 "
                          "prices a tree with one switch (e.g. tree:24, tree:SS24); use model "
                          "flow for it")
    return topology


def single_switch_terms(topology, network) -> SwitchTerms:
    """GenModel's α, β, γ, δ, ε and w_t (Table 2, eq. 11) of a single-switch
    tree (``tree:N``, ``tree:SS24``, ...) under ``network``.

    What is read, exactly:

    * β = 1 / the bandwidth into host 0: the sum of the capacities of the
      links entering it (:meth:`Topology.ingress_capacity`), i.e. the level's
      absolute bandwidth (``bw=``, Table 5 for the presets: tree:SS24 gives
      5 Gb/s) or its scale × ``network.bandwidth``, times its ``uplinks``;
      every host of one switch has the same links.
    * α = ``network.alpha`` + the latency of one host-to-host path, as the
      flow engine charges it (:func:`flowemu.engine.steps.flow_latency`): hops
      (2) × ``network.hop_latency`` + the two links' latencies (the level's
      ``lat=``/``lat_scale=`` or ``network.link_latency``).
    * γ, δ: ``network.gamma``, ``network.delta``.
    * ε, w_t: the level's ``eps=``/``wt=`` where the tree gives them, else
      ``network.incast_slope`` / ``network.incast_threshold``; incast is off
      (ε = 0, w_t = inf) unless ε > 0 and w_t is finite.

    Raises
    ------
    ConfigError
        The topology is not a tree with one switch level and one site.
    """
    tree = _single_switch(topology)
    if not isinstance(network, Network):
        raise ConfigError(f"network: {show(network)} is not allowed; expected a "
                          "flowemu.core.network.Network")
    beta = 1.0 / float(tree.ingress_capacity(network)[0])
    alpha = float(network.alpha)
    if tree.num_endpoints > 1:
        routes = tree.route(np.array([0], dtype=np.int32), np.array([1], dtype=np.int32))
        alpha += float(routes.hops[0]) * network.hop_latency \
            + float(tree.path_latency(routes, tree.link_latency(network))[0])
    eps = tree.incast_slope[0] if tree.incast_slope[0] is not None else network.incast_slope
    wt = (tree.incast_threshold[0] if tree.incast_threshold[0] is not None
          else network.incast_threshold)
    eps, wt = (float(eps), float(wt)) if eps > 0 and math.isfinite(wt) else (0.0, math.inf)
    return SwitchTerms(alpha, beta, float(network.gamma), float(network.delta), eps, wt)


@dataclass(frozen=True)
class Prediction:
    """What a predictor returns: seconds per size, and what the result row
    says of the plan priced (``variant``, ``steps``, ``note``)."""

    seconds: np.ndarray
    #: one text for every size, or one per size
    variant: str | list = ""
    #: one count for every size, or one per size
    steps: int | list = 0
    note: str = ""


#: algorithm name -> predictor ``fn(topology, p, sizes_bytes, network, options)``
_PREDICTORS: dict = {}

#: the model names of simulate/run/sweeps (flow: the flow-level engine)
MODELS = ("flow", "genmodel")


def register_predictor(name: str, fn) -> None:
    """Let ``model="genmodel"`` price algorithm ``name`` with ``fn``.

    ``fn(topology, p, sizes_bytes, network, options)`` gets the built
    Topology, the rank count, the sorted distinct sizes (float64[k] bytes),
    the :class:`~flowemu.core.network.Network` and the algorithm's parsed options
    (``AlgorithmSpec.parse_options``: every option, defaults filled, ``auto``
    not expanded). It returns the seconds (float64[k]) or a
    :class:`Prediction`, and raises ConfigError for what it cannot price.

    Raises
    ------
    ValueError
        ``name`` already has a predictor.
    TypeError
        ``name`` is not a non-empty string or ``fn`` is not callable.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"predictor name {name!r}: expected a non-empty string")
    if not callable(fn):
        raise TypeError(f"predictor for {name!r}: {fn!r} is not callable")
    if name in _PREDICTORS:
        raise ValueError(f"a GenModel predictor for {name!r} is already registered")
    _PREDICTORS[name] = fn


def predictor_names() -> tuple[str, ...]:
    """The algorithms ``model="genmodel"`` can price, sorted."""
    return tuple(sorted(_PREDICTORS))


def check_model(model) -> str:
    """``"flow"`` or ``"genmodel"``, else a ConfigError naming both."""
    if not isinstance(model, str) or model not in MODELS:
        raise ConfigError(f"model: {show(model)} is not allowed; expected one of "
                          f"{', '.join(MODELS)}")
    return model


def _option_spec(name: str, options: dict) -> str:
    """The spec text plan_row reads (options as the algorithm prints them)."""
    items = [f"{k}={str(v).lower() if isinstance(v, bool) else v}"
             for k, v in sorted(options.items())]
    return name + (":" + ",".join(items) if items else "")


def _table2(name: str):
    """The predictor of a Table 2 row: the single switch's terms into the row."""
    def predictor(topology, p, sizes, network, options):
        terms = single_switch_terms(topology, network)
        opts = dict(options)
        variant = ""
        if name == "hcps":
            _count("p", p)
            if p < 2:
                raise ConfigError(f"p: {p} is not allowed for hcps; expected >= 2 ranks")
            # price what the schedule runs: factors=auto resolved on this topology,
            # factors of 1 (no step) dropped
            factors = resolve_factors("hcps", p, ps_factors(opts["factors"]), topology)
            opts["factors"] = "x".join(map(str, factors))
            variant = f"factors={opts['factors']}"
        elif name == "recdoub":
            variant = "bandwidth"
        spec = _option_spec(name, opts)
        row = plan_row(spec, p)
        S = np.asarray(sizes, dtype=np.float64)
        seconds = np.asarray(row(S, alpha=terms.alpha, beta=terms.beta, gamma=terms.gamma,
                                 delta=terms.delta, epsilon=terms.epsilon, w_t=terms.w_t),
                             dtype=np.float64).reshape(S.shape)
        note = ("genmodel prices the bandwidth variant (Table 2 row 3)"
                if name == "recdoub" and options.get("variant") == "auto" else "")
        return Prediction(seconds, variant, steps(spec, p), note)
    predictor.__name__ = f"table2_{name.replace('-', '_')}"
    predictor.__doc__ = f"GenModel Table 2 row of {name} on a single switch."
    return predictor


def prediction(topology, p: int, algorithm: str, options: dict, sizes, network) -> Prediction:
    """Price ``algorithm`` (a registered name, ``options`` parsed) on ``p``
    ranks of ``topology`` for the sorted distinct ``sizes`` (bytes).

    Raises
    ------
    ConfigError
        No predictor for the algorithm (the ones known are named), or the
        predictor refuses the topology or options.
    """
    if getattr(topology, "incast_at", "receiver") != "receiver":
        raise ConfigError(f"model genmodel: {topology.spec}: GenModel charges incast at "
                          "receivers (its fan-in term); incast=switch is the flow engine's "
                          "(use model='flow', or the topology without incast=switch)")
    fn = _PREDICTORS.get(algorithm)
    if fn is None:
        raise ConfigError(f"model genmodel: algorithm {algorithm!r} has no GenModel "
                          f"predictor; genmodel prices {', '.join(predictor_names())} "
                          "(Table 2 rows on a single switch, e.g. tree:24, tree:SS24)")
    S = np.asarray(sizes, dtype=np.float64)
    out = fn(topology, p, S, network, dict(options))
    if not isinstance(out, Prediction):
        out = Prediction(np.asarray(out, dtype=np.float64))
    seconds = np.asarray(out.seconds, dtype=np.float64)
    if seconds.shape != S.shape:
        raise ConfigError(f"model genmodel: the predictor of {algorithm!r} returned "
                          f"{seconds.shape[0] if seconds.ndim else 1} times for {len(S)} sizes")
    variant = out.variant if isinstance(out.variant, str) else list(out.variant)
    steps = int(out.steps) if np.ndim(out.steps) == 0 else [int(x) for x in out.steps]
    for name, value in (("variant", variant), ("steps", steps)):
        if not np.isscalar(value) and len(value) != len(S):
            raise ConfigError(f"model genmodel: the predictor of {algorithm!r} returned "
                              f"{len(value)} {name} values for {len(S)} sizes")
    return Prediction(seconds, variant, steps, out.note)


def check_priceable(topology, p: int, algorithm: str, options: dict, network=None) -> None:
    """Whether ``model="genmodel"`` can price the configuration (a
    ConfigError saying why not): the predictor run on no sizes."""
    prediction(topology, p, algorithm, options, np.zeros(0), network or Network())


for _name in KNOWN_ALGORITHMS:
    register_predictor(_name, _table2(_name))
del _name


# ------------------------------------------------- predictors of size-dependent algorithms

def butterfly_prediction(topology, p, sizes, network, options):
    """``model="genmodel"`` for ``butterfly`` on one switch: Kolmakov's eqs.
    (25)/(36)/(44) with the exact part counts, GenModel's α and β of the switch
    (:func:`single_switch_terms`) and ``γ + 3δ`` per byte combined (fan-in 2);
    with ``r=auto`` the cheapest form per size under those terms."""
    terms = single_switch_terms(topology, network)
    a, b, g = terms.alpha, terms.beta, terms.gamma + 3 * terms.delta
    p = butterfly.check_ranks(butterfly.NAME, p)
    L = len(butterfly.halvings(p))
    value = options.get("r", "auto")
    if value == "auto" and options.get("at", "auto") != "auto":
        value = butterfly.cheapest_r(p, float(options["at"]), a, b, g)
    chosen = [butterfly.form(p, butterfly.cheapest_r(p, float(size), a, b, g) if value == "auto"
                             else butterfly.resolve_r(p, value, float(size), network))
              for size in np.asarray(sizes, np.float64)]
    names = ["bandwidth" if f.r == 0 else "latency" if f.r == L else f"r={f.r}" for f in chosen]
    return Prediction(np.array([butterfly.price(f, s, a, b, g)
                                for f, s in zip(chosen, sizes, strict=True)]),
                      names, [len(f.phases) for f in chosen])


def gentree_prediction(topology, p, sizes, network, options):
    """``model="genmodel"`` for ``gentree``: the GenModel time of GenTree's own
    plan per size (the root's finish time,
    :attr:`flowemu.algorithms.gentree.planner.Plan.time`)."""
    rearrange = options.get("rearrange", "auto") == "auto"
    flat = options.get("flat", "auto") == "auto"
    view = tree_view(topology, network, p)
    at = options.get("at", "auto")
    fixed = None if at == "auto" else make_plan(topology, network, float(at), p, rearrange,
                                                 view=view, flat=flat)
    # every size priced by its own plan, or by the plan chosen for ``at``
    plans = [make_plan(topology, network, float(S), p, rearrange, view=view, flat=flat,
                       follow=fixed) for S in np.asarray(sizes, np.float64)]
    return Prediction(np.array([pl.time for pl in plans], np.float64),
                      [pl.summary() for pl in plans], [2 * _plan_steps(pl) for pl in plans])


def _plan_steps(plan) -> int:
    """Steps of one half of a GenTree plan (sub-plans of sibling switches overlap)."""
    if plan.flat is not None:
        return sum(1 for st in plan.flat[2] if st.num_flows)
    view, end = plan.view, {}
    for v in switches_bottom_up(view):
        start = max([end[c] for c in view.children[v] if not view.is_host(c)] or [0])
        end[v] = start + sum(1 for st in plan.planner.plans[view.signature[v]].steps
                             if st.num_flows)
    return end[view.root]


register_predictor(butterfly.NAME, butterfly_prediction)
register_predictor("gentree", gentree_prediction)
