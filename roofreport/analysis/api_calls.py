"""CUDA API time: the calls a run spent most host time in (nvprof `API calls:`, nsys cuda_api_sum,
or API traces aggregated).

Names lose their version suffix (`cudaMemcpy_v3020` -> `cudaMemcpy`) so releases compare. Per
run one source file is used (summary rows preferred to trace rows; among repeated jobs the one
with most time), so repeats are never summed; `share` is of that file's API time.
"""

from __future__ import annotations

import polars as pl

COLUMNS = {"run": pl.String, "name": pl.String, "calls": pl.Int64, "total_ns": pl.Float64, "share": pl.Float64}


def api_summary(api_calls: pl.DataFrame, top_n: int = 15) -> pl.DataFrame:
    """run, name, calls, total_ns, share: the `top_n` calls with most time per run."""
    if api_calls is None or not api_calls.height:
        return pl.DataFrame(schema=COLUMNS)
    rows = api_calls.filter(pl.col("total_ns").is_not_null()).with_columns(
        pl.col("name").str.replace(r"_v\d{4,5}$", "").alias("name"),
        pl.when(pl.col("kind") == "summary").then(0).otherwise(1).alias("rank"),
        pl.col("calls").fill_null(1))
    per_file = rows.group_by("run", "source_file", "rank").agg(
        pl.col("total_ns").sum().alias("file_total_ns"))
    best = per_file.sort(["run", "rank", "file_total_ns", "source_file"],
                         descending=[False, False, True, False]) \
        .group_by("run", maintain_order=True).first().select("run", "source_file", "rank")
    rows = rows.join(best, on=["run", "source_file", "rank"])
    out = rows.group_by("run", "name").agg(pl.col("calls").sum(), pl.col("total_ns").sum())
    out = out.with_columns((pl.col("total_ns") / pl.col("total_ns").sum().over("run")).alias("share"))
    out = out.sort(["run", "total_ns", "name"], descending=[False, True, False])
    return out.group_by("run", maintain_order=True).head(top_n).select([pl.col(c).cast(t) for c, t in COLUMNS.items()])
