"""GPU utilization over time from the `samples` table (nvidia-smi, DCGM, tegrastats): per run and
GPU, over the whole series or a window, with power beside it, DCGM's SM activity where it was
sampled, and the GPU memory of each process where per-process rows were logged.

Process rows (`pid` set: `--query-compute-apps`) say nothing about the GPU as a whole: the GPU
statistics and series leave them out, `process_memory` and `process_series` read only them.

Time is `elapsed_s` (seconds since the file's first sample), else the timestamp's offset from
the run's first timestamp. A window `(start, end)` keeps samples with start <= t <= end.
A sample is idle when `utilization.gpu` is below IDLE_PCT (5 %): nvidia-smi's utilization is the
share of the sample period in which at least one kernel ran, so near-zero readings mean the GPU
waited (data loading, host work, synchronisation), not that its kernels were slow.
"""

from __future__ import annotations

import polars as pl

IDLE_PCT = 5.0
LOW_UTIL_PCT = 70.0   # a GPU busy less than this on average (`low_util`) waited more than it computed
SERIES_POINTS = 400   # the time bins a run's series is drawn with (`chart_series`, `chart_process_series`)

COLUMNS = {"run": pl.String, "gpu_index": pl.Int64, "gpu_name": pl.String, "samples": pl.Int64,
           "duration_s": pl.Float64, "util_mean": pl.Float64, "util_median": pl.Float64,
           "util_p95": pl.Float64, "idle_fraction": pl.Float64, "mem_util_mean": pl.Float64,
           "power_mean_w": pl.Float64, "power_max_w": pl.Float64, "window_start_s": pl.Float64,
           "window_end_s": pl.Float64, "sm_active_mean": pl.Float64, "low_util": pl.Boolean}
SERIES = {"run": pl.String, "gpu_index": pl.Int64, "t_s": pl.Float64, "util_gpu_pct": pl.Float64,
          "power_w": pl.Float64, "util_mem_pct": pl.Float64, "sm_active_pct": pl.Float64}
PROCESSES = {"run": pl.String, "gpu_index": pl.Int64, "pid": pl.Int64, "process_name": pl.String,
             "samples": pl.Int64, "first_s": pl.Float64, "last_s": pl.Float64,
             "mem_mean_mib": pl.Float64, "mem_max_mib": pl.Float64}
PROCESS_SERIES = {"run": pl.String, "gpu_index": pl.Int64, "pid": pl.Int64, "t_s": pl.Float64,
                  "process_mem_mib": pl.Float64}


def gpu_rows(samples: pl.DataFrame) -> pl.DataFrame:
    """The samples of whole GPUs (not of one process)."""
    return samples.filter(pl.col("pid").is_null()) if "pid" in samples.columns else samples


def process_rows(samples: pl.DataFrame) -> pl.DataFrame:
    """The samples of single processes (`pid` set)."""
    if samples is None or "pid" not in samples.columns:
        return pl.DataFrame(schema=samples.schema if samples is not None else {})
    return samples.filter(pl.col("pid").is_not_null())


def with_seconds(samples: pl.DataFrame) -> pl.DataFrame:
    """samples with `t_s`, seconds since the series' first sample."""
    since = (pl.col("timestamp") - pl.col("timestamp").min().over("run")).dt.total_microseconds() / 1e6
    return samples.with_columns(pl.coalesce(pl.col("elapsed_s"), since).alias("t_s"))


def utilization_stats(samples: pl.DataFrame, window: tuple[float, float] | None = None) -> pl.DataFrame:
    """run, gpu_index, gpu_name, samples, duration_s, util_mean/median/p95, idle_fraction,
    mem_util_mean, power_mean_w, power_max_w (+ the window), one row per run and GPU; low_util:
    busy less than LOW_UTIL_PCT on average (null where no utilization was read)."""
    samples = gpu_rows(samples) if samples is not None else None
    if samples is None or not samples.height:
        return pl.DataFrame(schema=COLUMNS)
    timed = with_seconds(samples)
    if window is not None:
        start, end = window
        timed = timed.filter((pl.col("t_s") >= start) & (pl.col("t_s") <= end))
    util = pl.col("util_gpu_pct")
    out = timed.group_by("run", "gpu_index").agg(
        pl.col("gpu_name").drop_nulls().first(),
        pl.len().alias("samples"),
        (pl.col("t_s").max() - pl.col("t_s").min()).alias("duration_s"),
        util.mean().alias("util_mean"), util.median().alias("util_median"),
        util.quantile(0.95, interpolation="linear").alias("util_p95"),
        (util.drop_nulls() < IDLE_PCT).mean().alias("idle_fraction"),
        pl.col("util_mem_pct").mean().alias("mem_util_mean"),
        pl.col("power_w").mean().alias("power_mean_w"), pl.col("power_w").max().alias("power_max_w"),
        (pl.col("sm_active_pct").mean() if "sm_active_pct" in timed.columns
         else pl.lit(None, pl.Float64)).alias("sm_active_mean"),
    ).with_columns(pl.lit(window[0] if window else None, pl.Float64).alias("window_start_s"),
                   pl.lit(window[1] if window else None, pl.Float64).alias("window_end_s"),
                   (pl.col("util_mean") < LOW_UTIL_PCT).alias("low_util"))
    return out.select([pl.col(c).cast(t) for c, t in COLUMNS.items()]).sort("run", "gpu_index", nulls_last=True)


