"""rocprofv2's records printed on stdout (`Key(Value), Key(Value), ...` lines: `grammars/rocm.lark`
`record_line`) -> the shared tables.

Without an output folder rocprofv2's cli plugin prints every record to the program's stdout, so a
job's log holds them among its own output, and the lines of several MPI ranks interleave. Each
line is read by its keys, never by position (versions add and rename keys): the keys are the
column names of a CSV (`columns.COLUMNS`), and the records are written as the rows of one:

* dispatch records (`Dispatch_ID(..)`, `Kernel_Name("..")`, `Begin_Timestamp`...): `kernels`,
  `activities` and `metrics` as rocprofv2's `results_<pid>.csv` (`tables.dispatches`); a key that
  is no field is a counter (`SQ_WAVES(16384.000000)`), into `metrics`. The process
  (`Process_ID`) of each dispatch is kept in `metrics` (section "dispatch", metric "pid"): the
  ranks stay apart;
* tracer records (`Domain(HIP_API_DOMAIN), Function(..)` or `Operation_Name(..)`,
  `Start_Timestamp`...): `api_calls`, and the HIP/HSA operations as `activities` (`tables.trace`);
* roctx records (`Domain(ROCTX_DOMAIN), Timestamp(..), ROCTX_Message(..)`) are single marks, no
  ranges: counted in a `rocm.roctx-marks` warning.

A line that starts as a record (`Dispatch_ID(`, `Domain(`) but does not read as one (cut short,
interleaved with another rank's output) is a `rocm.bad-row` warning with its file and line, and
left out; every other line is the program's own output.
"""

from __future__ import annotations

import re

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common.textio import Document
from roofreport.families.rocm import FAMILY, tables
from roofreport.families.rocm.columns import BY_HEADER
from roofreport.families.rocm.header import RocmHeader
from roofreport.families.rocm.record_line import RECORD_STARTS
from roofreport.families.spec import ParseResult

MAX_ROW_WARNINGS = 20
_ROCTX = "ROCTX_DOMAIN"
def parse(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    lines = doc.lines()
    candidates = lines.filter(pl.col("text").str.starts_with(RECORD_STARTS[0])
                              | pl.col("text").str.starts_with(RECORD_STARTS[1]))
    syntax = grammar.load("rocm")
    whole, field = syntax.pattern("record_line"), re.compile(syntax.regex("record_field", anchored=False))
    dispatches: list[tuple[int, dict[str, str]]] = []
    calls: list[tuple[int, dict[str, str]]] = []
    bad: list[int] = []
    marks = 0
    for line_no, text in candidates.iter_rows():
        text = text.rstrip()
        if not whole.match(text):
            bad.append(line_no)
            continue
        record = {found["record_key"]: (found["record_text"] or found["record_value"] or "")
                  for found in field.finditer(text)}
        if "Dispatch_ID" in record:
            dispatches.append((line_no, record))
        elif record.get("Domain") == _ROCTX:
            marks += 1
        else:
            calls.append((line_no, record))
    _report_bad(bad, doc, result)
    if marks:
        result.warn("rocm.roctx-marks", f"{doc.display}: {marks} roctx marks (single timestamps, no ranges): not read")
    if dispatches:
        cells, header = _as_csv(dispatches, "dispatches")
        tables.dispatches(cells, header, result, also=("pid",))
    if calls:
        cells, header = _as_csv(calls, "trace")
        tables.trace(cells, header, result)
    tables.barriers_apart(result)
    if not result.rows() and result.error is None:
        result.error = ParseError("no rocprofv2 dispatch or tracer record read", path=doc.display)
    return result


def _as_csv(records: list[tuple[int, dict[str, str]]], report: str) -> tuple[pl.DataFrame, RocmHeader]:
    """The records as the cells of a CSV whose header is every key they hold, in the order met
    (a key a record lacks: an empty cell). Keys that spell one field (a tracer record's
    `Function` or `Operation_Name`) are one column, under the spelling met first."""
    spelling: dict[str, str] = {}   # field -> the first key met for it
    merged = []
    for line_no, record in records:
        row = {}
        for key, value in record.items():
            field = BY_HEADER[key].field if key in BY_HEADER else key
            row[spelling.setdefault(field, key)] = value
        merged.append((line_no, row))
    records = merged
    names = list(dict.fromkeys(key for _, record in records for key in record))
    cells = pl.DataFrame({"source_line": [line_no for line_no, _ in records],
                          **{f"c{index}": [record.get(name) for _, record in records] for index, name in enumerate(names)}},
                         schema={"source_line": pl.Int64, **{f"c{index}": pl.String for index in range(len(names))}})
    header = RocmHeader(line_no=records[0][0], names=tuple(names), kind="table", report=report, tool="rocprofv2",
                        file_report=None)
    return cells, header


def _report_bad(bad: list[int], doc: Document, result: ParseResult) -> None:
    for line_no in bad[:MAX_ROW_WARNINGS]:
        err = ParseError("a line that starts as a rocprofv2 record but does not read as `Key(Value), ...`: "
                         "left out", path=doc.display, line=line_no, column=1)
        result.warn("rocm.bad-row", err.describe(), line=line_no)
    if len(bad) > MAX_ROW_WARNINGS:
        result.warn("rocm.bad-row", f"{len(bad) - MAX_ROW_WARNINGS} more record lines that do not read "
                    f"(first {MAX_ROW_WARNINGS} shown)", line=bad[MAX_ROW_WARNINGS])
