"""2-D HammingMesh (Hoefler et al., SC'22, §III; Swing paper §5.4.1).

``x × y`` boards of ``a × b`` accelerators. Node ``(X·a + i, Y·b + j)`` is
accelerator ``(i, j)`` of board ``(X, Y)``; node ids are row-major over that
global ``(a·x) × (b·y)`` grid, which is the grid Swing, bucket and multi-port
rings use. One plane is modelled (the paper simulates one plane of
HammingMesh too, §III-D).

* **Boards**: a 2-D mesh of PCB traces on each board (no wrap-around), of
  ``board`` times the network bandwidth and ``board_latency`` times its link
  latency. Defaults: the same 400 Gb/s as a cable and 1 ns against 20 ns
  (bandwidth 1, latency 0.05), HammingMesh paper Table III.
* **Fat trees**: every line of accelerators (a global row or column) has one
  fat tree joining the ports at the board edges on that line: the west and
  east ports of the ``y`` boards for a row (``2y`` ports; a 1-wide board has
  both ports on its one accelerator), the north and south ports of the ``x``
  boards for a column. Cables have the network's bandwidth and latency.

Level of detail of the fat trees: each is one non-blocking switch (a
crossbar). This is exact, not an approximation, for the paper's Hx2Mesh and
Hx4Mesh of 4,096 nodes, whose trees have 64 and 32 ports and are single
64-port switches (§III: "if the boards can be connected with a single
64-port switch, we use that"). For larger trees it keeps the rates: with
the fluid split over a non-blocking two-level tree, the load of an uplink is
the traffic of its leaf switch's ports divided by its uplinks, never more
than a port carries, so the interior links never bind before the ports and
max-min rates equal the crossbar's. What it leaves out is the latency of the
extra tree levels (two more cables a level).

Vertices: the ``N = a·b·x·y`` nodes, then the switches of the columns (the
lines along dimension 0; column ``c``: ``N + c``), then those of the rows
(row ``r``: ``N + b·y + r``). Minimal
paths count cables; a move between boards crosses a switch (two cables), and
a node on a board edge may also reach the opposite edge of its own board
through the switch, as the paper's §IV-C routing allows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.budget import reserve_topology
from ..core.errors import ConfigError, show
from ..kernels.gridroute import KIND_BOARDS
from ._grids import GridTopology, count_links
from .common import MAX_ENDPOINTS as MAX_NODES
from .common import MAX_LINKS, fmt, is_int, is_number, parse_int, parse_options, parse_positive

__all__ = ["HammingMesh", "parse_hammingmesh", "parse_hx2mesh", "parse_hx4mesh"]

#: board link latency as a multiple of a cable's: 1 ns vs 20 ns (paper Table III)
BOARD_LATENCY = 0.05


@dataclass(frozen=True)
class HammingMesh(GridTopology):
    """A 2-D HammingMesh of ``boards`` (``x``, ``y``) boards of ``board``
    (``a``, ``b``) nodes.

    Parameters
    ----------
    board : (int, int)
        ``(a, b)``, nodes per board along each dimension, each ``>= 1``.
    boards : (int, int)
        ``(x, y)``, boards along each dimension, each ``>= 1``; every global
        dimension ``a·x``, ``b·y`` must be ``>= 2``.
    board_bw : float
        Bandwidth of a board (PCB) link as a multiple of the network
        bandwidth (``> 0``, default 1).
    board_latency : float
        Latency of a board link as a multiple of the network link latency
        (``>= 0``, default 0.05).

    Attributes
    ----------
    spec : str
        e.g. ``"hammingmesh:2x2,32x32"`` (defaults omitted).
    grid : (int, int)
        ``(a·x, b·y)``.
    num_endpoints : int
        ``a·b·x·y``.
    num_nodes : int
        Endpoints plus ``a·x + b·y`` switches.
    link_capacity_scale : float64[L]
        ``board_bw`` on board links, 1 on cables.
    link_latency_scale : float64[L] or None
        ``board_latency`` on board links, 1 on cables.
    """
    # peak and held bytes a link (130 and 48 measured on hammingmesh:4x4,256x256), with a margin
    build_link_bytes = 156
    held_link_bytes = 58

    board: tuple[int, int]
    boards: tuple[int, int]
    board_bw: float = 1.0
    board_latency: float = BOARD_LATENCY

    def __post_init__(self):
        pairs = {}
        for name in ("board", "boards"):
            v = getattr(self, name)
            if not isinstance(v, (tuple, list, np.ndarray)) or len(v) != 2 \
                    or not all(is_int(d) and d >= 1 for d in v):
                raise ConfigError(f"{name}: {show(v)} is not allowed; expected two integers "
                                  ">= 1, e.g. (2, 2)")
            pairs[name] = (int(v[0]), int(v[1]))
        (a, b), (x, y) = pairs["board"], pairs["boards"]
        if a * x < 2 or b * y < 2:
            raise ConfigError(f"board {a}x{b} with boards {x}x{y} gives a {a * x}x{b * y} node "
                              "grid; every dimension needs at least 2 nodes")
        if not is_number(self.board_bw) or not np.isfinite(self.board_bw) \
                or self.board_bw <= 0:
            raise ConfigError(f"board_bw: {show(self.board_bw)} is not allowed; expected a "
                              "finite number > 0 (board link bandwidth as a multiple of the "
                              "network's)")
        if not is_number(self.board_latency) or not np.isfinite(self.board_latency) \
                or self.board_latency < 0:
            raise ConfigError(f"board_latency: {show(self.board_latency)} is not allowed; "
                              "expected a finite number >= 0 (board link latency as a multiple "
                              "of the network's link latency)")
        grid = (a * x, b * y)
        nodes = grid[0] * grid[1]
        if nodes > MAX_NODES:
            raise ConfigError(f"board {a}x{b} with boards {x}x{y} has {nodes} nodes; at most "
                              f"{MAX_NODES} (2**24) are allowed")
        kinds = [KIND_BOARDS, KIND_BOARDS]
        links = count_links(grid, kinds, [a, b])
        if links > MAX_LINKS:
            raise ConfigError(f"board {a}x{b} with boards {x}x{y} has {links} links; at most "
                              f"{MAX_LINKS} (2**26) are allowed")
        reserve_topology(f"hammingmesh:{a}x{b},{x}x{y}", links, nodes + 2 * (x * a + y * b),
                         self.build_link_bytes)
        set_ = object.__setattr__
        set_(self, "board", (a, b))
        set_(self, "boards", (x, y))
        set_(self, "board_bw", float(self.board_bw))
        set_(self, "board_latency", float(self.board_latency))
        opts = ([f"board_bw={fmt(self.board_bw)}"] if self.board_bw != 1.0 else []) \
            + ([f"board_latency={fmt(self.board_latency)}"]
               if self.board_latency != BOARD_LATENCY else [])
        set_(self, "spec", ",".join([f"hammingmesh:{a}x{b},{x}x{y}"] + opts))
        bw, lat = [self.board_bw] * 2, [self.board_latency] * 2
        self._build(grid, kinds, [a, b], bw, [1.0, 1.0], lat, [1.0, 1.0])

    def __reduce__(self):
        # Ship only the parameters to worker processes; the arrays are rebuilt.
        return (type(self), (self.board, self.boards, self.board_bw, self.board_latency))

    @property
    def num_switches(self) -> int:
        """One fat tree (switch) per global row and per global column."""
        return self.num_nodes - self.num_endpoints

    def endpoint_groups(self) -> tuple[np.ndarray, str]:
        """Boards (node ``(X·a + i, Y·b + j)``, row-major, on board ``(X, Y)``)."""
        (a, b), (_, y) = self.board, self.boards
        node = np.arange(self.num_endpoints)
        row, col = np.divmod(node, y * b)
        return (row // a) * y + col // b, "board"

    def describe(self) -> dict:
        """Plain-data description: family, board, boards, grid, board_bw,
        board_latency, nodes, switches, links."""
        return {"family": "hammingmesh", "board": list(self.board),
                "boards": list(self.boards), "grid": list(self.grid),
                "board_bw": self.board_bw, "board_latency": self.board_latency,
                "nodes": self.num_endpoints, "switches": self.num_switches,
                "links": self.num_links}


_EXAMPLE = "e.g. hammingmesh:2x2,32x32 (Hx2Mesh), hammingmesh:4x4,16x16 (Hx4Mesh)"
_ACCEPTED = "board_bw=NUMBER > 0, board_latency=NUMBER >= 0"


def _pair(name: str, text: str, what: str) -> tuple[int, int]:
    parts = text.split("x")
    if len(parts) != 2:
        raise ConfigError(f"{name} {text.strip()!r} has {len(parts)} field(s); expected "
                          f"{what} ({_EXAMPLE})")
    return tuple(parse_int(f"{name} {side}", p, _EXAMPLE)   # type: ignore[return-value]
                 for side, p in zip(("rows", "columns"), parts, strict=True))


def _latency(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not (np.isfinite(v) and v >= 0):
        raise ConfigError(f"board_latency is {text.strip()!r}; expected a number >= 0 (board "
                          "link latency as a multiple of the network's link latency, e.g. "
                          "board_latency=0.05; set the link latency itself with "
                          "--link-latency)")
    return v


def _options(opts: list[str]) -> dict:
    return parse_options(opts, {
        "board_bw": lambda v: parse_positive("board_bw", v, "board link bandwidth as a "
                                             "multiple of the network's, e.g. board_bw=2"),
        "board_latency": _latency}, _ACCEPTED)


def parse_hammingmesh(params: str) -> HammingMesh:
    """``"AxB,XxY[,board_bw=B][,board_latency=F]"`` -> :class:`HammingMesh`."""
    parts = [part.strip() for part in params.split(",")]
    if not parts[0]:
        raise ConfigError(f"no shape given; expected AxB,XxY (board size, then boards; "
                          f"{_EXAMPLE})")
    if len(parts) < 2 or "=" in parts[1]:
        raise ConfigError(f"expected AxB,XxY (board size, then boards; {_EXAMPLE}), got only "
                          f"{parts[0]!r}")
    board = _pair("board", parts[0], "AxB, nodes per board")
    boards = _pair("boards", parts[1], "XxY, boards per dimension")
    return HammingMesh(board, boards, **_options(parts[2:]))


def _preset(size: int):
    def parse(params: str) -> HammingMesh:
        parts = [part.strip() for part in params.split(",")]
        if not parts[0]:
            raise ConfigError(f"no boards given; expected XxY (boards of {size}x{size}, e.g. "
                              f"hx{size}mesh:{64 // size}x{64 // size})")
        boards = _pair("boards", parts[0], "XxY, boards per dimension")
        return HammingMesh((size, size), boards, **_options(parts[1:]))
    parse.__doc__ = (f'``"XxY[,options]"`` -> the Hx{size}Mesh ``hammingmesh:{size}x{size},'
                     'XxY[,options]``.')
    return parse


parse_hx2mesh = _preset(2)
parse_hx4mesh = _preset(4)
