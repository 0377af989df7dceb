"""Run totals: the run-level numbers every part of roofreport reads (the `runs` table's
`RUN_TOTALS` columns, tables/schema.py), computed here once.

* Elapsed: the time of a training batch as the job ran, where its log prints it
  (`elapsed_per_iteration`).
* Time: the kernel rows of the run's time source (`timing.kernel_time_rows`: one log, a trace
  before a summary before ncu's replays), every kernel; memcpy/memset apart as transfer time.
  Per iteration where the logs count iterations (`iterations.py`).
* Work: FLOPs and DRAM bytes summed over every counted kernel of the run (`counted.py`: one
  file per run), whether the kernel did FLOPs or only moved bytes. `flops_complete` is false
  when tensor-core work went uncounted, or when only other precisions than FP32 were counted
  (nvprof's `flop_count_dp` alone): the FLOPs are then a lower bound.
* Roofline point: intensity = FLOPs / DRAM bytes; achieved FLOP/s = FLOPs of the timed counted
  kernels / their time (a trace's time for the same launches when the run has one:
  `timing.counted_kernel_times`). The run is judged against the ceiling of the precision doing
  most of its FLOPs, with `roofline.py`'s ceilings, ridge and bound rules (`roofline.point`).
* `bound`: "memory" or "compute" by the run's intensity against the ridge point; null, with
  `bound_note` saying why, when FLOPs are incomplete, no GPU peak is known, a count is missing,
  or the point lies above a roof (a counting error). A point far below its roof keeps its class
  and says so in `bound_note`.
* Roofs without a point: a run on a known GPU whose logs counted no FLOPs (a trace, a summary)
  still gets its GPU's peaks and ridge point, at FP32 (`roof_precision`), so its roofline has
  roofs; no intensity and no bound class.
* `dram_bytes_derived`: some of the run's DRAM bytes are a logged rate × duration (counters.py).

`run_totals(model)` gives these columns from a `Model`'s derived rows (`roofreport.model`):
`Model.runs()` is the runs table with them filled, which `roofreport.read` keeps, so `parse`,
`read`, `analyze` and the report read the same frame.
"""

from __future__ import annotations

import polars as pl

from roofreport import gpu
from roofreport.model import counted, roofline, timing
from roofreport.tables import schema

TRANSFERS = ("memcpy", "memset")
_NO_PRECISION = "fp32"   # the roof of a run whose logs measured no precision
_KEEP_NOTES = ("below",)   # roofline notes a run keeps beside its bound class


def run_totals(model) -> pl.DataFrame:
    """run + the `RUN_TOTALS` columns of a `Model`, one row per run that has any (module
    docstring)."""
    time = kernel_time(model.time_rows)
    work = _work(model)
    work = pl.concat([work, _roofs_only(model.gpus, set(work["run"].to_list()) if work.height else set())],
                     how="diagonal_relaxed")
    steps = model.iterations
    ids = pl.concat([f.select("run") for f in (time, work, steps)]).unique()
    out = ids.join(time, on="run", how="left").join(work, on="run", how="left").join(steps, on="run", how="left")
    out = out.with_columns(
        (pl.col("kernel_time_ns") / pl.col("iterations")).alias("time_per_iteration_ns"))
    out = out.join(elapsed_per_iteration(model.tables.get("runs")), on="run", how="left")
    return out.select("run", *[pl.col(c).cast(t) if c in out.columns else pl.lit(None, t).alias(c)
                               for c, t in schema.RUN_TOTALS.items()]).sort("run")


# -- time ------------------------------------------------------------------------------------

def elapsed_per_iteration(runs: pl.DataFrame | None) -> pl.DataFrame:
    """run, elapsed_per_iteration_ns: a training batch's elapsed time as the program printed it
    (`step_time_ns`, the steady-state median: `pipeline/progress.py`) less its wait for data
    (`data_time_ns`): the time of the step as the job ran, on all its GPUs at once, which a
    kernel time summed over several GPUs is not."""
    if runs is None or "step_time_ns" not in runs.columns:
        return pl.DataFrame(schema={"run": pl.String, "elapsed_per_iteration_ns": pl.Float64})
    said = runs.filter(pl.col("step_time_ns").is_not_null())
    return said.select("run", (pl.col("step_time_ns") - pl.col("data_time_ns").fill_null(0.0))
                       .clip(lower_bound=0.0).alias("elapsed_per_iteration_ns"))


