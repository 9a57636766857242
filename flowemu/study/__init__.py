"""Studies over many runs: sweeps (grids, executors, datasets), results
(comparisons, slowdowns) and figures."""
