"""Parameter sweeps: runs of one model on one GPU that differ in one parameter only.

Any parameter the runs carry (`runs.params`: batch size, learning rate, workers, optimizer,
draft bits...) can be swept; nothing is known in advance about the course. A series is one
model, one GPU and one configuration of every other parameter (`workloads.py`); its points are
sorted on the swept value (numbers by value, words by name). `series_of` gives, per run and
per parameter it sweeps, the series it belongs to: the kernel-share sweeps (`share.py`) and
the time sweeps below use the same series.

`time_sweeps` gives each point's time over one basis for the whole series (`speedup.py`'s
rules: per iteration where the points count their iterations, else the whole run's kernel time
of the points not cut short; a point without a time on the series' basis is left out, a series
left with fewer than two points too) and, when the batch size is known, the time per sample and
the samples per second.
"""

from __future__ import annotations

import json

import polars as pl

from roofreport.analysis import speedup, workloads
from roofreport.gpu import NOT_NAMED

SERIES_COLUMNS = {"run": pl.String, "param": pl.String, "series": pl.String, "model": pl.String,
                  "gpu": pl.String, "config": pl.String, "x": pl.Float64, "x_label": pl.String,
                  "x_order": pl.Int64}
TIME_COLUMNS = {**{c: t for c, t in SERIES_COLUMNS.items() if c != "run"}, "runs": pl.Int64,
                "basis": pl.String, "time_ns": pl.Float64, "batch_size": pl.Int64,
                "time_per_sample_ns": pl.Float64, "samples_per_s": pl.Float64}


def series_of(runs: pl.DataFrame) -> pl.DataFrame:
    """run, param, series (a key), model, gpu, config (the fixed parameters), x (the swept value
    when a number), x_label, x_order (rank on x within the series): one row per run and swept
    parameter, for series of two values or more."""
    rows = []
    for row in runs.to_dicts():
        params = workloads.params_of(row)
        for param, value in params.items():
            if value is None or param in workloads.IN_LEAD:
                continue
            gpu = row.get("gpu_label") or NOT_NAMED
            key = json.dumps([workloads.key(row, params, leave_out=(param,)), gpu, param], default=str)
            rows.append({"run": row["run"], "param": param, "series": key,
                         "model": workloads.lead(row, params), "gpu": gpu,
                         "config": workloads.describe(row, params, leave_out=(param,)),
                         "x": _number(value), "x_label": _text(value)})
    if not rows:
        return pl.DataFrame(schema=SERIES_COLUMNS)
    frame = pl.DataFrame(rows, schema={c: t for c, t in SERIES_COLUMNS.items() if c != "x_order"})
    frame = frame.filter(pl.col("x_label").n_unique().over("series") > 1)
    return frame.with_columns(_order().alias("x_order")).sort("series", "x_order", "run")


def _order() -> pl.Expr:
    """Rank on x within a series: numbers by value, words by name (a series with any word: all by name)."""
    numeric = pl.col("x").is_not_null().all().over("series")
    by_value = pl.col("x").rank("dense").over("series")
    by_name = pl.col("x_label").rank("dense").over("series")
    return pl.when(numeric).then(by_value).otherwise(by_name).cast(pl.Int64)


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def _text(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def time_sweeps(runs: pl.DataFrame) -> pl.DataFrame:
    """One row per series point with its time on the series' one basis (TIME_COLUMNS)."""
    series = series_of(runs)
    if not series.height:
        return pl.DataFrame(schema=TIME_COLUMNS)
    complete = ~pl.col("cut_short").fill_null(False)
    points = series.join(runs.select("run", "batch_size", "time_per_iteration_ns", "kernel_time_ns", "cut_short"),
                         on="run").group_by(*[c for c in SERIES_COLUMNS if c != "run"]).agg(
        pl.len().alias("runs"), pl.col("batch_size").drop_nulls().first(),
        pl.col("time_per_iteration_ns").median(),
        pl.col("kernel_time_ns").filter(complete).median().alias("whole_run_ns"))
    # One basis per series: per iteration where two or more points have it, else the whole run's
    # time of the points that were not cut short; points without a time on that basis are left out.
    iterations = pl.col("time_per_iteration_ns").is_not_null()
    per_iteration = points.filter(iterations & (iterations.sum().over("series") > 1))
    whole = points.join(per_iteration.select("series").unique(), on="series", how="anti") \
        .filter(pl.col("whole_run_ns").is_not_null())
    parts = [per_iteration.with_columns(pl.lit(speedup.PER_ITERATION).alias("basis"),
                                        pl.col("time_per_iteration_ns").alias("time_ns")),
             whole.with_columns(pl.lit(speedup.WHOLE_RUN).alias("basis"), pl.col("whole_run_ns").alias("time_ns"))]
    out = pl.concat([p.drop("time_per_iteration_ns", "whole_run_ns") for p in parts])
    out = out.filter(pl.len().over("series") > 1)
    per_sample = pl.when(pl.col("basis") == speedup.PER_ITERATION).then(pl.col("time_ns") / pl.col("batch_size"))
    out = out.with_columns(per_sample.alias("time_per_sample_ns")).with_columns(
        (1e9 / pl.col("time_per_sample_ns")).alias("samples_per_s"))
    return out.select([pl.col(c).cast(t) for c, t in TIME_COLUMNS.items()]).sort("param", "series", "x_order")
