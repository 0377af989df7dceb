"""Nsight Compute CSV rows into the shared tables: what each column of a details or raw page
means (`COLUMNS`, data: a new ncu layout is a new row there, not a new branch), and how the rows
become `kernels` (one per launch) and `metrics` (long form, values in base units).

The rows arrive as strings in positional columns `c0..cN` with their `line_no`
(`ncu_csv.py` reads them); nothing here looks at raw text.
"""

from __future__ import annotations

import re

import polars as pl

from roofreport import grammar, numbers, units
from roofreport.errors import ParseError
from roofreport.formats import ncu_status
from roofreport.formats.base import ParseResult
from roofreport.textio import Document

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


def is_raw(names: list[str] | tuple[str, ...]) -> bool:
    """The raw page names counters where the details page has Metric Name/Metric Value."""
    return not _DETAIL_ROLES <= {COLUMNS.get(n) for n in names}


def variant_for(names: list[str] | tuple[str, ...]) -> str:
    return "csv raw" if is_raw(names) else f"csv details {len(names)} columns"


def roles_of(names: tuple[str, ...]) -> Roles:
    """(positional column, header name, role) for every column."""
    nvtx = re.compile(grammar.load("ncu").regex("nvtx_column"))
    raw = is_raw(names)
    out = []
    for i, name in enumerate(names):
        role = COLUMNS.get(name) or ("nvtx" if nvtx.match(name) else "counter" if raw else "unknown")
        out.append((f"c{i}", name, role))
    return out


def _incomplete(table: pl.DataFrame, roles: Roles, ncols: int,
                doc: Document, result: ParseResult) -> pl.DataFrame:
    """Rows missing their last fields: the file's last one fails the file (cut mid-row, the
    rows before it are kept), others are skipped with a warning."""
    value = next((c for c, _, r in roles if r == "value_text"), f"c{ncols - 1}")
    complete = pl.col(value).is_not_null() | pl.col(f"c{ncols - 1}").is_not_null()
    short = table.filter(~complete)
    if not short.height:
        return table
    last = table["line_no"].max()
    text_of = doc.lines()["text"]
    for line_no in short["line_no"].head(20).to_list():
        text = text_of[line_no - 1]
        error = ParseError(f"ncu CSV: record ends after fewer fields than the header's {ncols}",
                           path=doc.display, line=line_no, column=len(text) + 1, text=text)
        if line_no == last:
            result.error = error
        else:
            result.warn("ncu.short-row", error.describe(), line=line_no)
    return table.filter(complete)


# -- details page ----------------------------------------------------------------------------

def read_details(table: pl.DataFrame, roles: Roles, result: ParseResult, doc: Document) -> bool:
    _warn_unknown(roles, result)
    table = _incomplete(table, roles, len(roles), doc, result)
    frame = _named(table, roles)
    frame = frame.with_columns(launch_id=_launch_ids(frame))
    launches = _with_ids(frame, result)
    if not launches.height:
        return False
    # A launch may hold only rule rows (its sections printed no table): still a launch.
    kernels = _kernels(launches)
    result.add("kernels", kernels)
    rows = launches.filter(pl.col("metric").is_not_null() & (pl.col("metric") != ""))
    if rows.height:
        result.add("metrics", _detail_metrics(rows, kernels))
    return True


def _with_ids(frame: pl.DataFrame, result: ParseResult) -> pl.DataFrame:
    """Rows whose ID is not a number belong to no launch: skipped, the first one named."""
    bad = frame.filter(pl.col("launch_id").is_null())
    if bad.height:
        result.warn("ncu.bad-id", f"{bad.height} CSV row(s) without a numeric ID were skipped "
                    f"(first at line {bad['line_no'][0]})", line=int(bad["line_no"][0]))
    return frame.filter(pl.col("launch_id").is_not_null())


def _named(table: pl.DataFrame, roles: Roles) -> pl.DataFrame:
    """Positional columns renamed to their roles (first column of a role wins)."""
    picked: dict[str, str] = {}
    for col, _, role in roles:
        if role not in ("rule", "rule_name", "unknown", "counter", "nvtx") and role not in picked:
            picked[role] = col
    nvtx = [c for c, _, r in roles if r == "nvtx"]
    region = [_nvtx_region(nvtx).alias("region")] if nvtx else []
    return table.select("line_no", *[pl.col(c).alias(r) for r, c in picked.items()], *region)


