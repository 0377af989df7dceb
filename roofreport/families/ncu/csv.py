"""Nsight Compute CSV exports: the details page (`--csv`, one metric per row, 6 to 21 columns)
and the raw page (`--page raw --csv`, one launch per row, every metric a column, units in the
second row). This module finds the header and reads the records; `csv_tables.py` says what
the columns mean and fills the tables.

A details page of 400 MB is a million rows repeating a launch's columns on every metric, so the
file is never held, as bytes or as lines: one streaming pass over its lines (`ScannedLines.scan`)
keeps only the lines that are not records (ncu status lines, program output, blank lines: few,
classified by the grammar's line rules), the header candidates, the lines naming Nsight Compute
(its version) and every line's length; a second streaming pass reads the records after the
header with polars' CSV reader and keeps only the columns every row needs, as Categorical (a
name repeated on a million rows is stored once). A launch's own columns (kernel name, grid,
device...) are read again from its first row only, found by its byte offset (`ScannedLines.records`).

The header line is parsed by the grammar (`csv_header_line` in `grammars/ncu.lark`, once per
distinct header). When polars cannot read the block (a broken quote, a cut line, a field
spanning lines), every line after the header is checked against the grammar's
`csv_record_line`: the broken ones are explained (line, column) and the rest read.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common.textio import Document
from roofreport.families.ncu import status as ncu_status
from roofreport.families.ncu.csv_tables import (
    is_raw,
    read_details,
    read_raw,
    roles_of,
    row_columns,
    variant_for,
)
from roofreport.families.spec import ParseResult

FAMILY = "ncu"

# Kept as text by the line scan for `status.tool_version`: it reports the first line its
# `tool_version_hint` rule matches (`[Nn]sight[- ]?[Cc]ompute/2024.3...`), which holds this
# literal; a literal test costs a third of the case-blind regex over a 400 MB file.
_VERSION_LINE = "sight"

__all__ = ["header_names_quick", "parse_csv", "variant_for"]


# -- header ----------------------------------------------------------------------------------

def header_names_quick(line: str) -> list[str]:
    """Column names of a header line, for sniffing (the grammar's CSV_NAME terminal)."""
    syntax = grammar.load("ncu")
    return [name[1:-1] for name in re.findall(syntax.terminal("CSV_NAME"), line)]


@lru_cache(maxsize=64)
def header_names(text: str, path: str = "", line: int | None = None) -> tuple[str, ...]:
    """Column names of a header line, parsed by Lark (once per distinct header). Lark's Earley
    parser is super-linear, so a header longer than it parses (raw pages reach ~40 KB) is
    checked with the rule's compiled regex instead."""
    syntax = grammar.load("ncu")
    if len(text) > grammar.MAX_LARK_CHARS:
        if not re.match(syntax.regex("csv_header_line"), text):
            raise ParseError("ncu CSV: header line is not a list of quoted column names",
                             path=path, line=line, column=_csv_prefix_end(text) + 1, text=text)
        return tuple(header_names_quick(text))
    tree = syntax.parse(text, "csv_header_line", path=path, line=line)
    tokens = tree.scan_values(lambda v: getattr(v, "type", "") in ("HEADER_FIRST", "CSV_NAME"))
    return tuple(str(t)[1:-1] for t in tokens)


def _csv_prefix_end(text: str) -> int:
    """Length of the longest prefix of `text` made of whole quoted CSV fields."""
    fields = grammar.load("ncu").terminal("CSV_FIELD")
    match = re.match(f"{fields}(?:,{fields})*,?", text)
    return match.end() if match else 0


def _header_start(syntax: grammar.Grammar) -> str:
    return "^" + syntax.terminal("HEADER_FIRST") + ","


def _find_header(lines: ScannedLines, syntax: grammar.Grammar) -> tuple[int, tuple[str, ...]] | None:
    """The first header line, or None; a line that starts like one but breaks is an error.
    Only quoted lines can be the header."""
    found = lines.kept.filter(pl.col("quoted") & pl.col("text").str.contains(_header_start(syntax)))
    if not found.height:
        return None
    line_no, text = found.select("line_no", "text").row(0)
    return line_no, header_names(text, lines.doc.display, line_no)


# -- lines -----------------------------------------------------------------------------------

@dataclass
class ScannedLines:
    """What one streaming pass over a document keeps: `kept` (line_no, text, quoted) holds the
    lines that are not quoted, the header candidates and the lines naming Nsight Compute;
    `lengths` the bytes of every line (without its break), so any line can be read again."""

    doc: Document
    kept: pl.DataFrame
    lengths: pl.Series

    @classmethod
    def scan(cls, doc: Document, syntax: grammar.Grammar) -> ScannedLines:
        text = pl.col("text")
        keep = (~text.str.starts_with('"') | text.str.contains(_header_start(syntax))
                | text.str.contains(_VERSION_LINE, literal=True))
        frame = doc.scan_lines().select(
            "line_no", text.str.len_bytes().alias("length"), pl.when(keep).then(text).alias("text"),
        ).collect(engine="streaming")
        kept = frame.filter(pl.col("text").is_not_null()).select(
            "line_no", "text", quoted=pl.col("text").str.starts_with('"'))
        return cls(doc=doc, kept=kept, lengths=frame["length"])

    @property
    def display(self) -> str:
        return self.doc.display

    @property
    def count(self) -> int:
        return self.lengths.len()

    def plain(self, syntax: grammar.Grammar) -> pl.DataFrame:
        """The lines that are not quoted, classified by the grammar's `csv_line` rules."""
        return self.kept.filter(~pl.col("quoted")).with_columns(
            kind=syntax.classify(pl.col("text"), "csv_line"))

    def texts(self, line_nos: list[int]) -> list[str]:
        """The text of the given lines (1-based)."""
        return [raw.decode("utf-8", errors="replace") for raw in self._bytes(line_nos)]

    def records(self, line_nos: list[int], ncols: int) -> pl.DataFrame:
        """The given record lines read as CSV (`c0..cN` strings and `line_no`, in that order)."""
        if not line_nos:
            return _read_block(b"", ncols).with_columns(line_no=pl.lit(None, pl.Int64))
        table = _read_block(b"\n".join(self._bytes(line_nos)) + b"\n", ncols)
        return table.with_columns(line_no=pl.Series(line_nos, dtype=pl.Int64))

    def _bytes(self, line_nos: list[int]) -> list[bytes]:
        index = pl.Series(line_nos, dtype=pl.Int64) - 1
        size = self.lengths.cast(pl.Int64)
        starts = ((size + 1).cum_sum() - size - 1).gather(index).to_list()
        ends = [s + n for s, n in zip(starts, size.gather(index).to_list())]
        return self.doc.byte_ranges(list(zip(starts, ends)))


# -- entry point -----------------------------------------------------------------------------

def parse_csv(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    syntax = grammar.load("ncu")
    lines = ScannedLines.scan(doc, syntax)
    # Lines that are not quoted are few (status lines, program output):
    # the grammar classifies them.
    plain = lines.plain(syntax)
    try:
        header = _find_header(lines, syntax)
    except ParseError as exc:
        result.error, header = exc, None
    has_results = header is not None and _read_body(lines, plain, header, syntax, result)
    ncu_status.report(plain, result, has_results=has_results)
    result.tool_version = ncu_status.tool_version(lines.kept)
    if not has_results and result.error is None:
        what = "no CSV header" if header is None else "a CSV header but no kernel rows"
        result.error = ParseError(f"ncu CSV holds {what}", path=doc.display)
    return result


def _read_body(lines: ScannedLines, plain: pl.DataFrame, header: tuple[int, tuple[str, ...]],
               syntax: grammar.Grammar, result: ParseResult) -> bool:
    line_no, names = header
    result.variant = variant_for(names)
    _program_output(plain.filter(pl.col("line_no") > line_no), result)
    roles = roles_of(names)
    try:
        table = _records(lines, line_no, len(names), row_columns(roles), syntax, result)
    except ParseError as exc:
        result.error = exc
        return False
    reader = read_raw if is_raw(names) else read_details
    return reader(table, roles, result, lines)


# -- records ---------------------------------------------------------------------------------

def _records(lines: ScannedLines, header_line: int, ncols: int, columns: list[int], syntax: grammar.Grammar,
             result: ParseResult) -> pl.DataFrame:
    """The CSV records after the header: positional columns `c<i>` for the given `columns`
    (Categorical) and `line_no`."""
    try:
        table = _read_rows(lines.doc.source(), ncols, columns, skip_lines=header_line)
        if table.height == lines.count - header_line:  # one row per line: nothing spans lines
            return _numbered(table, header_line, lines)
    except pl.exceptions.PolarsError:
        pass
    after = lines.doc.lines().filter(pl.col("line_no") > header_line) \
        .with_columns(quoted=pl.col("text").str.starts_with('"'))
    table = _records_line_by_line(after, ncols, syntax, lines.doc, result)
    return table.select(*[pl.col(f"c{i}").cast(pl.Categorical) for i in columns], "line_no")


def _read_rows(source: Path | io.BytesIO, ncols: int, columns: list[int],
               skip_lines: int) -> pl.DataFrame:
    """`_read_block` of a whole file in one streaming pass, keeping only `columns` (as
    Categorical, batch by batch). The other columns are still read as strings and dropped:
    that is what makes polars refuse a damaged field in any column (a quote closed before
    other than a comma, one never closed) as the whole read did; a column left out of the
    read is not checked at all, and Categorical reading lets both damages through."""
    keep = [pl.col(f"c{i}").cast(pl.Categorical) for i in columns]
    others = [pl.col(f"c{i}").is_null() for i in range(ncols) if i not in columns]
    checked = [pl.all_horizontal(others).alias("checked")] if others else []
    frame = pl.scan_csv(source, skip_lines=skip_lines, **_csv_options(ncols)).select(*keep, *checked)
    return frame.collect(engine="streaming").drop("checked", strict=False)


def _numbered(table: pl.DataFrame, header_line: int, lines: ScannedLines) -> pl.DataFrame:
    """Rows numbered by line, without the lines that are not records (not quoted)."""
    table = table.with_columns(line_no=pl.int_range(pl.len(), dtype=pl.Int64) + header_line + 1)
    plain = lines.kept.filter(~pl.col("quoted") & (pl.col("line_no") > header_line))["line_no"]
    return table.filter(~pl.col("line_no").is_in(plain.implode())) if plain.len() else table


def _csv_options(ncols: int) -> dict:
    # Rows longer than the header lose their extra fields, shorter ones get nulls (the rule
    # columns after a metric row's trailing comma); a blank line gives an all-null row.
    return dict(has_header=False, quote_char='"', schema={f"c{i}": pl.String for i in range(ncols)},
                truncate_ragged_lines=True, missing_columns="insert", extra_columns="ignore",
                raise_if_empty=False)


def _read_block(data: bytes, ncols: int) -> pl.DataFrame:
    """The records in `data`, as strings `c0..cN`."""
    return pl.read_csv(data, **_csv_options(ncols))


def _records_line_by_line(after: pl.DataFrame, ncols: int, syntax: grammar.Grammar, doc: Document,
                          result: ParseResult) -> pl.DataFrame:
    """The slow path: each quoted line checked by the grammar, broken ones explained (the
    file's last one fails the file, after the rows before it), the others read."""
    quoted = after.filter(pl.col("quoted"))
    ok = quoted.filter(pl.col("text").str.contains(syntax.regex("csv_record_line")))
    broken = quoted.filter(~pl.col("text").str.contains(syntax.regex("csv_record_line")))
    _broken(broken, after, syntax, doc, result)
    if not ok.height:
        return pl.DataFrame(schema={**{f"c{i}": pl.String for i in range(ncols)}, "line_no": pl.Int64})
    data = ok.select(pl.col("text").str.join("\n")).item().encode("utf-8")
    try:
        table = _read_block(data, ncols)
    except pl.exceptions.PolarsError as exc:
        raise ParseError(f"ncu CSV: records could not be read ({str(exc).splitlines()[0]})",
                         path=doc.display, line=int(ok["line_no"][0])) from None
    return table.with_columns(line_no=ok["line_no"])


def _broken(broken: pl.DataFrame, after: pl.DataFrame, syntax: grammar.Grammar, doc: Document,
            result: ParseResult) -> None:
    if not broken.height:
        return
    last_line = after.filter(pl.col("text").str.strip_chars() != "")["line_no"].max()
    for line_no, text in broken.select("line_no", "text").head(20).iter_rows():
        error = _explain(syntax, text, doc.display, line_no)
        if line_no == last_line:
            result.error = error
        else:
            result.warn("ncu.unreadable-row", error.describe(), line=line_no)


def _explain(syntax: grammar.Grammar, text: str, path: str, line_no: int) -> ParseError:
    """Lark's account of a broken record, or (a long line) where its quoted fields stop."""
    return syntax.explain(text, "csv_record_line", path, line_no, otherwise=ParseError(
        "ncu CSV: broken record (a quoted field is not closed or is followed by other than a "
        "comma)", path=path, line=line_no, column=_csv_prefix_end(text) + 1, text=text))


def _program_output(plain_after: pl.DataFrame, result: ParseResult) -> None:
    """Unquoted lines among the records that are not ncu's: skipped, with one warning."""
    output = plain_after.filter(~pl.col("kind").is_in(["blank_line", "status_line"]))
    if output.height:
        first = output["line_no"][0]
        result.warn("ncu.program-output", f"{output.height} line(s) of program output among the "
                    f"CSV rows were skipped (first at line {first})", line=first)
