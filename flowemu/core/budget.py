"""Memory estimates, checked before the memory is allocated.

A run that would not fit is refused up front with a
:class:`~flowemu.core.errors.ConfigError` naming the estimate and the limit —
never a ``MemoryError`` traceback half-way, or the kernel's OOM killer.

The limit (:func:`limit`) is, in order of precedence: ``max_memory=`` of the
Python API (``--max-memory`` of ``flowemu run``), the environment variable
``FLOWEMU_MAX_MEMORY``, or 80 % of the memory available now (the smaller of
``MemAvailable`` in ``/proc/meminfo`` and what the process's cgroup still
allows). ``"8GiB"``, ``"500MB"`` or a byte count are accepted.

The estimates add up the arrays a run holds at its peak, from sizes known
before allocating them:

* the topology's link arrays (:func:`topology_bytes`), from its shape (every
  family checks its size with :func:`reserve_topology` before it allocates);
* the schedule (:func:`schedule_bytes`): flows per step × distinct steps,
  from the algorithm's shape before it is built, exactly once it is;
* the routing and solver workspace of the steps solved at once
  (:func:`solve_bytes`): per flow and per route entry (a flow crosses one
  link per entry; ECMP split routing on a torus gives a flow every link of
  every minimal path, so entries can be far more than hops — they are
  counted exactly by the routing kernel's first pass before any step is
  routed);
* a flow dump (:func:`flow_dump_bytes`) per row, per row and route entry
  of each distinct traffic pattern, and the largest step's text building.

The per-flow and per-entry constants were measured as the growth of peak RSS
(``ru_maxrss``) over a warmed-up process on torus runs (ring, swing,
recdoub and bucket, ecmp split and dor, 8x8 to 128x128); see
``tests/core/test_budget.py`` for the checks that the estimate stays within 2x of
the measured peak and not below it.
"""

from __future__ import annotations

import math
import os
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError, show
from .units import parse_size

#: environment variable with the default limit ("8GiB", bytes)
ENV_VAR = "FLOWEMU_MAX_MEMORY"
#: share of the available memory a run may use by default
FRACTION = 0.8

# --- measured constants (bytes); see the module docstring
#: per link of a topology at its peak (link arrays, the build's temporaries
#: and the engine's per-link capacities)
LINK_BYTES = 32
#: per node and dimension (the coordinate table)
NODE_DIM_BYTES = 8
#: per vertex of a topology that is not a torus (its per-vertex tables)
NODE_BYTES = 16
#: per flow of every distinct step of a schedule (src, dst, share and the
#: reduction arrays)
SCHEDULE_FLOW_BYTES = 24
#: per rank of a schedule (the builders' per-rank tables and temporaries:
#: ~570 B measured for ring's cycles, ~1.4 KB over 64 flows for swing)
SCHEDULE_RANK_BYTES = 600
#: per flow of a step being routed and solved
SOLVE_FLOW_BYTES = 300
#: ... when the solver ends it at its t = 0 solve (flows of one size, no
#: background: no event state); ~157 B a flow measured over a ring step on
#: torus:256x256 (262,144 flows of one entry each; 214 B event by event)
SOLVE_FLOW_BYTES_STATIC = 200
#: per route entry of a step being routed and solved (link, fraction, the
#: solver's link-major transpose and its per-entry state)
SOLVE_ENTRY_BYTES = 24
#: per route entry where the max-min solver may follow changes incrementally
#: (at most ``INCREMENTAL_ENTRIES`` entries a flow on average, the bound of
#: ``flowemu.kernels.maxmin.SCREEN_ENTRIES``): its per-entry lists and, when
#: it screens, each flow's pool of entries; ~41 B an entry measured for the
#: solver on 65,532 flows with 20 entries each (torus:32x32x16, hashed
#: paths, random permutations), plus the routes' 12
SOLVE_ENTRY_BYTES_INCREMENTAL = 56
#: mean route entries a flow up to which :data:`SOLVE_ENTRY_BYTES_INCREMENTAL`
#: applies
INCREMENTAL_ENTRIES = 30
#: per row of a flow dump (numbers, references to the texts, the DataFrame
#: and its concatenation)
DUMP_ROW_BYTES = 200
#: per row of a distinct traffic pattern in a flow dump (its own two texts;
#: rows of a repeated pattern share them)
DUMP_PATTERN_ROW_BYTES = 250
#: per route entry of a distinct pattern (the ``links`` and ``path`` texts)
DUMP_ENTRY_BYTES = 48
#: per route entry of the largest step while its texts are built (pieces,
#: the joined string and its split)
DUMP_BUILD_ENTRY_BYTES = 250
#: per row of a traffic table while it is read and split into steps
TRAFFIC_ROW_BYTES = 150


