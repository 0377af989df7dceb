"""Jobs on several GPUs, answered: which rank is slow and by how much, how much of each step is
communication that compute does not hide, whether the interconnect delivers its bandwidth, and
what one process driving several GPUs (DataParallel) can and cannot tell.

A job of several ranks is the runs that share `runs.distributed_job` (one per rank's log,
`pipeline/runs.py`; `runs.ranks` counts them): each rank keeps its own totals, so a rank's time
is set beside its peers', never added to them. From the per-rank frames (the model's `ranks`, `model/ranks.py`;
`collectives.collective_table`, `stragglers.stragglers`) this module makes `jobs`, one row per
job (JOB_COLUMNS):

* `parallelism`: the runs' (`model/parallel.py`), the job's when its ranks agree;
* `slowest_rank`, `slower_pct`, `cause`, `others_wait_ns`: the stragglers frame's overall row;
* `exposed_comm_pct`: the median rank's communication that no compute hides
  (`exposed_comm_ns`), as a share of its span (first to last GPU activity); `comm_overlap_pct`:
  the job's communication time during which compute ran, over all its ranks;
* `collective`: the collective with the most time; `busbw_bytes_per_s` its bus bandwidth
  (nccl-tests' definition) over the median rank: from the transfer times (the least any rank
  spent in each call: the last to arrive waited least) where every rank of the job is in the
  data, else from kernel time, a lower bound (`busbw_lower_bound`: ranks that wait inflate it);
* `link`, `link_bw_bytes_per_s`, `link_pct`: the interconnect the GPU table gives the job's GPU
  (`GpuSpec.interconnect`: NVLink per direction, else PCIe of its generation and lanes) and the
  bus bandwidth's share of it. A job of more than `ONE_MACHINE` ranks spans machines: the
  network between them, which the logs do not name, limits its collectives, so no share is
  given (`link_note` says why).

`single_process` holds the runs where one process drove several GPUs (PyTorch's DataParallel):
per run its GPUs, GPU 0's kernel time against the median other GPU's and the busiest GPU's
where the log has a device per kernel (a trace, nvprof's `--print-summary-per-gpu`), and
otherwise `per_device` false with the log that would tell (nvprof's plain summary adds every
GPU's kernels into one line).

`scaling`: the same model on the same GPU with different GPU counts (a job's ranks, a
single-process run's GPUs): the speedup of the step time, the scaling efficiency, and whether it
is strong scaling (the same global batch: DataParallel's batch size is the global batch; a
distributed job's is per rank, so its global batch is the batch size times its ranks) or weak
scaling (the same batch per GPU). A single-process run steps at its busiest GPU's kernel time
per iteration where its log gives each GPU's; a summary that adds its GPUs together gives no
step of one GPU, and the pair says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from roofreport import gpu
from roofreport.analysis import collectives as collective_frames, stragglers as straggler_frames
from roofreport.model import Model, parallel, ranks as rank_split
from roofreport.tables import lazy, schema

ONE_MACHINE = 8      # ranks one machine holds at most (8 GPUs a node): a larger job's links are unknown
JOB_COLUMNS = {
    "distributed_job": pl.String, "ranks": pl.Int64, "world_size": pl.Int64, "parallelism": pl.String,
    "gpu_model": pl.String, "gpu_label": pl.String, "span_ns": pl.Float64, "step_time_ns": pl.Float64,
    "slowest_rank": pl.Int64, "slower_pct": pl.Float64, "cause": pl.String, "others_wait_ns": pl.Float64,
    "exposed_comm_pct": pl.Float64, "comm_overlap_pct": pl.Float64, "collective": pl.String,
    "busbw_bytes_per_s": pl.Float64, "busbw_lower_bound": pl.Boolean, "link": pl.String,
    "link_bw_bytes_per_s": pl.Float64, "link_pct": pl.Float64, "link_note": pl.String,
}
SINGLE_PROCESS_COLUMNS = {
    "run": pl.String, "gpus": pl.Int64, "per_device": pl.Boolean, "gpu0_time_ns": pl.Float64,
    "others_median_ns": pl.Float64, "gpu0_excess_pct": pl.Float64, "busiest_ns": pl.Float64,
    "would_tell": pl.String,
}
SCALING_COLUMNS = {
    "model": pl.String, "gpu_label": pl.String, "run_a": pl.String, "run_b": pl.String, "gpus_a": pl.Int64,
    "gpus_b": pl.Int64, "step_ns_a": pl.Float64, "step_ns_b": pl.Float64, "global_batch_a": pl.Int64,
    "global_batch_b": pl.Int64, "scaling": pl.String, "speedup": pl.Float64, "efficiency_pct": pl.Float64,
    "note": pl.String,
}
STRONG, WEAK = "strong", "weak"
# (nvprof's text trace cuts its Device cell to 15 characters, `Tesla V100-SXM2`: the `(N)` that
# tells the GPUs apart is lost on longer names; its --csv form prints them whole)
PER_DEVICE_LOG = ("nvprof --print-summary-per-gpu, or a trace with a device per kernel "
                  "(nvprof --print-gpu-trace --csv, nsys profile)")


@dataclass(frozen=True)
class Distributed:
    """The frames of every multi-GPU question (module docstring)."""

    ranks: pl.DataFrame            # ranks.RANK_COLUMNS: one row per (run, rank)
    collectives: pl.DataFrame      # collectives.COLLECTIVE_COLUMNS
    stragglers: pl.DataFrame       # stragglers.STRAGGLER_COLUMNS: per job and step, and overall
    jobs: pl.DataFrame             # JOB_COLUMNS: one row per job of several ranks
    single_process: pl.DataFrame   # SINGLE_PROCESS_COLUMNS
    scaling: pl.DataFrame          # SCALING_COLUMNS


def distributed(tables: dict[str, pl.DataFrame], model: Model, reasons: pl.DataFrame,
                step_summary: pl.DataFrame) -> Distributed:
    """Every frame of `Distributed` from the tables (the runs table with its totals), the model
    (its ranks, time rows and GPUs), the runs' reasons (`reasons.run_reasons`: GPUs per run) and
    the step summary (`steps.step_summary`: median step time per run)."""
    runs = tables["runs"]
    per_rank = model.ranks
    time_rows, gpus = model.time_rows, model.gpus
    calls = collective_frames.collective_table(tables["activities"], _collective_args(tables), runs)
    slow = straggler_frames.stragglers(tables["steps"], runs)
    single = single_process(runs, reasons, time_rows)
    return Distributed(
        ranks=per_rank, collectives=calls, stragglers=slow,
        jobs=job_summary(runs, per_rank, calls, slow, gpus),
        single_process=single,
        scaling=scaling(runs, reasons, step_summary, single))


def _collective_args(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """The metrics rows of Kineto's collective args, of the files with communication kernels
    only: a dataset folder's metrics (ncu's counters, millions of rows) are scanned, not loaded."""
    activities = tables["activities"]
    comm = activities.filter((pl.col("kind") == "kernel") & rank_split.communication_kernels(pl.col("name"))) \
        if activities.height else activities
    metrics = lazy.scan(tables, "metrics")
    if not comm.height or metrics is None:
        return schema.empty("metrics")
    files = comm["source_file"].unique().to_list()
    return metrics.filter(pl.col("source_file").is_in(files)
                          & (pl.col("section") == collective_frames.SECTION)).collect()


def job_summary(runs: pl.DataFrame, per_rank: pl.DataFrame, calls: pl.DataFrame, slow: pl.DataFrame,
                gpus: dict[str, gpu.GpuSpec]) -> pl.DataFrame:
    """JOB_COLUMNS, one row per job with two ranks or more in the data (module docstring)."""
    if not runs.height or "distributed_job" not in runs.columns:
        return pl.DataFrame(schema=JOB_COLUMNS)
    members = runs.filter(pl.col("distributed_job").is_not_null())
    rows = []
    for (job,), group in members.group_by("distributed_job", maintain_order=True):
        # a job's ranks: its runs' (a trace per rank), or those its one trace of several
        # processes holds (its rows' ranks: an nsys report of a launcher's children)
        own = per_rank.filter(pl.col("distributed_job") == job)
        count = max(group["rank"].drop_nulls().n_unique(), own["rank"].drop_nulls().n_unique())
        if count < 2:
            continue
        rows.append(_job_row(job, group, count, own,
                             calls.filter(pl.col("distributed_job") == job),
                             slow.filter((pl.col("distributed_job") == job) & pl.col("step").is_null()), gpus))
    return pl.DataFrame(rows, schema=JOB_COLUMNS).sort("distributed_job") if rows else \
        pl.DataFrame(schema=JOB_COLUMNS)


def _job_row(job: str, group: pl.DataFrame, ranks: int, per_rank: pl.DataFrame, calls: pl.DataFrame,
             slow: pl.DataFrame, gpus: dict[str, gpu.GpuSpec]) -> dict:
    splits = set(group["parallelism"].drop_nulls().to_list()) if "parallelism" in group.columns else set()
    models = group["gpu_model"].drop_nulls().unique().to_list()
    row = {"distributed_job": job, "ranks": ranks, "world_size": group["world_size"].max(),
           "parallelism": splits.pop() if len(splits) == 1 else None,
           "gpu_model": models[0] if len(models) == 1 else None,
           "gpu_label": group["gpu_label"][0] if group["gpu_label"].n_unique() == 1 else None}
    if per_rank.height:
        exposed = (100 * per_rank["exposed_comm_ns"] / per_rank["span_ns"]).median()
        comm = per_rank["comm_ns"].sum()
        row.update(span_ns=per_rank["span_ns"].median(), step_time_ns=per_rank["step_time_ns"].median(),
                   exposed_comm_pct=exposed if comm else None,
                   comm_overlap_pct=100 * per_rank["comm_overlap_ns"].sum() / comm if comm else None)
    if slow.height:
        first = slow.row(0, named=True)
        row.update({k: first[k] for k in ("slowest_rank", "slower_pct", "cause", "others_wait_ns")})
    row.update(_bandwidth(calls, row, gpus, group))
    return row


def _bandwidth(calls: pl.DataFrame, job: dict, gpus: dict[str, gpu.GpuSpec], group: pl.DataFrame) -> dict:
    """collective, busbw_bytes_per_s, busbw_lower_bound, link, link_bw_bytes_per_s, link_pct,
    link_note of a job (module docstring)."""
    out: dict = {}
    if not calls.height:
        return out
    by_time = calls.group_by("collective").agg(pl.col("time_ns").sum()).sort("time_ns", descending=True)
    kind = by_time["collective"][0]
    out["collective"] = kind
    sized = calls.filter((pl.col("collective") == kind) & pl.col("message_bytes").is_not_null())
    if not sized.height:
        out["link_note"] = "the trace records no message sizes (Kineto's collective args), so no bandwidth"
        return out
    exact = sized["transfer_ns"].is_not_null().all()
    seconds = (pl.col("transfer_ns") if exact else pl.col("time_ns")) / 1e9
    per_rank = sized.group_by("rank").agg(
        ((pl.col("message_bytes") * pl.col("count") * pl.col("bus_factor")).sum() / seconds.sum()).alias("busbw"))
    out.update(busbw_bytes_per_s=per_rank["busbw"].median(), busbw_lower_bound=not exact)
    spec = gpus.get(group["run"][0]) if job["gpu_model"] else None
    link = spec.interconnect() if spec is not None else None
    world = job["world_size"] or job["ranks"]
    if kind in ("send/recv", "other"):
        out["link_note"] = f"{kind} has no bus bandwidth factor to set against a link"
    elif world > ONE_MACHINE:
        out["link_note"] = (f"{world} ranks span more than one machine: the network between machines, which "
                            "the logs do not name, limits the collectives")
    elif link is None:
        out["link_note"] = ("the GPU table knows no link for this GPU" if spec is not None
                            else "the GPU is not known, so neither is its link")
    else:
        out.update(link=link[0], link_bw_bytes_per_s=link[1], link_pct=100 * out["busbw_bytes_per_s"] / link[1])
    return out


def single_process(runs: pl.DataFrame, reasons: pl.DataFrame, time_rows: pl.DataFrame) -> pl.DataFrame:
    """SINGLE_PROCESS_COLUMNS: each run whose collectives show one process driving several GPUs
    (DataParallel), with GPU 0's kernel time against the median other GPU's where its time rows
    name a device per kernel; else `per_device` false and the log that would tell."""
    if not reasons.height or "parallelism" not in reasons.columns:
        return pl.DataFrame(schema=SINGLE_PROCESS_COLUMNS)
    chosen = reasons.filter(pl.col("parallelism") == parallel.SINGLE_PROCESS).select("run", "gpus")
    rows = []
    for run, gpus in chosen.iter_rows():
        rows_of = time_rows.filter((pl.col("run") == run) & ~pl.col("category").fill_null("").is_in(
            ["memcpy", "memset"]) & pl.col("device").is_not_null()) if time_rows.height else time_rows
        per_device = rows_of.group_by("device").agg(pl.col("time_ns").sum()).sort("device") if rows_of.height \
            else pl.DataFrame()
        if per_device.height > 1:
            first, others = per_device["time_ns"][0], per_device["time_ns"][1:].median()
            rows.append({"run": run, "gpus": per_device.height, "per_device": True, "gpu0_time_ns": first,
                         "others_median_ns": others, "gpu0_excess_pct": 100 * (first / others - 1) if others else None,
                         "busiest_ns": per_device["time_ns"].max()})
        else:
            rows.append({"run": run, "gpus": gpus, "per_device": False, "would_tell": PER_DEVICE_LOG})
    return pl.DataFrame(rows, schema=SINGLE_PROCESS_COLUMNS)


def scaling(runs: pl.DataFrame, reasons: pl.DataFrame, step_summary: pl.DataFrame,
            single: pl.DataFrame | None = None) -> pl.DataFrame:
    """SCALING_COLUMNS: per model and GPU, each pair of runs or jobs with different GPU counts
    (module docstring). A job is its rank 0 (every rank runs the same steps); its step time
    is the median rank's median step, else its kernel time per iteration. A single-process run
    of several GPUs whose log gives each GPU's time (`single`: `single_process`'s frame) steps at
    its busiest GPU's kernel time per iteration (its GPUs meet every step)."""
    if not runs.height:
        return pl.DataFrame(schema=SCALING_COLUMNS)
    units = _scaling_units(runs, reasons, step_summary, single)
    if not units.height:
        return pl.DataFrame(schema=SCALING_COLUMNS)
    rows = []
    for (model, label, _), group in units.group_by("model", "gpu_label", "workload", maintain_order=True):
        ordered = group.sort("gpus", "run").iter_rows(named=True)
        items = list(ordered)
        for index, fewer in enumerate(items):
            for more in items[index + 1:]:
                if fewer["gpus"] != more["gpus"]:
                    rows.append(_scaling_pair(model, label, fewer, more))
    return pl.DataFrame(rows, schema=SCALING_COLUMNS) if rows else pl.DataFrame(schema=SCALING_COLUMNS)


