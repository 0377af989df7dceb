"""The conclusion of each comparison of GPUs: which is faster, by how much, and why, as frames.

Page 1 of the report and `build --json-summary` are written from these frames; the report only
puts them into words.

* `speedup_reasons`: one row per workload compared on two GPUs (`speedup.speedups`, on a like
  basis: time per iteration, else the whole run's kernel time), with each side's facts from its
  logs (`reasons.run_reasons` of the run that stands for the cell: bound class and % of its
  roof, tensor-core share of kernel time, communication share, collectives and GPU count,
  one-time copies, clock-locked ncu timing) and the two GPUs' peak ratios: compute at the runs'
  precision and DRAM bandwidth. A speedup above the larger of the two (by more than `SLACK`) is
  flagged `exceeds`, with its likely `cause`:
    - `gpu count`: the two runs' times are summed over different numbers of GPUs (collectives
      on one side only, or other counts);
    - `tensor cores`: the faster GPU ran much more of its kernel time on tensor cores, whose peak
      the compute ratio at the runs' precision leaves out (TF32 on an A100 for FP32 work);
    - `kernel mix`: a kernel category takes far more time on the slower GPU than the ratio
      allows (`cause_category`, with each side's time and launches per iteration: many more
      launches means the libraries picked other algorithms);
    - none found: `would_tell` names the log that would (a kernel trace of both runs).
* `conclusions`: per model, experiment and pair of GPUs (`speedup.model_summary`: the geometric
  mean over the experiment's configurations, never across experiments), the same facts as
  ranges over its configurations, how many exceed the peak ratio, and the most common cause.
* `experiment_conclusions`: per experiment and pair of GPUs, its models with their means (the
  rows of `conclusions`, never a mean across models) and the facts of all its configurations:
  what page 1 says in one sentence per experiment.
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from roofreport import gpu
from roofreport.analysis import speedup

SLACK = 1.1              # a speedup this much above the peak ratio is flagged (timing noise stays quiet)
TENSOR_GAP = 0.2         # tensor-core share of kernel time one side has more than the other: a cause
GPU_COUNT, TENSOR_CORES, KERNEL_MIX = "gpu count", "tensor cores", "kernel mix"
TRACE, DEVICE_TRACE = "kernel trace", "per-device trace"
_SIDE_FACTS = {"tensor_share": pl.Float64, "communication_share": pl.Float64, "collectives": pl.String,
               "parallelism": pl.String, "gpus": pl.Int64, "gpus_source": pl.String, "multi_gpu": pl.Boolean,
               "setup_share": pl.Float64, "clock_locked": pl.Boolean, "time_source": pl.String,
               "bound": pl.String, "pct_of_roof": pl.Float64, "flops_complete": pl.Boolean,
               "roof_precision": pl.String, "peak_flops_per_s": pl.Float64, "peak_dram_bytes_per_s": pl.Float64,
               "roof_clock": pl.String}
REASON_COLUMNS = {
    **{c: t for c, t in speedup.SPEEDUP_COLUMNS.items() if c not in ("comparable", "reason", "reason_kind")},
    **{f"{side}_{c}": t for side in ("faster", "slower") for c, t in _SIDE_FACTS.items()},
    "peak_ratio_compute": pl.Float64, "peak_ratio_dram": pl.Float64, "peak_ratio": pl.Float64,
    "tensor_peak_ratio": pl.Float64, "tensor_peak_flops_per_s": pl.Float64, "tensor_peak_precision": pl.String,
    "exceeds": pl.Boolean, "cause": pl.String, "cause_category": pl.String,
    "cause_faster_ns": pl.Float64, "cause_slower_ns": pl.Float64,
    "cause_faster_launches": pl.Float64, "cause_slower_launches": pl.Float64, "would_tell": pl.String,
}
_RANGES = ("tensor_share", "communication_share", "setup_share", "pct_of_roof")
_ONE_VALUE = ("collectives", "parallelism", "gpus", "gpus_source", "roof_precision", "roof_clock")
CONCLUSION_COLUMNS = {
    **speedup.SUMMARY_COLUMNS,
    **{f"{side}_{c}_{end}": pl.Float64 for side in ("faster", "slower") for c in _RANGES for end in ("min", "max")},
    **{f"{side}_{c}": _SIDE_FACTS[c] for side in ("faster", "slower") for c in _ONE_VALUE},
    **{f"{side}_bounds": pl.String for side in ("faster", "slower")},
    **{f"{side}_{c}": pl.Boolean for side in ("faster", "slower") for c in ("multi_gpu", "clock_locked",
                                                                             "flops_complete")},
    "peak_ratio_compute": pl.Float64, "peak_ratio_dram": pl.Float64, "peak_ratio": pl.Float64,
    "peak_ratio_compute_min": pl.Float64, "peak_ratio_compute_max": pl.Float64,
    "tensor_peak_ratio": pl.Float64, "tensor_peak_flops_per_s": pl.Float64, "tensor_peak_precision": pl.String,
    "exceeding": pl.Int64, "exceeding_max": pl.Float64, "cause": pl.String, "cause_category": pl.String,
    "cause_faster_ns": pl.Float64, "cause_slower_ns": pl.Float64,
    "cause_faster_launches": pl.Float64, "cause_slower_launches": pl.Float64, "would_tell": pl.String,
}


def speedup_reasons(pairs: pl.DataFrame, runs: pl.DataFrame, reasons: pl.DataFrame,
                    categories: pl.DataFrame, db: gpu.GpuDatabase) -> pl.DataFrame:
    """REASON_COLUMNS per comparable pair (module docstring). `runs`: the run table with its
    totals; `reasons`: `reasons.run_reasons`; `categories`: `reasons.category_times`; `db`:
    the GPU table (the faster GPU's tensor-core peak, `tensor_peak_ratio`)."""
    compared = pairs.filter(pl.col("comparable")) if pairs.height else pairs
    if not compared.height:
        return pl.DataFrame(schema=REASON_COLUMNS)
    facts = _facts(runs, reasons)
    per_run = {run: group for (run,), group in categories.group_by(["run"])} if categories.height else {}
    rows = []
    for pair in compared.iter_rows(named=True):
        faster, slower = facts.get(pair["faster_run"], {}), facts.get(pair["slower_run"], {})
        row = {c: pair[c] for c in REASON_COLUMNS if c in pair}
        row.update({f"faster_{c}": faster.get(c) for c in _SIDE_FACTS})
        row.update({f"slower_{c}": slower.get(c) for c in _SIDE_FACTS})
        row.update(_peak_ratios(faster, slower, pair))
        row.update(_tensor_ratio(faster, slower, db))
        row["exceeds"] = row["peak_ratio"] is not None and pair["speedup"] > row["peak_ratio"] * SLACK
        if row["exceeds"]:
            row.update(_cause(pair, faster, slower, row["peak_ratio"], per_run))
        rows.append(row)
    return pl.DataFrame(rows, schema=REASON_COLUMNS).sort("model", "experiment", "config", "faster", "slower")


def _facts(runs: pl.DataFrame, reasons: pl.DataFrame) -> dict[str, dict]:
    """run -> its facts (`_SIDE_FACTS`) and iterations."""
    wanted = [c for c in ("run", "gpu_model", "time_source", "bound", "pct_of_roof", "flops_complete",
                          "roof_precision", "peak_flops_per_s", "peak_dram_bytes_per_s", "iterations", "roof_clock")
              if c in runs.columns]
    table = runs.select(wanted)
    if reasons.height:
        table = table.join(reasons, on="run", how="left")
    return {row["run"]: row for row in table.iter_rows(named=True)}


def _peak_ratios(faster: dict, slower: dict, pair: dict | None = None) -> dict:
    """The faster GPU's peaks over the slower's: compute at each run's precision (the roof its
    totals were judged by), DRAM bandwidth, and the larger. Jobs on different known numbers of
    GPUs compared as they ran (elapsed time, or per GPU: `speedup._per_gpu`) are jobs against
    jobs: each side's peaks times its GPUs."""
    scale = 1.0
    if pair and pair.get("measure") == speedup.SPEEDUP and pair.get("faster_gpus") and pair.get("slower_gpus"):
        scale = pair["faster_gpus"] / pair["slower_gpus"]
    compute = _ratio(faster.get("peak_flops_per_s"), slower.get("peak_flops_per_s"))
    dram = _ratio(faster.get("peak_dram_bytes_per_s"), slower.get("peak_dram_bytes_per_s"))
    compute, dram = (r * scale if r is not None else None for r in (compute, dram))
    known = [r for r in (compute, dram) if r is not None]
    return {"peak_ratio_compute": compute, "peak_ratio_dram": dram, "peak_ratio": max(known) if known else None}


# The tensor-core peak that stands in for a precision's CUDA-core work (TF32 for FP32...).
_TENSOR_FOR = {"fp32": "tensor_tf32", "fp16": "tensor_fp16", "bf16": "tensor_bf16", "fp64": "tensor_fp64"}


def _tensor_ratio(faster: dict, slower: dict, db: gpu.GpuDatabase) -> dict:
    """tensor_peak_ratio, tensor_peak_flops_per_s, tensor_peak_precision: the faster GPU's
    tensor-core peak for the slower run's precision (TF32 for FP32 work...) over the slower run's
    compute peak at its own precision: what the faster GPU may reach when its libraries move that
    work to tensor cores (an A100's TF32 for FP32 work), which the compute ratio at one precision
    leaves out. None when the faster side ran little on tensor cores or the table has no such peak."""
    none = {"tensor_peak_ratio": None, "tensor_peak_flops_per_s": None, "tensor_peak_precision": None}
    if (faster.get("tensor_share") or 0.0) < TENSOR_GAP:
        return none
    spec = db.get(faster.get("gpu_model"))
    precision = _TENSOR_FOR.get(slower.get("roof_precision") or "fp32")
    peak = spec.peak(precision) if spec is not None and precision else None
    ratio = _ratio(peak, slower.get("peak_flops_per_s"))
    if ratio is None:
        return none
    return {"tensor_peak_ratio": ratio, "tensor_peak_flops_per_s": peak, "tensor_peak_precision": precision}


def _ratio(top, bottom) -> float | None:
    return top / bottom if top and bottom else None


def _cause(pair: dict, faster: dict, slower: dict, ratio: float, per_run: dict) -> dict:
    """The likely cause of a speedup above the peak ratio (module docstring), first found."""
    if pair.get("measure") == speedup.GPU_TIME_RATIO:
        return {"cause": GPU_COUNT}
    if (faster.get("tensor_share") or 0.0) - (slower.get("tensor_share") or 0.0) >= TENSOR_GAP:
        return {"cause": TENSOR_CORES}
    found = _kernel_mix(pair, faster, slower, ratio, per_run)
    if found:
        return found
    unknown_gpus = faster.get("multi_gpu") is None or slower.get("multi_gpu") is None
    return {"would_tell": DEVICE_TRACE if unknown_gpus else TRACE}


def _kernel_mix(pair: dict, faster: dict, slower: dict, ratio: float, per_run: dict) -> dict | None:
    """The category whose time on the slower GPU exceeds `ratio` times the faster's by most,
    per iteration when the pair was compared so (else over the whole run)."""
    fast, slow = per_run.get(pair["faster_run"]), per_run.get(pair["slower_run"])
    if fast is None or slow is None:
        return None
    basis = pair["basis"] or ""
    per_iteration = basis.startswith(speedup.PER_ITERATION) or (
        basis == speedup.ELAPSED and bool(faster.get("iterations")) and bool(slower.get("iterations")))
    per_gpu = basis.endswith(speedup.PER_GPU)
    fast_div = ((faster.get("iterations") or 1) if per_iteration else 1) * ((pair.get("faster_gpus") or 1) if per_gpu else 1)
    slow_div = ((slower.get("iterations") or 1) if per_iteration else 1) * ((pair.get("slower_gpus") or 1) if per_gpu else 1)
    mine = {r["category"]: r for r in fast.iter_rows(named=True) if r["category"] != "setup"}
    theirs = {r["category"]: r for r in slow.iter_rows(named=True) if r["category"] != "setup"}
    best, excess = None, 0.0
    for category, row in theirs.items():
        other = mine.get(category, {"time_ns": 0.0, "launches": 0})
        over = row["time_ns"] / slow_div - ratio * other["time_ns"] / fast_div
        if over > excess:
            best, excess = category, over
    if best is None:
        return None
    other = mine.get(best, {"time_ns": 0.0, "launches": 0})
    return {"cause": KERNEL_MIX, "cause_category": best,
            "cause_faster_ns": other["time_ns"] / fast_div, "cause_slower_ns": theirs[best]["time_ns"] / slow_div,
            "cause_faster_launches": other["launches"] / fast_div,
            "cause_slower_launches": theirs[best]["launches"] / slow_div}


# -- per model, experiment and pair of GPUs ----------------------------------------------------

def conclusions(summary: pl.DataFrame, reasons: pl.DataFrame) -> pl.DataFrame:
    """CONCLUSION_COLUMNS: each row of `speedup.model_summary` with the facts of its
    configurations (`speedup_reasons`) as ranges, its exceeding count and its most common cause."""
    if not summary.height:
        return pl.DataFrame(schema=CONCLUSION_COLUMNS)
    rows = []
    for row in summary.iter_rows(named=True):
        pairs = reasons.filter((pl.col("model") == row["model"]) & pl.col("experiment").eq_missing(row["experiment"])
                               & pl.col("faster").is_in([row["faster"], row["slower"]])
                               & pl.col("slower").is_in([row["faster"], row["slower"]])) if reasons.height else reasons
        rows.append({**row, **_aggregate(row, [_oriented(p, row["faster"]) for p in pairs.iter_rows(named=True)])})
    return pl.DataFrame(rows, schema=CONCLUSION_COLUMNS).sort("model", "experiment", "faster", "slower")


EXPERIMENT_COLUMNS = {
    "experiment": pl.String, "faster": pl.String, "slower": pl.String, "models": pl.List(pl.String),
    "model_speedups": pl.List(pl.Float64), "model_speedup_min": pl.List(pl.Float64),
    "model_speedup_max": pl.List(pl.Float64), "model_configs": pl.List(pl.Int64), "configs": pl.Int64,
    "faster_in": pl.Int64, "basis": pl.String, "measure": pl.String, "thin": pl.Int64, "thin_why": pl.String,
    "faster_gpus_count": pl.Int64, "slower_gpus_count": pl.Int64,
    **{c: t for c, t in CONCLUSION_COLUMNS.items() if c not in speedup.SUMMARY_COLUMNS},
}


def experiment_conclusions(per_model: pl.DataFrame, reasons: pl.DataFrame) -> pl.DataFrame:
    """EXPERIMENT_COLUMNS (module docstring): the compared rows of `conclusions` grouped by
    experiment, pair of GPUs and which is faster (the direction most of its models favour first;
    models faster the other way get a row of their own, never dropped)."""
    compared = per_model.filter(pl.col("configs") > 0) if per_model.height else per_model
    if not compared.height:
        return pl.DataFrame(schema=EXPERIMENT_COLUMNS)
    keyed = compared.with_columns(pl.min_horizontal("faster", "slower").alias("gpu_a"),
                                  pl.max_horizontal("faster", "slower").alias("gpu_b"))
    rows = []
    for (experiment, gpu_a, gpu_b), group in keyed.group_by("experiment", "gpu_a", "gpu_b", maintain_order=True):
        for faster, _ in Counter(group["faster"].to_list()).most_common():
            slower = gpu_b if faster == gpu_a else gpu_a
            rows.append(_experiment_row(experiment, faster, slower, group.filter(pl.col("faster") == faster), reasons))
    return pl.DataFrame(rows, schema=EXPERIMENT_COLUMNS)


def _experiment_row(experiment: str | None, faster: str, slower: str, mine: pl.DataFrame,
                    reasons: pl.DataFrame) -> dict:
    """One row of EXPERIMENT_COLUMNS: the models of `mine` (rows of `conclusions`) where `faster`
    is faster."""
    pairs = reasons.filter(pl.col("experiment").eq_missing(experiment)
                           & pl.col("model").is_in(mine["model"].to_list())
                           & pl.col("faster").is_in([faster, slower]) & pl.col("slower").is_in([faster, slower]))
    row = {"experiment": experiment, "faster": faster, "slower": slower, "models": mine["model"].to_list(),
           "model_speedups": mine["speedup"].to_list(), "model_speedup_min": mine["speedup_min"].to_list(),
           "model_speedup_max": mine["speedup_max"].to_list(), "model_configs": mine["configs"].to_list(),
           "configs": int(mine["configs"].sum()), "faster_in": int(mine["faster_in"].sum()),
           "basis": " and ".join(sorted({b for text in mine["basis"].drop_nulls().to_list()
                                          for b in text.split(" and ")})),
           "measure": speedup.GPU_TIME_RATIO if (mine["measure"] == speedup.GPU_TIME_RATIO).any() else speedup.SPEEDUP,
           "thin": int(mine["thin"].fill_null(0).sum()), "thin_why": mine["thin_why"].drop_nulls().first()}
    row.update(_job_gpus(pairs, faster))
    return {**row, **_aggregate(row, [_oriented(p, faster) for p in pairs.iter_rows(named=True)])}


def _job_gpus(pairs: pl.DataFrame, faster: str) -> dict:
    """faster_gpus_count, slower_gpus_count: the GPUs of each side's jobs where every pair of
    the group compared jobs on different known numbers of GPUs (per GPU or elapsed), else None."""
    ok = pairs.filter(pl.col("measure") == speedup.SPEEDUP) if pairs.height else pairs
    if not ok.height or ok.height < pairs.height:
        return {"faster_gpus_count": None, "slower_gpus_count": None}
    mine = [(row["faster_gpus"], row["slower_gpus"]) if row["faster"] == faster else (row["slower_gpus"], row["faster_gpus"])
            for row in ok.iter_rows(named=True)]
    if len(set(mine)) != 1 or None in mine[0] or mine[0][0] == mine[0][1]:
        return {"faster_gpus_count": None, "slower_gpus_count": None}
    return {"faster_gpus_count": mine[0][0], "slower_gpus_count": mine[0][1]}


def _oriented(pair: dict, faster_gpu: str) -> dict:
    """A pair's row with `faster_*` about `faster_gpu` (the summary's faster GPU), whichever
    GPU was faster in this configuration."""
    if pair["faster"] == faster_gpu:
        return pair
    swapped = dict(pair)
    for column in _SIDE_FACTS:
        swapped[f"faster_{column}"], swapped[f"slower_{column}"] = pair[f"slower_{column}"], pair[f"faster_{column}"]
    return swapped


def _aggregate(summary: dict, pairs: list[dict]) -> dict:
    out: dict = {}
    for side in ("faster", "slower"):
        for column in _RANGES:
            values = [p[f"{side}_{column}"] for p in pairs if p[f"{side}_{column}"] is not None]
            out[f"{side}_{column}_min"] = min(values) if values else None
            out[f"{side}_{column}_max"] = max(values) if values else None
        for column in _ONE_VALUE:
            values = {p[f"{side}_{column}"] for p in pairs}
            out[f"{side}_{column}"] = values.pop() if len(values) == 1 else None
        out[f"{side}_bounds"] = ", ".join(sorted({p[f"{side}_bound"] for p in pairs if p[f"{side}_bound"]})) or None
        for column, combine in (("multi_gpu", _all_same), ("clock_locked", any), ("flops_complete", _all_same)):
            values = [p[f"{side}_{column}"] for p in pairs]
            out[f"{side}_{column}"] = combine(values) if values else None
    for column in ("peak_ratio_compute", "peak_ratio_dram", "peak_ratio", "tensor_peak_ratio",
                   "tensor_peak_flops_per_s"):
        values = sorted(p[column] for p in pairs if p[column] is not None)
        out[column] = values[len(values) // 2] if values else None
    computes = [p["peak_ratio_compute"] for p in pairs if p["peak_ratio_compute"] is not None]
    out["peak_ratio_compute_min"] = min(computes) if computes else None     # configurations at other precisions
    out["peak_ratio_compute_max"] = max(computes) if computes else None
    precisions = {p["tensor_peak_precision"] for p in pairs if p["tensor_peak_precision"]}
    out["tensor_peak_precision"] = precisions.pop() if len(precisions) == 1 else None
    exceeding = [p for p in pairs if p["exceeds"] and p["faster"] == summary["faster"]]
    out["exceeding"] = len(exceeding)
    out["exceeding_max"] = max((p["speedup"] for p in exceeding), default=None)
    causes = Counter(p["cause"] for p in exceeding if p["cause"])
    if causes:
        cause = causes.most_common(1)[0][0]
        worst = max((p for p in exceeding if p["cause"] == cause), key=lambda p: p["speedup"])
        out.update({k: worst[k] for k in ("cause", "cause_category", "cause_faster_ns", "cause_slower_ns",
                                          "cause_faster_launches", "cause_slower_launches")})
    elif exceeding:
        out["would_tell"] = exceeding[0]["would_tell"]
    return out


def _all_same(values: list):
    """True or False when every value is; None when they differ or one is unknown."""
    found = set(values)
    return found.pop() if len(found) == 1 else None
