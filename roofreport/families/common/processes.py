"""The processes of one trace that several processes wrote: each one a rank of one job.

Profilers that follow child processes write every process's GPU work into one file: `nsys
profile torchrun ...` or `nsys profile mpirun ...` gives one report whose activity tables carry
the process (`globalPid`), and rocprof's dispatch tables carry a `pid` column. A trace of one
process that drove several GPUs (PyTorch's DataParallel) is one rank; a trace of several
processes, each with its own GPU work, is a distributed job held in one file: each process is
one rank.

Neither tool records the rank a process had in its job (MPI's or torch.distributed's): the
rank here is the process's place among the file's processes, ordered by the lowest GPU it ran
work on, then by its process id. Launchers give rank r of a node the node's GPU r
(`torchrun`'s `LOCAL_RANK`, `mpirun` with one GPU per rank), so on one node this is the job's
own rank; where processes share GPUs, the order of their process ids (the order launchers start
them in).

Traces that name the device but no process (nsys's `cuda_gpu_trace` CSV and text, nvprof's
`--print-gpu-trace`) cannot tell several processes from one that drove several GPUs: their rows
get no rank, and the run reads as one rank, as DataParallel's does. Summaries summed over
processes (nsys `--stats` of several MPI ranks printed into one log) hold no per-rank figures.

`process_ranks` gives the rank of every row, or None where the trace is one process's (or the
rows name no process): then the rows carry no rank and the run none either.
"""

from __future__ import annotations

import polars as pl


def process_ranks(rows: pl.DataFrame, process: str, device: str | None = None) -> pl.Series | None:
    """`rank` (Int64) for each row of `rows`: its process's place among the processes that ran
    GPU work (module docstring), from the `process` column and the `device` column (a GPU's
    number: the lowest one a process used orders it first). None when fewer than two processes
    did; rows without a process get a null rank."""
    if process not in rows.columns:
        return None
    pids = rows[process].cast(pl.Int64, strict=False)
    if pids.drop_nulls().n_unique() < 2:
        return None
    devices = (rows[device].cast(pl.String).str.extract(r"(\d+)\)?\s*$", 1).cast(pl.Int64, strict=False)
               if device is not None and device in rows.columns else pl.Series([None] * rows.height, dtype=pl.Int64))
    frame = pl.DataFrame({"pid": pids, "dev": devices})
    order = (frame.drop_nulls("pid").group_by("pid").agg(pl.col("dev").min())
             .sort("dev", "pid", nulls_last=True).with_row_index("rank"))
    return frame.join(order.select("pid", pl.col("rank").cast(pl.Int64)), on="pid", how="left",
                      maintain_order="left")["rank"].rename("rank")


def count(ranks: pl.Series | None) -> int | None:
    """How many ranks `process_ranks` found (None for a trace of one process)."""
    return None if ranks is None else ranks.drop_nulls().n_unique()
