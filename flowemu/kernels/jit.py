"""The one place that sets numba options for every kernel."""

import numba

JIT_OPTIONS = {"cache": True, "nogil": True}


def njit(*args, **kwargs):
    """``numba.njit`` with flowemu's options (``cache=True, nogil=True``)."""
    opts = dict(JIT_OPTIONS)
    opts.update(kwargs)
    if args and callable(args[0]):
        return numba.njit(**opts)(args[0])
    return numba.njit(*args, **opts)
