"""The FP instruction mix and the ceiling it allows (issue 31, item 3).

A CUDA core retires one FP instruction per lane and cycle; an FMA does 2 FLOPs, an add or a
multiply 1. The datasheet peak assumes every instruction is an FMA. A code whose share of FMA
among its FP instructions is f can at most reach

    peak × (1 + f) / 2

(half the peak without FMA): the instruction-mix ceiling of the hierarchical roofline (Yang et
al., "Hierarchical Roofline Analysis", 2020: 58% FMA gives 5.3 of 6.7 TFLOP/s; NERSC's GPP
example). The counts come from the logs' per-op counters:

* ncu: `smsp__` / `sm__sass_thread_inst_executed_op_{d,f,h}{add,mul,fma}_pred_on.sum` (or their
  `.per_cycle_elapsed` rates: one denominator, so the same share);
* nvprof: `flop_count_{dp,sp,hp}_{add,mul,fma}` (each FMA counts 1 there, and
  `flop_count_sp = add + mul + 2 × fma`).

A share needs all three ops of a precision; a kernel that logged only some of them has none.
Tensor (matrix-core) work has its own ceiling, the tensor peak: the mix applies to CUDA-core
precisions only.
"""

from __future__ import annotations

import polars as pl

_NCU_OP = "sass_thread_inst_executed_op_{}_pred_on.sum"
_PREFIX = {"fp64": "d", "fp32": "f", "fp16": "h"}
_NVPROF = {"fp64": "dp", "fp32": "sp", "fp16": "hp"}
OPS = ("add", "mul", "fma")
KEYS = ["source_file", "launch_id"]


def counter_ops() -> dict[str, tuple[str, str]]:
    """Every counter name this module reads -> (precision, op)."""
    out = {}
    for precision, letter in _PREFIX.items():
        for op in OPS:
            for unit in ("smsp", "sm"):
                name = f"{unit}__" + _NCU_OP.format(letter + op)
                out[name] = (precision, op)
                out[name + ".per_cycle_elapsed"] = (precision, op)
            out[f"flop_count_{_NVPROF[precision]}_{op}"] = (precision, op)
    return out


def fma_shares(metrics: pl.LazyFrame | None) -> pl.DataFrame:
    """source_file, launch_id, precision, fma_share (FMA instructions / FP instructions of
    that precision) of every kernel whose counters give all three ops; `metrics` is a scan."""
    schema = {"source_file": pl.String, "launch_id": pl.Int64, "precision": pl.String, "fma_share": pl.Float64}
    if metrics is None or "metric" not in metrics.collect_schema().names():
        return pl.DataFrame(schema=schema)
    ops = counter_ops()
    names = list(ops)
    rows = metrics.filter(pl.col("metric").is_in(names) & pl.col("value").is_not_null()
                          & (pl.col("stat").is_null() | (pl.col("stat") == "avg"))).select(
        "source_file", "launch_id", "metric", "value").collect()
    if not rows.height:
        return pl.DataFrame(schema=schema)
    rows = rows.with_columns(
        pl.col("metric").replace_strict({n: p for n, (p, _) in ops.items()}, return_dtype=pl.String).alias("precision"),
        pl.col("metric").replace_strict({n: o for n, (_, o) in ops.items()}, return_dtype=pl.String).alias("op"))
    # smsp__/sm__ spellings, counts and rates, are one counter: the first value of each op
    per_op = rows.group_by(*KEYS, "precision", "op", maintain_order=True).agg(pl.col("value").first())
    wide = per_op.group_by(*KEYS, "precision").agg(
        *[pl.col("value").filter(pl.col("op") == op).first().alias(op) for op in OPS])
    total = pl.col("add") + pl.col("mul") + pl.col("fma")
    return wide.filter(pl.all_horizontal([pl.col(op).is_not_null() for op in OPS]) & (total > 0)).select(
        pl.col("source_file").cast(pl.String), pl.col("launch_id").cast(pl.Int64), "precision",
        (pl.col("fma") / total).alias("fma_share"))


def combined_share(flops: list[float | None], shares: list[float | None]) -> float | None:
    """The FMA share of several kernels together: each kernel's FP instructions are its
    FLOPs / (1 + f), of which f are FMA. None when no kernel has a share."""
    instructions = fma = 0.0
    for flop, share in zip(flops, shares):
        if flop and share is not None:
            count = flop / (1.0 + share)
            instructions += count
            fma += count * share
    return fma / instructions if instructions else None


def ceiling_factor(share: float | None) -> float:
    """The fraction of the FMA peak an instruction mix can reach: (1 + f) / 2 (1 when unknown)."""
    return 1.0 if share is None else (1.0 + share) / 2.0


def ceiling_name(label: str, share: float | None) -> str:
    """The ceiling's name: "FP32 peak", "FP32 without FMA (half the peak)", "FP32 at 58% FMA"."""
    if share is None or share >= 0.995:
        return f"{label} peak"
    if share < 0.005:
        return f"{label} without FMA (half the peak)"
    return f"{label} at {share:.0%} FMA"


def short_name(name: str) -> str:
    """A ceiling's name as a chart labels its line: "FP32 no FMA", "FP32 58% FMA"."""
    return name.replace(" without FMA (half the peak)", " no FMA").replace(" at ", " ")
