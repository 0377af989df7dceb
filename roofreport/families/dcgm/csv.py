"""DCGM field-value CSVs (long form) -> raw samples.

`GPUId,TimeStampUs,Field,Values`: one row per GPU, time and field, as programs that watch DCGM
fields write each value they receive (there is no one tool: the column names vary). The
header names the four columns (`grammars/dcgm.lark`: `field_csv_header_line`, any order); a
field is spelled by its tag, short name, id or `DCGM_FI_` name (`fields`). Times are epoch
seconds, milliseconds or microseconds (told by their size) or ISO 8601.

The rows are turned wide: one sample per GPU and timestamp, each field in its column (fields
DCGM sampled at other instants give other samples, their other columns null). A row that does
not fit (wrong number of cells, a GPU or time that is not one, a value that is not a number)
is reported with file:line:column and left out; fields without a column are skipped, fields
roofreport does not know are named once (`dcgm.unknown-field`).
"""

from __future__ import annotations

import polars as pl

from roofreport import grammar
from roofreport.families.common import series
from roofreport.families.common.textio import Document
from roofreport.families.dcgm import csv_roles, fields as dcgm_fields
from roofreport.families.spec import ParseResult

DT = pl.Datetime("us")
_UNITS_PER_SECOND = ((1e15, 1.0), (1e12, 1e3), (0.0, 1e6))   # epoch size -> factor to us


def read(frame: pl.DataFrame, doc: Document, result: ParseResult) -> pl.DataFrame:
    headers = frame.filter(pl.col("kind") == "field_csv_header_line")
    if not headers.height:
        return pl.DataFrame()
    header_no, header = headers.row(0)[:2]
    roles = csv_roles(header) or []
    rows = frame.filter((pl.col("line_no") > header_no) & (pl.col("kind") != "blank_line")
                        & (pl.col("line_no") != header_no))
    rows = rows.filter(~((pl.col("kind") == "field_csv_header_line") & (pl.col("text") == header)))
    cells = rows.select("line_no", "text", pl.col("text").str.split(",").alias("cells"))
    fits = pl.col("cells").list.len() == len(roles)
    _warn_shape(cells.filter(~fits), len(roles), doc, result)
    cells = cells.filter(fits).select("line_no", "text", *[
        pl.col("cells").list.get(i).str.strip_chars().alias(role) for i, role in enumerate(roles)])
    values = _values(cells, roles, doc, result)
    return _wide(values, result)


def _warn_shape(bad: pl.DataFrame, width: int, doc: Document, result: ParseResult) -> None:
    rows = []
    for line_no, text, cells in bad.iter_rows():
        # the column where the row stops fitting: after its `width`-th cell, or at its end
        column = len(",".join(cells[:width])) + 1 if len(cells) > width else len(text) + 1
        rows.append((line_no, column, text))
    series.warn_rows(result, "dcgm.bad-row", f"field-value CSV: a row has {width} cells "
                     "(GPU, time, field, value)", rows, doc.display)


def _values(cells: pl.DataFrame, roles: list[str], doc: Document, result: ParseResult) -> pl.DataFrame:
    syntax = grammar.load("dcgm")
    gpu_ok = pl.col("gpu").str.contains(syntax.regex("csv_gpu_cell"))
    time_ok = pl.col("time").str.contains(syntax.regex("csv_time_cell"))
    value_ok = pl.col("value").str.contains(syntax.regex("csv_value_cell"))
    checked = cells.with_columns(_gpu_ok=gpu_ok, _time_ok=time_ok, _value_ok=value_ok)
    _warn_cells(checked, roles, doc, result)
    good = checked.filter(pl.col("_gpu_ok") & pl.col("_time_ok"))
    return good.select(
        pl.col("line_no").alias("source_line"),
        pl.col("gpu").cast(pl.Int64).alias("gpu_index"),
        _timestamp(pl.col("time")).alias("timestamp"),
        pl.col("field"),
        pl.when(pl.col("_value_ok")).then(pl.col("value").cast(pl.Float64, strict=False)).alias("value"),
        pl.col("value").alias("value_text"))


