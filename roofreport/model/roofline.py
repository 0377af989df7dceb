"""Roofline per run and per kernel (docs/methodology.md d): intensity per memory level, achieved
FLOP/s, the attainable roof, % of roof, ridge point and bound class.

* Precision: each kernel belongs to its dominant precision (the largest of its fp64, fp32, fp16
  and tensor FLOPs) and is judged against that precision's ceiling with all its FLOPs; a run has
  one row per precision its kernels fall in, so the rows partition the run's kernels.
* Time: the real time of the counted launches when a trace of the same run has them
  (`timing.counted_kernel_times`), else the log's own duration; `time_source` says which.
  Achieved FLOP/s = FLOPs of the timed kernels / their time.
* Ceilings, best first: the log's own `.peak_sustained` × clock (ncu, measured); the datasheet
  peak scaled to the SM clock the log ran at (ncu locks clocks to base by default); the
  datasheet peak. Compute ceilings follow the clock of the TIME source (docs/methodology.md c.1):
  ncu time -> the logged clock; trace time (nsys/nvprof, kernels at boost) -> the datasheet
  (boost) peaks, never ncu's locked clock, which would inflate % of roof. Tensor (matrix-core,
  NVIDIA or AMD) work uses the tensor peak of its input type: the type the counters name
  (`kernels.tensor_precision`: FP64/FP32/BF16/FP16 matrix on AMD), else TF32/BF16/FP16 by kernel
  name. DRAM: measured, else datasheet. L2/L1 roofs exist only where the log measured them.
* Roof: attainable = min(peak FLOP/s, DRAM bandwidth × AI_DRAM); ridge = peak / bandwidth;
  `pct_of_roof` = 100 × achieved / attainable (a percentage, like `compare.pct_of_peak`).
* Bound: "memory" when AI_DRAM < ridge, else "compute"; "latency" when achieved is below
  LATENCY_FRACTION (10 %) of the attainable roof, i.e. far below both ceilings (launch overhead,
  too little parallelism, dependency stalls); null when FLOPs are incomplete (tensor work not
  counted: the true point is higher) or a quantity is missing.
* A point more than ABOVE_ROOF_TOLERANCE above any roof is impossible: `above_roof` flags a
  counting error (wrong peak, time from another run, double-counted FLOPs).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from statistics import median

import polars as pl

from roofreport import gpu
from roofreport.model import counted, mix, timing
from roofreport.tables import lazy

LATENCY_FRACTION = 0.10
ABOVE_ROOF_TOLERANCE = 0.05
PRECISIONS = ["fp64", "fp32", "fp16", "tensor"]
_FLOP_COL = {p: f"flops_{p}" for p in PRECISIONS}
# TF32 tensor-core kernels (cuBLAS, cuDNN, CUTLASS) by name: "tf32", or an FP32-in "s" MMA of
# TF32's shape m16n8k8 ("ampere_s1688gemm", "cutlass_80_tensorop_s1688gemm"). Not "s16816": k16
# is FP16/BF16's shape ("ampere_fp16_s16816gemm_fp16": FP16 in, FP32 accumulate), nor a typed
# "fp16_s1688"/"bf16_s1688" (Turing's FP16 MMA). No look-around: polars' regex has none.
TF32_NAMES = r"(?i)tf32|[^6]_s1688|tensorop_s1688"
HALF_NAMES = r"(?i)f16|fp16|bf16"     # a half-precision input type in the name: never TF32 ("tensorop_s1688gemm_f16")


def tf32_by_name() -> pl.Expr:
    """`name` is a TF32 tensor-core kernel's (TF32_NAMES, and no half-precision type named)."""
    return pl.col("name").str.contains(TF32_NAMES) & ~pl.col("name").str.contains(HALF_NAMES)


_TENSOR_KIND = [("tensor_tf32", TF32_NAMES), ("tensor_bf16", r"(?i)bf16")]

COLUMNS = ["run", "gpu_model", "precision", "flops", "flops_complete", "dram_bytes", "l2_bytes", "l1_bytes",
           "time_ns", "time_source", "ai_dram", "ai_l2", "ai_l1", "achieved_flops_per_s", "peak_flops_per_s",
           "peak_dram_bytes_per_s", "ridge_ai", "attainable_flops_per_s", "pct_of_roof", "bound", "above_roof",
           "peak_source", "peak_l2_bytes_per_s", "peak_l1_bytes_per_s", "note", "fma_share", "ceiling",
           "ceiling_flops_per_s"]


