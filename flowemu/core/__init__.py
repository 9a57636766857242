"""The base layer: errors, units, network parameters and presets, placement,
argument checks, the memory budget and atomic outputs. Imports nothing of
flowemu above it."""
