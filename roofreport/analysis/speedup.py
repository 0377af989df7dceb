"""The same work on different GPUs: a model x GPU pivot, the speedup of each GPU over the
others, and the per-model summary the conclusion states.

Runs are matched by workload (`workloads.py`: model and configuration, never paths) and labelled
by their canonical GPU (`gpu_label`); runs with no known GPU, and runs of monitoring logs only
(`workloads.holds_workload`), are left out. Times are the run
totals (`totals.py`), compared only like with like:

* the elapsed time of a training batch as the job ran, when both runs' logs print it
  (`elapsed_per_iteration_ns`: the batch time less the wait for data): on one GPU or several,
  that is the time the job took;
* else per iteration, when both runs' logs count their iterations (a run cut short by a time-out
  did as many as it had time for: only its time per iteration compares);
* else the kernel time of the whole run, when neither run was cut short (same work, run to
  its end);
* else not at all: `reason` says which run lacks what.

Kernel time is summed over every GPU a run used (`reasons.run_reasons`: `gpus`, `multi_gpu`).
Two runs on as many GPUs compare as they are. Runs on different known numbers of GPUs compare
per GPU (each sum divided by its GPU count: the basis says so). Where one side ran on several
GPUs and the other's count is not known, the ratio of the two sums is no speedup: `measure`
is `GPU_TIME_RATIO` (which GPU used less GPU time), never "faster".

A speedup resting on few iterations (`THIN_ITERATIONS`) or on a run whose one-off kernels
(cuDNN's algorithm trials in the first iteration: `reasons.run_reasons`' `one_off_share`) take
much of its time is flagged `thin`, with why.

Several runs of one workload on one GPU (repeated jobs) give the median; the cell's `run` is
the one whose time is nearest it (what `conclusions.py` cites for the cell). A speedup is the
slower GPU's time over the faster one's. A summary is per model AND experiment
(`workloads.experiment`: `loss_only`, `backprop` and `full` are different work, never averaged
together): the geometric mean over its comparable configurations, with their range.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from itertools import combinations

import polars as pl

from roofreport.analysis import workloads

PER_ITERATION = "time per iteration"
WHOLE_RUN = "kernel time of the whole run"
ELAPSED = "elapsed time per training batch as the logs print it (data loading apart)"
PER_GPU = "per GPU"                 # appended to a basis: each sum divided by its GPU count
SPEEDUP, GPU_TIME_RATIO = "speedup", "GPU-time ratio"
THIN_ITERATIONS = 20      # a speedup over fewer iterations than this rests on a handful
ONE_OFF_SHARE = 0.1       # one-off kernels (autotuning trials) taking this share of a run's time

PIVOT_COLUMNS = {
    "model": pl.String, "experiment": pl.String, "config": pl.String, "config_key": pl.String, "gpu": pl.String,
    "run": pl.String, "runs": pl.Int64,
    "batch_size": pl.Int64, "iterations": pl.Int64, "time_per_iteration_ns": pl.Float64,
    "kernel_time_ns": pl.Float64, "timed_runs": pl.Int64, "complete_runs": pl.Int64, "cut_short": pl.Boolean,
    "cut_short_reason": pl.String, "failure_reason": pl.String, "flops": pl.Float64, "flops_complete": pl.Boolean,
    "arithmetic_intensity": pl.Float64, "achieved_flops_per_s": pl.Float64, "ridge_ai": pl.Float64,
    "bound": pl.String, "bound_note": pl.String,
    "elapsed_per_iteration_ns": pl.Float64, "gpus": pl.Int64, "multi_gpu": pl.Boolean, "one_off_share": pl.Float64,
}
SPEEDUP_COLUMNS = {
    "model": pl.String, "experiment": pl.String, "config": pl.String, "config_key": pl.String,
    "faster": pl.String, "slower": pl.String, "faster_run": pl.String, "slower_run": pl.String,
    "speedup": pl.Float64, "basis": pl.String, "faster_time_ns": pl.Float64, "slower_time_ns": pl.Float64,
    "comparable": pl.Boolean, "reason": pl.String, "reason_kind": pl.String,
    "measure": pl.String, "faster_gpus": pl.Int64, "slower_gpus": pl.Int64,
    "faster_iterations": pl.Int64, "slower_iterations": pl.Int64, "thin": pl.String,
}
# reason_kind: why two runs of one workload do not compare
NO_TIME, CUT_SHORT, OTHER_SPANS = "no kernel time", "cut short, no iteration count", "different spans"
SUMMARY_COLUMNS = {
    "model": pl.String, "experiment": pl.String, "faster": pl.String, "slower": pl.String, "speedup": pl.Float64,
    "speedup_min": pl.Float64, "speedup_max": pl.Float64, "configs": pl.Int64, "faster_in": pl.Int64,
    "not_comparable": pl.Int64, "basis": pl.String, "measure": pl.String, "thin": pl.Int64, "thin_why": pl.String,
}


def gpu_pivot(runs: pl.DataFrame, no_workload: Collection[str] = (), gpus: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per model x configuration x GPU of the runs that ran on a known GPU (PIVOT_COLUMNS),
    for workloads run on two GPUs or more; `no_workload`: runs left out, that hold none
    (`workloads.without_workload`: monitoring logs alone name no work to compare); `gpus`:
    `reasons.run_reasons` (run, gpus, multi_gpu, one_off_share: how many GPUs each run's time
    is summed over)."""
    facts = ("gpus", "multi_gpu", "one_off_share")
    if gpus is not None and gpus.height:
        runs = runs.drop(list(facts), strict=False).join(gpus.select("run", *facts), on="run", how="left")
    else:
        runs = runs.with_columns(*[pl.lit(None, PIVOT_COLUMNS[c]).alias(c) for c in facts if c not in runs.columns])
    if "elapsed_per_iteration_ns" not in runs.columns:
        runs = runs.with_columns(pl.lit(None, pl.Float64).alias("elapsed_per_iteration_ns"))
    known = runs.filter(pl.col("gpu_evidence").is_not_null()   # something named the GPU
                        & ~pl.col("run").is_in(list(no_workload)))
    if not known.height:
        return pl.DataFrame(schema=PIVOT_COLUMNS)
    work = workloads.workloads(known)
    cells = known.drop([c for c in work.columns if c != "run"], strict=False).join(work, on="run") \
        .with_columns(pl.col("gpu_label").alias("gpu"))
    shared = cells.group_by("config_key").agg(pl.col("gpu").n_unique().alias("gpus")).filter(pl.col("gpus") > 1)
    cells = cells.join(shared.select("config_key"), on="config_key", how="semi")
    if not cells.height:
        return pl.DataFrame(schema=PIVOT_COLUMNS)
    complete = ~pl.col("cut_short").fill_null(False)
    own_time = pl.coalesce("time_per_iteration_ns", pl.when(complete).then(pl.col("kernel_time_ns")))
    off_median = (own_time - own_time.median().over("config_key", "gpu")).abs()
    cells = cells.with_columns(off_median.fill_null(float("inf")).alias("off_median")).sort("off_median", "run")
    out = cells.group_by("model", "experiment", "config", "config_key", "gpu").agg(
        pl.col("run").first(), pl.len().alias("runs"),
        pl.col("batch_size").drop_nulls().first(),
        pl.col("iterations").median().round(0).cast(pl.Int64),
        pl.col("time_per_iteration_ns").median(),
        pl.col("kernel_time_ns").filter(complete).median(),
        pl.col("kernel_time_ns").is_not_null().sum().alias("timed_runs"),
        (complete & pl.col("kernel_time_ns").is_not_null()).sum().alias("complete_runs"),
        pl.col("cut_short").fill_null(False).all(),
        pl.col("cut_short_reason").drop_nulls().first(),
        pl.col("failure_reason").drop_nulls().first(),
        pl.col("flops").median(), pl.col("flops_complete").all(),
        pl.col("arithmetic_intensity").median(), pl.col("achieved_flops_per_s").median(),
        pl.col("ridge_ai").median(),
        pl.when(pl.col("bound").n_unique() == 1).then(pl.col("bound").first()).alias("bound"),
        pl.col("bound_note").drop_nulls().first(),
        pl.col("elapsed_per_iteration_ns").median(),
        pl.when(pl.col("gpus").n_unique() == 1).then(pl.col("gpus").first()).alias("gpus"),
        pl.when(pl.col("multi_gpu").n_unique() == 1).then(pl.col("multi_gpu").first()).alias("multi_gpu"),
        pl.col("one_off_share").max())
    return out.select([pl.col(c).cast(t) for c, t in PIVOT_COLUMNS.items()]).sort("model", "experiment", "config", "gpu")


