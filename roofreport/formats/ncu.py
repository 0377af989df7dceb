"""Nsight Compute (ncu / nv-nsight-cu-cli) logs: text output of every era and layout.

The syntax lives in `grammars/ncu.lark`. Parsing is vectorised: every line is classified by
the grammar's line rules at once, the context (process, kernel, section, table columns) is
carried forward with polars window operations, and table rows are cut at the columns of their
table's dash rule. Only the few distinct rule lines go through Lark one by one.

Tables filled: `kernels` (one row per profiled launch, or per kernel in summary modes) and
`metrics` (every row the log printed, value scaled to base units, text kept).
"""

from __future__ import annotations

import re
from functools import lru_cache

import polars as pl

from roofreport import grammar, numbers, units
from roofreport.errors import ParseError
from roofreport.formats.base import FormatSpec, ParseResult
from roofreport.textio import Document, Head

FAMILY = "ncu"

_STATUS = re.compile(r"==(PROF|WARNING|ERROR)==")
_KERNEL_TAIL = re.compile(r"^  \S.*, (?:Context \d+, Stream \d+|Device \d+, CC \d+\.\d+)")
_CSV_HEADERS = ('"ID","Process ID"', '"Kernel Name","Kernel Time"')

# Messages ncu prints when it profiled nothing: the file is reported with ncu's own words.
_NOTHING_PROFILED = re.compile(
    r"No kernels were profiled|Profiling is not supported on device|ERR_NVGPUCTRPERM|"
    r"The application returned an error code|LaunchFailed|newer than the current version|"
    r"Failed to (?:profile|import)|cannot be read", re.I)


def sniff_text(head: Head) -> str | None:
    lines = head.lines
    if any(line.startswith(_CSV_HEADERS) for line in lines[:400]):
        return None  # the CSV specs take these
    statuses = sum(1 for line in lines if _STATUS.search(line))
    headers = sum(1 for line in lines if _KERNEL_TAIL.match(line))
    sections = sum(1 for line in lines if line.startswith("    Section: "))
    if not (statuses or headers or sections):
        return None
    if not headers and not sections and not any("==PROF==" in line for line in lines):
        return None  # ==ERROR==/==WARNING== alone are not specific enough
    if any(line.lstrip().startswith("Metric Name") for line in lines):
        if any("Minimum" in line and "Average" in line for line in lines):
            return "text summary 2023+"
        return "text 2023+"
    if headers and any(", Invocations " in line for line in lines):
        return "text summary"
    if headers or sections:
        return "text 2019-2022"
    return "text (no results)"