def snapshot() -> pl.Expr:
    """On `utilization_stats` rows: the GPU was read at one instant only (one nvidia-smi
    snapshot, or readings without time between them). Such a row is a state, not a time
    series: it has no mean over the run, no idle share and no chart."""
    return (pl.col("samples") < 2) | (pl.col("duration_s").fill_null(0.0) <= 0.0)


def utilization_series(samples: pl.DataFrame, bin_s: float = 1.0) -> pl.DataFrame:
    """run, gpu_index, t_s (bin start), util_gpu_pct, power_w, util_mem_pct, sm_active_pct:
    means per time bin, for charts."""
    samples = gpu_rows(samples) if samples is not None else None
    if samples is None or not samples.height:
        return pl.DataFrame(schema=SERIES)
    timed = _binned(with_seconds(samples), bin_s)
    means = [pl.col(c).mean() if c in timed.columns else pl.lit(None, pl.Float64).alias(c)
             for c in ("util_gpu_pct", "power_w", "util_mem_pct", "sm_active_pct")]
    out = timed.group_by("run", "gpu_index", "t_s").agg(means).sort("run", "gpu_index", "t_s")
    return out.select([pl.col(c).cast(t) for c, t in SERIES.items()])


def process_memory(samples: pl.DataFrame) -> pl.DataFrame:
    """One row per run, GPU and process: how many readings, from when to when (s since the
    series' first sample), its mean and largest GPU memory."""
    rows = process_rows(samples)
    if not rows.height:
        return pl.DataFrame(schema=PROCESSES)
    timed = with_seconds(rows)
    memory = pl.col("process_mem_mib")
    out = timed.group_by("run", "gpu_index", "pid", maintain_order=True).agg(
        pl.col("process_name").drop_nulls().first(), pl.len().alias("samples"),
        pl.col("t_s").min().alias("first_s"), pl.col("t_s").max().alias("last_s"),
        memory.mean().alias("mem_mean_mib"), memory.max().alias("mem_max_mib"))
    return out.select([pl.col(c).cast(t) for c, t in PROCESSES.items()]).sort(
        "run", "gpu_index", "mem_max_mib", descending=[False, False, True], nulls_last=True)


def process_series(samples: pl.DataFrame, bin_s: float = 1.0) -> pl.DataFrame:
    """run, gpu_index, pid, t_s (bin start), process_mem_mib (the bin's largest), for charts."""
    rows = process_rows(samples)
    if not rows.height:
        return pl.DataFrame(schema=PROCESS_SERIES)
    timed = _binned(with_seconds(rows), bin_s)
    out = timed.group_by("run", "gpu_index", "pid", "t_s").agg(pl.col("process_mem_mib").max())
    return out.select([pl.col(c).cast(t) for c, t in PROCESS_SERIES.items()]).sort(
        "run", "gpu_index", "pid", "t_s", nulls_last=True)


def chart_series(samples: pl.DataFrame, stats: pl.DataFrame, points: int = SERIES_POINTS) -> pl.DataFrame:
    """`utilization_series` of every run with a series of samples (`stats`' rows that are not
    snapshots), each run binned by its longest GPU series' duration into `points` bins (one
    more for a reading at the very end; bins never under 1 ms): what the report draws, a few
    hundred points per GPU however long the capture."""
    series = stats.filter(~snapshot()) if stats.height else stats
    frames = []
    for run in series["run"].unique(maintain_order=True).to_list() if series.height else []:
        duration = series.filter(pl.col("run") == run)["duration_s"].max()
        if duration:
            frames.append(utilization_series(samples.filter(pl.col("run") == run),
                                             bin_s=max(duration / points, 1e-3)))
    return pl.concat(frames) if frames else pl.DataFrame(schema=SERIES)


def chart_process_series(samples: pl.DataFrame, processes: pl.DataFrame,
                         points: int = SERIES_POINTS) -> pl.DataFrame:
    """`process_series` per run and GPU of `processes` (`process_memory`), each binned by the
    span its processes were seen over into `points` bins (one more for a reading at the very
    end; bins never under 1 ms); the rows of that GPU only. What the report draws."""
    frames = []
    for (run, gpu), mine in processes.group_by("run", "gpu_index", maintain_order=True):
        duration = (mine["last_s"].max() or 0.0) - (mine["first_s"].min() or 0.0)
        if not duration:
            continue
        binned = process_series(samples.filter(pl.col("run") == run), bin_s=max(duration / points, 1e-3))
        frames.append(binned.filter(pl.col("gpu_index").eq_missing(gpu)))
    return pl.concat(frames) if frames else pl.DataFrame(schema=PROCESS_SERIES)


def _binned(timed: pl.DataFrame, bin_s: float) -> pl.DataFrame:
    return timed.with_columns(((pl.col("t_s") / bin_s).floor() * bin_s).alias("t_s"))
