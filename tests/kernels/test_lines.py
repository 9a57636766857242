"""flowemu.kernels.lines: a 1-D step repeated on every line of a dimension."""

import numpy as np

from flowemu.kernels.lines import expand_nodes, expand_shares


def test_expand_nodes_line_major_at_offset():
    out = np.full(8, -1, np.int32)
    expand_nodes(np.array([0, 10], np.int32), 2, np.array([0, 1, 3], np.int64), out, 1)
    assert out.tolist() == [-1, 0, 2, 6, 10, 12, 16, -1]


def test_expand_shares_line_major_at_offset():
    out = np.zeros(5)
    expand_shares(np.array([0.5, 0.25]), np.array([1, 3], np.int64), out, 1)
    assert out.tolist() == [0.0, 0.5, 1.5, 0.25, 0.75]


def test_expand_matches_numpy_broadcast():
    rng = np.random.default_rng(0)
    bases = rng.integers(0, 1000, 50).astype(np.int32)
    coord = rng.integers(0, 16, 7)
    unit = rng.uniform(0, 1, 50)
    count = rng.integers(1, 9, 7)
    nodes = np.empty(350, np.int32)
    shares = np.empty(350)
    expand_nodes(bases, 64, coord, nodes, 0)
    expand_shares(unit, count, shares, 0)
    np.testing.assert_array_equal(nodes, (bases[:, None] + coord[None, :] * 64).ravel())
    np.testing.assert_array_equal(shares, (unit[:, None] * count[None, :]).ravel())
