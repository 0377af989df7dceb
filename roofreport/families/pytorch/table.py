"""Printed `key_averages().table()` output -> `kernels`, `regions` and `metrics`.

The syntax is `grammars/pytorch.lark`: lines are classified with its rules compiled to
regexes, each distinct header is parsed by Lark once, rows are cut at the dash rule's spans
and each cell is read with its column's cell rule (`COLUMN_KINDS` maps header names to them).
Any column selection torch prints is read: CPU and device times (`Self CUDA`, `XPU total`...),
shares, memory, calls, FLOPs, input shapes, source locations, node ids.

What each row becomes:

* a device row (a kernel, memcpy or memset: no CPU time, some device time) -> `kernels`,
  kind "summary", `count` = calls, `duration_ns` = its self device time (a kernel's own time);
* an operator row (CPU time: aten ops, autograd nodes, record_function ranges) -> `regions`,
  kind "operator_self", `duration_ns` = its self CPU time, so the rows' shares are the table's
  `Self CPU %` (a table's rows are flat: an op's total time holds its children's, so totals
  would count them twice);
* every cell of every row, and the `... time total:` lines -> `metrics` (section
  "key_averages" / "key_averages totals"), values in base units (ns, %, bytes, FLOP).

Names longer than the column are cut by torch with `...`: two rows may share a cut name
(`pytorch.truncated-name`). A table printed twice with the same totals is read once. A log
printing several tables of one profile (sorted by CUDA time, then by CPU time, each cut to its
`row_limit`) keeps every table's rows, each as its own view; one of them gives the run's totals
(`parse_table`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common.textio import Document
from roofreport.families.spec import ParseResult

FAMILY = "pytorch"
ELLIPSIS = "..."
MAX_PROBLEMS = 20
SECTION = "key_averages"
_TITLE_CHARS = 80

# Header name (full match) -> the cell rule of its column; the first that matches wins. Names
# are torch's `_build_table` headers; the device is "CUDA" or another backend's name.
COLUMN_KINDS: list[tuple[str, str]] = [
    (r"Name", "name"),
    (r"# of Calls|Number of Calls|Node ID", "count_cell"),
    (r"Total [KMGTP]?FLOPs", "flops_cell"),
    (r"Input Shapes|Source Location|Overload Name|.* Shapes?", "text"),
    (r".*%", "percent_cell"),
    (r"(?:Self )?\w+ Mem", "memory_cell"),
    (r"Self \w+(?: total)?|\w+ total|\w+ time avg", "time_cell"),
]
# The columns the tables are made of (full match of the header name).
SELF_CPU = r"Self CPU(?: total)?"
CPU_TOTAL = r"CPU total"
SELF_DEVICE = r"Self (?!CPU\b)\w+"
DEVICE_TOTAL = r"(?!CPU\b)\w+ total"
CALLS = r"# of Calls|Number of Calls"
_TIME_NS = {"us": 1e3, "ms": 1e6, "s": 1e9}
_BYTES = {"b": 1.0, "Kb": 2.0**10, "Mb": 2.0**20, "Gb": 2.0**30, "Tb": 2.0**40}
_FLOPS = {None: 1.0, "": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


@dataclass(frozen=True)
class TableLayout:
    """A table: its header line, column spans, names, and the lines of its rows."""

    header_line: int
    spans: tuple[tuple[int, int], ...]
    names: tuple[str, ...]
    first_row: int           # line number of the first row
    last_row: int            # line number of the last row
    closed: bool             # the closing rule was found


# -- finding tables --------------------------------------------------------------------------

def classified(lines: pl.DataFrame) -> pl.DataFrame:
    """`lines` (line_no, text) with each line's `kind` from the grammar's `line` rule."""
    return lines.with_columns(kind=grammar.load("pytorch").classify_lines(lines["text"], "line"))


def find_tables(lines: pl.DataFrame) -> list[TableLayout]:
    """Every rule / header / rule triple whose header names a key_averages table."""
    rules = lines.filter(pl.col("kind") == "rule_line").select("line_no", "text")
    numbers, texts = rules["line_no"].to_list(), rules["text"].to_list()
    header_texts = dict(lines.filter(pl.col("line_no").is_in([n + 1 for n in numbers]))
                        .select("line_no", "text").iter_rows())
    found, last_line = [], int(lines["line_no"].max() or 0)
    for index in range(len(numbers) - 1):
        top, under = numbers[index], numbers[index + 1]
        if under != top + 2 or texts[index].rstrip() != texts[index + 1].rstrip():
            continue
        layout = _layout(header_texts.get(top + 1, ""), texts[index])
        if layout is None or (found and found[-1].last_row >= top):
            continue
        close = next((n for n, t in zip(numbers[index + 2:], texts[index + 2:])
                      if t.rstrip() == texts[index].rstrip()), None)
        end = close - 1 if close is not None else last_line
        found.append(TableLayout(top + 1, *layout, under + 1, end, close is not None))
    return found


@lru_cache(maxsize=256)
def _layout(header: str, rule: str) -> tuple[tuple, tuple] | None:
    """Column spans of a rule line and the header's names; None unless Lark reads one name
    per span and they name a key_averages table (a `Name` column and a known one)."""
    syntax = grammar.load("pytorch")
    try:
        tokens = [str(t) for t in syntax.tokens(header, "header_line") if t.type == "COLUMN_NAME"]
    except ParseError:
        return None
    spans = tuple((m.start(), m.end()) for m in re.finditer(r"-+", rule))
    # A name wider than its column overflows to the left (torch pads, never cuts, headers:
    # `CUDA time avg` over 12 dashes), so the names are Lark's tokens, one per span.
    names = tuple(tokens)
    if len(names) != len(spans) or "Name" not in names:
        return None
    if not any(_kind(n) not in ("name", "text") for n in names):
        return None
    return spans, names


@lru_cache(maxsize=256)
def _kind(name: str) -> str:
    return next((kind for pattern, kind in COLUMN_KINDS if re.fullmatch(pattern, name)), "text")


def _named(names: tuple[str, ...], pattern: str) -> str | None:
    return next((n for n in names if re.fullmatch(pattern, n)), None)


# -- reading ---------------------------------------------------------------------------------

def parse_table(doc: Document, variant: str) -> ParseResult:
    """Every table of the file, each row kept. Views of one profile (the same totals: sorted
    by CPU, then by CUDA time, by memory, grouped by input shape, each cut to its `row_limit`)
    are all read, each under its own `metrics` section. One view of each profile feeds the
    run's totals (`_totals_view`): its rows are `kernels` of kind "summary" and `regions` of
    kind "operator_self"; the other views' rows are `kernels` of kind "view" and `regions` of
    kind "operator_view", their view named in `region` / `path` (the analysis times none of
    them: `analysis/timing.py`), and a `pytorch.views` warning says which view gave the
    totals. A table printed again, row for row, is read once."""
    result = ParseResult(family=FAMILY, variant=variant)
    lines = classified(doc.lines())
    tables = find_tables(lines)
    printed: set[tuple] = set()
    read: list[_Table] = []
    for index, layout in enumerate(tables):
        next_start = tables[index + 1].header_line - 1 if index + 1 < len(tables) else None
        totals = _totals(lines, layout, next_start)
        profile = tuple(totals.select("metric", "value").rows())
        rows = lines.filter(pl.col("line_no").is_between(layout.first_row, layout.last_row))["text"]
        printout = (layout.names, tuple(text.rstrip() for text in rows), profile)
        if printout in printed:
            result.warn("pytorch.repeated-table", f"the table at line {layout.header_line} repeats "
                        "one read before, row for row (the same profile printed again): not read twice",
                        line=layout.header_line)
            continue
        printed.add(printout)
        section = _section(layout, lines, index, len(tables))
        cells, values = _read(layout, lines, doc, result)
        read.append(_Table(layout, section, profile, totals, cells, values))
    feeding = {id(table) for table in _totals_views(read, result)}
    for table in read:
        _emit(table.layout, table.cells, table.values, table.section, id(table) in feeding, result)
        if table.totals.height:
            result.add("metrics", table.totals.with_columns(pl.lit(f"{table.section} totals").alias("section")))
    if not tables:
        result.error = ParseError("no key_averages table found (a dash rule, a header naming "
                                  "`Name` and its columns, the same rule)", path=doc.display)
    return result


@dataclass(frozen=True)
class _Table:
    """One table read: where it is, its section, its profile (the totals under it), its cells."""

    layout: TableLayout
    section: str
    profile: tuple
    totals: pl.DataFrame
    cells: pl.DataFrame
    values: pl.DataFrame


def _totals_views(tables: list[_Table], result: ParseResult) -> list[_Table]:
    """The view of each profile that feeds the run's totals: of its tables sorted by a device
    time column (`CUDA total`, `Self CUDA`: torch's `sort_by="cuda_time_total"`), the one with
    the most rows (the first of equals); when none is, its first table. A profile printed as
    several views gets a `pytorch.views` warning naming the one chosen and the others."""
    profiles: dict[tuple, list[_Table]] = {}
    for table in tables:
        profiles.setdefault(table.profile, []).append(table)
    chosen = []
    for views in profiles.values():
        keys = [_sorted_by(view) for view in views]
        on_device = [view for view, key in zip(views, keys) if key and _kind_of_time(key) == "device"]
        pick = max(on_device, key=lambda view: view.cells.height) if on_device else views[0]
        chosen.append(pick)
        if len(views) > 1:
            key = keys[views.index(pick)]
            how = f"sorted by {key}" if key else "the first; no view is sorted by a device time"
            others = ", ".join(f"line {view.layout.header_line} ({view.cells.height} rows)"
                               for view in views if view is not pick)
            result.warn("pytorch.views", f"{len(views)} key_averages tables print one profile: the run's "
                        f"totals come from the table at line {pick.layout.header_line} ({how}, "
                        f"{pick.cells.height} rows); the others are kept as views, not summed: {others}",
                        line=pick.layout.header_line)
    return chosen


def _sorted_by(table: _Table) -> str | None:
    """The time column a table's rows are sorted by (descending), device columns first."""
    for pattern in (DEVICE_TOTAL, SELF_DEVICE, CPU_TOTAL, SELF_CPU):
        header = _named(table.layout.names, pattern)
        if header is None:
            continue
        column = table.values.filter(pl.col("metric") == header).sort("source_line")["value"].drop_nulls()
        if column.len() > 1 and column.n_unique() > 1 and (column.diff().drop_nulls() <= 0).all():
            return header
    return None


def _kind_of_time(header: str) -> str:
    return "device" if re.fullmatch(DEVICE_TOTAL, header) or re.fullmatch(SELF_DEVICE, header) else "cpu"


def _section(layout: TableLayout, lines: pl.DataFrame, index: int, count: int) -> str:
    """The `metrics` section of a table's rows: `key_averages` for a file's only table, else
    numbered in file order, with the title printed above it (`key_averages 2: Key Averages
    (CUDA)`)."""
    if count == 1:
        return SECTION
    above = lines.filter(pl.col("line_no") == layout.header_line - 2)   # right above the top rule
    title = above["text"][0].strip() if above.height and above["kind"][0] == "other" else ""
    return f"{SECTION} {index + 1}: {title[:_TITLE_CHARS]}" if title else f"{SECTION} {index + 1}"


def _totals(lines: pl.DataFrame, layout: TableLayout, next_start: int | None) -> pl.DataFrame:
    """The `... time total:` lines under a table: source_line, metric, unit, value (ns)."""
    after = lines.filter((pl.col("kind") == "total_line") & (pl.col("line_no") > layout.last_row))
    if next_start is not None:
        after = after.filter(pl.col("line_no") < next_start)
    syntax = grammar.load("pytorch")
    fields = after.select("line_no", *syntax.extract(pl.col("text"), "total_line"))
    return fields.select(pl.col("line_no").alias("source_line"),
                         pl.format("{} time total", "total_name").alias("metric"),
                         pl.col("time_unit").alias("unit"), _time_ns("time_value", "time_unit"),
                         pl.concat_str("time_value", "time_unit").alias("value_text"))


def _time_ns(value: str, unit: str) -> pl.Expr:
    factor = pl.col(unit).replace_strict(_TIME_NS, default=None, return_dtype=pl.Float64)
    return (pl.col(value).cast(pl.Float64, strict=False) * factor).round(0).alias("value")


def _read(layout: TableLayout, lines: pl.DataFrame, doc: Document,
          result: ParseResult) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One table's cells (source_line, name, c0...) and their values (long form)."""
    body = lines.filter(pl.col("line_no").is_between(layout.first_row, layout.last_row)
                        & (pl.col("kind") == "other"))
    if not layout.closed:
        body = _to_first_blank(lines, layout)
        result.warn("pytorch.truncated", f"the table at line {layout.header_line} has no closing "
                    "dash rule: the log ends inside it", line=layout.header_line)
    rows = _fitting(layout, body, doc, result)
    cells = rows.select(pl.col("line_no").alias("source_line"),
                        *[_cut(layout, i).alias(f"c{i}") for i in range(len(layout.names))])
    name_col = f"c{layout.names.index('Name')}"
    # Continuation lines (more stack frames of a `Source Location` cell) have no name.
    cells = cells.filter(pl.col(name_col) != "").rename({name_col: "name"})
    values = _values(layout, cells, doc, result)
    _warn_cut_names(cells, layout, result)
    return cells, values


def _to_first_blank(lines: pl.DataFrame, layout: TableLayout) -> pl.DataFrame:
    below = lines.filter(pl.col("line_no") >= layout.first_row)
    stop = below.filter(pl.col("kind") != "other")["line_no"].min()
    return below.filter(pl.col("line_no") < stop) if stop is not None else below


def _cut(layout: TableLayout, index: int) -> pl.Expr:
    start, end = layout.spans[index]
    text = pl.col("text")
    cut = text.str.slice(start) if index == len(layout.spans) - 1 else text.str.slice(start, end - start)
    return cut.str.strip_chars().fill_null("")


def _fitting(layout: TableLayout, body: pl.DataFrame, doc: Document, result: ParseResult) -> pl.DataFrame:
    """Rows whose text spills into a gap between columns are reported and left out."""
    text = pl.col("text")
    gaps = [text.str.slice(a_end, b_start - a_end).str.strip_chars().fill_null("") == ""
            for (_, a_end), (b_start, _) in zip(layout.spans, layout.spans[1:])]
    checked = body.with_columns(fits=pl.all_horizontal(*gaps) if gaps else pl.lit(True))
    bad = checked.filter(~pl.col("fits"))
    for line_no, line in bad.select("line_no", "text").head(MAX_PROBLEMS).iter_rows():
        column = next(a_end + 1 + len(line[a_end:b_start]) - len(line[a_end:b_start].lstrip())
                      for (_, a_end), (b_start, _) in zip(layout.spans, layout.spans[1:])
                      if line[a_end:b_start].strip())
        err = ParseError("table row does not fit the columns of its dash rule", path=doc.display,
                         line=line_no, column=column, text=line)
        result.warn("pytorch.bad-row", err.describe(), line=line_no)
    return checked.filter(pl.col("fits")).drop("fits")


def _values(layout: TableLayout, cells: pl.DataFrame, doc: Document, result: ParseResult) -> pl.DataFrame:
    """Long form: source_line, name, metric, unit, value (base units), value_text."""
    parts = []
    for index, header in enumerate(layout.names):
        kind = _kind(header)
        if kind == "name":
            continue
        cell = pl.col(f"c{index}")
        value, unit = _cell_value(kind, header, cell)
        part = cells.select("source_line", "name", pl.lit(header).alias("metric"), unit.alias("unit"),
                            value.alias("value"), cell.alias("value_text"))
        parts.append(part)
        if kind != "text":
            _warn_bad_values(part, layout, index, doc, result)
    if not parts:
        return pl.DataFrame(schema={"source_line": pl.Int64, "name": pl.String})
    return pl.concat(parts, how="vertical_relaxed")


def _cell_value(kind: str, header: str, cell: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(value in base units, unit as printed) of a column's cells, read by its cell rule."""
    syntax = grammar.load("pytorch")
    if kind == "text":
        return pl.lit(None, pl.Float64), pl.lit(None, pl.String)
    fields = cell.str.extract_groups(syntax.regex(kind))
    number = {"time_cell": "time_value", "percent_cell": "percent_value",
              "memory_cell": "memory_value", "count_cell": "count",
              "flops_cell": "flops_value"}[kind]
    value = fields.struct.field(number).cast(pl.Float64, strict=False)
    if kind == "time_cell":
        unit = fields.struct.field("time_unit")
        factor = unit.replace_strict(_TIME_NS, default=None, return_dtype=pl.Float64)
        return (value * factor).round(0), unit
    if kind == "memory_cell":
        unit = fields.struct.field("memory_unit")
        factor = unit.replace_strict(_BYTES, default=None, return_dtype=pl.Float64)
        return (value * factor).round(0), unit
    if kind == "flops_cell":
        scale = syntax.tokens(header, "flops_header")
        prefix = next((str(t) for t in scale if t.type == "FLOPS_SCALE"), "")
        return value * _FLOPS[prefix], pl.lit("FLOP")
    return value, pl.lit("%" if kind == "percent_cell" else None, pl.String)


def _warn_bad_values(part: pl.DataFrame, layout: TableLayout, index: int, doc: Document,
                     result: ParseResult) -> None:
    """Cells that do not read as their column's rule (nulls stay null; `NaN`, `--` are kept)."""
    kind = _kind(layout.names[index])
    regex = grammar.load("pytorch").regex(kind)
    bad = part.filter(~pl.col("value_text").str.contains(regex) & (pl.col("value_text") != ""))
    for line_no, text in bad.select("source_line", "value_text").head(MAX_PROBLEMS).iter_rows():
        line = doc.lines()["text"][line_no - 1]
        start = layout.spans[index][0]
        column = start + len(line[start:]) - len(line[start:].lstrip()) + 1
        err = ParseError(f"{layout.names[index]}: {text!r} is not a {kind.removesuffix('_cell')} value",
                         path=doc.display, line=line_no, column=column, text=line)
        result.warn("pytorch.bad-value", err.describe(), line=line_no)


def _warn_cut_names(cells: pl.DataFrame, layout: TableLayout, result: ParseResult) -> None:
    cut = cells.filter(pl.col("name").str.ends_with(ELLIPSIS))
    if cut.height:
        shared = cut.height - cut["name"].n_unique()
        also = f"; {shared} of them repeat a name already listed" if shared else ""
        result.warn("pytorch.truncated-name", f"{cut.height} names in the table at line "
                    f"{layout.header_line} were cut by torch with '...': different kernels or "
                    f"operators may share one cut name{also}", line=int(cut["source_line"][0]))


# -- tables ----------------------------------------------------------------------------------

def _emit(layout: TableLayout, cells: pl.DataFrame, values: pl.DataFrame, section: str,
          feeds_totals: bool, result: ParseResult) -> None:
    """A table's rows: kernels and regions of the run's totals (`feeds_totals`), or of a view
    (kinds "view" / "operator_view", the view named in `region` / `path`)."""
    if not cells.height:
        return
    result.add("metrics", values.select(
        "source_line", pl.col("source_line").alias("launch_id"), pl.col("name").alias("kernel_name"),
        pl.lit(section).alias("section"), "metric", "unit", "value", "value_text"))
    wide = _wide(layout, cells, values)
    view = section.replace("/", " ")
    on_device = (pl.col("self_cpu").fill_null(0) == 0) & (pl.col("cpu_total").fill_null(0) == 0) \
        & ((pl.col("self_device").fill_null(0) > 0) | (pl.col("device_total").fill_null(0) > 0))
    device_rows = wide.filter(on_device)
    if device_rows.height:
        result.add("kernels", device_rows.select(
            "source_line", pl.col("source_line").alias("launch_id"), "name",
            pl.lit("summary" if feeds_totals else "view").alias("kind"), pl.col("calls").alias("count"),
            pl.coalesce("self_device", "device_total").alias("duration_ns"),
            pl.lit(None if feeds_totals else view, pl.String).alias("region")))
    operators = wide.filter(~on_device)
    if operators.height:
        path = pl.col("name") if feeds_totals else pl.format("{}/{}", pl.lit(view), pl.col("name"))
        result.add("regions", operators.select(
            "source_line", pl.lit("operator_self" if feeds_totals else "operator_view").alias("kind"), "name",
            path.alias("path"), pl.col("self_cpu").alias("duration_ns"), pl.col("calls").alias("count")))


def _wide(layout: TableLayout, cells: pl.DataFrame, values: pl.DataFrame) -> pl.DataFrame:
    """One row per table row: source_line, name, and the values the tables are made of."""
    wide = cells.select("source_line", "name")
    roles = {"self_cpu": SELF_CPU, "cpu_total": CPU_TOTAL, "self_device": SELF_DEVICE,
             "device_total": DEVICE_TOTAL, "calls": CALLS}
    for role, pattern in roles.items():
        header = _named(layout.names, pattern)
        column = values.filter(pl.col("metric") == header).select("source_line", pl.col("value").alias(role)) \
            if header else None
        wide = wide.join(column, on="source_line", how="left") if column is not None \
            else wide.with_columns(pl.lit(None, pl.Float64).alias(role))
    return wide.with_columns(pl.col("calls").cast(pl.Int64))
