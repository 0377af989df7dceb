"""The boxed `nvidia-smi` table -> raw samples, one per GPU per table.

Every layout (79 columns for drivers up to 525, 87/89 for 530-545, 91 from 550, Windows'
`Driver-Model`, `+----+` under the version line from 580) prints each GPU as a head line
(index, name, persistence or driver model, bus id) directly followed by a stats line (fan,
temperature, perf state, power usage / cap, memory used / total, utilisation, compute mode).
The grammar's `gpu_head_line` and `gpu_stats_line` read them whatever the column widths; a
table's time is the ctime line printed above it (see `samples.py`).
"""

from __future__ import annotations

import polars as pl

from roofreport import grammar
from roofreport.families.common import numbers
from roofreport.families.smi.lines import LogLines
from roofreport.families.spec import ParseResult


def read(lines: LogLines, result: ParseResult, period: float | None) -> pl.DataFrame:
    syntax = grammar.load("smi")
    frame = lines.frame
    boxes = frame.filter(pl.col("kind").is_in(["gpu_head_line", "gpu_stats_line"]))
    if not boxes.height:
        return pl.DataFrame()
    _versions(frame, syntax, result)
    head = boxes.select("line_no", "kind", *syntax.extract(pl.col("text"), "gpu_head_line"))
    stats = boxes.select(*syntax.extract(pl.col("text"), "gpu_stats_line"), "block")
    paired = pl.concat([head, stats], how="horizontal").with_columns(
        [pl.col(c).shift(1).alias(f"head_{c}") for c in ("kind", "gpu_index", "gpu_name", "bus_id")])
    rows = paired.filter((pl.col("kind") == "gpu_stats_line") & (pl.col("head_kind") == "gpu_head_line"))
    _warn_truncated_names(rows, result)
    _warn_lone_lines(paired, result)
    return rows.select(
        pl.col("line_no").alias("source_line"), "block",
        pl.col("head_gpu_index").cast(pl.Int64).alias("gpu_index"),
        pl.col("head_gpu_name").str.strip_chars().alias("gpu_name"),
        _number(pl.col("temp")).alias("temperature_c"),
        pl.when(pl.col("perf").str.starts_with("P")).then(pl.col("perf")).alias("pstate"),
        _number(pl.col("power")).alias("power_w"),
        _number(pl.col("power_cap")).alias("power_limit_w"),
        _number(pl.col("mem_used")).alias("mem_used_mib"),
        _number(pl.col("mem_total")).alias("mem_total_mib"),
        _number(pl.col("gpu_util")).alias("util_gpu_pct"),
        pl.lit("table").alias("part"),
        pl.lit(period, pl.Float64).alias("interval_s"),
    )


def _number(cell: pl.Expr) -> pl.Expr:
    """`30C`, `42W`, `1810MiB`, `16%` -> the number; `N/A`, `ERR!` -> null."""
    return numbers.parse_number(cell.str.replace(r"(?:C|W|MiB|%)$", ""))


def _versions(frame: pl.DataFrame, syntax: grammar.Grammar, result: ParseResult) -> None:
    versions = frame.filter(pl.col("kind") == "version_line").select(
        *syntax.extract(pl.col("text"), "version_line"))
    if versions.height and result.tool_version is None:
        result.tool_version = f"driver {versions['driver_version'][0]}"


def _warn_truncated_names(rows: pl.DataFrame, result: ParseResult) -> None:
    cut = rows.filter(pl.col("head_gpu_name").str.strip_chars().str.ends_with("..."))
    if cut.height:
        name = cut["head_gpu_name"][0].strip()
        result.warn("smi.truncated-name", f"the table cut the GPU name to {name!r} (use "
                    "--query-gpu=name for the full name)", line=cut["line_no"][0])


def _warn_lone_lines(paired: pl.DataFrame, result: ParseResult) -> None:
    """A GPU head line without its stats line (a table cut off by the next one, or the end of
    the file), or stats without a head: that GPU's sample is missing."""
    stats_next = pl.col("kind").shift(-1) == "gpu_stats_line"
    lone = paired.filter(((pl.col("kind") == "gpu_head_line") & ~stats_next.fill_null(False))
                         | ((pl.col("kind") == "gpu_stats_line") & (pl.col("head_kind") != "gpu_head_line")))
    if lone.height:
        line = lone["line_no"][0]
        result.warn("smi.truncated-table", f"{lone.height} GPU line(s) of a table without their "
                    f"other half (first at line {line}): a table was cut short", line=line)
