"""NVTX ranges of an nsys SQLite export: their names, their push/pop paths, and the range each
kernel was launched in.

A push/pop range nests in the ranges open on its thread when it starts; its path is their
names joined by "/" (`iteration10/forward`). Start/end ranges cross threads and do not nest:
their path is their name. A kernel belongs to the innermost push/pop range open on the CPU
thread whose CUDA call launched it, at the moment of that call (how nsys's own `nvtx-name`
reports attribute kernels); the launching call is found through the correlation id.

Only push/pop ranges give a thread its region, and correlation ids restart in every process:
a kernel's launching call is matched within its process (`global_pid`, the thread id's high
bits) when the export says it. The sweep and the as-of join are `families.common.ranges`.
"""

from __future__ import annotations

import polars as pl

from roofreport.families.common import ranges as common_ranges

# ENUM_NSYS_EVENT_TYPE ids (the enum table is absent from lean 2022.1 exports).
EVENT_TYPES = {"NvtxPushPopRange": 59, "NvtxStartEndRange": 60, "NvtxtPushPopRange": 70,
               "NvtxtStartEndRange": 71, "NvtxDomainCreate": 75}
PUSH_POP = ("NvtxPushPopRange", "NvtxtPushPopRange")
START_END = ("NvtxStartEndRange", "NvtxtStartEndRange")
_PID_SHIFT = 24   # globalTid = globalPid + tid, globalPid = (vm, pid) << 24


def named_ranges(events: pl.DataFrame, types: dict[str, int]) -> pl.DataFrame:
    """The range events (`source_line`, `thread`, `start`, `end`, `name`, `path`, `nested`)
    of NVTX_EVENTS rows with `event_type`, `label` (text), `domain`."""
    domains = dict(events.filter(pl.col("event_type") == types["NvtxDomainCreate"])
                   .select("domain", "label").iter_rows())
    ranges = events.filter(pl.col("event_type").is_in([types[t] for t in PUSH_POP + START_END]))
    if not ranges.height:
        return pl.DataFrame()
    named = ranges.with_columns(name=_range_name(domains),
                                nested=pl.col("event_type").is_in([types[t] for t in PUSH_POP]))
    return named.join(_paths(named), on="source_line", how="left").sort("start", nulls_last=True)


def _range_name(domains: dict) -> pl.Expr:
    """`domain:text` for ranges of a named domain (as nvtx_sum prints `NCCL:ncclAllReduce`)."""
    domain = pl.col("domain").replace_strict(domains, default=None, return_dtype=pl.String) \
        if domains else pl.lit(None, pl.String)
    label = pl.col("label").fill_null("")
    return pl.when(domain.is_not_null() & (pl.col("domain") != 0)) \
        .then(pl.concat_str([domain, pl.lit(":"), label])).otherwise(label)


def _paths(ranges: pl.DataFrame) -> pl.DataFrame:
    """Path of every range, from the push/pop ranges still open on its thread when it starts."""
    ordered = ranges.sort("thread", "start", pl.col("end"), descending=[False, False, True],
                          nulls_last=True)
    out_line, out_path = [], []
    stacks: dict = {}
    for line, thread, start, end, name, nested in ordered.select(
            "source_line", "thread", "start", "end", "name", "nested").iter_rows():
        path = name
        if nested:
            stack = stacks.setdefault(thread, [])
            while stack and (stack[-1][0] is not None and start is not None and stack[-1][0] <= start):
                stack.pop()
            path = f"{stack[-1][1]}/{name}" if stack else name
            stack.append((end, path))
        out_line.append(line)
        out_path.append(path)
    return pl.DataFrame({"source_line": out_line, "path": out_path},
                        schema={"source_line": pl.Int64, "path": pl.String})


def innermost(ranges: pl.DataFrame) -> pl.DataFrame:
    """Per thread, from each time on, the path of the innermost open push/pop range (start/end
    ranges do not nest): `thread`, `at`, `region` (`families.common.ranges.innermost`)."""
    return common_ranges.innermost(ranges.filter(pl.col("nested")))


def launch_regions(kernels: pl.DataFrame, runtime: pl.DataFrame, segments: pl.DataFrame) -> pl.Series:
    """The region of each kernel row (`correlation_id`, `global_pid`), in row order, from the
    runtime call with its correlation id in the same process (`correlation_id`, `thread`,
    `start`) and the innermost range open on that thread then."""
    # Correlation ids restart in every process: match within the process when it is known.
    by_process = kernels["global_pid"].null_count() < kernels.height
    process = (lambda col: pl.col(col).cast(pl.Int64) // (1 << _PID_SHIFT)) if by_process \
        else (lambda col: pl.lit(0, pl.Int64))
    calls = runtime.select(
        pl.col("correlation_id").cast(pl.Int64), pl.col("thread").cast(pl.Int64),
        pl.col("start").cast(pl.Int64).alias("called"), process("thread").alias("process"),
    ) if runtime.height else runtime
    launched = kernels.select(pl.col("correlation_id").cast(pl.Int64), process("global_pid").alias("process"))
    return common_ranges.launch_regions(launched, calls, segments, ["correlation_id", "process"])
