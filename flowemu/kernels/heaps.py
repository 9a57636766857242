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


@njit(refcounts=False, **NUMPY_ERRORS)
def heap_set(hk, hi, pos, size, item, key):
    """Give ``item`` the key ``key`` in an indexed binary min-heap (``pos``:
    each item's place, -1 when out; ``+inf`` takes it out); returns the size.

    Compiled without reference counts, as the other per-entry helpers
    (:func:`flowemu.kernels.jit.njit`'s ``refcounts``): they took a quarter
    of the incremental solver's time on a tapered fat tree."""
    i = pos[item]
    if key == np.inf:
        if i < 0:
            return size
        size -= 1
        pos[item] = -1
        if i >= size:
            return size
        key = hk[size]
        item = hi[size]
        up = i > 0 and key < hk[(i - 1) >> 1]
    elif i < 0:
        i = size
        size += 1
        up = True
    else:
        old = hk[i]
        if key == old:
            return size
        up = key < old
    if up:
        while i > 0:
            parent = (i - 1) >> 1
            if hk[parent] <= key:
                break
            hk[i] = hk[parent]
            hi[i] = hi[parent]
            pos[hi[i]] = i
            i = parent
    else:
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
    return size


@njit(refcounts=False, **NUMPY_ERRORS)
def heap_pop(hk, hi, pos, size):
    """Take the minimum out of a non-empty indexed heap: ``(key, item,
    size)`` (as :func:`heap_set` with ``+inf``)."""
    key = hk[0]
    top = hi[0]
    pos[top] = -1
    size -= 1
    if size > 0:
        last = hk[size]
        item = hi[size]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= size:
                break
            if c + 1 < size and hk[c + 1] < hk[c]:
                c += 1
            if hk[c] >= last:
                break
            hk[i] = hk[c]
            hi[i] = hi[c]
            pos[hi[i]] = i
            i = c
        hk[i] = last
        hi[i] = item
        pos[item] = i
    return key, top, size


@njit(refcounts=False, **NUMPY_ERRORS)
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


@njit(refcounts=False, **NUMPY_ERRORS)
def quad_pop(heap_key, heap_res, size):
    """Remove the top; returns the new size."""
    size -= 1
    if size > 0:
        heap_key[0] = heap_key[size]
        heap_res[0] = heap_res[size]
        quad_sift_down(heap_key, heap_res, size, np.int64(0))
    return size
