"""How many iterations (training or inference steps) a run's time covers, where its logs say.

A run stopped by a profiler timeout or a job time limit did as many steps as it had time for,
so its total kernel time says nothing comparable; its time per step does. The count comes from
the same rows as the run's time (`timing.kernel_time_rows`) or from its ranges, first found:

1. step ranges the program marked: PyTorch's `ProfilerStep#N` (regions of kind "step"), NVTX
   ranges named like a step (`step`, `train_step`, `iteration 12`, `batch`), counted by their
   instances in one file of the run;
2. launches of a loss kernel: a training or evaluation step computes its loss once
   (`cunn_ClassNLLCriterion_updateOutput_kernel`, `nll_loss_forward_reduce_cuda_kernel_2d`, their
   backward kernels, cross-entropy kernels of other frameworks). The most launched one counts,
   so a profile of the backward pass alone (`cudaProfilerStart` around `loss.backward()`) is
   counted by the loss's backward kernel.

Nothing else is guessed: a run whose logs show neither has no iteration count.
"""

from __future__ import annotations

import polars as pl

from roofreport.model import timing

STEP_RANGE = (r"(?i)^(?:ProfilerStep#\d+|(?:train(?:ing)?|eval|val|inference)?[ _-]?"
              r"(?:step|iter|iteration|batch)(?:[ _#:-]*\d+)?)$")
LOSS_KERNEL = (r"(?i)ClassNLLCriterion_update(?:Output|GradInput)|nll_loss(?:2d)?_(?:forward|backward)"
               r"|cross_?entropy|SoftmaxCrossEntropy|softmax_xent")

COLUMNS = {"run": pl.String, "iterations": pl.Int64, "iterations_source": pl.String}


def run_iterations(tables: dict[str, pl.DataFrame], time_rows: pl.DataFrame | None = None) -> pl.DataFrame:
    """run, iterations, iterations_source for the runs whose logs give a count. `time_rows`:
    `timing.kernel_time_rows(tables)` when the caller has it already."""
    marked = _step_ranges(tables.get("regions"))
    losses = _loss_launches(timing.kernel_time_rows(tables) if time_rows is None else time_rows)
    if marked.height and losses.height:
        losses = losses.join(marked.select("run"), on="run", how="anti")
    parts = [p for p in (marked, losses) if p.height]
    if not parts:
        return pl.DataFrame(schema=COLUMNS)
    return pl.concat([p.select([pl.col(c).cast(t) for c, t in COLUMNS.items()]) for p in parts]).sort("run")


def _step_ranges(regions: pl.DataFrame | None) -> pl.DataFrame:
    if regions is None or not regions.height:
        return pl.DataFrame()
    named = pl.col("name").str.strip_chars().str.contains(STEP_RANGE)
    steps = regions.filter((named | (pl.col("kind") == "step")) & pl.col("run").is_not_null())
    if not steps.height:
        return pl.DataFrame()
    # Ranges nested in a step range (a step inside an epoch range is fine) are counted once:
    # only the outermost step ranges of a run.
    outer = steps.with_columns(pl.col("path").fill_null(pl.col("name")).str.count_matches("/").alias("depth"))
    outer = outer.filter(pl.col("depth") == pl.col("depth").min().over("run"))
    # One file per run, like its time: an nsys report exported twice (SQLite and CSV) is one count.
    per_file = outer.group_by("run", "source_file").agg(
        pl.col("count").fill_null(1).sum().alias("iterations"), pl.col("name").n_unique().alias("names"),
        pl.col("name").sort().first().alias("example"))
    best = per_file.sort(["run", "iterations", "source_file"], descending=[False, True, False]) \
        .group_by("run", maintain_order=True).first()
    return best.select("run", "iterations", pl.format("{} instances of {} step range name(s) ({}, ...)",
                                                      pl.col("iterations"), pl.col("names"), pl.col("example"))
                       .alias("iterations_source"))


def _loss_launches(rows: pl.DataFrame) -> pl.DataFrame:
    if not rows.height:
        return pl.DataFrame()
    loss = rows.filter(pl.col("name").str.contains(LOSS_KERNEL))
    if not loss.height:
        return pl.DataFrame()
    per_kernel = loss.group_by("run", "short_name").agg(pl.col("count").sum().alias("iterations"))
    top = per_kernel.sort(["run", "iterations", "short_name"], descending=[False, True, False]) \
        .group_by("run", maintain_order=True).first()
    return top.select("run", "iterations", pl.format("launches of the loss kernel {}", pl.col("short_name"))
                      .alias("iterations_source"))