@dataclass
class Ceiling:
    """One roof: `kind` "compute" (FLOP/s) or "memory" (byte/s, `level` dram/l2/l1)."""

    label: str
    kind: str
    value: float
    level: str | None = None
    source: str = "datasheet"


_COMPUTE = [("FP64", "fp64"), ("FP32", "fp32"), ("FP16", "fp16"), ("Tensor FP16", "tensor_fp16"),
            ("Tensor TF32", "tensor_tf32"), ("Tensor BF16", "tensor_bf16"), ("Tensor FP64", "tensor_fp64"),
            ("Tensor FP32", "tensor_fp32")]
# Roofs a kernel is judged against only when its counters name that input type (AMD's
# SQ_INSTS_VALU_MFMA_MOPS_F8): not drawn on every chart of a GPU that has the peak.
_COUNTED_ONLY = [("Tensor FP8", "tensor_fp8")]
_LABELS = {precision: label for label, precision in _COMPUTE + _COUNTED_ONLY}


def ceilings(spec: gpu.GpuSpec, measured: dict | None = None, counted: Collection[str] = ()) -> list[Ceiling]:
    """The roofs of one GPU. `measured` may hold the log's ceilings ("fp64", "fp32", "fp16" in
    FLOP/s; "dram", "l2", "l1" in byte/s), which replace the datasheet's, "sm_clock_hz", which
    scales the datasheet compute peaks, and "mem_clock_hz", which scales its DRAM bandwidth.
    `counted`: the matrix input types the runs' counters name (`counted_tensor_types`): their
    roofs of `_COUNTED_ONLY` (FP8) are drawn too."""
    measured = measured or {}
    scaled = spec.at_clock(measured.get("sm_clock_hz"), measured.get("mem_clock_hz"))
    tag = "datasheet" if spec.clock_scale(measured.get("sm_clock_hz")) is None \
        else f"datasheet at {measured['sm_clock_hz'] / 1e6:.0f} MHz"
    out = []
    for label, precision in _COMPUTE + [pair for pair in _COUNTED_ONLY if pair[1] in counted]:
        if precision in measured and measured[precision]:
            out.append(Ceiling(label, "compute", float(measured[precision]), None, "measured (ncu)"))
        elif scaled.peak(precision):
            field = gpu.PRECISIONS[precision]
            out.append(Ceiling(label, "compute", scaled.peak(precision), None,
                               spec.source_of(field) if field in spec.measured else tag))
    for level, label in (("dram", "DRAM"), ("l2", "L2"), ("l1", "L1")):
        if measured.get(level):
            out.append(Ceiling(label, "memory", float(measured[level]), level, "measured (ncu)"))
        elif level == "dram" and scaled.dram_bw:
            memory_tag = spec.source_of("dram_bw") if scaled.dram_bw == spec.dram_bw else \
                f"datasheet at {measured['mem_clock_hz'] / 1e6:.0f} MHz memory clock"
            out.append(Ceiling(label, "memory", scaled.dram_bw, level, memory_tag))
    return out


def counted_tensor_types(kernels: pl.DataFrame, runs: Collection[str]) -> frozenset[str]:
    """The matrix peaks (`tensor_fp8`...) the counters of these runs' kernels name
    (`kernels.tensor_precision`, AMD's `SQ_INSTS_VALU_MFMA_MOPS_<type>`)."""
    if not kernels.height or "tensor_precision" not in kernels.columns:
        return frozenset()
    found = kernels.filter(pl.col("run").is_in(list(runs)))["tensor_precision"].drop_nulls().unique().to_list()
    return frozenset(f"tensor_{p}" for p in found)


# -- per kernel ------------------------------------------------------------------------------

