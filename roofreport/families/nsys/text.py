"""nsys console tables: `nsys profile --stats=true` output and `nsys stats --format column`,
every layout generation (2020 `(nanoseconds)` tables to 2026 ` ** ... (cuda_gpu_kern_sum):`).

The syntax lives in `grammars/nsys.lark`. All lines are classified at once; a table is a
header line directly above a dash rule, and its rows run to the next blank line. Tables are
recognised by their column names (titles are unreliable: MPI ranks writing to one stdout
interleave titles and tables), the cells are cut at the rule's dash spans (names and
`GridXYZ` cells hold spaces; numbers may carry thousands separators), and the same typing
and emitters as the CSV reports write the shared tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common.textio import Document, Head
from roofreport.families.nsys.columns import (
    BY_ID,
    Column,
    Report,
    fields_of,
    hint_from_title,
    recognise,
)
from roofreport.families.nsys.tables import (
    ELLIPSIS,
    MAX_PROBLEMS,
    Cells,
    emit,
    problem,
    truncated_values,
    typed,
)
from roofreport.families.spec import ParseResult

FAMILY = "nsys"
_HINT_KINDS = ("processing_line", "step_line", "title_line")
_NOTICE_CODES = {"SKIPPED": "nsys.skipped", "WARNING": "nsys.warning", "ERROR": "nsys.error"}


# -- sniffing --------------------------------------------------------------------------------

# What a head must hold for `sniff_text` to claim it, read off `grammars/nsys.lark`: a table's
# rule (`DASHES`: runs of dashes split by spaces, under a header), a report's processing, step
# or title line, or a classic title ("... Statistics"). A head with none of them is no nsys
# console output, and is not classified line by line (most files of a campaign are asked).
_NEEDED = re.compile(r"- +-|Processing \[|\] Executing '| \*\* |Statistics")


def sniff_text(head: Head) -> str | None:
    if head.binary or not _NEEDED.search(head.text):
        return None
    lines = _context(pl.DataFrame({"text": head.lines}, schema={"text": pl.String})
                     .with_row_index("line_no", offset=1).with_columns(pl.col("line_no").cast(pl.Int64)))
    reports = [t.report for t in _layouts(lines) if t.report is not None]
    ids = lines.filter(pl.col("kind").is_in(_HINT_KINDS))["hint"].drop_nulls().to_list()
    nsys_ids = [i for i in ids if i in BY_ID]
    if not reports and not nsys_ids and not _classic_titles(lines):
        return None
    return _variant(lines, reports, nsys_ids)


def _classic_titles(lines: pl.DataFrame) -> bool:
    titles = lines.filter(pl.col("kind") == "classic_title_line")["text"].to_list()
    return any(hint_from_title(t) for t in titles)


def _variant(lines: pl.DataFrame, reports: list[Report], ids: list[str]) -> str:
    headers = " ".join(lines.filter(pl.col("is_header"))["text"].to_list())
    if any(r.id == "rulesync" for r in reports) or (ids and all(BY_ID[i].id == "rulesync" for i in ids)):
        return "expert rules console"
    if reports and all(r.id == "gputrace" for r in reports):
        return "gputrace console"
    if any(i != BY_ID[i].id and BY_ID[i].id != "rulesync" for i in ids):
        return "stats console 2023+"
    if "Time (%)" in headers:
        return "stats console 2022"
    if "Total Time (ns)" in headers:
        return "stats console 2020-2021"
    if "Total Time" in headers:
        return "stats console classic (nanoseconds)"
    return "stats console"


# -- parsing ---------------------------------------------------------------------------------

def parse_text(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    lines = _context(doc.lines())
    result.tool_version = _tool_version(lines)
    rows = lines.filter(pl.col("is_row")).partition_by("table", as_dict=True)
    for table in _layouts(lines):
        if table.report is None:
            _unknown(table, doc, result)
            continue
        empty = lines.clear()
        _read_table(table, rows.get((table.table_id,), empty), doc, result)
    _notices(lines, result)
    if not result.rows() and result.error is None:
        result.error = _nothing_found(lines, doc)
    return result


def _context(lines: pl.DataFrame) -> pl.DataFrame:
    """Per line: its kind, whether it heads a table, the table it belongs to, whether it is
    one of that table's rows, and the report the nearest title/step/processing line named
    (`hint`) with that report's options (`args`)."""
    lines = _classified(lines)
    header_line = pl.when(pl.col("is_header")).then(pl.col("line_no"))
    lines = lines.with_columns(
        table=pl.col("is_header").cum_sum().cast(pl.Int64),
        header_line=header_line.forward_fill(),
        header_block=pl.when(pl.col("is_header")).then(pl.col("block")).forward_fill(),
        hint=pl.col("hint").forward_fill(), args=pl.col("args").forward_fill())
    # A row: below its table's dash rule, in the same block of non-blank lines, not nsys talk.
    is_row = (pl.col("table") > 0) & (pl.col("block") == pl.col("header_block")) \
        & (pl.col("line_no") > pl.col("header_line") + 1) & (pl.col("kind") == "other") \
        & ~pl.col("is_header")
    return lines.with_columns(is_row=is_row.fill_null(False))


