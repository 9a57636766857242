"""The solvers' min-heaps over arrays (numba).

* An indexed binary heap (``heap_set``, ``heap_pop``; the incremental
  solver's): each item is in it at most once, at ``pos[item]`` (-1 when
  out), so a key can be lowered, raised or taken out in place (no stale
  entries). ``hk`` holds the keys, ``hi`` the items, both as long as the
  number of items.
* A 4-ary heap without an index (``quad_heapify``, ``quad_sift_down``,
  ``quad_pop``; the progressive fill's): built in one go from a batch of
  keys and re-keyed at the top, since its keys are lower bounds that only
  rise."""

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


@njit(**NUMPY_ERRORS)
def quad_sift_down(heap_key, heap_res, size, pos):
    """Sift down in a 4-ary min-heap (children ``4 pos + 1 .. 4 pos + 4``):
    half the depth of a binary heap, and the four keys compared at each step
    share a cache line."""
    key = heap_key[pos]
    item = heap_res[pos]
    while True:
        first = 4 * pos + 1
        if first >= size:
            break
        child = first
        ck = heap_key[first]
        last = min(first + 4, size)
        for c in range(first + 1, last):
            kc = heap_key[c]
            if kc < ck:
                ck = kc
                child = c
        if ck >= key:
            break
        heap_key[pos] = ck
        heap_res[pos] = heap_res[child]
        pos = child
    heap_key[pos] = key
    heap_res[pos] = item


@njit(**NUMPY_ERRORS)
def quad_heapify(heap_key, heap_res, size):
    """Make ``heap_key[:size]`` (with ``heap_res``) a 4-ary min-heap."""
    for pos in range((size - 2) // 4, -1, -1):
        quad_sift_down(heap_key, heap_res, size, pos)


@njit(**NUMPY_ERRORS)
def quad_pop(heap_key, heap_res, size):
    """Remove the top; returns the new size."""
    size -= 1
    if size > 0:
        heap_key[0] = heap_key[size]
        heap_res[0] = heap_res[size]
        quad_sift_down(heap_key, heap_res, size, np.int64(0))
    return size
