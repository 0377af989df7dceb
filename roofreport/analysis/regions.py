"""Where the time went by region: NVTX ranges, profiler start/stop ranges, training phases.

Three kinds of region, each with its own basis for `time_ns` and `share` (column `basis`):

* "nvtx" / "profiler_range" rows of the `regions` table (nsys nvtx_sum, nvprof NVTX result,
  cudaProfilerStart/Stop ranges): wall time of the range (`basis` "range"); share = time over
  the run's total of top-level ranges of that kind (paths without "/"), so nested ranges read as
  parts of their parent;
* "nvtx" regions attached to kernels (`kernels.region` from ncu's NVTX context or nsys's NVTX
  projection): kernel time inside the range (`basis` "kernel time"), share of the run's kernel time;
* "phase": forward / backward / optimizer as kernel names tell (`phase_of`), share of the run's
  kernel time; kernels whose name tells nothing are not attributed.

Kernel time comes from the run's chosen time source (`Model.time_rows`).
"""

from __future__ import annotations

import polars as pl

from roofreport.model import Model
from roofreport.model.names import PHASE_NAMES, phase_of

COLUMNS = {"run": pl.String, "kind": pl.String, "region": pl.String, "time_ns": pl.Float64,
           "share": pl.Float64, "count": pl.Int64, "basis": pl.String}


def region_times(model: Model) -> pl.DataFrame:
    """run, kind, region, time_ns, share, count, basis (see the module docstring)."""
    parts = [_range_rows(model.tables.get("regions")), *_kernel_rows(model.time_rows)]
    parts = [p.select([pl.col(c).cast(t) for c, t in COLUMNS.items()]) for p in parts if p.height]
    if not parts:
        return pl.DataFrame(schema=COLUMNS)
    return pl.concat(parts).sort(["run", "kind", "time_ns", "region"], descending=[False, False, True, False],
                                 nulls_last=True)


def _range_rows(regions: pl.DataFrame | None) -> pl.DataFrame:
    if regions is None or not regions.height:
        return pl.DataFrame()
    rows = regions.with_columns(pl.coalesce("path", "name").alias("region")).group_by(
        "run", "kind", "region").agg(pl.col("duration_ns").sum().alias("time_ns"),
                                     pl.col("count").fill_null(1).sum().alias("count"))
    top = rows.filter(~pl.col("region").str.contains("/")).group_by("run", "kind").agg(
        pl.col("time_ns").sum().alias("top"))
    return rows.join(top, on=["run", "kind"], how="left").with_columns(
        (pl.col("time_ns") / pl.col("top")).alias("share"), pl.lit("range").alias("basis"))


def _kernel_rows(rows: pl.DataFrame) -> list[pl.DataFrame]:
    if not rows.height:
        return []
    rows = rows.with_columns(phase_of(rows["name"]).alias("phase"))
    total = rows.group_by("run").agg(pl.col("time_ns").sum().alias("total"))
    # A region equal to the name's phase was derived from the name, not logged.
    logged = rows.filter(pl.col("region").is_not_null()
                         & (pl.col("region") != pl.col("phase").fill_null("")))
    phases = rows.filter(pl.col("phase").is_not_null()).with_columns(pl.col("phase").alias("region"))
    return [_sum(logged, total, "nvtx"), _sum(phases, total, "phase")]


def _sum(rows: pl.DataFrame, total: pl.DataFrame, kind: str) -> pl.DataFrame:
    if not rows.height:
        return pl.DataFrame()
    out = rows.group_by("run", "region").agg(pl.col("time_ns").sum(), pl.col("count").sum())
    return out.join(total, on="run").with_columns(
        pl.lit(kind).alias("kind"), (pl.col("time_ns") / pl.col("total")).alias("share"),
        pl.lit("kernel time").alias("basis"))