def speedups(pivot: pl.DataFrame) -> pl.DataFrame:
    """Per workload, every pair of GPUs that ran it: the faster, the slower, the speedup and its
    basis, or why the two cannot be compared (SPEEDUP_COLUMNS). One basis per model, experiment
    and pair of GPUs: the elapsed time where every configuration's logs print it on both sides,
    else the kernel time (a mean never mixes the two)."""
    rows = []
    for _, group in pivot.group_by("model", "experiment", maintain_order=True):
        pairs: dict[tuple, list[tuple[dict, dict]]] = {}
        for _, config in group.group_by("config_key", maintain_order=True):
            cells = config.sort("gpu").to_dicts()
            for first, second in combinations(cells, 2):
                pairs.setdefault((first["gpu"], second["gpu"]), []).append((first, second))
        for both in pairs.values():
            elapsed = all(a.get("elapsed_per_iteration_ns") and b.get("elapsed_per_iteration_ns") for a, b in both)
            rows += [_pair(first, second, elapsed) for first, second in both]
    if not rows:
        return pl.DataFrame(schema=SPEEDUP_COLUMNS)
    return pl.DataFrame(rows, schema=SPEEDUP_COLUMNS).sort("model", "experiment", "config", "faster", "slower")


def _pair(first: dict, second: dict, elapsed: bool = True) -> dict:
    base = {"model": first["model"], "experiment": first["experiment"], "config": first["config"],
            "config_key": first["config_key"]}
    basis, times, why = comparable_times(first, second, elapsed)
    if why is not None:
        kind, text = why
        return {**base, "faster": first["gpu"], "slower": second["gpu"], "faster_run": first["run"],
                "slower_run": second["run"], "comparable": False, "reason": text, "reason_kind": kind}
    measure = SPEEDUP
    if basis != ELAPSED:
        basis, times, measure = _per_gpu(basis, times, first, second)
    (t_fast, fast), (t_slow, slow) = sorted([(times[0], first), (times[1], second)], key=lambda p: (p[0], p[1]["gpu"]))
    return {**base, "faster": fast["gpu"], "slower": slow["gpu"], "faster_run": fast["run"], "slower_run": slow["run"],
            "speedup": t_slow / t_fast, "basis": basis,
            "faster_time_ns": t_fast, "slower_time_ns": t_slow, "comparable": True, "reason": None,
            "measure": measure, "faster_gpus": fast.get("gpus"), "slower_gpus": slow.get("gpus"),
            "faster_iterations": fast.get("iterations"), "slower_iterations": slow.get("iterations"),
            "thin": thin_evidence(basis, fast, slow)}


