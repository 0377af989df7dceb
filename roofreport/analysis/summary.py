"""`roofreport summary`: the runs, their kernel categories and their top kernels, as frames for
a terminal table, CSV or JSON (what `nsys stats` prints for one report, for a whole folder).

* `runs`: one row per run shown, with its totals as the runs table holds them (`totals.py`:
  every kernel counted, whatever the view shows) and its `bound_note`: why a run has no bound
  class, or the shares that gave it (the runs table's, which page 1 says too);
* `categories`: per run, the time of each kernel category shown, and its share of the run's
  whole GPU time (`share.kernel_share`);
* `kernels`: per run, its `top` kernels shown, largest first: its `category` and its
  `category_label` as the report's tables show it ("conv (via GEMM)": `share.category_label`),
  launches, total and average
  time, min, median and max of its launches (empty where the log gives a summary: the kernels
  table keeps its count and total), share of the run's GPU time (`share.per_kernel`, as `nsys
  stats --report cuda_gpu_kern_sum` lists them).

The view (`view.View`: `--run GLOB`, `--kernel REGEX`) narrows the rows, never the totals.
Runs that copy another (`duplicate_of`) are left out, as in the report.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from roofreport.analysis import runsets, share
from roofreport.analysis.view import EVERYTHING, View
from roofreport.errors import UsageError
from roofreport.model import Model
from roofreport.tables import schema

RUN_COLUMNS = {"run": pl.String, "label": pl.String, "gpu": pl.String, "model": pl.String,
               "kernel_launches": pl.Int64, "kernel_time_ns": pl.Float64, "transfer_time_ns": pl.Float64,
               "time_source": pl.String, "flops": pl.Float64, "achieved_flops_per_s": pl.Float64,
               "arithmetic_intensity": pl.Float64, "bound": pl.String, "bound_note": pl.String, "rank": pl.Int64,
               "parallelism": pl.String}
CATEGORY_COLUMNS = {"run": pl.String, "category": pl.String, "count": pl.Int64, "time_ns": pl.Float64,
                    "share": pl.Float64}
KERNEL_COLUMNS = {"run": pl.String, "rank": pl.Int64, "kernel": pl.String, "category": pl.String,
                  "category_label": pl.String, "count": pl.Int64, "time_ns": pl.Float64, "avg_ns": pl.Float64,
                  "min_ns": pl.Float64, "median_ns": pl.Float64, "max_ns": pl.Float64, "share": pl.Float64}


@dataclass(frozen=True)
class Summary:
    """What `roofreport summary` prints: three frames (module docstring) and the view behind them."""

    runs: pl.DataFrame
    categories: pl.DataFrame
    kernels: pl.DataFrame
    view: View
    top: int

    def frames(self) -> dict[str, pl.DataFrame]:
        """The frames by name, in the order they are printed."""
        return {"runs": self.runs, "categories": self.categories, "kernels": self.kernels}


def summarize(model: Model, view: View = EVERYTHING, top: int = 10) -> Summary:
    """The summary of a Dataset's model (`roofreport.model`) as `view` shows it."""
    if top < 1:
        raise UsageError(f"top must be at least 1, not {top}")
    body = view.keep_runs(runsets.body_tables(model.tables))
    body = model.keep_runs(body["runs"]["run"].to_list(), body)
    runs = model.runs().join(body.tables["runs"].select("run"), on="run", how="semi")
    runs = schema.conform("runs", runs) if runs.height else schema.empty("runs")
    runs = runs.with_columns(pl.coalesce("gpu_label", "gpu").alias("gpu")).select(list(RUN_COLUMNS)).sort("run")
    categories = share.kernel_share(body, view).select(list(CATEGORY_COLUMNS))
    kernels = share.per_kernel(body, view).group_by("run", maintain_order=True).head(top).with_columns(
        (pl.int_range(pl.len()).over("run") + 1).cast(pl.Int64).alias("rank"),
        pl.col("short_name").alias("kernel"),
        (pl.col("time_ns") / pl.col("count")).alias("avg_ns"))
    return Summary(runs=runs, categories=categories.cast(CATEGORY_COLUMNS),  # type: ignore[arg-type]
                   kernels=kernels.select(list(KERNEL_COLUMNS)).cast(KERNEL_COLUMNS),  # type: ignore[arg-type]
                   view=view, top=top)