def kernel_time(rows: pl.DataFrame) -> pl.DataFrame:
    """run, kernel_time_ns, kernel_launches, transfer_time_ns, setup_time_ns, devices,
    time_source from the rows of each run's time source (`timing.kernel_time_rows`)."""
    if not rows.height:
        return pl.DataFrame(schema={"run": pl.String, "kernel_time_ns": pl.Float64, "kernel_launches": pl.Int64,
                                    "transfer_time_ns": pl.Float64, "setup_time_ns": pl.Float64,
                                    "devices": pl.Int64, "time_source": pl.String})
    moved = pl.col("category").fill_null("").is_in(TRANSFERS)
    kernels = (~moved).any()   # a log of transfers only ("No kernels were profiled") has no kernel time
    marked = rows if "setup" in rows.columns else setup_rows(rows)
    return marked.group_by("run").agg(
        pl.when(kernels).then(pl.col("time_ns").filter(~moved).sum()).alias("kernel_time_ns"),
        pl.when(kernels).then(pl.col("count").filter(~moved).sum()).alias("kernel_launches"),
        pl.when(moved.any()).then(pl.col("time_ns").filter(moved).sum()).alias("transfer_time_ns"),
        pl.when(kernels & timing.is_trace(pl.col("source_rank")).all())
        .then(pl.col("time_ns").filter(pl.col("setup")).sum()).alias("setup_time_ns"),
        pl.when(pl.col("device").filter(~moved).is_not_null().any())
        .then(pl.col("device").filter(~moved).drop_nulls().n_unique()).cast(pl.Int64).alias("devices"),
        pl.col("time_source").first())


def setup_rows(rows: pl.DataFrame) -> pl.DataFrame:
    """`rows` (`timing.kernel_time_rows`) with `setup`: a copy of a trace that ran before the
    run's first kernel (the model's weights uploaded once, the first batch): the start-up,
    apart from the steady state the kernels' time and shares describe. A summary orders
    nothing: its copies are never setup."""
    moved = pl.col("category").fill_null("").is_in(TRANSFERS)
    first_kernel = pl.col("order").filter(~moved).min().over("run", "source_file")
    return rows.with_columns((moved & timing.is_trace(pl.col("source_rank")) & (pl.col("order") < first_kernel))
                             .fill_null(False).alias("setup"))


# -- work and the roofline point -------------------------------------------------------------

def _work(model) -> pl.DataFrame:
    rows = counted.counter_rows(model.tables)
    if not rows.height:
        return pl.DataFrame(schema={"run": pl.String})
    rows = rows.join(model.counted_times, on=["source_file", "launch_id"], how="left").with_columns(
        counted.row_flops().alias("flops"))
    precisions = _dominant_precision(model.points)
    gpus = model.gpus
    out = []
    for (run,), group in rows.group_by(["run"], maintain_order=True):
        out.append(run_point(run, group, gpus.get(run), precisions.get(run)))
    return pl.DataFrame(out, infer_schema_length=None)


def _roofs_only(gpus: dict[str, gpu.GpuSpec], counted_runs: set[str]) -> pl.DataFrame:
    """The FP32 and DRAM roofs and ridge point of each run on a known GPU whose logs counted
    nothing (module docstring)."""
    out = []
    for run, spec in gpus.items():
        if run in counted_runs:
            continue
        peaks = roofline.peaks_for(spec, {}, _NO_PRECISION, [])
        out.append({"run": run, "roof_precision": _NO_PRECISION, "peak_flops_per_s": peaks["peak_flops_per_s"],
                    "peak_dram_bytes_per_s": peaks["peak_dram_bytes_per_s"], "ridge_ai": roofline.ridge(peaks),
                    "bound_note": "no FLOP counts in the logs"})
    return pl.DataFrame(out, schema={"run": pl.String, "roof_precision": pl.String, "peak_flops_per_s": pl.Float64,
                                     "peak_dram_bytes_per_s": pl.Float64, "ridge_ai": pl.Float64,
                                     "bound_note": pl.String})


