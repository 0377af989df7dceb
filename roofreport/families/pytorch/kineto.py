"""PyTorch profiler (Kineto) traces -> the shared tables.

What each kind of event becomes (`decode.CATEGORIES` names the categories):

* `kernel` -> `activities` and `kernels` (kind "launch", count 1): name, device, context,
  stream, grid and block (`(x, y, z)`), correlation id, start and duration, and the rank
  `distributedInfo` gives (every GPU row of the trace). Every kernel event
  counts, the last profiler step's included. What CUPTI said of the launch (registers per
  thread, shared memory, blocks and warps per SM, estimated occupancy) -> `metrics`;
* `gpu_memcpy`, `gpu_memset` -> `activities` (kind "memcpy"/"memset") with their bytes;
* `cuda_runtime`, `cuda_driver` -> `api_calls` (kind "trace"), one row per call;
* ranges -> `regions`, each kind nested within itself (`ranges.paths`):
  - "step": every `ProfilerStep#N` (torch.profiler's schedule), one row per step;
  - "annotation": every `record_function` / `user_annotation` range (`Optimizer.step#SGD.step`,
    `nccl:all_reduce`, the user's own labels), one row per range;
  - "gpu_annotation": the same ranges as the GPU ran them (`gpu_user_annotation`), per range;
  - "operator": `cpu_op` events (aten operators, autograd nodes), one row per distinct path
    with its count and total wall time (there are tens of thousands of calls);
  - "module": `nn.Module: Name_i` python_function events (`with_stack`/`with_modules`), one row
    per distinct module path, like operators.
* a kernel's `region` is the annotation it was launched in, its `operator` the path of the
  `cpu_op` events open around its launch (`aten::conv2d/aten::convolution/.../aten::cudnn_convolution`;
  see `ranges`): what `enrich.categories` reads a GEMM's category from.

Times: `ts` and `dur` are microseconds, often with three decimals; they become whole
nanoseconds, `start_ns` counted from the trace's first kept event. `source_line` is the
event's 1-based position in `traceEvents`. The GPU comes from `deviceProperties` (the device
most kernels ran on), the rank and world size from `distributedInfo`.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.pytorch.decode import (COLLECTIVE_METRICS, COLLECTIVE_WORDS, LAUNCH_METRICS, Trace,
                                                gc_paused, read_trace)
from roofreport.families.pytorch.ranges import launch_regions, paths
from roofreport.families.pytorch.steps import STEP_NAME, step_table
from roofreport.families.spec import ParseResult
from roofreport.tables.frames import launch_dims

FAMILY = "pytorch"
MODULE_PREFIX = "nn.Module: "


def parse_kineto(path: Path, variant: str) -> ParseResult:
    with gc_paused():
        return _parse(path, variant)


def _parse(path: Path, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    trace = read_trace(path, str(path))
    result.warnings += trace.warnings
    result.error = trace.error
    events, launches, operators, meta = event_frame(trace), trace.launches, trace.operators, trace.meta
    del trace   # the decoded columns (the frames hold them now)
    step_rows, counted = step_table(events, operators)
    _hints(meta, events, result)   # (first: the GPU rows carry the rank)
    if events.height:
        _fill(events, launches, _devices(meta), counted, result)
    if step_rows.height:
        result.add("steps", step_rows.with_columns(
            rank=pl.lit(result.hints.rank, pl.Int64), device=pl.lit(result.hints.device_name, pl.String)))
    if not result.rows() and result.error is None:
        result.error = ParseError("the trace holds no GPU kernels, memory operations, CUDA calls "
                                  "or profiler ranges", path=str(path))
    return result


def event_frame(trace: Trace) -> pl.DataFrame:
    """One row per kept event: `source_line`, the `EVENT_FIELDS` typed, `thread` (a number per
    distinct pid/tid pair), `start_ns` and `duration_ns`."""
    frame = trace.events
    if not frame.height:
        return pl.DataFrame()
    # Whole nanoseconds from a whole-microsecond origin: the subtraction is exact, and the
    # rounding drops the float noise of `ts` values like 4700180001442.518.
    origin = frame["ts"].min()
    origin = float(int(origin)) if origin is not None else 0.0
    return frame.with_columns(
        thread=pl.struct("pid", "tid").rank("dense").cast(pl.Int64),
        start_ns=((pl.col("ts") - origin) * 1000.0).round(0).cast(pl.Int64),
        duration_ns=(pl.col("dur") * 1000.0).round(0)).drop("ts", "dur", "tid")


def _devices(meta: dict) -> dict[int, str]:
    """Device id -> name, from `deviceProperties`."""
    found = {}
    props = meta.get("deviceProperties")
    for device in props if isinstance(props, list) else []:
        if isinstance(device, dict) and isinstance(device.get("id"), int) and device.get("name"):
            found[device["id"]] = str(device["name"])
    return found


# -- tables ----------------------------------------------------------------------------------

def _fill(events: pl.DataFrame, launches: pl.DataFrame, devices: dict[int, str], counted: pl.DataFrame,
          result: ParseResult) -> None:
    kind = pl.col("kind")
    gpu = events.filter(kind.is_in(["kernel", "memcpy", "memset"]))
    calls = events.filter(kind.is_in(["runtime", "driver"]))
    is_step = kind.is_in(["annotation", "cpu_op"]) & pl.col("name").str.contains(STEP_NAME)
    annotations = _with_paths(events.filter((kind == "annotation") & ~is_step))
    operators = _with_paths(events.filter((kind == "cpu_op") & ~is_step))
    if gpu.height:
        gpu = gpu.join(launches, on="source_line", how="left", maintain_order="left") if launches.width > 1 else gpu
        _gpu_tables(gpu, devices, calls, annotations, operators, result)
    if calls.height:
        result.add("api_calls", calls.select(
            "source_line", pl.lit("trace").alias("kind"), "name", pl.lit(1).alias("calls"),
            pl.col("duration_ns").alias("total_ns"), pl.col("start_ns").cast(pl.Float64)))
    _regions(events, is_step, annotations, operators, counted, result)


def _gpu_tables(gpu: pl.DataFrame, devices: dict[int, str], calls: pl.DataFrame,
                annotations: pl.DataFrame, operators: pl.DataFrame, result: ParseResult) -> None:
    for column in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"):
        if column not in gpu.columns:   # (a trace without kernels)
            gpu = gpu.with_columns(pl.lit(None, pl.Int64).alias(column))
    rows = gpu.with_columns(launch_dims(gpu, "grid"), launch_dims(gpu, "block"),
                            device=_device_name(devices))
    common = ["source_line", "name", "duration_ns", "device", "context", "stream", "grid", "block"]
    # Each row says its rank: the ranks of one job are compared row against row.
    rank = pl.lit(result.hints.rank, pl.Int64).alias("rank")
    result.add("activities", rows.select(
        *common, "kind", "bytes", pl.col("start_ns").cast(pl.Float64),
        pl.col("correlation").alias("correlation_id"), rank))
    kernels = rows.filter(pl.col("kind") == "kernel")
    if not kernels.height:
        return
    # (`kernels` has no start or correlation id: its rows join `activities` on source_line.)
    region = launch_regions(kernels, calls, annotations)
    # the aten operators (and autograd nodes) open around the launching call, outermost first
    operator = launch_regions(kernels, calls, operators) if operators.height else None
    result.add("kernels", kernels.with_columns(region=region, operator=operator).select(
        *common, pl.col("source_line").alias("launch_id"), pl.lit("launch").alias("kind"),
        pl.lit(1).alias("count"), "region", "operator", rank))
    _launch_metrics(kernels, result)


def _launch_metrics(kernels: pl.DataFrame, result: ParseResult) -> None:
    """What CUPTI said of each launch (registers, shared memory, occupancy...) -> `metrics`,
    section "kineto launch"; what PyTorch said of a collective's message (elements, group size,
    collective, type) -> section "kineto collective"."""
    for section, units in (("kineto launch", LAUNCH_METRICS), ("kineto collective", COLLECTIVE_METRICS)):
        present = [name for name in units if name in kernels.columns]
        if present:
            result.add("metrics", _long(kernels, present, section).select(
                pl.exclude("value_text"), pl.col("metric").replace_strict(units, return_dtype=pl.String).alias("unit")))
    words = [name for name in COLLECTIVE_WORDS if name in kernels.columns]
    if words:
        result.add("metrics", _long(kernels, words, "kineto collective").drop("value"))


def _long(kernels: pl.DataFrame, present: list[str], section: str) -> pl.DataFrame:
    """One row per launch and field of `present` that it has: its metric rows, number in
    `value` and text in `value_text` as the field's type says."""
    long = kernels.select("source_line", "name", "device", *present).unpivot(
        index=["source_line", "name", "device"], variable_name="metric").drop_nulls("value")
    text = long.schema["value"] == pl.String
    return long.select(
        "source_line", pl.col("source_line").alias("launch_id"), pl.col("name").alias("kernel_name"),
        "device", pl.lit(section).alias("section"), "metric",
        (pl.lit(None, pl.Float64) if text else pl.col("value")).alias("value"),
        (pl.col("value") if text else pl.lit(None, pl.String)).alias("value_text"))