def comparable_times(first: dict, second: dict, elapsed: bool = True
                     ) -> tuple[str | None, tuple[float, float] | None, tuple[str, str] | None]:
    """(basis, (time of a, time of b), None) over the same span, or (None, None, (reason_kind,
    why not)); `elapsed`: the logs' elapsed batch times may be the basis."""
    if elapsed and first.get("elapsed_per_iteration_ns") and second.get("elapsed_per_iteration_ns"):
        return ELAPSED, (first["elapsed_per_iteration_ns"], second["elapsed_per_iteration_ns"]), None
    if first["time_per_iteration_ns"] and second["time_per_iteration_ns"]:
        return PER_ITERATION, (first["time_per_iteration_ns"], second["time_per_iteration_ns"]), None
    if first["kernel_time_ns"] and second["kernel_time_ns"]:
        return WHOLE_RUN, (first["kernel_time_ns"], second["kernel_time_ns"]), None
    return None, None, _why_not(first, second)


def _per_gpu(basis: str, times: tuple[float, float], first: dict, second: dict) -> tuple[str, tuple[float, float], str]:
    """Summed kernel times of runs on different numbers of GPUs: per GPU where both counts are
    known, else a GPU-time ratio (module docstring). Runs on as many GPUs compare as they are."""
    counts = (first.get("gpus"), second.get("gpus"))
    several = (first.get("multi_gpu"), second.get("multi_gpu"))
    if counts[0] and counts[1]:
        if counts[0] == counts[1]:
            return basis, times, SPEEDUP
        return f"{basis} {PER_GPU}", (times[0] / counts[0], times[1] / counts[1]), SPEEDUP
    if True in several and several[0] != several[1]:
        return basis, times, GPU_TIME_RATIO
    return basis, times, SPEEDUP


