"""Measured allreduce times for :mod:`flowemu.fit`: CSV files (columns
``algorithm, ranks, size, time``), the stdout of nccl-tests
``all_reduce_perf`` (detected by its header) and DataFrames, read into one
table with each row's source and line, every malformed entry refused with a
one-line ConfigError naming the file, the line and the field."""

from __future__ import annotations

import csv
import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import ConfigError, show
from ..core.units import parse_size, parse_time
from .genmodel import plan_row

__all__ = ["CSV_COLUMNS", "is_nccl_text", "read_measurements"]

#: CSV columns a measurement file must have
CSV_COLUMNS = ("algorithm", "ranks", "size", "time")


def _where(path: str, line: int | None) -> str:
    return f"{path}:{line}" if line is not None else path


def _parse_time(raw: str, where: str) -> float:
    text = raw.strip()
    try:
        value = float(text)
    except ValueError:
        try:
            value = parse_time(text, "time")
        except ConfigError:
            if text.startswith("-"):   # ('-1ms' is a time, a negative one)
                raise ConfigError(f"{where}: time: {text!r} is not allowed; expected a finite "
                                  "time > 0") from None
            raise ConfigError(f"{where}: time: {text!r} is not a number; expected seconds "
                              "(e.g. 0.0123) or a time with its unit (e.g. 12.3ms)") from None
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{where}: time: {text!r} is not allowed; expected a finite time "
                          "> 0")
    return value


def _parse_size(raw: str, where: str) -> int:
    text = raw.strip()
    if text.startswith("-"):
        raise ConfigError(f"{where}: size: {text!r} is negative; expected a positive number "
                          "of bytes (e.g. 4096 or 4KiB)")
    try:
        return parse_size(text, "size")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _parse_ranks(raw, where: str) -> int:
    if isinstance(raw, (float, np.floating)) and float(raw).is_integer():
        raw = int(raw)   # a pandas column of ranks read as floats
    text = str(raw).strip()
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < 1:
        raise ConfigError(f"{where}: ranks: {text!r} is not allowed; expected an integer >= 1")
    return value


def _check_algorithm(name: str, ranks: int, where: str) -> str:
    text = name.strip()
    try:
        plan_row(text, ranks)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return text


# the column header; "cputime" with -C, a trailing "timestamp" with timestamps on
_NCCL_HEADER = re.compile(r"^#\s*size\s+count\s+type\s+redop\b.*\b(?:cpu)?time\b.*\balgbw\b"
                          r".*\bbusbw\b")
# "#  Rank  0 Group  0 Pid ..." (older versions: "#   Rank  0 Pid ...")
_NCCL_RANK = re.compile(r"^#\s*Rank\s+(\d+)\s+(?:Group|Pid)\b")
_NCCL_START = re.compile(r"^#\s*nThread\b")


def is_nccl_text(text: str) -> bool:
    """Whether ``text`` holds an nccl-tests table (its column header)."""
    return any(_NCCL_HEADER.match(line.strip()) for line in text.splitlines())


def _read_nccl(text: str, path: str, algorithm: str, ranks: int | None) -> list[dict]:
    """Rows of the nccl-tests output ``text``: one per data line of each run
    (a run starts at ``# nThread``; its ranks are its ``# Rank`` lines)."""
    rows: list[dict] = []
    header: list[str] | None = None
    run_ranks: set[int] = set()
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if _NCCL_START.match(line):
            header, run_ranks = None, set()
            continue
        m = _NCCL_RANK.match(line)
        if m:
            run_ranks.add(int(m.group(1)))
            continue
        if _NCCL_HEADER.match(line):
            header = line.lstrip("#").split()
            continue
        if line.startswith("#") or header is None:
            continue   # comments, the units line, summaries; text before any table
        tokens = line.split()
        where = _where(path, lineno)
        # a timestamp ("2025-01-31 12:00:00") is two tokens under one header word
        if len(tokens) < len(header) or not (tokens[0].isascii() and tokens[0].isdigit()):
            raise ConfigError(f"{where}: cannot read this nccl-tests line ({len(tokens)} "
                              f"fields, expected {len(header)} as in the header: "
                              f"{' '.join(header)}): {line[:60]!r}")
        p = ranks if ranks is not None else (len(run_ranks) or None)
        if p is None:
            raise ConfigError(f"{where}: ranks: this nccl-tests run lists no '#  Rank N ...' "
                              "device lines; give the number of ranks (--ranks)")
        if ranks is not None and run_ranks and len(run_ranks) != ranks:
            raise ConfigError(f"{where}: ranks: the run lists {len(run_ranks)} ranks, "
                              f"--ranks says {ranks}; drop --ranks or fix it")
        size = _parse_size(tokens[header.index("size")], where)
        t_col = next(i for i, h in enumerate(header) if h in ("time", "cputime"))
        t_us = tokens[t_col]   # the first time column: out of place
        try:
            t = float(t_us)
        except ValueError:
            raise ConfigError(f"{where}: time: {t_us!r} is not a number (microseconds)") \
                from None
        if not math.isfinite(t) or t <= 0:
            raise ConfigError(f"{where}: time: {t_us!r} is not allowed; expected a time "
                              "> 0 (microseconds)")
        rows.append({"source": path, "line": lineno,
                     "algorithm": _check_algorithm(algorithm, p, where), "ranks": p,
                     "size": size, "time": t * 1e-6})
    if not rows:
        raise ConfigError(f"{path}: no measurements: the nccl-tests header is there but no "
                          "data line follows it")
    return rows