def kernel_points(tables: dict[str, pl.DataFrame], times: pl.DataFrame | None = None) -> pl.DataFrame:
    """Kernels with FLOPs (of the run's counted file: `counted.counter_rows`), their dominant
    precision, all their FLOPs and their real time (`times`: `timing.counted_kernel_times`,
    worked out here when not given)."""
    kernels = counted.counter_rows(tables)
    if not kernels.height:
        return pl.DataFrame()
    with_flops = kernels.with_columns([pl.col(c).fill_null(0.0).alias(f"__{p}")
                                       for p, c in _FLOP_COL.items()])
    with_flops = with_flops.with_columns(pl.sum_horizontal([f"__{p}" for p in PRECISIONS]).alias("flops"))
    with_flops = with_flops.filter(pl.col("flops") > 0)
    if not with_flops.height:
        return pl.DataFrame()
    dominant = pl.lit(PRECISIONS[0])
    best = pl.col(f"__{PRECISIONS[0]}")
    for precision in PRECISIONS[1:]:
        dominant = pl.when(pl.col(f"__{precision}") > best).then(pl.lit(precision)).otherwise(dominant)
        best = pl.max_horizontal(best, pl.col(f"__{precision}"))
    with_flops = with_flops.with_columns(dominant.alias("precision")).drop([f"__{p}" for p in PRECISIONS])
    # A tensor-active kernel with uncounted tensor work belongs with tensor work, not with the
    # epilogue FLOPs its CUDA cores left in the counters.
    uncounted = pl.col("flops_complete").not_().fill_null(False) & pl.col("tensor_active").fill_null(False)
    with_flops = with_flops.with_columns(pl.when(uncounted).then(pl.lit("tensor")).otherwise(pl.col("precision")).alias("precision"))
    times = timing.counted_kernel_times(tables) if times is None else times
    shares = mix.fma_shares(lazy.scan(tables, "metrics"))
    with_flops = with_flops.join(shares, on=["source_file", "launch_id", "precision"], how="left") \
        if shares.height else with_flops.with_columns(pl.lit(None, pl.Float64).alias("fma_share"))
    return with_flops.join(times, on=["source_file", "launch_id"], how="left")


def run_gpus(tables: dict[str, pl.DataFrame], db: gpu.GpuDatabase) -> dict[str, gpu.GpuSpec]:
    """run -> the spec of its GPU (`gpu_model`: the resolver's answer), with `db`'s values (a
    user's peaks file)."""
    runs = tables.get("runs")
    if runs is None or not runs.height:
        return {}
    found = ((run, db.get(key)) for run, key in runs.select("run", "gpu_model").iter_rows())
    measured = measured_peaks(lazy.scan(tables, "metrics"))
    return {run: spec.with_measured(*measured.get(run, ({}, ""))) for run, spec in found if spec is not None}


# Measured ceilings, read into `metrics` section "roofline" in base units: rocprof-compute's
# `roofline.csv` (its microbenchmarks' empirical peaks) and the Empirical Roofline Toolkit's
# `roofline.json` (families/rocm/ert.py, in the same names) -> the GpuSpec fields they measure.
# L2/L1/LDS bandwidths have no GPU-table column: kept in `metrics` only.
MEASURED_FILE = "roofline.csv"
_ROOFLINE_FIELDS = {"HBMBw": "dram_bw", "FP64Flops": "fp64", "FP32Flops": "fp32", "MFMAF64Flops": "fp64_tensor",
                    "MFMAF32Flops": "fp32_tensor", "MFMAF16Flops": "fp16_tensor", "MFMABF16Flops": "bf16_tensor",
                    "MFMAI8Ops": "int8_tensor", "FP16Flops": "fp16"}


def measured_peaks(metrics: pl.LazyFrame | None) -> dict[str, tuple[dict[str, float], str]]:
    """run -> (the peaks its measured-ceilings files give: GpuSpec field -> value, the median
    over the devices listed; what measured them: the files' names, `roofline.csv`,
    `roofline.json`). `metrics` is a scan: of a dataset folder's metrics only these rows are read."""
    if metrics is None or "run" not in metrics.collect_schema().names():
        return {}
    rows = metrics.filter((pl.col("section") == "roofline") & pl.col("metric").is_in(list(_ROOFLINE_FIELDS))
                          & pl.col("value").is_not_null() & (pl.col("value") > 0)).collect()
    if not rows.height:
        return {}
    medians = rows.group_by("run", "metric").agg(pl.col("value").median())
    files = rows.group_by("run").agg(pl.col("source_file").drop_nulls().unique().sort())
    out: dict[str, tuple[dict[str, float], str]] = {}
    for run, names in files.iter_rows():
        shown = sorted({str(name).replace("\\", "/").rsplit("/", 1)[-1] for name in names or []})
        out[run] = ({}, ", ".join(shown) or MEASURED_FILE)
    for run, metric, value in medians.iter_rows():
        out[run][0][_ROOFLINE_FIELDS[metric]] = float(value)
    return out


