"""`nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]` rows -> raw samples, and
the per-process rows of `--query-compute-apps` / `--query-accounted-apps` (a row with `pid`).

The header line (parsed by Lark, once per distinct text) names the fields and their units;
the rows under it are split at `,` by polars, and each cell is read with the grammar's
`query_number` rule (number and unit; `MISSING_VALUE` spellings are null). Fields map to columns through
`fields.QUERY_FIELDS`. Without a header (`noheader`), only the columns whose cells have an
unambiguous shape are read (time, GPU name, bus id, uuid, pstate): the numbers' meaning is not
in the file, and guessing it from units is wrong (`52 %` may be `fan.speed`).
"""

from __future__ import annotations

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common.textio import Document
from roofreport.families.common.times import parse_datetime
from roofreport.families.smi.fields import MEASUREMENTS, QUERY_FIELDS, VALUE_UNITS
from roofreport.families.smi.lines import Field, LogLines
from roofreport.families.smi.time import time_of_day_seconds
from roofreport.families.spec import ParseResult

_SHAPES = (  # headerless column shape (grammar terminal) -> the query field it must be
    ("NATIVE_TIMESTAMP", "timestamp"), ("GPU_NAME_TEXT", "name"), ("BUS_ID_TEXT", "pci.bus_id"),
    ("UUID_TEXT", "uuid"), ("PSTATE_TEXT", "pstate"),
)
_MAX_ROW_WARNINGS = 20


def read(lines: LogLines, doc: Document, result: ParseResult) -> pl.DataFrame:
    """Raw samples from every query-CSV row of the log (empty frame when there are none)."""
    rows = lines.frame.filter((pl.col("section") == "query") & (pl.col("kind") == "other")
                              & (pl.col("text").str.strip_chars() != ""))
    if not rows.height:
        return pl.DataFrame()
    rows = _split_wrapper_time(rows, lines)
    # One group per distinct header (a header repeated before every row is still one group).
    keys = {n: "\x1f".join(f"{name}[{unit}]" for name, unit in fields)
            for n, fields in lines.headers.items()}
    fields_of = {keys[n]: fields for n, fields in lines.headers.items()}
    rows = rows.with_columns(header_key=pl.col("header_line").replace_strict(
        keys, default=None, return_dtype=pl.String))
    parts = []
    for key in rows["header_key"].unique(maintain_order=True).to_list():
        group = rows.filter(pl.col("header_key").eq_missing(key))
        fields = fields_of[key] if key is not None else _infer_fields(group, result)
        parts.append(_read_group(group, fields, doc, result))
    parts = [p for p in parts if p.height]
    return pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame()


def _split_wrapper_time(rows: pl.DataFrame, lines: LogLines) -> pl.DataFrame:
    """Separate a time a wrapper wrote before nvidia-smi's cells (`1785951483,0, 72.60`,
    `15:38:43.359 30, 636`): always without a header, with one only if it leaves the header's
    field count. Only the rows that could hold one are cut by the regex."""
    syntax = grammar.load("smi")
    counts = {n: len(f) for n, f in lines.headers.items()}
    expected = pl.col("header_line").replace_strict(counts, default=None, return_dtype=pl.Int64)
    n_fields = pl.col("text").str.count_matches(",", literal=True) + 1
    rows = rows.with_columns(body=pl.col("text"), row_time=pl.lit(None, pl.String))
    maybe = rows.filter(pl.col("header_line").is_null() | (n_fields == expected + 1))
    if not maybe.height:
        return rows
    cut = maybe.select("line_no", *syntax.extract(pl.col("text"), "query_row_line")).filter(
        pl.col("row_time").is_not_null()).select("line_no", "row_time", body="row_cells")
    return rows.update(cut, on="line_no")


# -- one header's rows -----------------------------------------------------------------------

