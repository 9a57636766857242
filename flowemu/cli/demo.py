"""``make demo``: swing, bucket, ring and recursive doubling on torus:16x16.

Runs ``configs/demo.toml`` through the sweep path (a resumable parquet
dataset under ``results/demo``), prints goodput per size and algorithm with
the best one and Swing's gain over the best other algorithm, and writes a
goodput plot (``results/demo/_figures/goodput-relative.png``): goodput on a log axis,
and under it each algorithm's goodput in percent of the best at each size,
where the table's ranking shows at every size (goodputs of 700 and 800 Gb/s
lie together on the log axis). The headers state the network read from the rows, so an
edited ``demo.toml`` (other sizes, bandwidth, algorithms, even several
topologies) prints what it really ran: one table per scenario.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from ..core.units import format_rate, format_size, format_time
from ..study.figures.plots import plot_goodput
from ..study.results import FIGURES_DIR, compare, format_gain, load, scenario_columns
from ..study.sweep import run_sweep

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "demo.toml"


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
        table[f"{focus} gain"] = gain.reindex(good.index).map(format_gain)
    table.index = [format_size(s) for s in table.index]
    table.index.name = "size"
    table.columns.name = None
    return table


def _values(df: pd.DataFrame, column: str, fmt) -> str:
    return "/".join(fmt(v) for v in sorted(df[column].dropna().unique()))


def network_text(df: pd.DataFrame) -> str:
    """The network the rows ran on, e.g. ``torus:16x16: 400Gb/s links, 100ns
    link + 300ns per-hop latency, ECMP split`` (several values joined by /)."""
    text = (f"{_values(df, 'topology', str)}: {_values(df, 'bandwidth_Bps', format_rate)} links, "
            f"{_values(df, 'link_latency_s', format_time)} link + "
            f"{_values(df, 'hop_latency_s', format_time)} per-hop latency, "
            f"ECMP {_values(df, 'ecmp', str)}")
    if (df["alpha_s"] > 0).any():
        text += f", alpha {_values(df, 'alpha_s', format_time)} per message"
    return text


def main(config=CONFIG, out: str | Path = "results/demo") -> Path:
    t0 = time.perf_counter()
    # in this process: the demo's few configurations finish in seconds once the kernels
    # are compiled, and one process compiles them once (worker processes would each
    # compile them again on a fresh install)
    dataset = run_sweep(config, out, jobs=1, progress=False)
    df = load(dataset)
    # one table per scenario (topology, bandwidth, ... as the file sets them)
    for _, sub in df.groupby(scenario_columns(df), sort=True, dropna=False):
        print(f"allreduce goodput (size / time) on {network_text(sub)}")
        print(comparison_table(sub).to_string())
        print()
    # with the dataset's figures, where parquet readers do not look (a PNG beside
    # the part files stops pd.read_parquet(dataset)); an older demo's goes
    (Path(dataset) / "goodput.png").unlink(missing_ok=True)
    (Path(dataset) / FIGURES_DIR).mkdir(exist_ok=True)
    # (its own name: `flowemu plot` and `make figures` write the plain goodput.png there)
    png = plot_goodput(df, Path(dataset) / FIGURES_DIR / "goodput-relative.png", relative=True,
                       title=f"allreduce goodput on {_values(df, 'topology', str)}")
    print(f"dataset: {dataset}  ({len(df)} rows, {time.perf_counter() - t0:.1f}s)")
    print(f"plot:    {png}")
    return Path(png)


if __name__ == "__main__":
    main()
