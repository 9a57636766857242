"""``make demo``: ring vs recursive doubling on torus:16x16, 32B..512MiB."""

from __future__ import annotations

import time

import pandas as pd

from . import simulate
from .units import format_rate, format_size

TOPOLOGY = "torus:16x16"
ALGORITHMS = ("ring", "ring:ports=2", "recdoub:variant=auto")
SIZES = "32B..512MiB"


def main() -> None:
    t0 = time.perf_counter()
    frames = []
    for alg in ALGORITHMS:
        df = simulate(TOPOLOGY, alg, SIZES)
        df["label"] = alg
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    good = df.pivot(index="size_bytes", columns="label", values="goodput_Bps")[list(ALGORITHMS)]
    var = df[df.label == "recdoub:variant=auto"].set_index("size_bytes")["variant"]
    table = good.map(format_rate)
    table["recdoub picks"] = var
    table["best"] = good.idxmax(axis=1)
    table.index = [format_size(s) for s in table.index]
    table.index.name = "size"
    print(f"allreduce goodput (size / time) on {TOPOLOGY}, 400Gb/s links, "
          "100ns link + 300ns hop latency, ECMP split")
    print(table.to_string())
    print(f"\n{len(df)} rows in {time.perf_counter() - t0:.2f}s")


if __name__ == "__main__":
    main()
