"""Stragglers of a distributed job: the slowest rank against the median rank, per training
step and overall, and what makes it slower.

From the steps table (one row per rank's trace and `ProfilerStep#N`: its duration split into
compute, communication, memory and idle, `families/pytorch/steps.py`) and the runs table (each
rank's `rank` and `distributed_job`, `pipeline/runs.py`). Step N of every rank is the same
iteration (the profiler numbers the steps the same way on each).

A synchronising collective makes every rank's step as long as the slowest rank's: the others
wait inside the collective kernel. So a rank's step is judged by its own work:

* `wait_ns`: the rank's communication-only time (no compute beside it) beyond the least any rank
  of the job had in that step: waiting in the collective for the others (the rank that waited
  least arrived last). An estimate: a rank that waited during compute hides that wait;
* `own_ns` = step duration - wait: as long as the step would be had the rank not waited;
* the slowest rank is the one with the longest own time, `slower_pct` = its own time over the
  median rank's, less 1, in percent;
* `cause`: the part of the step (compute, communication, memory copies, idle) in which the
  slowest rank exceeds the median rank by the most: "more compute", "waiting in collectives"
  (its collectives ran long: a slow link, or a collective the others did not wait in),
  "more memory copies", or "idle before collectives" (its GPU had nothing to do: the CPU, the
  data loader); `others_wait_ns` is how long the median other rank waited for it.

Overall (`step` null): the same over each rank's medians across its steps. A job needs two ranks
in the data; a trace without step markers is one step (its steps row "whole trace").
`stragglers` is pure: frames in, the frame out.
"""

from __future__ import annotations

import polars as pl

from roofreport.model import ranks

STRAGGLER_COLUMNS = {
    "distributed_job": pl.String, "step": pl.Int64, "steps": pl.Int64, "ranks": pl.Int64,
    "slowest_rank": pl.Int64, "slowest_run": pl.String, "slowest_ns": pl.Float64, "median_ns": pl.Float64,
    "slower_pct": pl.Float64, "cause": pl.String, "compute_excess_ns": pl.Float64,
    "communication_excess_ns": pl.Float64, "memory_excess_ns": pl.Float64, "idle_excess_ns": pl.Float64,
    "others_wait_ns": pl.Float64,
}
PARTS = {"compute": "more compute", "communication": "waiting in collectives",
         "memory": "more memory copies", "idle": "idle before collectives"}
_MEASURES = ["duration_ns", "own_ns", "wait_ns", *(f"{part}_ns" for part in PARTS)]


def stragglers(steps: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """STRAGGLER_COLUMNS: per distributed job, one row per step and one overall (step null)."""
    per_rank = rank_steps(steps, runs)
    if not per_rank.height:
        return pl.DataFrame(schema=STRAGGLER_COLUMNS)
    overall = per_rank.group_by("distributed_job", "run", "rank").agg(
        pl.len().cast(pl.Int64).alias("steps"), *(pl.col(c).median() for c in _MEASURES)).with_columns(
        pl.lit(None, pl.Int64).alias("step"))
    # (a trace without step markers is its whole trace: the overall row says it once)
    per_step = per_rank.filter(pl.col("step").is_not_null()).with_columns(pl.lit(1, pl.Int64).alias("steps"))
    columns = ["distributed_job", "step", "run", "rank", "steps", *_MEASURES]
    both = pl.concat([per_step.select(columns), overall.select(columns)])
    out = _compare(both)
    return out.select([pl.col(c).cast(t) for c, t in STRAGGLER_COLUMNS.items()]).sort(
        "distributed_job", "step", nulls_last=True)


def rank_steps(steps: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """One row per (job, step, rank) of the jobs with two ranks or more: run, the step's
    parts, `wait_ns` and `own_ns` (module docstring)."""
    needed = {"step", "duration_ns", *(f"{part}_ns" for part in PARTS)}
    if steps is None or not steps.height or not needed <= set(steps.columns) or "distributed_job" not in runs.columns:
        return pl.DataFrame()
    rows = ranks.with_rank(steps, runs).join(runs.select("run", "distributed_job"), on="run", how="left")
    rows = rows.filter(pl.col("distributed_job").is_not_null() & pl.col("duration_ns").is_not_null())
    rows = rows.filter(pl.col("rank").n_unique().over("distributed_job") > 1)
    if not rows.height:
        return pl.DataFrame()
    rows = rows.with_columns(pl.col(f"{part}_ns").fill_null(0.0) for part in PARTS)
    least = pl.col("communication_ns").min().over("distributed_job", "step")
    return rows.with_columns((pl.col("communication_ns") - least).alias("wait_ns")).with_columns(
        (pl.col("duration_ns") - pl.col("wait_ns")).alias("own_ns")).select(
        "distributed_job", "step", "run", "rank", *_MEASURES)


def _compare(rows: pl.DataFrame) -> pl.DataFrame:
    """Per (job, step): the rank with the longest own time against the median rank."""
    group = ["distributed_job", "step"]
    slowest = pl.col("own_ns").arg_max()
    excess = [(pl.col(f"{part}_ns").get(slowest) - pl.col(f"{part}_ns").median()).alias(f"{part}_excess_ns")
              for part in PARTS]
    others = pl.int_range(pl.len()) != slowest
    out = rows.group_by(group).agg(
        pl.col("steps").max(), pl.len().alias("ranks"), pl.col("rank").get(slowest).alias("slowest_rank"),
        pl.col("run").get(slowest).alias("slowest_run"), pl.col("own_ns").max().alias("slowest_ns"),
        pl.col("own_ns").median().alias("median_ns"), *excess,
        pl.col("wait_ns").filter(others).median().alias("others_wait_ns"))
    out = out.with_columns((100 * (pl.col("slowest_ns") / pl.col("median_ns") - 1)).alias("slower_pct"))
    return out.with_columns(_cause().alias("cause"))


def _cause() -> pl.Expr:
    """The part the slowest rank exceeds the median in by the most (none: null)."""
    parts = list(PARTS)
    largest = pl.max_horizontal(*(pl.col(f"{part}_excess_ns") for part in parts))
    cause = pl.lit(None, pl.String)
    for part in reversed(parts):
        cause = pl.when(pl.col(f"{part}_excess_ns") == largest).then(pl.lit(PARTS[part])).otherwise(cause)
    return pl.when(largest > 0).then(cause)
