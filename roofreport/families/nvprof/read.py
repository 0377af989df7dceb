"""Reading an nvprof log: the fast path for a log that is one CSV trace (`fast.py`), else every
table line by line (`text.py`, `csv.py`), then what nvprof said about the run (`status.py`).
"""

from __future__ import annotations

from functools import cache

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common.textio import Document
from roofreport.families.nvprof import FAMILY, lines as nvprof_lines
from roofreport.families.spec import ParseResult


def parse_log(doc: Document, variant: str) -> ParseResult:
    from roofreport.families.nvprof import fast as nvprof_fast, status as nvprof_status

    result = ParseResult(family=FAMILY, variant=variant)
    lines = nvprof_fast.read(doc, result)
    if lines is None:
        result = ParseResult(family=FAMILY, variant=variant)
        lines = read_lines(doc, result)
    _finish(result)
    nvprof_status.apply(lines, doc, result)
    return result


def read_lines(doc: Document, result: ParseResult) -> pl.DataFrame:
    """Every table of the log, line by line; returns the annotated lines."""
    from roofreport.families.nvprof import csv as nvprof_csv, sections, text as nvprof_text

    lines = doc.lines()
    if nvprof_lines.is_spreadsheet(lines):
        lines = nvprof_lines.unspreadsheet(lines)
    lines = nvprof_lines.annotate(lines)
    counted = nvprof_text.read_all(lines, doc, result) + nvprof_csv.read_all(lines, doc, result)
    if counted:
        nvprof_text.add_counted(pl.concat(counted, how="vertical_relaxed"), result)
    nvprof_text.add_um_totals(lines, result)
    sections.report_skipped(lines, result)
    return lines


def parse_session_xml(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    result.error = ParseError("NVVP session file: holds no profile data (it only points the "
                              "Visual Profiler at its own files); export the profile with "
                              "`nvprof -o profile.nvvp` or print it with `nvprof -i`", path=doc.display)
    return result


def _finish(result: ParseResult) -> None:
    """Rows in file order; numbers that overflowed a float (`1e999`) become null, with a
    warning at their line (a kernel's launch id is its own line, so it never shifts)."""
    for name, frame in result.tables.items():
        if not frame["source_line"].is_sorted():  # (a sort would copy the frame all the same)
            frame = frame.sort("source_line", maintain_order=True)
        floats = tuple(c for c, t in frame.schema.items() if t == pl.Float64)
        bad_lines = frame.filter(_not_finite(floats))["source_line"].unique().sort()
        for line_no in bad_lines.head(20).to_list():
            result.warn("nvprof.bad-number", f"{name}: a number at line {line_no} is not finite; "
                        "kept as unknown", line=line_no)
        if len(bad_lines):  # (no copy of every float column when all are finite)
            frame = frame.with_columns(
                pl.when(pl.col(c).is_infinite() | pl.col(c).is_nan()).then(None).otherwise(pl.col(c))
                .alias(c) for c in floats)
        result.tables[name] = frame


@cache
def _not_finite(floats: tuple[str, ...]) -> pl.Expr:
    """A row holds an infinite or NaN float (built once per set of columns: a table's)."""
    return pl.any_horizontal([pl.col(c).is_infinite() | pl.col(c).is_nan() for c in floats])
