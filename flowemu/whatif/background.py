"""Background traffic: another job's steady flows sharing the fabric.

A :class:`Background` is a fixed set of flows between endpoints, each with a
demand in bytes/s, that never finish: they share links with every step of
the collective under max-min fairness for the whole run.
A demand is a rate cap, modelled as a private virtual resource per flow
(capacity = demand, crossed with fraction 1) appended to the solver's
problem, so max-min fairness gives each background flow
``min(demand, its fair share)``.

Specs (:func:`parse_background`):

* ``perm:LOAD[:SEED]`` — every endpoint sends to one other: the next one in
  a seeded random order (a random cyclic permutation, so no endpoint sends
  to itself);
* ``alltoall:LOAD`` — every ordered pair of distinct endpoints;
* ``hotspot:LOAD[:TARGET]`` — every endpoint but TARGET (default 0) sends
  to TARGET;
* a path to a traffic file (CSV or parquet, columns ``step,src,dst,bytes``
  as for ``--traffic``): src/dst are endpoint ids, ``bytes`` is read as the
  flow's demand in bytes/s, and the file must hold one step (any single step
  number: the background is one steady set of flows). Rows with demand 0
  are dropped.

LOAD in (0, 1] is the fraction of each sender's injection bandwidth (the
sum of its outgoing links' capacities) that it offers, split evenly over
its flows. Every byte crosses every link of its route, so a permutation
offers the average link LOAD × (average hops) of its capacity: 16× at
``perm:0.5`` on torus:64x64 (the what-if page works it through).

The engine's side of a run with background flows (routing them, their rate
caps, the combined problem each step is solved on) is :mod:`flowemu.engine.load`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..algorithms.usertraffic import PARQUET_SUFFIXES, frame_steps, read_table
from ..core.errors import ConfigError, show
from ..core.network import Network
from ..core.units import number_text
from ..engine.load import Background, check_background
from ..topology import checks as topology_checks

#: generator names
GENERATORS = ("perm", "alltoall", "hotspot")
#: most background flows a run takes (alltoall grows as N²)
MAX_FLOWS = 1 << 22

_ALLOWED = ("expected perm:LOAD[:SEED], alltoall:LOAD, hotspot:LOAD[:TARGET] (LOAD in (0, 1]) "
            "or a path to a traffic file (.csv or .parquet)")


def parse_background(spec, topology, network=None) -> Background:
    """Background flows from a generator spec or a traffic file.

    Parameters
    ----------
    spec : str or Path or Background
        See the module doc (a Background is returned as it is once its
        endpoints are checked against ``topology``).
    topology : Topology or str
    network : Network, optional
        Gives the link capacities generator loads are fractions of (default
        ``Network()``); use the run's.

    Raises
    ------
    ConfigError
        Naming ``background``, the value and what is allowed.
    """

    topology = topology_checks.topology(topology)
    network = Network() if network is None else network
    n_end = topology.num_endpoints
    if isinstance(spec, Background):
        check_background(spec, n_end)
        return spec
    if isinstance(spec, Path):
        return _from_file(spec, n_end)
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"background: {show(spec)} is not allowed; {_ALLOWED}")
    text = spec.strip()
    name = text.partition(":")[0]
    if name.lower() not in GENERATORS:
        if _looks_like_file(text):
            return _from_file(Path(text), n_end)
        raise ConfigError(f"background: unknown generator {name!r} in {text!r}; {_ALLOWED}")
    name, load, extra = _generator(text)
    if n_end < 2:
        raise ConfigError(f"background: {text!r} needs at least 2 endpoints; "
                          f"{topology.spec} has {n_end}")
    injection = np.bincount(topology.link_src, weights=topology.link_capacity(network),
                            minlength=topology.num_nodes)[:n_end]
    if name == "perm":
        seed = _integer(extra, "SEED", text, 0, 2**63 - 1) if extra is not None else 0
        order = np.random.default_rng(seed).permutation(n_end)
        src = order
        dst = np.roll(order, -1)
        per_flow = 1
    elif name == "alltoall":
        if n_end * (n_end - 1) > MAX_FLOWS:
            raise ConfigError(f"background: {text!r} makes {n_end * (n_end - 1)} flows on "
                              f"{n_end} endpoints; at most {MAX_FLOWS} are allowed (use perm "
                              "or a file)")
        src = np.repeat(np.arange(n_end), n_end - 1)
        off = np.tile(np.arange(1, n_end), n_end)
        dst = (src + off) % n_end
        per_flow = n_end - 1
    else:
        target = _integer(extra, "TARGET", text, 0, n_end - 1) if extra is not None else 0
        src = np.delete(np.arange(n_end), target)
        dst = np.full(len(src), target)
        per_flow = 1
    demand = load * injection[src] / per_flow
    keep = demand > 0   # senders without working out-links offer nothing
    # one text for one background: perm:0.50, perm:.5 and perm:0.5:0 are perm:0.5
    return Background(src[keep], dst[keep], demand[keep], n_end, generator_text(text))


def generator_text(text: str) -> str:
    """The canonical text of a generator spec, as a Background's ``spec``
    (``perm:.5`` and ``perm:0.50:0`` are ``perm:0.5``); any other text
    (a file, a bad spec: reported when it is read) as it is."""
    text = text.strip()
    if text.partition(":")[0].lower() not in GENERATORS:
        return text
    try:
        name, load, extra = _generator(text)
        n = _integer(extra, "SEED", text, 0, 2**63 - 1) if extra is not None else 0
    except ConfigError:
        return text
    return f"{name}:{number_text(load)}" + (f":{n}" if n else "")


def _generator(text: str) -> tuple[str, float, str | None]:
    """``(name, LOAD, the SEED or TARGET as written or None)`` of a
    generator spec (its name one of :data:`GENERATORS`); a ConfigError
    naming what does not read."""
    name, _, rest = text.partition(":")
    name = name.lower()
    args = rest.split(":") if rest else []
    if not 1 <= len(args) <= (1 if name == "alltoall" else 2):
        raise ConfigError(f"background: {text!r} is not allowed; {_ALLOWED}")
    return name, _load(args[0], text), args[1] if len(args) > 1 else None


def _load(text: str, spec: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:
        raise ConfigError(f"background: LOAD {text!r} in {spec!r} is not allowed; expected a "
                          "fraction of each sender's injection bandwidth in (0, 1]")
    return value


def _integer(text: str, what: str, spec: str, lo: int, hi: int) -> int:
    t = text.strip()
    if not (t.isascii() and t.isdigit()) or not lo <= int(t) <= hi:
        raise ConfigError(f"background: {what} {text!r} in {spec!r} is not allowed; expected "
                          f"an integer in {lo}..{hi}")
    return int(t)


def _looks_like_file(text: str) -> bool:
    path = Path(text)
    return (path.suffix.lower() in (".csv", ".txt", *PARQUET_SUFFIXES) or "/" in text
            or path.exists())


def _from_file(path: Path, n_end: int) -> Background:

    where = f"background {str(path)!r}"
    df = read_table(path, "background", missing=f"; {_ALLOWED}")
    steps, traffic = frame_steps(df, where, path)
    if len(steps) != 1:
        shown = ", ".join(str(int(s)) for s in steps[:4]) + (", ..." if len(steps) > 4 else "")
        raise ConfigError(f"{where}: steps {shown}: expected a single step (the background is "
                          "one steady set of flows; bytes are read as bytes/s)")
    t = traffic[0]
    hi = int(max(t.src.max(), t.dst.max()))
    if hi >= n_end:
        raise ConfigError(f"{where}: endpoint {hi} is out of range; expected endpoints "
                          f"0..{n_end - 1}")
    if t.num_flows > MAX_FLOWS:
        raise ConfigError(f"{where}: {t.num_flows} flows; at most {MAX_FLOWS} are allowed")
    keep = t.share > 0
    return Background(t.src[keep], t.dst[keep], t.share[keep], n_end, str(path))
