"""Nsight Compute CSV rows into the shared tables: what each column of a details or raw page
means (`COLUMNS`, data: a new ncu layout is a new row there, not a new branch), and how the rows
become `kernels` (one per launch) and `metrics` (long form, values in base units).

The rows arrive in positional columns `c0..cN` (Categorical: a million metric rows repeat a few
hundred names) with their `line_no`, read by `csv.py`; on a details page only the columns
every row needs (`row_columns`), a launch's own columns being read from its first row
(`LineSource.records`). Nothing here looks at raw text. Anything that depends only on a value (a
launch ID's number, a unit's factor, a printed number) is computed once per distinct value.
"""

from __future__ import annotations

import re
from typing import Protocol

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common import numbers, units
from roofreport.families.ncu import status as ncu_status
from roofreport.families.spec import ParseResult
from roofreport.tables import frames

Roles = list[tuple[str, str, str]]  # (positional column, header name, role) per column

# Header name -> role. Identity columns describe the launch (kernels table), detail columns
# one metric (metrics table); rule columns carry rule advice, not metrics. On the raw page
# every name not listed here is a metric (counter) name.
COLUMNS: dict[str, str] = {
    "ID": "launch_id", "Process ID": "pid", "Process Name": "process", "Host Name": "host",
    "Kernel Name": "name", "Kernel Time": "kernel_time", "Context": "context", "Stream": "stream",
    "Block Size": "block", "Grid Size": "grid", "Device": "device", "CC": "cc",
    "Section Name": "section", "Body Item Label": "label", "Metric Name": "metric",
    "Metric Unit": "unit", "Metric Value": "value_text",
    "Rule Name": "rule_name", "Rule Type": "rule", "Rule Description": "rule",
    "Estimated Speedup Type": "rule", "Estimated Speedup": "rule",
}
_DETAIL_ROLES = {"metric", "value_text"}
# What a details page needs on every row (the rest is the launch's: read from its first row).
_ROW_ROLES = ("launch_id", "section", "label", "metric", "unit", "value_text")
_ERA0_ROW_ROLES = ("name", "kernel_time")  # era 0 tells launches apart by these (no ID)
_NOT_NAMED = ("rule", "rule_name", "unknown", "counter", "nvtx")


class LineSource(Protocol):
    """The file's lines, read again where needed (`csv.ScannedLines` is one)."""

    display: str

    def texts(self, line_nos: list[int]) -> list[str]: ...

    def records(self, line_nos: list[int], ncols: int) -> pl.DataFrame: ...


def is_raw(names: list[str] | tuple[str, ...]) -> bool:
    """The raw page names counters where the details page has Metric Name/Metric Value."""
    return not _DETAIL_ROLES <= {COLUMNS.get(n) for n in names}


def variant_for(names: list[str] | tuple[str, ...]) -> str:
    return "csv raw" if is_raw(names) else f"csv details {len(names)} columns"


def roles_of(names: tuple[str, ...]) -> Roles:
    """(positional column, header name, role) for every column."""
    nvtx = grammar.load("ncu").pattern("nvtx_column")
    raw = is_raw(names)
    out = []
    for index, name in enumerate(names):
        role = COLUMNS.get(name) or ("nvtx" if nvtx.match(name) else "counter" if raw else "unknown")
        out.append((f"c{index}", name, role))
    return out


def row_columns(roles: Roles) -> list[int]:
    """Positions of the columns read on every row: all of a raw page; on a details page the
    launch ID, section, label and metric columns and the last one (a cut row lacks it)."""
    if is_raw([name for _, name, _ in roles]):
        return list(range(len(roles)))
    present = {role for _, _, role in roles}
    wanted = _ROW_ROLES + (() if "launch_id" in present else _ERA0_ROW_ROLES)
    first = _picked(roles)
    return sorted({int(first[r][1:]) for r in wanted if r in first} | {len(roles) - 1})


def _picked(roles: Roles) -> dict[str, str]:
    """Role -> its positional column (the first column of a role wins)."""
    picked: dict[str, str] = {}
    for col, _, role in roles:
        if role not in _NOT_NAMED and role not in picked:
            picked[role] = col
    return picked


