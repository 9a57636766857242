"""An indexed binary min-heap over arrays (numba): each item is in it at
most once, at ``pos[item]`` (-1 when out), so a key can be lowered, raised
or taken out in place (no stale entries). ``hk`` holds the keys, ``hi`` the
items, both as long as the number of items."""

from __future__ import annotations

import numpy as np

from .jit import njit
from .layout import NUMPY_ERRORS


@njit(**NUMPY_ERRORS)
def sift_up(hk, hi, pos, i):
    key = hk[i]
    item = hi[i]
    while i > 0:
        parent = (i - 1) >> 1
        if hk[parent] <= key:
            break
        hk[i] = hk[parent]
        hi[i] = hi[parent]
        pos[hi[i]] = i
        i = parent
    hk[i] = key
    hi[i] = item
    pos[item] = i


@njit(**NUMPY_ERRORS)
def sift_down(hk, hi, pos, size, i):
    key = hk[i]
    item = hi[i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and hk[c + 1] < hk[c]:
            c += 1
        if hk[c] >= key:
            break
        hk[i] = hk[c]
        hi[i] = hi[c]
        pos[hi[i]] = i
        i = c
    hk[i] = key
    hi[i] = item
    pos[item] = i


@njit(**NUMPY_ERRORS)
def heap_set(hk, hi, pos, size, item, key):
    """Give ``item`` the key ``key`` in an indexed binary min-heap (``pos``:
    each item's place, -1 when out; ``+inf`` takes it out); returns the size."""
    i = pos[item]
    if key == np.inf:
        if i < 0:
            return size
        size -= 1
        pos[item] = -1
        if i < size:
            hk[i] = hk[size]
            hi[i] = hi[size]
            pos[hi[i]] = i
            if i > 0 and hk[i] < hk[(i - 1) >> 1]:
                sift_up(hk, hi, pos, i)
            else:
                sift_down(hk, hi, pos, size, i)
        return size
    if i < 0:
        hk[size] = key
        hi[size] = item
        sift_up(hk, hi, pos, size)
        return size + 1
    old = hk[i]
    hk[i] = key
    if key < old:
        sift_up(hk, hi, pos, i)
    elif key > old:
        sift_down(hk, hi, pos, size, i)
    return size


@njit(**NUMPY_ERRORS)
def heap_pop(hk, hi, pos, size):
    """Take the minimum out of a non-empty indexed heap: ``(key, item, size)``."""
    key = hk[0]
    item = hi[0]
    return key, item, heap_set(hk, hi, pos, size, item, np.inf)