_MEASURED = {"fp32": "peak_flops_fp32", "fp64": "peak_flops_fp64", "fp16": "peak_flops_fp16",
             "dram": "peak_dram_bytes_per_s", "l2": "peak_l2_bytes_per_s", "l1": "peak_l1_bytes_per_s",
             "sm_clock_hz": "sm_clock_hz", "mem_clock_hz": "mem_clock_hz"}


def measured_ceilings(rows: pl.DataFrame) -> dict:
    """The log's ceilings and clock for a set of kernel rows (medians over the kernels)."""
    out = {}
    for key, col in _MEASURED.items():
        if col in rows.columns:
            values = rows[col].drop_nulls().to_list()
            if values:
                out[key] = median(values)
    return out


def _measured_one(row: dict) -> dict:
    return {key: row[col] for key, col in _MEASURED.items() if row.get(col) is not None}


def trace_timed(sources: list[str | None]) -> bool:
    """Most timed kernels got their time from a trace or a non-ncu log (boost clock), not from
    ncu's own clock-locked `gpu__time_duration`."""
    timed = [s for s in sources if s]
    return sum(not s.startswith("ncu") for s in timed) * 2 > len(timed)


def at_time_clock(measured: dict, trace_timed: bool) -> dict:
    """The log's ceilings minus what ran at ncu's locked clock when the time did not: its SM
    clock and its compute peaks (the datasheet's boost peaks then apply) and its memory clock;
    the measured memory roofs stay."""
    if not trace_timed:
        return measured
    return {k: v for k, v in measured.items() if k not in ("sm_clock_hz", "mem_clock_hz", "fp64", "fp32", "fp16")}


def at_run_clock(measured: dict, trace: bool, clock) -> tuple[dict, str | None]:
    """The log's ceilings at the clock the run's time was measured at, and which clock in words
    (`model/clocks.py`: logged frequency, ncu's locked clock, nvidia-smi's sampled clock, boost).
    `trace`: the time is a trace's (or another unlocked tool's); `clock`: the run's RunClock."""
    out = at_time_clock(measured, trace)
    unlocked = trace or (clock is not None and clock.domain == "unlocked")
    if not trace and out.get("sm_clock_hz"):
        return out, f"SM clock {out['sm_clock_hz'] / 1e6:.0f} MHz, as ncu logged it"
    if clock is None:
        return out, None
    if unlocked and clock.sampled is not None:
        out["sm_clock_hz"] = clock.sampled.sm_clock_mhz * 1e6
        if clock.sampled.mem_clock_mhz:
            out.setdefault("mem_clock_hz", clock.sampled.mem_clock_mhz * 1e6)
        return out, (f"SM clock {clock.sampled.sm_clock_mhz:.0f} MHz, as the GPU's monitoring log (nvidia-smi) "
                     f"beside the run sampled it while busy ({clock.sampled.samples} samples)")
    boost = f"boost clock {clock.boost_hz / 1e6:.0f} MHz" if clock.boost_hz else "boost clock"
    if unlocked:
        why = "traced kernels run unlocked" if trace else "ncu ran with --clock-control none"
        return out, f"{boost} ({why}; no clock sampled beside the run)"
    if clock.locked_hz:
        out["sm_clock_hz"] = clock.locked_hz
        return out, f"{clock.domain} clock {clock.locked_hz / 1e6:.0f} MHz ({clock.domain_source})"
    if clock.domain:
        return out, f"{boost}: {clock.domain_source}, but the GPU table has no {clock.domain} clock for this GPU"
    return out, boost


def _tensor_kind(names: list[str | None], precisions: list[str | None] | None = None,
                 spec: gpu.GpuSpec | None = None) -> str:
    """Which tensor (matrix-core) peak a group of tensor kernels is judged by: the input type the
    counters name (`kernels.tensor_precision`, the most frequent; AMD's MOPS counters) when the
    GPU has that peak, else TF32/BF16 by name, else FP16."""
    counted = [p for p in precisions or [] if p]
    if counted:
        kind = f"tensor_{max(sorted(set(counted)), key=counted.count)}"
        if kind in _LABELS and (spec is None or spec.peak(kind)):
            return kind
    for kind, pattern in _TENSOR_KIND:
        if any(n and re.search(pattern, n) and not (kind == "tensor_tf32" and re.search(HALF_NAMES, n))
               for n in names):
            return kind
    return "tensor_fp16"


