"""What-if studies: failed and degraded links, slow ranks and background
traffic. Each builds plain data the engine takes (a faulted topology, per-rank
factors, persistent flows), so the engine never imports this package."""
