"""Training steps of a Kineto trace: the FLOPs each step did, and where its time went.

A step is a `ProfilerStep#N` range (`torch.profiler.schedule` writes one per `prof.step()`),
its window the range's span on the wall clock; a trace without them is one window from its
first event to its last ("whole trace"). Everything is counted per window:

* FLOPs: the counted operator calls (`flops.py`) that start in the window, on any thread (the
  backward runs on its own thread). Each call is counted once, at the innermost operator with
  a formula whose FLOPs are known, as FlopCounterMode counts the operators that reach the
  dispatcher: `aten::linear` > `aten::addmm` counts the `addmm`; an enclosing call counts only
  when nothing within it could be (`aten::conv2d` with the profiler's own `flops` over a
  `convolution` whose stride the trace does not give). A chain of calls none of which can be
  counted is one missing call (`flops_missing_ops`: the FLOPs are then a lower bound). Work
  counted inside a backward node (`autograd::engine::evaluate_function: ...`) of PyTorch's own
  (`AddmmBackward0`) or of reentrant checkpointing (`CheckpointFunctionBackward`), under a
  forward operator (`flops.FORWARD_OPS`: `aten::linear`, `aten::conv2d`, a forward
  attention...), recomputes activations (activation checkpointing): its FLOPs are in
  `recompute_flops` (hardware FLOPs, not model FLOPs). A custom Function's backward may use
  `aten::matmul` for its gradients: its work is not recomputation. The step's precision is the input type doing most FLOPs.
* Time on the GPU: the GPU's activities (kernels, memcpy, memset of the device most kernels ran
  on) cut at the window's edges. Each instant of the window is compute (a kernel that is not
  communication is running), else communication (an NCCL or other collective kernel, by the
  kernel categories' own "communication" rule), else memory (memcpy/memset), else idle; the four
  add up to the window. `comm_overlap_ns` is the communication time during which compute ran too.
* Why the GPU was idle, per stretch of idle time, by the first cause that holds: `dataloader`
  (a data-loader range, `enumerate(DataLoader)#...`, was open), `sync` (the CPU was waiting in a
  synchronising call, `cudaDeviceSynchronize`, `cudaStreamSynchronize`, `cudaEventSynchronize`,
  a blocking `cudaMemcpy`, while the GPU ran dry or just after), `launch` (the activity that ends
  the idle stretch was launched only after it began: the GPU waited for the CPU to issue work),
  else `other` (work was queued but waited, e.g. on another stream's event).
* Launches: the CUDA launch calls that start in the window (`kernel_launches`; a CUDA graph
  launch counts once) and the GPU kernels launched from the window (`kernels`).
* Per operator kind (matmul, attention, convolution): FLOPs and the GPU time of the kernels the
  kind's counted calls launched (found through each kernel's launching CUDA call); the other
  kernels' time is `time_other_ns`.

A CPU-only trace (no GPU activity) has FLOPs but no time split.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache

import polars as pl

from roofreport.families.common import ranges as common_ranges
from roofreport.families.pytorch import flops
from roofreport.resources import package_data

STEP_NAME = r"^ProfilerStep#\d+$"
WHOLE_TRACE = "whole trace"
BACKWARD_NODE = "autograd::engine::evaluate_function: "
# Backward nodes in which forward operators can only be recomputation: PyTorch's own
# (`AddmmBackward0`: non-reentrant checkpointing recomputes when it unpacks a saved tensor) and
# reentrant checkpointing's. Another custom Function's backward (`...Backward`, no number) may
# call `aten::matmul` or `aten::linear` for its gradients (Megatron's linear layers do).
_RECOMPUTING_NODE = re.compile(r"Backward\d+$|Checkpoint")
LAUNCH_CALLS = r"(?i)^(?:cuda|hip|hipExt|hipModule)?Launch|^cuLaunch|^cudaLaunch|GraphLaunch"
SYNC_CALLS = frozenset({"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                        "cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cuCtxSynchronize",
                        "cuStreamSynchronize", "cuEventSynchronize", "hipDeviceSynchronize",
                        "hipStreamSynchronize", "hipEventSynchronize", "hipMemcpy"})
DATALOADER = r"(?i)enumerate\(DataLoader\)|DataLoader|_next_data|## data_?load"
COMPILED = r"^Torch-Compiled Region|^CompiledFunction|^## Call CompiledFxGraph|^triton_"
IDLE_CAUSES = ("dataloader", "sync", "launch", "other")
GPU_KINDS = ("kernel", "memcpy", "memset")


@cache
def communication_pattern() -> str:
    """The kernel categories' "communication" rule (`data/kernel_categories.tsv`)."""
    with package_data("kernel_categories.tsv").open(encoding="utf-8-sig") as handle:
        rules = {row["category"].strip(): row["pattern"] for row in csv.DictReader(handle, delimiter="\t")}
    return rules["communication"]


