"""What a run's logs say about why it took the time it did: the facts a comparison of GPUs cites.

One row per run with a kernel time (`REASON_COLUMNS`), from the run's time rows
(`Model.time_rows`, every kernel, whatever a view shows) and its totals:

* `tensor_share`: the share of kernel time in kernels that ran on tensor cores (counters or
  names say so: `enrich/tensor.py`). A GPU whose FP32 work runs as TF32 on tensor cores (an
  A100 under PyTorch's defaults) beats its FP32 peak ratio over a GPU that has none.
* `communication_share`, `collectives`: NCCL (and other collective) kernels' share of kernel
  time, and which collectives ran: `broadcast`, `reduce` without `all-reduce` is one process
  driving several GPUs (PyTorch's DataParallel: the weights broadcast and the gradients reduced
  to one GPU every step), `all-reduce` is DistributedDataParallel or Horovod, `all-gather` with
  `reduce-scatter` a sharded job (FSDP, ZeRO), send/recv alone a pipeline (`model/parallel.py`
  names the collectives and the parallelism they show).
* `gpus`, `gpus_source`, `multi_gpu`: how many GPUs the run's kernel time is summed over. A trace
  naming several devices says how many; collectives say "several", and the job script beside the
  logs (`job_gpus`, `pipeline/jobscripts.py`) how many it asked for; a kernel log without
  collectives on one device or none is one GPU's work. A job script alone says what was asked,
  not what ran (a script may ask for four GPUs and run on one): it gives no count by itself.
* `setup_time_ns`, `setup_share`: the copies before the first kernel (the weights uploaded once:
  `totals.setup_rows`) and their share of the run's GPU time (kernels and copies).
* `one_off_share`: the share of kernel time in kernels launched fewer times than the run has
  iterations: cuDNN's algorithm trials in the first iteration (`torch.backends.cudnn.benchmark`),
  one-time setup. A run of a few iterations whose first one autotunes measures the autotuning.
* `clock_locked`: the time is ncu's (or a ROCm counter collection's) replay of each kernel,
  serialised and at locked base clocks, not the run's own.
* `categories`: per kernel category, time and launches per iteration (or over the run): what a
  comparison points to when a speedup exceeds the GPUs' peak ratios (`conclusions.py`).
"""

from __future__ import annotations

import polars as pl

from roofreport.model import parallel, timing, totals


COMMUNICATION = "communication"
REASON_COLUMNS = {
    "run": pl.String, "tensor_share": pl.Float64, "communication_share": pl.Float64, "collectives": pl.String,
    "parallelism": pl.String, "gpus": pl.Int64, "gpus_source": pl.String, "multi_gpu": pl.Boolean,
    "setup_time_ns": pl.Float64, "setup_share": pl.Float64, "clock_locked": pl.Boolean, "one_off_share": pl.Float64,
}
CATEGORY_COLUMNS = {"run": pl.String, "category": pl.String, "time_ns": pl.Float64, "launches": pl.Int64}
# What the collectives say of how the work was split: `model/parallel.py` names both.
SINGLE_PROCESS, ALL_REDUCE, SHARDED, PIPELINE, TENSOR = (
    parallel.SINGLE_PROCESS, parallel.DATA_PARALLEL, parallel.SHARDED, parallel.PIPELINE, parallel.TENSOR)


