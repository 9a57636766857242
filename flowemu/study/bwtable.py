"""Bandwidth tables: a paper's global (all-to-all) and allreduce bandwidth
columns beside flowemu's, row by row (``flowemu global TABLE.toml``; the
HammingMesh paper's Table II is ``configs/tables/hammingmesh-table2.toml``).

A table file holds defaults at the top and one ``[[rows]]`` table per row::

    description = "..."
    link_latency = "20ns"            # network fields: defaults of every row
    allreduce_sizes = ["1GiB", "2GiB"]

    [[rows]]
    cluster = "small"                # free text, kept in the output
    name = "Hx2Mesh"
    topology = "hx2mesh:16x16"
    bandwidth = "400Gb/s"
    allreduce = "ring:ports=4"       # optional: the allreduce column
    paper_global = 0.254             # optional: the paper's values
    paper_allreduce = 0.983
    shift = true                     # optional: also time the shift all-to-all

Per row (or at the top, for every row): ``topology``; the network fields of
:class:`~flowemu.core.network.Network` (``bandwidth``, ``link_latency``,
``hop_latency``, ``alpha``, ...); ``ecmp`` (routing of the all-to-all and
the allreduce, default ``split``); ``allreduce_ecmp`` (the allreduce's own);
``injection`` and ``nic`` (rates, see :func:`flowemu.api.globalbw.global_bandwidth`);
``allreduce`` (an algorithm spec); ``allreduce_sizes`` (two sizes);
``shift`` (bool); ``cluster``, ``name``, ``paper_global``,
``paper_allreduce``, ``note`` (kept as given). A file a row names (a
``graph:`` topology) is read relative to the table file's directory, as a
sweep file's files are (one only in the current directory is still found
there). Table files live apart from the sweep files
(``configs/tables/``).

Columns (fractions, 1.0 = the row's injection bandwidth for ``global``, half
of it for ``allreduce``, as the paper reports them):

* ``global``: the concurrent all-to-all's rate per endpoint
  (:func:`~flowemu.api.globalbw.global_bandwidth`);
* ``global_shift``: the all-to-all as p − 1 bulk-synchronous shift
  permutations (step i: rank j sends to j + i mod p; the HammingMesh paper's
  §V-A1a implementation), each step solved max-min by
  :func:`flowemu.time_traffic`, without latencies (rows with ``shift``);
* ``allreduce``: the allreduce's bandwidth for large vectors, from the
  slope of its time between the two ``allreduce_sizes`` (the time is linear
  in the size, so this is the limit of size / time) over half the injection.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

from ..algorithms.base import Traffic
from ..api.globalbw import global_bandwidth
from ..api.simulation import simulate, time_traffic
from ..core.errors import ConfigError
from ..core.network import Network
from ..core.units import parse_size
from ..topology import checks as topology_checks
from ..topology.graph import split_file_options

__all__ = ["TABLE_COLUMNS", "bandwidth_table", "read_table", "shift_alltoall"]

#: columns of :func:`bandwidth_table`
TABLE_COLUMNS = ["cluster", "name", "topology", "nodes", "bandwidth_Bps", "injection_Bps",
                 "paper_global", "global", "global_shift", "paper_allreduce", "allreduce",
                 "allreduce_algorithm", "bottleneck", "method", "note"]

_NETWORK = set(Network.field_names())
_TEXT = {"cluster", "name", "note", "topology", "ecmp", "allreduce_ecmp", "allreduce",
         "injection", "nic"}
_NUMBER = {"paper_global", "paper_allreduce"}
_KEYS = _NETWORK | _TEXT | _NUMBER | {"shift", "allreduce_sizes"}


def _check_row(where: str, row: dict) -> dict:
    unknown = sorted(set(row) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: "
                          f"{', '.join(sorted(_KEYS))}")
    if "topology" not in row:
        raise ConfigError(f"{where}: no topology")
    for k in _NUMBER & set(row):
        if isinstance(row[k], bool) or not isinstance(row[k], (int, float)):
            raise ConfigError(f"{where}.{k}: {row[k]!r} is not a number (a fraction, "
                              "1.0 = 100 %)")
    for k in _TEXT & set(row):
        if not isinstance(row[k], str):
            raise ConfigError(f"{where}.{k}: {row[k]!r} is not a string")
    if not isinstance(row.get("shift", False), bool):
        raise ConfigError(f"{where}.shift: {row['shift']!r} is not true or false")
    if row.get("shift") and "nic" in row:
        raise ConfigError(f"{where}: shift = true with a nic: the shift steps are timed on "
                          "the topology, which has no NIC links")
    sizes = row.get("allreduce_sizes", ["1GiB", "2GiB"])
    if not isinstance(sizes, list) or len(sizes) != 2:
        raise ConfigError(f"{where}.allreduce_sizes: {sizes!r}; expected two sizes")
    got = [parse_size(s, f"{where}.allreduce_sizes") for s in sizes]
    if got[0] == got[1]:
        raise ConfigError(f"{where}.allreduce_sizes: two equal sizes give no slope")
    return {**row, "allreduce_sizes": got}


def read_table(path) -> tuple[str, list[dict]]:
    """``(description, rows)`` of a table file, each row its defaults merged
    in and checked (ConfigError naming the place)."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_bytes().decode("utf-8-sig"))   # (a byte-order mark)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); expected a TOML table "
                          "file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    rows = doc.pop("rows", None)
    description = doc.pop("description", "")
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise ConfigError(f"{path}: expected [[rows]] tables, one per row")
    return description, [_check_row(f"{path}: rows[{i}]", _beside(path, {**doc, **r}))
                         for i, r in enumerate(rows)]


