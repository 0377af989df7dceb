"""Ranges of a Kineto trace: their nesting paths, and the annotation each kernel was launched in.

Complete events (`ph` "X") on one thread nest by time, as the Chrome trace format draws them.
A range's path is the names of the ranges of its own kind open around it on its thread, and
its own, joined by "/" (`forward/attention`, `aten::conv2d/aten::convolution`): each kind is
nested within itself only, so its top-level rows (no "/") add up to that kind's time.

A kernel's region is the path of the innermost `record_function` annotation (user_annotation,
ProfilerStep#N left out) open on the CPU thread whose CUDA call launched it, at the moment of
that call; the call is found through the kernel's correlation id (Kineto's `ac2g` flow links
the same pair). Time containment on the GPU timeline (gpu_user_annotation) is not used: only
some torch versions write it, while every trace links kernels to their launch.
"""

from __future__ import annotations

import polars as pl

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


def innermost(ranges: pl.DataFrame) -> pl.DataFrame:
    """Per thread, from each time on, the path of the innermost open range (null when none):
    `thread`, `at`, `region`, sorted by `at`. `ranges` holds `thread`, `start`, `end`, `path`."""
    schema = {"thread": pl.Int64, "at": pl.Int64, "region": pl.String}
    ranges = ranges.filter(pl.col("start").is_not_null())
    if not ranges.height:
        return pl.DataFrame(schema=schema)
    ids = ranges.with_row_index("id")
    opens = ids.select("thread", pl.col("start").alias("at"), pl.lit(1).alias("opens"), "id", "path")
    closes = ids.select("thread", pl.col("end").alias("at"), pl.lit(0).alias("opens"), "id", "path")
    events = pl.concat([opens, closes]).sort("thread", "at", "opens")
    out_thread, out_at, out_region = [], [], []
    stacks: dict[int, list[tuple[int, str]]] = {}
    for thread, at, is_open, range_id, path in zip(*(events[c].to_list() for c in events.columns)):
        stack = stacks.setdefault(thread, [])
        if is_open:
            stack.append((range_id, path))
        else:   # a range closes on top of the stack unless ranges overlap without nesting
            for index in range(len(stack) - 1, -1, -1):
                if stack[index][0] == range_id:
                    del stack[index]
                    break
        out_thread.append(thread)
        out_at.append(at)
        out_region.append(stack[-1][1] if stack else None)
    segments = pl.DataFrame({"thread": out_thread, "at": out_at, "region": out_region}, schema=schema)
    # Several events at one instant: the state after the last of them holds from then on.
    return segments.unique(["thread", "at"], keep="last", maintain_order=True).sort("at")


def launch_regions(kernels: pl.DataFrame, calls: pl.DataFrame, segments: pl.DataFrame) -> pl.Series:
    """The region of each kernel (`correlation`), in row order: the innermost range open on the
    thread of the CUDA call with the same correlation id (`correlation`, `thread`, `start_ns`)
    when that call started."""
    if not segments.height or not calls.height:
        return pl.Series("region", [None] * kernels.height, dtype=pl.String)
    launches = calls.select("correlation", "thread", pl.col("start_ns").alias("called")) \
        .drop_nulls().unique("correlation", keep="first")
    rows = kernels.select("correlation").with_row_index("row")
    found = rows.join(launches, on="correlation", how="inner").sort("called")
    placed = found.join_asof(segments, left_on="called", right_on="at", by="thread",
                             strategy="backward", check_sortedness=False)
    return rows.join(placed.select("row", "region"), on="row", how="left").sort("row")["region"]
