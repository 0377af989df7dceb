"""Runs side by side: one row per run, FLOP counts that miss tensor-core work, and analytic
estimates against measured time.

* `run_table`: a run's FLOPs, bytes, intensity, time, achieved FLOP/s, % of peak and bound
  (from the run's dominant-precision roofline row). When the FLOPs miss tensor-core work, the
  same model profiled completely on another GPU (same batch size and experiment; else scaled by
  batch size) offers `flops_estimate`, with `flops_estimate_source` naming that run.
* `incomplete_flops`: the runs whose counts miss tensor-core work, why, and how much time
  those kernels took.
* `estimates`: analytic FLOPs/bytes per run from an estimates file or a torchinfo `summary()`
  printout beside the logs (`estimates.py`), turned into time = max(bytes / bandwidth,
  FLOPs / peak), next to the measured time.
"""

from __future__ import annotations

from pathlib import Path
from statistics import median

import polars as pl

from roofreport import hardware
from roofreport.analysis import estimates as est_files, roofline, timing

RUN_COLUMNS = {
    "run": pl.String, "gpu": pl.String, "gpu_model": pl.String, "model": pl.String, "batch_size": pl.Int64,
    "experiment": pl.String, "flops": pl.Float64, "flops_complete": pl.Boolean, "flops_estimate": pl.Float64,
    "flops_estimate_source": pl.String, "dram_bytes": pl.Float64, "ai_dram": pl.Float64, "time_ns": pl.Float64,
    "time_source": pl.String, "achieved_flops_per_s": pl.Float64, "pct_of_peak": pl.Float64, "bound": pl.String,
    "kernel_count": pl.Int64, "gpu_time_ns": pl.Float64, "gpu_time_source": pl.String,
    "dominant_precision": pl.String, "peak_flops_per_s": pl.Float64,
}


def _runs(tables: dict[str, pl.DataFrame]) -> list[dict]:
    runs = tables.get("runs")
    if runs is not None and runs.height:
        return runs.to_dicts()
    kernels = tables.get("kernels")
    names = sorted(set(kernels["run"].drop_nulls().to_list())) if kernels is not None and kernels.height else []
    return [{"run": r} for r in names]


def run_table(tables: dict[str, pl.DataFrame], db: hardware.GpuDatabase) -> pl.DataFrame:
    """One row per run (RUN_COLUMNS)."""
    points = roofline.kernel_points(tables)
    roof = roofline.run_roofline(tables, db)
    times = timing.kernel_time_rows(tables)
    rows = [_run_row(r, points, roof, times) for r in _runs(tables)]
    if not rows:
        return pl.DataFrame(schema=RUN_COLUMNS)
    table = pl.DataFrame(rows, schema=RUN_COLUMNS)
    return _with_estimates(table).sort("run")


def _run_row(run: dict, points: pl.DataFrame, roof: pl.DataFrame, times: pl.DataFrame) -> dict:
    name = run["run"]
    row = {c: run.get(c) for c in ("run", "gpu", "gpu_model", "model", "batch_size", "experiment")}
    mine = times.filter(pl.col("run") == name)
    kernels_only = mine.filter(~pl.col("category").fill_null("").is_in(["memcpy", "memset"]))
    row.update(gpu_time_ns=mine["time_ns"].sum() if mine.height else None,
               gpu_time_source=mine["time_source"][0] if mine.height else None,
               kernel_count=int(kernels_only["count"].sum()) if kernels_only.height else None)
    counted = points.filter(pl.col("run") == name) if points.height else points
    if counted.height:
        totals = roofline.summarize(counted)
        row.update(flops=totals["flops"], flops_complete=totals["flops_complete"], dram_bytes=totals["dram_bytes"],
                   time_ns=totals["time_ns"], time_source=totals["time_source"])
        row["ai_dram"] = totals["flops"] / totals["dram_bytes"] if totals["dram_bytes"] else None
        row["achieved_flops_per_s"] = (totals["timed_flops"] / (totals["time_ns"] * 1e-9)
                                       if totals["time_ns"] else None)
        row["kernel_count"] = row["kernel_count"] or int(counted["count"].sum())
        _dominant(row, roof.filter(pl.col("run") == name))
    else:
        row.update(time_ns=kernels_only["time_ns"].sum() if kernels_only.height else None,
                   time_source=row["gpu_time_source"])
    return row


def _dominant(row: dict, roof: pl.DataFrame) -> None:
    """Bound and % of peak from the precision doing most of the run's FLOPs."""
    if not roof.height:
        return
    top = roof.sort("flops", descending=True).row(0, named=True)
    # Counts that miss tensor-core work put the run's point too low: no bound class then.
    bound = top["bound"] if row.get("flops_complete") is not False else None
    row.update(dominant_precision=top["precision"], bound=bound, peak_flops_per_s=top["peak_flops_per_s"])
    if row.get("achieved_flops_per_s") and top["peak_flops_per_s"]:
        row["pct_of_peak"] = 100.0 * row["achieved_flops_per_s"] / top["peak_flops_per_s"]


def _with_estimates(table: pl.DataFrame) -> pl.DataFrame:
    """flops_estimate for incomplete runs from complete runs of the same model on another GPU."""
    complete = [r for r in table.to_dicts() if r["flops_complete"] is True and r["flops"] and r["model"]]
    estimates, sources = [], []
    for r in table.to_dicts():
        value, source = (None, None)
        if r["flops_complete"] is False and r["model"]:
            value, source = _estimate_for(r, complete)
        estimates.append(value)
        sources.append(source)
    return table.with_columns(pl.Series("flops_estimate", estimates, dtype=pl.Float64),
                              pl.Series("flops_estimate_source", sources, dtype=pl.String))