def _read_csv(text: str, path: str) -> list[dict]:
    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), start=1)
             if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise ConfigError(f"{path}: empty file; expected a CSV header "
                          f"{','.join(CSV_COLUMNS)} and rows, or nccl-tests all_reduce_perf "
                          "output")
    # line by line: a stray quote spoils its own line, not the rest of the file
    table = [next(csv.reader([ln]), []) for _, ln in lines]
    head = [h.strip().lower() for h in table[0]]
    missing = [c for c in CSV_COLUMNS if c not in head]
    if missing:
        raise ConfigError(f"{_where(path, lines[0][0])}: missing column {missing[0]!r}; "
                          f"expected the columns {', '.join(CSV_COLUMNS)} (header: "
                          f"{','.join(h for h in head)[:60]})")
    idx = {c: head.index(c) for c in CSV_COLUMNS}
    rows = []
    for (lineno, _), rec in zip(lines[1:], table[1:], strict=True):   # one record a line
        where = _where(path, lineno)
        if len(rec) < len(head):
            raise ConfigError(f"{where}: {len(rec)} fields, expected {len(head)} as in the "
                              "header")
        ranks = _parse_ranks(rec[idx["ranks"]], where)
        rows.append({"source": path, "line": lineno,
                     "algorithm": _check_algorithm(rec[idx["algorithm"]], ranks, where),
                     "ranks": ranks, "size": _parse_size(rec[idx["size"]], where),
                     "time": _parse_time(rec[idx["time"]], where)})
    if not rows:
        raise ConfigError(f"{path}: no measurements: the header has no rows under it")
    return rows


def _read_frame(df: pd.DataFrame) -> list[dict]:
    missing = [c for c in CSV_COLUMNS if c not in df.columns]
    if missing:
        raise ConfigError(f"data: missing column {missing[0]!r}; expected the columns "
                          f"{', '.join(CSV_COLUMNS)}")
    rows = []
    for i, rec in enumerate(df[list(CSV_COLUMNS)].itertuples(index=False)):
        where = f"data row {i}"
        ranks = _parse_ranks(rec.ranks, where)
        size = rec.size if isinstance(rec.size, str) else (
            int(rec.size) if float(rec.size).is_integer() else rec.size)
        rows.append({"source": "data", "line": i,
                     "algorithm": _check_algorithm(str(rec.algorithm), ranks, where),
                     "ranks": ranks, "size": _parse_size(str(size), where),
                     "time": _parse_time(str(rec.time), where)})
    return rows


def read_measurements(data, *, algorithm: str | None = None, ranks: int | None = None) \
        -> pd.DataFrame:
    """Measurements from files (CSV or nccl-tests text, detected per file)
    or a DataFrame, as one table ``source, line, algorithm, ranks, size,
    time`` (bytes, seconds).

    ``algorithm`` (default ring) and ``ranks`` apply to nccl-tests text only
    (the CSV names both in its rows): given explicitly when no nccl-tests
    text is among ``data``, they are refused rather than silently ignored.
    """
    if ranks is not None and (isinstance(ranks, bool) or not isinstance(ranks, int)
                              or ranks < 1):
        raise ConfigError(f"ranks: {show(ranks)} is not allowed; expected an integer >= 1")
    if algorithm is not None and not isinstance(algorithm, str):
        raise ConfigError(f"algorithm: {show(algorithm)} is not allowed; expected a name "
                          "such as ring")
    nccl_only = [name for name, v in (("algorithm", algorithm), ("ranks", ranks))
                 if v is not None]
    nccl_read = False
    if isinstance(data, pd.DataFrame):
        rows = _read_frame(data)
    else:
        if not isinstance(data, (str, os.PathLike, list, tuple)):
            raise ConfigError(f"data: {show(data, 40)} is not allowed; expected a file path, "
                              "a list of them or a DataFrame")
        items = [data] if isinstance(data, (str, os.PathLike)) else list(data)
        if not items:
            raise ConfigError("data: no files given; expected CSV or nccl-tests output files")
        rows = []
        for item in items:
            if not isinstance(item, (str, os.PathLike)):
                raise ConfigError(f"data: {show(item)} is not allowed; expected a file path "
                                  "or a DataFrame")
            path = os.fspath(item)
            try:
                text = Path(path).read_text(encoding="utf-8-sig")   # (a byte-order mark)
            except FileNotFoundError:
                raise ConfigError(f"{path}: file not found") from None
            except IsADirectoryError:
                raise ConfigError(f"{path}: is a directory; expected a CSV or nccl-tests "
                                  "output file") from None
            except UnicodeDecodeError:
                raise ConfigError(f"{path}: not a text file; expected CSV or nccl-tests "
                                  "output") from None
            except OSError as exc:
                raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
            if is_nccl_text(text):
                rows += _read_nccl(text, path, algorithm or "ring", ranks)
                nccl_read = True
            elif text.lstrip().startswith("#") and "nThread" in text:
                raise ConfigError(f"{path}: looks like nccl-tests output but has no "
                                  "'#  size count type redop ... time algbw busbw' header")
            else:
                rows += _read_csv(text, path)
    if nccl_only and not nccl_read:
        verb = "applies" if len(nccl_only) == 1 else "apply"
        raise ConfigError(f"{', '.join(nccl_only)}: {verb} only to nccl-tests output, and no "
                          "nccl-tests output is among the data (CSV rows and DataFrames name "
                          f"their algorithm and ranks); drop {'it' if verb == 'applies' else 'them'}")
    return pd.DataFrame(rows, columns=["source", "line", *CSV_COLUMNS])