def _scaling_units(runs: pl.DataFrame, reasons: pl.DataFrame, step_summary: pl.DataFrame,
                   single: pl.DataFrame | None = None) -> pl.DataFrame:
    """run (a job's lowest rank), model, gpu_label, gpus, global_batch, step_ns."""
    wanted = [c for c in ("run", "model", "gpu_label", "batch_size", "rank", "ranks", "distributed_job",
                          "time_per_iteration_ns", "parallelism", "experiment", "phase", "params") if c in runs.columns]
    base = runs.select(wanted).filter(pl.col("model").is_not_null() & pl.col("gpu_label").is_not_null())
    params = pl.col("params") if "params" in base.columns else pl.lit(None, pl.String)
    base = base.with_columns(pl.concat_str(
        params.map_elements(_workload, return_dtype=pl.String, skip_nulls=False),
        *(pl.col(c).fill_null("").str.replace_all(_SCALE_WORD, "") for c in ("experiment", "phase")
          if c in base.columns),
        separator="|").alias("workload"))
    if reasons.height:
        base = base.join(reasons.select("run", pl.col("gpus").alias("reason_gpus")), on="run", how="left")
    else:
        base = base.with_columns(pl.lit(None, pl.Int64).alias("reason_gpus"))
    step = step_summary.select("run", pl.col("step_ns")) if step_summary.height and "step_ns" in \
        step_summary.columns else pl.DataFrame(schema={"run": pl.String, "step_ns": pl.Float64})
    step = _with_busiest_gpu_steps(step, runs, single)
    job = pl.col("distributed_job").is_not_null()
    gpus = pl.when(job).then(pl.col("ranks")).otherwise(pl.col("reason_gpus").fill_null(1))
    # A step's wall time where the trace marks steps, or the busiest GPU's kernel time per
    # iteration where the log gives each GPU's; else kernel time per iteration, which is one
    # GPU's only where the run had one GPU (a summary of several adds their kernels together).
    base = base.join(step, on="run", how="left").with_columns(
        pl.when(pl.col("step_ns").is_not_null() | (gpus == 1) | job).then(
            pl.coalesce("step_ns", "time_per_iteration_ns")).alias("step_ns"),
        (pl.col("step_ns").is_null() & (gpus > 1) & ~job & pl.col("time_per_iteration_ns").is_not_null())
        .alias("summed"))
    # a distributed job's batch size is per process; DataParallel's (one process) is the global batch
    global_batch = pl.when(job).then(pl.col("batch_size") * pl.col("ranks")).otherwise(pl.col("batch_size"))
    base = base.with_columns(gpus.alias("gpus"), global_batch.alias("global_batch"))
    keys = ["run", "model", "gpu_label", "workload", "gpus", "global_batch", "step_ns", "summed"]
    jobs = base.filter(job).sort("rank").group_by("distributed_job", maintain_order=True).agg(
        *(pl.col(c).first() for c in keys if c != "step_ns"), pl.col("step_ns").median())
    singles = base.filter(~job).select(keys)
    both = pl.concat([singles.select(keys), jobs.select(keys)], how="vertical_relaxed")
    return both.filter((pl.col("step_ns").is_not_null() | pl.col("summed")) & pl.col("gpus").is_not_null())


