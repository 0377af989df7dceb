"""Which kernel rows give a run's FLOPs and bytes: every row that carries a counter, from one
file per run.

A kernel counts whether it did FLOPs or not: a copy or an elementwise kernel moves DRAM bytes
the run's arithmetic intensity must include. A run can hold the same counted profile twice
(ncu's details page and raw page exported from one report, a log and its CSV cut-out); like the
time (`timing.py`), the counters of a run come from ONE file, never a sum: the one with the most
counted launches (then the most counted quantities, then the first by name).

A profiler that counts in passes (rocprofv3's `pmc_N/` folders: `families/rocm/passes.py`) runs
the application once per pass, each pass counting some counters: its files are one profile, not
copies. Their rows are joined into one row per dispatch (the first pass's, on the kernel name and
its occurrence number), each counted quantity taken from the pass that counted it, so that FLOPs
counted in one pass and bytes in another meet (`joined_passes`).
"""

from __future__ import annotations

import polars as pl

from roofreport.families.rocm import passes
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
    rows = joined_passes(rows)
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


# What a pass counted: the quantities of its counters (the dispatch's identity and time stay the
# first pass's).
PASS_QUANTITIES = [*FLOP_COLUMNS, "dram_bytes", "l2_bytes", "l1_bytes", "dram_bytes_derived", "flops_complete",
                   "tensor_active", "tensor_precision"]


def joined_passes(rows: pl.DataFrame) -> pl.DataFrame:
    """`rows` (counted kernel rows) with the counter passes of each application joined: the rows of
    its first pass, each quantity it left empty filled from the same dispatch of a later pass (the
    same kernel's k-th launch there), the later passes' rows gone. Rows of no pass are kept as
    they are."""
    files = rows["source_file"].unique().to_list()
    found = {f: passes.counter_pass(f) for f in files if f is not None}
    found = {f: p for f, p in found.items() if p is not None}
    if len(found) < 2:
        return rows
    order = rows.columns
    info = pl.DataFrame({"source_file": list(found), "__app": [str(p[0]) for p in found.values()],
                         "__pass": [p[1] for p in found.values()]}, schema={"source_file": pl.String, "__app": pl.String,
                                                                            "__pass": pl.Int64})
    tagged = rows.join(info, on="source_file", how="left").with_columns(
        pl.int_range(pl.len()).over(["source_file", "name"], order_by="launch_id").alias("__nth"))
    first = tagged.filter(pl.col("__pass").is_not_null()).group_by("run", "__app").agg(pl.col("__pass").min().alias("__first"))
    tagged = tagged.join(first, on=["run", "__app"], how="left")
    base = tagged.filter(pl.col("__pass").is_null() | (pl.col("__pass") == pl.col("__first")))
    later = tagged.filter(pl.col("__pass") > pl.col("__first")).sort("__pass")
    if not later.height:
        return rows
    quantities = [c for c in PASS_QUANTITIES if c in rows.columns]
    # the first value each later pass counted for a dispatch (the lowest pass first)
    filled = later.group_by("run", "__app", "name", "__nth").agg(
        [pl.col(c).drop_nulls().first().alias(f"__{c}") for c in quantities])
    joined = base.join(filled, on=["run", "__app", "name", "__nth"], how="left")
    return joined.with_columns([pl.coalesce(c, f"__{c}").alias(c) for c in quantities]).select(order)
