"""Nsight Compute text output of every era and page: details (wide 2019-2022 and table 2023+
layouts), the raw page (`--page raw`), and summaries (`--print-summary per-kernel|per-gpu`).

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
from roofreport.formats import ncu_csv, ncu_status
from roofreport.formats.base import ParseResult
from roofreport.textio import Document

FAMILY = "ncu"
_RULES = ("table_rule_line", "raw_rule_line")
# Longest line handed to Lark (Earley is super-linear; real table lines are far shorter).
LARK_MAX = 4096


def parse_text(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    g = grammar.load("ncu")
    lines = doc.lines()
    lines = lines.with_columns(kind=g.classify_lines(lines["text"], "line"))
    lines = _with_context(lines, g)
    heads = _kernel_heads(lines, g)
    lines = _with_launch_ids(lines, heads)
    kernels = _kernels(heads, lines)
    rows = _table_rows(lines, g, doc, result)
    if kernels.height:
        result.add("kernels", kernels)
    if rows.height:
        metrics = _metrics(rows, kernels)
        result.add("metrics", metrics)
        result.hints.device_name = ncu_status.device_name(metrics)
    ncu_status.report(lines, result, has_results=kernels.height > 0)
    ncu_status.protobuf_warnings(lines, result)
    result.tool_version = ncu_status.tool_version(lines)
    _check_truncation(lines, result)
    if not kernels.height and result.error is None:
        if _has_csv_header(lines, g):  # a CSV whose header lies beyond the sniffed head
            return ncu_csv.parse_csv(doc, "csv details")
        result.error = ParseError("ncu log holds no profiled kernel results", path=doc.display)
    return result


def _has_csv_header(lines: pl.DataFrame, g: grammar.Grammar) -> bool:
    return lines.filter(pl.col("kind") == "other")["text"].str.contains(
        "^" + g.terminal("HEADER_FIRST") + ",").any()


# -- context ---------------------------------------------------------------------------------

def _with_context(lines: pl.DataFrame, g: grammar.Grammar) -> pl.DataFrame:
    """Carry forward, for every line: kernel header sequence number, whether we are inside a
    process's results (after `[pid] app@host`, until ncu speaks again), and the line numbers of
    the process line, the per-gpu summary's device line, the section line and the table rule in
    force (0 when none). Their fields are extracted from those few lines only (`_fields_at`)."""
    kind = pl.col("kind")
    opens_kernel = kind.is_in(["kernel_line", "device_line", "process_line"])

    def last(this: pl.Expr, reset: pl.Expr | None = None) -> pl.Expr:
        at = pl.when(this).then(pl.col("line_no"))
        if reset is not None:
            at = at.when(reset).then(pl.lit(0, pl.Int64))
        return at.otherwise(None).forward_fill().fill_null(0)

    return lines.with_columns(
        seq=(kind == "kernel_line").cum_sum().cast(pl.Int64),
        in_results=pl.when(kind == "process_line").then(True)
        .when(kind == "status_line").then(False)
        .otherwise(None).forward_fill().fill_null(False),
        process_at=last(kind == "process_line"),
        device_at=last(kind == "device_line", reset=kind == "process_line"),
        section_at=last(kind == "section_line", reset=opens_kernel),
        rule_at=last(kind.is_in(_RULES), reset=opens_kernel | (kind == "section_line")),
    )


def _fields_at(lines: pl.DataFrame, g: grammar.Grammar, rule: str, names: dict[str, str],
               at: str) -> pl.DataFrame:
    """`at` (line number) -> the named fields of the `rule` lines, renamed by `names`."""
    found = lines.filter(pl.col("kind") == rule)
    fields = found.select(pl.col("line_no").alias(at), *g.extract(pl.col("text"), rule))
    return fields.select(at, *[pl.col(f).str.strip_chars().alias(n) for f, n in names.items()])


# -- kernels ---------------------------------------------------------------------------------

def _kernel_heads(lines: pl.DataFrame, g: grammar.Grammar) -> pl.DataFrame:
    """Every kernel header inside results, with its fields and its launch id: the header's
    position for launches; summaries repeat one kernel's header before every section, so
    there the first header of the same text (in the same process and device) gives the id."""
    heads = lines.filter((pl.col("kind") == "kernel_line") & pl.col("in_results"))
    heads = heads.select("line_no", "seq", "text", "process_at", "device_at") \
        .join(_fields_at(lines, g, "process_line", {"pid": "pid"}, "process_at"),
              on="process_at", how="left", maintain_order="left") \
        .join(_fields_at(lines, g, "device_line", {"device": "gpu"}, "device_at"),
              on="device_at", how="left", maintain_order="left")
    fields = kernel_fields(heads, g)
    summary = pl.col("invocations").is_not_null()
    key = pl.concat_str(pl.col("pid").fill_null(""), pl.col("gpu").fill_null(""),
                        pl.col("text").str.strip_chars(), separator="\x1f")
    first = pl.when(summary).then(pl.col("seq").min().over(key)).otherwise(pl.col("seq"))
    return fields.with_columns(first=first).with_columns(
        launch_id=(pl.col("first").rank("dense") - 1).cast(pl.Int64))


def kernel_fields(heads: pl.DataFrame, g: grammar.Grammar) -> pl.DataFrame:
    """The fields of kernel header lines. The trailing fields (`kernel_tail`) are matched at
    the line's end, the name is what precedes them: capture groups never run over names of
    a thousand characters."""
    text, tail = pl.col("text"), pl.col("tail")
    found = heads.with_columns(tail=text.str.extract(f"({g.regex('kernel_tail', anchored=False)})$", 1))
    name = text.str.head(text.str.len_chars() - tail.str.len_chars()).str.strip_chars()
    return found.with_columns(name.alias("kernel_name"), *g.extract(tail, "kernel_tail")).drop("tail")


def _with_launch_ids(lines: pl.DataFrame, heads: pl.DataFrame) -> pl.DataFrame:
    ids = heads.select("seq", "launch_id")
    return lines.join(ids, on="seq", how="left", maintain_order="left")


def _kernels(heads: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    if not heads.height:
        return pl.DataFrame()
    invocations = pl.col("invocations").cast(pl.Int64, strict=False)
    out = heads.unique("launch_id", keep="first", maintain_order=True).select(
        pl.col("line_no").alias("source_line"), "launch_id",
        pl.col("kernel_name").alias("name"),
        pl.when(invocations.is_not_null()).then(pl.lit("summary")).otherwise(pl.lit("launch")).alias("kind"),
        invocations.fill_null(1).alias("count"),
        pl.coalesce("device", "gpu").alias("device"),
        pl.col("context").cast(pl.Int64, strict=False),
        pl.col("stream").cast(pl.Int64, strict=False),
        pl.coalesce("grid", "grid_size").alias("grid"),
        pl.coalesce("block", "block_size").alias("block"),
    )
    regions = _nvtx_regions(lines)
    if regions.height:
        out = out.join(regions, on="launch_id", how="left", maintain_order="left")
    return out


def _nvtx_regions(lines: pl.DataFrame) -> pl.DataFrame:
    """`--nvtx` context under a kernel header -> one region path per launch."""
    items = lines.filter((pl.col("kind") == "nvtx_item_line") & pl.col("launch_id").is_not_null())
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
def _cuts(rule_text: str, rule: str) -> tuple[int, ...]:
    """Start of the first dash run, then the end offset of every dash run, of one table rule
    line (parsed by Lark, once per distinct text)."""
    if len(rule_text) > LARK_MAX:  # no real rule is this long; Earley is super-linear
        start = len(rule_text) - len(rule_text.lstrip(" "))
        dashes = rule_text.strip()
    else:
        tree = grammar.load("ncu").parse(rule_text, rule)
        token = next(t for t in tree.scan_values(lambda v: getattr(v, "type", "") == "DASHES"))
        start, dashes = token.column - 1, str(token)
    return (start, *(start + m.end() for m in re.finditer(r"-+", dashes)))


def _rule_columns(lines: pl.DataFrame) -> pl.DataFrame:
    """rule_at (a rule line's number) -> its column cuts; distinct rule texts are few, so each
    is parsed once however many tables share it."""
    rules = lines.filter(pl.col("kind").is_in(_RULES)).select(
        pl.col("line_no").alias("rule_at"), pl.col("text").alias("rule_text"), "kind")
    distinct = rules.select("rule_text", "kind").unique()
    cuts = [list(_cuts(t, k)) for t, k in distinct.iter_rows()]
    table = distinct.with_columns(
        cuts=pl.Series(cuts, dtype=pl.List(pl.Int64)),
        ncols=pl.Series([len(c) - 1 for c in cuts], dtype=pl.Int64))
    return rules.join(table, on=["rule_text", "kind"], how="left").select(
        "rule_at", pl.col("kind").alias("rule_kind"), "cuts", "ncols")


def _table_rows(lines: pl.DataFrame, g: grammar.Grammar, doc: Document,
                result: ParseResult) -> pl.DataFrame:
    kind, rule_kind = pl.col("kind"), pl.col("rule_kind")
    rows = lines.filter(kind.is_in(["table_row_line", "raw_row_line"]) & (pl.col("rule_at") > 0)
                        & pl.col("in_results") & pl.col("launch_id").is_not_null())
    rows = rows.join(_rule_columns(lines), on="rule_at", how="left")
    # Detail rows sit in a section under a four-space rule, raw-page rows under a two-space one.
    detail_row = (kind == "table_row_line") & (rule_kind == "table_rule_line") & (pl.col("section_at") > 0)
    raw_row = (kind == "raw_row_line") & (rule_kind == "raw_rule_line")
    rows = rows.filter(detail_row | raw_row)
    if not rows.height:
        return pl.DataFrame()
    rows = rows.join(_fields_at(lines, g, "section_line", {"section": "section"}, "section_at"),
                     on="section_at", how="left")
    sliced = _slice_cells(rows)
    loose = sliced.filter(~pl.col("fits"))
    if loose.height:
        sliced = sliced.update(_split_loose(loose, g, doc, result), on="line_no")
    sliced = sliced.filter(pl.col("metric").is_not_null() & (pl.col("metric") != ""))
    return sliced.with_columns(unit=pl.when(pl.col("unit") == "").then(None).otherwise(pl.col("unit")))


def _slice_cells(rows: pl.DataFrame) -> pl.DataFrame:
    """Cut each row at its table's columns. A row fits its columns when the rule's gaps (the
    character after each column) are blank."""
    text, cuts = pl.col("text"), pl.col("cuts")
    summary = pl.col("ncols") == 5

    def cut(i: int) -> pl.Expr:
        return cuts.list.get(i, null_on_oob=True)

    def cell(i: int) -> pl.Expr:
        return text.str.slice(cut(i), cut(i + 1) - cut(i)).str.strip_chars()

    def gap_blank(i: int) -> pl.Expr:
        return text.str.slice(cut(i), 1).is_in([" ", ""]) | cut(i).is_null()

    fits = cuts.is_not_null() & gap_blank(1) & gap_blank(2) & \
        pl.when(summary).then(gap_blank(3) & gap_blank(4)).otherwise(True)
    return rows.with_columns(
        fits=fits, metric=cell(0), unit=cell(1),
        value_text=pl.when(summary).then(cell(4)).otherwise(text.str.slice(cut(2)).str.strip_chars()),
        min_text=pl.when(summary).then(cell(2)),
        max_text=pl.when(summary).then(cell(3)),
    )


def _split_loose(loose: pl.DataFrame, g: grammar.Grammar, doc: Document,
                 result: ParseResult) -> pl.DataFrame:
    """Rows that overflow their columns, split from the right on 2+ spaces (grammar rules)."""
    m = loose.select("line_no", *g.extract(pl.col("text"), "metric_row"))
    s = loose.select("line_no", *g.extract(pl.col("text"), "summary_row"))
    summary = loose.select("line_no", (pl.col("ncols") == 5).alias("is_summary"))
    fixed = m.join(s, on="line_no", how="left", suffix="_s").join(summary, on="line_no").select(
        "line_no",
        pl.when(pl.col("is_summary")).then("metric_name_s").otherwise("metric_name").alias("metric"),
        pl.when(pl.col("is_summary")).then("metric_unit_s").otherwise("metric_unit").alias("unit"),
        pl.when(pl.col("is_summary")).then("average").otherwise("metric_value").alias("value_text"),
        pl.when(pl.col("is_summary")).then("minimum").alias("min_text"),
        pl.when(pl.col("is_summary")).then("maximum").alias("max_text"))
    bad = fixed.filter(pl.col("metric").is_null())
    for line_no in bad["line_no"].head(20).to_list():
        result.warn("ncu.unreadable-row", _explain(doc, g, line_no), line=line_no)
    return fixed.filter(pl.col("metric").is_not_null())


def _explain(doc: Document, g: grammar.Grammar, line_no: int) -> str:
    text = doc.lines()["text"][line_no - 1]
    if len(text) <= LARK_MAX:
        try:
            g.parse(text, "metric_row", path=doc.display, line=line_no)
        except ParseError as exc:
            return exc.describe()
    return ParseError("table row does not fit its columns", path=doc.display, line=line_no,
                      column=1, text=text).describe()


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


# -- end of file -----------------------------------------------------------------------------

def _check_truncation(lines: pl.DataFrame, result: ParseResult) -> None:
    """A table still open at the end of the file means the log was cut mid-kernel, in the
    layouts that close every table with a rule (detail pages; raw pages and old summaries
    simply stop)."""
    meaningful = lines.filter(~pl.col("kind").is_in(["blank_line", "other"]))
    if not meaningful.height:
        return
    closes = meaningful.filter(pl.col("kind").is_in(_RULES)
                               & (pl.col("kind").shift(1) == "table_row_line")).height
    last = meaningful.row(-1, named=True)
    if closes and last["kind"] == "table_row_line" and last["in_results"] \
            and last["launch_id"] is not None and last["rule_at"]:
        result.warn("ncu.truncated",
                    f"log ends inside a metrics table (line {last['line_no']}): the last kernel "
                    "may be incomplete", line=last["line_no"])
