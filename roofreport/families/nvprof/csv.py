"""nvprof's `--csv` tables inside a log: summary, metrics/events, GPU/API trace (Unified Memory
rows and columns too) and per-launch counters (`--print-gpu-trace --metrics`), with a units row
when nvprof printed one (one unit per column: `,%,ms,,us,us,ms,`), hand-made copies without
Type column or quotes, and spreadsheet re-saves with TABs.

Each header line is parsed by Lark (`csv_header_line`, once per distinct header: any column
names, the report they make is `lines.report_kind`); the rows under it are read by
`pl.read_csv`, an empty cell a null; column meanings are data (`COLUMNS`, columns it does not
name are kept under their own names), the conversions are the text tables' (`text.add_*`), so
both forms land in the same tables the same way.
"""

from __future__ import annotations

import io
from functools import lru_cache

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common.textio import Document
from roofreport.families.nvprof import novalue, text as T, values as V
from roofreport.families.nvprof.lines import load, report_kind
from roofreport.families.spec import ParseResult
from roofreport.tables.frames import launch_dims

# The name of a Unified Memory migration's row (`[Unified Memory Memcpy HtoD]`).
UM_MIGRATION = "[Unified Memory Memcpy"

# raw header -> internal column, per report kind (anything else is kept under its own name)
COLUMNS = {
    "summary": {"Type": "activity_type", "Time(%)": "time_percent", "Time": "time_total",
                "Calls": "calls", "Avg": "time_avg", "Min": "time_min", "Max": "time_max",
                "Name": "summary_name"},
    "metrics": {"Device": "device", "Kernel": "kernel_name", "Invocations": "invocations",
                "Metric Name": "metric", "Metric Description": "description",
                "Min": "min", "Max": "max", "Avg": "avg"},
    "events": {"Device": "device", "Kernel": "kernel_name", "Invocations": "invocations",
               "Event Name": "metric", "Min": "min", "Max": "max", "Avg": "avg", "Total": "total"},
    "gpu_trace": {"Start": "start", "Duration": "duration", "Size": "size", "Device": "device",
                  "Context": "context", "Stream": "stream", "Name": "name",
                  "Correlation_ID": "correlation_id", "Grid X": "grid_x", "Grid Y": "grid_y",
                  "Grid Z": "grid_z", "Block X": "block_x", "Block Y": "block_y", "Block Z": "block_z",
                  "Unified Memory": "unified_memory"},
    "api_trace": {"Start": "start", "Duration": "duration", "Name": "name",
                  "Correlation_ID": "correlation_id"},
    # `--print-gpu-trace --metrics/--events`: one row per launch, one column per counter
    # (the other columns, kept under their names).
    "kernel_metrics": {"Device": "device", "Context": "context", "Stream": "stream",
                       "Kernel": "kernel_name", "Correlation_ID": "correlation_id"},
}


@lru_cache(maxsize=256)
def header(text: str) -> tuple[tuple[str, ...], str]:
    """(column names, separator) of a CSV header line, parsed by the grammar."""
    tokens = load().tokens(text, "csv_header_line")
    names = tuple(str(t).strip() for t in tokens if t.type in ("CSV_NAME", "BARE_CSV_NAME"))
    seps = [str(t) for t in tokens if t.type == "CSV_SEP"]
    return names, seps[0]


def read_all(lines: pl.DataFrame, doc: Document, result: ParseResult) -> list[pl.DataFrame]:
    """Every CSV table of the log into `result` (one block per header line); metric and event
    rows are returned for `text.add_counted`."""
    csv = lines.filter(pl.col("table") == "csv")
    counted: list[pl.DataFrame] = []
    if not csv.height:
        return counted
    # (`block` never decreases down the lines: one value first and last is one block, the
    # usual case, read without the grouping's queries)
    one = csv["block"][0] == csv["block"][-1]
    for block in [csv] if one else csv.partition_by("block", maintain_order=True):
        frame = _read_block(block, lines, doc, result)
        if frame is not None:
            counted.append(frame)
    return counted


