"""``make demo``: swing, bucket, ring and recursive doubling on torus:16x16.

Runs ``configs/demo.toml`` through the sweep path (a resumable parquet
dataset under ``results/demo``), prints goodput per size and algorithm with
the best one and Swing's gain over the best other algorithm, and writes a
goodput plot.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from .plots import plot_goodput
from .results import compare, load
from .sweep import run_sweep
from .units import format_rate, format_size

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "demo.toml"


def comparison_table(df: pd.DataFrame, focus: str = "swing") -> pd.DataFrame:
    """Goodput per size (rows) and algorithm (columns), the best algorithm,
    and ``focus``'s gain over the best *other* algorithm (Swing paper §5)."""
    cmp = compare(df)
    good = cmp.pivot_table(index="size_bytes", columns="algorithm", values="goodput_Bps")
    table = good.map(format_rate)
    best = cmp[cmp.is_best].drop_duplicates("size_bytes").set_index("size_bytes")["best"]
    table["best"] = best.reindex(good.index)
    if focus in good.columns:
        gain = cmp[cmp.algorithm == focus].set_index("size_bytes")["gain"]
        table[f"{focus} gain"] = gain.reindex(good.index).map(lambda g: f"{g:+.0%}")
    table.index = [format_size(s) for s in table.index]
    table.index.name = "size"
    table.columns.name = None
    return table


def main(config=CONFIG, out: str | Path = "results/demo") -> Path:
    t0 = time.perf_counter()
    dataset = run_sweep(config, out, progress=False)
    df = load(dataset)
    print("allreduce goodput (size / time) on torus:16x16: 400Gb/s links, 100ns link + "
          "300ns per-hop latency, ECMP split")
    print(comparison_table(df).to_string())
    png = plot_goodput(df, Path(dataset) / "goodput.png",
                       title="allreduce goodput on torus:16x16")
    print(f"\ndataset: {dataset}  ({len(df)} rows, {time.perf_counter() - t0:.1f}s)")
    print(f"plot:    {png}")
    return Path(png)


if __name__ == "__main__":
    main()