@dataclass(frozen=True)
class Limit:
    """A memory limit in bytes and where it comes from (for messages)."""

    bytes: int
    source: str
    #: how to give more (a sweep's worker share says so itself); "" for the
    #: source's own (:meth:`override`)
    hint: str = ""

    def text(self) -> str:
        return f"{format_bytes(self.bytes)} limit ({self.source})"

    def override(self) -> str:
        """How to raise this limit, for a refusal's message: a larger value of
        the option or variable it came from, else the ways to set one."""
        if self.hint:
            return self.hint
        if self.source == "--max-memory":
            return "give a larger --max-memory"
        if self.source == "max_memory":
            return "give a larger max_memory= (--max-memory)"
        if self.source == ENV_VAR:
            return f"give a larger {ENV_VAR}, or --max-memory (max_memory=)"
        return f"use --max-memory (max_memory=, {ENV_VAR}) to override"


def format_bytes(n: float) -> str:
    """``1.5 GiB``, ``300 MiB``, ``12 KiB`` (two significant digits at least)."""
    n = float(n)
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f} {unit}" if v >= 10 else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def _parse(value, field: str) -> int:

    if type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(f"{field}: {show(value)} is not allowed; expected a size such as "
                          "'8GiB', '500MB' or a number of bytes")
    if isinstance(value, int):
        if value <= 0:
            raise ConfigError(f"{field}: {value} is not allowed; expected a size > 0 such as "
                              "'8GiB' or a number of bytes")
        return value
    if isinstance(value, str) and value.strip().endswith("%"):
        raise ConfigError(f"{field}: {value!r} is not allowed; expected a size such as '8GiB' "
                          "(the default is 80 % of available memory)")
    return parse_size(value, field)


def available_memory() -> int:
    """Bytes this process can still allocate: the smaller of ``MemAvailable``
    and the cgroup's remaining allowance (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``); ``os.sysconf`` where ``/proc`` is missing."""
    candidates = []
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    candidates.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    if not candidates:
        try:
            candidates.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (OSError, ValueError, AttributeError):
            pass
    room = _cgroup_room()
    if room is not None:
        candidates.append(room)
    return max(0, min(candidates)) if candidates else 2**63 - 1


#: (limit, usage) files of cgroup v2 and v1
CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                 "/sys/fs/cgroup/memory/memory.usage_in_bytes"))


def _cgroup_room(files=CGROUP_FILES) -> int | None:
    """What the process's cgroup still allows (limit − usage), or None."""
    for limit_file, usage_file in files:
        try:
            raw = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if raw == "max" or not raw.isdigit() or int(raw) >= 2**60:   # unlimited
            return None
        try:
            used = int(Path(usage_file).read_text().strip())
        except (OSError, ValueError):
            used = 0
        return max(0, int(raw) - used)
    return None


def limit(max_memory=None) -> Limit:
    """The memory limit of a run (see the module docstring).

    Parameters
    ----------
    max_memory : str, int, Limit or None
        ``"8GiB"``, ``"500MB"`` or bytes; None for ``FLOWEMU_MAX_MEMORY`` or
        80 % of the available memory.
    """
    if isinstance(max_memory, Limit):
        return max_memory
    if max_memory is not None:
        return Limit(_parse(max_memory, "max_memory"), "max_memory")
    raw = os.environ.get(ENV_VAR, "").strip()
    if raw:
        return Limit(_parse(raw, ENV_VAR), ENV_VAR)
    return Limit(int(FRACTION * available_memory()), "80 % of available memory")


