"""`nvidia-smi -q` reports -> raw samples, one per GPU per report.

A report opens with `==============NVSMI LOG==============`, gives `Timestamp` and `Driver
Version`, then one block per GPU (`GPU 00000000:08:00.0`) of `key : value` lines whose
indentation is their nesting (`    FB Memory Usage` / `        Used : 2136 MiB`). Each line
gets its path ("FB Memory Usage/Used") with polars window operations, and the paths listed in
`fields.REPORT_FIELDS` become columns. Reports printed in a loop (`-q -l N`) give a series.
"""

from __future__ import annotations

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common import numbers
from roofreport.families.common.textio import Document
from roofreport.families.common.times import parse_datetime
from roofreport.families.smi.fields import REPORT_FIELDS, VALUE_UNITS
from roofreport.families.smi.lines import LogLines
from roofreport.families.spec import ParseResult

_TEXT_COLUMNS = ("gpu_name", "pstate")
_MAX_WARNINGS = 20


def read(lines: LogLines, doc: Document, result: ParseResult) -> pl.DataFrame:
    section = lines.frame.filter(pl.col("section") == "report")
    if not section.height:
        return pl.DataFrame()
    _warn_unreadable(section, doc, result)
    fields = _fields(section)
    _driver(fields, result)
    gpus = fields.filter(pl.col("gpu_line").is_not_null() & pl.col("column").is_not_null())
    if not gpus.height:
        return pl.DataFrame()
    wide = gpus.group_by("report", "gpu_line", maintain_order=True).agg(
        [_first_value(c) for c in sorted(set(REPORT_FIELDS.values()))])
    times = fields.filter(pl.col("path") == "Timestamp").group_by("report").agg(
        pl.col("value").first()).select("report", parse_datetime(pl.col("value")).alias("timestamp"))
    return wide.join(times, on="report", how="left").with_columns(
        pl.col("gpu_line").alias("source_line"),
        pl.int_range(pl.len()).over("report").cast(pl.Int64).alias("gpu_index"),
        pl.col("report").cast(pl.Int64).alias("block"),
        pl.lit("report").alias("part"),
    ).drop("report", "gpu_line")


def _fields(section: pl.DataFrame) -> pl.DataFrame:
    """Every `key : value` line with its report number, GPU and path."""
    syntax = grammar.load("smi")
    text = pl.col("text")
    is_field = text.str.contains(syntax.regex("report_field_line"))
    is_gpu = text.str.contains(syntax.regex("report_gpu_line"))
    parts = section.with_columns(
        report=(pl.col("kind") == "report_title_line").cum_sum(),
        gpu_line=pl.when(is_gpu).then(pl.col("line_no")).when(pl.col("kind") == "report_title_line")
        .then(None).forward_fill(),
        is_field=is_field,
        **dict(zip(("indent", "key", "value"), syntax.extract(text, "report_field_line"))),
    ).with_columns(pl.col("key").str.strip_chars(),
                   depth=text.str.len_chars() - text.str.strip_chars_start(" ").str.len_chars())
    # A section title is an indented line without ` : `; its children are one level deeper.
    title = pl.when(~pl.col("is_field") & (pl.col("depth") == 4)).then(text.str.strip_chars())
    parts = parts.with_columns(
        parent=pl.when(pl.col("depth") <= 4).then(title).forward_fill().over("report", "gpu_line"))
    path = pl.when(pl.col("depth") <= 4).then(pl.col("key")) \
        .when(pl.col("depth") == 8).then(pl.col("parent") + "/" + pl.col("key"))
    parts = parts.filter(pl.col("is_field")).with_columns(path=path)
    return parts.with_columns(column=pl.col("path").replace_strict(REPORT_FIELDS, default=None))


def _first_value(column: str) -> pl.Expr:
    """The first value the report gives for a column (several paths may feed one column)."""
    value = pl.col("value").filter(pl.col("column") == column)
    if column in _TEXT_COLUMNS:
        return value.filter(value != "N/A").first().alias(column)
    parts = value.str.extract_groups(r"^(\S+)(?: (\S+))?$")
    unit = parts.struct.field("2").replace_strict(VALUE_UNITS, default=1.0, return_dtype=pl.Float64)
    return (numbers.parse_number(parts.struct.field("1")) * unit).drop_nulls().first().alias(column)


def _driver(fields: pl.DataFrame, result: ParseResult) -> None:
    driver = fields.filter(pl.col("path") == "Driver Version")["value"]
    if driver.len() and result.tool_version is None:
        result.tool_version = f"driver {driver[0]}"


def _warn_unreadable(section: pl.DataFrame, doc: Document, result: ParseResult) -> None:
    """Lines of a report that are neither `key : value`, a section title nor a GPU line."""
    syntax = grammar.load("smi")
    text = pl.col("text")
    known = (text.str.contains(syntax.regex("report_field_line"))
             | text.str.contains(syntax.regex("report_section_line"))
             | text.str.contains(syntax.regex("report_gpu_line")))
    bad = section.filter((pl.col("kind") == "other") & ~known).select("line_no", "text")
    for line_no, line in bad.head(_MAX_WARNINGS).iter_rows():
        err = ParseError("nvidia-smi -q: not a `key : value` line", path=doc.display,
                         line=line_no, column=1, text=line)
        result.warn("smi.bad-row", err.describe(), line=line_no)
