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

import polars as pl

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


def run_parallelism(time_rows: pl.DataFrame) -> pl.DataFrame:
    """run, parallelism of each run whose time rows (`Model.time_rows`) hold a collective
    (the communication category's kernels)."""
    comm = time_rows.filter(pl.col("category") == "communication") if time_rows.height else time_rows
    if not comm.height:
        return pl.DataFrame(schema=COLUMN)
    kinds = comm.select("run", kind(pl.col("name")).alias("kind")).drop_nulls().unique()
    per_run = kinds.group_by("run").agg(pl.col("kind"))
    rows = [{"run": run, "parallelism": from_kinds(set(found))} for run, found in per_run.iter_rows()]
    return pl.DataFrame(rows, schema=COLUMN)
