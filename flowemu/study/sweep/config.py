"""Configurations of a sweep: the :class:`Config` record, its readable key and
its hash (the configuration's identity in a dataset)."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
from dataclasses import dataclass

from ...algorithms.registry import plugin_sources
from ...core.network import Network
from ...core.presets import BUILTIN
from ...core.units import format_size
from ...topology.graph import split_file_options
from ...whatif.background import GENERATORS
from .paths import named_as_written

#: the what-if fields (issue 16): failed and degraded links, the failure
#: policy, Monte-Carlo failures (``failures`` random cables drawn with each
#: ``failure_seed``, added to ``fail``), slow ranks and background traffic
WHATIF_FIELDS = ("fail", "degrade", "fail_policy", "failures", "failure_seed", "slow",
                 "background")
GRID_FIELDS = ("topology", "algorithm", "ranks", "network", "bandwidth", "link_latency",
               "hop_latency", "alpha", "gamma", "delta", "incast_threshold", "incast_slope",
               "ecmp", "seed", "placement", "model", "sync", *WHATIF_FIELDS)
#: every configuration field a sweep file may set (``traffic``, a user's traffic
#: file, takes the place of ``algorithm``: :mod:`flowemu.study.sweep.traffic`)
FIELDS = (GRID_FIELDS[:2] + ("collective", "traffic", "jobs") + GRID_FIELDS[2:3] + ("sizes",)
          + GRID_FIELDS[3:])
NETWORK_FIELDS = Network.field_names()
GROUP_KEYS = FIELDS + ("where", "exclude", "description")
TOP_KEYS = GROUP_KEYS + ("groups",)
REQUIRED = ("topology", "algorithm")
DEFAULT_SIZES = "32B..512MiB"
DEFAULT_GROUP = "main"

def canon_float(v: float) -> float:
    """12 significant digits, so "100ns", "0.1us" and 1e-7 are one value
    (100 * 1e-9 != 1e-7 in binary floating point)."""
    return float(f"{float(v):.12g}")


_NET_DEFAULTS = {k: canon_float(v) for k, v in Network().as_dict().items()}
#: the value of every grid field a sweep file leaves out
DEFAULTS = {**_NET_DEFAULTS, "ranks": None, "ecmp": "split", "seed": 0,
            "placement": "linear", "network": "", "model": "flow", "sync": "barrier",
            "collective": "allreduce",
            "fail": "", "degrade": "",
            "fail_policy": "strict", "failures": 0, "failure_seed": 0, "slow": "",
            "background": ""}
#: the what-if fields a configuration runs with (``failures`` and
#: ``failure_seed`` are already in ``fail``); only non-defaults are hashed
_WHATIF_RUN = ("fail", "degrade", "fail_policy", "slow", "background")


# ============================================================== configurations

@dataclass(frozen=True)
class Config:
    """One configuration of a sweep: everything :func:`flowemu.simulate` needs.

    ``algorithm`` is the canonical spec (every option spelled out, sorted);
    ``label`` is the name plus the options that differ from their defaults
    (what :func:`flowemu.results.compare` compares). Network fields are in SI
    units (bytes/s, seconds, seconds per byte), a preset's values already
    applied; ``network_preset`` is the sweep file's ``network`` (a preset
    name or file, "" for none). The what-ifs (``fail``, ``degrade``,
    ``fail_policy``, ``slow``, ``background``) are what
    :func:`flowemu.simulate` takes, in canonical form once the plan checked
    them; only those that differ from the healthy network are hashed.
    """

    sweep: str
    group: str
    topology: str
    algorithm: str
    label: str
    ranks: int | None
    sizes: tuple[int, ...]
    bandwidth: float
    link_latency: float
    hop_latency: float
    alpha: float
    gamma: float
    delta: float
    incast_threshold: float
    incast_slope: float
    ecmp: str
    seed: int
    placement: str = "linear"
    network_preset: str = ""
    model: str = "flow"      # "flow" (the engine) or "genmodel" (flowemu.models.genmodel's prediction)
    sync: str = "barrier"    # "barrier" or "dataflow" (flowemu.engine.dataflow)
    collective: str = "allreduce"   # what the algorithm computes (flowemu.algorithms.collectives)
    # what-ifs (flowemu.whatif.conditions), "" for none: selectors in canonical form; ``fail``
    # holds the Monte-Carlo draw random:FAILURES:FAILURE_SEED too (those two
    # fields are kept for where/exclude only, not hashed)
    fail: str = ""
    degrade: str = ""
    fail_policy: str = "strict"
    slow: str = ""
    background: str = ""
    failures: int = 0
    failure_seed: int = 0
    traffic: str = ""        # a traffic file timed in place of the algorithm ("" for none)
    jobs: tuple = ()         # a job set timed in place of the algorithm (sweep/jobs.py)
    key: str = ""
    hash: str = ""
    #: the files it names, each ``(path opened, text of the sweep file)``
    #: where they differ (the sweep run from another directory): its rows
    #: name each file as the sweep file does (:meth:`shown`)
    written: tuple = ()

    def shown(self, value):
        """``value`` (a text; anything else as it is) with each file this
        configuration opens named as the sweep file names it."""
        return named_as_written(value, dict(self.written)) if self.written else value

    @property
    def num_rows(self) -> int:
        """The result rows the configuration writes: one per size, per job of
        a job set, or one for a traffic file."""
        return len(self.jobs) if self.jobs else 1 if self.traffic else len(self.sizes)

    @property
    def sizes_text(self) -> str:
        return sizes_text(self.sizes)

    def network(self) -> Network:
        return Network.from_si(**{f: getattr(self, f) for f in NETWORK_FIELDS})

    def canonical(self) -> dict:
        """The fields that identify the configuration (hashed)."""
        out = {"group": self.group, "topology": self.topology, "algorithm": self.algorithm,
               "ranks": self.ranks, "sizes": list(self.sizes), "ecmp": self.ecmp,
               "seed": self.seed}
        out.update({f: getattr(self, f) for f in NETWORK_FIELDS})
        if self.placement != "linear":   # linear configurations keep their identity
            out["placement"] = self.placement
        if self.network_preset:          # so do configurations without a preset
            out["network"] = self.network_preset
        if self.model != "flow":   # so do flow configurations (written before models)
            out["model"] = self.model
        if self.sync != "barrier":   # and barrier ones (written before dataflow)
            out["sync"] = self.sync
        if self.collective != "allreduce":   # and allreduce ones (written before collectives)
            out["collective"] = self.collective
        for name in _WHATIF_RUN:   # and healthy ones (written before what-ifs)
            if getattr(self, name) != DEFAULTS[name]:
                out[name] = getattr(self, name)
        if self.traffic:   # a traffic file by its name and contents, wherever it lies
            out["traffic"] = os.path.basename(self.traffic)
        # a network or placement read from a file is identified by its contents too:
        # editing the file makes new configurations, not silently reused rows
        files = {name: file_digest(path) for name, path in (
            ("topology", graph_file(self.topology)),
            ("placement", placement_file(self.placement)),
            ("network", preset_file(self.network_preset)),
            ("background", background_file(self.background)),
            ("traffic", self.traffic)) if path}
        # a plug-in by its code too: editing it makes new configurations (a
        # built-in has no entry, so its configurations keep their identity)
        code = plugin_digest(self.algorithm_names(), self.collective)
        if code:
            files["algorithm"] = code
        if files:
            out["files"] = files
        return out

    def algorithm_names(self) -> tuple[str, ...]:
        """The registered algorithms the configuration runs: its algorithm's
        name, each job's of a job set, none for a traffic file."""
        if self.traffic:
            return ()
        if self.jobs:   # (canonical job texts: "algorithm=NAME[:options] size=...")
            return tuple(dict.fromkeys(text.split()[0].removeprefix("algorithm=")
                                       .partition(":")[0] for text in self.jobs))
        return (self.algorithm.partition(":")[0],)