@dataclass(frozen=True)
class _Events:
    """A trace's events split once by what each part of the step table reads (all with
    `start` and `end`): `ranges` (operators, annotations, Python functions: `source_line`,
    `kind`, `name`, `thread`), `calls` (CUDA runtime and driver calls: `name`, `correlation`,
    `thread`; their first call per correlation id in `launched_by`) and `gpu`
    (`gpu_activities`, with `called` and `thread`: when and where the CUDA call that launched each
    started, and `launched`: that time, or the activity's own start when no call is found)."""

    ranges: pl.DataFrame
    calls: pl.DataFrame
    launched_by: pl.DataFrame
    gpu: pl.DataFrame

    @classmethod
    def of(cls, events: pl.DataFrame) -> _Events:
        def timed(kinds: list[str], *columns: str) -> pl.DataFrame:
            return events.filter(pl.col("kind").is_in(kinds) & pl.col("start_ns").is_not_null()).select(
                *columns, pl.col("start_ns").alias("start"),
                (pl.col("start_ns") + pl.col("duration_ns").fill_null(0).cast(pl.Int64)).alias("end"))

        ranges = timed(["annotation", "cpu_op", "python"], "source_line", "kind", "name", "thread")
        calls = timed(["runtime", "driver"], "name", "correlation", "thread")
        launched_by = calls.drop_nulls("correlation").unique("correlation", keep="first").select(
            "correlation", pl.col("start").alias("called"), pl.col("end").alias("call_end"), "thread")
        gpu = gpu_activities(timed(list(GPU_KINDS), "source_line", "kind", "name", "correlation", "device", "pid"))
        if gpu.height:   # (when and on which thread each activity was launched)
            gpu = gpu.join(launched_by.select("correlation", "called", "thread"), on="correlation", how="left",
                           maintain_order="left").with_columns(launched=pl.coalesce("called", "start"))
        return cls(ranges, calls, launched_by, gpu)


def matching(names: pl.Series, pattern: str) -> pl.Series:
    """`names.str.contains(pattern)`, the pattern tried once per distinct name (a trace repeats
    a few hundred names a hundred thousand times)."""
    distinct = names.unique()
    return names.is_in(distinct.filter(distinct.str.contains(pattern)).implode())


