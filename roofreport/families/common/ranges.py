"""Nested time ranges on CPU threads, and the range a GPU kernel was launched in: what NVTX
push/pop ranges (nsys) and `record_function` annotations (PyTorch) share.

A range opens and closes on one thread; the ranges open there at a moment nest, and the
innermost one is the thread's region from that moment on. A kernel's region is the region of
the thread whose API call launched it, when that call started (how nsys's own `nvtx-name`
reports attribute kernels). Each family says which ranges count, how their paths are named
and how a kernel finds its launching call.

The ranges are walked once in Python (there are few, next to kernels); kernels are matched to
them with one as-of join, so millions of launches cost no Python loop.
"""

from __future__ import annotations

import polars as pl

SEGMENT_SCHEMA = {"thread": pl.Int64, "at": pl.Int64, "region": pl.String}


def innermost(ranges: pl.DataFrame) -> pl.DataFrame:
    """Per thread, from each time on, the path of the innermost open range (null when none is
    open): `thread`, `at`, `region`, sorted by `at`. `ranges` holds `thread`, `start`, `end`,
    `path`; a range without a start is left out, one without an end never closes."""
    ranges = ranges.filter(pl.col("start").is_not_null())
    if not ranges.height:
        return pl.DataFrame(schema=SEGMENT_SCHEMA)
    ids = ranges.with_row_index("id")
    opens = ids.select("thread", pl.col("start").alias("at"), pl.lit(1).alias("opens"), "id", "path")
    closes = ids.filter(pl.col("end").is_not_null()).select(
        "thread", pl.col("end").alias("at"), pl.lit(0).alias("opens"), "id", "path")
    events = pl.concat([opens, closes]).sort("thread", "at", "opens")
    out_thread, out_at, out_region = [], [], []
    stacks: dict[int, list[tuple[int, str]]] = {}
    # (columns as lists zipped: polars' row iteration costs more than the walk itself)
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
    segments = pl.DataFrame({"thread": out_thread, "at": out_at, "region": out_region},
                            schema=SEGMENT_SCHEMA)
    # Several events at one instant: the state after the last of them holds from then on.
    return segments.unique(["thread", "at"], keep="last", maintain_order=True).sort("at")


def launch_regions(kernels: pl.DataFrame, calls: pl.DataFrame, segments: pl.DataFrame,
                   keys: list[str]) -> pl.Series:
    """The region of each kernel row, in row order: the innermost range open on the thread of
    its launching call (`segments`, from `innermost`) when that call started. A kernel finds
    its call through the columns `keys` (a correlation id, ...), which both frames hold;
    `calls` also holds `thread` and `called` (the call's start). The first call of a key
    counts; a kernel without one has no region."""
    if not segments.height or not calls.height:
        return pl.Series("region", [None] * kernels.height, dtype=pl.String)
    launches = calls.select(*keys, "thread", "called").drop_nulls().unique(keys, keep="first")
    rows = kernels.select(keys).with_row_index("row")
    found = rows.join(launches, on=keys, how="inner").sort("called")
    # Both sides are sorted by time (polars cannot check it per `by` group, hence no check).
    placed = found.join_asof(segments, left_on="called", right_on="at", by="thread",
                             strategy="backward", check_sortedness=False)
    return rows.join(placed.select("row", "region"), on="row", how="left").sort("row")["region"]
