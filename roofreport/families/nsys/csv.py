"""nsys `stats --format csv` reports (gputrace, gpukernsum, cudaapisum, nvtxsum, ... of every
version), as files or captured from stdout with tool noise around them.

The header line is parsed with the grammar (`csv_header_line`) and recognised by its column
names (`columns.py`); the rows are read by `pl.read_csv` as text and typed column by
column. The common case (one report, header on the first lines, no broken row) is one
`read_csv` call; anything unusual (several reports in one capture, rows with a wrong number
of fields, blank lines) takes the line-by-line path, which locates each problem.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common import numbers
from roofreport.families.common.textio import Document
from roofreport.families.nsys.columns import (
    BY_HEADER,
    TEXT_FIELDS,
    Column,
    Report,
    fields_of,
    hint_from_filename,
    recognise,
)
from roofreport.families.nsys.tables import (
    MAX_PROBLEMS,
    USED_FIELDS,
    Cells,
    emit,
    problem,
    typed,
)
from roofreport.families.spec import ParseResult

FAMILY = "nsys"
_QUOTED = r'"(?:[^"]|"")*"'
_FIELD = rf'(?:[^",]*|{_QUOTED})'
_RECORD = rf"^{_FIELD}(?:,{_FIELD})*$"
_REPEATED_TEXT = ("name", "device", "src_kind", "dst_kind")
_MARK_SAMPLE = 1000   # rows at the head of a file looked at for "no value" marks
_WHOLE_NUMBERS = ("correlation_id", "context", "stream", "grid_x", "grid_y", "grid_z",
                  "block_x", "block_y", "block_z")


@dataclass(frozen=True)
class Header:
    """One recognised report header: its line (1-based), names, Columns and report kind."""

    line_no: int
    names: list[str]
    cols: list[Column | None]
    report: Report


def find_header(lines: list[str], filename: str = "", offset: int = 0) -> Header | None:
    """The first line of `lines` that is an nsys CSV report header (never raises)."""
    for index, text in enumerate(lines):
        header = parse_header(text, offset + index + 1, filename)
        if header is not None:
            return header
    return None


def parse_header(text: str, line_no: int, filename: str = "") -> Header | None:
    first = text.split(",", 1)[0].strip()
    if "," not in text or first not in BY_HEADER:
        return None
    try:
        tokens = grammar.load("nsys").tokens(text, "csv_header_line")
    except ParseError:
        return None
    names = [str(t) for t in tokens if t.type == "CSV_NAME"]
    cols, unknown = fields_of(names)
    if len(unknown) > len(names) // 2:
        return None
    report = recognise(cols, hint_from_filename(filename))
    return Header(line_no, names, cols, report) if report else None


def parse_csv(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    head_lines = doc.head(65536).decode("utf-8", errors="replace").split("\n")[:-1] or [""]
    header = find_header(head_lines[:400], doc.path.name)
    if header is None:
        result.error = ParseError("no nsys CSV report header found", path=doc.display)
        return result
    frame = _fast_read(doc, header, _marks_in(head_lines[header.line_no:header.line_no + _MARK_SAMPLE]))
    if frame is not None:
        _finish(header, frame, doc, result)
    else:
        _slow_read(doc, result)
    _drop_cut_row(doc, header, result)
    if not result.rows() and result.error is None:
        result.error = ParseError(f"nsys {header.report.id} report holds no rows",
                                  path=doc.display, line=header.line_no)
    return result


def _drop_cut_row(doc: Document, header: Header, result: ParseResult) -> None:
    """A file that stops inside its last row (no line break, a quote left open or fields
    missing: the copy or the export was cut): that row's values may be cut too, so its rows are
    dropped, and `nsys.truncated` says the trace lacks its end."""
    tail = doc.tail(1 << 16)
    if not tail or tail.endswith(b"\n"):
        return
    last = tail.rsplit(b"\n", 1)[-1].decode("utf-8", errors="replace")
    fields = re.sub(_QUOTED, "", last).count(",") + 1 if last.count('"') % 2 == 0 else 0
    if fields >= len(header.names):
        return
    line = doc.line_count()
    for name, frame in result.tables.items():
        if "source_line" in frame.columns:
            result.tables[name] = frame.filter(pl.col("source_line").ne_missing(line))
    result.warn("nsys.truncated", f"the file ends inside a row (line {line}): the trace lacks its end "
                "and that row was left out", line=line)


# -- reading ---------------------------------------------------------------------------------

def _marks_in(rows: list[str]) -> list[str]:
    """The "no value" marks (`numbers.MISSING`) that stand as whole cells in `rows` (the rows
    at the head of the file): nsys 2022-2024 traces write `None` in every memcpy row's launch
    columns. A guess for speed only (quotes are not parsed; a mark elsewhere is still read)."""
    cells = {cell.strip('"') for row in rows for cell in row.split(",")}
    return [mark for mark in numbers.MISSING if mark and mark in cells]


def _read_typed(doc: Document, header: Header, marks: list[str] | None = None) -> pl.DataFrame:
    """The rest of the file as one report, its numeric columns parsed by the CSV reader
    itself, which raises on the first cell that is not a plain number. `marks`: the "no
    value" marks the reader turns into nulls (those seen at the head of the file)."""
    numeric = {f"c{i}": pl.Float64 for i, c in enumerate(header.cols)
               if c is not None and c.field not in TEXT_FIELDS}
    if header.report.id == "gputrace":
        # Kernel names repeat a million times in a trace: stored once each (see tables/frames.py).
        # Ids and launch dimensions are whole numbers the tables keep as such: read as Int64,
        # no Float64 copy to cast (a cell that is not one sends the file down the line path).
        numeric.update({f"c{i}": pl.Categorical if c.field in _REPEATED_TEXT else pl.Int64
                        for i, c in enumerate(header.cols)
                        if c is not None and c.field in _REPEATED_TEXT + _WHOLE_NUMBERS})
    read = dict(skip_lines=header.line_no - 1, infer_schema=False, has_header=True,
                new_columns=[f"c{i}" for i in range(len(header.names))],
                schema_overrides=numeric or None, raise_if_empty=False)
    try:
        # Polars matches each of `null_values` against every cell (all twelve marks: 0.14 of
        # a 0.51 s read at 400 MB), so the reader gets only the marks seen at the head; other
        # marks in text cells are made null after the read, and numbers need none of them (an
        # empty cell is null, "nan" is NaN, which typing makes null).
        frame = _marks_to_null(pl.read_csv(doc.source(), null_values=marks or None, **read))
    except pl.exceptions.PolarsError:
        # A mark in a number column that the head did not show: read with all the marks.
        frame = pl.read_csv(doc.source(), null_values=list(numbers.MISSING), **read)
    first = header.line_no + 1
    return frame.with_columns(source_line=pl.int_range(first, first + frame.height, dtype=pl.Int64))


