"""The common big case read by the CSV reader alone: a `--print-gpu-trace --csv` (or
`--print-api-trace --csv`) log that is one table (nvprof's banner and warnings before it, its
trailer after it).

Traces run to millions of rows; splitting and classifying every line first would cost more than
reading them. Here only the head (up to the units row) and the trailer (the `==PID==` and blank
lines after the last row, found in the file's tail) are classified as lines (`lines.py`), for
the status messages and hints. The bytes between them go straight to `pl.read_csv`, typed as
they are read: numbers as numbers, the repeated texts (kernel names, devices) as Categorical,
so each distinct name is held once; columns no table uses are not kept. They are read in pieces
(`common/pieces.py`). The same converters as the line path (`read.read_lines`) make the tables.
Anything unusual (a second table, a row cut short, an open quote, a blank line inside the
table, a cell that is no number) returns None and the line path reads the file, locating each
problem.

Kept beside the line path, which reads the same files to the same tables (tests compare them on
the corpus), because it earns far more than 10 %: the benchmark's 200 MB nvprof trace takes
1.37 s of CPU and peaks at 390 MB here, against 3.01 s and 1,537 MB by the line path (best of
3, alternating, noisy shared machine)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common.pieces import read_csv_pieces
from roofreport.families.common.textio import HEAD_BYTES, Document
from roofreport.families.nvprof import csv as nvprof_csv, lines as nvprof_lines, text as nvprof_text
from roofreport.families.spec import ParseResult

_FAST_KINDS = ("gpu_trace", "api_trace")
# Columns the reader itself types (it refuses a cell that is no number: then the line path,
# which reports that cell's row, reads the file). Launch dimensions fit 32 bits (CUDA caps a
# grid at 2^31 - 1 blocks). Names and devices repeat on every row: Categorical holds each once
# (`schema.conform` makes them shared-buffer String columns).
_TYPED = {
    "start": pl.Float64, "duration": pl.Float64, "size": pl.Float64,
    "grid_x": pl.Int32, "grid_y": pl.Int32, "grid_z": pl.Int32,
    "block_x": pl.Int32, "block_y": pl.Int32, "block_z": pl.Int32,
    "context": pl.Int64, "stream": pl.Int64, "correlation_id": pl.Int64,
    "name": pl.Categorical, "device": pl.Categorical,
}
# Lines that may follow the table's last row (nvprof's trailer).
_TRAILER = ("status_line", "blank_line", "job_end_line")
_TAIL_BYTES = 64 * 1024


@dataclass(frozen=True)
class _Layout:
    """Where the table's rows are: after the first `skip` lines (`start` bytes), up to the
    `trailer` lines (which begin at byte `end`)."""

    skip: int
    start: int
    end: int
    trailer: list[str]


def read(doc: Document, result: ParseResult) -> pl.DataFrame | None:
    """The log's lines outside the table (for `status.py`), with the table read into
    `result`; None when the file is not that simple."""
    raw_head = doc.head(HEAD_BYTES)
    head = raw_head.decode("utf-8", errors="replace").split("\n")[:-1]
    found = _header(head)
    if found is None:
        return None
    index, names, sep, units = found
    kind = nvprof_lines.report_kind(names)
    cols = nvprof_csv.internal_names(kind, names)
    layout = _layout(doc, raw_head, index + 1 + (units is not None))
    if layout is None or len(set(cols)) != len(cols):
        return None
    rows = _rows(doc, cols, _used(cols, nvprof_csv.COLUMNS[kind]), sep, layout)
    if rows is None:
        return None
    lines = _outside_lines(head[:layout.skip], layout, rows.height)
    if not lines.filter(pl.col("line_no") > layout.skip)["kind"].is_in(_TRAILER).all():
        return None
    rows = _numbered(rows, layout.skip + 1)
    units_of = nvprof_csv.column_units(cols, units)
    if kind == "gpu_trace":
        # The read rows are dropped once the trace table is made from them, before its
        # activities and kernels are: ~75 MB less at the peak of a 400 MB trace.
        trace = nvprof_csv.gpu_trace_table(rows, units_of)
        del rows
        nvprof_text.add_gpu_trace(trace, result)
    else:
        nvprof_csv.CONVERTERS[kind](rows, units_of, result)
    return lines


def _header(head: list[str]) -> tuple[int, tuple[str, ...], str, list[str] | None] | None:
    """(index, names, separator, units) of the only table header of the head, if a trace's."""
    if not any("Start" in line for line in head):
        # A trace's header names a `Start` column (`_FAST_KINDS`, `lines._CSV_KINDS`): without
        # one the head's lines need no classifying, one by one in Python (~2 ms a course log).
        return None
    kinds = [nvprof_lines.kind_of(line) for line in head]
    headers = [i for i, kind in enumerate(kinds) if kind in nvprof_lines.TABLES]
    if len(headers) != 1 or kinds[headers[0]] != "csv_header_line":
        return None
    index = headers[0]
    try:
        names, sep = nvprof_csv.header(head[index])
    except ParseError:
        return None
    if nvprof_lines.report_kind(names) not in _FAST_KINDS or sep != ",":
        return None
    has_units = index + 1 < len(kinds) and kinds[index + 1] == "csv_units_line"
    return index, names, sep, head[index + 1].split(sep) if has_units else None