def _launch_ids(frame: pl.DataFrame) -> pl.Expr:
    """ncu's `ID`; era 0 (2019.1/2019.2) has none: on its details page a launch is a run of
    rows of one kernel name and time, and a metric seen again within the run starts the next
    launch; on its raw page each row is a launch."""
    if "launch_id" in frame.columns:
        return pl.col("launch_id").str.strip_chars().cast(pl.Int64, strict=False)
    if "metric" not in frame.columns:  # a raw page without IDs: one launch per row
        return pl.int_range(pl.len(), dtype=pl.Int64)
    key = pl.concat_str(pl.col("name").fill_null(""), pl.col("kernel_time").fill_null(""),
                        separator="\x1f")
    run = (key != key.shift()).fill_null(True).cum_sum()
    seen = pl.int_range(pl.len()).over(run, pl.col("section"), pl.col("metric"))
    return (pl.struct(run, seen).rank("dense") - 1).cast(pl.Int64)


def _nvtx_region(columns: list[str]) -> pl.Expr:
    """NVTX cells list `"id:domain:name:type:value"` items: the range names, joined by `/`."""
    g = grammar.load("ncu")
    rx = g.regex("nvtx_range_item", anchored=False)
    name_group = 1 + list(re.compile(rx).groupindex).index("nvtx_range")
    names = [pl.col(c).fill_null("").str.extract_all(rx).list.eval(
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
    return pl.col(col).str.strip_chars().cast(pl.Int64, strict=False)


def _detail_metrics(rows: pl.DataFrame, kernels: pl.DataFrame) -> pl.DataFrame:
    section = pl.col("section") if "section" in rows.columns else pl.lit(None, pl.String)
    if "label" in rows.columns:
        labelled = pl.col("label").is_not_null() & (pl.col("label") != "")
        section = pl.when(labelled).then(pl.concat_str(section, pl.lit(" / "), "label")).otherwise(section)
    unit = pl.col("unit") if "unit" in rows.columns else pl.lit(None, pl.String)
    long = rows.select(pl.col("line_no").alias("source_line"), "launch_id", section.alias("section"),
                       "metric", pl.when(unit != "").then(unit).alias("unit"), "value_text")
    return _with_values(long, kernels)


def _with_values(long: pl.DataFrame, kernels: pl.DataFrame) -> pl.DataFrame:
    """Value in base units (thousands separators and locale resolved once per file)."""
    decimal_comma = numbers.detect_decimal_comma(long["value_text"])
    factors = units.factors_for(long["unit"]).select("unit", "factor")
    names = kernels.select("launch_id", pl.col("name").alias("kernel_name"),
                           *(["device"] if "device" in kernels.columns else []))
    out = long.join(factors, on="unit", how="left", nulls_equal=True, maintain_order="left")
    out = out.join(names, on="launch_id", how="left", maintain_order="left")
    value = numbers.parse_number(pl.col("value_text"), decimal_comma) * pl.col("factor")
    return out.with_columns(value=value, stat=pl.lit(None, pl.String)).drop("factor")


def _warn_unknown(roles: Roles, result: ParseResult) -> None:
    unknown = [name for _, name, role in roles if role == "unknown"]
    if unknown:
        result.warn("ncu.unknown-column", f"CSV columns not understood (kept out of the tables): "
                    f"{', '.join(unknown)}")


# -- raw page --------------------------------------------------------------------------------

def read_raw(table: pl.DataFrame, roles: Roles, result: ParseResult, doc: Document) -> bool:
    table = _incomplete(table, roles, len(roles), doc, result)
    id_col = next((c for c, _, r in roles if r == "launch_id"), "c0")
    no_id = pl.col(id_col).fill_null("").str.strip_chars() == ""
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
    metrics = _raw_metrics(launches.with_columns(launch_id=frame["launch_id"]), roles, unit_rows, kernels)
    result.add("metrics", metrics)
    result.hints.device_name = ncu_status.device_name(metrics)
    return True


def _raw_metrics(launches: pl.DataFrame, roles: Roles, unit_rows: pl.DataFrame,
                 kernels: pl.DataFrame) -> pl.DataFrame:
    """Every metric column of every launch, in long form, with the units row's unit."""
    cols = [c for c, _, r in roles if r == "counter"]
    units_row = unit_rows.row(0, named=True) if unit_rows.height else {}
    mapping = pl.DataFrame({
        "col": cols, "metric": [n for c, n, r in roles if r == "counter"],
        "unit": [(units_row.get(c) or "").strip() or None for c in cols],
    }, schema={"col": pl.String, "metric": pl.String, "unit": pl.String})
    long = launches.unpivot(on=cols, index=["line_no", "launch_id"], variable_name="col",
                            value_name="value_text")
    # Unpivot goes column by column: back to file order, one launch's counters together.
    long = long.filter(pl.col("value_text").is_not_null() & (pl.col("value_text") != "")) \
        .sort("line_no", maintain_order=True)
    long = long.join(mapping, on="col", how="left", maintain_order="left").select(
        pl.col("line_no").alias("source_line"), "launch_id", pl.lit(None, pl.String).alias("section"),
        "metric", "unit", "value_text")
    return _with_values(long, kernels)
