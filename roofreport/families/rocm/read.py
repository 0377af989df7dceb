"""Read one ROCm CSV: find its header (`header.py`), read the rows under it as text
(`families/common/csvrows.py`), and write them into the shared tables (`tables.py`, `smi.py`).

A row whose unquoted kernel name holds commas (rocprof `--stats`, traces) is read whole, the name
anchored by the fields the header names around it (`csvrows.anchored`). A row that does not
fit the header otherwise (too few or too many fields, a quote left open) is reported
as `rocm.bad-row` with file, line and column and left out, the rest is read; a file cut inside
its last row reports that row as `rocm.truncated` instead. A file whose header is found but that
holds no row is an error, so is one whose every row is broken.
"""

from __future__ import annotations

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common.csvrows import BadRow, read_rows
from roofreport.families.common.textio import Document
from roofreport.families.rocm import FAMILY, smi, tables
from roofreport.families.rocm.columns import BY_HEADER
from roofreport.families.rocm.header import HEADER_LINES, RocmHeader, find
from roofreport.families.spec import ParseResult

MAX_ROW_WARNINGS = 20
_HEAD_BYTES = 1 << 21   # enough for HEADER_LINES lines, pmc_perf's long header included


def parse(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    lines = doc.head(_HEAD_BYTES).decode("utf-8", errors="replace").split("\n")[:HEADER_LINES]
    header = find(lines, doc.path)
    if header is None:
        result.error = ParseError("no ROCm CSV header found (rocprof, rocprofv2/v3, rocprof-compute, "
                                  "rocm-smi or amd-smi column names)", path=doc.display)
        return result
    rows = read_rows(doc, header.line_no, len(header.names), grammar.load("rocm").regex("csv_row_line"),
                     name_column=_name_column(header))
    _report_bad_rows(rows.bad, doc, result)
    cells = rows.frame
    if header.kind != "smi":
        # a header printed again (files concatenated, a loop) is no row
        first = pl.col("c0").str.strip_chars().str.strip_chars('"')
        cells = cells.filter(first.ne_missing(header.names[0]))
    if not cells.height:
        if result.error is None:
            result.error = ParseError(f"{header.variant} holds no rows", path=doc.display, line=header.line_no)
        return result
    _emit(cells, header, result)
    tables.barriers_apart(result)
    return result


def _name_column(header: RocmHeader) -> int | None:
    """The kernel or function name's column of a profiler table: rocprof writes it unquoted in
    some releases although C++ names hold commas (`Kokkos::...ParallelFor<F, Policy>`), so a
    row with too many fields is read with the name anchored by the fields around it."""
    if header.kind != "table":
        return None
    return next((index for index, name in enumerate(header.names)
                 if name in BY_HEADER and BY_HEADER[name].field == "name"), None)


def _emit(cells: pl.DataFrame, header: RocmHeader, result: ParseResult) -> None:
    if header.kind == "table":
        tables.EMITTERS[header.report](cells, header, result)
    elif header.kind == "info":
        tables.info(cells, header, result)
    else:
        tables.finish_samples(smi.raw_samples(cells, header.names, header.tool), result)


def _report_bad_rows(bad: list[BadRow], doc: Document, result: ParseResult) -> None:
    last = doc.line_count() if bad and doc.tail(1) not in (b"\n", b"") else None
    for row in bad[:MAX_ROW_WARNINGS]:
        cut = row.line_no == last
        message = (f"the file ends inside this row ({row.message}): the row is left out" if cut
                   else f"{row.message}: the row is left out")
        err = ParseError(message, path=doc.display, line=row.line_no, column=row.column, text=row.text)
        result.warn("rocm.truncated" if cut else "rocm.bad-row", err.describe(), line=row.line_no)
    if len(bad) > MAX_ROW_WARNINGS:
        result.warn("rocm.bad-row", f"{len(bad) - MAX_ROW_WARNINGS} more rows that do not fit the header "
                    f"(first {MAX_ROW_WARNINGS} shown)", line=bad[MAX_ROW_WARNINGS].line_no)
