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


PARTIAL = {"run": pl.String, "source_file": pl.String, "depth": pl.Int64, "steps": pl.Int64,
           "names": pl.List(pl.String)}
LOSS_COLUMNS = {"short_name": pl.String, "launches": pl.Int64}


def run_iterations(tables: dict[str, pl.DataFrame], time_rows: pl.DataFrame | None = None) -> pl.DataFrame:
    """run, iterations, iterations_source for the runs whose logs give a count. `time_rows`:
    `timing.kernel_time_rows(tables)` when the caller has it already."""
    rows = timing.kernel_time_rows(tables) if time_rows is None else time_rows
    losses = loss_counts(rows, ["run"])
    return from_partials(step_partials(tables.get("regions")), losses)


def from_partials(steps: pl.DataFrame, losses: pl.DataFrame) -> pl.DataFrame:
    """run, iterations, iterations_source from the runs' step-range partials (`step_partials`,
    any number per run and file: they combine) and the loss launches of each run's time source
    (`loss_counts` of its rows: run, short_name, launches)."""
    marked = _step_ranges(steps)
    losses = _loss_launches(losses)
    if marked.height and losses.height:
        losses = losses.join(marked.select("run"), on="run", how="anti")
    parts = [p for p in (marked, losses) if p.height]
    if not parts:
        return pl.DataFrame(schema=COLUMNS)
    return pl.concat([p.select([pl.col(c).cast(t) for c, t in COLUMNS.items()]) for p in parts]).sort("run")


def step_partials(regions: pl.DataFrame | None) -> pl.DataFrame:
    """Per run and file, the step ranges that count (`PARTIAL`): the file's outermost depth
    of them, their instances there and their names. Partials of one run combine
    (`combine_steps`): the run counts at its outermost depth over all its files."""
    if regions is None or not regions.height:
        return pl.DataFrame(schema=PARTIAL)
    named = pl.col("name").str.strip_chars().str.contains(STEP_RANGE)
    steps = regions.filter((named | (pl.col("kind") == "step")) & pl.col("run").is_not_null())
    if not steps.height:
        return pl.DataFrame(schema=PARTIAL)
    # Ranges nested in a step range (a step inside an epoch range is fine) are counted once:
    # only the outermost step ranges of a run.
    steps = steps.with_columns(pl.col("path").fill_null(pl.col("name")).str.count_matches("/").alias("depth"))
    outer = steps.filter(pl.col("depth") == pl.col("depth").min().over("run", "source_file"))
    return combine_steps(outer.group_by("run", "source_file", maintain_order=True).agg(
        pl.col("depth").first().cast(pl.Int64), pl.col("count").fill_null(1).sum().cast(pl.Int64).alias("steps"),
        pl.col("name").unique(maintain_order=True).alias("names")))


def combine_steps(partials: pl.DataFrame) -> pl.DataFrame:
    """Step-range partials of the same run and file made one (the outermost depth wins; at one
    depth, instances add and names join): associative, in any grouping."""
    if not partials.height:
        return pl.DataFrame(schema=PARTIAL)
    top = partials.filter(pl.col("depth") == pl.col("depth").min().over("run", "source_file"))
    return top.group_by("run", "source_file", maintain_order=True).agg(
        pl.col("depth").first(), pl.col("steps").sum(),
        pl.col("names").list.explode(keep_nulls=False, empty_as_null=False).unique(maintain_order=True)).select(list(PARTIAL))


def _step_ranges(partials: pl.DataFrame) -> pl.DataFrame:
    if not partials.height:
        return pl.DataFrame()
    per_file = combine_steps(partials)
    per_file = per_file.filter(pl.col("depth") == pl.col("depth").min().over("run")).select(
        "run", "source_file", pl.col("steps").alias("iterations"), pl.col("names").list.len().alias("names"),
        pl.col("names").list.sort().list.first().alias("example"))
    # One file per run, like its time: an nsys report exported twice (SQLite and CSV) is one count.
    best = per_file.sort(["run", "iterations", "source_file"], descending=[False, True, False]) \
        .group_by("run", maintain_order=True).first()
    return best.select("run", "iterations", pl.format("{} instances of {} step range name(s) ({}, ...)",
                                                      pl.col("iterations"), pl.col("names"), pl.col("example"))
                       .alias("iterations_source"))


def loss_counts(rows: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """`keys` + short_name, launches: the launches of loss kernels among time rows
    (`timing.TIME_COLUMNS`), per `keys` (["run"]; a file's partial adds its file and rank)."""
    if not rows.height:
        return pl.DataFrame(schema={**{k: rows.schema[k] for k in keys}, **LOSS_COLUMNS})
    loss = rows.filter(pl.col("name").str.contains(LOSS_KERNEL))
    return loss.group_by(*keys, "short_name", maintain_order=True).agg(
        pl.col("count").sum().cast(pl.Int64).alias("launches"))


def _loss_launches(counts: pl.DataFrame) -> pl.DataFrame:
    if not counts.height:
        return pl.DataFrame()
    per_kernel = counts.group_by("run", "short_name").agg(pl.col("launches").sum().alias("iterations"))
    top = per_kernel.sort(["run", "iterations", "short_name"], descending=[False, True, False]) \
        .group_by("run", maintain_order=True).first()
    return top.select("run", "iterations", pl.format("launches of the loss kernel {}", pl.col("short_name"))
                      .alias("iterations_source"))
