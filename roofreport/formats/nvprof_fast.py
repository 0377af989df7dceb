"""The common big case read in one `pl.read_csv` call: a `--print-gpu-trace --csv` log that is
one table (nvprof's banner and warnings before it, its trailer after it).

Traces run to millions of rows; splitting and classifying every line first would cost more than
reading them. Here only the head (up to the units row) and the trailer are classified as lines
(`nvprof_lines`), for the status messages and hints; the rows go straight to the CSV reader and
the same converters as the line path. Anything unusual (a second table, a row cut short, an
open quote, a blank line inside the table) returns False and the line path reads the file,
locating each problem.
"""

from __future__ import annotations

import polars as pl

from roofreport.errors import ParseError
from roofreport.formats import nvprof_csv, nvprof_lines
from roofreport.formats.base import ParseResult
from roofreport.textio import HEAD_BYTES, Document

_FAST_KINDS = ("gpu_trace", "api_trace")
# Columns the reader itself types (it refuses a cell that is no number: then the line path,
# which reports that cell's row, reads the file).
_TYPED = {
    "start": pl.Float64, "duration": pl.Float64, "size": pl.Float64,
    "gx": pl.Int64, "gy": pl.Int64, "gz": pl.Int64, "bx": pl.Int64, "by": pl.Int64, "bz": pl.Int64,
    "context": pl.Int64, "stream": pl.Int64, "correlation_id": pl.Int64,
}


def read(doc: Document, result: ParseResult) -> pl.DataFrame | None:
    """The log's lines outside the table (for `nvprof_status`), with the table read into
    `result`; None when the file is not that simple."""
    head = doc.head(HEAD_BYTES).decode("utf-8", errors="replace").split("\n")[:-1]
    found = _header(head)
    if found is None:
        return None
    index, names, sep, units = found
    skip = index + 1 + (units is not None)
    kind = nvprof_csv.report_kind(names)
    mapping = nvprof_csv.COLUMNS[kind]
    cols = [mapping.get(n, n) for n in names]
    total = doc.line_count()
    frame = _rows(doc, cols, sep, skip, total)
    if frame is None:
        return None
    rows, trailer = frame
    lines = _outside_lines(doc, head[:skip], trailer, total)
    if lines is None:
        return None
    rows = rows.with_columns(source_line=pl.int_range(skip + 1, skip + 1 + rows.height, dtype=pl.Int64))
    if units:
        rows = rows.with_columns(pl.lit(u, pl.String).alias(f"{c}_unit")
                                 for c, u in zip(cols, units + [""] * len(cols)))
    nvprof_csv.CONVERTERS[kind](rows, kind, result)
    return lines


def _header(head: list[str]) -> tuple[int, tuple[str, ...], str, list[str] | None] | None:
    """(index, names, separator, units) of the only table header of the head, if a trace's."""
    kinds = [nvprof_lines.kind_of(line) for line in head]
    headers = [i for i, kind in enumerate(kinds) if kind in nvprof_lines.TABLES]
    if len(headers) != 1 or kinds[headers[0]] != "csv_header_line":
        return None
    index = headers[0]
    try:
        names, sep = nvprof_csv.header(head[index])
    except ParseError:
        return None
    if nvprof_csv.report_kind(names) not in _FAST_KINDS or sep != ",":
        return None
    has_units = index + 1 < len(kinds) and kinds[index + 1] == "csv_units_line"
    return index, names, sep, head[index + 1].split(sep) if has_units else None


def _rows(doc: Document, cols: list[str], sep: str, skip: int, total: int):
    """(table rows, trailer line count), or None when the rest is not one clean table."""
    try:
        frame = pl.read_csv(doc.source(), skip_lines=skip, has_header=False,
                            schema={c: _TYPED.get(c, pl.String) for c in cols},
                            separator=sep, quote_char='"', missing_columns="insert")
    except pl.exceptions.PolarsError:
        return None
    if frame.height != total - skip:
        return None  # blank lines skipped, or quoted line breaks: not one row per line
    complete = frame[cols[-1]].is_not_null()
    rows = int(complete.sum())
    if not complete.head(rows).all():
        return None  # a short row inside the table
    return frame.head(rows), frame.height - rows


def _last_lines(doc: Document, count: int) -> list[str]:
    if not count:
        return []
    data = doc.tail(64 * 1024)
    if data.count(b"\n") <= count:   # the last lines are longer than the tail read
        data = doc.data
    body = data[:-1] if data.endswith(b"\n") else data
    return [t.decode("utf-8", errors="replace") for t in body.rsplit(b"\n", count)[-count:]]


def _outside_lines(doc: Document, head: list[str], trailer: int, total: int) -> pl.DataFrame | None:
    """The head lines and the trailer lines, numbered as in the file and annotated; None when
    the trailer is not nvprof's own lines (rows the reader could not finish)."""
    numbers = list(range(1, len(head) + 1)) + list(range(total - trailer + 1, total + 1))
    frame = pl.DataFrame({"line_no": numbers, "text": head + _last_lines(doc, trailer)},
                         schema={"line_no": pl.Int64, "text": pl.String})
    lines = nvprof_lines.annotate(frame)
    trailing = lines.filter(pl.col("line_no") > len(head))
    if not trailing["kind"].is_in(["status_line", "blank_line", "job_end_line"]).all():
        return None
    return lines
