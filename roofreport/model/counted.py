"""Which kernel rows give a run's FLOPs and bytes: every row that carries a counter, from one
file per run.

A kernel counts whether it did FLOPs or not: a copy or an elementwise kernel moves DRAM bytes
the run's arithmetic intensity must include. A run can hold the same counted profile twice
(ncu's details page and raw page exported from one report, a log and its CSV cut-out); like the
time (`timing.py`), the counters of a run come from ONE file, never a sum: the one with the most
counted launches (then the most counted quantities, then the first by name).
"""

from __future__ import annotations

import polars as pl

from roofreport.tables import schema

FLOP_COLUMNS = ["flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor"]
COUNTERS = [*FLOP_COLUMNS, "dram_bytes"]


def has_counter() -> pl.Expr:
    """True for a kernel row with a FLOP or DRAM-byte count (zero counts too)."""
    return pl.any_horizontal([pl.col(c).is_not_null() for c in COUNTERS])


def counter_rows(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """The kernel rows whose counters make up each run's FLOPs and bytes (kernels schema)."""
    kernels = tables.get("kernels")
    if kernels is None or not kernels.height:
        return schema.empty("kernels")
    rows = kernels.filter(has_counter() & pl.col("run").is_not_null())
    if not rows.height:
        return rows
    per_file = rows.group_by("run", "source_file").agg(
        pl.col("count").fill_null(1).sum().alias("launches"),
        pl.sum_horizontal([pl.col(c).is_not_null().sum() for c in COUNTERS]).alias("quantities"))
    chosen = (per_file.sort(["run", "launches", "quantities", "source_file"],
                            descending=[False, True, True, False], nulls_last=True)
              .group_by("run", maintain_order=True).first().select("run", "source_file"))
    return rows.join(chosen, on=["run", "source_file"], how="semi")


def row_flops() -> pl.Expr:
    """All FLOPs of a row, every precision (null when the row counted none)."""
    counted = pl.any_horizontal([pl.col(c).is_not_null() for c in FLOP_COLUMNS])
    return pl.when(counted).then(pl.sum_horizontal([pl.col(c).fill_null(0.0) for c in FLOP_COLUMNS]))
