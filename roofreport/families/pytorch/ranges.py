"""Ranges of a Kineto trace: their nesting paths, and the annotation each kernel was launched in.

Complete events (`ph` "X") on one thread nest by time, as the Chrome trace format draws them.
A range's path is the names of the ranges of its own kind open around it on its thread, and
its own, joined by "/" (`forward/attention`, `aten::conv2d/aten::convolution`): each kind is
nested within itself only, so its top-level rows (no "/") add up to that kind's time.

A kernel's region is the path of the innermost `record_function` annotation (user_annotation,
ProfilerStep#N left out) open on the CPU thread whose CUDA call launched it, at the moment of
that call; the call is found through the kernel's correlation id (Kineto's `ac2g` flow links
the same pair). Time containment on the GPU timeline (gpu_user_annotation) is not used: only
some torch versions write it, while every trace links kernels to their launch. The sweep of
open ranges and the as-of join are `families.common.ranges`; here a kernel finds its call by
its correlation id alone.
"""

from __future__ import annotations

import polars as pl

from roofreport.families.common import ranges as common_ranges

RANGE_SCHEMA = {"thread": pl.Int64, "start": pl.Int64, "end": pl.Int64, "name": pl.String}


def paths(ranges: pl.DataFrame) -> pl.Series:
    """The path of every range (`thread`, `start`, `end`, `name`), in the frame's row order."""
    order = ranges.with_row_index("row").sort("thread", "start", pl.col("end"),
                                               descending=[False, False, True], nulls_last=True)
    out: list[str | None] = [None] * ranges.height
    stack: list[tuple[int, str]] = []
    current = None
    # (columns as lists zipped: polars' row iteration costs more than the walk itself)
    columns = (order[c].to_list() for c in ("row", "thread", "start", "end", "name"))
    for row, thread, start, end, name in zip(*columns):
        if start is None:   # an event without `ts` nests in nothing
            out[row] = name
            continue
        if thread != current:
            stack, current = [], thread
        while stack and stack[-1][0] <= start:
            stack.pop()
        path = f"{stack[-1][1]}/{name}" if stack else name
        stack.append((end, path))
        out[row] = path
    return pl.Series("path", out, dtype=pl.String)


def launch_regions(kernels: pl.DataFrame, calls: pl.DataFrame, annotations: pl.DataFrame) -> pl.Series:
    """The region of each kernel (`correlation`), in row order: the innermost annotation
    (`thread`, `start`, `end`, `path`) open on the thread of the CUDA call with the same
    correlation id (`correlation`, `thread`, `start_ns`) when that call started."""
    segments = common_ranges.innermost(annotations)
    launches = calls.select("correlation", "thread", pl.col("start_ns").alias("called")) \
        if calls.height else calls
    return common_ranges.launch_regions(kernels, launches, segments, ["correlation"])
