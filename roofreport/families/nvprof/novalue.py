"""Metric and event cells that hold no value: `<OVERFLOW>` (a counter that overflowed), `<NaN>`,
`n/a` (not collected on this device), `-`, or an empty cell (grammar terminal `NO_VALUE`, and
nothing). They are read as null and each one is reported (`nvprof.no-value`) at its line and
column (in a per-launch counter CSV, one warning per placeholder text with its count and first
cell: such a file may hold thousands), and the rest of the row, and of the file, is read as
usual.

Text tables are right-aligned to their column titles (every metrics/events table of the corpus
is), so a text row with an empty cell, which the row rule cannot split, is cut at the ends of
its header's titles (`cut_at_titles`).
"""

from __future__ import annotations

import re
from functools import cache

import polars as pl

from roofreport.families.common.textio import Document
from roofreport.families.nvprof.lines import TABLES, load
from roofreport.families.spec import ParseResult

_MAX_WARNED = 20
# metrics/events header title -> the row rule's field it heads
_TITLE_FIELDS = {"Invocations": "invocations", "Metric Name": "metric_name", "Event Name": "event_name",
                 "Metric Description": "metric_description", "Min": "value_min", "Max": "value_max",
                 "Avg": "value_avg", "Total": "value_total"}
_CELL = re.compile(r"\S+(?: \S+)*")   # a text cell: words apart by single spaces
_VALUE_FIELDS = ("value_min", "value_max", "value_avg", "value_total")


@cache
def _no_value_regex() -> str:
    return f"^(?:{load().terminal('NO_VALUE')})?$"


def is_no_value(cell: pl.Expr) -> pl.Expr:
    """The cell holds no value (null cells are no cells: a column the table does not have)."""
    return cell.str.strip_chars().str.contains(_no_value_regex())


# -- text rows with an empty cell ------------------------------------------------------------

def headers(lines: pl.DataFrame) -> dict[int, str]:
    """block -> the text of its metrics/events header line."""
    kinds = [k for k, t in TABLES.items() if t in ("metrics", "events")]
    return dict(lines.filter(pl.col("kind").is_in(kinds)).select("block", "text").iter_rows())


