"""Where each rank of a distributed job spent its GPU time: the `ranks` frame, one row per
(run, rank), from the activities (kernels, memcpy, memset) of per-rank traces.

The figures are Holistic Trace Analysis's temporal breakdown and communication-computation
overlap (`hta/analyzers/breakdown_analysis.py` `get_temporal_breakdown`,
`communication_analysis.py` `get_comm_comp_overlap`, HTA 0.5.0), per rank:

* `span_ns`: from the first GPU activity's start to the last one's end, every stream's
  activities counted, memcpy and memset included (HTA's `kernel_time`);
* `busy_ns`: the union of every GPU activity's interval; `idle_ns` = span - busy (HTA's
  `idle_time`);
* `compute_ns`: the union of the compute kernels' intervals: every kernel that is no
  communication (HTA: every GPU event that is no NCCL, memcpy, memset or sync event);
* `non_compute_ns` = span - compute - idle, HTA's third part: the time only communication or
  memory operations ran;
* `comm_ns`, `memory_ns`: HTA gives no such figures; here they are the unions of the
  communication kernels' and of the memcpy/memset intervals, each on its own (so they may
  overlap each other and compute: they do not add up to the span);
* `comm_overlap_ns`: the communication time during which a compute kernel ran on the same rank,
  both unions taken first (HTA's sweep over merged intervals), and `comm_overlap_pct` its share
  of `comm_ns`; `exposed_comm_ns` = comm - overlap, the communication no compute hides;
* `memory_only_ns` = non-compute - exposed communication: the time only memcpy/memset ran (the
  non-compute time is the communication no compute hides plus the copies neither hides), so
  compute, exposed communication, memory only and idle partition the span (`*_pct` of it: the
  per-rank bars of the report);
* `steps`, `step_time_ns` (the median `ProfilerStep#N` duration of the rank's trace) and
  `step_time_spread_pct` ((slowest - fastest) / median, %), where the trace marks steps.

Where these differ from HTA, and why:

* HTA drops the last `ProfilerStep` of a trace with several steps (every GPU event whose
  launch it cannot tie to a CPU call before that step): roofreport counts every event, the last
  step's included, as its other tables do (a trace of two steps would lose half its time, and
  the last step is as real as the others). `drop_last_step=True` reads HTA's window
  (`hta_window`) and gives HTA's figures (tests/test_ranks.py); on HTA's two sampled ranks the
  whole trace moves the shares by up to 3 percentage points;
* HTA's communication pattern, `^nccl.*Kernel`, misses RCCL's `rcclGenericKernel` and custom
  all-reduce kernels: communication here is the kernel categories' own rule
  (`data/kernel_categories.tsv`) and `rccl`;
* the rank is the trace's (`activities.rank`, else `runs.rank`). A run of no rank whose kernels
  ran on several GPUs (one process driving them, as DataParallel does: an nvprof
  `--print-gpu-trace` or nsys `cuda_gpu_trace`, whose rows name their device) gets one row per
  GPU (`device`), each GPU's timeline split on its own: HTA reads a trace as one GPU's, and
  the union of four GPUs' kernels would count a GPU busy while it idles beside a busy one. A
  rank's row (`device` null) keeps every device of that rank together, as HTA does.

`rank_breakdown` is pure: frames in, the frame out, for the model of a job to hold.
"""

from __future__ import annotations

import polars as pl

from roofreport.model.names import communication_pattern

RANK_COLUMNS = {
    "run": pl.String, "rank": pl.Int64,
    # the GPU of a run of no rank that drove several (module docstring); null: the rank's devices
    "device": pl.String, "distributed_job": pl.String, "world_size": pl.Int64,
    "span_ns": pl.Float64, "busy_ns": pl.Float64, "idle_ns": pl.Float64, "compute_ns": pl.Float64,
    "non_compute_ns": pl.Float64, "comm_ns": pl.Float64, "memory_ns": pl.Float64,
    "comm_overlap_ns": pl.Float64, "comm_overlap_pct": pl.Float64, "exposed_comm_ns": pl.Float64,
    "idle_pct": pl.Float64, "compute_pct": pl.Float64, "non_compute_pct": pl.Float64,
    "memory_only_ns": pl.Float64, "exposed_comm_pct": pl.Float64, "memory_only_pct": pl.Float64,
    "steps": pl.Int64, "step_time_ns": pl.Float64, "step_time_spread_pct": pl.Float64,
}
KEYS = ["run", "rank", "device"]
_RANK = ["run", "rank"]      # what the steps and a job's figures are keyed by
GPU_KINDS = ("kernel", "memcpy", "memset")
MEMORY_KINDS = ("memcpy", "memset")
# HTA's `^nccl.*Kernel` misses RCCL's `rcclGenericKernel`: the categories' rule, and rccl.
# (The rule opens with `(?i)`: case is ignored in every alternative.)
COMMUNICATION = communication_pattern() + "|rccl"


def communication_kernels(names: pl.Expr) -> pl.Expr:
    """True for an NCCL/RCCL (or other collective library's) kernel name."""
    return names.str.contains(COMMUNICATION)


