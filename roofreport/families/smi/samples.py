"""Raw rows from every nvidia-smi variant -> the `samples` table.

Each variant reader returns raw rows: the `samples` columns it could read plus `part`,
`block`, `gpu_key` (bus id / uuid), `tod_s` (a time of day without date) and `interval_s` (the
loop period when known). This module does what is common to all of them:

* GPU numbers: the printed index; else the order of first appearance of the bus id / uuid;
  else (GPU rows, not process rows) the position in the sweep (rows without any id, one per GPU, sweep after sweep: a new
  sweep starts at a structural line or at a time gap much longer than the gaps inside one).
* Times: the row's own time; else a date or time line written before the rows (a loop's `date`,
  the ctime line above each table) dates the first sweep after it.
* `elapsed_s`: from the datetimes when there are any, else from the times of day, else the
  sample number (a reader may count it itself) times the loop period; a start time in the file
  name then dates the samples.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from roofreport import grammar
from roofreport.families.common.times import DT, parse_datetime
from roofreport.families.smi.lines import LogLines
from roofreport.families.smi.time import (
    elapsed_from_datetime,
    elapsed_from_time_of_day,
    parse_day,
    time_of_day_seconds,
)
from roofreport.families.spec import ParseResult
from roofreport.tables import schema

_HELPERS = {"part": pl.String, "block": pl.Int64, "gpu_key": pl.String, "tod_s": pl.Float64,
            "interval_s": pl.Float64, "sample_no": pl.Int64}
_SWEEP_GAP_MAX_S = 0.25      # rows of one sweep are milliseconds apart
_CONSISTENT_SWEEPS = 0.8     # share of sweeps that must have the usual size


def finish(raw: pl.DataFrame, lines: LogLines, result: ParseResult,
           start: datetime | None = None) -> pl.DataFrame:
    """The `samples` table from raw rows (sorted by source line)."""
    raw = _complete(raw).sort("source_line", maintain_order=True).with_row_index("_row")
    raw = _assign_gpus(raw, result)
    raw = raw.with_columns(sample_no=pl.coalesce(
        "sample_no", pl.int_range(pl.len()).over("part", "gpu_index", "pid").cast(pl.Int64)))
    raw = _context_times(raw, lines.frame)
    _warn_backwards(raw, result)
    raw = _elapsed(raw, start)
    return schema.conform("samples", raw.select([c for c in schema.SAMPLES if c in raw.columns]))


def _complete(raw: pl.DataFrame) -> pl.DataFrame:
    missing = {**{c: t for c, t in schema.SAMPLES.items() if c not in ("run", "source_file")},
               **_HELPERS}
    return raw.with_columns([pl.lit(None, t).alias(c) for c, t in missing.items()
                             if c not in raw.columns]).with_columns(
        [pl.col(c).cast(t) for c, t in missing.items()])


# -- GPU numbers -----------------------------------------------------------------------------

def _assign_gpus(raw: pl.DataFrame, result: ParseResult) -> pl.DataFrame:
    keys = raw["gpu_key"].drop_nulls().unique(maintain_order=True).to_list()
    by_key = pl.col("gpu_key").replace_strict({k: i for i, k in enumerate(keys)}, default=None,
                                              return_dtype=pl.Int64)
    raw = raw.with_columns(gpu_index=pl.coalesce("gpu_index", by_key))
    # A process row without a GPU id is one process among others, not a GPU of a sweep: its
    # GPU stays unknown.
    unnamed = raw.filter(pl.col("gpu_index").is_null() & pl.col("pid").is_null())
    if not unnamed.height:
        return raw
    positions = pl.concat([_positions(part, result) for _, part in
                           unnamed.group_by("part", maintain_order=True)])
    return raw.update(positions.select("_row", "gpu_index"), on="_row")


def _positions(rows: pl.DataFrame, result: ParseResult) -> pl.DataFrame:
    """Position of each row in its sweep, or 0 for all when the sweeps are not regular."""
    seconds = pl.coalesce(pl.col("timestamp").dt.epoch("us") / 1e6, pl.col("tod_s"))
    rows = rows.with_columns(_seconds=seconds)
    new_block = pl.col("block") != pl.col("block").shift(1)
    if rows["_seconds"].is_not_null().any():
        dt = pl.col("_seconds").diff()
        gaps = rows.select(dt.alias("gap_s")).filter(pl.col("gap_s") > 0)["gap_s"]
        limit = min(_SWEEP_GAP_MAX_S, 0.3 * gaps.quantile(0.9)) if gaps.len() else 0.0
        new = new_block.fill_null(True) | (dt > limit).fill_null(True) | (dt < 0).fill_null(False)
    elif rows["block"].n_unique() > 1:
        new = new_block.fill_null(True)
    else:  # nothing tells sweeps apart: one GPU, each row its own sample
        new = pl.repeat(True, pl.len())
    rows = rows.with_columns(_sweep=new.cum_sum())
    rows = rows.with_columns(gpu_index=pl.int_range(pl.len()).over("_sweep").cast(pl.Int64))
    return _check_sweeps(rows, result)


def _check_sweeps(rows: pl.DataFrame, result: ParseResult) -> pl.DataFrame:
    sizes = rows.group_by("_sweep").len()["len"]
    usual = sizes.mode().max()
    if usual > 1 and (sizes == usual).mean() < _CONSISTENT_SWEEPS:
        result.warn("smi.gpu-unknown", "rows carry no GPU index and their sweeps are irregular: "
                    "all are counted as GPU 0", line=rows["source_line"][0])
        return rows.with_columns(gpu_index=pl.lit(0, pl.Int64))
    if usual > 1:
        result.warn("smi.gpu-by-position", f"rows carry no GPU index: {usual} rows per sweep, "
                    "GPUs numbered by their position in each sweep", line=rows["source_line"][0])
    return rows


# -- times -----------------------------------------------------------------------------------

def _context_times(raw: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    """Rows without a time of their own take the date/time line above them, if they are the
    first sweep after it (a table under its ctime line, a loop block under its `date`)."""
    syntax = grammar.load("smi")
    date_text = syntax.extract(pl.col("text"), "date_line")[0]
    dates = lines.filter(pl.col("kind") == "date_line").select(
        pl.col("line_no").alias("_date_line"), parse_datetime(date_text).alias("_date"),
        parse_day(date_text).alias("_day"))
    tods = lines.filter(pl.col("kind") == "time_line").select(
        pl.col("line_no").alias("_tod_line"), time_of_day_seconds(pl.col("text")).alias("_tod"))
    raw = raw.join_asof(dates, left_on="source_line", right_on="_date_line", strategy="backward")
    raw = raw.join_asof(tods, left_on="source_line", right_on="_tod_line", strategy="backward")
    # (per process too: a loop's block lists every running process once)
    first_after = pl.int_range(pl.len()).over("_date_line", "gpu_index", "pid") == 0
    first_after_tod = pl.int_range(pl.len()).over("_tod_line", "gpu_index", "pid") == 0
    # Windows batch files echo `date /T` (a day) then `time /T` (`03:44 PM`): together a time.
    on_day = pl.col("_day") + pl.duration(microseconds=(pl.col("_tod") * 1e6).round().cast(pl.Int64))
    dated = pl.when(first_after & pl.col("_date").is_not_null()).then(pl.col("_date")) \
        .when(first_after_tod & (pl.col("_tod_line") > pl.col("_date_line"))).then(on_day)
    return raw.with_columns(
        timestamp=pl.coalesce("timestamp", dated),
        tod_s=pl.coalesce("tod_s", pl.when(first_after_tod).then(pl.col("_tod"))),
    )


def _warn_backwards(raw: pl.DataFrame, result: ParseResult) -> None:
    """Time running backwards within one GPU's series: the capture lost bytes or several
    writers interleaved (elapsed times are still measured from the earliest sample)."""
    back = raw.filter((pl.col("timestamp").diff().over("part", "gpu_index", "pid") < pl.duration(seconds=0))
                      .fill_null(False))
    if back.height:
        first = back["source_line"][0]
        result.warn("smi.time-backwards", f"time goes backwards {back.height} time(s): data "
                    "was lost or several captures interleave", line=first)


def _elapsed(raw: pl.DataFrame, start: datetime | None) -> pl.DataFrame:
    tod_rows = raw.filter(pl.col("tod_s").is_not_null()).select(
        "_row", elapsed_from_time_of_day(pl.col("tod_s")).alias("_e_tod"))
    raw = raw.join(tod_rows, on="_row", how="left")
    own = pl.col("elapsed_s") - pl.col("elapsed_s").drop_nulls().first()   # a wrapper's column
    raw = raw.with_columns(elapsed_s=pl.coalesce(
        elapsed_from_datetime(pl.col("timestamp")), own, pl.col("_e_tod"),
        pl.col("sample_no") * pl.col("interval_s")))
    if start is not None and raw["timestamp"].is_null().all():
        raw = raw.with_columns(timestamp=pl.lit(start, DT) + pl.duration(
            microseconds=(pl.col("elapsed_s") * 1e6).round().cast(pl.Int64)))
    return raw
