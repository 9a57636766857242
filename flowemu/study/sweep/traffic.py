"""The ``traffic`` field of a sweep file: a user's own step-wise traffic
(a CSV/parquet file with columns ``step, src, dst, bytes``, as for
``flowemu run --traffic``) timed in place of an algorithm.

Each file is one value of the grid's algorithm dimension: its configurations
are labelled ``traffic:FILE`` (the file's name), so ``compare`` ranks the
traffic files of a scenario against each other and figures draw one line per
file. Paths are read relative to the sweep file (:mod:`.paths`). Every file
is read and checked when the sweep file is (a missing or malformed file is
reported with the field's location and the file), and its ranks are checked
against each topology of the grid.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ...algorithms.usertraffic import read_traffic_steps
from ...core.errors import ConfigError
from ...whatif.stragglers import compute_only
from .config import Config, file_digest
from .fields import Alg, Problems, topo_info, type_name
from .paths import current

#: the algorithm name of a traffic configuration (the ``algorithm`` column of its rows)
TRAFFIC = "traffic"


def traffic_alg(path: Path) -> Alg:
    """The grid value of one traffic file: named ``traffic``, labelled ``traffic:FILE``."""
    label = f"{TRAFFIC}:{path.name}"
    return Alg(TRAFFIC, (), label, label, traffic=str(path))


def parse_traffic_field(raw, loc: str, probs: Problems) -> list[Alg] | None:
    """The grid values of a ``traffic`` field (a path or an array of paths,
    relative to the sweep file's directory), each file read and checked
    now. After recording a bad file's problem, the good files are still
    returned (the sweep fails on the problems, but the grid's checks of
    the others are said with them: every problem at once); None when no
    file is good."""
    items = raw if isinstance(raw, list) else [raw]
    if isinstance(raw, list) and not raw:
        probs.add(loc, "empty array; give at least one traffic file")
        return None
    out, names = [], {}
    for i, item in enumerate(items):
        iloc = f"{loc}[{i}]" if isinstance(raw, list) else loc
        if not isinstance(item, str) or not item.strip():
            probs.add(iloc, "expected the path of a CSV/parquet file with columns step, src, "
                            f"dst, bytes (relative to the sweep file), got {type_name(item)}"
                            if not isinstance(item, str) else
                            "an empty path; expected a CSV/parquet traffic file")
            continue
        try:
            path = Path(current().path(item.strip(), iloc))
            traffic_ranks(str(path))
        except ConfigError as exc:
            probs.add(iloc, str(exc).removeprefix("traffic: "))
            continue
        if path.name in names and names[path.name] != path.resolve():
            probs.add(iloc, f"two traffic files are named {path.name!r}; their rows would "
                            "share the label traffic:" + path.name + " (rename one)")
            continue
        names[path.name] = path.resolve()
        alg = traffic_alg(path)
        if alg not in out:
            out.append(alg)
    return out if out else None


def traffic_ranks(path: str) -> int:
    """The number of ranks a traffic file uses (its highest rank id + 1),
    read once per file contents; ConfigError naming the file when it is
    missing or malformed."""
    return _ranks_of(path, file_digest(path))


@lru_cache(maxsize=64)
def _ranks_of(path: str, digest: str) -> int:
    _, steps = read_traffic_steps(path, whole=True)
    return max(int(max(t.src.max(), t.dst.max())) for t in steps if t.num_flows) + 1


def check_traffic_config(cfg: Config, loc: str, probs: Problems) -> bool:
    """Whether a traffic configuration runs: its ranks exist on the
    topology, ``ranks`` is left to the file and the model is ``flow``; each
    problem is reported once, before anything runs."""
    info = topo_info(cfg.topology)
    name = Path(cfg.traffic).name
    if cfg.model != "flow":
        probs.add(loc, f"traffic {name!r} runs on model = \"flow\" only (genmodel prices "
                       "algorithms); split the group")
        return False
    if cfg.ranks is not None:
        probs.add(loc, f"ranks does not apply to traffic {name!r} (its ranks are the ones the "
                       "file uses); leave ranks out of a traffic group")
        return False
    compute = compute_only(cfg.slow)
    if compute:
        probs.add(loc, f"slow {compute[0]!r} slows a rank's reduction, and traffic {name!r} has "
                       "none; use :network (a rank's ports), or no kind")
        return False
    p = traffic_ranks(cfg.traffic)
    if p > info.nodes:
        probs.add(loc, f"traffic {name!r} uses rank {p - 1}, which does not exist on "
                       f"{info.spec} ({info.nodes} endpoints)")
        return False
    return True