def _used(cols: list[str], mapping: dict[str, str]) -> list[str]:
    """The columns the converters read (the mapped ones) and the last one, which proves a row
    whole (nvprof never leaves it empty)."""
    known = set(mapping.values())
    return [c for i, c in enumerate(cols) if c in known or i == len(cols) - 1]


# -- where the rows are ----------------------------------------------------------------------

def _layout(doc: Document, raw_head: bytes, skip: int) -> _Layout | None:
    """The rows' place in the document; None when the trailer does not fit in the tail read
    or no row is left."""
    found = _trailer(doc)
    if found is None:
        return None
    trailer, trailer_bytes = found
    start = sum(len(line) + 1 for line in raw_head.split(b"\n")[:skip])
    end = doc.size() - trailer_bytes
    return _Layout(skip, start, end, trailer) if end > start else None


def _trailer(doc: Document) -> tuple[list[str], int] | None:
    """The lines after the table's last row (nvprof's trailer: `==PID==` messages, blank
    lines, the batch system's last word), in order, and their size in bytes."""
    tail = doc.tail(_TAIL_BYTES)
    ends_line = tail.endswith(b"\n")
    raw = (tail[:-1] if ends_line else tail).split(b"\n")
    complete = len(raw) - (len(tail) == _TAIL_BYTES)  # the first line may be cut
    count = 0
    while count < complete and nvprof_lines.kind_of(_text(raw[-1 - count])) in _TRAILER:
        count += 1
    if count == complete:
        return None
    lines = raw[len(raw) - count:]
    size = sum(len(line) + 1 for line in lines) - (bool(lines) and not ends_line)
    return [_text(line) for line in lines], size


def _text(line: bytes) -> str:
    return line.decode("utf-8", errors="replace")


def _outside_lines(head: list[str], layout: _Layout, rows: int) -> pl.DataFrame:
    """The head lines and the trailer lines (after the `rows` table lines), numbered as in the
    file and annotated."""
    after = len(head) + rows
    numbers = list(range(1, len(head) + 1)) + list(range(after + 1, after + len(layout.trailer) + 1))
    frame = pl.DataFrame({"line_no": numbers, "text": head + layout.trailer},
                         schema={"line_no": pl.Int64, "text": pl.String})
    return nvprof_lines.annotate(frame)


# -- reading the rows ------------------------------------------------------------------------

def _rows(doc: Document, cols: list[str], used: list[str], sep: str,
          layout: _Layout) -> pl.DataFrame | None:
    """The rows, typed, only the `used` columns; None unless every line is one whole record
    (a blank line or an open quote would shift rows, a short row leaves the last column empty,
    a cell that is no number is refused)."""
    schema = {c: _TYPED.get(c, pl.String) for c in cols}
    try:
        frame, lines = read_csv_pieces(
            doc, layout.start, layout.end, has_header=False, schema=schema,
            columns=[cols.index(c) for c in used], separator=sep, quote_char='"',
            missing_columns="insert")
    except pl.exceptions.PolarsError:
        return None
    if frame.height != lines or frame[cols[-1]].null_count():
        return None
    return frame


def _numbered(rows: pl.DataFrame, first: int) -> pl.DataFrame:
    """`rows` with their `source_line` (from `first`)."""
    return rows.with_columns(pl.int_range(first, first + rows.height, dtype=pl.Int64).alias("source_line"))