def step_table(events: pl.DataFrame, operators: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the steps table's rows, the counted calls: `source_line`, `flops`) of a trace's
    events (`kineto.event_frame`) and its operator calls (`decode.Trace.operators`)."""
    if not events.height:
        return pl.DataFrame(), pl.DataFrame(schema={"source_line": pl.Int64, "flops": pl.Float64})
    parts = _Events.of(events)
    windows = step_windows(parts.ranges, parts.gpu)
    calls = counted_calls(parts, operators)
    if not windows.height:
        return pl.DataFrame(), calls.filter(pl.col("counted")).select("source_line", "flops")
    rows = windows.select("window", "source_line", "step", "name", pl.col("start").alias("start_ns"),
                          (pl.col("end") - pl.col("start")).alias("duration_ns"))
    rows = rows.join(_flop_columns(calls, windows), on="window", how="left")
    rows = rows.join(_compiled(parts, windows), on="window", how="left")
    if parts.gpu.height:
        for part in (_time_split(parts.gpu, windows), _idle_causes(parts, windows),
                     _launches(parts, windows), _kind_times(parts, calls, windows)):
            rows = rows.join(part, on="window", how="left")
    return rows.drop("window"), calls.filter(pl.col("counted")).select("source_line", "flops")


# -- windows ---------------------------------------------------------------------------------

def step_windows(ranges: pl.DataFrame, gpu: pl.DataFrame) -> pl.DataFrame:
    """`window` (0, 1, ...), `source_line`, `step` (N, null for the whole trace), `name`,
    `start`, `end`: the ProfilerStep ranges in time order, or the span of the trace's ranges
    (of its GPU activities when it has no range)."""
    if not ranges.height and not gpu.height:
        return pl.DataFrame()
    marked = ranges.filter(pl.col("kind").is_in(["annotation", "cpu_op"]) & matching(ranges["name"], STEP_NAME)) \
        if ranges.height else ranges
    if marked.height:
        windows = marked.unique("name", keep="first", maintain_order=True).select(
            "source_line", pl.col("name").str.extract(r"(\d+)$").cast(pl.Int64).alias("step"), "name",
            "start", "end")
    else:
        spans = ranges if ranges.height else gpu
        windows = pl.DataFrame({"source_line": [None], "step": [None], "name": [WHOLE_TRACE],
                                "start": [spans["start"].min()], "end": [spans["end"].max()]},
                               schema={"source_line": pl.Int64, "step": pl.Int64, "name": pl.String,
                                       "start": pl.Int64, "end": pl.Int64})
    return windows.sort("start").with_row_index("window").with_columns(pl.col("window").cast(pl.Int64))


def window_of(times: pl.Series, windows: pl.DataFrame) -> pl.Series:
    """The window each time falls in (null outside every window)."""
    starts, ends = windows["start"], windows["end"]
    index = starts.search_sorted(times.fill_null(-(2**62)), side="right").cast(pl.Int64) - 1
    end_at = ends.gather(index.clip(0, len(ends) - 1))
    inside = (index >= 0) & times.is_not_null() & (times < end_at)
    return pl.DataFrame({"index": index, "inside": inside}).select(
        pl.when("inside").then("index").alias("window"))["window"]


def pieces(intervals: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """`intervals` (`start`, `end`) cut at the windows' edges: one row per interval and window
    it overlaps, with `window` and the clipped `start`, `end`."""
    starts, ends = windows["start"], windows["end"]
    first = ends.search_sorted(intervals["start"], side="right").cast(pl.Int64)   # first window ending after start
    last = starts.search_sorted(intervals["end"], side="left").cast(pl.Int64) - 1  # last window starting before end
    cut = intervals.with_columns(first=first, last=last).filter(pl.col("first") <= pl.col("last"))
    cut = cut.with_columns(window=pl.int_ranges("first", pl.col("last") + 1)).explode("window").drop("first", "last")
    bounds = windows.select("window", pl.col("start").alias("window_start"), pl.col("end").alias("window_end"))
    return cut.join(bounds, on="window", how="left").with_columns(
        start=pl.max_horizontal("start", "window_start"), end=pl.min_horizontal("end", "window_end"),
    ).drop("window_start", "window_end").filter(pl.col("end") > pl.col("start"))


def union_ns(cut: pl.DataFrame, name: str) -> pl.DataFrame:
    """`window`, `name`: the time covered by the union of each window's pieces."""
    ordered = cut.sort("window", "start")
    reached = pl.col("end").cum_max().shift(1).over("window")
    covered = (pl.col("end") - pl.max_horizontal("start", reached)).clip(lower_bound=0)
    return ordered.group_by("window").agg(covered.sum().cast(pl.Float64).alias(name))


# -- FLOPs -----------------------------------------------------------------------------------

def counted_calls(parts: _Events, operators: pl.DataFrame) -> pl.DataFrame:
    """The operator calls with a formula, with their place (`thread`, `start`, `end`) and
    whether each is `counted`, `recompute` work or `missing` (module docstring)."""
    schema = {"source_line": pl.Int64, "thread": pl.Int64, "start": pl.Int64, "end": pl.Int64,
              "name": pl.String, "flops": pl.Float64, "op_kind": pl.String, "precision": pl.String,
              "flops_source": pl.String, "causal": pl.Boolean, "counted": pl.Boolean,
              "recompute": pl.Boolean, "missing": pl.Boolean, "outer": pl.Boolean}
    if not operators.height or not parts.ranges.height:
        return pl.DataFrame(schema=schema)
    ops = parts.ranges.filter(pl.col("kind") == "cpu_op").select("source_line", "thread", "start", "end", "name")
    nodes = ops.filter(pl.col("name").str.starts_with(BACKWARD_NODE)).with_columns(
        pl.lit(None, pl.Float64).alias("flops"), pl.lit(True).alias("node"))
    formula = ops.join(operators, on="source_line", how="inner")
    formula = formula.with_columns(ran=_ran_on_gpu(formula, parts))
    known = formula.select("source_line", "thread", "start", "end", "name",
                           pl.when("ran").then("flops").alias("flops"), pl.lit(False).alias("node"))
    # (backward nodes matter only for recomputation, which only counted calls can be)
    walked = pl.concat([known, nodes.select(known.columns)]) if known["flops"].is_not_null().any() else known
    walked = walked.sort("thread", "start", pl.col("end"), descending=[False, False, True])
    flags = _walk(walked)
    out = formula.join(flags, on="source_line", how="left")
    return out.with_columns(pl.col("missing") & pl.col("ran")).select(list(schema))


def _ran_on_gpu(formula: pl.DataFrame, parts: _Events) -> pl.Series:
    """Whether each call ran: in a trace with GPU kernels, a call that launched no GPU work
    (no CUDA call of a GPU activity's correlation within it, on its thread) did not run on the
    GPU: a CPU tensor's, or one stopped before it ran (non-reentrant checkpointing stops its
    recomputation inside the operator after the last one it needs). Always true in a CPU trace."""
    gpu = parts.gpu
    if not gpu.height or not (gpu["kind"] == "kernel").any():
        return pl.Series("ran", [True] * formula.height, dtype=pl.Boolean)
    calls = parts.launched_by.join(gpu.select("correlation").unique(), on="correlation", how="semi").select(
        "thread", pl.col("called").alias("call")).sort("call")
    found = formula.select("thread", "start", "end").with_row_index("row").sort("start").join_asof(
        calls, left_on="start", right_on="call", by="thread", strategy="forward",
        check_sortedness=False)   # (both sorted by time; polars cannot check per group)
    ran = found.select("row", (pl.col("call") < pl.col("end")).fill_null(False).alias("ran"))
    return formula.with_row_index("row").join(ran, on="row", how="left").sort("row")["ran"].fill_null(False)


def _walk(rows: pl.DataFrame) -> pl.DataFrame:
    """The nesting walk of `counted_calls`, per thread, in start order (each call is decided
    when it closes, after its children): `counted` (its FLOPs are known and no call within it
    was counted), `recompute` (counted, in a backward node, under or as a forward operator),
    `missing` (the outermost of a chain of calls none of which could be counted), and `outer`
    (in no other call with a formula: its kernels are its kind's, FLOPs or not)."""
    lines, counted, recompute, missing, outer = [], [], [], [], []
    forward = flops.FORWARD_OPS
    # An open call: [end, its row (-1: a backward node), FLOPs known, a counted call within,
    # rows of uncounted chains within, name is a forward operator, a node that may recompute]
    stack: list[list] = []
    current = None

    def close(entry: list) -> None:
        row, pending = entry[1], entry[4]
        if row >= 0:
            if entry[2] and not entry[3]:
                counted[row], pending = True, []
            elif not entry[3]:
                pending = [row]          # this call stands for the uncounted chain below it
        parent = stack[-1] if stack else None
        if parent is None:
            for index in pending:
                missing[index] = True
            return
        parent[3] = parent[3] or (row >= 0 and counted[row]) or entry[3]
        parent[4] = parent[4] + pending

    def recomputing(name: str) -> bool:
        """Whether the call, opened now, runs forward work again in the innermost backward node."""
        under_forward = name in forward
        for entry in reversed(stack):
            if entry[1] < 0:
                return entry[6] and under_forward
            under_forward = under_forward or entry[5]
        return False

    columns = (rows[c].to_list() for c in ("source_line", "thread", "start", "end", "name", "flops", "node"))
    for line, thread, start, end, name, value, node in zip(*columns):
        if thread != current:
            while stack:
                close(stack.pop())
            current = thread
        while stack and stack[-1][0] <= start:
            close(stack.pop())
        if node:
            node_name = name[len(BACKWARD_NODE):]
            stack.append([end, -1, False, False, [], False, bool(_RECOMPUTING_NODE.search(node_name))])
            continue
        lines.append(line)
        counted.append(False)
        recompute.append(recomputing(name))
        missing.append(False)
        outer.append(not any(entry[1] >= 0 for entry in stack))
        stack.append([end, len(lines) - 1, value is not None, False, [], name in forward, False])
    while stack:
        close(stack.pop())
    return pl.DataFrame({"source_line": lines, "counted": counted,
                         "recompute": [c and r for c, r in zip(counted, recompute)],
                         "missing": missing, "outer": outer},
                        schema={"source_line": pl.Int64, "counted": pl.Boolean, "recompute": pl.Boolean,
                                "missing": pl.Boolean, "outer": pl.Boolean})


def _flop_columns(calls: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Per window: FLOPs in all, by kind, recomputed; the precision doing most; calls counted
    and missing; where the FLOPs came from; causal attention."""
    if not calls.height:
        return pl.DataFrame(schema={"window": pl.Int64})
    placed = calls.with_columns(window=window_of(calls["start"], windows)).filter(pl.col("window").is_not_null())
    counted = placed.filter(pl.col("counted"))
    per_window = placed.group_by("window").agg(
        pl.col("counted").sum().cast(pl.Int64).alias("flops_ops"),
        pl.col("missing").sum().cast(pl.Int64).alias("flops_missing_ops"),
        (pl.col("causal") & pl.col("counted")).any().alias("causal_attention"))
    work = counted.group_by("window").agg(
        pl.col("flops").sum(), pl.col("flops").filter(pl.col("recompute")).sum().alias("recompute_flops"),
        *[pl.col("flops").filter(pl.col("op_kind") == kind).sum().alias(f"flops_{kind}") for kind in flops.KINDS])
    per_window = per_window.join(work, on="window", how="left")
    sources = counted.group_by("window").agg(
        pl.col("flops_source").drop_nulls().unique().sort().str.join(" and ").alias("flops_source"))
    precision = (counted.filter(pl.col("precision").is_not_null())
                 .group_by("window", "precision").agg(pl.col("flops").sum())
                 .sort("window", "flops", "precision", descending=[False, True, False])
                 .unique("window", keep="first").select("window", "precision"))
    return per_window.join(sources, on="window", how="left").join(precision, on="window", how="left")


def _compiled(parts: _Events, windows: pl.DataFrame) -> pl.DataFrame:
    """Per window: whether torch.compile'd code ran (its ranges, or Triton kernels)."""
    starts = [frame.filter(matching(frame["name"].cast(pl.String), COMPILED))["start"]
              for frame in (parts.ranges, parts.gpu.filter(pl.col("kind") == "kernel") if parts.gpu.height else None)
              if frame is not None and frame.height]
    found = set(window_of(pl.concat(starts), windows).drop_nulls().to_list()) if starts else set()
    return windows.select("window", pl.col("window").is_in(list(found)).alias("compiled"))


# -- time on the GPU -------------------------------------------------------------------------

def gpu_activities(timed: pl.DataFrame) -> pl.DataFrame:
    """The GPU's activities (of the device most kernels ran on) of timed events: `kind`,
    `name`, `start`, `end`, `correlation`, and `role`: compute, communication or memory."""
    gpu = timed.filter(pl.col("kind").is_in(GPU_KINDS))
    if not gpu.height:
        return pl.DataFrame()
    device = pl.coalesce("device", pl.col("pid").cast(pl.Int64, strict=False))
    gpu = gpu.with_columns(device.alias("gpu"))
    kernels = gpu.filter(pl.col("kind") == "kernel")["gpu"].drop_nulls()
    if kernels.len():
        main = kernels.mode().sort()[0]
        gpu = gpu.filter(pl.col("gpu") == main)
    is_comm = matching(gpu["name"].cast(pl.String).fill_null(""), communication_pattern())
    role = (pl.when(pl.col("kind") != "kernel").then(pl.lit("memory"))
            .when(pl.lit(is_comm)).then(pl.lit("communication")).otherwise(pl.lit("compute")))
    return gpu.select("source_line", "kind", "name", "start", "end", "correlation", role.alias("role")).sort("start")


def _time_split(gpu: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Per window: compute, communication, memory and idle time, and the communication that
    overlapped compute."""
    cut = pieces(gpu.select("start", "end", "role"), windows)
    role = pl.col("role")
    parts = [union_ns(cut.filter(role == "compute"), "compute"),
             union_ns(cut.filter(role == "communication"), "comm"),
             union_ns(cut.filter(role != "memory"), "compute_or_comm"),
             union_ns(cut, "busy")]
    out = windows.select("window", (pl.col("end") - pl.col("start")).cast(pl.Float64).alias("length"))
    for part in parts:
        out = out.join(part, on="window", how="left")
    out = out.with_columns(pl.col("compute", "comm", "compute_or_comm", "busy").fill_null(0.0))
    return out.select(
        "window", pl.col("compute").alias("compute_ns"),
        (pl.col("compute_or_comm") - pl.col("compute")).alias("communication_ns"),
        (pl.col("busy") - pl.col("compute_or_comm")).alias("memory_ns"),
        (pl.col("length") - pl.col("busy")).alias("idle_ns"),
        (pl.col("compute") + pl.col("comm") - pl.col("compute_or_comm")).alias("comm_overlap_ns"))


def _idle_causes(parts: _Events, windows: pl.DataFrame) -> pl.DataFrame:
    """Per window: idle time by cause (module docstring)."""
    gaps = idle_gaps(parts.gpu, windows).join(parts.launched_by.select("correlation", "call_end"),
                                               on="correlation", how="left")
    syncs = parts.calls.filter(pl.col("name").is_in(list(SYNC_CALLS)))
    loaders = parts.ranges.filter(matching(parts.ranges["name"], DATALOADER))
    gaps = gaps.with_columns(loader=_overlaps(gaps, loaders), sync=_overlaps(gaps, syncs))
    cause = (pl.when(pl.col("loader")).then(pl.lit("dataloader"))
             .when(pl.col("sync")).then(pl.lit("sync"))
             .when(pl.col("call_end") > pl.col("start")).then(pl.lit("launch"))
             .otherwise(pl.lit("other")))
    cut = pieces(gaps.with_columns(cause.alias("cause")).select("start", "end", "cause"), windows)
    totals = cut.group_by("window").agg(
        *[(pl.col("end") - pl.col("start")).filter(pl.col("cause") == name).sum().cast(pl.Float64)
          .alias(f"idle_{name}_ns") for name in IDLE_CAUSES])
    return windows.select("window").join(totals, on="window", how="left").with_columns(
        pl.col(f"idle_{name}_ns").fill_null(0.0) for name in IDLE_CAUSES)


def idle_gaps(gpu: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """The stretches when no activity ran, from the first window's start to the last one's
    end: `start`, `end`, and the `correlation` of the activity that ends each (null for the
    last)."""
    reached = gpu["end"].cum_max().shift(1)
    first, last = windows["start"].min(), windows["end"].max()
    inner = gpu.with_columns(reached=reached).filter(
        pl.col("reached").is_null() | (pl.col("start") > pl.col("reached"))).select(
        pl.col("reached").fill_null(first).alias("start"), pl.col("start").alias("end"), "correlation")
    tail = pl.DataFrame({"start": [max(gpu["end"].max(), first)], "end": [last], "correlation": [None]},
                        schema={"start": pl.Int64, "end": pl.Int64, "correlation": pl.Int64})
    return pl.concat([inner, tail]).filter(pl.col("end") > pl.col("start"))


def _overlaps(gaps: pl.DataFrame, spans: pl.DataFrame) -> pl.Series:
    """Whether a span (`start`, `end`) that started before each gap ended was still open when
    the gap began (the last such span is the one looked at)."""
    if not spans.height:
        return pl.Series([False] * gaps.height, dtype=pl.Boolean)
    spans = spans.select(pl.col("start").alias("span_start"), pl.col("end").alias("span_end")).sort("span_start")
    found = gaps.select("start", "end").with_row_index("row").sort("end").join_asof(
        spans, left_on="end", right_on="span_start", strategy="backward")
    return found.sort("row").select((pl.col("span_end") >= pl.col("start")).fill_null(False))["span_end"]


def _launches(parts: _Events, windows: pl.DataFrame) -> pl.DataFrame:
    """Per window: CUDA launch calls, and kernels launched from it."""
    launching = parts.calls.filter(matching(parts.calls["name"].cast(pl.String), LAUNCH_CALLS))
    per_call = launching.select(window=window_of(launching["start"], windows)).group_by("window").agg(
        pl.len().cast(pl.Int64).alias("kernel_launches"))
    kernels = parts.gpu.filter(pl.col("kind") == "kernel")
    per_kernel = kernels.select(window=window_of(kernels["launched"], windows)).group_by("window").agg(
        pl.len().cast(pl.Int64).alias("kernels"))
    out = windows.select("window").join(per_call, on="window", how="left").join(per_kernel, on="window", how="left")
    return out.with_columns(pl.col("kernel_launches", "kernels").fill_null(0))


def _kind_times(parts: _Events, calls: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Per window: the kernel time each operator kind launched, and the rest's."""
    outer = calls.filter(pl.col("outer")).select("thread", "start", "end", pl.col("op_kind").alias("path"))
    if not outer.height:   # (no operator with a formula: the kinds are unknown)
        return pl.DataFrame(schema={"window": pl.Int64})
    kernels = parts.gpu.filter((pl.col("kind") == "kernel") & (pl.col("role") == "compute"))
    if kernels["called"].is_not_null().any():
        # Outer calls do not nest: from each start its kind holds on its thread, from its end none.
        edges = pl.concat([outer.select("thread", pl.col("end").alias("at"), pl.lit(None, pl.String).alias("region"),
                                        pl.lit(0).alias("opens")),
                           outer.select("thread", pl.col("start").alias("at"), pl.col("path").alias("region"),
                                        pl.lit(1).alias("opens"))])
        segments = edges.sort("thread", "at", "opens").unique(["thread", "at"], keep="last", maintain_order=True)
        kind = common_ranges.launch_regions(kernels, kernels.select("correlation", "thread", "called"),
                                            segments.drop("opens").sort("at"), ["correlation"])
    else:
        kind = pl.Series([None] * kernels.height, dtype=pl.String)
    placed = kernels.select(window=window_of(kernels["launched"], windows), kind=kind,
                            time=(pl.col("end") - pl.col("start")).cast(pl.Float64))
    return windows.select("window").join(placed.group_by("window").agg(
        *[pl.col("time").filter(pl.col("kind") == name).sum().alias(f"time_{name}_ns") for name in flops.KINDS],
        pl.col("time").filter(pl.col("kind").is_null()).sum().alias("time_other_ns")), on="window", how="left")