def parse_text(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    g = grammar.load("ncu")
    lines = doc.lines().with_columns(kind=g.classify(pl.col("text"), "line"))
    lines = _with_context(lines, g)
    kernels = _kernels(lines, g)
    rows = _table_rows(lines, g, doc, result)
    if kernels.height:
        result.add("kernels", kernels)
    if rows.height:
        result.add("metrics", _metrics(rows, kernels))
    _statuses(lines, result)
    _check_truncation(lines, result)
    if not kernels.height and result.error is None:
        result.error = ParseError("ncu log holds no profiled kernel results", path=doc.display)
    return result


# -- context ---------------------------------------------------------------------------------

def _with_context(lines: pl.DataFrame, g: grammar.Grammar) -> pl.DataFrame:
    """Carry forward, for every line: kernel sequence number, whether we are inside a process's
    results (after `[pid] app@host`, until ncu speaks again), the section and the table."""
    kind = pl.col("kind")
    section_name = pl.col("text").str.extract(g.regex("section_line"), 1).str.strip_chars()
    return lines.with_columns(
        launch_id=(kind == "kernel_line").cum_sum().cast(pl.Int64),
        in_results=pl.when(kind == "process_line").then(True)
        .when(kind == "status_line").then(False)
        .otherwise(None).forward_fill().fill_null(False),
        section=pl.when(kind == "section_line").then(section_name)
        .when(kind == "kernel_line").then(pl.lit(""))
        .otherwise(None).forward_fill(),
        rule_text=pl.when(kind == "table_rule_line").then(pl.col("text"))
        .when(kind.is_in(["kernel_line", "section_line"])).then(pl.lit(""))
        .otherwise(None).forward_fill(),
    )


# -- kernels ---------------------------------------------------------------------------------

def _kernels(lines: pl.DataFrame, g: grammar.Grammar) -> pl.DataFrame:
    heads = lines.filter((pl.col("kind") == "kernel_line") & pl.col("in_results"))
    if not heads.height:
        return pl.DataFrame()
    fields = heads.select(
        pl.col("line_no").alias("source_line"), "launch_id",
        *g.extract(pl.col("text"), "kernel_line"))
    invocations = pl.col("invocations").cast(pl.Int64, strict=False)
    regions = _nvtx_regions(lines)
    out = fields.select(
        "source_line", "launch_id",
        pl.col("kernel_name").alias("name"),
        pl.when(invocations.is_not_null()).then(pl.lit("summary")).otherwise(pl.lit("launch")).alias("kind"),
        invocations.fill_null(1).alias("count"),
        pl.col("device"),
        pl.col("context").cast(pl.Int64, strict=False),
        pl.col("stream").cast(pl.Int64, strict=False),
        pl.col("grid"), pl.col("block"),
    )
    if regions.height:
        out = out.join(regions, on="launch_id", how="left")
    return out


def _nvtx_regions(lines: pl.DataFrame) -> pl.DataFrame:
    """`--nvtx` context under a kernel header -> one region path per launch."""
    items = lines.filter(pl.col("kind") == "nvtx_item_line")
    if not items.height:
        return pl.DataFrame()
    item = pl.col("text").str.strip_chars().str.strip_prefix("<").str.strip_suffix(">")
    # `<0,Gate_nvtx>` is a range (id, name); `<default domain>` a domain.
    named = items.with_columns(
        part=pl.when(item.str.contains(r"^\d+,")).then(item.str.replace(r"^\d+,", ""))
        .when(item == "default domain").then(None).otherwise(item))
    return named.drop_nulls("part").group_by("launch_id", maintain_order=True).agg(
        pl.col("part").str.join("/").alias("region"))


# -- table rows ------------------------------------------------------------------------------

@lru_cache(maxsize=1024)
def _cuts(rule_text: str) -> tuple[int, ...]:
    """End offsets of the dash runs of one table rule line (parsed by Lark, once per text)."""
    tree = grammar.load("ncu").parse(rule_text, "table_rule_line")
    dashes = next(t for t in tree.scan_values(lambda v: getattr(v, "type", "") == "DASHES"))
    start = dashes.column - 1
    return tuple(start + m.end() for m in re.finditer(r"-+", str(dashes)))


def _table_rows(lines: pl.DataFrame, g: grammar.Grammar, doc: Document,
                result: ParseResult) -> pl.DataFrame:
    rows = lines.filter(
        (pl.col("kind") == "table_row_line") & pl.col("in_results")
        & (pl.col("launch_id") > 0) & (pl.col("section") != ""))
    if not rows.height:
        return pl.DataFrame()
    cut_table = _cut_table(rows["rule_text"].unique().to_list())
    rows = rows.join(cut_table, on="rule_text", how="left")
    text = pl.col("text")
    summary = pl.col("ncols") == 5

    def cell(i: int) -> pl.Expr:
        start = pl.lit(4) if i == 0 else pl.col("cuts").list.get(i - 1, null_on_oob=True)
        end = pl.col("cuts").list.get(i, null_on_oob=True)
        return text.str.slice(start, end - start).str.strip_chars()

    # A row fits its columns when the rule's gaps (the character after each column) are blank.
    def gap_blank(i: int) -> pl.Expr:
        at = pl.col("cuts").list.get(i, null_on_oob=True)
        return text.str.slice(at, 1).is_in([" ", ""]) | at.is_null()

    fits = pl.col("cuts").is_not_null() & gap_blank(0) & gap_blank(1) & \
        pl.when(summary).then(gap_blank(2) & gap_blank(3)).otherwise(True)
    sliced = rows.with_columns(
        fits=fits,
        metric=cell(0), unit=cell(1),
        value_text=pl.when(summary).then(cell(4)).otherwise(text.str.slice(pl.col("cuts").list.get(1, null_on_oob=True)).str.strip_chars()),
        min_text=pl.when(summary).then(cell(2)),
        max_text=pl.when(summary).then(cell(3)),
    )
    # Rows that overflow their columns: split from the right on 2+ spaces (grammar rules).
    loose = sliced.filter(~pl.col("fits"))
    if loose.height:
        m = loose.select(pl.col("line_no"), *g.extract(pl.col("text"), "metric_row"))
        s = loose.select(pl.col("line_no"), *g.extract(pl.col("text"), "summary_row"))
        fixed = m.join(s, on="line_no", how="left", suffix="_s").select(
            "line_no",
            pl.coalesce("metric_name_s", "metric_name").alias("metric"),
            pl.coalesce("metric_unit_s", "metric_unit").alias("unit"),
            pl.coalesce("average", "metric_value").alias("value_text"),
            pl.col("minimum").alias("min_text"), pl.col("maximum").alias("max_text"))
        bad = fixed.filter(pl.col("metric").is_null())
        for line_no in bad["line_no"].head(20).to_list():
            result.warn("ncu.unreadable-row", _explain(doc, g, line_no), line=line_no)
        sliced = sliced.update(fixed.filter(pl.col("metric").is_not_null()), on="line_no")
    sliced = sliced.filter(pl.col("metric").is_not_null() & (pl.col("metric") != ""))
    return sliced.with_columns(pl.when(pl.col("unit") == "").then(None).otherwise(pl.col("unit")).alias("unit"))


def _cut_table(rule_texts: list[str | None]) -> pl.DataFrame:
    cuts = [list(_cuts(t)) if t else None for t in rule_texts]
    return pl.DataFrame({
        "rule_text": rule_texts,
        "cuts": cuts,
        "ncols": [len(c) if c else None for c in cuts],
    }, schema={"rule_text": pl.String, "cuts": pl.List(pl.Int64), "ncols": pl.Int64})


def _explain(doc: Document, g: grammar.Grammar, line_no: int) -> str:
    text = doc.lines()["text"][line_no - 1]
    try:
        g.parse(text, "metric_row", path=doc.display, line=line_no)
    except ParseError as exc:
        return exc.describe()
    return f"{doc.display}:{line_no}: table row does not fit its columns"


def _metrics(rows: pl.DataFrame, kernels: pl.DataFrame) -> pl.DataFrame:
    decimal_comma = numbers.detect_decimal_comma(
        pl.concat([rows["value_text"], rows["min_text"].drop_nulls()]))
    factors = units.factors_for(rows["unit"])
    base = rows.join(factors, on="unit", how="left", nulls_equal=True)
    names = kernels.select("launch_id", pl.col("name").alias("kernel_name"), "device") \
        if kernels.height else pl.DataFrame(schema={"launch_id": pl.Int64, "kernel_name": pl.String,
                                                   "device": pl.String})
    base = base.join(names, on="launch_id", how="left")
    common = [pl.col("line_no").alias("source_line"), "launch_id", "kernel_name", "device",
              "section", "metric", "unit"]

    def value(col: str) -> pl.Expr:
        return (numbers.parse_number(pl.col(col), decimal_comma) * pl.col("factor")).alias("value")

    single = base.filter(pl.col("min_text").is_null()).select(
        *common, pl.lit(None, pl.String).alias("stat"), value("value_text"), "value_text")
    summary = base.filter(pl.col("min_text").is_not_null())
    parts = [single]
    for stat, col in (("min", "min_text"), ("max", "max_text"), ("avg", "value_text")):
        parts.append(summary.select(*common, pl.lit(stat).alias("stat"), value(col),
                                    pl.col(col).alias("value_text")))
    return pl.concat(parts, how="vertical").sort("source_line", "stat", nulls_last=False)


# -- status lines ----------------------------------------------------------------------------

def _statuses(lines: pl.DataFrame, result: ParseResult) -> None:
    status = lines.filter(pl.col("kind") == "status_line").select(
        "line_no", pl.col("text").str.extract(r"==(PROF|WARNING|ERROR)== ?(.*)$", 1).alias("tag"),
        pl.col("text").str.extract(r"==(?:PROF|WARNING|ERROR)== ?(.*)$", 1).alias("msg"))
    for line_no, tag, msg in status.filter(pl.col("tag") != "PROF").iter_rows():
        code = "ncu.error" if tag == "ERROR" else "ncu.warning"
        result.warn(code, f"ncu: {msg.strip()}", line=line_no)
        if tag == "ERROR" and _NOTHING_PROFILED.search(msg) and result.error is None \
                and "kernels" not in result.tables:
            result.error = ParseError(f"ncu reported: {msg.strip()}", line=line_no)
    if "kernels" not in result.tables and result.error is None:
        for line_no, tag, msg in status.iter_rows():
            if _NOTHING_PROFILED.search(msg or ""):
                result.error = ParseError(f"ncu reported: {msg.strip()}", line=line_no)
                break


def _check_truncation(lines: pl.DataFrame, result: ParseResult) -> None:
    """A table still open at the end of the file means the log was cut mid-kernel."""
    meaningful = lines.filter(~pl.col("kind").is_in(["blank_line", "other"]))
    if not meaningful.height:
        return
    last = meaningful.row(-1, named=True)
    if last["kind"] == "table_row_line" and last["in_results"]:
        result.warn("ncu.truncated",
                    f"log ends inside a metrics table (line {last['line_no']}): the last kernel "
                    "may be incomplete", line=last["line_no"])


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="ncu-text", sniff=sniff_text, parse=parse_text),
]
