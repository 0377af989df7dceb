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


def partial_parallelism(chosen: pl.DataFrame, tables: Mapping[str, pl.DataFrame] | None = None) -> pl.DataFrame:
    """run, parallelism from each run's chosen time partial (`totals.chosen_partials`: its
    collective kinds and the order of its all-reduce kernels), so the answer is the same whether
    a run's rows are in memory or its batches' partials are all there is (a dataset folder). An
    all-reduce whose Kineto `Group size` is below its run's world size ran in groups."""
    if not chosen.height or "collectives" not in chosen.columns:
        return pl.DataFrame(schema=COLUMN)
    with_kinds = chosen.filter(pl.col("collectives").list.len() > 0)
    if not with_kinds.height:
        return pl.DataFrame(schema=COLUMN)
    all_reduce = with_kinds.select("run", "source_file", pl.col("all_reduce_orders").alias("order")) \
        .explode("order").drop_nulls("order")
    grouped = _grouped(all_reduce, tables or {}) if all_reduce.height else set()
    rows = [{"run": run, "parallelism": from_kinds(set(kinds), run in grouped)}
            for run, kinds in with_kinds.select("run", "collectives").iter_rows()]
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