def cut_at_titles(bad: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    """Rows of `bad` (metrics/events table lines the row rule could not read, with `block`)
    cut at the right ends of their header's titles, the row rule's fields as strings (an
    empty cell ""); only rows that give an invocation count and a name, whose every cell ends
    at its title's end, and that stop short of the last title only when other lines follow
    (the log's last line may be cut at a cell's end)."""
    titles = headers(lines)
    last = lines.filter(pl.col("kind") != "blank_line")["line_no"].max()
    found = []
    for row in bad.iter_rows(named=True):
        header = titles.get(row["block"])
        cells = _cells_under(row["text"], header)
        if row["line_no"] == last and header and len(row["text"].rstrip()) < len(header.rstrip()):
            continue
        name = cells.get("metric_name") or cells.get("event_name")
        if cells and (cells.get("invocations") or "").isdigit() and name:
            found.append({"line_no": row["line_no"], **cells})
    if not found:
        return bad.clear()
    cut = pl.DataFrame(found, schema={"line_no": pl.Int64, **{f: pl.String for f in _TITLE_FIELDS.values()}})
    return bad.select(pl.exclude(*[c for c in cut.columns if c != "line_no"])).join(
        cut, on="line_no", maintain_order="left")


def _cells_under(text: str, header: str | None) -> dict[str, str | None]:
    """field -> the text between the previous title's end and this title's end, stripped;
    {} when the row runs past the last title or a cell does not end where its title does
    (right-aligned cells always do: a cut line does not)."""
    if header is None or len(text.rstrip()) > len(header.rstrip()):
        return {}
    cells, start = {}, 0
    for title in _CELL.finditer(header):
        cell = text[start:title.end()]
        if cell.strip() and (len(cell) < title.end() - start or cell[-1] == " "):
            return {}
        cells[_TITLE_FIELDS.get(title.group(), title.group())] = cell.strip()
        start = title.end()
    return cells


def fill_titled(rows: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    """`rows` with the value fields their header titles but the row left empty set to "" (an
    events row with no Total under a `Total` title matches the row rule without it)."""
    titled = {block: set(title_ends(text)) for block, text in headers(lines).items()}
    fills = []
    for field in _VALUE_FIELDS:
        blocks = [block for block, fields in titled.items() if field in fields]
        if field in rows.columns and blocks:
            fills.append(pl.when(pl.col("block").is_in(blocks)).then(pl.col(field).fill_null(""))
                         .otherwise(pl.col(field)).alias(field))
    return rows.with_columns(fills) if fills else rows


# -- where the cells are, and the warnings ---------------------------------------------------

def title_ends(header: str) -> dict[str, int]:
    """Row rule field -> where its title ends in the header (cells end there too)."""
    return {_TITLE_FIELDS.get(m.group(), m.group()): m.end() for m in _CELL.finditer(header)}


def csv_columns(text: str, sep: str) -> list[int]:
    """1-based column where each field of a CSV record starts (quotes respected)."""
    starts, quoted = [1], False
    for index, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif char == sep and not quoted:
            starts.append(index + 2)
    return starts


def report(cells: pl.DataFrame, doc: Document, result: ParseResult) -> None:
    """A warning per cell that holds no value (line_no, column, metric, stat, text), the first
    `_MAX_WARNED` of them, then how many more."""
    for line_no, column, metric, stat, text in cells.head(_MAX_WARNED).iter_rows():
        shown = text.strip() if text and text.strip() else "an empty cell"
        result.warn("nvprof.no-value", f"{doc.display}:{line_no}:{column}: {metric} {stat}: "
                    f"{shown} read as no value", line=line_no)
    if cells.height > _MAX_WARNED:
        result.warn("nvprof.no-value", f"{cells.height - _MAX_WARNED} more metric/event cells "
                    "hold no value (read as null)")


def report_placeholders(cells: pl.DataFrame, body: pl.DataFrame, cols: list[str], sep: str,
                        doc: Document, result: ParseResult) -> None:
    """One warning per placeholder text (`<OVERFLOW>`, `<NaN>`, `n/a`...) among CSV counter
    cells (`cells`: source_line, metric (a column of `cols`), value_text; `body`: their lines):
    how many cells hold it, and where the first is. Empty cells are no placeholders: quiet."""
    text = pl.col("value_text").fill_null("").str.strip_chars()
    found = cells.filter(is_no_value(text) & (text != "")).group_by(
        text.alias("text"), maintain_order=True).agg(pl.len().alias("count"), pl.col("source_line").first(),
                                                     pl.col("metric").first())
    lines = dict(body.filter(pl.col("line_no").is_in(found["source_line"].implode())).select(
        "line_no", "text").iter_rows())
    for placeholder, count, line_no, metric in found.iter_rows():
        starts = csv_columns(lines[line_no], sep)
        at = cols.index(metric)
        column = starts[at] if at < len(starts) else 1
        cells_word = "cell holds" if count == 1 else "cells hold"
        result.warn("nvprof.no-value", f"{count} counter {cells_word} {placeholder} (no value), read "
                    f"as null; first at {doc.display}:{line_no}:{column} ({metric})", line=line_no)


def text_cells(rows: pl.DataFrame, name_col: str, lines: pl.DataFrame) -> pl.DataFrame:
    """The cells of text metric/event rows (line_no, block, `name_col`, value fields; a column
    the table lacks is null) that hold no value: line_no, column, metric, stat, text. A cell's
    column is found from its header's title (right-aligned cells end where it ends)."""
    fields = [f for f in _VALUE_FIELDS if f in rows.columns]
    flagged = rows.filter(pl.any_horizontal([is_no_value(pl.col(f)).fill_null(False) for f in fields]))
    if not flagged.height:
        return _cells_frame([])
    ends = {block: title_ends(text) for block, text in headers(lines).items()}
    found = []
    for row in flagged.iter_rows(named=True):
        for field in fields:
            value = row[field]
            if value is not None and re.fullmatch(_no_value_regex(), value.strip()):
                end = ends.get(row["block"], {}).get(field, len(value))
                found.append((row["line_no"], max(1, end - max(len(value.strip()), 1) + 1), row[name_col],
                              field.removeprefix("value_"), value))
    return _cells_frame(found)


def csv_cells(frame: pl.DataFrame, body: pl.DataFrame, names: tuple[str, ...], sep: str,
              stats: dict[str, str]) -> pl.DataFrame:
    """The cells of CSV metric/event rows (`frame`: source_line, metric, the `stats` columns;
    `body`: their lines) that hold no value: line_no, column, metric, stat, text."""
    present = [c for c in stats if c in frame.columns]
    flagged = frame.filter(pl.any_horizontal([is_no_value(pl.col(c).fill_null("")) for c in present]))
    if not flagged.height:
        return _cells_frame([])
    texts = dict(body.filter(pl.col("line_no").is_in(flagged["source_line"].implode())).select(
        "line_no", "text").iter_rows())
    found = []
    for row in flagged.iter_rows(named=True):
        starts = csv_columns(texts[row["source_line"]], sep)
        for col in present:
            value = row[col] or ""
            if re.fullmatch(_no_value_regex(), value.strip()):
                at = names.index(stats[col])
                found.append((row["source_line"], starts[at] if at < len(starts) else 1, row["metric"], col, value))
    return _cells_frame(found)


def _cells_frame(found: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(found, schema={"line_no": pl.Int64, "column": pl.Int64, "metric": pl.String,
                                       "stat": pl.String, "text": pl.String}, orient="row")