def peaks_for(spec: gpu.GpuSpec | None, measured: dict, precision: str, names: list[str | None],
              tensor_precisions: list[str | None] | None = None) -> dict:
    """peak FLOP/s and byte/s for one group of kernels, with where they came from."""
    key = _tensor_kind(names, tensor_precisions, spec) if precision == "tensor" else precision
    found = {c.label: c for c in ceilings(spec, measured)} if spec else {}
    label = _LABELS[key]
    compute = found.get(label)
    if compute is None and spec is not None and key in {p for _, p in _COUNTED_ONLY} and spec.peak(key):
        compute = Ceiling(label, "compute", spec.peak(key), None, spec.source_of(gpu.PRECISIONS[key]))
    if compute is None and key in measured:
        compute = Ceiling(label, "compute", measured[key], None, "measured (ncu)")
    dram = found.get("DRAM") or (Ceiling("DRAM", "memory", measured["dram"], "dram", "measured (ncu)")
                                 if measured.get("dram") else None)
    parts = [f"{c.label}: {c.source}" for c in (compute, dram) if c]
    where = f" ({spec.key})" if spec else ""
    return {"peak_flops_per_s": compute.value if compute else None, "peak_label": label,
            "peak_dram_bytes_per_s": dram.value if dram else None,
            "peak_l2_bytes_per_s": measured.get("l2"), "peak_l1_bytes_per_s": measured.get("l1"),
            "peak_source": "; ".join(parts) + where if parts else None}


def summarize(rows: pl.DataFrame) -> dict:
    timed = rows.filter(pl.col("time_ns").is_not_null())
    sources = timed["time_source"].drop_nulls().value_counts(sort=True)
    source = sources["time_source"][0] if sources.height else None
    if source and timed.height < rows.height:
        source = f"{source}; {timed.height} of {rows.height} kernels timed"
    complete = rows["flops_complete"].drop_nulls()
    return {
        "flops": rows["flops"].sum(),
        "flops_complete": None if complete.is_empty() else bool(complete.all()),
        "dram_bytes": _sum(rows, "dram_bytes"), "l2_bytes": _sum(rows, "l2_bytes"), "l1_bytes": _sum(rows, "l1_bytes"),
        "time_ns": timed["time_ns"].sum() if timed.height else None,
        "timed_flops": timed["flops"].sum() if timed.height else None,
        "time_source": source,
        "fma_share": mix.combined_share(rows["flops"].to_list(), rows["fma_share"].to_list())
        if "fma_share" in rows.columns else None,
    }


def _sum(rows: pl.DataFrame, col: str) -> float | None:
    values = rows[col].drop_nulls()
    return float(values.sum()) if values.len() else None


def point(base: dict, peaks: dict) -> dict:
    """Intensities, achieved rate, roof, bound: the roofline arithmetic on one point."""
    flops = base["flops"]
    out = {**base, **peaks}
    for level in ("dram", "l2", "l1"):
        moved = base.get(f"{level}_bytes")
        out[f"ai_{level}"] = flops / moved if moved else None
    time_ns = base.get("time_ns")
    out["achieved_flops_per_s"] = base["timed_flops"] / (time_ns * 1e-9) if time_ns else None
    share = base.get("fma_share") if peaks.get("peak_label", "").startswith("FP") else None
    out["fma_share"] = share
    out["ceiling_flops_per_s"] = peaks["peak_flops_per_s"] * mix.ceiling_factor(share) \
        if peaks["peak_flops_per_s"] else None
    out["ceiling"] = mix.ceiling_name(peaks["peak_label"], share) if peaks.get("peak_label") else None
    pf, bw, ai = out["ceiling_flops_per_s"], peaks["peak_dram_bytes_per_s"], out["ai_dram"]
    out["ridge_ai"] = ridge({**peaks, "peak_flops_per_s": pf})
    roofs = [r for r in (pf, bw * ai if bw and ai else None) if r]
    out["attainable_flops_per_s"] = min(roofs) if pf and bw and ai else None
    achieved, attainable = out["achieved_flops_per_s"], out["attainable_flops_per_s"]
    out["pct_of_roof"] = 100.0 * achieved / attainable if achieved and attainable else None
    out["above_roof"] = _above(out)
    out["bound"], out["note"] = _bound(out)
    return out