def _classified(lines: pl.DataFrame) -> pl.DataFrame:
    syntax = grammar.load("nsys")
    kind = pl.col("kind")
    lines = lines.with_columns(kind=syntax.classify_lines(lines["text"], "line"))
    report_id = pl.coalesce(*[pl.col("text").str.extract(syntax.regex(k), _group(k, "report_id"))
                              for k in _HINT_KINDS])
    args = pl.col("text").str.extract(syntax.regex("processing_line"),
                                      _group("processing_line", "report_args"))
    return lines.with_columns(
        is_header=((kind == "other") & (kind.shift(-1) == "rule_line")).fill_null(False),
        block=(kind == "blank_line").cum_sum(),
        hint=pl.when(kind.is_in(_HINT_KINDS)).then(report_id)
        .when(kind == "classic_title_line").then(pl.col("text").str.strip_chars()).otherwise(None),
        # Report options (`nvtx-name:base`) hold until the next report starts; the title
        # line printed under a `Processing` line belongs to the same report.
        args=pl.when(kind.is_in(["processing_line", "step_line"])).then(args.fill_null("")).otherwise(None),
    )


@lru_cache(maxsize=64)
def _group(rule: str, field: str) -> int:
    """Index of a field's capture group in the regex of `rule`."""
    return grammar.load("nsys").pattern(rule).groupindex[field]


@dataclass(frozen=True)
class Table:
    """One header + rule pair: where it is, its column spans and names, and its report."""

    table_id: int
    line_no: int
    spans: tuple[tuple[int, int], ...]
    names: tuple[str, ...]
    cols: list[Column | None]
    report: Report | None
    args: str


def _layouts(lines: pl.DataFrame) -> list[Table]:
    heads = lines.with_columns(rule=pl.col("text").shift(-1)).filter(pl.col("is_header"))
    tables = []
    for table_id, line_no, header, rule, hint, args in heads.select(
            "table", "line_no", "text", "rule", "hint", "args").iter_rows():
        layout = _layout(header, rule)
        if layout is None:
            continue
        spans, names = layout
        cols, _ = fields_of(names)
        report = recognise(cols, _hint(hint))
        tables.append(Table(table_id, line_no, spans, names, cols, report, args or ""))
    return tables


def _hint(hint: str | None) -> str | None:
    if hint is None:
        return None
    return hint if hint in BY_ID else hint_from_title(hint)


@lru_cache(maxsize=1024)
def _layout(header: str, rule: str) -> tuple[tuple[tuple[int, int], ...], tuple[str, ...]] | None:
    """Column spans of a rule line and the header's names cut at them (None: not a table)."""
    syntax = grammar.load("nsys")
    try:
        dashes = next(syntax.parse(rule, "rule_line").scan_values(
            lambda v: getattr(v, "type", "") == "DASHES"))
        tokens = [str(t) for t in syntax.parse(header, "header_line").scan_values(
            lambda v: getattr(v, "type", "") == "COLUMN_NAME")]
    except ParseError:  # program output above a line of dashes, or a line too long to be one
        return None
    base = dashes.column - 1
    spans = tuple((base + m.start(), base + m.end()) for m in re.finditer(r"-+", str(dashes)))
    names = [header[a:b].strip() for a, b in spans[:-1]] + [header[spans[-1][0]:].strip()]
    # The names Lark reads must be the ones the dash spans cut: else it is not an nsys table.
    return (spans, tuple(names)) if names == tokens else None


# -- one table -------------------------------------------------------------------------------

def _read_table(table: Table, rows: pl.DataFrame, doc: Document, result: ParseResult) -> None:
    rows = _drop_unfit(table, rows, doc, result)
    keep = [(i, c) for i, c in enumerate(table.cols) if c is not None]
    cells = Cells(table.report, [c for _, c in keep], rows.select(
        pl.col("line_no").alias("source_line"), *[_cell(table, i).alias(c.field) for i, c in keep]),
        padded=True)
    values, bad = typed(cells)
    _report_values(table, bad, doc, result)
    _warn_truncated(table, cells, values, result)
    emit(table.report, values, result, {"nvtx_prefix": "nvtx-name" in table.args})


def _cell(table: Table, index: int) -> pl.Expr:
    start, end = table.spans[index]
    text = pl.col("text")
    cut = text.str.slice(start) if index == len(table.spans) - 1 else text.str.slice(start, end - start)
    return cut.str.strip_chars()


