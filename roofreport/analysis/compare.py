"""Runs side by side: one row per run, FLOP counts that miss tensor-core work, and analytic
estimates against measured time.

* `run_table`: a run's identity and totals (FLOPs, bytes, intensity, time, achieved FLOP/s,
  % of roof, bound) as the runs table holds them (`totals.py`). When the FLOPs miss tensor-core work, the
  same model profiled completely on another GPU (same batch size and experiment; else scaled by
  batch size) offers `flops_estimate`, with `flops_estimate_source` naming that run.
* `incomplete_flops`: the runs whose counts miss tensor-core work, why, and how much time
  those kernels took.
* `estimates`: analytic FLOPs/bytes per run from the `estimates` table (an estimates file or a
  torchinfo `summary()` printout beside the logs, read with them: `estimates.py`), turned into time = max(bytes / bandwidth,
  FLOPs / peak), next to the measured time.
"""

from __future__ import annotations

from statistics import median

import polars as pl

from roofreport import gpu
from roofreport.analysis import estimates as est_files
from roofreport.model import Model
from roofreport.tables import lazy, schema

IDENTITY = {"run": pl.String, "label": pl.String, "gpu": pl.String, "gpu_model": pl.String,
            "gpu_label": pl.String, "gpu_evidence": pl.String, "gpu_assumed": pl.Boolean, "gpu_note": pl.String,
            "model": pl.String, "batch_size": pl.Int64, "experiment": pl.String,
            "params": pl.String, "cut_short": pl.Boolean, "cut_short_reason": pl.String,
            "failure": pl.String, "failure_reason": pl.String, "clock_domain": pl.String, "clock_source": pl.String,
            "rank": pl.Int64, "ranks": pl.Int64, "distributed_job": pl.String}
RUN_COLUMNS = {**IDENTITY, **schema.RUN_TOTALS, "flops_estimate": pl.Float64, "flops_estimate_source": pl.String}