def plugin_digest(names, collective: str = "allreduce") -> str:
    """The contents of the source files of the plug-ins among ``names``
    (:func:`flowemu.algorithms.registry.plugin_sources`), as one digest per
    file joined by ``+``; "" when every one is built in."""
    paths = sorted({path for name in names for path in plugin_sources(name, collective)})
    return "+".join(file_digest(path) for path in paths)


def graph_file(spec: str) -> str | None:
    """The file of a ``graph:FILE[,key=value...]`` spec, else None."""
    if not spec.startswith("graph:"):
        return None
    return split_file_options(spec[len("graph:"):])[0].strip()


def preset_file(text: str) -> str | None:
    """The file of a network preset, else None (none or a built-in name)."""
    return text if text and text not in BUILTIN else None


def background_file(text: str) -> str | None:
    """The traffic file of a background, else None (none or a generator)."""
    if not text or text.partition(":")[0].strip().lower() in GENERATORS:
        return None
    return text


def placement_file(text: str) -> str | None:
    """The file of a placement read from a file, else None."""
    if text == "linear" or text.startswith("random:"):
        return None
    return text.removeprefix("file:")


@functools.lru_cache(maxsize=256)
def _digest(path: str, mtime_ns: int, size: int) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:16]


def file_digest(path: str) -> str:
    """sha256 of a file's contents (16 hex digits); "missing" when it cannot
    be read (the configuration then fails when it runs, saying why)."""
    try:
        st = os.stat(path)
        return _digest(os.path.abspath(path), st.st_mtime_ns, st.st_size)
    except OSError:
        return "missing"


def config_hash(canonical: dict) -> str:
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _exact_size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


def sizes_text(sizes) -> str:
    """``32B..512MiB`` for consecutive powers of two, else an exact comma list."""
    sizes = list(sizes)
    pow2 = all(s & (s - 1) == 0 for s in sizes)
    if len(sizes) >= 2 and pow2 and all(b == 2 * a for a, b in itertools.pairwise(sizes)):
        return f"{format_size(sizes[0])}..{format_size(sizes[-1])}"
    return ",".join(_exact_size(s) for s in sizes)


def _num(v: float) -> str:
    return f"{v:.10g}"


def _fmt_field(name: str, v) -> str:
    if name == "bandwidth":
        bits = v * 8
        for unit, scale in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6)):
            if bits >= scale:
                return f"{_num(bits / scale)}{unit}"
        return f"{_num(bits)}b/s"
    if name in ("link_latency", "hop_latency", "alpha"):
        ns = v * 1e9
        for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
            if ns >= scale:
                return f"{_num(ns / scale)}{unit}"
        return f"{_num(ns)}ns"
    return _num(v) if isinstance(v, float) else str(v)


def config_key(cfg: Config) -> str:
    """``group|topology|algorithm[|field=value for non-defaults]|sizes=...``."""
    parts = [cfg.group, cfg.topology, cfg.algorithm]
    if cfg.collective != "allreduce":
        parts.append(f"collective={cfg.collective}")
    if cfg.network_preset:
        parts.append(f"network={cfg.network_preset}")
    for name in ("ranks", *NETWORK_FIELDS, "ecmp", "seed", "placement", "model", "sync",
                 *_WHATIF_RUN):
        v = getattr(cfg, name)
        if v != DEFAULTS[name]:
            parts.append(f"{name}={_fmt_field(name, v)}")
    if not cfg.jobs:   # (each job of a set has its size in the algorithm text)
        parts.append(f"sizes={cfg.sizes_text}")
    return "|".join(parts)