def _with_busiest_gpu_steps(step: pl.DataFrame, runs: pl.DataFrame, single: pl.DataFrame | None) -> pl.DataFrame:
    """`step` (run, step_ns) with a step for each single-process run whose log gives each GPU's
    kernel time (`single_process`'s `busiest_ns`) and counts its iterations: the busiest GPU's
    kernel time per iteration, where no marked step gives one."""
    if single is None or not single.height or "iterations" not in runs.columns:
        return step
    busiest = single.filter(pl.col("per_device") & pl.col("busiest_ns").is_not_null()).join(
        runs.select("run", "iterations").filter(pl.col("iterations") > 0), on="run") \
        .select("run", (pl.col("busiest_ns") / pl.col("iterations")).alias("step_ns"))
    if not busiest.height:
        return step
    return pl.concat([step, busiest.join(step, on="run", how="anti")], how="vertical_relaxed")


# A scale in a name that became the run's experiment (`4gpu`, `8_ranks`, `2nodes`): left out of the
# workload, as the parameters below.
_SCALE_WORD = r"(?i)\d+[-_]?(?:gpus?|ranks?|nodes?|procs?|devices?)"
# Parameters that may differ between two runs of one workload at different scales.
_SCALE_PARAMS = {"batch_size", "gpus", "nodes", "ranks", "world_size", "rank", "local_rank", "ngpus", "num_gpus"}