def rank_breakdown(activities: pl.DataFrame, runs: pl.DataFrame, steps: pl.DataFrame | None = None,
                   drop_last_step: bool = False) -> pl.DataFrame:
    """RANK_COLUMNS, one row per (run, rank) with GPU activities (module docstring).
    `activities`: the activities table; `runs`: the runs table (`rank`, `distributed_job`,
    `world_size`); `steps`: the steps table, for the step times (optional). `drop_last_step`:
    HTA's window (`hta_window`), to set these figures beside HTA's."""
    ranked_steps = with_rank(steps, runs) if steps is not None else None
    gpu = _gpu_intervals(activities, runs)
    if drop_last_step:
        gpu = hta_window(gpu, ranked_steps)
    if not gpu.height:
        return pl.DataFrame(schema=RANK_COLUMNS)
    kernel, comm = pl.col("kind") == "kernel", communication_kernels(pl.col("name"))
    all_work = merged(gpu)
    compute = merged(gpu.filter(kernel & ~comm))
    communication = merged(gpu.filter(kernel & comm))
    memory = merged(gpu.filter(pl.col("kind").is_in(MEMORY_KINDS)))
    out = all_work.group_by(KEYS).agg(
        (pl.col("end").max() - pl.col("start").min()).alias("span_ns"), _length().alias("busy_ns"))
    for name, parts in (("compute_ns", compute), ("comm_ns", communication), ("memory_ns", memory)):
        out = out.join(parts.group_by(KEYS).agg(_length().alias(name)), on=KEYS, how="left", nulls_equal=True)
    out = out.join(overlap(communication, compute).rename({"overlap_ns": "comm_overlap_ns"}),
                   on=KEYS, how="left", nulls_equal=True)
    filled = [pl.col(c).fill_null(0.0) for c in ("compute_ns", "comm_ns", "memory_ns", "comm_overlap_ns")]
    out = out.with_columns(filled).with_columns(
        (pl.col("span_ns") - pl.col("busy_ns")).alias("idle_ns"))
    out = out.with_columns(
        (pl.col("span_ns") - pl.col("compute_ns") - pl.col("idle_ns")).alias("non_compute_ns"),
        (pl.col("comm_ns") - pl.col("comm_overlap_ns")).alias("exposed_comm_ns"),
        _percent("comm_overlap_ns", "comm_ns").alias("comm_overlap_pct"),
        *(_percent(f"{part}_ns", "span_ns").alias(f"{part}_pct") for part in ("idle", "compute")))
    out = out.with_columns(_percent("non_compute_ns", "span_ns").alias("non_compute_pct"),
                           (pl.col("non_compute_ns") - pl.col("exposed_comm_ns")).alias("memory_only_ns"))
    out = out.with_columns(_percent("exposed_comm_ns", "span_ns").alias("exposed_comm_pct"),
                           _percent("memory_only_ns", "span_ns").alias("memory_only_pct"))
    out = out.join(_job_of(runs), on="run", how="left").join(
        step_times(ranked_steps), on=_RANK, how="left", nulls_equal=True)
    return out.select([pl.col(c).cast(t) for c, t in RANK_COLUMNS.items()]).sort(KEYS, nulls_last=True)


def hta_window(gpu: pl.DataFrame, steps: pl.DataFrame | None) -> pl.DataFrame:
    """The GPU intervals (`_gpu_intervals`) HTA reads of a trace of several `ProfilerStep`s:
    those that start before the last step does. (HTA keeps the events whose launching CPU call
    started before it; the activities table keeps no launch time, and a GPU event starts after
    its launch: the two windows differ only by the work queued when the last step began, and
    give HTA's figures to the hundredth of a percent on its own traces.) A trace of one step or
    none is read whole, as HTA does."""
    if steps is None or not steps.height:
        return gpu
    marked = steps.filter(pl.col("step").is_not_null() & pl.col("start_ns").is_not_null())
    last = marked.group_by(_RANK).agg(pl.col("start_ns").max().alias("last_step"), pl.len().alias("marked"))
    windowed = gpu.join(last.filter(pl.col("marked") > 1), on=_RANK, how="left", nulls_equal=True)
    return windowed.filter(pl.col("last_step").is_null() | (pl.col("start") < pl.col("last_step"))).drop(
        "last_step", "marked")