def _drop_unfit(table: Table, rows: pl.DataFrame, doc: Document, result: ParseResult) -> pl.DataFrame:
    """Rows whose text spills into a gap between columns, or that stop before the last
    column (a log cut mid-line), are reported and left out."""
    text = pl.col("text")
    gaps = [text.str.slice(a_end, b_start - a_end).str.strip_chars().fill_null("") == ""
            for (_, a_end), (b_start, _) in zip(table.spans, table.spans[1:])]
    reaches_last = text.str.strip_chars_end().str.len_chars() > table.spans[-1][0]
    checked = rows.with_columns(fits=pl.all_horizontal(*gaps, reaches_last))
    bad = checked.filter(~pl.col("fits"))
    for line_no, line in bad.select("line_no", "text").head(MAX_PROBLEMS).iter_rows():
        message, column = _misfit(table, line)
        err = ParseError(message, path=doc.display, line=line_no, column=column, text=line)
        problem(result, "nsys.bad-row", err)
    if bad.height > MAX_PROBLEMS:
        result.warn("nsys.bad-row", f"{bad.height - MAX_PROBLEMS} more rows do not fit their table")
    return checked.filter(pl.col("fits"))


def _misfit(table: Table, line: str) -> tuple[str, int]:
    """What is wrong with a row, and the 1-based column where it shows."""
    for (_, a_end), (b_start, _) in zip(table.spans, table.spans[1:]):
        gap = line[a_end:b_start]
        if gap.strip():
            return ("table row does not fit the columns of its dash rule",
                    a_end + len(gap) - len(gap.lstrip()) + 1)
    return (f"table row stops before its last column ({table.names[-1]}): the log was cut",
            len(line.rstrip()) + 1)



def _report_values(table: Table, bad: pl.DataFrame, doc: Document, result: ParseResult) -> None:
    texts = doc.lines()["text"]
    index = {c.field: i for i, c in enumerate(table.cols) if c is not None}
    for line_no, field, cell in bad.head(MAX_PROBLEMS).iter_rows():
        line = texts[line_no - 1]
        start = table.spans[index[field]][0]
        column = start + len(line[start:]) - len(line[start:].lstrip()) + 1
        err = ParseError(f"{table.names[index[field]]}: {cell!r} is not a number",
                         path=doc.display, line=line_no, column=column, text=line)
        problem(result, "nsys.bad-value", err)


def _warn_truncated(table: Table, cells: Cells, values: pl.DataFrame, result: ParseResult) -> None:
    if "name" in values.columns:
        cut = values.filter(pl.col("name").str.ends_with(ELLIPSIS))
        if cut.height:
            shared = cut.height - cut["name"].n_unique()
            also = f"; {shared} of them repeat a name already listed" if shared else ""
            result.warn("nsys.truncated-name",
                        f"{cut.height} names in the {table.report.id} table (line {table.line_no}) "
                        f"were cut by nsys with '…': different kernels may share one cut name{also}",
                        line=int(cut["source_line"][0]))
    lost = truncated_values(cells)
    if lost:
        result.warn("nsys.truncated-value",
                    f"{lost} numbers in the {table.report.id} table (line {table.line_no}) were cut "
                    "by nsys to their column width ('…') and are unknown", line=table.line_no)


def _unknown(table: Table, doc: Document, result: ParseResult) -> None:
    known = [n for n, c in zip(table.names, table.cols) if c is not None]
    if known:
        result.warn("nsys.unknown-table",
                    f"{doc.display}:{table.line_no}: table with columns {', '.join(table.names)} "
                    "is not an nsys report roofreport reads", line=table.line_no)


# -- the rest of the file --------------------------------------------------------------------

def _tool_version(lines: pl.DataFrame) -> str | None:
    paths = lines.filter(pl.col("kind") == "processing_line")["text"].head(50).to_list()
    for text in paths:
        match = re.search(r"nsight-systems[\w\-]*[/-](\d{4}\.\d+(?:\.\d+)*)", text)
        if match:
            return match.group(1)
    return None


def _notices(lines: pl.DataFrame, result: ParseResult) -> None:
    """nsys's own WARNING/ERROR lines become warnings; its many `SKIPPED: x.sqlite does not
    contain ... data` lines (one per empty report) are summed up in one."""
    notes = _notice_rows(lines)
    for line_no, tag, message in notes.filter(pl.col("notice_tag") != "SKIPPED").head(50).iter_rows():
        if tag in _NOTICE_CODES:
            result.warn(_NOTICE_CODES[tag], f"nsys: {message}", line=line_no)
    skipped = notes.filter(pl.col("notice_tag") == "SKIPPED")
    if skipped.height:
        said = "; ".join(skipped["message"].unique(maintain_order=True).head(3).to_list())
        more = f" (and {skipped.height - 3} more)" if skipped.height > 3 else ""
        result.warn("nsys.skipped", f"nsys skipped {skipped.height} reports: {said}{more}",
                    line=int(skipped["line_no"][0]))


def _notice_rows(lines: pl.DataFrame) -> pl.DataFrame:
    syntax = grammar.load("nsys")
    return lines.filter(pl.col("kind") == "notice_line").select(
        "line_no", *syntax.extract(pl.col("text"), "notice_line"))


def _nothing_found(lines: pl.DataFrame, doc: Document) -> ParseError:
    notes = _notice_rows(lines)
    for tag in ("ERROR", "SKIPPED"):
        said = notes.filter(pl.col("notice_tag") == tag)
        if said.height:
            line_no, _, message = said.row(0)
            return ParseError(f"nsys reported: {message}", path=doc.display, line=line_no)
    return ParseError("no nsys report table found", path=doc.display)
