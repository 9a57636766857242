"""numba kernels: arrays in, arrays out, status codes instead of exceptions."""
