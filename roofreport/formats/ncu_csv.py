"""Nsight Compute CSV exports: the details page (`--csv`, one metric per row, 6 to 21 columns)
and the raw page (`--page raw --csv`, one launch per row, every metric a column, units in the
second row). This module finds the header and reads the records; `ncu_csv_tables.py` says what
the columns mean and fills the tables.

The header line is parsed by the grammar (`csv_header_line` in `grammars/ncu.lark`, once per
distinct header). The records are read in bulk by `pl.read_csv` straight from the bytes after
the header; lines that are not records (ncu status lines, program output: they do not start
with a quote) are few and classified by the grammar's line rules. When polars cannot read the
block (a broken quote, a cut line), every line after the header is checked against the
grammar's `csv_record_line`: the broken ones are explained (line, column) and the rest read.
"""

from __future__ import annotations

import re
from functools import lru_cache

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.formats import ncu_status
from roofreport.formats.base import ParseResult
from roofreport.formats.ncu_csv_tables import is_raw, read_details, read_raw, roles_of, variant_for
from roofreport.textio import Document

FAMILY = "ncu"

# Lark explains short lines with the tokens it expected; longer ones (Earley is super-linear)
# get the column where the grammar's CSV fields stop.
ROW_LARK_MAX = 4096
HEADER_LARK_MAX = 60_000

__all__ = ["header_names_quick", "parse_csv", "variant_for"]


# -- header ----------------------------------------------------------------------------------

def header_names_quick(line: str) -> list[str]:
    """Column names of a header line, for sniffing (the grammar's CSV_NAME terminal)."""
    g = grammar.load("ncu")
    return [name[1:-1] for name in re.findall(g.terminal("CSV_NAME"), line)]


@lru_cache(maxsize=64)
def header_names(text: str, path: str = "", line: int | None = None) -> tuple[str, ...]:
    """Column names of a header line, parsed by Lark (once per distinct header). Lark's Earley
    parser is super-linear, so a header longer than any real one (raw pages reach ~40 KB) is
    checked with the rule's compiled regex instead."""
    g = grammar.load("ncu")
    if len(text) > HEADER_LARK_MAX:
        if not re.match(g.regex("csv_header_line"), text):
            raise ParseError("ncu CSV: header line is not a list of quoted column names",
                             path=path, line=line, column=_csv_prefix_end(text) + 1, text=text)
        return tuple(header_names_quick(text))
    tree = g.parse(text, "csv_header_line", path=path, line=line)
    tokens = tree.scan_values(lambda v: getattr(v, "type", "") in ("HEADER_FIRST", "CSV_NAME"))
    return tuple(str(t)[1:-1] for t in tokens)


def _csv_prefix_end(text: str) -> int:
    """Length of the longest prefix of `text` made of whole quoted CSV fields."""
    fields = grammar.load("ncu").terminal("CSV_FIELD")
    match = re.match(f"{fields}(?:,{fields})*,?", text)
    return match.end() if match else 0


def _find_header(lines: pl.DataFrame, g: grammar.Grammar, doc: Document) -> tuple[int, tuple[str, ...]] | None:
    """The first header line, or None; a line that starts like one but breaks is an error.
    Only quoted lines can be the header; the first few thousand are looked at first."""
    starts = "^" + g.terminal("HEADER_FIRST") + ","
    quoted = lines.filter(pl.col("quoted"))
    for part in (quoted.head(4096), quoted.slice(4096)):
        found = part.filter(pl.col("text").str.contains(starts))
        if found.height:
            line_no, text = found.select("line_no", "text").row(0)
            return line_no, header_names(text, doc.display, line_no)
    return None


# -- entry point -----------------------------------------------------------------------------

