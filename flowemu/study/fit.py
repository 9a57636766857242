"""Fitting GenModel to measured allreduce times (Xiong et al., "Revisiting the
Time Cost Model of AllReduce", §3.4): ``flowemu fit`` and :func:`fit`.

Model
-----
Each measurement (algorithm, N ranks, S bytes, time) is priced by its Table 2
row (:func:`flowemu.models.genmodel.plan_row`, one switch)::

    T = A·α + B·β + C·γ + D·δ + E(w_t)·ε

with A rounds, B bytes received, C bytes reduced, D bytes of memory access
and E(w_t) = Σ over many-to-one steps of (bytes received) × max(fan-in −
w_t, 0). B = 2C in every row (§3.4), so only β + γ/2 can be told from the
data: it is fitted as ``beta_eff`` with coefficient B. The unknowns α,
beta_eff, δ, ε are non-negative; for every integer w_t a non-negative least
squares solve (exact, by enumerating the supports of at most four unknowns)
minimises the *relative* residuals (each row weighted by 1/time, so a 1 KiB
and a 1 GiB point count alike); the w_t of least residual wins. With the link
bandwidth known, β = 1/bandwidth and γ = 2·(beta_eff − β).

Fan-in convention
-----------------
``w_t`` here is flowemu's :attr:`~flowemu.core.network.Network.incast_threshold`:
the number of *flows into a receiver* above which incast sets in (Co-located
PS on N ranks: N − 1 flows), which is what the flow engine counts. The
paper's w counts the servers of the many-to-one group (N for Co-located PS,
f_i for HCPS step i), so the paper's w_t is this one plus one
(:data:`PAPER_WT_OFFSET`). A fitted preset therefore reproduces the
measurements when flowemu runs it, and the Table 2 rows get ``w_t + 1``.
Ring and RHD carry no incast term (Table 2); in flowemu's engine a ring
(run both ways) has 2 flows into each receiver and RHD 1, so a fitted
threshold below 2 would charge them there and not here.

What the data determine
-----------------------
A parameter is *determined* when its column is not a combination of the
others (ring alone: B and D are proportional, so δ is not; Co-located PS on
one N: the same). An undetermined parameter is left out of the fit, reported
as such with what absorbed it (e.g. ``beta_eff`` standing for ``beta_eff +
1.5·delta``) and never invented. Incast needs configurations above and at or
below the threshold and at least two distinct fan-ins above it, and it must
lower the residual by more than noise would (F statistic of its two extra
unknowns > :data:`F_MIN`); otherwise ε and w_t are reported as undetermined
(none seen: "no incast seen up to fan-in F", saved presets keep incast off).
Beside a determined w_t, the thresholds that fit as well within noise are
given (:attr:`FitResult.w_t_range`).

Input
-----
CSV files with columns ``algorithm, ranks, size, time`` (size in bytes or
with a unit such as ``1MiB``; time in seconds or with a unit such as
``1.5ms``; other columns ignored; ``#`` lines are comments) and the standard
output of nccl-tests ``all_reduce_perf`` (recognised by its ``size count type
redop ... time algbw busbw`` header; out-of-place time in µs, size in bytes;
ranks from the ``#  Rank N ...`` device lines or ``ranks``; ``cputime``
(``-C``) and a trailing timestamp column are read too; algorithm
``algorithm``, default ring, as NCCL usually runs). A file may hold several
nccl-tests runs one after the other.
"""

from __future__ import annotations

import math
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import ConfigError, checked_keywords
from ..core.network import Network
from ..core.presets import write_preset
from ..core.units import format_rate, format_time, user_rate
from ..models.genmodel import plan_row
from ..models.measurements import read_measurements
from .figures.fit import plot_fit

__all__ = ["PAPER_WT_OFFSET", "FitResult", "fit", "read_measurements"]

#: the paper's w_t = flowemu's incast_threshold (flows into a receiver) + this
PAPER_WT_OFFSET = 1