def _read_group(group: pl.DataFrame, fields: list[Field], doc: Document,
                result: ParseResult) -> pl.DataFrame:
    cells = group.with_columns(cells=pl.col("body").str.split(","))
    ok = pl.col("cells").list.len() == len(fields)
    _warn_bad_rows(cells.filter(~ok), len(fields), doc, result)
    cells = cells.filter(ok)
    if not cells.height or not _samples_something(fields, group, result):
        return pl.DataFrame()
    # In stages, each materialised once: the cells, their grammar parts, then the values.
    cells = cells.select("line_no", "block", "row_time", *[
        pl.col("cells").list.get(i).str.strip_chars().alias(f"_c{i}") for i in range(len(fields))])
    measured = [i for i, (name, _) in enumerate(fields) if QUERY_FIELDS.get(name) in MEASUREMENTS]
    rx = grammar.load("smi").regex("query_number")
    cells = cells.with_columns([pl.col(f"_c{i}").str.extract_groups(rx).alias(f"_p{i}") for i in measured])
    exprs, checks, taken = [], [], set()
    for index, (name, unit) in enumerate(fields):
        target = QUERY_FIELDS.get(name)
        if target in taken:   # `gpu_bus_id, gpu_uuid`, `power.draw, power.draw.instant`: the first wins
            continue
        taken.add(target)
        if index in measured:
            value, bad = _measurement(pl.col(f"_c{index}"), pl.col(f"_p{index}"), _unit(cells, index, unit))
            exprs.append(value.alias(target))
            checks.append(bad.alias(f"_bad_{index}"))
        elif target is not None:
            exprs.append(_identity(pl.col(f"_c{index}"), target))
    out = cells.select(pl.col("line_no").alias("source_line"), "block", "row_time", *exprs, *checks)
    _warn_bad_values(out, fields, result)
    return _with_row_time(out.drop(*[c for c in out.columns if c.startswith("_bad_")]))


def _unit(cells: pl.DataFrame, index: int, unit: str | None) -> str | None:
    """The unit column `index`'s cells carry: `nounits` keeps `[%]` in the header and drops it from
    the cells, so a column in which no cell has a unit is read as plain numbers."""
    if unit in (None, "?"):
        return unit
    printed = cells.select(pl.col(f"_p{index}").struct.field("value_unit").is_not_null().any()).item()
    return unit if printed else None


def _samples_something(fields: list[Field], group: pl.DataFrame, result: ParseResult) -> bool:
    """A header that names no measurement (`--query-compute-apps=pid,process_name`, a list of
    names) gives no GPU samples; headerless rows are kept for their times."""
    if group["header_line"][0] is None:
        return True
    targets = {QUERY_FIELDS.get(name) for name, _ in fields}
    if targets & {*MEASUREMENTS, "pstate"}:
        return True
    result.warn("smi.no-measurement", f"the query ({', '.join(n for n, _ in fields)}) names no GPU "
                "measurement: its rows are not samples", line=group["header_line"][0])
    return False


def _measurement(cell: pl.Expr, parts: pl.Expr, unit: str | None) -> tuple[pl.Expr, pl.Expr]:
    """A cell (its grammar `query_number` parts, or a `MISSING_VALUE`) as a number in its
    column's base unit, and whether it was unreadable: text, or a unit missing or other than
    the header's (the tell-tale of a row cut by a crash)."""
    number = parts.struct.field("number").cast(pl.Float64, strict=False)
    printed = parts.struct.field("value_unit")
    missing = cell.str.contains(f"^(?:{grammar.load('smi').terminal('MISSING_VALUE')})$") | (cell == "")
    if unit is None:          # nounits, or a field printed without unit (temperature.gpu)
        value = pl.when(printed.is_null()).then(number)
    elif unit == "?":         # from an echoed command: units present, which ones not said
        factor = printed.replace_strict(VALUE_UNITS, default=1.0, return_dtype=pl.Float64)
        value = number * factor
    else:
        value = pl.when(printed == unit).then(number * VALUE_UNITS.get(unit, 1.0))
    return value, value.is_null() & ~missing


def _identity(cell: pl.Expr, target: str) -> pl.Expr:
    text = pl.when(cell.str.contains(r"^\[.*\]$|^N/A$") | (cell == "")).then(None).otherwise(cell)
    if target == "_time":
        return parse_datetime(text).alias("timestamp")
    if target in ("gpu_index", "pid"):
        return text.cast(pl.Int64, strict=False).alias(target)
    if target == "_bus":
        return text.alias("gpu_key")
    return text.alias(target)