def _incomplete(table: pl.DataFrame, roles: Roles, ncols: int,
                lines: LineSource, result: ParseResult) -> pl.DataFrame:
    """Rows missing their last fields: the file's last one fails the file (cut mid-row, the
    rows before it are kept), others are skipped with a warning."""
    value = next((c for c, _, r in roles if r == "value_text"), f"c{ncols - 1}")
    complete = pl.col(value).is_not_null() | pl.col(f"c{ncols - 1}").is_not_null()
    short = table.filter(~complete)
    if not short.height:
        return table
    last = table["line_no"].max()
    line_nos = short["line_no"].head(20).to_list()
    for line_no, text in zip(line_nos, lines.texts(line_nos)):
        error = ParseError(f"ncu CSV: record ends after fewer fields than the header's {ncols}",
                           path=lines.display, line=line_no, column=len(text) + 1, text=text)
        if line_no == last:
            result.error = error
        else:
            result.warn("ncu.short-row", error.describe(), line=line_no)
    return table.filter(complete)


# -- details page ----------------------------------------------------------------------------

def read_details(table: pl.DataFrame, roles: Roles, result: ParseResult, lines: LineSource) -> bool:
    _warn_unknown(roles, result)
    table = _incomplete(_without_repeated_header(table, roles), roles, len(roles), lines, result)
    frame = _named(table, roles)
    frame = frame.with_columns(launch_id=_launch_ids(frame))
    launches = _with_ids(frame, result)
    if not launches.height:
        return False
    # A launch may hold only rule rows (its sections printed no table): still a launch.
    first = _first_rows(launches, roles, lines)
    kernels = _kernels(first)
    result.add("kernels", kernels)
    result.hints.compute_capability = _first_value(first, "cc")
    rows = _nonempty(launches, "metric")
    if rows.height:
        result.add("metrics", _detail_metrics(rows, kernels))
    return True


def _first_rows(launches: pl.DataFrame, roles: Roles, lines: LineSource) -> pl.DataFrame:
    """Every launch's first row with all its columns, named by role."""
    first = launches.select("line_no", "launch_id").unique("launch_id", keep="first", maintain_order=True)
    rows = lines.records(first["line_no"].to_list(), len(roles))
    return _named(rows, roles).with_columns(launch_id=first["launch_id"])


def _first_value(frame: pl.DataFrame, col: str) -> str | None:
    """The first non-empty cell of `col` (the launches' `CC`), if the page has the column."""
    if col not in frame.columns:
        return None
    cells = frame[col].cast(pl.String).str.strip_chars().drop_nulls()
    cells = cells.filter(cells != "")
    return cells[0] if cells.len() else None


def _nonempty(frame: pl.DataFrame, col: str) -> pl.DataFrame:
    """Rows whose `col` is neither null nor empty (the frame itself when all are)."""
    keep = frame.select((pl.col(col).is_not_null() & (pl.col(col) != "")).alias("keep"))["keep"]
    return frame if keep.all() else frame.filter(keep)


def _without_repeated_header(table: pl.DataFrame, roles: Roles) -> pl.DataFrame:
    """The header printed again (two ncu runs appended to one file) is no row, and no row
    lost: left out without a word (its ID cell reads `ID`)."""
    found = next(((column, name) for column, name, role in roles if role == "launch_id"), None)
    if found is None:
        return table
    column, name = found
    return table.filter(pl.col(column).cast(pl.String).str.strip_chars().ne_missing(name))


def _with_ids(frame: pl.DataFrame, result: ParseResult) -> pl.DataFrame:
    """Rows whose ID is not a number belong to no launch: skipped, the first one named."""
    bad = frame.filter(pl.col("launch_id").is_null())
    if not bad.height:
        return frame
    result.warn("ncu.bad-id", f"{bad.height} CSV row(s) without a numeric ID were skipped "
                f"(first at line {bad['line_no'][0]})", line=int(bad["line_no"][0]))
    return frame.filter(pl.col("launch_id").is_not_null())


def _named(table: pl.DataFrame, roles: Roles) -> pl.DataFrame:
    """Positional columns (those the table has) renamed to their roles."""
    picked = {r: c for r, c in _picked(roles).items() if c in table.columns}
    nvtx = [c for c, _, r in roles if r == "nvtx" and c in table.columns]
    region = [_nvtx_region(nvtx).alias("region")] if nvtx else []
    return table.select("line_no", *[pl.col(c).alias(r) for r, c in picked.items()], *region)