#: the fitted unknowns, in the order columns are kept when some are collinear
PARAMS = ("alpha", "beta_eff", "delta", "epsilon")


#: relative size under which a column counts as a combination of the others
_RANK_TOL = 1e-8

#: the most incast thresholds searched (fan-ins are flows into one receiver)
_MAX_FANIN = 1 << 16


# ============================================================== the model

def _coefficients(meas: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, int]:
    """Columns A, B (the beta_eff coefficient), D of every row; E per byte of
    every row at each threshold w = 0 … F (float64[rows, F+1], see
    :func:`_e_column`); F, the largest fan-in in flows seen."""
    S = meas["size"].to_numpy(dtype=np.float64)
    cols = np.zeros((len(meas), 3))
    per_config: dict = {}
    keys = list(zip(meas["algorithm"], meas["ranks"], strict=True))
    for key in dict.fromkeys(keys):
        row = plan_row(key[0], int(key[1]))
        zero = {"alpha": 0.0, "beta": 0.0, "gamma": 0.0, "delta": 0.0}
        unit = {name: row(1.0, **{**zero, name: 1.0}) for name in ("beta", "delta")}
        per_config[key] = (row(0.0, **{**zero, "alpha": 1.0}), unit["beta"], unit["delta"],
                           _incast_curve(row, int(key[1])))
    fanin = max(len(c[3]) for c in per_config.values()) - 1
    e_per_byte = np.zeros((len(keys), fanin + 1))
    for i, key in enumerate(keys):   # one row per measurement (not a hot path)
        a, b, d, curve = per_config[key]
        cols[i] = (a, b * S[i], d * S[i])
        e_per_byte[i, :len(curve)] = curve
    return cols, e_per_byte * S[:, None], fanin


def _incast_curve(row, p: int) -> np.ndarray:
    """E per byte of the row at flowemu thresholds w = 0, 1, ... up to the
    first w where it is 0 (that w is the row's largest fan-in in flows)."""
    zero = {"alpha": 0.0, "beta": 0.0, "gamma": 0.0, "delta": 0.0, "epsilon": 1.0}
    out = []
    for w in range(min(p, _MAX_FANIN) + 1):   # fan-ins are at most p − 1 flows
        e = float(row(1.0, **zero, w_t=w + PAPER_WT_OFFSET))
        out.append(e)
        if e == 0.0:
            break
    return np.asarray(out)


def _e_column(e_all: np.ndarray, w: int) -> np.ndarray:
    """E of every row at threshold ``w`` (0 from the largest fan-in on)."""
    return e_all[:, w] if w < e_all.shape[1] else np.zeros(e_all.shape[0])