def _workload(params: str | None) -> str:
    """The run's parameters but its scale's (`_SCALE_PARAMS`), as a key: two runs pair for
    scaling only where everything else is the same."""
    import json

    try:
        values = json.loads(params) if params else {}
    except ValueError:
        values = {}
    return json.dumps({k: v for k, v in sorted(values.items()) if k not in _SCALE_PARAMS})


def _scaling_pair(model: str, label: str, fewer: dict, more: dict) -> dict:
    """One pair (`fewer` GPUs, then `more`): strong scaling when the global batch is the same (ideal: the
    step time falls by the GPU ratio), weak when the batch per GPU is (ideal: the step time
    stays); unknown batches: neither, and the note says so."""
    row = {"model": model, "gpu_label": label, "run_a": fewer["run"], "run_b": more["run"], "gpus_a": fewer["gpus"],
           "gpus_b": more["gpus"], "step_ns_a": fewer["step_ns"], "step_ns_b": more["step_ns"],
           "global_batch_a": fewer["global_batch"], "global_batch_b": more["global_batch"],
           "speedup": fewer["step_ns"] / more["step_ns"] if fewer["step_ns"] and more["step_ns"] else None}
    ratio = more["gpus"] / fewer["gpus"]
    summed = [side for side in (fewer, more) if side["summed"]]
    if summed:
        row["note"] = (f"cannot tell per device: the summary adds {summed[0]['gpus']} GPUs' kernels together, so "
                       f"no step time of one GPU; {PER_DEVICE_LOG} would tell")
    elif fewer["global_batch"] is None or more["global_batch"] is None:
        row["note"] = "the logs give no batch size, so strong or weak scaling cannot be told"
    elif fewer["global_batch"] == more["global_batch"]:
        row.update(scaling=STRONG, efficiency_pct=100 * row["speedup"] / ratio if row["speedup"] else None)
    elif fewer["global_batch"] * ratio == more["global_batch"]:
        # the same work per GPU: ideal is the same step time
        row.update(scaling=WEAK, efficiency_pct=100 * row["speedup"] if row["speedup"] else None)
    else:
        row["note"] = (f"the global batch goes from {fewer['global_batch']} to {more['global_batch']} on "
                       f"{fewer['gpus']} -> {more['gpus']} GPUs: neither the same work nor the same work per GPU")
    return row