def check(need: float, lim: Limit, what: str) -> None:
    """Raise ConfigError when ``need`` bytes exceed the limit."""
    if need > lim.bytes:
        needed = format_bytes(need)
        limit_text = lim.text()
        if needed == format_bytes(lim.bytes):   # (both print as 2.0 GiB: the bytes tell)
            needed = f"{needed} ({int(need):,} bytes)"
            limit_text = f"{needed.split(' (')[0]} limit ({lim.bytes:,} bytes, {lim.source})"
        name = ENV_VAR if lim.source == ENV_VAR else "max_memory"   # (what set the limit)
        raise ConfigError(f"{name}: {what} needs ~{needed} (estimate), more than the "
                          f"{limit_text}; {lim.override()}")


# ------------------------------------------------------------------ topologies

_TOPOLOGY_LIMIT: ContextVar[Limit | None] = ContextVar("flowemu_topology_limit", default=None)


@contextmanager
def topology_limit(lim: Limit | None):
    """Topologies built inside this block are checked against ``lim``
    (:func:`reserve_topology`); outside, against the default :func:`limit`."""
    token = _TOPOLOGY_LIMIT.set(lim)
    try:
        yield
    finally:
        _TOPOLOGY_LIMIT.reset(token)


def reserve_topology(spec: str, links: int, nodes: int = 0,
                     link_bytes: int = LINK_BYTES) -> None:
    """Refuse (ConfigError) a topology of ``links`` links and ``nodes``
    vertices whose building would not fit, before a family allocates it:
    ``link_bytes`` a link (the family's measured peak,
    :attr:`flowemu.topology.Topology.build_link_bytes`) and
    :data:`NODE_BYTES` a vertex. Every family calls this from its constructor
    once it knows its size."""
    lim = _TOPOLOGY_LIMIT.get() or limit(None)
    check(_links_and_nodes(links, nodes, link_bytes), lim, f"building {spec}")


#: bytes of reading a graph file, a byte of it: the parsed document's Python
#: objects and the lists built from them (13x measured for JSON, 16x for
#: TOML, on files of 500,000 links), with a margin
GRAPH_FILE_FACTOR = 20


def reserve_reading(what: str, nbytes: int) -> None:
    """Refuse (ConfigError) reading ``what`` when ``nbytes`` would not fit,
    before it is read (checked as a topology's building is)."""
    lim = _TOPOLOGY_LIMIT.get() or limit(None)
    check(int(nbytes), lim, f"reading {what}")


# ------------------------------------------------------------------ estimates

def topology_bytes(dims) -> int:
    """Peak bytes of building and using a torus or mesh of shape ``dims``."""
    nodes = math.prod(int(d) for d in dims)
    ndim = len(dims)
    return nodes * 2 * ndim * LINK_BYTES + nodes * ndim * NODE_DIM_BYTES


def spec_dims(spec: str) -> tuple[int, ...] | None:
    """The shape of a ``torus:``/``mesh:`` spec without building it (None for
    other families or a spec the parser will refuse anyway); options after
    the shape (``,groups=…``) change neither."""
    family, _, params = spec.strip().partition(":")
    if family.strip() not in ("torus", "mesh"):
        return None
    try:
        dims = tuple(int(part) for part in params.partition(",")[0].split("x"))
    except ValueError:
        return None
    return dims if dims and all(d >= 2 for d in dims) else None


def schedule_bytes(flows: int, p: int) -> int:
    """Bytes of building and holding a schedule of ``p`` ranks with
    ``flows`` flows over its distinct steps."""
    return int(flows) * SCHEDULE_FLOW_BYTES + int(p) * SCHEDULE_RANK_BYTES


def solve_bytes(flows: int, entries: int, events: bool = True) -> int:
    """Routing and solver workspace of one step of ``flows`` flows with
    ``entries`` route entries; ``events=False``: a step the solver ends at
    its ``t = 0`` solve (flows of one size, no background: no incremental
    state)."""
    per_entry = SOLVE_ENTRY_BYTES_INCREMENTAL \
        if events and entries <= INCREMENTAL_ENTRIES * flows else SOLVE_ENTRY_BYTES
    per_flow = SOLVE_FLOW_BYTES if events else SOLVE_FLOW_BYTES_STATIC
    return int(flows) * per_flow + int(entries) * per_entry


