"""The collectives of each rank: per collective and message size, how many ran, how long they
took and the bandwidth that gives, as nccl-tests reports it.

From the communication kernels of the activities (NCCL and RCCL: `ranks.communication_kernels`)
and what PyTorch wrote on each (Kineto's collective args, in `metrics` section "kineto
collective": `Collective name`, `In msg nelems`, `Out msg nelems`, `Group size`, `dtype`):

* `collective`: all-reduce, all-gather, reduce-scatter, all-to-all, broadcast, reduce,
  send/recv, from the args' collective name, else from the kernel's name
  (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`); "other" where neither says (RCCL's
  `rcclGenericKernel` names none);
* `message_bytes`: the whole array, as nccl-tests counts it: `Out msg nelems` for all-gather
  (each rank's part times the group), `In msg nelems` otherwise (reduce-scatter's input is the
  whole array), times the `dtype`'s size; null where the trace records no message;
* `group_size`: the args' `Group size`, else the run's world size;
* `algbw_bytes_per_s` = message bytes / time of one call; `busbw_bytes_per_s` = algbw times
  nccl-tests' factor: 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
  all-to-all, 1 otherwise (`bus_factor`);
* a collective kernel runs from the moment its rank calls it until every rank has and the data
  has moved: a rank that arrives early waits inside the kernel. So the bandwidth of kernel time
  is a lower bound (`bandwidth_lower_bound`), the lower the longer the rank waited. Where every
  rank of the job is in the data (as many ranks as its world size), each call's `transfer_ns`
  is the time of the rank that waited least (the last to arrive; its kernel still holds some
  handshake: its bandwidth is a lower bound too, a close one), and `wait_ns` the rest of this
  rank's time;
  `transfer_busbw_bytes_per_s` is the bus bandwidth of those transfer times.

`collective_table` is pure: frames in, the frame out.
"""

from __future__ import annotations

import polars as pl

from roofreport.model import parallel, ranks

COLLECTIVE_COLUMNS = {
    "run": pl.String, "rank": pl.Int64, "distributed_job": pl.String, "collective": pl.String,
    "dtype": pl.String, "message_bytes": pl.Float64, "group_size": pl.Int64, "count": pl.Int64,
    "time_ns": pl.Float64, "mean_ns": pl.Float64, "algbw_bytes_per_s": pl.Float64,
    "bus_factor": pl.Float64, "busbw_bytes_per_s": pl.Float64, "bandwidth_lower_bound": pl.Boolean,
    "transfer_ns": pl.Float64, "wait_ns": pl.Float64, "transfer_busbw_bytes_per_s": pl.Float64,
}
SECTION = "kineto collective"
# c10's scalar type names (Kineto's `dtype`) -> bytes per element.
_DTYPE_BYTES = {"float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8, "float64": 8,
                "long": 8, "int64": 8, "int": 4, "int32": 4, "short": 2, "int16": 2, "byte": 1, "char": 1,
                "bool": 1, "uint8": 1, "int8": 1, "complexfloat": 8, "complexdouble": 16, "complexhalf": 4}
_ALL_RANKS_FACTOR = ("reduce-scatter", "all-gather", "all-to-all")
_NO_TRANSFER = ("send/recv", "other")


