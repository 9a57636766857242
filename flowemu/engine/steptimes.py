"""A solved schedule as lines, and the times they give: a step's profile
(:class:`StepProfile`: the Pareto front of its flows' ``latency + spb·n``
lines, its reduction time per byte, its link usage) and a schedule's
(:class:`Profile`: its distinct step profiles and each step's index into
them). How a step is solved into lines is :mod:`flowemu.engine.steps`; the
profile of a whole schedule is made by :mod:`flowemu.engine.profiles`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from ..algorithms.base import Schedule
from ..core import checks
from ..core.errors import ConfigError
from ..topology.base import Routes, Topology
from .load import background_throughput


@dataclass(frozen=True)
class StepProfile:
    """Time of one step as a function of the vector size n.

    ``time(n) = max_k(latency[k] + spb[k]·n) + reduce_spb·n``; the lines kept
    are the Pareto front of the step's flows (no kept line is beaten by
    another in both latency and slope), so the max is exact.
    """

    latency: np.ndarray
    spb: np.ndarray
    reduce_spb: float
    label: str = ""
    num_flows: int = 0
    congestion: StepCongestion | None = None
    #: bytes background flows moved during the step's fluid phase, per byte of n
    background_bytes: float = 0.0

    @property
    def max_flows_per_link(self) -> int:
        """Most flows crossing one link direction (needs ``congestion=True``)."""
        if self.congestion is None:
            raise ConfigError("congestion: profile(..., congestion=True) computes per-link counts")
        return self.congestion.max_flows_per_link

    def time(self, sizes) -> np.ndarray:
        """This step's time at each size, float64[sizes] (sizes as
        :meth:`Profile.times` takes them)."""
        return self.time_at(checks.size_points(sizes))

    def time_at(self, n: np.ndarray) -> np.ndarray:
        """:meth:`time` at sizes the caller has checked (float64[k] of
        positive byte counts): a profile's times evaluate every distinct
        step with it, their sizes checked once."""
        if len(self.latency) == 0:
            return self.reduce_spb * n
        comm = np.max(self.latency[:, None] + self.spb[:, None] * n[None, :], axis=0)
        return comm + self.reduce_spb * n


@dataclass(frozen=True)
class StepCongestion:
    """Link usage of one step, in bytes per byte of the vector size n.

    ``max_link_load`` is the most bytes crossing one link direction;
    ``max_injection`` the most bytes a node puts on one of its outgoing
    links (a port); ``ideal_link_load`` the bytes per port if the busiest
    sender spread its bytes evenly over all its ports.
    """

    max_flows_per_link: int
    max_link_load: float
    max_injection: float
    ideal_link_load: float

    @property
    def load_vs_ideal(self) -> float:
        return self.max_link_load / self.ideal_link_load if self.ideal_link_load else 1.0


def link_totals(routes: Routes, share: np.ndarray, num_links: int) -> tuple:
    """``(load float64[L], flows int64[L], entry_load float64[E])`` of routed
    flows carrying ``share`` bytes each: the bytes on each link (``Σ
    share·frac``), the flows crossing it, and each route entry's bytes."""
    entry_load = routes.frac * np.repeat(np.asarray(share, dtype=np.float64),
                                         np.diff(routes.flow_ptr))
    return (np.bincount(routes.link, weights=entry_load, minlength=num_links),
            np.bincount(routes.link, minlength=num_links), entry_load)


def step_congestion(topology: Topology, routes: Routes, src_node: np.ndarray,
                    share: np.ndarray) -> StepCongestion:
    """Per-link flow counts and loads of one routed step."""
    flow_of = np.repeat(np.arange(routes.num_flows), np.diff(routes.flow_ptr))
    per_link_load, per_link_flows, load = link_totals(routes, share, topology.num_links)
    first_hop = topology.link_src[routes.link] == src_node[flow_of]
    injection = np.bincount(routes.link[first_hop], weights=load[first_hop],
                            minlength=topology.num_links)
    sent = np.bincount(src_node, weights=share, minlength=topology.num_nodes)
    ports = np.bincount(topology.link_src, weights=(topology.link_capacity_scale > 0),
                        minlength=topology.num_nodes)
    busiest = int(np.argmax(sent))
    ideal = float(sent[busiest] / max(ports[busiest], 1))
    return StepCongestion(int(per_link_flows.max()), float(per_link_load.max()),
                          float(injection.max()), ideal)