def _device_name(devices: dict[int, str]) -> pl.Expr:
    """`NVIDIA H100 80GB HBM3 (0)` (the name from deviceProperties), else the device id. GPU
    events name their device in `args.device`, older traces only in `pid`."""
    device = pl.coalesce("device", pl.col("pid").cast(pl.Int64, strict=False))
    named = device.replace_strict({i: f"{name} ({i})" for i, name in devices.items()},
                                  default=None, return_dtype=pl.String) if devices \
        else pl.lit(None, pl.String)
    return pl.coalesce(named, device.cast(pl.String))


def _with_paths(ranges: pl.DataFrame) -> pl.DataFrame:
    """Ranges with `start`, `end` and their `path` within their kind."""
    ranges = ranges.with_columns(start=pl.col("start_ns"),
                                 end=pl.col("start_ns") + pl.col("duration_ns").fill_null(0).cast(pl.Int64))
    return ranges.with_columns(path=paths(ranges)) if ranges.height else ranges.with_columns(
        path=pl.lit(None, pl.String))


def _regions(events: pl.DataFrame, is_step: pl.Expr, annotations: pl.DataFrame, operators: pl.DataFrame,
             counted: pl.DataFrame, result: ParseResult) -> None:
    kind = pl.col("kind")
    steps = events.filter(is_step).with_columns(path=pl.col("name"))
    gpu_ranges = _with_paths(events.filter(kind == "gpu_annotation"))
    if counted.height and operators.height:   # (the FLOPs of each counted call)
        operators = operators.join(counted, on="source_line", how="left", maintain_order="left")
    modules = _with_paths(events.filter((kind == "python") & pl.col("name").str.starts_with(MODULE_PREFIX))
                          .with_columns(pl.col("name").str.strip_prefix(MODULE_PREFIX)))
    for label, ranges in (("step", steps), ("annotation", annotations), ("gpu_annotation", gpu_ranges)):
        if ranges.height:
            result.add("regions", ranges.select(
                "source_line", pl.lit(label).alias("kind"), "name", "path",
                pl.col("start_ns").cast(pl.Float64), "duration_ns", pl.lit(1).alias("count")))
    for label, ranges in (("operator", operators), ("module", modules)):
        if ranges.height:
            result.add("regions", _per_path(ranges, label))