def _read_block(block: pl.DataFrame, lines: pl.DataFrame, doc: Document,
                result: ParseResult) -> pl.DataFrame | None:
    head = block.row(0, named=True)
    try:
        names, sep = header(head["text"])
    except ParseError as exc:
        result.warn("nvprof.unreadable-header", f"{doc.display}:{head['line_no']}: {exc.message}",
                    line=head["line_no"])
        return None
    kind = report_kind(names)
    body = block.slice(1)
    units = None
    if body.height and body["kind"][0] == "csv_units_line":
        units = body["text"][0].split(sep)
        body = body.slice(1)
    body = body.filter(pl.col("kind") == "other")
    if kind is None or not body.height:
        return None
    if kind == "summary" and "Type" not in names and '"' not in head["text"]:
        _plain_summary(body, lines, doc, result)
        return None
    frame = _read_rows(body, names, sep, kind, lines, doc, result)
    if frame is None or not frame.height:
        return None
    if kind in ("metrics", "events"):
        stats = {col: name for name, col in COLUMNS[kind].items() if col in T.STATS}
        novalue.report(novalue.csv_cells(frame, body, names, sep, stats), doc, result)
        return _counted(frame, kind)
    if kind == "kernel_metrics":
        _kernel_metrics(frame, internal_names(kind, names), units, body, sep, doc, result)
        return None
    CONVERTERS[kind](frame, column_units(internal_names(kind, names), units), result)
    return None


def internal_names(kind: str, names: tuple[str, ...]) -> list[str]:
    """The header's names as the converters know them (`COLUMNS`; others kept as printed)."""
    return [COLUMNS[kind].get(n, n) for n in names]


def column_units(cols: list[str], units: list[str] | None) -> dict[str, str] | None:
    """Column -> its unit in the units row (`""` for none); None without a units row."""
    return dict(zip(cols, units + [""] * len(cols))) if units else None


def _read_rows(body: pl.DataFrame, names: tuple[str, ...], sep: str, kind: str,
               lines: pl.DataFrame, doc: Document, result: ParseResult) -> pl.DataFrame | None:
    """The rows as text columns (internal names)."""
    cols = internal_names(kind, names)
    frame = _try_read(body, cols, sep, _block_bytes(body, lines, doc))
    if frame is None:  # an open quote swallowed lines, or the reader refused: check each row
        body = _records(body, cols, sep, lines, doc, result)
        frame = _try_read(body, cols, sep) if body.height else None
        if frame is None:
            return None
    # A row with fields missing is cut or damaged; one whose last cell is empty is whole (a
    # metric or event with no value, `novalue.py`).
    fits = pl.col(cols[-1]).is_not_null()
    empty_last = frame.filter(~fits)["source_line"]
    if not empty_last.len():
        return frame   # (every row whole: nothing to report, nothing to drop)
    short = body.filter(pl.col("line_no").is_in(empty_last.implode()))
    whole = short.filter(_full_width(pl.col("text"), cols, sep))["line_no"]
    fits = fits | pl.col("source_line").is_in(whole.implode())
    _report_short_rows(frame.filter(~fits)["source_line"].to_list(), lines, doc, result,
                       f"is not a record of {len(cols)} fields (cut, or damaged)")
    return frame.filter(fits)


def _block_bytes(body: pl.DataFrame, lines: pl.DataFrame, doc: Document) -> bytes | None:
    """The rows' bytes as the document holds them, when they are consecutive lines (the usual
    case: no copy of millions of rows through Python strings)."""
    first, last = body["line_no"][0], body["line_no"][-1]
    if last - first + 1 != body.height:
        return None
    sizes = lines["text"].str.len_bytes() + 1
    if int(sizes.sum()) not in (len(doc.data), len(doc.data) + 1):
        return None  # bytes the line splitter replaced (invalid UTF-8): offsets would drift
    start = int(sizes.head(first - 1).sum())
    return doc.data[start:start + int(sizes.slice(first - 1, body.height).sum())]


def _try_read(body: pl.DataFrame, cols: list[str], sep: str,
              data: bytes | None = None) -> pl.DataFrame | None:
    """`pl.read_csv` of the rows; None when the reader refuses them (a row with a field too
    many, an open quote) or does not give one row per line. Short rows get nulls."""
    if data is None:
        data = body.select(pl.col("text").str.join("\n")).item().encode()
    try:
        frame = pl.read_csv(io.BytesIO(data), has_header=False, schema={c: pl.String for c in cols},
                            separator=sep, quote_char='"', missing_columns="insert")
    except pl.exceptions.PolarsError:
        return None
    if frame.height != body.height:
        return None
    return frame.with_columns(body.select(pl.col("line_no").alias("source_line"), "pid",
                                          "nvtx_path", "section",
                                          pl.col("device").alias("part_device")))