def run_point(run: str, rows: pl.DataFrame, spec: gpu.GpuSpec | None, precision: str | None) -> dict:
    """The totals and roofline point of one run from its counted rows (with `flops`, `time_ns`,
    `time_source` columns)."""
    timed = rows.filter(pl.col("time_ns").is_not_null())
    flops = rows["flops"].drop_nulls()
    unmeasured = _unmeasured_fp32(rows)
    base = {
        "run": run,
        "flops": float(flops.sum()) if flops.len() else None,
        "flops_complete": False if unmeasured else _complete(rows),
        "incomplete_because": unmeasured or "tensor-core work not counted, the true point is higher",
        "dram_bytes": _sum(rows["dram_bytes"]),
        "l2_bytes": None, "l1_bytes": None,
        "counted_kernels": int(rows["count"].fill_null(1).sum()),
        "time_ns": float(timed["time_ns"].sum()) if timed.height else None,
        "timed_flops": _sum(timed["flops"]) if timed.height else None,
        "counted_time_source": _time_source(rows, timed),
    }
    peaks = {"peak_flops_per_s": None, "peak_dram_bytes_per_s": None, "peak_l2_bytes_per_s": None,
             "peak_l1_bytes_per_s": None, "peak_source": None}
    if precision is None and spec is not None:
        precision = _NO_PRECISION      # no FLOPs counted: the GPU's FP32 roof all the same
    if precision is not None:
        sources = timed["time_source"].to_list()
        measured = roofline.at_time_clock(roofline.measured_ceilings(rows), roofline.trace_timed(sources))
        peaks = roofline.peaks_for(spec, measured, precision, rows["name"].to_list(),
                                   rows["tensor_precision"].to_list() if "tensor_precision" in rows.columns else None)
    point = roofline.point({**base, "flops": base["flops"] or 0.0, "timed_flops": base["timed_flops"] or 0.0}, peaks)
    bound, note = _bound(base, point, spec, precision)
    return {
        **{k: base[k] for k in ("run", "flops", "flops_complete", "dram_bytes", "counted_kernels",
                                "counted_time_source")},
        "counted_time_ns": base["time_ns"],
        "arithmetic_intensity": point["ai_dram"] if base["flops"] is not None else None,
        "achieved_flops_per_s": point["achieved_flops_per_s"] if base["flops"] else None,
        "roof_precision": precision,
        "peak_flops_per_s": peaks["peak_flops_per_s"], "peak_dram_bytes_per_s": peaks["peak_dram_bytes_per_s"],
        "ridge_ai": point["ridge_ai"], "pct_of_roof": point["pct_of_roof"] if base["flops"] else None,
        "bound": bound, "bound_note": note,
        "dram_bytes_derived": bool(rows["dram_bytes_derived"].fill_null(False).any()),
    }


def _bound(base: dict, point: dict, spec, precision: str | None) -> tuple[str | None, str | None]:
    """memory/compute by roofline's rule, or null with the reason."""
    if base["flops"] is None:
        return None, "no FLOP counts in the logs"
    if base["flops_complete"] is False:
        return None, f"FLOPs incomplete: {base['incomplete_because']}"
    if not base["flops"]:
        return None, "no floating-point work was counted"
    if not base["dram_bytes"]:
        return None, "no DRAM byte counts in the logs"
    if point["ridge_ai"] is None:
        missing = "no GPU identified" if spec is None else f"no {precision} peak known for the {spec.key}"
        return None, f"{missing}, so no ridge point"
    if point["above_roof"]:
        return None, point["note"]
    note = point["note"] if point["note"] and point["note"].startswith(_KEEP_NOTES) else None
    return roofline.bound_class(point["ai_dram"], point["ridge_ai"]), note


def _dominant_precision(points: pl.DataFrame) -> dict[str, str]:
    """run -> the precision doing most of its FLOPs (roofline's precision of each kernel:
    `roofline.kernel_points`)."""
    if not points.height:
        return {}
    per = points.group_by("run", "precision").agg(pl.col("flops").sum())
    top = per.sort(["run", "flops", "precision"], descending=[False, True, False]).group_by(
        "run", maintain_order=True).first()
    return dict(zip(top["run"].to_list(), top["precision"].to_list()))


def _unmeasured_fp32(rows: pl.DataFrame) -> str | None:
    """Why the run's FLOPs miss its FP32 work, when its counters measured other precisions but
    never FP32 (e.g. nvprof `--metrics flop_count_dp` alone): its deep-learning kernels then count
    0 FLOPs, which is no count of the work at all. None when FP32 was measured or nothing was."""
    measured = [column for column in counted.FLOP_COLUMNS if rows[column].is_not_null().any()]
    if not measured or "flops_fp32" in measured:
        return None
    names = ", ".join(column.removeprefix("flops_").upper() for column in measured)
    return f"only {names} FLOPs were counted; FP32 work was not measured"


def _complete(rows: pl.DataFrame) -> bool | None:
    flags = rows.filter(pl.col("flops").is_not_null())["flops_complete"].drop_nulls()
    return None if flags.is_empty() else bool(flags.all())


def _sum(values: pl.Series) -> float | None:
    values = values.drop_nulls()
    return float(values.sum()) if values.len() else None


def _time_source(rows: pl.DataFrame, timed: pl.DataFrame) -> str | None:
    sources = timed["time_source"].drop_nulls().value_counts(sort=True)
    if not sources.height:
        return None
    source = sources["time_source"][0]
    launches, timed_launches = rows["count"].fill_null(1).sum(), timed["count"].fill_null(1).sum()
    if timed_launches < launches:
        source = f"{source}; {timed_launches} of {launches} counted launches timed"
    return source