def _per_path(ranges: pl.DataFrame, label: str) -> pl.DataFrame:
    """One row per distinct path: calls, total wall time, the first call's line and start."""
    flops = [pl.when(pl.col("flops").is_not_null().any()).then(pl.col("flops").sum()).alias("flops")] \
        if "flops" in ranges.columns else []
    return ranges.group_by("path", maintain_order=True).agg(
        pl.col("source_line").first(), pl.col("name").first(),
        pl.col("start_ns").first().cast(pl.Float64), pl.col("duration_ns").sum(),
        pl.len().alias("count"), *flops).with_columns(pl.lit(label).alias("kind"))


# -- run hints -------------------------------------------------------------------------------

def _hints(meta: dict, events: pl.DataFrame, result: ParseResult) -> None:
    devices = _devices(meta)
    if devices:
        used = events.filter(pl.col("kind") == "kernel")["device"].drop_nulls() \
            if events.height else pl.Series([], dtype=pl.Int64)
        ids = used.mode().sort() if used.len() else pl.Series([], dtype=pl.Int64)
        chosen = devices.get(ids[0]) if ids.len() else None
        result.hints.device_name = chosen or devices[min(devices)]
    info = meta.get("distributedInfo")
    if isinstance(info, dict):
        result.hints.rank = _int(info.get("rank"))
        result.hints.world_size = _int(info.get("world_size"))
    version = meta.get("schemaVersion")
    if isinstance(version, (int, str)) and not isinstance(version, bool):
        result.tool_version = f"kineto schema {version}"


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
