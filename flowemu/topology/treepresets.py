"""The GenTree presets of the ``tree:`` family (genmodel-gentree.txt §5.3,
Fig. 11, Table 5): their structures and per-level parameters, which
:class:`~flowemu.topology.tree.Tree` checks a preset against and
:func:`flowemu.topology.treespec.preset_tree` builds.

``tree:SS24``, ``SS32`` (one switch, 24 / 32 servers), ``SYM384`` (16 x 24),
``SYM512`` (16 x 32), ``ASY384`` (8 x 32 + 8 x 16), ``CDC384`` (DC0: a root
and 8 middle switches of 32 servers; DC1: a root and 8 of 16; roots joined by
one link), with Table 5's per-tier parameters.

Our reading of Table 5 (numbers kept exactly as printed, in
:data:`flowemu.core.presets.GENTREE_TABLE5`):

* Units are those of the paper's simulations, whose data sizes are counted
  in 4-byte floats (§3 "1 float occupies 4 bytes"; Tables 6-7 "data size
  (float)"): α in seconds, β seconds per float, ε seconds per float per flow
  above w_t, γ and δ seconds per float. Checked against Table 7: on SS24 the
  Ring-Allreduce time grows by 1.34e-8 s per float between 1e7 and 1e8
  floats, which is 2(N−1)/N·β + (N−1)/N·γ + 3(N−1)/N·δ with β = 6.40e-9 per
  float (Table 2); per byte it would be 4x too large.
* A row describes a tier of links: "Middle SW" the links from the lowest
  switches down to the servers (on SS24/SS32 the single switch's server
  links — the Table 7 slope above needs β = 6.40e-9 there), "Root SW" the
  links from the root to the middle switches, "Cross DC" the link joining
  the two roots. Each tier's β becomes the absolute bandwidth 4/β bytes/s
  (6.40e-9 → 5 Gb/s, 6.40e-10 → 50 Gb/s), its α the absolute latency of one
  link of that tier, its ε/4 the per-byte incast slope and w_t the threshold.
* The "Server" row holds host terms: its α is the per-message overhead (on
  SS24 a step costs ≈ α + 2 links·α = 3α in Table 7: 20 ms for Co-located PS),
  γ and δ the reduction and memory-access costs. A topology cannot set them;
  they are in :attr:`Tree.genmodel <flowemu.topology.tree.Tree.genmodel>`
  (printed values and per-byte values, :func:`preset_genmodel`) for the
  caller's :class:`~flowemu.core.network.Network` and for the GenModel
  backend.
"""

from __future__ import annotations

from ..core.presets import FLOAT_BYTES, GENTREE_TABLE5
from .treeshape import parse_structure

#: preset name -> (structure, Table 5 tiers of its levels, top first)
GENTREE_PRESETS = {
    "SS24": ("24", ("Middle SW",)),
    "SS32": ("32", ("Middle SW",)),
    "SYM384": ("16x24", ("Root SW", "Middle SW")),
    "SYM512": ("16x32", ("Root SW", "Middle SW")),
    "ASY384": ("8x32+8x16", ("Root SW", "Middle SW")),
    "CDC384": ("dc(8x32)+dc(8x16)", ("Cross DC", "Root SW", "Middle SW")),
}


def preset_params(key: str) -> dict:
    """Constructor arguments of a preset, every per-level value spelt out."""
    structure, tiers = GENTREE_PRESETS[key]
    rows = [GENTREE_TABLE5[t] for t in tiers]
    ones = (1,) * len(rows)
    return {"sites": parse_structure(structure), "uplinks": ones,
            "bandwidth": tuple(FLOAT_BYTES / r["beta"] for r in rows),
            "capacity_scale": (1.0,) * len(rows),
            "latency": tuple(r["alpha"] for r in rows),
            "latency_scale": (1.0,) * len(rows),
            "incast_slope": tuple(r["eps"] / FLOAT_BYTES for r in rows),
            "incast_threshold": tuple(float(r["wt"]) for r in rows)}


def preset_genmodel(key: str) -> dict:
    """The GenModel terms of preset ``key``: Table 5 as printed (``table5``,
    per float), the tiers of its levels (top first), and the server terms per
    byte (``alpha`` s, ``gamma`` and ``delta`` s/byte) for a Network."""
    tiers = GENTREE_PRESETS[key][1]
    server = GENTREE_TABLE5["Server"]
    return {"table5": {k: dict(v) for k, v in GENTREE_TABLE5.items()},
            "units": "alpha s; beta, gamma, delta s per float; eps s per float per flow "
                     "above wt; 1 float = 4 bytes",
            "level_tiers": list(tiers),
            "host": {"alpha": server["alpha"], "gamma": server["gamma"] / FLOAT_BYTES,
                     "delta": server["delta"] / FLOAT_BYTES}}