def _warn_cells(checked: pl.DataFrame, roles: list[str], doc: Document, result: ParseResult) -> None:
    rows = []
    for line_no, text, *flags in checked.select(
            "line_no", "text", "_gpu_ok", "_time_ok", "_value_ok").iter_rows():
        if all(flags):
            continue
        role = ("gpu", "time", "value")[flags.index(False)]
        before = roles.index(role)
        column = len(",".join(text.split(",")[:before])) + (2 if before else 1)
        rows.append((line_no, column, text))
    what = "field-value CSV: a GPU id, time or value that is not one (GPU or time: row left out; value: null)"
    series.warn_rows(result, "dcgm.bad-value", what, rows, doc.display)


def _timestamp(text: pl.Expr) -> pl.Expr:
    """Epoch in s, ms or us (by size), or ISO 8601 (offset dropped, as nvidia-smi's are)."""
    number = text.cast(pl.Float64, strict=False)
    us = pl.when(number >= _UNITS_PER_SECOND[0][0]).then(number * _UNITS_PER_SECOND[0][1]) \
        .when(number >= _UNITS_PER_SECOND[1][0]).then(number * _UNITS_PER_SECOND[1][1]) \
        .otherwise(number * _UNITS_PER_SECOND[2][1])
    iso = text.str.replace(r"(?:Z|[+-]\d\d:?\d\d)$", "").str.replace(" ", "T").str.strptime(
        DT, "%Y-%m-%dT%H:%M:%S%.f", strict=False)
    return pl.coalesce(us.round().cast(pl.Int64).cast(DT), iso)


def _wide(values: pl.DataFrame, result: ParseResult) -> pl.DataFrame:
    """One row per GPU and timestamp, a column per kept field."""
    if not values.height:
        return pl.DataFrame()
    keys = values["field"].unique(maintain_order=True).to_list()
    fields = {key: dcgm_fields.lookup(key) for key in keys}
    unknown = [k for k in keys if fields[k] is None and not dcgm_fields.known_not_kept(k)]
    if unknown:
        first = values.filter(pl.col("field").is_in(unknown))["source_line"][0]
        result.warn("dcgm.unknown-field", f"field(s) {', '.join(unknown[:8])} are no DCGM field "
                    "roofreport knows: not read", line=first)
    kept = {k: f for k, f in fields.items() if f is not None and f.column and not f.column.startswith("_")}
    if not kept:
        return pl.DataFrame()
    rows = values.filter(pl.col("field").is_in(list(kept)))
    priority = {k: dcgm_fields.FIELDS.index(f) for k, f in kept.items()}
    rows = rows.with_columns(
        column=pl.col("field").replace_strict({k: f.column for k, f in kept.items()}),
        factor=pl.col("field").replace_strict({k: f.factor for k, f in kept.items()}, return_dtype=pl.Float64),
        priority=pl.col("field").replace_strict(priority, return_dtype=pl.Int64))
    blank = pl.col("value") >= dcgm_fields.BLANK_AT_OR_ABOVE
    rows = rows.with_columns(
        number=pl.when(~blank).then(pl.col("value") * pl.col("factor")),
        text=pl.when(pl.col("value_text").is_in(["", "N/A"])).then(None).otherwise(pl.col("value_text")))
    numeric = rows.filter(pl.col("column") != "gpu_name").sort("priority", maintain_order=True)
    wide = numeric.group_by("gpu_index", "timestamp", maintain_order=True).agg(
        pl.col("source_line").min(),
        *[pl.col("number").filter((pl.col("column") == col) & pl.col("number").is_not_null()).first()
          .alias(col) for col in sorted({f.column for f in kept.values()} - {"gpu_name"})])
    names = rows.filter(pl.col("column") == "gpu_name")
    if names.height:  # the name is sampled once: it names the GPU, not one instant
        by_gpu = names.group_by("gpu_index").agg(pl.col("text").drop_nulls().first().alias("gpu_name"))
        wide = wide.join(by_gpu, on="gpu_index", how="left")
    return wide.sort("timestamp", "gpu_index").with_columns(sample_no=pl.lit(None, pl.Int64))