def _launch_ids(frame: pl.DataFrame) -> pl.Series:
    """ncu's `ID` (its number once per distinct text); era 0 (2019.1/2019.2) has none: on its
    details page a launch is a run of rows of one kernel name and time, and a metric seen again
    within the run starts the next launch; on its raw page each row is a launch."""
    if "launch_id" in frame.columns:
        return frames.per_distinct(frame["launch_id"], _id_numbers)["launch_id"]
    if "metric" not in frame.columns:  # a raw page without IDs: one launch per row
        return pl.int_range(frame.height, dtype=pl.Int64, eager=True)
    text = [pl.col(c).cast(pl.String).fill_null("") for c in ("name", "kernel_time")]
    key = pl.concat_str(*text, separator="\x1f")
    run = (key != key.shift()).fill_null(True).cum_sum()
    seen = pl.int_range(pl.len()).over(run, pl.col("section"), pl.col("metric"))
    return frame.select((pl.struct(run, seen).rank("dense") - 1).cast(pl.Int64))[:, 0]


def _id_numbers(ids: pl.Series) -> pl.DataFrame:
    return pl.DataFrame({"launch_id": ids.str.strip_chars().cast(pl.Int64, strict=False)})


def _nvtx_region(columns: list[str]) -> pl.Expr:
    """NVTX cells list `"id:domain:name:type:value"` items: the range names, joined by `/`."""
    syntax = grammar.load("ncu")
    rx = syntax.regex("nvtx_range_item", anchored=False)
    name_group = 1 + list(re.compile(rx).groupindex).index("nvtx_range")
    names = [pl.col(c).cast(pl.String).fill_null("").str.extract_all(rx).list.eval(
        pl.element().str.extract(rx, name_group)) for c in columns]
    joined = pl.concat_list(names).list.join("/")
    return pl.when(joined != "").then(joined)


def _kernels(rows: pl.DataFrame) -> pl.DataFrame:
    first = rows.unique("launch_id", keep="first", maintain_order=True)
    wanted = {"name", "device", "grid", "block", "region"} & set(first.columns)
    return first.select(
        pl.col("line_no").alias("source_line"), "launch_id", *sorted(wanted),
        pl.lit("launch").alias("kind"), pl.lit(1, pl.Int64).alias("count"),
        *[_int(c) for c in ("context", "stream") if c in first.columns],
    )


def _int(col: str) -> pl.Expr:
    return pl.col(col).cast(pl.String).str.strip_chars().cast(pl.Int64, strict=False)


def _detail_metrics(rows: pl.DataFrame, kernels: pl.DataFrame) -> pl.DataFrame:
    unit = pl.col("unit") if "unit" in rows.columns else pl.lit(None, pl.String)
    long = rows.select(pl.col("line_no").alias("source_line"), "launch_id",
                       _sections(rows).alias("section"), "metric",
                       pl.when(unit != "").then(unit).alias("unit"), "value_text")
    long = long.join(_kernel_names(kernels), on="launch_id", how="left", maintain_order="left")
    return _with_values(long, units.factors(long["unit"]))


def _kernel_names(kernels: pl.DataFrame) -> pl.DataFrame:
    return kernels.select("launch_id", pl.col("name").alias("kernel_name"),
                          *(["device"] if "device" in kernels.columns else []))


def _sections(rows: pl.DataFrame) -> pl.Series | pl.Expr:
    """The section, with the body item label after ` / ` when there is one (once per pair)."""
    section = pl.col("section") if "section" in rows.columns else pl.lit(None, pl.String)
    if "label" not in rows.columns:
        return section
    keys = rows.select(section.alias("section"), "label")
    text = pl.col("section").cast(pl.String)
    labelled = pl.col("label").is_not_null() & (pl.col("label") != "")
    combined = pl.when(labelled).then(pl.concat_str(text, pl.lit(" / "), pl.col("label").cast(pl.String)))
    pairs = keys.unique().with_columns(combined.otherwise(text).cast(pl.Categorical).alias("combined"))
    return keys.join(pairs, on=["section", "label"], how="left", nulls_equal=True,
                     maintain_order="left")["combined"]


def _with_values(long: pl.DataFrame, factor: pl.Series, decimal_comma: bool | None = None) -> pl.DataFrame:
    """`value` in base units: each distinct printed number parsed once (thousands separators
    and locale decided once per file, unless the caller knows it), times the unit's `factor`.
    `value_text` becomes plain strings: printed numbers are short, held inside each row's view
    (cheaper than shared)."""
    texts = long["value_text"]
    if decimal_comma is None:
        decimal_comma = numbers.decimal_comma(texts)
    number = frames.per_distinct(texts, lambda distinct: pl.DataFrame({"number": distinct}).select(
        numbers.parse_number(pl.col("number"), decimal_comma)))["number"]
    return long.with_columns(value=number * factor, value_text=texts.cast(pl.String),
                             stat=pl.lit(None, pl.String))