def _beside(table: Path, row: dict) -> dict:
    """``row`` with a ``graph:`` file that is relative read beside the table
    file (as a sweep file's files are), else, where it is only there, in the
    current directory (the tables written before)."""
    spec = row.get("topology")
    if not (isinstance(spec, str) and spec.startswith("graph:")):
        return row
    file, opts = split_file_options(spec[len("graph:"):])
    there = table.parent / file.strip()
    if Path(file.strip()).is_absolute() or not there.is_file():
        return row
    return {**row, "topology": "graph:" + ",".join([os.path.normpath(there), *opts])}


def _network(row: dict) -> Network:
    return Network(**{k: v for k, v in row.items() if k in _NETWORK})


def shift_alltoall(topology, *, ecmp: str = "split", network: Network) -> float:
    """Bytes per second each endpoint sends when an all-to-all runs as
    ``p − 1`` bulk-synchronous shift permutations (rank ``j`` sends to
    ``j + i mod p`` in step ``i``), every step solved max-min, latencies
    left out (the rate is that of large messages)."""
    topo = topology_checks.topology(topology)
    p = topo.num_endpoints
    j = np.arange(p, dtype=np.int64)
    one = np.ones(p)
    net = Network.from_si(**{**network.as_dict(), "link_latency": 0.0, "hop_latency": 0.0,
                             "alpha": 0.0})
    total = 0.0
    # steps run one after another, without latencies: the time is the sum of the
    # chunks' times (a chunk holds ~2**22 flows)
    chunk = max(1, (1 << 22) // p)
    for first in range(1, p, chunk):
        steps = [Traffic(j, (j + i) % p, one) for i in range(first, min(p, first + chunk))]
        total += float(time_traffic(topo, steps, ecmp=ecmp, network=net)["time_s"].iloc[0])
    return (p - 1) / total


def _allreduce(row: dict, net: Network, injection: float) -> float:
    small, large = row["allreduce_sizes"]
    df = simulate(row["topology"], row["allreduce"], [small, large],
                  ecmp=row.get("allreduce_ecmp", row.get("ecmp", "split")), network=net)
    if df["variant"].nunique() != 1:
        raise ConfigError(f"allreduce: {row['allreduce']!r} picks a variant per size; fix "
                          "its variant so the slope is one algorithm's")
    t = df.sort_values("size_bytes")["time_s"].to_numpy()
    return (large - small) / (t[1] - t[0]) / (injection / 2)


def bandwidth_table(path, progress=None) -> pd.DataFrame:
    """The table of a table file (:data:`TABLE_COLUMNS`), one row per
    ``[[rows]]``; ``progress(text)`` is told each row as it starts."""
    _, rows = read_table(path)
    out = []
    for row in rows:
        if progress is not None:
            progress(f"{row.get('cluster', '')} {row.get('name', '')} {row['topology']}")
        net = _network(row)
        ecmp = row.get("ecmp", "split")
        g = global_bandwidth(row["topology"], ecmp=ecmp, injection=row.get("injection"),
                             nic=row.get("nic"), network=net).iloc[0]
        inj = float(g["injection_Bps"])
        shift = shift_alltoall(row["topology"], ecmp=ecmp, network=net) / inj \
            if row.get("shift") else np.nan
        ared = _allreduce(row, net, inj) if "allreduce" in row else np.nan
        out.append({"cluster": row.get("cluster", ""), "name": row.get("name", ""),
                    "topology": g["topology"], "nodes": int(g["nodes"]),
                    "bandwidth_Bps": net.bandwidth, "injection_Bps": inj,
                    "paper_global": row.get("paper_global", np.nan),
                    "global": float(g["global_bw"]), "global_shift": shift,
                    "paper_allreduce": row.get("paper_allreduce", np.nan), "allreduce": ared,
                    "allreduce_algorithm": row.get("allreduce", ""),
                    "bottleneck": g["bottleneck"], "method": g["method"],
                    "note": row.get("note", "")})
    return pd.DataFrame(out, columns=TABLE_COLUMNS)
