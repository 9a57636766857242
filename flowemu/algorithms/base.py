"""Schedules (steps of traffic + reduction work), algorithm specs and their options
(the registry of algorithms by name is :mod:`flowemu.algorithms.registry`).

Byte counts are fractions of the allreduce vector size ``n`` so that one
schedule serves every size. Ranks are ``0..p-1``; the engine maps rank ``r`` to
an endpoint of the topology.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import ConfigError, ScheduleError, show, suggest
from ..core.units import parse_size
from .streams import AggregationStreams

#: vector size (bytes) a size-dependent schedule (GenTree's plan, the butterfly's
#: ``r``) is chosen for when the run has none (congestion, flow dumps without a
#: size, the verifier): 256 MiB
DEFAULT_AT = 256 * 2**20

#: flow operation on block-level traffic: the receiver adds the data into its own
REDUCE = 0
#: flow operation on block-level traffic: the receiver overwrites its own copy
COPY = 1


@dataclass(frozen=True)
class Traffic:
    """One step's traffic matrix in COO form.

    Attributes
    ----------
    src, dst : int32[F]
        Sending and receiving rank of each flow.
    share : float64[F]
        Bytes of the flow as a fraction of the vector size n.
    tag : int16[F] or None
        Which concurrent collective (port) a flow belongs to.
    block_ptr : int64[F+1] or None
        Block-level content (for verification at small p): flow ``f`` carries
        blocks ``block_idx[block_ptr[f]:block_ptr[f+1]]``.
    block_idx : int32[K] or None
    op : int8[F] or None
        :data:`REDUCE` or :data:`COPY` for each flow (block-level only).
    block_buffers : int8[K, 3] or None
        For schedules whose ranks keep several partial sums of one block
        (``Schedule.num_buffers > 1``): per block entry the sender's buffer
        it reads, the receiver's buffer it writes and, for a REDUCE, the
        receiver's buffer it adds to (the result is ``base + data``; usually
        the written buffer itself). ``None``: buffer 0 everywhere.
    aggregation : AggregationStreams or None
        In-network aggregation: the flows are streams that switches combine
        (flow ``i`` is stream ``i``, ``src[i] == dst[i]`` its root rank;
        :mod:`flowemu.algorithms.streams`). ``None``: ordinary flows.
    """

    src: np.ndarray
    dst: np.ndarray
    share: np.ndarray
    tag: np.ndarray | None = None
    block_ptr: np.ndarray | None = None
    block_idx: np.ndarray | None = None
    op: np.ndarray | None = None
    block_buffers: np.ndarray | None = None
    aggregation: AggregationStreams | None = None

    def __post_init__(self):
        for name, dtype in (("src", np.int32), ("dst", np.int32), ("share", np.float64)):
            object.__setattr__(self, name, _column(name, getattr(self, name), dtype))
        n = len(self.src)
        if len(self.dst) != n or len(self.share) != n:
            raise ConfigError(f"Traffic: src, dst and share must have equal lengths, got "
                              f"{n}, {len(self.dst)} and {len(self.share)}")
        if self.tag is not None:
            object.__setattr__(self, "tag", np.ascontiguousarray(self.tag, dtype=np.int16))
        if self.block_ptr is not None:
            object.__setattr__(self, "block_ptr",
                               np.ascontiguousarray(self.block_ptr, dtype=np.int64))
            object.__setattr__(self, "block_idx",
                               np.ascontiguousarray(self.block_idx, dtype=np.int32))
            op = np.zeros(n, np.int8) if self.op is None else self.op
            object.__setattr__(self, "op", np.ascontiguousarray(op, dtype=np.int8))
        if self.block_buffers is not None:
            object.__setattr__(self, "block_buffers",
                               np.ascontiguousarray(self.block_buffers, dtype=np.int8))
        if self.aggregation is not None and self.aggregation.num_streams != n:
            raise ConfigError(f"Traffic: {n} flows but {self.aggregation.num_streams} "
                              "aggregation streams; flow i is stream i")

    @property
    def num_flows(self) -> int:
        return len(self.src)

    @property
    def has_blocks(self) -> bool:
        return self.block_ptr is not None


def _column(name: str, values, dtype) -> np.ndarray:
    """``values`` as a contiguous 1-D array of ``dtype``; a ConfigError naming
    ``name`` for what does not convert (or would not fit int32)."""
    if isinstance(values, np.ndarray) and values.dtype == dtype and values.ndim == 1:
        return np.ascontiguousarray(values)   # the algorithms' own arrays: no check
    try:
        raw = np.asarray(values)
        if raw.dtype == bool or raw.dtype.kind not in "iuf" and raw.size:
            raise TypeError
        if raw.ndim != 1:
            raise ValueError
        if dtype is np.int32 and raw.size:
            if raw.dtype.kind == "f" and not np.array_equal(raw, np.floor(raw)):
                raise ValueError
            if raw.min() < np.iinfo(np.int32).min or raw.max() > np.iinfo(np.int32).max:
                raise ValueError
        return np.ascontiguousarray(raw, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        kind = "integers (int32)" if dtype is np.int32 else "numbers"
        raise ConfigError(f"Traffic: {name} {show(values)} is not allowed; expected a 1-D "
                          f"array of {kind}") from None


@dataclass(frozen=True)
class Reduction:
    """Reduction work after a step: node ``node[i]`` combines ``share[i]·n``
    bytes with fan-in ``fanin[i]`` (number of vectors combined, own included;
    fan-in 2 is "add one received block to my own")."""

    node: np.ndarray
    share: np.ndarray
    fanin: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "node", np.ascontiguousarray(self.node, dtype=np.int32))
        object.__setattr__(self, "share", np.ascontiguousarray(self.share, dtype=np.float64))
        object.__setattr__(self, "fanin", np.ascontiguousarray(self.fanin, dtype=np.int32))

    @staticmethod
    def none() -> Reduction:
        return Reduction(np.zeros(0, np.int32), np.zeros(0), np.zeros(0, np.int32))

    @staticmethod
    def from_reduce_flows(traffic: Traffic) -> Reduction:
        """Each REDUCE flow's receiver combines the flow's bytes with its own
        copy (fan-in 2 per flow). Copy flows do no reduction."""
        mask = np.ones(traffic.num_flows, bool) if traffic.op is None else traffic.op == REDUCE
        return Reduction(traffic.dst[mask], traffic.share[mask],
                         np.full(int(mask.sum()), 2, np.int32))

    def seconds_per_byte(self, gamma: float, delta: float, p: int,
                         speed: np.ndarray | None = None) -> float:
        """Reduction time of the slowest node per byte of n:
        max over nodes of Σ ((f+1)·δ + (f−1)·γ)·share, each node's sum
        divided by its compute ``speed`` (float64[p] in (0, 1], slow ranks;
        default: all at full speed)."""
        if len(self.node) == 0 or (gamma == 0 and delta == 0):
            return 0.0
        per = ((self.fanin + 1) * delta + (self.fanin - 1) * gamma) * self.share
        tot = np.bincount(self.node, weights=per, minlength=p)
        if speed is not None:
            if len(speed) != len(tot):
                raise ValueError(f"speed: expected {len(tot)} ranks, got {len(speed)}")
            tot = tot / speed
        return float(tot.max())


@dataclass(frozen=True)
class Step:
    traffic: Traffic
    reduction: Reduction
    label: str = ""


class StepLabels(Sequence):
    """Labels numbered in runs, made on demand: ``StepLabels((("rs", 3),
    ("ag", 3)))`` is ``rs0, rs1, rs2, ag0, ag1, ag2`` (a ring's 32,766
    labels cost nothing until one is read)."""

    __slots__ = ("_parts", "_starts")

    def __init__(self, parts):
        self._parts = tuple((str(prefix), int(count)) for prefix, count in parts)
        self._starts = np.cumsum([0] + [count for _, count in self._parts])

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"step label {i} out of range for {n} steps")
        i %= n
        part = int(np.searchsorted(self._starts, i, side="right")) - 1
        return f"{self._parts[part][0]}{i - int(self._starts[part])}"

    def __iter__(self):
        for prefix, count in self._parts:
            for k in range(count):
                yield f"{prefix}{k}"


class Steps(Sequence):
    """The steps of a schedule held as arrays: its distinct steps
    (``patterns``, each a :class:`Step`), the pattern of each step
    (``order``, int32[S]) and each step's label (``labels``). A ring's 32,766
    steps are one pattern and an index; indexing or iterating makes the
    :class:`Step` of a step on demand.

    Built from ``patterns``, ``order`` and ``labels`` directly, or from a
    sequence of :class:`Step` (:meth:`of`, distinct by the identity of their
    traffic and reduction)."""

    __slots__ = ("labels", "order", "patterns")

    def __init__(self, patterns, order, labels):
        self.patterns = tuple(patterns)
        order = np.asarray(order, dtype=np.int32).reshape(-1)
        if len(order) and (order.min() < 0 or order.max() >= len(self.patterns)):
            raise ValueError(f"order: pattern ids must be in [0, {len(self.patterns)})")
        if len(labels) != len(order):
            raise ValueError(f"labels: expected {len(order)}, got {len(labels)}")
        order.flags.writeable = False
        self.order = order
        self.labels = labels

    @classmethod
    def of(cls, steps) -> Steps:
        """The steps of a sequence of :class:`Step` as arrays."""
        if isinstance(steps, Steps):
            return steps
        slot: dict = {}
        patterns, order, labels = [], [], []
        for step in steps:
            key = (id(step.traffic), id(step.reduction))
            i = slot.get(key)
            if i is None:
                i = slot[key] = len(patterns)
                patterns.append(step)
            order.append(i)
            labels.append(step.label)
        return cls(patterns, order, tuple(labels))

    def counts(self) -> np.ndarray:
        """How many steps use each pattern, int64[len(patterns)]."""
        return np.bincount(self.order, minlength=len(self.patterns))

    def __len__(self) -> int:
        return len(self.order)

    def _step(self, i: int, label: str) -> Step:
        pat = self.patterns[i]
        return pat if pat.label == label else Step(pat.traffic, pat.reduction, label)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        return self._step(int(self.order[i]), self.labels[i])

    def __iter__(self):
        for i, label in zip(self.order.tolist(), self.labels, strict=True):
            yield self._step(i, label)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other))

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"Steps({len(self)} steps, {len(self.patterns)} patterns)"


@dataclass(frozen=True)
class Schedule:
    """The ordered, bulk-synchronous steps of one collective on ``p`` ranks.

    ``steps`` is held as :class:`Steps` (a sequence of :class:`Step` given
    here is turned into one). ``num_blocks``/``block_share`` describe the
    block partition used by block-level traffic (``None`` when the schedule
    was built without blocks).
    """

    algorithm: str
    variant: str
    p: int
    steps: Steps
    num_blocks: int | None = None
    block_share: np.ndarray | None = None
    info: dict = field(default_factory=dict)
    #: what the builder did that the user did not ask for (e.g. ranks that are
    #: not the topology's grid fall back to a 1-D ring of rank ids); reported
    #: in the ``note`` column of every result row
    note: str = ""
    #: partial sums a rank may keep of one block at once (block-level
    #: traffic addresses them through ``Traffic.block_buffers``); the
    #: allreduce's result is buffer 0
    num_buffers: int = 1
    #: the collective it computes (:mod:`flowemu.algorithms.collectives`)
    collective: str = "allreduce"
    #: the root of a rooted collective (broadcast, reduce, gather, scatter)
    root: int = 0
    #: int[num_blocks]: the rank each block belongs to, for the collectives
    #: whose blocks are personalised (None: contiguous, ``B/p`` blocks a rank)
    block_owner: np.ndarray | None = None
    #: int[num_blocks]: all-to-all only, the rank each block goes to (None:
    #: block ``b`` of ``m·p²`` goes to rank ``(b // m) mod p``)
    block_dest: np.ndarray | None = None

    def __post_init__(self):
        if not isinstance(self.steps, Steps):
            object.__setattr__(self, "steps", Steps.of(self.steps))

    @property
    def num_steps(self) -> int:
        return len(self.steps)


# --------------------------------------------------------------------------- registry

@dataclass(frozen=True)
class Param:
    """One algorithm option: its type, default, allowed choices and doc."""

    name: str
    type: type
    default: Any
    choices: tuple | None = None
    doc: str = ""
    #: optional converter for values that are not plain ``type`` (e.g. ``"max"``
    #: or an int); it raises ValueError on a bad value
    convert: Callable[[Any], Any] | None = None

    def parse(self, algorithm: str, raw: Any) -> Any:
        if self.convert is not None:
            try:
                value = self.convert(raw)
            except (ValueError, TypeError):
                raise ConfigError(
                    f"algorithm {algorithm}: option {self.name}={show(raw)} is not allowed"
                    + (f"; allowed: {self._allowed()}" if self.choices else f"; {self.doc}")
                ) from None
        elif isinstance(raw, str) and self.type is not str:
            try:
                if self.type is bool:
                    low = raw.strip().lower()
                    if low not in ("true", "false", "1", "0", "yes", "no"):
                        raise ValueError(raw)
                    value = low in ("true", "1", "yes")
                else:
                    value = self.type(raw)
            except ValueError:
                raise ConfigError(
                    f"algorithm {algorithm}: option {self.name}={show(raw)} is not a valid "
                    f"{self.type.__name__}" + (f"; allowed: {self._allowed()}" if self.choices else "")
                ) from None
        else:
            value = raw
        if self.choices is not None and value not in self.choices:
            hint = suggest(raw, [str(c) for c in self.choices]) if isinstance(raw, str) else ""
            raise ConfigError(
                f"algorithm {algorithm}: option {self.name}={show(raw)} is not allowed{hint}; "
                f"allowed: {self._allowed()}")
        return value

    def _allowed(self) -> str:
        if self.type is bool:   # every spelling the parser takes
            return "true or false (also yes/no, 1/0)"
        return ", ".join(str(c) for c in self.choices)


#: builder signature shared by every algorithm:
#: ``build(p, topology, blocks, **options) -> Schedule``
Builder = Callable[..., Schedule]


@dataclass(frozen=True)
class AlgorithmSpec:
    """A registered algorithm.

    ``auto_param`` names the option whose value ``"auto"`` means "run every
    other choice and take the fastest per size" (e.g. ``variant``).
    """

    name: str
    build: Builder
    params: tuple[Param, ...] = ()
    doc: str = ""
    auto_param: str | None = None
    #: for an algorithm whose schedule depends on the vector size and the
    #: network (``gentree``): ``sized(p, topology, network, sizes, options)
    #: -> [(schedule, indices of the sizes it serves)]``
    sized: Callable[..., list] | None = None
    #: the topology families the algorithm runs on (None: every family); a
    #: sweep refuses the others before it runs anything
    families: tuple[str, ...] | None = None
    #: flows meant to ride specific links (the Hamiltonian rings' neighbour
    #: exchanges): with failed links, ``fail_policy='strict'`` refuses a run
    #: in which a failure forces such a flow off its minimal paths
    #: (:func:`flowemu.whatif.faults.check_fail_policy`)
    topology_bound: bool = False
    #: its steps are timed at a barrier, one job at a time only (in-network
    #: aggregation streams): ``sync="dataflow"`` and several-job runs refuse it
    barrier_only: bool = False
    #: why the block-level verifier cannot check it ("" when it can): said
    #: by ``verify`` before it asks for a topology or builds anything
    unverifiable: str = ""
    #: the collective it computes (:mod:`flowemu.algorithms.collectives`);
    #: names are looked up per collective
    collective: str = "allreduce"
    #: ``check(p, options)``: the ConfigError the build would raise for these
    #: ranks and options, raised without building (a run and a sweep check
    #: every configuration up front with it)
    check: Callable[[int, dict], None] | None = None

    def check_family(self, topology_spec: str, label: str | None = None) -> None:
        """A ConfigError when the algorithm does not run on the family of
        ``topology_spec`` (:attr:`families`); ``label`` names it (default:
        its name)."""
        family = topology_spec.split(":", 1)[0]
        if self.families is not None and family not in self.families:
            raise ConfigError(f"algorithm: {label or self.name} does not run on "
                              f"{topology_spec} (it runs on {', '.join(self.families)})")

    def parse_options(self, options: dict) -> dict:
        known = {p.name: p for p in self.params}
        unknown = sorted(set(options) - set(known))
        if unknown:
            named = ", ".join(k + suggest(k, known) for k in unknown)
            raise ConfigError(
                f"algorithm {self.name}: unknown option(s) {named}; "
                f"allowed: {', '.join(sorted(known)) or '(none)'}")
        out = {p.name: p.default for p in self.params}
        for k, v in options.items():
            out[k] = known[k].parse(self.name, v)
        return out

    def require_concrete(self, options: dict) -> None:
        """Raise ``ScheduleError`` when the auto option is still ``"auto"``:
        builders take a concrete choice, the engine expands ``auto``."""
        if self.auto_param and options.get(self.auto_param) == "auto":
            raise ScheduleError(
                f"algorithm {self.name}: {self.auto_param}='auto' is expanded by the engine "
                f"(it times {', '.join(self.auto_choices())} and keeps the faster per size); "
                f"the builder needs a concrete {self.auto_param}")

    def auto_choices(self) -> tuple:
        if self.auto_param is None:
            return ()
        param = next(p for p in self.params if p.name == self.auto_param)
        return tuple(c for c in param.choices if c != "auto")


def convert_ports(raw):
    """``"max"`` or a port count given as int or text (``Param.convert``;
    raises ValueError/TypeError on anything else, the choices are checked by
    :class:`Param`)."""
    if isinstance(raw, str):
        text = raw.strip().lower()
        return "max" if text == "max" else int(text)
    if isinstance(raw, (bool, np.bool_)) or not isinstance(raw, (int, np.integer)):
        raise TypeError(raw)
    return int(raw)


def convert_size_or_auto(raw):
    """``"auto"`` or a vector size (``"400MB"``, bytes) > 0, as an int
    (``Param.convert`` of the ``at=`` options; ValueError/TypeError on
    anything else)."""
    if isinstance(raw, str) and raw.strip().lower() == "auto":
        return "auto"
    if isinstance(raw, (bool, np.bool_)):
        raise TypeError(raw)
    value = parse_size(raw) if isinstance(raw, str) else raw
    if not isinstance(value, (int, float, np.integer, np.floating)) or not value > 0:
        raise ValueError(raw)
    return int(value)


def torus_dims(topology, p: int) -> tuple[int, ...]:
    """The logical torus shape ranks are arranged in: the topology's ``grid``
    (a torus's dims, the node grid of HyperX and HammingMesh) when ``p``
    equals its node count; otherwise a 1-D torus (ring) of ``p`` ranks."""
    grid = getattr(topology, "grid", None)
    if grid is not None and int(np.prod(grid)) == p:
        return tuple(int(d) for d in grid)
    return (int(p),)


def shape_note(topology, p: int, gridless: bool = False) -> str:
    """Why :func:`torus_dims` falls back to a 1-D ring of rank ids, or ``""``
    when it uses the topology's grid. A topology with no grid at all (a
    tree, a Dragonfly) is noted only with ``gridless`` (for the algorithms
    whose shape comes from the grid: on rank ids bucket is the ring)."""
    grid = getattr(topology, "grid", None)
    dims = grid if grid is not None else getattr(topology, "dims", None)
    spec = getattr(topology, "spec", "the topology")
    if dims is None:
        if gridless and topology is not None:
            return f"{spec} offers no node grid: ranks form a 1-D ring of rank ids"
        return ""
    if grid is not None and len(grid) < 2:
        return ""
    nodes = int(np.prod(dims))
    if nodes != p:
        return (f"{p} ranks are not the {nodes} nodes of {spec}: ranks form a 1-D ring "
                "of rank ids, not the node grid")
    if grid is None:
        return (f"{spec} has no wrap-around links: ranks form a 1-D ring of rank ids, "
                "not a torus grid")
    return ""


def parse_algorithm_spec(text: str) -> tuple[str, dict]:
    """``"recdoub:variant=bandwidth,ports=2"`` -> ``("recdoub", {...})``."""
    text = text.strip()
    if not text:
        raise ConfigError("algorithm: empty name; expected NAME[:key=val,...]")
    name, colon, rest = text.partition(":")
    if colon and not rest.strip():
        raise ConfigError(f"algorithm: {text!r} has no options after the ':'; expected "
                          f"{name.strip()} alone or {name.strip()}:key=val[,key=val...]")
    opts: dict[str, str] = {}
    if rest:
        for item in rest.split(","):
            k, eq, v = item.partition("=")
            if not eq or not k.strip():
                raise ConfigError(
                    f"algorithm {name}: option {item!r} is not key=value; "
                    f"expected NAME[:key=val,...]")
            if k.strip() in opts:
                raise ConfigError(f"algorithm {name}: option {k.strip()} given twice "
                                  f"({opts[k.strip()]!r} and {v.strip()!r}); give it once")
            opts[k.strip()] = v.strip()
    return name.strip(), opts