def thin_evidence(basis: str, fast: dict, slow: dict) -> str | None:
    """Why a speedup rests on thin evidence (a handful of iterations, an autotuning first
    iteration), or None."""
    said = []
    counts = [c for c in (fast.get("iterations"), slow.get("iterations")) if c]
    if basis != ELAPSED and counts and min(counts) < THIN_ITERATIONS:
        said.append(f"{min(counts)} iteration{'s' if min(counts) > 1 else ''} on one side")
    shares = [(side, side.get("one_off_share")) for side in (fast, slow) if (side.get("one_off_share") or 0) >= ONE_OFF_SHARE]
    if shares and basis != ELAPSED:
        side, share = max(shares, key=lambda p: p[1])
        said.append(f"one-off kernels (cuDNN's algorithm trials, setup) take {share * 100:.0f} % of the "
                    f"{side['gpu']} run's kernel time")
    return "; ".join(said) or None


def no_kernels_reason(run: dict) -> str:
    """Why a run has no kernel time: its logs' own failure (`runs.failure_reason`: a crash, a
    refused GPU or counters, out of memory, a time limit), else that they hold no kernels."""
    return run.get("failure_reason") or "its logs hold no kernel summary or trace"


def _why_not(first: dict, second: dict) -> tuple[str, str]:
    """Which of two cells lacks a time over a span the other has, and why."""
    for cell in (first, second):
        if not cell["timed_runs"] and cell["cut_short"]:
            return NO_TIME, f"the {cell['gpu']} run was cut short{_said(cell)} and no kernel time was logged"
        if not cell["timed_runs"]:
            return NO_TIME, f"no kernel time was logged for the {cell['gpu']} run ({no_kernels_reason(cell)})"
    for cell in (first, second):
        if cell["time_per_iteration_ns"] is None and cell["kernel_time_ns"] is None:
            return CUT_SHORT, (f"the {cell['gpu']} run was cut short{_said(cell)} and its logs give no iteration "
                               "count, so its time covers an unknown part of the work")
    short, other = (first, second) if first["kernel_time_ns"] is None else (second, first)
    return OTHER_SPANS, (f"the {short['gpu']} run was cut short{_said(short)}, so only its time per iteration "
                         f"compares, and the {other['gpu']} run's logs give no iteration count")


def _said(cell: dict) -> str:
    return f" ({cell['cut_short_reason']})" if cell["cut_short_reason"] else ""


def model_summary(pairs: pl.DataFrame) -> pl.DataFrame:
    """Per model, experiment and pair of GPUs: geometric-mean speedup over the comparable
    configurations, its range, how many configurations each way, and how many could not be
    compared."""
    if not pairs.height:
        return pl.DataFrame(schema=SUMMARY_COLUMNS)
    rows = []
    keyed = pairs.with_columns(pl.min_horizontal("faster", "slower").alias("gpu_a"),
                               pl.max_horizontal("faster", "slower").alias("gpu_b"))
    for (model, experiment, gpu_a, gpu_b), group in keyed.group_by("model", "experiment", "gpu_a", "gpu_b",
                                                                    maintain_order=True):
        rows.append(_summary(model, experiment, gpu_a, gpu_b, group))
    return pl.DataFrame(rows, schema=SUMMARY_COLUMNS).sort("model", "experiment", "faster", "slower")


def _summary(model: str, experiment: str, gpu_a: str, gpu_b: str, group: pl.DataFrame) -> dict:
    ok = group.filter(pl.col("comparable"))
    thin = ok.filter(pl.col("thin").is_not_null())
    base = {"model": model, "experiment": experiment, "not_comparable": group.height - ok.height,
            "thin": thin.height, "thin_why": thin["thin"][0] if thin.height else None}
    if not ok.height:
        return {**base, "faster": gpu_a, "slower": gpu_b, "configs": 0, "faster_in": 0}
    # Speedup of a over b per configuration (> 1: a faster), then the geometric mean.
    ratios = [s if f == gpu_a else 1 / s for f, s in zip(ok["faster"].to_list(), ok["speedup"].to_list())]
    mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    faster, slower = (gpu_a, gpu_b) if mean >= 1 else (gpu_b, gpu_a)
    ups = ratios if mean >= 1 else [1 / r for r in ratios]
    return {**base, "faster": faster, "slower": slower, "speedup": max(mean, 1 / mean),
            "speedup_min": min(ups), "speedup_max": max(ups), "configs": len(ups),
            "faster_in": sum(r > 1 for r in ups), "basis": " and ".join(sorted(set(ok["basis"].to_list()))),
            "measure": GPU_TIME_RATIO if (ok["measure"] == GPU_TIME_RATIO).any() else SPEEDUP}
