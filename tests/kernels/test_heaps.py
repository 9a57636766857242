"""The indexed binary heap of the incremental solver (``heap_set``,
``heap_pop``) against a dict of keys: random sequences of inserts, key
changes up and down, removals (key ``+inf``) and pops, with ties."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flowemu.kernels.heaps import heap_pop, heap_set

N_ITEMS = 12
#: few distinct keys, so ties are common
KEYS = st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, 3.5, 7.0, np.inf])
OPS = st.lists(st.one_of(st.tuples(st.just("set"), st.integers(0, N_ITEMS - 1), KEYS),
                         st.just(("pop",))), max_size=80)


def _check_layout(hk, hi, pos, size, keys):
    """Every item in the heap is where ``pos`` says, with its key; the heap
    order holds; items out of it have ``pos == -1``."""
    assert size == len(keys)
    for j in range(size):
        assert pos[hi[j]] == j
        assert hk[j] == keys[int(hi[j])]
        if j > 0:
            assert hk[(j - 1) >> 1] <= hk[j]
    for item in range(N_ITEMS):
        assert (pos[item] >= 0) == (item in keys)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_indexed_heap_matches_a_dict_of_keys(ops):
    hk = np.empty(N_ITEMS, dtype=np.float64)
    hi = np.empty(N_ITEMS, dtype=np.int32)
    pos = np.full(N_ITEMS, -1, dtype=np.int32)
    size = 0
    keys: dict[int, float] = {}
    for op in ops:
        if op[0] == "set":
            _, item, key = op
            size = heap_set(hk, hi, pos, size, item, key)
            if key == np.inf:
                keys.pop(item, None)
            else:
                keys[item] = key
        elif keys:
            key, item, size = heap_pop(hk, hi, pos, size)
            assert key == min(keys.values())
            assert keys.pop(int(item)) == key
        _check_layout(hk, hi, pos, size, keys)
    # draining pops every key in order
    out = []
    while size > 0:
        key, item, size = heap_pop(hk, hi, pos, size)
        out.append(key)
        assert keys.pop(int(item)) == key
    assert out == sorted(out) and not keys