def collective_table(activities: pl.DataFrame, metrics: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """COLLECTIVE_COLUMNS, one row per (run, rank, collective, dtype, message size, group
    size) with communication kernels (module docstring)."""
    calls = _calls(activities, metrics, runs)
    if not calls.height:
        return pl.DataFrame(schema=COLLECTIVE_COLUMNS)
    calls = _with_transfer(calls)
    keys = ["run", "rank", "distributed_job", "collective", "dtype", "message_bytes", "group_size"]
    out = calls.group_by(keys).agg(
        pl.len().alias("count"), pl.col("duration_ns").sum().alias("time_ns"),
        pl.when(pl.col("transfer_ns").is_not_null().all()).then(pl.col("transfer_ns").sum()).alias("transfer_ns"))
    factor = bus_factor(pl.col("collective"), pl.col("group_size"))
    seconds = pl.col("time_ns") / 1e9
    moved = pl.col("message_bytes") * pl.col("count")
    out = out.with_columns(
        (pl.col("time_ns") / pl.col("count")).alias("mean_ns"), factor.alias("bus_factor"),
        (moved / seconds).alias("algbw_bytes_per_s"), pl.lit(True).alias("bandwidth_lower_bound"),
        (pl.col("time_ns") - pl.col("transfer_ns")).alias("wait_ns"),
        (moved / (pl.col("transfer_ns") / 1e9) * factor).alias("transfer_busbw_bytes_per_s"))
    out = out.with_columns((pl.col("algbw_bytes_per_s") * pl.col("bus_factor")).alias("busbw_bytes_per_s"))
    return out.select([pl.col(c).cast(t) for c, t in COLLECTIVE_COLUMNS.items()]).sort(
        "run", "rank", "collective", "message_bytes", nulls_last=True)


def bus_factor(collective: pl.Expr, group: pl.Expr) -> pl.Expr:
    """nccl-tests' bus bandwidth factor for a collective among `group` ranks."""
    share = (group - 1) / group
    return (pl.when(collective == "all-reduce").then(2 * share)
            .when(collective.is_in(_ALL_RANKS_FACTOR)).then(share)
            .otherwise(pl.lit(1.0))).cast(pl.Float64)


def _calls(activities: pl.DataFrame, metrics: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """One row per communication kernel: run, rank, distributed_job, world_size, start_ns,
    duration_ns, collective, dtype, message_bytes, group_size."""
    comm = activities.filter((pl.col("kind") == "kernel") & ranks.communication_kernels(pl.col("name"))
                             & pl.col("duration_ns").is_not_null())
    if not comm.height:
        return comm
    comm = ranks.with_rank(comm, runs).join(_job(runs), on="run", how="left")
    comm = comm.join(_args(metrics), left_on=["run", "source_file", "source_line"],
                     right_on=["run", "source_file", "launch_id"], how="left")
    collective = pl.coalesce(parallel.kind(pl.col("Collective name")), parallel.kind(pl.col("name")), pl.lit("other"))
    size = _element_bytes(pl.col("dtype"))
    nelems = pl.when(collective == "all-gather").then(pl.col("Out msg nelems")).otherwise(pl.col("In msg nelems"))
    return comm.select(
        "run", "rank", "distributed_job", "world_size", "start_ns", "duration_ns", collective.alias("collective"),
        "dtype",
        (nelems * size).alias("message_bytes"),
        pl.coalesce(pl.col("Group size").cast(pl.Int64), pl.col("world_size")).alias("group_size"))


def _element_bytes(dtype: pl.Expr) -> pl.Expr:
    """Bytes per element of a c10 scalar type name (`Float`, `BFloat16`); null when unknown."""
    lowered = dtype.str.to_lowercase()
    known = lowered.replace_strict(_DTYPE_BYTES, default=None, return_dtype=pl.Float64)
    return pl.when(lowered.str.starts_with("float8")).then(pl.lit(1.0)).otherwise(known)


def _args(metrics: pl.DataFrame) -> pl.DataFrame:
    """run, source_file, launch_id and the collective args of each launch, one column each."""
    columns = {"Collective name": pl.String, "dtype": pl.String, "In msg nelems": pl.Float64,
               "Out msg nelems": pl.Float64, "Group size": pl.Float64}
    rows = metrics.filter(pl.col("section") == SECTION) if "section" in metrics.columns else metrics.clear()
    keys = ["run", "source_file", "launch_id"]
    if not rows.height:
        return pl.DataFrame(schema={"run": pl.String, "source_file": pl.String, "launch_id": pl.Int64, **columns})
    wide = rows.group_by(keys).agg(
        *(pl.col("value_text" if dtype == pl.String else "value").filter(pl.col("metric") == name).first()
          .cast(dtype).alias(name) for name, dtype in columns.items()))
    return wide


def _job(runs: pl.DataFrame) -> pl.DataFrame:
    wanted = {"distributed_job": pl.String, "world_size": pl.Int64}
    return runs.select("run", *(pl.col(c) if c in runs.columns else pl.lit(None, t).alias(c)
                                for c, t in wanted.items()))


def _with_transfer(calls: pl.DataFrame) -> pl.DataFrame:
    """`transfer_ns` of each call: the least time any rank of its job spent in the same call
    (the n-th call of that collective and size on each rank), where every rank of the job
    (its world size) is in the data and made the call; else null. Point-to-point calls pair
    two ranks, not the job: they get none, nor do kernels whose collective is unknown."""
    ordinal = pl.int_range(pl.len()).over("run", "rank", "collective", "message_bytes", order_by="start_ns")
    calls = calls.with_columns(ordinal.alias("call"))
    in_job = calls.filter(pl.col("distributed_job").is_not_null() & ~pl.col("collective").is_in(_NO_TRANSFER))
    ranks_of_job = in_job.group_by("distributed_job").agg(
        pl.col("rank").n_unique().alias("job_ranks"), pl.col("world_size").max().alias("world"))
    same_call = ["distributed_job", "collective", "message_bytes", "call"]
    least = in_job.group_by(same_call).agg(
        pl.col("duration_ns").min().alias("least_ns"), pl.col("rank").n_unique().alias("call_ranks"))
    least = least.join(ranks_of_job, on="distributed_job").filter(
        (pl.col("call_ranks") == pl.col("world")) & (pl.col("job_ranks") == pl.col("world"))
        & (pl.col("world") > 1))
    return calls.join(least.select(*same_call, "least_ns"), on=same_call, how="left", nulls_equal=True).rename(
        {"least_ns": "transfer_ns"}).drop("call")
