"""The public Python entry points: :func:`simulate` and :func:`time_traffic`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__
from .algorithms import get_algorithm, parse_algorithm_spec
from .algorithms.base import Reduction, Schedule, Step, Traffic
from .engine import profile
from .errors import ConfigError
from .network import Network
from .topology import Topology, parse_topology
from .topology.base import check_ecmp
from .units import parse_sizes

#: columns every result table starts with (one row per configuration and size)
RESULT_COLUMNS = ["topology", "nodes", "ranks", "algorithm", "variant", "options", "size_bytes",
                  "time_s", "goodput_Bps", "steps", "ecmp", "seed", "bandwidth_Bps",
                  "link_latency_s", "hop_latency_s", "alpha_s", "gamma_s_per_B",
                  "delta_s_per_B", "incast_threshold", "incast_slope_s_per_B",
                  "note", "flowemu_version"]


def _topology(topology) -> Topology:
    if isinstance(topology, Topology):
        return topology
    if isinstance(topology, str):
        return parse_topology(topology)
    raise ConfigError(f"topology: expected a spec string such as 'torus:8x8' or a Topology, "
                      f"got {type(topology).__name__}")


def _network(network, params: dict) -> Network:
    if network is not None and params:
        raise ConfigError("network: pass either network=Network(...) or its fields, not both")
    if network is not None:
        return network
    unknown = sorted(set(params) - set(Network.field_names()))
    if unknown:
        raise ConfigError(f"network: unknown parameter(s) {', '.join(unknown)}; allowed: "
                          f"{', '.join(Network.field_names())}")
    return Network(**params)


def _ranks(ranks, topo: Topology) -> int:
    if ranks is None:
        return topo.num_endpoints
    if isinstance(ranks, bool) or not isinstance(ranks, (int, np.integer)) or ranks < 2:
        raise ConfigError(f"ranks: {ranks!r} is not allowed; expected an integer >= 2")
    if ranks > topo.num_endpoints:
        raise ConfigError(f"ranks: {ranks} ranks do not fit on {topo.spec} "
                          f"({topo.num_endpoints} endpoints)")
    return int(ranks)


def _options_text(opts: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(opts.items()))


def _base_row(topo: Topology, p: int, net: Network, ecmp: str, seed: int) -> dict:
    return {
        "topology": topo.spec, "nodes": topo.num_endpoints, "ranks": p, "ecmp": ecmp,
        "seed": seed, "bandwidth_Bps": net.bandwidth, "link_latency_s": net.link_latency,
        "hop_latency_s": net.hop_latency, "alpha_s": net.alpha, "gamma_s_per_B": net.gamma,
        "delta_s_per_B": net.delta, "incast_threshold": net.incast_threshold,
        "incast_slope_s_per_B": net.incast_slope, "flowemu_version": __version__,
    }


def expand_algorithm(algorithm) -> tuple:
    """``"NAME[:key=val,...]"`` -> ``(spec, candidates)``: the registered
    algorithm and its parsed options, one dict per variant to run (every
    choice of the auto option when it is ``auto``, else just the one)."""
    if not isinstance(algorithm, str):
        raise ConfigError("algorithm: expected a string NAME[:key=val,...]")
    name, raw = parse_algorithm_spec(algorithm)
    spec = get_algorithm(name)
    opts = spec.parse_options(raw)
    if spec.auto_param and opts.get(spec.auto_param) == "auto":
        return spec, [dict(opts, **{spec.auto_param: c}) for c in spec.auto_choices()]
    return spec, [opts]


def _prepare(topology, algorithm, ecmp, ranks, network, network_params, sizes=None) -> tuple:
    """The checked inputs of one algorithm run: ``(topology, network, sizes
    (float64 array, or None), p, spec, candidates)``."""
    topo = _topology(topology)
    net = _network(network, network_params)
    check_ecmp(ecmp)
    n = None if sizes is None else np.asarray(parse_sizes(sizes), dtype=np.float64)
    p = _ranks(ranks, topo)
    spec, candidates = expand_algorithm(algorithm)
    return topo, net, n, p, spec, candidates


def simulate(topology, algorithm, sizes="32B..512MiB", *, ecmp: str = "split", seed: int = 0,
             ranks: int | None = None, network: Network | None = None,
             threads: int | None = None, **network_params) -> pd.DataFrame:
    """Time an allreduce algorithm on a topology for many vector sizes.

    Parameters
    ----------
    topology : str or Topology
        e.g. ``"torus:16x16"``.
    algorithm : str
        ``NAME[:key=val,...]``, e.g. ``"recdoub:variant=auto"``.
    sizes : str or list
        ``"32B..512MiB"`` (every power of two), ``"1KiB,1MiB"`` or a list.
    ecmp : {"split", "dor", "hash"}
    seed : int
        Seed of ``ecmp="hash"``.
    ranks : int, optional
        Number of ranks (default: every endpoint); rank r runs on endpoint r.
    network : Network, optional
        Or pass its fields as keywords: ``bandwidth="400Gb/s"``,
        ``link_latency="100ns"``, ``hop_latency``, ``alpha``, ``gamma``,
        ``delta``, ``incast_threshold``, ``incast_slope``.
    threads : int, optional
        Distinct steps solved at once (default: ``FLOWEMU_THREADS`` or every
        core); the results do not depend on it.

    Returns
    -------
    pandas.DataFrame
        One row per size with :data:`RESULT_COLUMNS`; ``goodput_Bps`` is
        size / time. With an ``auto`` option the fastest variant per size is
        reported in ``variant``.
    """
    topo, net, n, p, spec, candidates = _prepare(topology, algorithm, ecmp, ranks, network,
                                                 network_params, sizes)
    times, scheds = [], []
    for cand in candidates:
        sched = spec.build(p, topo, False, **cand)
        prof = profile(sched, topo, net, ecmp=ecmp, seed=seed, threads=threads)
        times.append(prof.times(n))
        scheds.append((sched, cand))
    times = np.vstack(times)
    best = np.argmin(times, axis=0)
    base = _base_row(topo, p, net, ecmp, seed)
    rows = []
    for j, size in enumerate(n):
        sched, cand = scheds[best[j]]
        t = float(times[best[j], j])
        rows.append({**base, "algorithm": spec.name, "variant": sched.variant,
                     "options": _options_text(cand), "size_bytes": int(size), "time_s": t,
                     "goodput_Bps": size / t if t > 0 else np.inf, "steps": sched.num_steps,
                     "note": sched.note})
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


# ------------------------------------------------------------------ user traffic

def read_traffic(path) -> list[Traffic]:
    """Read a step-wise traffic matrix (CSV or parquet with columns
    ``step, src, dst, bytes``; src/dst are rank ids) into one Traffic per
    step, in step order. ``share`` holds absolute bytes."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"traffic: file {str(path)!r} does not exist")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            df = pd.read_parquet(path)
        else:
            df = pd.read_csv(path)
    except Exception as exc:  # noqa: BLE001 - any reader failure is a user input problem
        raise ConfigError(f"traffic: cannot read {str(path)!r}: {exc}") from None
    need = ["step", "src", "dst", "bytes"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ConfigError(f"traffic {str(path)!r}: missing column(s) {', '.join(missing)}; "
                          f"required: {', '.join(need)}")
    if len(df) == 0:
        raise ConfigError(f"traffic {str(path)!r}: no rows")
    for col in ("step", "src", "dst"):
        vals = pd.to_numeric(df[col], errors="coerce")
        bad = vals.isna() | (vals != np.floor(vals)) | (vals < 0)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ConfigError(f"traffic {str(path)!r}: column {col} row {i}: {df[col].iloc[i]!r} "
                              "is not a non-negative integer")
        df[col] = vals.astype(np.int64)
    b = pd.to_numeric(df["bytes"], errors="coerce")
    bad = b.isna() | ~np.isfinite(b) | (b < 0)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise ConfigError(f"traffic {str(path)!r}: column bytes row {i}: {df['bytes'].iloc[i]!r} "
                          "is not a finite number >= 0")
    same = (df["src"] == df["dst"]).to_numpy()
    if same.any():
        i = int(np.flatnonzero(same)[0])
        raise ConfigError(f"traffic {str(path)!r}: row {i}: src equals dst ({df['src'].iloc[i]}); "
                          "a flow must go to another rank")
    df = df.assign(bytes=b.astype(np.float64)).sort_values("step", kind="stable")
    steps = []
    for _, g in df.groupby("step", sort=True):
        steps.append(Traffic(g["src"].to_numpy(), g["dst"].to_numpy(), g["bytes"].to_numpy()))
    return steps


def time_traffic(topology, traffic, *, ecmp: str = "split", seed: int = 0,
                 network: Network | None = None, name: str = "traffic",
                 **network_params) -> pd.DataFrame:
    """Time a user-supplied step-wise traffic matrix (list of Traffic with
    absolute bytes in ``share``, or a path to a CSV/parquet file).

    Returns one row with :data:`RESULT_COLUMNS`: ``size_bytes`` is the total
    bytes of all flows and ``goodput_Bps`` that total over the time.
    """
    topo = _topology(topology)
    net = _network(network, network_params)
    check_ecmp(ecmp)
    if isinstance(traffic, (str, Path)):
        name = Path(traffic).name
        traffic = read_traffic(traffic)
    p = max(int(max(t.src.max(), t.dst.max())) for t in traffic) + 1
    if p > topo.num_endpoints:
        raise ConfigError(f"traffic: rank {p - 1} does not exist on {topo.spec} "
                          f"({topo.num_endpoints} endpoints)")
    sched = Schedule("traffic", name, p,
                     tuple(Step(t, Reduction.none(), f"step{k}") for k, t in enumerate(traffic)))
    t = float(profile(sched, topo, net, ecmp=ecmp, seed=seed).times([1.0])[0])
    total = float(sum(tr.share.sum() for tr in traffic))
    row = {**_base_row(topo, p, net, ecmp, seed), "algorithm": "traffic", "variant": name,
           "options": "", "size_bytes": total, "time_s": t,
           "goodput_Bps": total / t if t > 0 else np.inf, "steps": len(traffic), "note": ""}
    return pd.DataFrame([row], columns=RESULT_COLUMNS)


def congestion(topology, algorithm, *, ecmp: str = "split", seed: int = 0,
               ranks: int | None = None, network: Network | None = None,
               **network_params) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-step congestion of an algorithm and its deficiencies (Swing paper §2.2).

    Returns ``(steps, summary)``: ``steps`` has one row per step and variant
    (``variant, step, label, flows, max_flows_per_link, max_link_load,
    max_port_injection, load_vs_ideal``; loads in bytes per byte of the
    vector size n); ``summary`` one row per variant with ``steps``, ``psi``
    (bandwidth deficiency Ψ), ``xi`` (congestion deficiency Ξ) and
    ``psi_xi`` (their product: bandwidth time relative to the optimal
    2(p−1)/p·n spread over every port). See
    :meth:`flowemu.engine.Profile.congestion_report` for the definitions.
    With an ``auto`` option every variant is reported.
    """
    topo, net, _, p, spec, candidates = _prepare(topology, algorithm, ecmp, ranks, network,
                                                 network_params)
    step_frames, rows = [], []
    for cand in candidates:
        sched = spec.build(p, topo, False, **cand)
        prof = profile(sched, topo, net, ecmp=ecmp, seed=seed, congestion=True)
        steps, summary = prof.congestion_report()
        steps.insert(0, "variant", sched.variant)
        step_frames.append(steps)
        rows.append({"topology": topo.spec, "algorithm": spec.name, "variant": sched.variant,
                     "options": _options_text(cand), "steps": sched.num_steps, **summary})
    return pd.concat(step_frames, ignore_index=True), pd.DataFrame(rows)
