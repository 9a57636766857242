"""64-bit mixing (numba): the splitmix64 finaliser, and an order-independent
fingerprint of a traffic pattern built on it."""

import numpy as np

from .jit import njit

#: splitmix64's increment (the golden ratio in 64 bits)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit
def mix64(x):
    """splitmix64 finaliser: a cheap, well-mixed 64-bit hash step (uint64
    arithmetic wraps)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit
def _mix(x):
    return mix64(x + GOLDEN)


@njit
def multiset_fingerprint(src, dst, bits):
    """Three 64-bit words identifying the multiset of ``(src[i], dst[i],
    bits[i])`` (int32, int32, uint64 arrays): wrap-around sums and an xor of
    two independent mixes per element, so element order does not matter."""
    s1 = np.uint64(0)
    s2 = np.uint64(0)
    x2 = np.uint64(0)
    for i in range(src.shape[0]):
        pair = (np.uint64(src[i]) << np.uint64(32)) | np.uint64(dst[i])
        h1 = _mix(pair ^ _mix(bits[i]))
        h2 = _mix(h1 ^ np.uint64(0x5851F42D4C957F2D))
        s1 += h1
        s2 += h2
        x2 ^= h2
    return s1, s2, x2


@njit
def id_bounds(src, dst):
    """``(smallest, largest)`` id in ``src`` and ``dst`` (integer arrays of
    one length, at least one element), in one pass."""
    lo = min(src[0], dst[0])
    hi = max(src[0], dst[0])
    for i in range(src.shape[0]):
        a = src[i]
        b = dst[i]
        lo = min(lo, min(a, b))
        hi = max(hi, max(a, b))
    return lo, hi
