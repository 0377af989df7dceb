"""The rows under one CSV header line, read by polars as text, every broken row located.

The common case (a well-formed file: every row has the header's fields) is one `pl.read_csv`
call over the file. Anything else (a row with too few or too many fields, a quote left open, a
file cut inside its last row) takes the line path: rows are checked one by one against the
record syntax given by the caller's grammar, the good ones are read, and each bad one is
returned with its line, column and what is wrong, for the reader to warn about. A row with
more fields than the header because a vendor wrote a name holding commas unquoted (rocprof's
`--stats` CSVs with C++ templates) is read whole when the caller names that field
(`anchored`: the fixed fields on each side anchor it). Blank lines
(rocprofv2 writes one under its header) are skipped on both paths.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field

import polars as pl

from roofreport.families.common.textio import Document

_QUOTED = r'"(?:[^"]|"")*"'


@dataclass
class BadRow:
    line_no: int
    column: int
    text: str
    message: str


@dataclass
class CsvRows:
    """`frame`: columns c0..c{width-1} (String, null for an empty cell) and `source_line`."""

    frame: pl.DataFrame
    bad: list[BadRow] = field(default_factory=list)


def read_rows(doc: Document, header_line: int, width: int, record: str,
              name_column: int | None = None) -> CsvRows:
    """The rows after line `header_line` (1-based) of `doc`, `width` fields each; `record` is the
    anchored regex of one well-formed row (the caller's grammar rule). `name_column`: the field
    a vendor writes unquoted though it may hold commas (a C++ name): a row with too many fields
    is read with that field anchored by the fixed fields on each side (`anchored`)."""
    names = [f"c{i}" for i in range(width)]
    try:
        frame = pl.read_csv(doc.source(), skip_lines=header_line - 1, has_header=True, new_columns=names,
                            infer_schema=False, raise_if_empty=False)
    except pl.exceptions.PolarsError:
        frame = None
    if frame is not None and frame.width == width:
        first = header_line + 1
        frame = frame.with_columns(source_line=pl.int_range(first, first + frame.height, dtype=pl.Int64))
        blank = pl.all_horizontal(pl.col(n).is_null() for n in names)
        frame = frame.filter(~blank)
        # A row that stops short leaves its last cells null: only the line path can tell it from
        # an empty last cell, and a cut last line needs its check too.
        if not frame[names[-1]].null_count() and doc.tail(1) in (b"\n", b""):
            return CsvRows(frame)
    return _line_path(doc, header_line, names, record, name_column)


def _line_path(doc: Document, header_line: int, names: list[str], record: str,
               name_column: int | None = None) -> CsvRows:
    lines = doc.lines().filter((pl.col("line_no") > header_line) & (pl.col("text").str.strip_chars() != ""))
    text = pl.col("text")
    commas = text.str.replace_all(_QUOTED, "").str.count_matches(",")
    checked = lines.with_columns(ok=(commas == len(names) - 1) & text.str.contains(record))
    bad, mended = [], []
    for line_no, line in checked.filter(~pl.col("ok")).select("line_no", "text").iter_rows():
        fixed = anchored(line, len(names), name_column, record) if name_column is not None else None
        if fixed is None:
            bad.append(_what_is_wrong(line_no, line, len(names)))
        else:
            mended.append((line_no, fixed))
    good = checked.filter(pl.col("ok")).select("line_no", "text")
    if mended:
        good = pl.concat([good, pl.DataFrame(mended, schema=good.schema, orient="row")]).sort("line_no")
    if not good.height:
        return CsvRows(pl.DataFrame(schema={**{n: pl.String for n in names}, "source_line": pl.Int64}), bad)
    data = (good["text"].str.join("\n")[0] + "\n").encode("utf-8")
    frame = pl.read_csv(io.BytesIO(data), has_header=False, new_columns=names, infer_schema=False)
    return CsvRows(frame.with_columns(source_line=good["line_no"]), bad)


def anchored(line: str, width: int, name_column: int, record: str) -> str | None:
    """`line` with its unquoted name field quoted, when the row has more fields than the
    header only because that name holds commas: the `name_column` fields before it and the
    `width - name_column - 1` after it are taken as they are (from the left and from the
    right), the name is all between (`Kokkos::Impl::ParallelFor<F, Kokkos::RangePolicy<>>,
    3,1200,400,12.5` under `Name,Calls,TotalDurationNs,AverageNs,Percentage`). None when the
    row is no such row: a stray quote, too few fields, a name span holding a quote (a quoted
    name and a damaged row elsewhere), or a result that is still no record."""
    if _stray_quote(line) is not None:
        return None
    starts = _field_starts(line)
    after = width - name_column - 1
    if len(starts) <= width:
        return None
    begin, end = starts[name_column], starts[len(starts) - after] - 1 if after else len(line.rstrip())
    name = line[begin:end]
    if '"' in name:
        return None
    fixed = f'{line[:begin]}"{name}"{line[end:]}'
    return fixed if re.search(record, fixed) else None


def _what_is_wrong(line_no: int, line: str, width: int) -> BadRow:
    stray = _stray_quote(line)
    if stray is not None:
        return BadRow(line_no, stray, line, "row is not a CSV record (a quote left open or inside a field)")
    starts = _field_starts(line)
    if len(starts) > width:
        return BadRow(line_no, starts[width], line, f"row has {len(starts)} fields, the header {width}")
    return BadRow(line_no, len(line) + 1, line, f"row stops after {len(starts)} of the header's {width} fields")


def _field_starts(line: str) -> list[int]:
    """0-based offsets where the fields of a CSV record (no stray quotes) begin."""
    starts, quoted = [0], False
    for offset, char in enumerate(line):
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            starts.append(offset + 1)
    return starts


def _stray_quote(line: str) -> int | None:
    """1-based column where a line stops being a CSV record, or None when it is one."""
    rest = re.sub(_QUOTED, lambda m: "x" * len(m.group(0)), line)
    found = rest.find('"')
    return None if found < 0 else found + 1