def _records(body: pl.DataFrame, cols: list[str], sep: str, lines: pl.DataFrame, doc: Document,
             result: ParseResult) -> pl.DataFrame:
    """The lines that are CSV records (grammar rule `csv_record`) of the header's width;
    the others are reported."""
    fits = pl.col("text").str.contains(load().regex("csv_record")) & _full_width(pl.col("text"), cols, sep)
    _report_short_rows(body.filter(~fits)["line_no"].to_list(), lines, doc, result,
                       f"is not a record of {len(cols)} fields (cut, or damaged)")
    return body.filter(fits)


def _full_width(text: pl.Expr, cols: list[str], sep: str) -> pl.Expr:
    """The line holds as many fields as the header (separators outside quoted cells)."""
    bare = text.str.replace_all(load().terminal("QUOTED_CELL"), "")
    return bare.str.count_matches(sep, literal=True) == len(cols) - 1


def _report_short_rows(line_nos: list[int], lines: pl.DataFrame, doc: Document,
                       result: ParseResult, what: str) -> None:
    """CSV rows that cannot be read whole: cut off (the log's last line), or damaged."""
    if not line_nos:
        return
    last = lines.filter(pl.col("kind") != "blank_line")["line_no"].max()
    for line_no in line_nos[:20]:
        code = "nvprof.truncated" if line_no == last else "nvprof.unreadable-row"
        result.warn(code, f"{doc.display}:{line_no}: CSV row {what}; row skipped", line=line_no)
    if len(line_nos) > 20:
        result.warn("nvprof.unreadable-row", f"{len(line_nos) - 20} more unreadable CSV rows")


def _cell(frame: pl.DataFrame, col: str, units: dict[str, str] | None) -> pl.Expr:
    """A column's value in base units, using the units row when there is one. A column of
    plain numbers under a known unit is cast at once (the common case, millions of cells);
    cells with units of their own go through the pattern."""
    if col not in frame.columns:
        return pl.lit(None, pl.Float64)
    unit = units.get(col, "") if units else ""
    if frame.schema[col].is_numeric():  # typed by the reader (families/nvprof/fast.py)
        return V.plain(pl.col(col), unit) if unit in V.UNITS or unit == "" else pl.lit(None, pl.Float64)
    plain = frame[col].cast(pl.Float64, strict=False)
    if plain.null_count() == frame[col].null_count() and (unit == "" or unit in V.UNITS):
        return V.plain(pl.col(col), unit)
    return V.scaled(pl.col(col), pl.lit(unit, pl.String) if units else None)


# -- converters ------------------------------------------------------------------------------

def _summary(frame: pl.DataFrame, units: dict[str, str] | None, result: ParseResult) -> None:
    activity = pl.col("activity_type") if "activity_type" in frame.columns else pl.lit(None, pl.String)
    rows = frame.select(
        "source_line", activity.fill_null(T.section_type()).alias("activity_type"), "nvtx_path", "pid",
        pl.col("part_device").alias("device"), pl.col("summary_name").alias("name"),
        _cell(frame, "time_percent", units).alias("percent"),
        _cell(frame, "time_total", units).alias("total_ns"), V.integer(pl.col("calls")).alias("calls"),
        _cell(frame, "time_avg", units).alias("avg_ns"), _cell(frame, "time_min", units).alias("min_ns"),
        _cell(frame, "time_max", units).alias("max_ns"),
        *[pl.col(cell).alias(f"{col}_text") for col, cell in T.SUMMARY_TEXT.items()])
    T.add_summary(rows, result)


def _plain_summary(body: pl.DataFrame, lines: pl.DataFrame, doc: Document, result: ParseResult) -> None:
    """A hand-made summary CSV: units in the cells, names with commas left unquoted."""
    syntax = load()
    fields = body.with_columns(syntax.extract(pl.col("text"), "plain_csv_summary_row"))
    bad = fields.filter(pl.col("time_total").is_null())
    T.report_bad_rows(bad["line_no"].to_list(), bad["text"].to_list(), "plain_csv_summary_row",
                      lines, doc, result)
    rows = fields.filter(pl.col("time_total").is_not_null())
    T.add_summary(rows.select(
        pl.col("line_no").alias("source_line"), T.section_type().alias("activity_type"),
        "nvtx_path", "pid", "device", pl.col("summary_name").alias("name"), *T.summary_values()), result)