def with_rank(frame: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """`frame` (rows with a `run`) with its `rank`: the rank the row says (a trace's
    distributedInfo), else its run's (`runs.rank`, which a `rank-N` name gives too)."""
    run_rank = runs.select("run", pl.col("rank").alias("run_rank")) if "rank" in runs.columns \
        else runs.select("run", pl.lit(None, pl.Int64).alias("run_rank"))
    own_rank = pl.col("rank") if "rank" in frame.columns else pl.lit(None, pl.Int64)
    return frame.join(run_rank, on="run", how="left", maintain_order="left").with_columns(
        pl.coalesce(own_rank, pl.col("run_rank")).cast(pl.Int64).alias("rank")).drop("run_rank")


def _gpu_intervals(activities: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """run, rank, device, kind, name, start, end of every timed GPU activity (`with_rank`);
    `device` only where a run of no rank ran kernels on several GPUs (module docstring)."""
    timed = activities.filter(pl.col("kind").is_in(GPU_KINDS) & pl.col("start_ns").is_not_null()
                              & pl.col("duration_ns").is_not_null())
    if not timed.height:
        return pl.DataFrame(schema={"run": pl.String, "rank": pl.Int64, "device": pl.String, "kind": pl.String,
                                    "name": pl.String, "start": pl.Float64, "end": pl.Float64})
    ranked = with_rank(timed, runs)
    named = pl.col("device").cast(pl.String) if "device" in ranked.columns else pl.lit(None, pl.String)
    gpus = named.filter(pl.col("kind") == "kernel").drop_nulls().n_unique().over("run")
    split = pl.col("rank").is_null().all().over("run") & (gpus > 1)
    return ranked.select(
        "run", "rank", pl.when(split).then(named).alias("device"), "kind", "name",
        pl.col("start_ns").cast(pl.Float64).alias("start"),
        (pl.col("start_ns") + pl.col("duration_ns")).cast(pl.Float64).alias("end"))


def merged(intervals: pl.DataFrame) -> pl.DataFrame:
    """The union of each (run, rank)'s intervals (`start`, `end`) as disjoint intervals, as HTA's
    `merge_kernel_intervals`: an interval that starts after every earlier one ended opens a new
    one; touching intervals stay apart (no time lies between them either way)."""
    if not intervals.height:
        return pl.DataFrame(schema={"run": pl.String, "rank": pl.Int64, "device": pl.String, "start": pl.Float64,
                                    "end": pl.Float64})
    ordered = intervals.select(*KEYS, "start", "end").sort(*KEYS, "start", nulls_last=True)
    reach = pl.col("end").cum_max().shift(1).over(KEYS)
    opens = (pl.col("start") > reach).fill_null(True)
    return (ordered.with_columns(opens.cast(pl.Int64).cum_sum().over(KEYS).alias("part"))
            .group_by(*KEYS, "part").agg(pl.col("start").min(), pl.col("end").max())
            .drop("part").sort(*KEYS, "start", nulls_last=True))


def overlap(first: pl.DataFrame, second: pl.DataFrame) -> pl.DataFrame:
    """run, rank, overlap_ns: the time both of two unions (`merged`) cover, per (run, rank).
    A sweep as HTA's: a start of `first` counts 1, of `second` 2, their ends take it back; the
    time while the running count is 3 is both."""
    schema = {"run": pl.String, "rank": pl.Int64, "device": pl.String, "overlap_ns": pl.Float64}
    if not first.height or not second.height:
        return pl.DataFrame(schema=schema)
    marks = [parts.select(*KEYS, pl.col(edge).alias("at"), pl.lit(weight * sign, pl.Int64).alias("step"))
             for parts, weight in ((first, 1), (second, 2)) for edge, sign in (("start", 1), ("end", -1))]
    sweep = pl.concat(marks).sort(*KEYS, "at", nulls_last=True).with_columns(
        pl.col("step").cum_sum().over(KEYS).alias("running"),
        (pl.col("at").shift(-1).over(KEYS) - pl.col("at")).alias("until_next"))
    both = sweep.filter(pl.col("running") == 3)
    return both.group_by(KEYS).agg(pl.col("until_next").sum().alias("overlap_ns")).cast(schema)


def step_times(steps: pl.DataFrame | None) -> pl.DataFrame:
    """run, rank, steps, step_time_ns (median), step_time_spread_pct ((max - min) / median, %):
    over the `ProfilerStep#N` rows of each (run, rank); none where the trace marks no steps."""
    schema = {"run": pl.String, "rank": pl.Int64, "steps": pl.Int64, "step_time_ns": pl.Float64,
              "step_time_spread_pct": pl.Float64}
    if steps is None or not steps.height:
        return pl.DataFrame(schema=schema)
    marked = steps.filter(pl.col("step").is_not_null() & pl.col("duration_ns").is_not_null())
    per_rank = marked.group_by(_RANK).agg(
        pl.len().alias("steps"), pl.col("duration_ns").median().alias("step_time_ns"),
        (100 * (pl.col("duration_ns").max() - pl.col("duration_ns").min())
         / pl.col("duration_ns").median()).alias("step_time_spread_pct"))
    return per_rank.cast(schema)


def _job_of(runs: pl.DataFrame) -> pl.DataFrame:
    columns = [pl.col(c) if c in runs.columns else pl.lit(None, t).alias(c)
               for c, t in (("distributed_job", pl.String), ("world_size", pl.Int64))]
    return runs.select("run", *columns)


def _length() -> pl.Expr:
    return (pl.col("end") - pl.col("start")).sum()


def _percent(part: str, whole: str) -> pl.Expr:
    return pl.when(pl.col(whole) > 0).then(100 * pl.col(part) / pl.col(whole))
