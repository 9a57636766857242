"""Rank placement: which endpoint each rank runs on.

``linear`` (the default) puts rank r on endpoint r. ``random:SEED`` draws
the ranks' endpoints uniformly without replacement from all the topology's
endpoints (a fragmented allocation: on a torus the ranks keep their logical
grid of rank ids but sit scattered over the machine). ``FILE`` (or
``file:FILE``) reads one endpoint id per rank from a text file: integers
separated by whitespace or commas, ``#`` starts a comment; the file must list
exactly one distinct endpoint per rank.

The placement's text is reported in every result row (column ``placement``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from .errors import ConfigError, show

FORMS = "\"linear\", \"random:SEED\" (SEED an integer >= 0) or a file of endpoint ids " \
        "(\"FILE\" or \"file:FILE\", one per rank)"


@dataclass(frozen=True)
class Placement:
    """A parsed placement.

    Attributes
    ----------
    kind : {"linear", "random", "file"}
    seed : int
        Seed of ``random`` (0 otherwise).
    path : str
        File of ``file`` ("" otherwise).
    """

    kind: str = "linear"
    seed: int = 0
    path: str = ""

    @property
    def text(self) -> str:
        """The canonical text: ``linear``, ``random:7`` or the file's path."""
        if self.kind == "random":
            return f"random:{self.seed}"
        return self.path if self.kind == "file" else "linear"

    def ranks(self, topology) -> int:
        """The ranks this placement holds when none are given: a file's
        endpoint ids, else every endpoint of ``topology``."""
        return len(_read_ids(self.path)) if self.kind == "file" else topology.num_endpoints

    def mapping(self, p: int, topology) -> np.ndarray | None:
        """Endpoint of each of ``p`` ranks, int32[p] (None for ``linear``,
        which the engine treats as rank r on endpoint r).

        Raises
        ------
        ConfigError
            More ranks than endpoints, or a file that does not give exactly
            ``p`` distinct endpoint ids of ``topology``.
        """
        n = topology.num_endpoints
        if p > n:
            raise ConfigError(f"placement {self.text!r}: {p} ranks do not fit on "
                              f"{topology.spec} ({n} endpoints)")
        if self.kind == "linear":
            return None
        if self.kind == "random":
            rng = np.random.default_rng(self.seed)
            return rng.permutation(n)[:p].astype(np.int32)
        ids = _read_ids(self.path)
        if len(ids) != p:
            raise ConfigError(f"placement {self.path!r}: the file lists {len(ids)} endpoint "
                              f"ids; expected exactly one per rank ({p})")
        bad = np.flatnonzero((ids < 0) | (ids >= n))
        if len(bad):
            raise ConfigError(f"placement {self.path!r}: entry {int(bad[0])} is endpoint "
                              f"{int(ids[bad[0]])}; {topology.spec} has endpoints 0..{n - 1}")
        uniq, counts = np.unique(ids, return_counts=True)
        if len(uniq) != len(ids):
            e = int(uniq[np.argmax(counts > 1)])
            where = np.flatnonzero(ids == e)[:2]
            raise ConfigError(f"placement {self.path!r}: ranks {int(where[0])} and "
                              f"{int(where[1])} are both placed on endpoint {e}; each rank "
                              "needs its own endpoint")
        return ids.astype(np.int32)


_INT = re.compile(r"[+]?\d+")


def _read_ids(path: str) -> np.ndarray:
    try:
        with open(path, encoding="utf-8-sig") as fh:   # (a byte-order mark, as editors write)
            lines = fh.read().splitlines()
    except FileNotFoundError:
        raise ConfigError(f"placement {path!r}: no such file; expected {FORMS}") from None
    except IsADirectoryError:
        raise ConfigError(f"placement {path!r}: is a directory, not a file of endpoint "
                          "ids") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise ConfigError(f"placement {path!r}: cannot read it ({reason})") from None
    out: list[int] = []
    for no, line in enumerate(lines, 1):
        for tok in line.split("#", 1)[0].replace(",", " ").split():
            if not _INT.fullmatch(tok):
                raise ConfigError(f"placement {path!r} line {no}: {tok!r} is not an endpoint "
                                  "id (an integer >= 0)")
            out.append(int(tok))
    return np.array(out, dtype=np.int64)


def parse_placement(raw, forms: str = FORMS) -> Placement:
    """``"linear"``, ``"random:SEED"``, ``"file:PATH"`` or ``"PATH"`` (or a
    :class:`Placement`) -> :class:`Placement`; ConfigError otherwise, saying
    ``expected <forms>`` (a caller that takes more forms passes them all)."""
    if isinstance(raw, Placement):
        return raw
    if raw is None:
        return Placement()
    if isinstance(raw, os.PathLike):   # (a placement file as a pathlib.Path)
        raw = os.fspath(raw)
    if not isinstance(raw, str):
        raise ConfigError(f"placement: {show(raw)} is not allowed; expected {forms}")
    text = str(raw).strip()
    if not text:
        raise ConfigError(f"placement: the value is empty; expected {forms}")
    if text == "linear":
        return Placement()
    if text.startswith("random:") or text == "random":
        seed = text.partition(":")[2].strip()
        if not seed.isascii() or not seed.isdigit():
            raise ConfigError(f"placement {text!r}: the seed {seed!r} is not an integer >= 0; "
                              "expected random:SEED, e.g. random:1")
        return Placement("random", seed=int(seed))
    path = text[5:].strip() if text.startswith("file:") else text
    if not path:
        raise ConfigError(f"placement {text!r}: no file given; expected {forms}")
    if not os.path.isfile(path):
        reason = "is a directory, not a file" if os.path.isdir(path) else "no such file"
        raise ConfigError(f"placement {path!r}: {reason}; expected {forms}")
    return Placement("file", path=path)