def _estimate_for(r: dict, complete: list[dict]) -> tuple[float | None, str | None]:
    same_model = [c for c in complete if c["model"] == r["model"] and c["run"] != r["run"]
                  and c["experiment"] == r["experiment"]]
    same_batch = [c for c in same_model if c["batch_size"] == r["batch_size"]]
    if same_batch:
        pick = _median_run(same_batch)
        return pick["flops"], (f"{pick['run']} ({pick['gpu_model'] or pick['gpu']}): same model and batch size, "
                               f"counted completely ({len(same_batch)} candidate run(s), median taken)")
    scalable = [c for c in same_model if c["batch_size"] and r["batch_size"]]
    if scalable:
        pick = _median_run(scalable)
        factor = r["batch_size"] / pick["batch_size"]
        return pick["flops"] * factor, (f"{pick['run']} ({pick['gpu_model'] or pick['gpu']}): same model, counted "
                                        f"completely at batch {pick['batch_size']}, scaled x{factor:g} to batch "
                                        f"{r['batch_size']}")
    return None, None


def _median_run(rows: list[dict]) -> dict:
    m = median(r["flops"] for r in rows)
    return min(rows, key=lambda r: (abs(r["flops"] - m), r["run"]))


# -- incomplete FLOP counts ------------------------------------------------------------------

INCOMPLETE_COLUMNS = {"run": pl.String, "reason": pl.String, "tensor_kernels": pl.Int64,
                      "tensor_time_share": pl.Float64, "example_kernel": pl.String}


def incomplete_flops(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """run, reason, tensor_kernels (launches), tensor_time_share, example_kernel for every run
    whose FLOP counts miss tensor-core work."""
    kernels = tables.get("kernels")
    if kernels is None or not kernels.height:
        return pl.DataFrame(schema=INCOMPLETE_COLUMNS)
    times = timing.counted_kernel_times(tables)
    k = kernels.join(times, on=["source_file", "launch_id"], how="left")
    counted = k.filter(pl.col("flops_complete").is_not_null())
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


def _reason(tables: dict[str, pl.DataFrame], run: str, example: str) -> str:
    metrics = tables.get("metrics")
    tensor_counted = metrics is not None and metrics.height and metrics.filter(
        (pl.col("run") == run) & pl.col("metric").str.contains("pipe_tensor|tensor_precision_fu")).height > 0
    if tensor_counted:
        return ("tensor-core instructions were counted, but no op-path counter (sm__ops_path_tensor_*) gives "
                "their FLOPs on this architecture (x512 holds only on Volta; Hopper's wgmma shapes vary): "
                f"tensor-core work is missing from the FLOPs (e.g. {example})")
    return (f"tensor-core kernels (e.g. {example}) ran, but the log has no tensor FLOP metric; the CUDA-core "
            "counters (fadd/fmul/ffma) miss their work, so the FLOPs are a lower bound")


# -- estimate vs measured --------------------------------------------------------------------

ESTIMATE_COLUMNS = {"run": pl.String, "est_flops": pl.Float64, "est_bytes": pl.Float64, "est_time_ns": pl.Float64,
                    "measured_time_ns": pl.Float64, "ratio": pl.Float64, "source": pl.String,
                    "measured_flops": pl.Float64, "est_bound": pl.String, "peak_source": pl.String}


def estimates(tables: dict[str, pl.DataFrame], inputs: list[Path], db: hardware.GpuDatabase) -> pl.DataFrame:
    """run, est_flops, est_bytes, est_time_ns, measured_time_ns, ratio (measured / estimated), source."""
    found = est_files.find_estimates([Path(p) for p in inputs], tables)
    if not found:
        return pl.DataFrame(schema=ESTIMATE_COLUMNS)
    table = {r["run"]: r for r in run_table(tables, db).to_dicts()}
    gpus = roofline.run_gpus(tables, db)
    rows = []
    for e in found:
        measured = table.get(e.run, {})
        spec = gpus.get(e.run)
        rows.append(_estimate_row(e, measured, spec))
    return pl.DataFrame(rows, schema=ESTIMATE_COLUMNS).sort("run")


def _estimate_row(e: "est_files.Estimate", measured: dict, spec: hardware.GpuSpec | None) -> dict:
    peak = spec.peak(e.precision) if spec else None
    bw = spec.dram_bw if spec else None
    t_compute = e.flops / peak if e.flops and peak else None
    t_memory = e.bytes / bw if e.bytes and bw else None
    parts = [t for t in (t_compute, t_memory) if t is not None]
    est_ns = max(parts) * 1e9 if parts else None
    bound = None
    if t_compute is not None and t_memory is not None:
        bound = "compute" if t_compute >= t_memory else "memory"
    measured_ns = measured.get("time_ns") or measured.get("gpu_time_ns")
    return {"run": e.run, "est_flops": e.flops, "est_bytes": e.bytes, "est_time_ns": est_ns,
            "measured_time_ns": measured_ns, "ratio": measured_ns / est_ns if measured_ns and est_ns else None,
            "source": e.source, "measured_flops": measured.get("flops"), "est_bound": bound,
            "peak_source": f"{spec.key} datasheet {e.precision}" if spec else None}