@dataclass(frozen=True)
class Profile:
    """Per-step profiles of one schedule on one topology and network.

    Held as the schedule's distinct step profiles (``distinct``, in first-use
    order), each step's entry in them (``index``) and each step's label: a ring
    on 16k ranks has 32k steps but one distinct profile, and its times cost
    what that one costs. :attr:`steps` gives one :class:`StepProfile` per step.
    """

    distinct: tuple[StepProfile, ...]
    index: np.ndarray
    labels: Sequence[str]
    schedule: Schedule | None = None
    info: dict = field(default_factory=dict)

    @property
    def num_steps(self) -> int:
        return len(self.index)

    @cached_property
    def steps(self) -> tuple[StepProfile, ...]:
        """One StepProfile per step (made on first use)."""
        return tuple(d if d.label == label else replace(d, label=label)
                     for d, label in zip((self.distinct[i] for i in self.index.tolist()),
                                         self.labels, strict=True))

    def counted(self) -> list[tuple[StepProfile, int]]:
        """``(distinct step profile, how many steps use it)``, in first-use order."""
        counts = np.bincount(self.index, minlength=len(self.distinct)).tolist()
        return list(zip(self.distinct, counts, strict=True))

    def congestion_report(self):
        """Per-step congestion and the run's deficiencies (Swing paper §2.2).

        Returns ``(steps, summary)``: a DataFrame with one row per step
        (``step, label, flows, max_flows_per_link, max_link_load,
        max_port_injection, load_vs_ideal``; loads in bytes per byte of n)
        and a dict with ``psi`` and ``xi``.

        The paper models the bandwidth term as (n/D)·β·Ψ·Ξ (eq. 1). Here
        Ψ = Σ_s (bytes on the busiest port in step s) / (2(p−1)/p · n / ports),
        i.e. how many more bytes than an optimal allreduce spread over all
        ports, and Ξ = Σ_s (bytes on the busiest link) / Σ_s (bytes on the
        busiest port), the slowdown from messages sharing links. Ψ·Ξ is the
        bandwidth time relative to optimal. (Table 2 gives Ξ of the
        latency-optimal algorithms as a sum of distances, not as a ratio;
        compare those through Ψ·Ξ.)
        """
        import pandas as pd

        if any(s.congestion is None for s in self.steps):
            raise ConfigError("congestion: profile(..., congestion=True) is needed for a congestion "
                              "report")
        rows = [{"step": k, "label": s.label, "flows": s.num_flows,
                 "max_flows_per_link": s.congestion.max_flows_per_link,
                 "max_link_load": s.congestion.max_link_load,
                 "max_port_injection": s.congestion.max_injection,
                 "load_vs_ideal": s.congestion.load_vs_ideal} for k, s in enumerate(self.steps)]
        df = pd.DataFrame(rows)
        p = self.schedule.p if self.schedule is not None else 0
        ports = self.info.get("ports_per_node", 0)
        ideal = 2 * (p - 1) / p / ports if p and ports else float("nan")
        inj = float(df.max_port_injection.sum())
        link = float(df.max_link_load.sum())
        summary = {"psi": inj / ideal, "xi": link / inj if inj else float("nan"),
                   "psi_xi": link / ideal}
        return df, summary

    def step_times(self, sizes) -> np.ndarray:
        """float64[steps, sizes] (sizes as :meth:`times` takes them)."""
        n = checks.size_points(sizes)
        if not self.distinct:
            return np.zeros((0, len(n)))
        return np.stack([s.time_at(n) for s in self.distinct])[self.index]

    def times(self, sizes) -> np.ndarray:
        """Total time for each size, float64[sizes], in the order given:
        a size or size spec (``"1MiB"``, ``"32B..512MiB"``: every power of
        two), or a number or 1-D list/array of byte counts or size strings
        (each one size: a range goes alone, ``"1KiB..4KiB"``, not in a list).
        A size that is not a positive, finite number of bytes is a
        ConfigError naming it."""
        n = checks.size_points(sizes)
        # Steps with the same solved lines (the engine caches them) are
        # evaluated once and counted; the summation order is fixed by first use.
        groups: dict = {}
        for s, count in self.counted():
            key = (id(s.latency), id(s.spb), s.reduce_spb)
            if key in groups:
                groups[key][1] += count
            else:
                groups[key] = [s, count]
        total = np.zeros(len(n))
        for s, count in groups.values():
            total += count * s.time_at(n)
        return total

    def background_throughput(self, sizes) -> np.ndarray:
        """Background bytes/s averaged over the run, float64[sizes] (zeros
        without background; the approximation is in :mod:`flowemu.whatif.background`;
        sizes as :meth:`times` takes them)."""
        return background_throughput(self, checks.size_points(sizes))


def pareto_lines(latency: np.ndarray, spb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lines not dominated in both intercept and slope (enough for an exact
    max over n ≥ 0)."""
    if len(latency) == 0:
        return latency, spb
    order = np.lexsort((-spb, -latency))  # latency desc, then slope desc
    lat, sl = latency[order], spb[order]
    prev_max = np.maximum.accumulate(np.concatenate(([-np.inf], sl[:-1])))
    keep = sl > prev_max
    return lat[keep].copy(), sl[keep].copy()
