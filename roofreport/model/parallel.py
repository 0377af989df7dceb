"""How a run's work was split over GPUs: its `parallelism`, from the collectives it ran.

One module names the collectives (`kind`: NCCL's and RCCL's kernel names, Kineto's
`Collective name`) and says what they show of the split (`from_kinds`); the run totals
(`totals.py`), the reasons a comparison cites (`analysis/reasons.py`) and the collectives table
(`analysis/collectives.py`) all ask it.

* `DATA_PARALLEL`, "data-parallel": all-reduce of gradients between processes
  (DistributedDataParallel, Horovod);
* `SHARDED`, "data-parallel, sharded": all-gather with reduce-scatter (FSDP, ZeRO);
* `SINGLE_PROCESS`, "DataParallel single-process": broadcast and reduce without all-reduce,
  one process driving several GPUs (PyTorch's `nn.DataParallel`: the weights broadcast from
  GPU 0 and the gradients reduced to it every step, so GPU 0 does more than the others);
* `PIPELINE`, "pipeline": point-to-point send/recv only, between stages of a pipeline;
* `TENSOR`, "tensor": all-reduce within groups smaller than the job (`Group size` below the
  world size: Megatron's tensor-parallel groups; a hybrid job's data-parallel all-reduce runs in
  groups too, so this reads "tensor (or hybrid)" in words);
* null: no collective ran (one GPU, or a log that does not list kernels by name).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from roofreport.tables import lazy

DATA_PARALLEL = "data-parallel"
SHARDED = "data-parallel, sharded"
SINGLE_PROCESS = "DataParallel single-process"
PIPELINE = "pipeline"
TENSOR = "tensor"
COLUMN = {"run": pl.String, "parallelism": pl.String}

# Collective kinds, by the letters of a collective's or a kernel's name (case and `_` dropped),
# first match wins: `allgather` before `reduce` so `reducescatter` and `allreduce` go right.
KINDS = (("all-reduce", "allreduce"), ("reduce-scatter", "reducescatter"), ("all-gather", "allgather"),
         ("all-to-all", "alltoall"), ("broadcast", "broadcast|bcast"), ("send/recv", "sendrecv|send|recv"),
         ("reduce", "reduce"))
KIND_ORDER = ("all-reduce", "all-gather", "reduce-scatter", "broadcast", "all-to-all", "send/recv", "reduce")


def kind(names: pl.Expr) -> pl.Expr:
    """The collective a collective's or a kernel's name says (`KINDS`), else null."""
    letters = names.str.to_lowercase().str.replace_all(r"[^a-z]", "")
    out = pl.lit(None, pl.String)
    for label, pattern in reversed(KINDS):
        out = pl.when(letters.str.contains(pattern)).then(pl.lit(label)).otherwise(out)
    return out


def from_kinds(kinds: set[str], grouped: bool = False) -> str | None:
    """The parallelism a run's collective kinds show (module docstring); `grouped`: its
    all-reduce ran in groups smaller than its job."""
    if "all-gather" in kinds and "reduce-scatter" in kinds:
        return SHARDED
    if "all-reduce" in kinds:
        return TENSOR if grouped else DATA_PARALLEL
    if kinds & {"broadcast", "reduce"}:
        return SINGLE_PROCESS
    if kinds == {"send/recv"}:
        return PIPELINE
    return None


def run_parallelism(time_rows: pl.DataFrame, tables: Mapping[str, pl.DataFrame] | None = None) -> pl.DataFrame:
    """run, parallelism of each run whose time rows (`Model.time_rows`) hold a collective
    (the communication category's kernels). `tables` (the metrics and runs tables): an
    all-reduce whose Kineto `Group size` is below its run's world size ran in groups."""
    comm = time_rows.filter(pl.col("category") == "communication") if time_rows.height else time_rows
    if not comm.height:
        return pl.DataFrame(schema=COLUMN)
    comm = comm.with_columns(kind(pl.col("name")).alias("kind"))
    grouped = _grouped(comm.filter(pl.col("kind") == "all-reduce"), tables or {})
    per_run = comm.select("run", "kind").drop_nulls().unique().group_by("run").agg(pl.col("kind"))
    rows = [{"run": run, "parallelism": from_kinds(set(found), run in grouped)} for run, found in per_run.iter_rows()]
    return pl.DataFrame(rows, schema=COLUMN)


def _grouped(all_reduce: pl.DataFrame, tables: Mapping[str, pl.DataFrame]) -> set[str]:
    """The runs whose all-reduce ran in groups smaller than their world size (Kineto's
    collective args, metrics section "kineto collective", metric `Group size`)."""
    runs = tables.get("runs")
    metrics = lazy.scan(tables, "metrics") if all_reduce.height else None
    if metrics is None or runs is None or "world_size" not in runs.columns:
        return set()
    files = all_reduce["source_file"].unique().to_list()
    sizes = metrics.filter(pl.col("source_file").is_in(files) & (pl.col("section") == "kineto collective")
                           & (pl.col("metric") == "Group size")).select(
        "source_file", pl.col("launch_id").alias("order"), pl.col("value").alias("group")).collect()
    joined = all_reduce.join(sizes, on=["source_file", "order"]).join(runs.select("run", "world_size"), on="run")
    return set(joined.filter(pl.col("group") < pl.col("world_size"))["run"].to_list())
