"""GPU utilization over time from nvidia-smi samples: per run and GPU, over the whole series or a
window, with power beside it.

Time is `elapsed_s` (seconds since the file's first sample), else the timestamp's offset from
the run's first timestamp. A window `(start, end)` keeps samples with start <= t <= end.
A sample is idle when `utilization.gpu` is below IDLE_PCT (5 %): nvidia-smi's utilization is the
share of the sample period in which at least one kernel ran, so near-zero readings mean the GPU
waited (data loading, host work, synchronisation), not that its kernels were slow.
"""

from __future__ import annotations

import polars as pl

IDLE_PCT = 5.0

COLUMNS = {"run": pl.String, "gpu_index": pl.Int64, "gpu_name": pl.String, "samples": pl.Int64,
           "duration_s": pl.Float64, "util_mean": pl.Float64, "util_median": pl.Float64,
           "util_p95": pl.Float64, "idle_fraction": pl.Float64, "mem_util_mean": pl.Float64,
           "power_mean_w": pl.Float64, "power_max_w": pl.Float64, "window_start_s": pl.Float64,
           "window_end_s": pl.Float64}


def with_seconds(samples: pl.DataFrame) -> pl.DataFrame:
    """samples with `t_s`, seconds since the series' first sample."""
    since = (pl.col("timestamp") - pl.col("timestamp").min().over("run")).dt.total_microseconds() / 1e6
    return samples.with_columns(pl.coalesce(pl.col("elapsed_s"), since).alias("t_s"))


def utilization_stats(samples: pl.DataFrame, window: tuple[float, float] | None = None) -> pl.DataFrame:
    """run, gpu_index, gpu_name, samples, duration_s, util_mean/median/p95, idle_fraction,
    mem_util_mean, power_mean_w, power_max_w (+ the window), one row per run and GPU."""
    if samples is None or not samples.height:
        return pl.DataFrame(schema=COLUMNS)
    s = with_seconds(samples)
    if window is not None:
        start, end = window
        s = s.filter((pl.col("t_s") >= start) & (pl.col("t_s") <= end))
    util = pl.col("util_gpu_pct")
    out = s.group_by("run", "gpu_index").agg(
        pl.col("gpu_name").drop_nulls().first(),
        pl.len().alias("samples"),
        (pl.col("t_s").max() - pl.col("t_s").min()).alias("duration_s"),
        util.mean().alias("util_mean"), util.median().alias("util_median"),
        util.quantile(0.95, interpolation="linear").alias("util_p95"),
        (util.drop_nulls() < IDLE_PCT).mean().alias("idle_fraction"),
        pl.col("util_mem_pct").mean().alias("mem_util_mean"),
        pl.col("power_w").mean().alias("power_mean_w"), pl.col("power_w").max().alias("power_max_w"),
    ).with_columns(pl.lit(window[0] if window else None, pl.Float64).alias("window_start_s"),
                   pl.lit(window[1] if window else None, pl.Float64).alias("window_end_s"))
    return out.select([pl.col(c).cast(t) for c, t in COLUMNS.items()]).sort("run", "gpu_index", nulls_last=True)


def utilization_series(samples: pl.DataFrame, bin_s: float = 1.0) -> pl.DataFrame:
    """run, gpu_index, t_s (bin start), util_gpu_pct, power_w: means per time bin, for charts."""
    if samples is None or not samples.height:
        return pl.DataFrame(schema={"run": pl.String, "gpu_index": pl.Int64, "t_s": pl.Float64,
                                    "util_gpu_pct": pl.Float64, "power_w": pl.Float64})
    s = with_seconds(samples).with_columns(((pl.col("t_s") / bin_s).floor() * bin_s).alias("t_s"))
    return s.group_by("run", "gpu_index", "t_s").agg(
        pl.col("util_gpu_pct").mean(), pl.col("power_w").mean()).sort("run", "gpu_index", "t_s")
