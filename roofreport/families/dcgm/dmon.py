"""`dcgmi dmon` tables -> raw samples.

dcgmi prints a header pair, then one row per entity per sample, and the header pair again every
15 samples. The header is parsed by Lark once per distinct text; its titles are the fields'
short names (`fields`), in the order `-e` or the field group gave them.

Rows are fixed-width, and a cell may be blank (DCGM 4.x leaves a field without a value empty)
or text with spaces (a GPU name), so splitting on whitespace is not enough:

* DCGM >= 2.4 left-aligns every value at the column of its title and cuts it to the column's
  width: each cell is sliced out at its title's position (shifted right when a long entity,
  `GPU 0 LINK 12`, overflowed the entity column);
* DCGM <= 2.3 right-aligns values under the end of their title and, when one overflows, puts a
  space before it and shifts the rest: the cells are the whitespace-separated words when there
  are as many as titles, else the slices between the titles' ends.

Only `GPU n` rows are GPU samples; MIG instances (`GPU-I`, `GPU-CI`), NVLinks, switches and
CPUs are counted and reported (`dcgm.entity-skipped`). `N/A` and blank cells are null, DCGM's
blank sentinels too. dmon prints no time: a row's time is its sample number times the `-d`
period (`read`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common import headers as headers_once, series
from roofreport.families.common.textio import Document
from roofreport.families.dcgm import fields as dcgm_fields
from roofreport.families.spec import ParseResult


@dataclass(frozen=True)
class Layout:
    """Where the columns of one header are: titles, their start and end positions."""

    titles: tuple[str, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    right_aligned: bool       # DCGM <= 2.3
    entity_width: int         # characters of the `#Entity` / `# Entity` title


@lru_cache(maxsize=64)
def layout(header: str) -> Layout:
    """The columns of a `#Entity ...` header line (Lark parses each distinct header once)."""
    tokens = grammar.load("dcgm").tokens(header.rstrip(), "dmon_header_line")
    title = next(t for t in tokens if t.type == "ENTITY_TITLE")
    found = [(m.group(0), m.start(), m.end()) for m in re.finditer(r"\S+", header[len(title):])]
    offset = len(title)
    return Layout(titles=tuple(name for name, _, _ in found),
                  starts=tuple(offset + start for _, start, _ in found),
                  ends=tuple(offset + end for _, _, end in found),
                  right_aligned=title.startswith("# "), entity_width=len(title))


def read(frame: pl.DataFrame, doc: Document, result: ParseResult) -> pl.DataFrame:
    """Raw samples of every GPU row under a readable header (empty frame when none)."""
    syntax = grammar.load("dcgm")
    kind = pl.col("kind")
    frame = frame.with_columns(header_line=pl.when(kind == "dmon_header_line")
                               .then(pl.col("line_no")).forward_fill())
    layouts = _layouts(frame, doc, result)
    _warn_strays(frame, doc, result)
    rows = frame.filter(kind == "dmon_row_line").select("line_no", "text", "header_line",
                                                        *_entity(pl.col("text"), syntax))
    orphans = rows.filter(pl.col("header_line").is_null())
    if orphans.height:
        result.warn("dcgm.no-header", f"{orphans.height} dmon rows come before any `#Entity` "
                    "header: their columns are unknown, they are not read", line=orphans["line_no"][0])
    rows = _gpu_rows(rows.filter(pl.col("header_line").is_not_null()), result)
    headers = dict(frame.filter(kind == "dmon_header_line").select("line_no", "text").iter_rows())
    rows = rows.with_columns(header_text=pl.col("header_line").replace_strict(
        headers, return_dtype=pl.String))
    parts = [_read_group(rows.filter(pl.col("header_text") == text), columns, doc, result)
             for text, columns in layouts.items()]
    parts = [p for p in parts if p.height]
    if not parts:
        return pl.DataFrame()
    out = pl.concat(parts, how="diagonal_relaxed").sort("source_line")
    return out.with_columns(sample_no=pl.int_range(pl.len()).over("gpu_index").cast(pl.Int64))


def _layouts(frame: pl.DataFrame, doc: Document, result: ParseResult) -> dict[str, Layout]:
    """Distinct header text -> its layout; a header Lark refuses is reported, its rows left out."""
    def refused(exc: ParseError, line_no: int) -> None:
        result.warn("dcgm.bad-header", f"dmon header unreadable: {exc.message}", line=line_no)

    found = headers_once.read_each(frame.filter(pl.col("kind") == "dmon_header_line"), layout, refused)
    for _, line_no, columns in found:
        unknown = [title for title in columns.titles if dcgm_fields.lookup(title) is None]
        if unknown:
            result.warn("dcgm.unknown-field", f"dmon column(s) {', '.join(unknown)} are no DCGM "
                        "field roofreport knows: not read", line=line_no)
    return {text: columns for text, _, columns in found}


def _warn_strays(frame: pl.DataFrame, doc: Document, result: ParseResult) -> None:
    """Lines inside the dmon output that are no kind of dmon line (damage, interleaved output)."""
    strays = frame.filter(pl.col("header_line").is_not_null() & (pl.col("kind") == "other"))
    series.warn_unparsed(result, "dcgm.bad-row", grammar.load("dcgm"), "dmon_row_line",
                         list(strays.select("line_no", "text").iter_rows()), doc.display)


def _entity(text: pl.Expr, syntax: grammar.Grammar) -> list[pl.Expr]:
    """The entity and id a row starts with, from the grammar's `ENTITY` and `ENTITY_ID`: a
    match anchored at the start that stops after them (the whole `dmon_row_line` regex with its
    captures costs ten times more on a long table)."""
    parts = text.str.extract_groups(f"^[ \\t]*({syntax.terminal('ENTITY')}) ({syntax.terminal('ENTITY_ID')})")
    return [parts.struct.field("1").alias("entity"), parts.struct.field("2").alias("entity_id")]


def _gpu_rows(rows: pl.DataFrame, result: ParseResult) -> pl.DataFrame:
    other = rows.filter(pl.col("entity") != "GPU")
    if other.height:
        kinds = ", ".join(sorted(set(other["entity"].to_list())))
        result.warn("dcgm.entity-skipped", f"{other.height} rows of other entities ({kinds}) are "
                    "not whole GPUs: not read into samples", line=other["line_no"][0])
    return rows.filter(pl.col("entity") == "GPU").with_columns(
        gpu_index=pl.col("entity_id").cast(pl.Int64),
        # where the cells start: after the indent, the entity and its id
        _cells_at=pl.col("text").str.len_chars() - pl.col("text").str.strip_chars_start().str.len_chars()
        + pl.col("entity").str.len_chars() + 1 + pl.col("entity_id").str.len_chars())


# -- one header's rows -----------------------------------------------------------------------

def _read_group(rows: pl.DataFrame, columns: Layout, doc: Document, result: ParseResult) -> pl.DataFrame:
    if not rows.height:
        return pl.DataFrame()
    cells = rows.select("line_no", "text", "gpu_index", "_cells_at",
                        *[_cell(columns, i).alias(f"_c{i}") for i in range(len(columns.titles))])
    number_rx = f"^(?:{grammar.load('dcgm').terminal('DMON_NUMBER')})$"
    targets: dict[str, list[tuple[int, pl.Expr]]] = {}
    checks = []
    for index, title in enumerate(columns.titles):
        field = dcgm_fields.lookup(title)
        if field is None or field.column is None:
            continue
        cell = pl.col(f"_c{index}")
        missing = cell.is_null() | cell.is_in(["", "N/A"])
        priority = dcgm_fields.FIELDS.index(field)
        if field.column == "gpu_name":
            targets.setdefault("gpu_name", []).append((priority, pl.when(~missing).then(cell)))
            continue
        number = pl.when(cell.str.contains(number_rx)).then(cell.cast(pl.Float64, strict=False))
        value = pl.when(number < dcgm_fields.BLANK_AT_OR_ABOVE).then(number * field.factor)
        if field.column == "_pstate":
            targets.setdefault("pstate", []).append((priority, pl.format("P{}", value.cast(pl.Int64))))
        elif not field.column.startswith("_"):
            targets.setdefault(field.column, []).append((priority, value))
        checks.append((index, title, (number.is_null() & ~missing)))
    exprs = [pl.coalesce([e for _, e in sorted(found, key=lambda p: p[0])]).alias(column)
             for column, found in targets.items()]
    out = cells.select(pl.col("line_no").alias("source_line"), "gpu_index", *exprs,
                       *[bad.alias(f"_bad{i}") for i, _, bad in checks])
    for index, title, _ in checks:
        _warn_bad_values(out, cells, index, title, doc, result)
    return out.drop([c for c in out.columns if c.startswith("_bad")])


def _cell(columns: Layout, index: int) -> pl.Expr:
    """Cell `index` of each row, stripped (null where the row is too short to have it)."""
    text, cells_at = pl.col("text"), pl.col("_cells_at")
    last = index == len(columns.titles) - 1
    if columns.right_aligned:
        # `    GPU 0`: the entity column is as wide as `# Entity`, its id printed after it.
        shift = (cells_at - columns.entity_width).clip(lower_bound=0)
        start = cells_at if index == 0 else shift + columns.ends[index - 1]
        length = None if last else shift + columns.ends[index] - start
        sliced = text.str.slice(start, length)
        return pl.coalesce(_word(columns, index), sliced).str.strip_chars()
    shift = (cells_at - columns.starts[0]).clip(lower_bound=0)
    length = None if last else columns.starts[index + 1] - columns.starts[index]
    return text.str.slice(shift + columns.starts[index], length).str.strip_chars()


def _word(columns: Layout, index: int) -> pl.Expr:
    """DCGM <= 2.3: cell `index` as the whitespace-separated words of the row read it, when they can
    (as many words as titles; or more, all the extra ones in the one column holding a name,
    `Tesla K80`): else null, and the caller slices by position."""
    words = pl.col("text").str.slice(pl.col("_cells_at")).str.extract_all(r"\S+")
    count, titles = words.list.len(), len(columns.titles)
    exact = pl.when(count == titles).then(words.list.get(index, null_on_oob=True))
    names = [k for k, t in enumerate(columns.titles)
             if (field := dcgm_fields.lookup(t)) is not None and field.column == "gpu_name"]
    if len(names) != 1:
        return exact
    extra = count - titles
    if index < names[0]:
        spaced = words.list.get(index, null_on_oob=True)
    elif index == names[0]:
        spaced = words.list.slice(index, extra + 1).list.join(" ")
    else:
        spaced = words.list.get(extra + index, null_on_oob=True)
    return pl.coalesce(exact, pl.when(count > titles).then(spaced))


def _warn_bad_values(out: pl.DataFrame, cells: pl.DataFrame, index: int, title: str, doc: Document,
                     result: ParseResult) -> None:
    bad = out.filter(pl.col(f"_bad{index}"))
    if not bad.height:
        return
    first = bad["source_line"][0]
    text, value, cells_at = cells.filter(pl.col("line_no") == first).select(
        "text", f"_c{index}", "_cells_at").row(0)
    column = text.find(value, cells_at) + 1 if value else cells_at + 1
    err = ParseError(f"dcgmi dmon: {bad.height} value(s) of {title} are neither a number nor N/A "
                     "(first here); they are null", path=doc.display, line=first, column=column, text=text)
    result.warn("dcgm.bad-value", err.describe(), line=first)