def parse_csv(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    g = grammar.load("ncu")
    lines = doc.lines().with_columns(quoted=pl.col("text").str.starts_with('"'))
    # Lines that are not quoted are few (status lines, program output): the grammar classifies them.
    plain = lines.filter(~pl.col("quoted")).with_columns(kind=g.classify(pl.col("text"), "csv_line"))
    try:
        header = _find_header(lines, g, doc)
    except ParseError as exc:
        result.error, header = exc, None
    has_results = header is not None and _read_body(lines, plain, header, g, doc, result)
    ncu_status.report(plain, result, has_results=has_results)
    result.tool_version = ncu_status.tool_version(lines)
    if not has_results and result.error is None:
        what = "no CSV header" if header is None else "a CSV header but no kernel rows"
        result.error = ParseError(f"ncu CSV holds {what}", path=doc.display)
    return result


def _read_body(lines: pl.DataFrame, plain: pl.DataFrame, header: tuple[int, tuple[str, ...]],
               g: grammar.Grammar, doc: Document, result: ParseResult) -> bool:
    line_no, names = header
    result.variant = variant_for(names)
    _program_output(plain.filter(pl.col("line_no") > line_no), result)
    try:
        table = _records(lines, line_no, len(names), g, doc, result)
    except ParseError as exc:
        result.error = exc
        return False
    reader = read_raw if is_raw(names) else read_details
    return reader(table, roles_of(names), result, doc)


# -- records ---------------------------------------------------------------------------------

def _records(lines: pl.DataFrame, header_line: int, ncols: int, g: grammar.Grammar,
             doc: Document, result: ParseResult) -> pl.DataFrame:
    """Every CSV record after the header, as strings `c0..cN` with `line_no`."""
    after = lines.filter(pl.col("line_no") > header_line)
    start = _line_offset(lines, header_line, doc.data)
    if start is not None:
        try:
            table = _read_block(doc.data[start:], ncols)
            if table.height == after.height:  # one row per line: nothing spans lines
                return table.with_columns(line_no=after["line_no"]).filter(after["quoted"])
        except pl.exceptions.PolarsError:
            pass
    return _records_line_by_line(after, ncols, g, doc, result)


def _line_offset(lines: pl.DataFrame, line_no: int, data: bytes) -> int | None:
    """Byte offset where line `line_no + 1` starts (lines end with one newline after textio),
    or None when the decoded lines are not the bytes (undecodable bytes were replaced)."""
    before = lines.head(line_no)["text"]
    start = int(before.str.len_bytes().sum()) + line_no
    last = before[-1].encode("utf-8") + b"\n"
    return start if data[start - len(last):start] == last else None


def _read_block(data: bytes, ncols: int) -> pl.DataFrame:
    # Rows longer than the header lose their extra fields, shorter ones get nulls (the rule
    # columns after a metric row's trailing comma); a blank line gives an all-null row.
    return pl.read_csv(data, has_header=False, quote_char='"',
                       schema={f"c{i}": pl.String for i in range(ncols)},
                       truncate_ragged_lines=True, missing_columns="insert",
                       extra_columns="ignore", raise_if_empty=False)


def _records_line_by_line(after: pl.DataFrame, ncols: int, g: grammar.Grammar, doc: Document,
                          result: ParseResult) -> pl.DataFrame:
    """The slow path: each quoted line checked by the grammar, broken ones explained (the
    file's last one fails the file, after the rows before it), the others read."""
    quoted = after.filter(pl.col("quoted"))
    ok = quoted.filter(pl.col("text").str.contains(g.regex("csv_record_line")))
    _broken(quoted.filter(~pl.col("text").str.contains(g.regex("csv_record_line"))), after, g, doc, result)
    if not ok.height:
        return pl.DataFrame(schema={**{f"c{i}": pl.String for i in range(ncols)}, "line_no": pl.Int64})
    data = ok.select(pl.col("text").str.join("\n")).item().encode("utf-8")
    try:
        table = _read_block(data, ncols)
    except pl.exceptions.PolarsError as exc:
        raise ParseError(f"ncu CSV: records could not be read ({str(exc).splitlines()[0]})",
                         path=doc.display, line=int(ok["line_no"][0])) from None
    return table.with_columns(line_no=ok["line_no"])


def _broken(broken: pl.DataFrame, after: pl.DataFrame, g: grammar.Grammar, doc: Document,
            result: ParseResult) -> None:
    if not broken.height:
        return
    last_line = after.filter(pl.col("text").str.strip_chars() != "")["line_no"].max()
    for line_no, text in broken.select("line_no", "text").head(20).iter_rows():
        error = _explain(g, text, doc.display, line_no)
        if line_no == last_line:
            result.error = error
        else:
            result.warn("ncu.unreadable-row", error.describe(), line=line_no)


def _explain(g: grammar.Grammar, text: str, path: str, line_no: int) -> ParseError:
    if len(text) <= ROW_LARK_MAX:
        try:
            g.parse(text, "csv_record_line", path=path, line=line_no)
        except ParseError as exc:
            return exc
    return ParseError("ncu CSV: broken record (a quoted field is not closed or is followed by "
                      "other than a comma)", path=path, line=line_no,
                      column=_csv_prefix_end(text) + 1, text=text)


def _program_output(plain_after: pl.DataFrame, result: ParseResult) -> None:
    """Unquoted lines among the records that are not ncu's: skipped, with one warning."""
    output = plain_after.filter(~pl.col("kind").is_in(["blank_line", "status_line"]))
    if output.height:
        first = output["line_no"][0]
        result.warn("ncu.program-output", f"{output.height} line(s) of program output among the "
                    f"CSV rows were skipped (first at line {first})", line=first)