def run_reasons(rows: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """REASON_COLUMNS per run with kernel rows (`rows`: `Model.time_rows`; `runs`: the runs table with
    its totals)."""
    if not rows.height or not runs.height:
        return pl.DataFrame(schema=REASON_COLUMNS)
    moved = pl.col("category").fill_null("").is_in(totals.TRANSFERS)
    kernels = rows.filter(~moved)
    per_run = kernels.group_by("run").agg(
        pl.col("time_ns").sum().alias("kernel_ns"),
        pl.col("time_ns").filter(pl.col("tensor_active").fill_null(False)).sum().alias("tensor_ns"),
        pl.col("time_ns").filter(pl.col("category") == COMMUNICATION).sum().alias("communication_ns"),
        pl.col("source_rank").max().alias("source_rank"))
    gpu_time = rows.group_by("run").agg(pl.col("time_ns").sum().alias("gpu_ns"))
    out = per_run.join(gpu_time, on="run", how="left").join(_collectives(kernels), on="run", how="left")
    # the parallelism is the run totals' (`model/parallel.py`), as the runs table gives it
    wanted = ["run", "devices", "job_gpus", "setup_time_ns", "parallelism"]
    info = runs.select([pl.col(c) if c in runs.columns else pl.lit(None, pl.String).alias(c) for c in wanted])
    out = out.join(info, on="run", how="left").with_columns(
        (pl.col("tensor_ns") / pl.col("kernel_ns")).alias("tensor_share"),
        (pl.col("communication_ns") / pl.col("kernel_ns")).alias("communication_share"),
        (pl.col("setup_time_ns") / pl.col("gpu_ns")).alias("setup_share"),
        (pl.col("source_rank") >= timing.NCU_RANK).alias("clock_locked"))
    out = out.with_columns(*_gpu_count()).join(_one_off(kernels, runs), on="run", how="left")
    return out.select([pl.col(c).cast(t) for c, t in REASON_COLUMNS.items()]).sort("run")


def _one_off(kernels: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """run, one_off_share (module docstring), for runs that count two iterations or more."""
    counted = runs.filter(pl.col("iterations").fill_null(0) > 1).select("run", "iterations") \
        if "iterations" in runs.columns else pl.DataFrame(schema={"run": pl.String, "iterations": pl.Int64})
    per = kernels.join(counted, on="run", how="semi").group_by("run", "short_name").agg(
        pl.col("time_ns").sum(), pl.col("count").fill_null(1).sum().alias("launches"))
    per = per.join(counted, on="run")
    return per.group_by("run").agg(
        (pl.col("time_ns").filter(pl.col("launches") < pl.col("iterations")).sum() / pl.col("time_ns").sum())
        .alias("one_off_share"))


def _collectives(kernels: pl.DataFrame) -> pl.DataFrame:
    """run, collectives (`broadcast, reduce`), from the communication kernels' names."""
    comm = kernels.filter(pl.col("category") == COMMUNICATION).select("run", "name").unique()
    if not comm.height:
        return pl.DataFrame(schema={"run": pl.String, "collectives": pl.String})
    kinds = comm.with_columns(parallel.kind(pl.col("name")).alias("kind")).group_by("run").agg(
        pl.col("kind").drop_nulls().unique().sort())
    rows = []
    for run, found in kinds.iter_rows():
        named = [label for label in parallel.KIND_ORDER if label in found]
        rows.append({"run": run, "collectives": ", ".join(named) or None})
    return pl.DataFrame(rows, schema={"run": pl.String, "collectives": pl.String})


def _gpu_count() -> list[pl.Expr]:
    """gpus, gpus_source, multi_gpu (module docstring)."""
    several_devices = pl.col("devices").fill_null(0) > 1
    collectives = pl.col("communication_ns") > 0
    asked = pl.col("job_gpus").fill_null(0) > 1
    gpus = (pl.when(several_devices).then(pl.col("devices"))
            .when(collectives & asked).then(pl.col("job_gpus"))
            .when(~collectives & (pl.col("devices").fill_null(1) == 1)).then(pl.lit(1, pl.Int64)))
    source = (pl.when(several_devices).then(pl.lit("trace devices"))
              .when(collectives & asked).then(pl.lit("job script"))
              .when(collectives).then(pl.lit("collectives"))
              .when(pl.col("devices") == 1).then(pl.lit("trace devices"))
              .otherwise(pl.lit("no collectives")))
    return [gpus.alias("gpus"), source.alias("gpus_source"), (several_devices | collectives).alias("multi_gpu")]


def category_times(rows: pl.DataFrame) -> pl.DataFrame:
    """run, category, time_ns, launches: every kernel of each run's time source (`rows`:
    `time_rows`) by category, setup copies apart (CATEGORY_COLUMNS; a category "setup" holds them)."""
    if not rows.height:
        return pl.DataFrame(schema=CATEGORY_COLUMNS)
    category = pl.when(pl.col("setup")).then(pl.lit("setup")).otherwise(pl.col("category").fill_null("other"))
    out = rows.group_by("run", category.alias("category")).agg(
        pl.col("time_ns").sum(), pl.col("count").fill_null(1).sum().alias("launches"))
    return out.select([pl.col(c).cast(t) for c, t in CATEGORY_COLUMNS.items()]).sort("run", "category")