def _counted(frame: pl.DataFrame, kind: str) -> pl.DataFrame:
    """Metric or event rows as `text.add_counted` takes them."""
    return frame.select(
        "source_line", pl.lit(None, pl.Int64).alias("launch_id"), "pid", "device", "kernel_name",
        V.integer(pl.col("invocations")).alias("invocations"), "metric",
        pl.lit("Metric result" if kind == "metrics" else "Event result").alias("section"),
        # An empty cell of a stat column is a value nvprof did not give ("", no value);
        # a column the table lacks stays null.
        *[pl.col(s).fill_null("") if s in frame.columns else pl.lit(None, pl.String).alias(s) for s in T.STATS])


def _kernel_metrics(frame: pl.DataFrame, cols: list[str], units: list[str] | None, body: pl.DataFrame,
                    sep: str, doc: Document, result: ParseResult) -> None:
    """`--print-gpu-trace --metrics/--events --csv`: one launch per row (`kernels`, its line
    the launch id), every counter cell in `metrics` (no stat: one launch's value), scaled by
    its column's unit. A placeholder (`<OVERFLOW>`, `<NaN>`, `n/a`) is a null; each kind is
    counted in one warning with its first cell."""
    keys = set(COLUMNS["kernel_metrics"].values())
    counters = [c for c in cols if c not in keys and c in frame.columns]
    unit_of = column_units(cols, units) or {}
    result.add("kernels", frame.select(
        "source_line", pl.col("source_line").alias("launch_id"), "device",
        pl.col("kernel_name").alias("name"), pl.lit("launch").alias("kind"), pl.lit(1).alias("count"),
        _int(frame, "context").alias("context"), _int(frame, "stream").alias("stream")))
    if not counters:
        return
    cells = frame.select("source_line", "device", "kernel_name", *counters).unpivot(
        counters, index=["source_line", "device", "kernel_name"], variable_name="metric",
        value_name="value_text")
    unit = pl.col("metric").replace_strict(unit_of, default="", return_dtype=pl.String)
    result.add("metrics", cells.select(
        "source_line", pl.col("source_line").alias("launch_id"), "kernel_name", "device",
        pl.lit("Metric result").alias("section"), "metric",
        V.base_unit(V.cell_unit(pl.col("value_text"), unit)).alias("unit"),
        V.scaled(pl.col("value_text"), unit).alias("value"), "value_text").sort("source_line", maintain_order=True))
    novalue.report_placeholders(cells, body, cols, sep, doc, result)


def _int(frame: pl.DataFrame, col: str) -> pl.Expr:
    if col not in frame.columns:
        return pl.lit(None, pl.Int64)
    return pl.col(col) if frame.schema[col] == pl.Int64 else V.integer(pl.col(col))


def _gpu_trace(frame: pl.DataFrame, units: dict[str, str] | None, result: ParseResult) -> None:
    T.add_gpu_trace(gpu_trace_table(frame, units), result)


def gpu_trace_table(frame: pl.DataFrame, units: dict[str, str] | None) -> pl.DataFrame:
    """A GPU trace's rows as activities: times and sizes in base units, launch shapes. A
    Unified Memory migration's bytes are in its `Unified Memory` column (which holds a page
    fault group's count, or a CPU fault's `PC 0x...`, on the other Unified Memory rows)."""
    def text(col: str) -> pl.Expr:
        return pl.col(col) if col in frame.columns else pl.lit(None, pl.String)

    size = _cell(frame, "size", units)
    if "unified_memory" in frame.columns:
        migrated = pl.col("name").cast(pl.String).str.starts_with(UM_MIGRATION)
        size = pl.coalesce(size, pl.when(migrated).then(_cell(frame, "unified_memory", units)))
    return frame.select(
        "source_line", text("name").alias("name"),
        _cell(frame, "start", units).alias("start_ns"),
        _cell(frame, "duration", units).alias("duration_ns"), size.alias("bytes"),
        text("device").alias("device"),
        _int(frame, "context").alias("context"), _int(frame, "stream").alias("stream"),
        _int(frame, "correlation_id").alias("correlation_id"),
        launch_dims(frame, "grid"), launch_dims(frame, "block"))


def _api_trace(frame: pl.DataFrame, units: dict[str, str] | None, result: ParseResult) -> None:
    result.add("api_calls", frame.select(
        "source_line", pl.lit("trace").alias("kind"), "name", pl.lit(1).alias("calls"),
        _cell(frame, "start", units).alias("start_ns"),
        _cell(frame, "duration", units).alias("total_ns")))


CONVERTERS = {"summary": _summary, "gpu_trace": _gpu_trace, "api_trace": _api_trace}