def ridge(peaks: dict) -> float | None:
    """The ridge point: the intensity (FLOP/byte) where the DRAM roof meets the compute roof."""
    flops, bandwidth = peaks["peak_flops_per_s"], peaks["peak_dram_bytes_per_s"]
    return flops / bandwidth if flops and bandwidth else None


def _above(kernel_point: dict) -> bool | None:
    achieved = kernel_point["achieved_flops_per_s"]
    if not achieved:
        return None
    roofs = [kernel_point.get("ceiling_flops_per_s") or kernel_point["peak_flops_per_s"]]
    for level in ("dram", "l2", "l1"):
        peak = f"peak_{level}_bytes_per_s"
        if kernel_point.get(peak) and kernel_point.get(f"ai_{level}"):
            roofs.append(kernel_point[peak] * kernel_point[f"ai_{level}"])
    roofs = [r for r in roofs if r]
    return bool(roofs) and achieved > (1 + ABOVE_ROOF_TOLERANCE) * min(roofs)


def _bound(kernel_point: dict) -> tuple[str | None, str | None]:
    if kernel_point["flops_complete"] is False:
        return None, "FLOPs incomplete: tensor-core work not counted, the true point is higher"
    if kernel_point["above_roof"]:
        return None, "above a roof: a counting error (peak, time or FLOPs do not belong together)"
    ai, ridge, pct = kernel_point["ai_dram"], kernel_point["ridge_ai"], kernel_point["pct_of_roof"]
    if ai is None or ridge is None or pct is None:
        return None, None
    if pct < 100 * LATENCY_FRACTION:
        return "latency", f"below {LATENCY_FRACTION:.0%} of the attainable roof"
    return bound_class(ai, ridge), None


def bound_class(ai: float, ridge: float) -> str:
    """Which roof is lower at this intensity: "memory" left of the ridge point, else "compute"."""
    return "memory" if ai < ridge else "compute"


def run_roofline(model) -> pl.DataFrame:
    """One row per (run, precision) that has FLOPs (COLUMNS; see the module docstring), of a
    `Model`'s points and GPUs."""
    points = model.points
    if not points.height:
        return _empty(COLUMNS)
    gpus = model.gpus
    rows = []
    for (run, precision), group in points.group_by(["run", "precision"], maintain_order=True):
        spec = gpus.get(run)
        timed = group.filter(pl.col("time_ns").is_not_null())["time_source"].to_list()
        measured, _ = at_run_clock(measured_ceilings(group), trace_timed(timed), model.clocks.get(run))
        peaks = peaks_for(spec, measured, precision, group["name"].to_list(), group["tensor_precision"].to_list())
        base = {"run": run, "gpu_model": spec.key if spec else None, "precision": precision, **summarize(group)}
        rows.append(point(base, peaks))
    return _frame(rows, COLUMNS).sort("run", "precision")


KERNEL_COLUMNS = COLUMNS + ["source_file", "launch_id", "short_name", "category", "count"]
# What `kernel_roofline` takes from each point as it is
_KERNEL_KEYS = ("run", "precision", "flops", "flops_complete", "dram_bytes", "l2_bytes", "l1_bytes", "time_ns",
                "time_source", "source_file", "launch_id", "short_name", "category", "count", "fma_share")


