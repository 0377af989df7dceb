"""The lines of an nvidia-smi log, classified by `grammars/smi.lark` and put in context.

Every line gets its kind (the first alternative of the grammar's `line` rule it matches), the
section it belongs to (`query`, `monitor`, `table`, `report`: opened by the last header seen),
the line number of that header, and a block number that grows at every structural line (a
header, a date or time line, a `----` separator, a table's version line). Blocks are how
rows without a GPU index are told apart: a new block is a new sweep over the GPUs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common.textio import Document
from roofreport.families.smi.fields import PROCESS_ALIASES, QUERY_FIELDS

Field = tuple[str, "str | None"]   # (query name, printed unit or None)

_SECTION_OPENERS = {
    "query_header_line": "query", "monitor_header_line": "monitor",
    "version_line": "table", "report_title_line": "report",
}
_BREAKS = ("query_header_line", "monitor_header_line", "date_line", "time_line",
           "separator_line", "version_line", "report_title_line", "command_line",
           "watch_title_line")
_QUERY_OPTION = re.compile(r"--query-(gpu|compute-apps|accounted-apps)[= ](\S+)")
_FORMAT_OPTION = re.compile(r"--format[= ](\S+)")


@dataclass
class LogLines:
    """A log's lines in context, and the query headers found in it (line -> fields)."""

    frame: pl.DataFrame
    headers: dict[int, list[Field]] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    nul_lines: int = 0


def prepare(doc: Document, initial_section: str | None, lines: pl.DataFrame | None = None) -> LogLines:
    """Classify the document's lines (or the given `line_no`/`text` frame) and add context."""
    syntax = grammar.load("smi")
    frame = lines if lines is not None else doc.lines()
    nul_lines = frame.filter(pl.col("text").str.contains("\x00", literal=True)).height
    frame = frame.with_columns(pl.col("text").str.replace_all("\x00", "", literal=True))
    frame = frame.with_columns(kind=syntax.classify(pl.col("text"), "line"))
    commands = _commands(frame, syntax)
    frame, headers = _query_headers(frame, commands)
    return LogLines(frame=_with_context(frame, initial_section), headers=headers,
                 commands=[c for _, c in commands], nul_lines=nul_lines)


def _with_context(frame: pl.DataFrame, initial_section: str | None) -> pl.DataFrame:
    kind = pl.col("kind")
    opener = pl.lit(None, pl.String)
    for name, section in _SECTION_OPENERS.items():
        opener = pl.when(kind == name).then(pl.lit(section)).otherwise(opener)
    is_opener = kind.is_in(list(_SECTION_OPENERS))
    return frame.with_columns(
        section=opener.forward_fill().fill_null(pl.lit(initial_section, pl.String)),
        header_line=pl.when(is_opener).then(pl.col("line_no")).forward_fill(),
        block=kind.is_in(list(_BREAKS)).cum_sum().cast(pl.Int64),
    )


# -- query headers ---------------------------------------------------------------------------

def _query_headers(frame: pl.DataFrame, commands: list[tuple[int, str]]):
    """Validate header lines (parsed once per distinct text) and turn echoed
    `--query-gpu=... --format=csv,noheader` commands into headers for the rows after them."""
    texts = frame.filter(pl.col("kind") == "query_header_line")["text"].unique().to_list()
    fields_of = {t: header_fields(t) for t in texts}
    valid = [t for t, f in fields_of.items() if f]
    frame = frame.with_columns(
        kind=pl.when((pl.col("kind") == "query_header_line") & ~pl.col("text").is_in(valid))
        .then(pl.lit("other")).otherwise(pl.col("kind")))
    headers = {n: fields_of[t] for n, t in frame.filter(pl.col("kind") == "query_header_line")
               .select("line_no", "text").iter_rows()}
    for line_no, command in commands:
        fields = command_fields(command)
        if fields:
            headers[line_no] = fields
    if commands:
        promoted = [n for n, _ in commands if n in headers]
        frame = frame.with_columns(kind=pl.when(pl.col("line_no").is_in(promoted))
                                   .then(pl.lit("query_header_line")).otherwise(pl.col("kind")))
    return frame, headers


@lru_cache(maxsize=256)
def _parse_header(text: str) -> tuple[Field, ...]:
    # query_field: QUERY_NAME (" [" QUERY_UNIT "]")?  -- a unit belongs to the name before it
    out: list[list] = []
    for token in grammar.load("smi").tokens(text.strip(), "query_header_line"):
        if token.type == "QUERY_NAME":
            out.append([str(token), None])
        elif token.type == "QUERY_UNIT":
            out[-1][1] = str(token)
    return tuple((name, unit) for name, unit in out)


def header_fields(text: str) -> list[Field]:
    """The fields of a `--format=csv` header line, or [] when the line is not one (a single
    lower-case word is not a header unless nvidia-smi knows it and gives it a unit or a dot)."""
    try:
        fields = list(_parse_header(text))
    except ParseError:  # the line regex let it through, Lark did not: not a header
        return []
    known = [name for name, _ in fields if name in QUERY_FIELDS]
    if not known:
        return []
    if len(fields) == 1 and fields[0][1] is None and "." not in fields[0][0]:
        return []
    return fields


def command_fields(command: str) -> list[Field]:
    """Fields named by an echoed `--query-gpu=a,b --format=csv,noheader[,nounits]` (only when
    no header line will follow it: with a header, the header itself is read)."""
    query, fmt = _QUERY_OPTION.search(command), _FORMAT_OPTION.search(command)
    if not query or not fmt or "noheader" not in fmt.group(1):
        return []
    unit = None if "nounits" in fmt.group(1) else "?"
    names = [n.strip().strip("\"'") for n in query.group(2).strip("\"'").split(",") if n.strip()]
    if query.group(1) != "gpu":  # a header prints the canonical names; a command may use aliases
        names = [PROCESS_ALIASES.get(n, n) for n in names]
    return [(n, unit) for n in names]


def _commands(frame: pl.DataFrame, syntax: grammar.Grammar) -> list[tuple[int, str]]:
    rows = frame.filter(pl.col("kind") == "command_line").select(
        "line_no", *syntax.extract(pl.col("text"), "command_line"))
    return [(n, args or "") for n, args in rows.select("line_no", "smi_args").iter_rows()]
