"""numba kernels: arrays in, arrays out, status codes instead of exceptions."""

from .memory import tune_malloc

tune_malloc()