def flow_dump_bytes(rows: int, pattern_rows: int, pattern_entries: int,
                    largest_step_entries: int) -> int:
    """Bytes of a flow dump DataFrame of ``rows`` flows, of which
    ``pattern_rows`` (with ``pattern_entries`` route entries) belong to
    distinct traffic patterns — rows of a repeated step share their texts —
    while the texts of a step of ``largest_step_entries`` entries are built.
    Measured within 1.1-1.7x above the peak RSS growth (64x64 swing and
    recdoub, 32x32 ring with 8M rows)."""
    return (int(rows) * DUMP_ROW_BYTES + int(pattern_rows) * DUMP_PATTERN_ROW_BYTES
            + int(pattern_entries) * DUMP_ENTRY_BYTES
            + int(largest_step_entries) * DUMP_BUILD_ENTRY_BYTES)


def traffic_file_bytes(path: Path, parquet: bool) -> int:
    """Bytes of reading a traffic file, from its size before reading it: a
    parquet file's row count is in its footer; a CSV file's is its size over
    the mean length of its first lines."""
    try:
        size = path.stat().st_size
    except OSError:
        return 0
    rows = 0
    if parquet:
        try:
            import pyarrow.parquet as pq
            rows = pq.ParquetFile(path).metadata.num_rows
        except Exception:  # noqa: BLE001 - the reader reports a bad file itself
            rows = size // 8
    else:
        try:
            with open(path, "rb") as fh:
                head = fh.read(1 << 16)
        except OSError:
            return 0
        lines = head.count(b"\n")
        per_line = len(head) / lines if lines else max(len(head), 8)
        rows = int(size / max(per_line, 1.0))
    return rows * TRAFFIC_ROW_BYTES + size


def built_topology_bytes(topology) -> int:
    """Bytes a built topology holds while a run uses it: its family's
    :attr:`~flowemu.topology.Topology.held_link_bytes` a link and
    :data:`NODE_BYTES` a vertex. (Not :func:`topology_bytes`, a torus's
    formula, which charged a HyperX of ``dims`` as a torus of that shape: a
    thousandth of its links.) A torus or mesh spec's shape, not built yet:
    :func:`topology_bytes`."""
    return _charge(topology, "held_link_bytes")


def topology_build_bytes(topology) -> int:
    """The peak of building ``topology``, as its constructor reserved it
    (:func:`reserve_topology`); of a torus or mesh spec's shape,
    :func:`topology_bytes`."""
    return _charge(topology, "build_link_bytes")


def _charge(topology, per_link: str) -> int:
    """A topology's links at its family's ``per_link`` figure and its
    vertices at :data:`NODE_BYTES` (a spec's shape not built yet: the torus
    formula)."""
    if not hasattr(topology, "num_links"):
        return topology_bytes(topology.dims)
    return _links_and_nodes(topology.num_links, topology.num_nodes,
                            getattr(topology, per_link, LINK_BYTES))


def _links_and_nodes(links: int, nodes: int, link_bytes: int) -> int:
    return int(links) * int(link_bytes) + int(nodes) * NODE_BYTES


def run_bytes(topology, p: int, flows: list[int], entries: list[int], threads: int,
              solved: list[int] | None = None, events: list[bool] | None = None) -> int:
    """Peak of a run of ``p`` ranks: the topology, its schedule and the
    ``threads`` largest step workspaces (``flows[k]``, ``entries[k]`` per
    distinct step) solved at once. ``solved[k]``: the flows step ``k``'s
    solve holds when fewer than its own (one per orbit of a symmetry);
    ``events[k]``: whether it may be solved event by event (default: all,
    see :func:`solve_bytes`)."""
    solved = flows if solved is None else solved
    events = [True] * len(flows) if events is None else events
    work = sorted((solve_bytes(f, e, ev)
                   for f, e, ev in zip(solved, entries, events, strict=True)), reverse=True)
    # the topology was built first: its building's peak may be the run's
    # (a HyperX's links grow with the square of its nodes, its flows do not)
    return max(topology_build_bytes(topology),
               built_topology_bytes(topology) + schedule_bytes(sum(flows), p)
               + sum(work[:max(1, threads)]))
