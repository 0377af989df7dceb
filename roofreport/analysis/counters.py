"""From raw counters in `metrics` to the roofline columns of `kernels` (METHODOLOGY.md a, b).

One place turns counter names into FLOPs, bytes and time, whichever log they came from:

* CUDA-core FLOPs (a.1): fp64 = dadd + dmul + 2·dfma, fp32 = fadd + fmul + 2·ffma,
  fp16 = hadd + hmul + 2·hfma, from `smsp__` or `sm__sass_thread_inst_executed_op_*_pred_on.sum`
  (ncu) or `flop_count_dp/sp/hp` (nvprof, already FMA = 2).
* Bytes (b): DRAM = 32·sectors when sectors were logged (exact integers, while `dram__bytes.sum`
  is printed rounded to 3 significant digits in auto-scaled units), else the byte counters;
  L2 and L1 likewise; nvprof transactions × 32.
* Duration: `gpu__time_duration.sum`, else the `Duration` row of the Speed Of Light section.

Summary rows (per-kernel summaries) carry averages: totals are average × invocations.
"""

from __future__ import annotations

import polars as pl

_OP = "sass_thread_inst_executed_op_{}_pred_on.sum"

# output column -> list of (weight, [alternative counter names]); the first alternative present wins.
_FLOP_TERMS = {
    "flops_fp64": [(1, "dadd"), (1, "dmul"), (2, "dfma")],
    "flops_fp32": [(1, "fadd"), (1, "fmul"), (2, "ffma")],
    "flops_fp16": [(1, "hadd"), (1, "hmul"), (2, "hfma")],
}
_NVPROF_FLOPS = {"flops_fp64": "flop_count_dp", "flops_fp32": "flop_count_sp", "flops_fp16": "flop_count_hp"}

# output column -> ordered alternatives, each a list of (weight, counter); first complete one wins.
_BYTE_RULES = {
    "dram_bytes": [
        [(32, "dram__sectors.sum")],
        [(32, "dram__sectors_read.sum"), (32, "dram__sectors_write.sum")],
        [(1, "dram__bytes.sum")],
        [(1, "dram__bytes_read.sum"), (1, "dram__bytes_write.sum")],
        [(1, "dram__bytes_op_read.sum"), (1, "dram__bytes_op_write.sum")],
        [(32, "dram_read_transactions"), (32, "dram_write_transactions")],
        [(1, "dram_read_bytes"), (1, "dram_write_bytes")],
    ],
    "l2_bytes": [
        [(32, "lts__t_sectors.sum")],
        [(1, "lts__t_bytes.sum")],
        [(32, "l2_read_transactions"), (32, "l2_write_transactions")],
    ],
    "l1_bytes": [
        [(32, "l1tex__t_sectors.sum")],
        [(1, "l1tex__t_bytes.sum")],
    ],
}
_DURATION = ["gpu__time_duration.sum", "gpu__time_duration", "Duration"]


def _flop_names() -> set[str]:
    names = set(_NVPROF_FLOPS.values())
    for terms in _FLOP_TERMS.values():
        for _, op in terms:
            names.add("smsp__" + _OP.format(op))
            names.add("sm__" + _OP.format(op))
    return names


def counter_names() -> set[str]:
    names = _flop_names() | set(_DURATION)
    for alternatives in _BYTE_RULES.values():
        for alt in alternatives:
            names.update(n for _, n in alt)
    return names


def kernel_counters(metrics: pl.DataFrame) -> pl.DataFrame:
    """Per (source_file, launch_id): duration_ns, flops_*, *_bytes computed from the counters.

    Counters absent from the log give null, never 0.
    """
    keys = ["source_file", "launch_id"]
    wanted = metrics.filter(pl.col("metric").is_in(list(counter_names()))
                            & (pl.col("stat").is_null() | (pl.col("stat") == "avg")))
    if not wanted.height:
        return pl.DataFrame(schema={"source_file": pl.String, "launch_id": pl.Int64})
    # Only the Speed Of Light "Duration" row means kernel duration.
    wanted = wanted.filter((pl.col("metric") != "Duration")
                           | pl.col("section").fill_null("").str.contains("(?i)speed of light"))
    wide = wanted.group_by(keys).agg(
        [pl.col("value").filter(pl.col("metric") == name).first().alias(name)
         for name in sorted(counter_names())])
    out = [_flops(col, terms) for col, terms in _FLOP_TERMS.items()]
    out += [_first_complete(col, alts) for col, alts in _BYTE_RULES.items()]
    out.append(pl.coalesce([pl.col(n) for n in _DURATION]).alias("duration_ns"))
    return wide.select(*keys, *out)


def _flops(column: str, terms: list[tuple[int, str]]) -> pl.Expr:
    """Sum of weighted op counters; smsp__ and sm__ spellings are the same counter."""
    def op(name: str) -> pl.Expr:
        return pl.coalesce(pl.col("smsp__" + _OP.format(name)), pl.col("sm__" + _OP.format(name)))

    present = pl.any_horizontal([op(name).is_not_null() for _, name in terms])
    total = pl.sum_horizontal([op(name).fill_null(0) * w for w, name in terms])
    ncu = pl.when(present).then(total)
    return pl.coalesce(ncu, pl.col(_NVPROF_FLOPS[column])).alias(column)


def _first_complete(column: str, alternatives: list[list[tuple[int, str]]]) -> pl.Expr:
    exprs = []
    for alt in alternatives:
        complete = pl.all_horizontal([pl.col(n).is_not_null() for _, n in alt])
        exprs.append(pl.when(complete).then(pl.sum_horizontal([pl.col(n) * w for w, n in alt])))
    return pl.coalesce(exprs).alias(column)


def fill_kernel_counters(kernels: pl.DataFrame, metrics: pl.DataFrame) -> pl.DataFrame:
    """kernels with duration/FLOP/byte columns filled from `metrics` where the row lacks them.
    Summary rows get totals (average × count)."""
    if not kernels.height or not metrics.height:
        return kernels
    counters = kernel_counters(metrics)
    if not counters.height:
        return kernels
    cols = [c for c in counters.columns if c not in ("source_file", "launch_id")]
    joined = kernels.join(counters, on=["source_file", "launch_id"], how="left", suffix="_counted")
    per_row = pl.when(pl.col("kind") == "summary").then(pl.col("count").cast(pl.Float64)).otherwise(1.0)
    return joined.with_columns(
        [pl.coalesce(pl.col(c), pl.col(f"{c}_counted") * per_row).alias(c) for c in cols]
    ).drop([f"{c}_counted" for c in cols])