def _marks_to_null(frame: pl.DataFrame) -> pl.DataFrame:
    """Text cells that hold a "no value" mark (`numbers.MISSING`, a quoted "" too) as null, as
    the CSV reader's `null_values` makes them. A Categorical column is looked at through its
    distinct values (a trace's million names are a few dozen)."""
    marks = list(numbers.MISSING)
    fixed = []
    for name, dtype in frame.schema.items():
        if dtype not in (pl.String, pl.Categorical):
            continue
        values = frame[name].unique() if dtype == pl.Categorical else frame[name]
        if values.cast(pl.String).is_in(marks).any():
            text = pl.col(name).cast(pl.String)
            fixed.append(pl.when(text.is_in(marks)).then(None).otherwise(pl.col(name)).alias(name))
    return frame.with_columns(fixed) if fixed else frame


def _fast_read(doc: Document, header: Header, marks: list[str]) -> pl.DataFrame | None:
    """The whole rest of the file as one report of plain numbers, or None when it is not
    that simple (then the line path finds and locates what is wrong)."""
    try:
        frame = _read_typed(doc, header, marks)
    except pl.exceptions.PolarsError:
        return None   # a cell that is not a number, a row too long, a second header...
    if frame[f"c{len(header.names) - 1}"].null_count():
        return None   # rows that stop short; blank lines, which the reader turns into null rows
    used = USED_FIELDS.get(header.report.id)
    if used is not None:   # every cell was checked by the reader; keep what the tables use
        frame = frame.select("source_line", *[f"c{i}" for i, c in enumerate(header.cols)
                                              if c is not None and c.field in used])
    # One contiguous chunk per column: the reader returns hundreds, and the first select
    # over them would copy the whole frame anyway while the original is still alive.
    return frame.rechunk()


def _slow_read(doc: Document, result: ParseResult) -> None:
    lines = doc.lines()
    first = lines["text"].str.extract(r"^([^,]*),", 1).str.strip_chars()
    candidates = lines.filter(first.is_in(list(BY_HEADER)))
    headers = [h for h in (parse_header(t, n, doc.path.name) for n, t in candidates.iter_rows())
               if h is not None]
    blank = lines.filter(pl.col("text").str.strip_chars() == "")["line_no"].to_list()
    stops = sorted(set(blank) | {h.line_no for h in headers} | {lines.height + 1})
    for header in headers:
        end = next(s for s in stops if s > header.line_no)
        body = lines.slice(header.line_no, end - header.line_no - 1)
        bad = _malformed(body, len(header.names))
        _report_rows(bad, len(header.names), doc, result)
        good = body.filter(~pl.col("line_no").is_in(bad["line_no"].implode()))
        frame = _read_lines(good, header, doc, result)
        if frame is not None:
            _finish(header, frame, doc, result)