def kernel_roofline(model, points: pl.DataFrame | None = None) -> pl.DataFrame:
    """The same columns per kernel row (a launch or a summary row), plus its name and category,
    of a `Model`'s points (or of `points`, some of them: the kernels a view keeps)."""
    points = model.points if points is None else points
    if not points.height:
        return _empty(KERNEL_COLUMNS)
    gpus = model.gpus
    measured = {run: measured_ceilings(g) for (run,), g in points.group_by(["run"])}
    cache: dict[tuple, dict] = {}
    kinds: dict[tuple, str] = {}  # (run, name, counted precision) -> tensor kind: a pure function of them
    rows = []
    # (only the columns read below: iterating rows costs by the column, and points hold ~47)
    read = [c for c in dict.fromkeys(("name", "tensor_precision", *_KERNEL_KEYS, *_MEASURED.values()))
            if c in points.columns]
    for kernel in points.select(read).iter_rows(named=True):
        spec = gpus.get(kernel["run"])
        ceiling = _measured_one(kernel) or measured[kernel["run"]]
        ceiling, _ = at_run_clock(ceiling, kernel["time_ns"] is not None and trace_timed([kernel["time_source"]]),
                                  model.clocks.get(kernel["run"]))
        counted = [kernel["tensor_precision"]]
        if kernel["precision"] == "tensor":
            named = (kernel["run"], kernel["name"], kernel["tensor_precision"])
            if named not in kinds:  # launches of one kernel share its name: its regexes run once
                kinds[named] = _tensor_kind([kernel["name"]], counted, spec)
            kind = kinds[named]
        else:
            kind = kernel["precision"]
        key = (kernel["run"], kind, tuple(sorted(ceiling.items())))
        if key not in cache:  # many launches share a GPU, a precision and the log's ceilings
            cache[key] = peaks_for(spec, ceiling, kernel["precision"], [kernel["name"]], counted)
        timed = kernel["time_ns"] is not None
        base = {key: kernel.get(key) for key in _KERNEL_KEYS}
        base.update(gpu_model=spec.key if spec else None, timed_flops=kernel["flops"] if timed else None)
        rows.append(point(base, cache[key]))
    return _frame(rows, KERNEL_COLUMNS)


_TYPES = {"run": pl.String, "gpu_model": pl.String, "precision": pl.String, "flops_complete": pl.Boolean,
          "time_source": pl.String, "bound": pl.String, "above_roof": pl.Boolean, "peak_source": pl.String,
          "note": pl.String, "ceiling": pl.String, "source_file": pl.String, "launch_id": pl.Int64, "short_name": pl.String,
          "category": pl.String, "count": pl.Int64}


def _frame(rows: list[dict], columns: list[str]) -> pl.DataFrame:
    # (the schema picks each row's columns, a missing one null: no per-row dict copied first)
    return pl.from_dicts(rows, schema={c: _TYPES.get(c, pl.Float64) for c in columns})


def _empty(columns: list[str]) -> pl.DataFrame:
    return pl.DataFrame(schema={c: _TYPES.get(c, pl.Float64) for c in columns})


# -- what a chart draws -----------------------------------------------------------------------

MIX_DRAWN_BELOW = 0.9
_LEVELS = {"dram": "peak_dram_bytes_per_s", "l2": "peak_l2_bytes_per_s", "l1": "peak_l1_bytes_per_s"}


def judged_ceilings(rows: pl.DataFrame, kernels: pl.DataFrame) -> dict:
    """The ceilings a set of runs was judged against (medians of their `run_roofline` rows), in
    `ceilings()` terms, so a chart draws the roofs their % of roof used (measured or
    clock-scaled peaks), with the SM and memory clocks their counted kernels ran at when the
    time is ncu's (a trace's time ran at the trace's clock: its roofs stay unscaled)."""
    out = {}
    theirs = kernels.filter(pl.col("run").is_in(rows["run"].to_list())) if "run" in kernels.columns else kernels
    if not trace_timed(rows["time_source"].to_list()):
        for clock in ("sm_clock_hz", "mem_clock_hz"):
            clocks = theirs[clock].drop_nulls() if clock in theirs.columns else pl.Series([], dtype=pl.Float64)
            if clocks.len():
                out[clock] = clocks.median()
    for precision in ("fp64", "fp32", "fp16"):
        values = rows.filter(pl.col("precision") == precision)["peak_flops_per_s"].drop_nulls()
        if values.len():
            out[precision] = values.median()
    for level, col in _LEVELS.items():
        if col in rows.columns and rows[col].drop_nulls().len():
            out[level] = rows[col].drop_nulls().median()
    return out