def run_table(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per run (RUN_COLUMNS): its identity, its totals as the runs table holds them
    (model/totals.py computed them: nothing is recomputed here) and a FLOPs estimate for
    runs whose counts miss tensor-core work."""
    runs = tables.get("runs")
    if runs is None or not runs.height:
        return pl.DataFrame(schema=RUN_COLUMNS)
    table = schema.conform("runs", runs).select(
        [pl.col(c).cast(t) for c, t in RUN_COLUMNS.items() if not c.startswith("flops_estimate")])
    return _with_estimates(table).select(list(RUN_COLUMNS)).sort("run")


def _with_estimates(table: pl.DataFrame) -> pl.DataFrame:
    """flops_estimate for incomplete runs from complete runs of the same model on another GPU."""
    complete = [r for r in table.to_dicts() if r["flops_complete"] is True and r["flops"] and r["model"]]
    estimates, sources = [], []
    for row in table.to_dicts():
        value, source = (None, None)
        if row["flops_complete"] is False and row["model"]:
            value, source = _estimate_for(row, complete)
        estimates.append(value)
        sources.append(source)
    return table.with_columns(pl.Series("flops_estimate", estimates, dtype=pl.Float64),
                              pl.Series("flops_estimate_source", sources, dtype=pl.String))


def _estimate_for(row: dict, complete: list[dict]) -> tuple[float | None, str | None]:
    same_model = [c for c in complete if c["model"] == row["model"] and c["run"] != row["run"]
                  and c["experiment"] == row["experiment"]]
    same_batch = [c for c in same_model if c["batch_size"] == row["batch_size"]]
    if same_batch:
        pick = _median_run(same_batch)
        return pick["flops"], (f"{pick['run']} ({pick['gpu_model'] or pick['gpu']}): same model and batch size, "
                               f"counted completely ({len(same_batch)} candidate run(s), median taken)")
    scalable = [c for c in same_model if c["batch_size"] and row["batch_size"]]
    if scalable:
        pick = _median_run(scalable)
        factor = row["batch_size"] / pick["batch_size"]
        return pick["flops"] * factor, (f"{pick['run']} ({pick['gpu_model'] or pick['gpu']}): same model, counted "
                                        f"completely at batch {pick['batch_size']}, scaled x{factor:g} to batch "
                                        f"{row['batch_size']}")
    return None, None


def _median_run(rows: list[dict]) -> dict:
    middle = median(r["flops"] for r in rows)
    return min(rows, key=lambda r: (abs(r["flops"] - middle), r["run"]))


# -- incomplete FLOP counts ------------------------------------------------------------------

INCOMPLETE_COLUMNS = {"run": pl.String, "reason": pl.String, "tensor_kernels": pl.Int64,
                      "tensor_time_share": pl.Float64, "example_kernel": pl.String, "tensor_kind": pl.String}


def incomplete_flops(model: Model) -> pl.DataFrame:
    """run, reason, tensor_kernels (launches), tensor_time_share, example_kernel for every run
    whose FLOP counts miss tensor-core work."""
    tables = model.tables
    kernels = tables.get("kernels")
    if kernels is None or not kernels.height:
        return pl.DataFrame(schema=INCOMPLETE_COLUMNS)
    times = model.counted_times
    timed = kernels.join(times, on=["source_file", "launch_id"], how="left")
    counted = timed.filter(pl.col("flops_complete").is_not_null())
    missing = counted.filter(pl.col("flops_complete").not_())
    rows = []
    for (run,), group in missing.group_by(["run"], maintain_order=True):
        total = counted.filter(pl.col("run") == run)["time_ns"].sum()
        top = group.sort(["time_ns", "count"], descending=True, nulls_last=True).row(0, named=True)
        rows.append({"run": run, "reason": _reason(tables, run, top["short_name"] or top["name"]),
                     "tensor_kernels": int(group["count"].sum()),
                     "tensor_time_share": group["time_ns"].sum() / total if total else None,
                     "example_kernel": top["short_name"] or top["name"]})
    if not rows:
        return pl.DataFrame(schema=INCOMPLETE_COLUMNS)
    return pl.DataFrame(rows, schema=INCOMPLETE_COLUMNS).sort("run")


def with_tensor_kind(incomplete: pl.DataFrame, run_roofline: pl.DataFrame) -> pl.DataFrame:
    """`incomplete` with `tensor_kind`: TF32, BF16 or FP16, the tensor-core input type the
    roofline judged each run's tensor work by (its tensor ceiling), null when it did not say."""
    if not incomplete.height or not run_roofline.height:
        return incomplete
    kinds = (run_roofline.filter(pl.col("precision") == "tensor")
             .select("run", pl.col("peak_source").str.extract(r"Tensor (TF32|BF16|FP16)", 1).alias("kind"))
             .drop_nulls().group_by("run").agg(pl.col("kind").mode().sort().first()))
    return incomplete.drop("tensor_kind").join(kinds.rename({"kind": "tensor_kind"}), on="run", how="left") \
        .select(list(INCOMPLETE_COLUMNS))


def _reason(tables: dict[str, pl.DataFrame], run: str, example: str) -> str:
    metrics = lazy.scan(tables, "metrics")   # a dataset folder's metrics: only these rows are read
    tensor_counted = metrics is not None and metrics.filter(
        (pl.col("run") == run) & pl.col("metric").str.contains("pipe_tensor|tensor_precision_fu")
    ).select(pl.len()).collect().item() > 0
    if tensor_counted:
        return ("tensor-core instructions were counted, but no op-path counter (sm__ops_path_tensor_*) gives "
                "their FLOPs on this architecture (x512 holds only on Volta; Hopper's wgmma shapes vary): "
                f"tensor-core work is missing from the FLOPs (e.g. {example})")
    return (f"tensor-core kernels (e.g. {example}) ran, but the log has no tensor FLOP metric; the CUDA-core "
            "counters (fadd/fmul/ffma) miss their work, so the FLOPs are a lower bound")


# -- estimate vs measured --------------------------------------------------------------------

ESTIMATE_COLUMNS = {"run": pl.String, "est_flops": pl.Float64, "est_bytes": pl.Float64, "est_time_ns": pl.Float64,
                    "span": pl.String, "measured_time_ns": pl.Float64, "measured_span": pl.String,
                    "ratio": pl.Float64, "comparable": pl.Boolean, "not_comparable": pl.String,
                    "source": pl.String, "est_bound": pl.String, "peak_source": pl.String}
_INFERENCE = ("inference", "eval", "evaluation", "forward", "test", "val", "validation", "predict")


def estimates(model: Model) -> pl.DataFrame:
    """run, est_flops, est_bytes, est_time_ns (= max(bytes / bandwidth, FLOPs / peak)), span,
    the measured time over the same span, ratio (measured / estimated) when the two are
    comparable, else `not_comparable` saying why; source."""
    tables = model.tables
    found = est_files.find_estimates(tables)
    if not found:
        return pl.DataFrame(schema=ESTIMATE_COLUMNS)
    table = {r["run"]: r for r in run_table(tables).to_dicts()}
    phases = dict(zip(tables["runs"]["run"].to_list(), tables["runs"]["phase"].to_list())) \
        if "phase" in tables["runs"].columns else {}
    gpus = model.gpus
    rows = []
    for estimate in found:
        measured = {**table.get(estimate.run, {}), "phase": phases.get(estimate.run)}
        rows.append(_estimate_row(estimate, measured, gpus.get(estimate.run)))
    return pl.DataFrame(rows, schema=ESTIMATE_COLUMNS).sort("run")


def _estimate_row(estimate: est_files.Estimate, measured: dict, spec: gpu.GpuSpec | None) -> dict:
    peak = spec.peak(estimate.precision) if spec else None
    bw = spec.dram_bw if spec else None
    t_compute = estimate.flops / peak if estimate.flops and peak else None
    t_memory = estimate.bytes / bw if estimate.bytes and bw else None
    parts = [t for t in (t_compute, t_memory) if t is not None]
    est_ns = max(parts) * 1e9 if parts else None
    bound = None
    if t_compute is not None and t_memory is not None:
        bound = "compute" if t_compute >= t_memory else "memory"
    measured_ns, measured_span, why = same_span_time(estimate.span, measured)
    if why is None and est_ns is None:
        why = "no estimated time: the GPU's peaks are not known" if estimate.flops or estimate.bytes else "no FLOPs or bytes given"
    return {"run": estimate.run, "est_flops": estimate.flops, "est_bytes": estimate.bytes, "est_time_ns": est_ns, "span": estimate.span,
            "measured_time_ns": measured_ns, "measured_span": measured_span,
            "ratio": measured_ns / est_ns if why is None and measured_ns and est_ns else None,
            "comparable": why is None, "not_comparable": why,
            "source": estimate.source, "est_bound": bound,
            "peak_source": f"{spec.key} datasheet {estimate.precision}" if spec else None}


def same_span_time(span: str, run: dict) -> tuple[float | None, str | None, str | None]:
    """The run's measured kernel time over `span` ("iteration", "forward", "run"): (time,
    what it covers, None), or (None, None, why no such time exists)."""
    if not run.get("kernel_time_ns"):
        return None, None, "no kernel time was measured for this run"
    per_iteration = run.get("time_per_iteration_ns")
    counted = f"per iteration ({run.get('iterations')} iterations: {run.get('iterations_source')})"
    if span == "run":
        if run.get("cut_short"):
            return None, None, (f"the estimate covers the whole run, but the run was cut short "
                                f"({run.get('cut_short_reason')}): its time covers only the part that ran")
        return run["kernel_time_ns"], "whole run", None
    if per_iteration is None:
        cut = f", cut short ({run.get('cut_short_reason')})" if run.get("cut_short") else ""
        return None, None, (f"the estimate covers one {'forward pass' if span == 'forward' else 'iteration'}, "
                            f"but the logs give no iteration count, so the measured time is the whole run's{cut}")
    if span == "forward" and str(run.get("phase") or "").lower() not in _INFERENCE:
        return None, None, ("the estimate covers one forward pass (a torchinfo summary counts no backward pass "
                            "or optimizer step), and the logs do not separate forward from backward time")
    return per_iteration, counted, None