def _malformed(body: pl.DataFrame, n_fields: int) -> pl.DataFrame:
    """Rows that are not a CSV record (a quote inside an unquoted field, text after a closing
    quote) or have another number of fields than the header."""
    text = body["text"]
    commas = text.str.replace_all(_QUOTED, "").str.count_matches(",")
    return body.filter((commas != n_fields - 1) | ~text.str.contains(_RECORD))


def _read_lines(good: pl.DataFrame, header: Header, doc: Document,
                result: ParseResult) -> pl.DataFrame | None:
    """The well-formed rows of one report, read as text, each with its own line number."""
    if not good.height:
        return None
    data = (good["text"].str.join("\n")[0] + "\n").encode("utf-8")
    try:
        frame = pl.read_csv(io.BytesIO(data), has_header=False, infer_schema=False,
                            new_columns=[f"c{i}" for i in range(len(header.names))],
                            null_values=list(numbers.MISSING), truncate_ragged_lines=True)
    except pl.exceptions.PolarsError as exc:
        problem(result, "nsys.bad-row", ParseError(
            f"the rows of this {header.report.id} report cannot be read as CSV: "
            f"{str(exc).splitlines()[0]}", path=doc.display, line=header.line_no))
        return None
    if frame.height != good.height:
        problem(result, "nsys.bad-row", ParseError(
            "rows of this report hold line breaks inside quotes", path=doc.display, line=header.line_no))
        return None
    return frame.with_columns(source_line=good["line_no"])


def _report_rows(bad: pl.DataFrame, n_fields: int, doc: Document, result: ParseResult) -> None:
    for line_no, text in bad.head(MAX_PROBLEMS).iter_rows():
        message, column = _what_is_wrong(text, n_fields)
        err = ParseError(message, path=doc.display, line=line_no, column=column, text=text)
        problem(result, "nsys.bad-row", err)
    if bad.height > MAX_PROBLEMS:
        result.warn("nsys.bad-row", f"{bad.height - MAX_PROBLEMS} more malformed rows")


def _what_is_wrong(text: str, n_fields: int) -> tuple[str, int]:
    """The message and 1-based column for a malformed row."""
    broken = _stray_quote(text)
    if broken is not None:
        return "row is not a CSV record (a quote inside a field or text after a closing quote)", broken
    start = _cell_column(text, n_fields)
    # Point at the first field too many, or at the end of a row that stops short.
    column = start - 1 if start <= len(text) else len(text) + 1
    return f"row does not have the header's {n_fields} fields", column



# -- typing ----------------------------------------------------------------------------------

def _finish(header: Header, frame: pl.DataFrame, doc: Document, result: ParseResult) -> None:
    keep = [(i, c) for i, c in enumerate(header.cols) if c is not None and f"c{i}" in frame.columns]
    cells = Cells(header.report, [c for _, c in keep],
                  frame.select("source_line", *[pl.col(f"c{i}").alias(c.field) for i, c in keep]))
    values, bad = typed(cells)
    _report_values(bad, header, doc, result)
    emit(header.report, values, result, {})


def _report_values(bad: pl.DataFrame, header: Header, doc: Document, result: ParseResult) -> None:
    if not bad.height:
        return
    texts = doc.lines()["text"]
    index = {c.field: i for i, c in enumerate(header.cols) if c is not None}
    for line_no, field, cell in bad.head(MAX_PROBLEMS).iter_rows():
        line = texts[line_no - 1]
        err = ParseError(f"{header.names[index[field]]}: {cell!r} is not a number", path=doc.display,
                         line=line_no, column=_cell_column(line, index[field]), text=line)
        problem(result, "nsys.bad-value", err)
    if bad.height > MAX_PROBLEMS:
        result.warn("nsys.bad-value", f"{bad.height - MAX_PROBLEMS} more cells that are not numbers")


def _stray_quote(line: str) -> int | None:
    """1-based column where a line stops being a CSV record, or None when it is one.
    Steps field by field with str.find (damaged lines can be megabytes long)."""
    pos = 0
    while pos <= len(line):
        if line.startswith('"', pos):
            end = pos + 1
            while True:
                end = line.find('"', end)
                if end < 0:
                    return len(line) + 1            # the quote never closes
                if line.startswith('""', end):
                    end += 2
                    continue
                break
            after = end + 1
            if after < len(line) and line[after] != ",":
                return after + 1                    # text after the closing quote
            pos = after + 1
            continue
        comma = line.find(",", pos)
        stop = len(line) if comma < 0 else comma
        quote = line.find('"', pos, stop)
        if quote >= 0:
            return quote + 1                        # a quote inside an unquoted field
        pos = stop + 1
    return None


def _cell_column(line: str, index: int) -> int:
    """1-based column where field `index` of a CSV line starts (quotes respected)."""
    field, quoted = 0, False
    for pos, char in enumerate(line):
        if field == index:
            return pos + 1
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            field += 1
    return len(line) + 1