def _warn_unknown(roles: Roles, result: ParseResult) -> None:
    unknown = [name for _, name, role in roles if role == "unknown"]
    if unknown:
        result.warn("ncu.unknown-column", f"CSV columns not understood (kept out of the tables): "
                    f"{', '.join(unknown)}")


# -- raw page --------------------------------------------------------------------------------

def read_raw(table: pl.DataFrame, roles: Roles, result: ParseResult, lines: LineSource,
             decimal_comma: bool | None = None) -> bool:
    """A raw page's launches and metrics into the result; `decimal_comma` None: the values'
    locale is told from the values (a binary report's page, written by `rep.py`, knows it)."""
    table = _incomplete(_without_repeated_header(table, roles), roles, len(roles), lines, result)
    id_col = next((c for c, _, r in roles if r == "launch_id"), "c0")
    no_id = pl.col(id_col).cast(pl.String).fill_null("").str.strip_chars() == ""
    unit_rows, launches = table.filter(no_id), table.filter(~no_id)
    if not launches.height:
        return False
    if not unit_rows.height:
        result.warn("ncu.no-units-row", "raw CSV has no units row after its header: values "
                    "are kept as printed")
    named = _named(launches, roles)
    named = named.with_columns(launch_id=_launch_ids(named))
    launches = launches.filter(named["launch_id"].is_not_null())
    frame = _with_ids(named, result)
    if not frame.height:
        return False
    kernels = _kernels(frame)
    result.add("kernels", kernels)
    metrics = _raw_metrics(launches.with_columns(launch_id=frame["launch_id"]), roles, unit_rows, kernels,
                           decimal_comma)
    result.add("metrics", metrics)
    # Only the name's rows, as strings (`status.py` reads the metrics table as printed).
    named = metrics.filter(pl.col("metric") == "device__attribute_display_name")
    named = named.with_columns(pl.col(pl.Categorical).cast(pl.String))
    result.hints.device_name = ncu_status.device_name(named)
    return True


def _raw_metrics(launches: pl.DataFrame, roles: Roles, unit_rows: pl.DataFrame,
                 kernels: pl.DataFrame, decimal_comma: bool | None) -> pl.DataFrame:
    """Every metric column of every launch, in long form (file order: a launch's counters
    together), with the units row's unit."""
    cols = [c for c, _, r in roles if r == "counter"]
    units_row = unit_rows.select(pl.col(cols).cast(pl.String)).row(0, named=True) if unit_rows.height else {}
    mapping = pl.DataFrame({
        "metric": [n for c, n, r in roles if r == "counter"],
        "unit": [(units_row.get(c) or "").strip() or None for c in cols],
    }, schema={"metric": pl.Categorical, "unit": pl.Categorical})
    per_launch = launches.select(pl.col("line_no").alias("source_line"), "launch_id").join(
        _kernel_names(kernels), on="launch_id", how="left", maintain_order="left")
    cell, values = _row_major(launches, cols)
    row, col = cell // len(cols), cell % len(cols)
    long = pl.concat([per_launch[row], mapping[col], values.to_frame()], how="horizontal")
    long = long.with_columns(section=pl.lit(None, pl.String))
    return _with_values(long, units.factors(mapping["unit"]).gather(col), decimal_comma)


def _row_major(launches: pl.DataFrame, cols: list[str]) -> tuple[pl.Series, pl.Series]:
    """(cell, value_text) of the non-empty cells of `cols`, launch by launch: cell numbers
    count row-major (`row * len(cols) + col`). The columns are laid one after the other and
    gathered, cheaper than an unpivot and a sort or an exploded list."""
    launch_count, column_count = launches.height, len(cols)
    if not column_count:
        return pl.Series("cell", [], pl.Int64), pl.Series("value_text", [], pl.Categorical)
    cell = pl.int_range(launch_count * column_count, dtype=pl.Int64, eager=True).alias("cell")
    values = pl.concat([launches[c] for c in cols], rechunk=False).gather(
        cell % column_count * launch_count + cell // column_count)
    keep = values.is_not_null() & (values != "")
    if not keep.all():
        cell, values = cell.filter(keep), values.filter(keep)
    return cell, values.alias("value_text")