def _with_row_time(out: pl.DataFrame) -> pl.DataFrame:
    """A wrapper's time: a datetime (epoch, ISO) or a time of day (`15:38:43.359`)."""
    rt = pl.col("row_time")
    tod = pl.when(rt.str.contains(r"^\d\d:\d\d:\d\d")).then(time_of_day_seconds(rt))
    stamp = pl.when(~rt.str.contains(r"^\d\d:\d\d:\d\d")).then(parse_datetime(rt))
    cols = [tod.alias("tod_s"), pl.lit("query").alias("part")]
    if "timestamp" in out.columns:
        cols.append(pl.coalesce("timestamp", stamp).alias("timestamp"))
    else:
        cols.append(stamp.alias("timestamp"))
    return out.with_columns(cols).drop("row_time")


# -- headerless ------------------------------------------------------------------------------

def _infer_fields(group: pl.DataFrame, result: ParseResult) -> list[Field]:
    """Fields of `noheader` rows from the shape of each column; `?` where the shape does not
    say (a bare number). The most common cell count is the row length."""
    syntax = grammar.load("smi")
    cells = group.select(pl.col("body").str.split(",").alias("cells"))
    width = cells["cells"].list.len().mode().sort()[-1]
    rows = cells.filter(pl.col("cells").list.len() == width)
    fields: list[Field] = []
    for index in range(width):
        column = rows["cells"].list.get(index).str.strip_chars()
        present = column.filter(~column.is_in(["", "[N/A]", "[Not Supported]", "N/A"]))
        name = "?"
        for terminal, field_name in _SHAPES:
            if present.len() and present.str.contains(f"^(?:{syntax.terminal(terminal)})$").all():
                name = field_name
                break
        fields.append((name, None))
    unknown = sum(1 for name, _ in fields if name == "?")
    if unknown:
        result.warn("smi.no-header",
                    f"--format=csv,noheader output: {unknown} of {width} columns hold values the "
                    "file does not name (no header line, no echoed --query-gpu command); only "
                    "times, GPU names and ids were read", line=group["line_no"][0])
    return fields


# -- warnings --------------------------------------------------------------------------------

def _warn_bad_rows(bad: pl.DataFrame, width: int, doc: Document, result: ParseResult) -> None:
    for line_no, text, body, cells in bad.select("line_no", "text", "body",
                                            pl.col("cells").list.len()).head(_MAX_ROW_WARNINGS).iter_rows():
        column = _column_of_field(text, body, width) if cells > width else len(text) + 1
        what = f"row has {cells} fields, its header {width}" + ("" if cells > width else " (row cut short?)")
        err = ParseError(f"nvidia-smi: {what}", path=doc.display, line=line_no, column=column, text=text)
        result.warn("smi.bad-row", err.describe(), line=line_no)
    if bad.height > _MAX_ROW_WARNINGS:
        result.warn("smi.bad-row", f"{bad.height - _MAX_ROW_WARNINGS} more rows with the wrong "
                    "number of fields were skipped", line=None)


def _column_of_field(text: str, body: str, index: int) -> int:
    """1-based column of the first character of field number `index` (0-based): the first
    cell the header has no name for."""
    offset = len(text) - len(body)
    pos = -1
    for _ in range(index):
        pos = body.find(",", pos + 1)
    rest = body[pos + 1:]
    return offset + pos + 2 + len(rest) - len(rest.lstrip())


def _warn_bad_values(out: pl.DataFrame, fields: list[Field], result: ParseResult) -> None:
    for index, (name, unit) in enumerate(fields):
        col = f"_bad_{index}"
        if col not in out.columns:
            continue
        bad = out.filter(pl.col(col))
        if bad.height:
            first = bad["source_line"][0]
            expect = f" with unit {unit}" if unit not in (None, "?") else ""
            result.warn("smi.bad-value", f"{bad.height} value(s) of {name} are not numbers{expect} "
                        f"(first at line {first}); they are null", line=first)
