"""Schedule × topology × network → routes (ECMP, adaptive) → max-min solve →
per-step profiles → times for every size; per-flow and per-link output."""