def _nnls(M: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """min ‖Mx − y‖ over x >= 0 (Lawson and Hanson's active set method, for
    the handful of well-scaled columns here). Returns x and the residual sum
    of squares, computed from the residual (exact data give 0)."""
    n = M.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 1e-12 * max(float(np.abs(M).max(initial=0.0)), 1.0) * max(float(np.abs(y).sum()), 1.0)
    for _ in range(3 * n + 3):   # each pass adds one column; a step back removes some
        grad = M.T @ (y - M @ x)
        free = ~passive & (grad > tol)
        if not free.any():
            break
        passive[np.argmax(np.where(free, grad, -np.inf))] = True
        while True:
            z = np.zeros(n)
            z[passive], *_ = np.linalg.lstsq(M[:, passive], y, rcond=None)
            if np.all(z[passive] > 0):
                x = z
                break
            # step back toward x until a variable reaches 0; it leaves the passive set
            hit = passive & (z <= 0)
            step = np.min(x[hit] / (x[hit] - z[hit]))
            x = x + step * (z - x)
            passive &= x > 0
            x[~passive] = 0.0
            if not passive.any():
                break
    r = M @ x - y
    return x, float(r @ r)


def _independent(M: np.ndarray) -> list[int]:
    """Columns of M kept in order, skipping each that is a combination of
    the ones kept before it (scaled to unit norm, relative tolerance)."""
    norms = np.linalg.norm(M, axis=0)
    keep: list[int] = []
    for j in range(M.shape[1]):
        if norms[j] == 0:
            continue
        trial = keep + [j]
        sub = M[:, trial] / norms[trial]
        s = np.linalg.svd(sub, compute_uv=False)
        if s[-1] > _RANK_TOL * s[0]:
            keep = trial
    return keep


def _combination(M: np.ndarray, keep: list[int], j: int) -> dict[int, float]:
    """Column j as a combination of the kept columns (coefficients)."""
    c, *_ = np.linalg.lstsq(M[:, keep], M[:, j], rcond=None)
    norms = np.linalg.norm(M, axis=0)
    # a part below rounding of column j is no part of it
    return {k: float(v) for k, v in zip(keep, c, strict=True)
            if abs(v) * norms[k] > 1e-9 * norms[j]}


# ============================================================== the result

@dataclass
class FitResult:
    """What :func:`fit` found.

    Attributes
    ----------
    params : dict
        ``alpha`` (s), ``beta_eff`` (= β + γ/2, s/B), ``delta`` (s/B),
        ``epsilon`` (s/B per flow above the threshold), ``w_t`` (flows into a
        receiver, flowemu's ``incast_threshold``); with a bandwidth also
        ``beta`` and ``gamma``. None where the data do not determine it.
    determined : dict
        Each parameter the data do not determine -> the reason (a parameter
        left out is determined; ``result.determined.get(name, True)``).
    rows : pandas.DataFrame
        The measurements with ``fit`` (seconds) and ``residual`` (relative:
        fit/time − 1).
    rms : float
        Root mean square of the relative residuals.
    bandwidth : float or None
        Bytes/s, when given.
    max_fanin : int
        The largest fan-in (flows into a receiver) any measured
        configuration has; 0 when none has a many-to-one step.
    notes : list of str
        Warnings about the result (e.g. a negative γ).
    w_t_range : (int, int) or None
        The thresholds that fit the data as well as ``w_t`` within noise
        (their residual is within :data:`F_RANGE` noise variances of the
        best); None when w_t is undetermined.
    """

    params: dict
    determined: dict
    rows: pd.DataFrame
    rms: float
    bandwidth: float | None = None
    max_fanin: int = 0
    notes: list = field(default_factory=list)
    w_t_range: tuple | None = None

    @property
    def w_t_paper(self) -> int | None:
        """The threshold in the paper's convention (servers in the group)."""
        w = self.params.get("w_t")
        return None if w is None else w + PAPER_WT_OFFSET

    def network_values(self) -> dict:
        """Network fields (SI) that reproduce the fit when flowemu runs them:
        α in ``alpha`` with link and hop latency 0 (α is the whole per-step
        latency the measurements saw); β and γ from the bandwidth when given,
        else all of beta_eff as the bandwidth (γ 0); δ; incast only when
        determined. Undetermined terms are left out (their defaults)."""
        p = self.params
        out: dict = {"link_latency": 0.0, "hop_latency": 0.0}
        if p.get("alpha") is not None:
            out["alpha"] = p["alpha"]
        if p.get("beta_eff") is not None:
            if self.bandwidth is not None and p.get("gamma") is not None and p["gamma"] >= 0:
                out["bandwidth"], out["gamma"] = self.bandwidth, p["gamma"]
            elif p["beta_eff"] > 0:
                out["bandwidth"] = 1.0 / p["beta_eff"]
        if p.get("delta") is not None:
            out["delta"] = p["delta"]
        if p.get("epsilon") is not None and p.get("w_t") is not None and p["epsilon"] > 0:
            out["incast_threshold"], out["incast_slope"] = p["w_t"], p["epsilon"]
        return out

    def network(self):
        return Network.from_si(**self.network_values())

    def text(self) -> str:
        """The report ``flowemu fit`` prints."""
        unit = {"alpha": "s", "beta_eff": "s/B", "beta": "s/B", "gamma": "s/B",
                "delta": "s/B", "epsilon": "s/B per flow", "w_t": "flows"}
        configs = self.rows.groupby(["algorithm", "ranks"]).ngroups
        plural = "s" if configs != 1 else ""
        lines = [f"fit of {len(self.rows)} measurements ({configs} configuration{plural}): "
                 + f"rms relative residual {self.rms:.3%}"]
        for name in ("alpha", "beta_eff", "beta", "gamma", "delta", "epsilon", "w_t"):
            if name not in self.params:
                continue
            v, ok = self.params[name], self.determined.get(name, True)
            if v is None:
                lines.append(f"  {name:9s} undetermined: {ok}")
                continue
            shown = str(v) if name == "w_t" else f"{v:.4g} {unit[name]}"
            extra = ""
            if name == "alpha":
                extra = f"  ({format_time(v)} per step)"
            elif name == "beta_eff" and v > 0:
                extra = f"  (β + γ/2; {format_rate(1 / v)} if γ were 0)"
            elif name == "beta":
                extra = f"  (1/bandwidth, {format_rate(self.bandwidth)})"
            elif name == "gamma":
                extra = "  (2·(beta_eff − β))"
            elif name == "w_t":
                lo, hi = self.w_t_range or (v, v)
                within = f"; {lo}..{hi} fit as well within noise" if lo != hi else ""
                extra = (f" {unit[name]} into a receiver (flowemu's incast_threshold; the "
                         f"paper's w_t = {self.w_t_paper}{within})")
            if ok is not True:
                extra += f"  [{ok}]"
            lines.append(f"  {name:9s} {shown}{extra}")
        lines += [f"note: {n}" for n in self.notes]
        lines.append("residuals (fit/measured − 1):")
        show_rows = self.rows.assign(
            size=self.rows["size"].map(lambda s: f"{int(s)}B"),
            time=self.rows["time"].map(format_time), fit=self.rows["fit"].map(format_time),
            residual=self.rows["residual"].map(lambda r: f"{r:+.2%}"))
        lines.append(show_rows[["source", "line", "algorithm", "ranks", "size", "time", "fit",
                                "residual"]].to_string(index=False))
        return "\n".join(lines)

    def preset_fit_table(self) -> dict:
        """The ``[fit]`` metadata a saved preset records."""
        out = {"measurements": len(self.rows), "rms_relative": self.rms,
               "sources": sorted(set(map(str, self.rows["source"])))}
        for name in ("alpha", "beta_eff", "beta", "gamma", "delta", "epsilon", "w_t"):
            if name in self.params:
                v = self.params[name]
                out[name] = v if v is not None else f"undetermined: {self.determined[name]}"
        if self.params.get("w_t") is not None:
            out["w_t_paper"] = self.w_t_paper
            out["w_t_range"] = list(self.w_t_range)
        out["max_fanin_flows"] = self.max_fanin
        return out

    def save(self, path) -> Path:
        """Write the fit as a network preset (:mod:`flowemu.core.presets`)."""
        return write_preset(path, self.network_values(), self.preset_fit_table(),
                            comment="flowemu network preset written by `flowemu fit` "
                                    "(GenModel §3.4)\nalpha is the whole per-step latency "
                                    "the measurements saw: link and hop latency are 0")


    def plot(self, path) -> Path:
        """Fit vs measurement: time against size, one panel per algorithm,
        a line per rank count (measurements as markers, fit as lines;
        :func:`flowemu.study.figures.fit.plot_fit`)."""
        return plot_fit(self.rows, path)


# ============================================================== fitting

@checked_keywords
def fit(data, *, bandwidth=None, algorithm: str | None = None, ranks: int | None = None) \
        -> FitResult:
    """Fit GenModel's α, β + γ/2, δ, ε and w_t to measured allreduce times.

    Parameters
    ----------
    data : path, list of paths, or pandas.DataFrame
        CSV files (columns ``algorithm, ranks, size, time``), nccl-tests
        ``all_reduce_perf`` output, or a DataFrame with those columns.
    bandwidth : str or Quantity, optional
        Link bandwidth with its unit (``"100Gb/s"``, ``flowemu.units.Gbps(100)``;
        a bare number is refused): β = 1/bandwidth and γ = 2·(beta_eff − β)
        are then reported.
    algorithm : str, optional
        The algorithm of nccl-tests text (default ``ring``); refused when
        no nccl-tests text is among ``data``.
    ranks : int, optional
        Ranks of nccl-tests text without device lines; refused when no
        nccl-tests text is among ``data``.

    Returns
    -------
    FitResult

    Raises
    ------
    ConfigError
        Malformed input (naming file, line and field) or fewer measurements
        than unknowns.
    """
    bw = None if bandwidth is None else user_rate(bandwidth, "bandwidth")
    meas = read_measurements(data, algorithm=algorithm, ranks=ranks)
    if meas.empty:
        raise ConfigError("data: no measurements (no rows); expected rows of algorithm, "
                          "ranks, size, time")
    base, e_all, max_fanin = _coefficients(meas)
    if len(meas) < base.shape[1]:
        raise ConfigError(f"data: too few measurements: {len(meas)} rows for the "
                          f"{base.shape[1]} unknowns alpha, beta_eff, delta (and epsilon, "
                          "w_t with incast); measure more sizes or rank counts")
    y = meas["time"].to_numpy(dtype=np.float64)
    weight = 1.0 / y
    keep = _independent(base * weight[:, None])
    determined: dict = {}
    names = PARAMS[:3]
    absorbed: dict = {}   # kept parameter -> [(coefficient, undetermined parameter)]
    for j, name in enumerate(names):
        if j not in keep:
            comb = _combination(base * weight[:, None], keep, j)
            for k, c in comb.items():
                absorbed.setdefault(names[k], []).append((c, name))
            parts = ", ".join(f"{names[k]} stands for {names[k]} + {c:.4g}·{name}"
                              for k, c in comb.items())
            determined[name] = (f"its coefficient is a combination of the others' in this "
                                f"data ({parts or 'no other term'})")

    def solve(w):
        E = _e_column(e_all, w) if w is not None else np.zeros(len(meas))
        cols = [base[:, j] for j in keep] + ([E] if np.any(E > 0) else [])
        M = np.column_stack(cols) * weight[:, None]
        scale = np.linalg.norm(M, axis=0)
        x, rss = _nnls(M / scale, np.ones_like(y))
        return w, rss, x / scale, bool(np.any(E > 0))

    plain = solve(None)   # no incast term
    best, rss_of_w = plain, {}
    for w in range(max_fanin):   # from w = max_fanin on no row is above the threshold
        trial = solve(w)
        if trial[3] and trial[2][-1] > 0:
            rss_of_w[w] = trial[1]
            if best is plain or trial[1] < best[1] * (1 - 1e-12):
                best = trial
    incast_why = _incast_seen(plain, best, len(meas), len(keep), max_fanin)
    if incast_why is True:
        incast_why = _incast_determined(meas, e_all, base, keep, weight, best[0])
    else:
        best = plain
    w, _, x, has_e = best
    params: dict = {name: None for name in names}
    for k, j in enumerate(keep):
        params[names[j]] = float(x[k])
    eps = float(x[-1]) if has_e else 0.0
    params["epsilon"], params["w_t"] = None, None
    w_range = None
    if incast_why is True:
        params["epsilon"], params["w_t"] = eps, int(w)
        w_range = _threshold_range(rss_of_w, best[1], len(meas) - len(keep) - 2)
    else:
        determined["epsilon"] = determined["w_t"] = incast_why
    fitted = (np.column_stack([base[:, j] for j in keep]) @ x[:len(keep)]
              + (eps * _e_column(e_all, w) if has_e else 0.0))
    rows = meas.assign(fit=fitted, residual=fitted / y - 1.0)
    rms = float(np.sqrt(np.mean(rows["residual"] ** 2)))
    notes = []
    if bw is not None and params["beta_eff"] is not None:
        params["beta"] = 1.0 / bw
        params["gamma"] = 2.0 * (params["beta_eff"] - params["beta"])
        if "beta_eff" in absorbed:   # γ = 2(beta_eff − β) inherits what beta_eff stands for
            determined["gamma"] = "stands for gamma + " + " + ".join(
                f"{2 * c:.4g}·{name}" for c, name in absorbed["beta_eff"])
        if params["gamma"] < 0:
            notes.append("gamma < 0: the measured per-byte cost β + γ/2 is below 1/bandwidth; "
                         "is the bandwidth right? (a saved preset puts beta_eff into the "
                         "bandwidth instead)")
    elif bw is not None:
        params["beta"], params["gamma"] = 1.0 / bw, None
        determined["gamma"] = "beta_eff is undetermined"
    return FitResult(params, determined, rows, rms, bw, max_fanin, notes, w_range)


#: a threshold whose residual exceeds the best one's by less than this much
#: noise (F statistic of one unknown, about the 95 % point) fits as well
F_RANGE = 4.0


def _threshold_range(rss_of_w: dict, best: float, dof: int) -> tuple[int, int]:
    """The thresholds that fit within noise of the best one (lowest, highest)."""
    noise = best / dof if dof > 0 else 0.0
    ok = [w for w, rss in rss_of_w.items() if rss - best <= F_RANGE * noise]
    return min(ok), max(ok)


#: an incast term must lower the residual this much more than noise would
#: (F statistic of its two extra unknowns, ε and w_t) to count as seen
F_MIN = 10.0


def _incast_seen(plain, best, n: int, k: int, max_fanin: int):
    """True when the best incast fit beats the fit without incast by more
    than noise (F test of the two extra unknowns), else the reason."""
    if max_fanin == 0:
        return ("no measured configuration has a many-to-one step (ring and RHD carry no "
                "incast term); measure cps or hcps")
    none_seen = (f"no incast seen up to fan-in {max_fanin} flows (w_t >= {max_fanin} or ε "
                 "too small for this data); measure more ranks with cps")
    if best is plain:
        return none_seen
    dof = n - k - 2
    if dof <= 0:
        return (f"too few measurements to tell incast from noise ({n} rows for {k + 2} "
                "unknowns with ε and w_t)")
    rss0, rss1 = plain[1], best[1]
    f_stat = math.inf if rss1 <= 0 else (rss0 - rss1) / 2 / (rss1 / dof)
    return True if f_stat > F_MIN else none_seen


def _incast_determined(meas, e_all, base, keep, weight, w):
    """True when ε and w_t are both pinned by the data, else the reason."""
    E = _e_column(e_all, w) * weight
    # -∂E/∂w_t: the bytes received in the steps above the threshold
    dE = E - _e_column(e_all, w + 1) * weight
    M = np.column_stack([base[:, j] * weight for j in keep] + [E])
    M2 = np.column_stack([M, dE])
    if len(_independent(M)) < M.shape[1] or len(_independent(M2)) < M2.shape[1]:
        above = sorted(set(meas["ranks"][E > 0]))
        return (f"only ε·(fan-in − w_t) is seen, not ε and w_t apart (configurations above "
                f"the threshold: ranks {', '.join(map(str, above))}); measure at least two "
                "fan-ins above it and data without incast (fan-ins at or below it, or "
                "ring/RHD)")
    return True


class _CallableModule(types.ModuleType):
    """``flowemu.fit`` is both this module and the function :func:`fit` (as
    ``flowemu.sweep`` is): importing the module must not hide the function."""

    def __call__(self, *args, **kwargs):
        return fit(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