def chart_ceilings(spec: gpu.GpuSpec | None, rows: pl.DataFrame, kernels: pl.DataFrame,
                   roof_precisions: dict[str, str] | None = None) -> list[Ceiling]:
    """The roofs of one chart: the GPU's ceilings as its runs were judged (`judged_ceilings`),
    the matrix roofs only counters name (FP8: `counted_tensor_types`), and the instruction-mix ceilings (`mix.py`) the runs were judged by where they sit well below
    their precision's peak (under `MIX_DRAWN_BELOW` of it: a line a hair under the peak would only
    crowd the chart; % of roof uses it all the same), of the precision each run is judged by
    (`roof_precisions`: run -> the runs table's roof_precision; all rows when None), each once."""
    if spec is None:
        return []
    out = ceilings(spec, judged_ceilings(rows, kernels), counted_tensor_types(kernels, rows["run"].to_list()))
    if "ceiling" in rows.columns:
        mixed = rows.filter(pl.col("ceiling").is_not_null() & pl.col("fma_share").is_not_null()
                            & (pl.col("ceiling_flops_per_s") < MIX_DRAWN_BELOW * pl.col("peak_flops_per_s")))
        if roof_precisions is not None:
            mixed = mixed.filter(pl.struct("run", "precision").map_elements(
                lambda r: roof_precisions.get(r["run"]) == r["precision"], return_dtype=pl.Boolean))
        seen = set()
        for name, value in mixed.select("ceiling", "ceiling_flops_per_s").unique(maintain_order=True).iter_rows():
            if name not in seen:
                seen.add(name)
                out.append(Ceiling(mix.short_name(name), "compute", value, None, "instruction mix"))
    return out


OFF_CHART_COLUMNS = {"run": pl.String, "short_name": pl.String, "launches": pl.Int64, "time_ns": pl.Float64,
                     "time_share": pl.Float64, "ai_dram": pl.Float64, "achieved_flops_per_s": pl.Float64}


def off_chart(kernel_points: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Tensor-core kernels whose tensor work no counter counted (`flops_complete` false): their
    FLOPs, intensity and FLOP/s are lower bounds orders of magnitude under where they ran, so a
    chart lists them beside it instead of placing them (issue 31, item 10). Per run and kernel
    name: launches, time, share of the run's kernel time, and the lower bounds (≥)."""
    if not kernel_points.height:
        return pl.DataFrame(schema=OFF_CHART_COLUMNS)
    uncounted = kernel_points.filter((pl.col("flops_complete") == False) & (pl.col("precision") == "tensor"))  # noqa: E712
    if not uncounted.height:
        return pl.DataFrame(schema=OFF_CHART_COLUMNS)
    grouped = uncounted.group_by("run", "short_name", maintain_order=True).agg(
        pl.col("count").fill_null(1).sum().alias("launches"), pl.col("time_ns").sum().alias("time_ns"),
        pl.col("flops").sum().alias("__flops"), pl.col("dram_bytes").sum().alias("__bytes"))
    times = runs.select("run", "kernel_time_ns") if "kernel_time_ns" in runs.columns else \
        pl.DataFrame(schema={"run": pl.String, "kernel_time_ns": pl.Float64})
    out = grouped.join(times, on="run", how="left").with_columns(
        (pl.col("time_ns") / pl.col("kernel_time_ns")).alias("time_share"),
        pl.when(pl.col("__bytes") > 0).then(pl.col("__flops") / pl.col("__bytes")).alias("ai_dram"),
        pl.when(pl.col("time_ns") > 0).then(pl.col("__flops") / (pl.col("time_ns") * 1e-9)).alias("achieved_flops_per_s"))
    return out.sort("run", "time_ns", descending=[False, True], nulls_last=True).select(
        [pl.col(c).cast(t) for c, t in OFF_CHART_COLUMNS.items()])


def gpu_chart_ceilings(rows: pl.DataFrame, kernels: pl.DataFrame, db: gpu.GpuDatabase,
                       runs: pl.DataFrame | None = None) -> dict[str | None, list[Ceiling]]:
    """gpu_model -> the roofs its chart draws (`chart_ceilings` of its runs' `run_roofline` rows;
    `runs`, the runs table, says which precision each run is judged by)."""
    if not rows.height:
        return {}
    judged = dict(runs.select("run", "roof_precision").iter_rows()) \
        if runs is not None and "roof_precision" in runs.columns else None
    return {key: chart_ceilings(db.get(key) if key else None, group, kernels, judged)
            for (key,), group in rows.group_by(["gpu_model"], maintain_order=True)}
