"""Training steps (PyTorch traces): MFU and HFU per step, outliers, and per run the medians,
the step-time breakdown and the comparisons the report's first page draws.

* Model FLOPs of a step, by the first that holds: `--model-flops N` (the settings: N per step,
  for every step); a FlopCounterMode count beside the trace (a `flop counter` file in the
  trace's folder: `metrics` rows "model FLOPs per step"); the step's own FLOPs from shapes less
  the recomputed forward work (`steps.flops - steps.recompute_flops`). `model_flops_source`
  says which.
* Peak: the run's GPU (`runs.gpu_model`, looked up in the GPU database) at the step's dominant
  precision (`steps.precision`: bf16 and fp16 use the tensor-core peak, fp32 the TF32 tensor
  peak when the step's kernels are TF32 tensor-core kernels by name (`roofline.tf32_by_name`),
  else the FP32 peak; fp64 FP64). Always the DENSE figure of the datasheet: the database holds
  no sparsity headline (twice the dense value). A GPU without tensor cores falls back to its
  FP16 or FP32 peak; a precision with no peak leaves MFU null.
* MFU = model FLOPs / step time / peak; HFU = every counted FLOP (recomputation included) /
  step time / peak; both in percent. `achieved_flops_per_s` = model FLOPs / step time.
* Outliers: with at least `MIN_STEPS` steps in a trace, a step whose time is more than
  `OUTLIER_FRACTION` away from the trace's median step time (the first step, profiler
  overhead) is flagged and left out of every median and sum below.
* Per run (`step_summary`): steps, medians of step time, MFU, HFU, FLOPs and kernel launches;
  the shares of step time in compute, communication, memory and idle, and idle's causes (sums
  over the kept steps, so the shares add up to 100 %); FLOPs and achieved FLOP/s per operator
  kind (matmul, attention, conv: the kind's FLOPs over the kernel time its calls launched) and
  the other kernels' share of the time.
* `step_comparisons`: pairs of runs that differ only in torch.compile, batch size or GPU (the
  same model, precision, checkpointing and the other two; across compile or GPU the same model
  FLOPs per step too), with both sides' launches per step, idle share, MFU and step time, and
  the change in launches, for the findings to state.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from pathlib import PurePath

import polars as pl

from roofreport import gpu
from roofreport.model import roofline
from roofreport.tables import lazy, schema

# The `metrics` rows a FlopCounterMode count gives (families/pytorch/counter.py writes them;
# analysis imports no reader: tests/test_pytorch_steps.py checks the two agree).
MODEL_FLOPS_METRIC = "model FLOPs per step"
FLOP_COUNTER_SECTION = "flop counter"
OUTLIER_FRACTION = 0.25
MIN_STEPS = 3
# The step's precision -> the database's peak, then the fallback for a GPU without tensor cores.
_PEAKS = {"bf16": ("tensor_bf16", "fp16"), "fp16": ("tensor_fp16", "fp16"), "tf32": ("tensor_tf32", "fp32"),
          "fp32": ("fp32", None), "fp64": ("fp64", None)}
_PEAK_LABELS = {"tensor_bf16": "Tensor BF16", "tensor_fp16": "Tensor FP16", "tensor_tf32": "Tensor TF32",
                "fp16": "FP16", "fp32": "FP32", "fp64": "FP64"}
TIME_PARTS = ("compute", "communication", "memory", "idle")
IDLE_CAUSES = ("dataloader", "sync", "launch", "other")
OP_KINDS = ("matmul", "attention", "conv")


def with_step_metrics(tables: Mapping[str, pl.DataFrame], db: gpu.GpuDatabase,
                      model_flops: float | None = None) -> pl.DataFrame:
    """The steps table of `tables` with its `STEP_METRICS` columns (re)computed."""
    steps = tables.get("steps") if "steps" in tables else None
    if steps is None or not steps.height:
        return schema.empty("steps")
    base = steps.drop([c for c in schema.STEP_METRICS if c in steps.columns])
    base = _with_model_flops(base, tables, model_flops)
    base = _with_peaks(base, tables, db)
    seconds = pl.col("duration_ns") / 1e9
    base = base.with_columns(
        (pl.col("model_flops") / seconds).alias("achieved_flops_per_s"))
    base = base.with_columns(
        (100 * pl.col("achieved_flops_per_s") / pl.col("peak_flops_per_s")).alias("mfu_pct"),
        (100 * pl.col("flops") / seconds / pl.col("peak_flops_per_s")).alias("hfu_pct"))
    return schema.conform("steps", _with_outliers(base))


def _with_model_flops(steps: pl.DataFrame, tables: Mapping[str, pl.DataFrame],
                      given: float | None) -> pl.DataFrame:
    own = pl.col("flops") - pl.col("recompute_flops").fill_null(0.0)
    own_source = pl.when(pl.col("flops").is_null()).then(None).when(
        pl.col("flops_source") == "trace").then(pl.lit("trace flops")).otherwise(pl.lit("shapes"))
    if given is not None:
        return steps.with_columns(pl.lit(float(given)).alias("model_flops"),
                                  pl.lit("--model-flops").alias("model_flops_source"))
    counters = flop_counters(tables)
    if not counters.height:
        return steps.with_columns(own.alias("model_flops"), own_source.alias("model_flops_source"))
    folder = pl.col("source_file").map_elements(lambda path: str(PurePath(path).parent), return_dtype=pl.String)
    joined = steps.with_columns(folder.alias("__folder")).join(counters, on="__folder", how="left")
    return joined.with_columns(
        pl.coalesce("__counted", own).alias("model_flops"),
        pl.when(pl.col("__counted").is_not_null()).then(pl.lit("flop counter ") + pl.col("__file"))
        .otherwise(own_source).alias("model_flops_source")).drop("__folder", "__counted", "__file")


def flop_counters(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """`__folder`, `__counted` (model FLOPs per step), `__file`: the FlopCounterMode counts
    given beside traces, one per folder (the first file's when a folder holds several)."""
    metrics = lazy.scan(tables, "metrics")   # (a dataset folder's metrics: only these rows are read)
    if metrics is None:
        return pl.DataFrame()
    given = metrics.filter((pl.col("section") == FLOP_COUNTER_SECTION) & (pl.col("metric") == MODEL_FLOPS_METRIC)
                           & pl.col("value").is_not_null()).select("source_file", "value").collect()
    if not given.height:
        return pl.DataFrame()
    return given.sort("source_file").select(
        pl.col("source_file").map_elements(lambda path: str(PurePath(path).parent), return_dtype=pl.String)
        .alias("__folder"), pl.col("value").alias("__counted"),
        pl.col("source_file").map_elements(lambda path: PurePath(path).name, return_dtype=pl.String).alias("__file"),
    ).unique("__folder", keep="first", maintain_order=True)


def _with_peaks(steps: pl.DataFrame, tables: Mapping[str, pl.DataFrame], db: gpu.GpuDatabase) -> pl.DataFrame:
    """`peak_precision`, `peak_flops_per_s`, `peak_source` from the run's GPU."""
    runs = tables.get("runs") if "runs" in tables else None
    gpus = dict(runs.select("run", "gpu_model").iter_rows()) if runs is not None and runs.height else {}
    tf32 = _tf32_steps(steps, tables)
    precisions, peaks, sources = [], [], []
    for row in steps.select("run", "precision", "source_file", "source_line").iter_rows(named=True):
        precision = row["precision"]
        if precision == "fp32" and (row["source_file"], row["source_line"]) in tf32:
            precision = "tf32"
        key = gpus.get(row["run"])
        spec = db.get(key) if key else None
        peak, label = _peak(spec, precision)
        precisions.append(precision)
        peaks.append(peak)
        sources.append(f"{label} dense, {spec.label or spec.key} (datasheet)" if peak else None)
    return steps.with_columns(pl.Series("peak_precision", precisions, dtype=pl.String),
                              pl.Series("peak_flops_per_s", peaks, dtype=pl.Float64),
                              pl.Series("peak_source", sources, dtype=pl.String))


def _peak(spec: gpu.GpuSpec | None, precision: str | None) -> tuple[float | None, str | None]:
    if spec is None or precision not in _PEAKS:
        return None, None
    for key in _PEAKS[precision]:
        if key and spec.peak(key):
            return spec.peak(key), _PEAK_LABELS[key]
    return None, None


def _tf32_steps(steps: pl.DataFrame, tables: Mapping[str, pl.DataFrame]) -> set[tuple[str, int]]:
    """(source_file, source_line) of the FP32 steps whose kernels include TF32 tensor-core ones."""
    fp32 = steps.filter(pl.col("precision") == "fp32")
    activities = lazy.scan(tables, "activities") if fp32.height else None
    if activities is None:
        return set()
    files = fp32["source_file"].unique().to_list()
    tf32 = activities.filter(pl.col("source_file").is_in(files) & (pl.col("kind") == "kernel")
                             & roofline.tf32_by_name()).select("source_file", "start_ns").collect()
    if not tf32.height:
        return set()
    found = fp32.select("source_file", "source_line", "start_ns", "duration_ns").join(
        tf32.rename({"start_ns": "kernel_start"}), on="source_file", how="inner").filter(
        (pl.col("kernel_start") >= pl.col("start_ns"))
        & (pl.col("kernel_start") < pl.col("start_ns") + pl.col("duration_ns")))
    return set(found.select("source_file", "source_line").unique().iter_rows())


def _with_outliers(steps: pl.DataFrame) -> pl.DataFrame:
    """`outlier` and `outlier_reason` against the median step time of the same trace."""
    group = ["run", "source_file"]
    median = pl.col("duration_ns").median().over(group)
    many = (pl.col("step").is_not_null().sum().over(group) >= MIN_STEPS) & pl.col("step").is_not_null()
    ratio = pl.col("duration_ns") / median
    far = many & ((ratio - 1).abs() > OUTLIER_FRACTION)
    reason = pl.format("{}x the median step time", ratio.round(2))
    return steps.with_columns(far.fill_null(False).alias("outlier"),
                              pl.when(far).then(reason).alias("outlier_reason"))


# -- per run ---------------------------------------------------------------------------------

def step_summary(steps: pl.DataFrame) -> pl.DataFrame:
    """One row per run with steps (module docstring): `steps`, `outliers`, `step_ns`,
    `mfu_pct`, `hfu_pct`, `achieved_flops_per_s`, `model_flops`, `flops`, `kernel_launches`,
    `kernels`, `compiled`, `precision`, `peak_precision`, `peak_source`, `model_flops_source`,
    `flops_missing_ops`, `causal_attention`, `checkpointed`, `{part}_pct` for the time parts,
    `idle_{cause}_pct` (of step time), `comm_overlap_pct` (of communication time), `flops_{kind}`
    (mean per step), `{kind}_flops_per_s`, `time_{kind}_pct` and `time_other_pct` (of the
    kernels' time)."""
    if not steps.height:
        return pl.DataFrame()
    kept = steps.filter(~pl.col("outlier").fill_null(False))
    total = pl.col("duration_ns").sum()

    def share(column: str) -> pl.Expr:
        return pl.when(pl.col(column).is_not_null().any()).then(100 * pl.col(column).sum() / total)

    kernel_time = pl.sum_horizontal([pl.col(f"time_{k}_ns").sum() for k in (*OP_KINDS, "other")])
    summary = kept.group_by("run").agg(
        pl.len().alias("steps"),
        pl.col("duration_ns").median().alias("step_ns"),
        pl.col("mfu_pct").median(), pl.col("hfu_pct").median(), pl.col("achieved_flops_per_s").median(),
        pl.col("model_flops").median(), pl.col("flops").median(),
        pl.col("kernel_launches").median(), pl.col("kernels").median(),
        pl.col("compiled").any(), pl.col("precision").drop_nulls().mode().first(),
        pl.col("peak_precision").drop_nulls().mode().first(), pl.col("peak_source").drop_nulls().first(),
        pl.col("model_flops_source").drop_nulls().first(), pl.col("flops_missing_ops").max(),
        pl.col("causal_attention").any(), pl.col("device").drop_nulls().first(),
        *[share(f"{part}_ns").alias(f"{part}_pct") for part in TIME_PARTS],
        *[share(f"idle_{cause}_ns").alias(f"idle_{cause}_pct") for cause in IDLE_CAUSES],
        pl.when(pl.col("communication_ns").sum() + pl.col("comm_overlap_ns").sum() > 0)
        .then(100 * pl.col("comm_overlap_ns").sum()
              / (pl.col("communication_ns").sum() + pl.col("comm_overlap_ns").sum())).alias("comm_overlap_pct"),
        (pl.col("recompute_flops").fill_null(0) > 0).any().alias("checkpointed"),
        *[pl.col(f"flops_{kind}").mean().alias(f"flops_{kind}") for kind in OP_KINDS],
        *[(pl.col(f"flops_{kind}").sum() / (pl.col(f"time_{kind}_ns").sum() / 1e9)).alias(f"{kind}_flops_per_s")
          for kind in OP_KINDS],
        *[pl.when(kernel_time > 0).then(100 * pl.col(f"time_{kind}_ns").sum() / kernel_time).alias(f"time_{kind}_pct")
          for kind in (*OP_KINDS, "other")])
    outliers = steps.group_by("run").agg(pl.col("outlier").fill_null(False).sum().cast(pl.Int64).alias("outliers"))
    finite = [pl.when(pl.col(c).is_finite()).then(pl.col(c)).alias(c)
              for c in (f"{kind}_flops_per_s" for kind in OP_KINDS)]
    return summary.join(outliers, on="run", how="left").with_columns(finite).sort("run")


def _same_workload(first: dict, second: dict, differing: str) -> bool:
    """The same model, precision and checkpointing, and (but across batch sizes) the same
    model FLOPs per step within 1 %."""
    if (first["model"], first["precision"], first["checkpointed"]) != \
            (second["model"], second["precision"], second["checkpointed"]):
        return False
    if differing == "batch size":
        return first["model"] is not None
    work = (first["model_flops"], second["model_flops"])
    return None not in work and abs(work[0] - work[1]) <= 0.01 * max(work)


def step_comparisons(summary: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Pairs of runs that differ in exactly one of torch.compile, batch size and GPU (module
    docstring): `run_a`, `run_b`, `differs` ("compile", "batch size", "GPU"), and for each
    side `launches`, `idle_pct`, `mfu_pct`, `step_ns`, then `launches_change_pct` (b against a)."""
    columns = {"run_a": pl.String, "run_b": pl.String, "differs": pl.String,
               **{f"{name}_{side}": pl.Float64 for side in ("a", "b")
                  for name in ("launches", "idle_pct", "mfu_pct", "step_ns")},
               "launches_change_pct": pl.Float64}
    if summary.height < 2 or runs is None or not runs.height:
        return pl.DataFrame(schema=columns)
    identity = runs.select("run", "model", "batch_size", "gpu_model")
    rows = summary.join(identity, on="run", how="left").to_dicts()
    out = []
    for first, second in combinations(rows, 2):
        axes = {"compile": (first["compiled"], second["compiled"]),
                "batch size": (first["batch_size"], second["batch_size"]),
                "GPU": (first["gpu_model"], second["gpu_model"])}
        differing = [axis for axis, (a, b) in axes.items() if a != b]
        if len(differing) != 1 or not _same_workload(first, second, differing[0]):
            continue
        if differing == ["compile"] and first["compiled"]:   # the eager run first
            first, second = second, first
        change = (100 * (second["kernel_launches"] / first["kernel_launches"] - 1)
                  if first["kernel_launches"] and second["kernel_launches"] is not None else None)
        out.append({"run_a": first["run"], "run_b": second["run"], "differs": differing[0],
                    "launches_a": first["kernel_launches"], "launches_b": second["kernel_launches"],
                    "idle_pct_a": first["idle_pct"], "idle_pct_b": second["idle_pct"],
                    "mfu_pct_a": first["mfu_pct"], "mfu_pct_b": second["mfu_pct"],
                    "step_ns_a": first["step_ns"], "step_ns_b": second["step_ns"],
                    "launches_change_pct": change})
    return pl.DataFrame(out, schema=columns)
