"""nvprof's text tables, from the annotated lines (`lines.annotate`) to shared tables.

* summary mode -> `kernels` (kind "summary"; with `--print-summary-per-gpu` each row carries
  the GPU whose part of the result it sits in) and `api_calls` (kind "summary"); NVTX ranges ->
  `regions`, the activities inside each range -> `metrics` (section "NVTX <path>: <type>"),
  rows of other Types (`OpenACC (excl)`, `OpenMP (incl)`) -> `metrics` (section: the Type);
* `--print-gpu-trace` -> `activities`, and `kernels` (kind "launch") for the kernel launches
  only (memcpy/memset rows are activities only, as in nsys traces); `--print-api-trace` ->
  `api_calls` (kind "trace");
* `--metrics` / `--events` -> `metrics` (stat min/max/avg/total; a cell holding no value is
  null, `novalue.py`) plus one `kernels` row per (process, device, kernel) holding the
  invocation count, sharing its `launch_id`;
* the Unified Memory section -> `metrics` (section "Unified Memory").

Rows are the lines under a header that match the table's row rule. A line there that starts
like a row but fits no rule is reported with Lark's explanation; other lines (program output
interleaved with the table) are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common.activity import activity_kinds
from roofreport.families.common.textio import Document
from roofreport.families.nvprof import novalue, values as V
from roofreport.families.nvprof.lines import load
from roofreport.families.spec import ParseResult
from roofreport.tables import schema
from roofreport.tables.frames import printed_dims

_MAX_BAD_ROWS = 20


@dataclass(frozen=True)
class RowRule:
    """How to read the rows of one table kind: the grammar rule, the field that proves a match,
    and the looser rule saying a line was meant to be a row."""

    rule: str
    key: str
    start: str


RULES = {
    "summary": RowRule("summary_row", "time_total", "summary_row_start"),
    "gpu_trace": RowRule("gpu_trace_row", "duration", "trace_row_start"),
    "api_trace": RowRule("api_trace_row", "duration", "trace_row_start"),
    "metrics": RowRule("metric_row", "value_avg", "counted_row_start"),
    "events": RowRule("event_row", "value_avg", "counted_row_start"),
    "um": RowRule("um_row", "um_name", "counted_row_start"),
}


def read_all(lines: pl.DataFrame, doc: Document, result: ParseResult) -> list[pl.DataFrame]:
    """Every text table of the log into `result`; metric and event rows are returned instead
    (`add_counted` takes them all at once, CSV ones too, so a kernel gets one launch)."""
    readers = {"summary": _summary, "gpu_trace": _gpu_trace, "api_trace": _api_trace,
               "um": _unified_memory}
    # The tables the log holds rows of, looked up once: a small log has one or two of the six,
    # and a query per absent one costs more than this one.
    present = set(lines.filter(pl.col("kind") == "other")["table"].unique().drop_nulls().to_list())
    for table, reader in readers.items():
        rows = rows_of(lines, table, doc, result) if table in present else None
        if rows is not None and rows.height:
            reader(rows, table, result)
    counted, no_values = [], []
    for table in ("metrics", "events"):
        if table not in present:
            continue
        rows = rows_of(lines, table, doc, result)
        if rows.height:
            rows = novalue.fill_titled(rows, lines)
            name_col = "metric_name" if table == "metrics" else "event_name"
            no_values.append(novalue.text_cells(rows, name_col, lines))
            counted.append(_counted(rows, table))
    if no_values:
        novalue.report(pl.concat(no_values).sort("line_no", "column"), doc, result)
    return counted


def rows_of(lines: pl.DataFrame, table: str, doc: Document, result: ParseResult) -> pl.DataFrame:
    """The lines of `table` that are rows, with the row rule's fields."""
    spec = RULES[table]
    syntax = load()
    candidates = lines.filter((pl.col("table") == table) & (pl.col("kind") == "other"))
    if not candidates.height:
        return candidates
    fields = candidates.with_columns(syntax.extract(pl.col("text"), spec.rule))
    meant = pl.col("text").str.contains(syntax.regex(spec.start)) | pl.col("text").str.contains(syntax.regex("table_like"))
    bad = fields.filter(pl.col(spec.key).is_null() & meant)
    good = fields.filter(pl.col(spec.key).is_not_null())
    if bad.height and table in ("metrics", "events"):   # an empty cell: cut at the header's titles
        cut = novalue.cut_at_titles(bad, lines)
        bad = bad.filter(~pl.col("line_no").is_in(cut["line_no"].implode()))
        good = pl.concat([good, cut.select(good.columns)]).sort("line_no") if cut.height else good
    report_bad_rows(bad["line_no"].to_list(), bad["text"].to_list(), spec.rule, lines, doc, result)
    return good


def report_bad_rows(line_nos: list[int], texts: list[str], rule: str, lines: pl.DataFrame,
                    doc: Document, result: ParseResult) -> None:
    """A warning per unreadable row (Lark says where it fails); a cut-off last row is
    `nvprof.truncated`."""
    if not line_nos:
        return
    last = lines.filter(pl.col("kind") != "blank_line")["line_no"].max()
    for line_no, text in list(zip(line_nos, texts))[:_MAX_BAD_ROWS]:
        message = load().explain(text, rule, doc.display, line_no, otherwise=ParseError(
            "nvprof: row does not fit its table", path=doc.display, line=line_no, column=1,
            text=text)).describe()
        if line_no == last:
            result.warn("nvprof.truncated", "log ends inside a table, its last row is cut: "
                        + message, line=line_no)
        else:
            result.warn("nvprof.unreadable-row", message, line=line_no)
    if len(line_nos) > _MAX_BAD_ROWS:
        result.warn("nvprof.unreadable-row", f"{len(line_nos) - _MAX_BAD_ROWS} more unreadable rows")


# -- summary mode ----------------------------------------------------------------------------

def section_type() -> pl.Expr:
    """The Type of summary rows printed without a Type column (CUDA <= 8, hand-made CSVs): the
    section they sit in says it (`API calls:`, `OpenACC (excl):`), GPU activities otherwise."""
    section = pl.col("section")
    return pl.when(section == "api").then(pl.lit("API calls")) \
        .when(section.str.contains("^[A-Z]")).then(section).otherwise(pl.lit("GPU activities"))


def _summary(rows: pl.DataFrame, table: str, result: ParseResult) -> None:
    rows = rows.with_columns(
        activity_type=pl.col("activity_type").forward_fill().over("block").fill_null(section_type()))
    add_summary(rows.select(
        pl.col("line_no").alias("source_line"), "activity_type", "nvtx_path", "pid", "device",
        pl.col("summary_name").alias("name"), *summary_values()), result)


# (metric, stat, value column, unit) of a summary row in long form; `<column>_text` holds the
# cell as printed.
_SUMMARY_CELLS = [("Time(%)", None, "percent", "%"), ("Calls", None, "calls", None),
                  ("Time", "total", "total_ns", "ns"), ("Time", "avg", "avg_ns", "ns"),
                  ("Time", "min", "min_ns", "ns"), ("Time", "max", "max_ns", "ns")]
SUMMARY_TEXT = {"percent": "time_percent", "total_ns": "time_total", "calls": "calls",
                 "avg_ns": "time_avg", "min_ns": "time_min", "max_ns": "time_max"}


def summary_values() -> list[pl.Expr]:
    """Time(%), Time, Calls, Avg, Min, Max of summary rows whose cells carry their units."""
    values = [V.scaled(pl.col(cell)).alias(col) for col, cell in SUMMARY_TEXT.items() if col != "calls"]
    texts = [pl.col(cell).alias(f"{col}_text") for col, cell in SUMMARY_TEXT.items()]
    return [*values, V.integer(pl.col("calls")).alias("calls"), *texts]


def add_summary(rows: pl.DataFrame, result: ParseResult) -> None:
    """Summary rows (source_line, activity_type, nvtx_path, device, name, percent, total_ns,
    calls, avg/min/max_ns and their `_text`) into kernels, api_calls, regions and metrics.

    `device` is the GPU of a `--print-summary-per-gpu` part (`lines.py`), whose rows are that
    GPU's alone; null in a plain summary, whose rows add every GPU's launches of a kernel
    together."""
    in_range = pl.col("nvtx_path").is_not_null()
    kind = pl.col("activity_type")
    if "device" not in rows.columns:
        rows = rows.with_columns(pl.lit(None, pl.String).alias("device"))
    gpu = rows.filter(~in_range & (kind == "GPU activities"))
    if gpu.height:
        _warn_cut_tables(gpu, result)
        result.add("kernels", gpu.select(
            "source_line", pl.col("source_line").alias("launch_id"), "name",
            pl.lit("summary").alias("kind"), pl.col("calls").alias("count"),
            # nvprof prints Avg, Min and Max per launch, never a median: median_ns stays null.
            pl.col("total_ns").alias("duration_ns"), "min_ns", "max_ns", "device"))
        result.add("metrics", _summary_metrics(
            gpu.with_columns(pl.lit("GPU activities").alias("section"),
                             pl.col("source_line").alias("launch_id"))))
    api = rows.filter(~in_range & (kind == "API calls"))
    if api.height:
        result.add("api_calls", api.select(
            "source_line", pl.lit("summary").alias("kind"), "name", "calls", "total_ns",
            "avg_ns", "min_ns", "max_ns"))
    _nvtx(rows.filter(in_range | ~kind.is_in(["GPU activities", "API calls"])), result)


# The GPU activities of one process (of one GPU, in a `--print-summary-per-gpu` part) add to 100 %
# of its time; printed to 0.01 % a row, they add to at least this. (The corpus's 206 summaries,
# text and CSV, all add to 99.5 % or more.)
_WHOLE_TABLE_PCT = 99.0


def _warn_cut_tables(gpu: pl.DataFrame, result: ParseResult) -> None:
    """`nvprof.truncated` (the run was cut short: pipeline/cutshort.py) for a GPU activities table
    whose Time(%) cells add to less than `_WHOLE_TABLE_PCT`: it lost its last rows, a log cut off
    at a line's end, which no unreadable row shows (a per-GPU log cut in one GPU's part would
    otherwise set a GPU with part of its time against the others). Once per log: a log cut inside
    a row says so at that row (`report_bad_rows`)."""
    if any(w.code == "nvprof.truncated" for w in result.warnings):
        return      # the cut row is said already, where it is
    keys = [c for c in ("pid", "device") if c in gpu.columns]
    sums = gpu.group_by(keys, maintain_order=True).agg(
        pl.col("percent").sum(), pl.col("percent").is_null().any().alias("unprinted"), pl.col("source_line").max())
    for row in sums.filter(~pl.col("unprinted") & (pl.col("percent") < _WHOLE_TABLE_PCT)).iter_rows(named=True):
        of = f" of {row['device']}" if row.get("device") else ""
        result.warn("nvprof.truncated", f"the GPU activities{of} add to {row['percent']:.1f} % of their time, not "
                    "100 %: the log ends before the rest of that table (was the run cut off?)",
                    line=row["source_line"])


def _nvtx(rows: pl.DataFrame, result: ParseResult) -> None:
    """NVTX ranges -> regions; what ran inside them (and unknown types) -> metrics."""
    ranges = rows.filter(pl.col("activity_type") == "Range")
    if ranges.height:
        result.add("regions", ranges.select(
            "source_line", pl.lit("nvtx").alias("kind"), "name",
            pl.col("nvtx_path").alias("path"), pl.col("total_ns").alias("duration_ns"),
            pl.col("calls").alias("count")))
    inside = rows.filter(pl.col("activity_type") != "Range")
    if inside.height:
        in_range = pl.concat_str([pl.lit("NVTX "), pl.col("nvtx_path"), pl.lit(": "),
                                  pl.col("activity_type")])
        section = pl.when(pl.col("nvtx_path").is_null()).then(pl.col("activity_type")).otherwise(in_range)
        result.add("metrics", _summary_metrics(
            inside.with_columns(section.alias("section"), pl.lit(None, pl.Int64).alias("launch_id"))))


def _summary_metrics(rows: pl.DataFrame) -> pl.DataFrame:
    """Time(%), Calls and Time total/avg/min/max of summary rows (with section and launch_id)
    in long form."""
    common = ["source_line", "launch_id", pl.col("name").alias("kernel_name"), "device", "section"]
    parts = [rows.select(*common, pl.lit(metric).alias("metric"), pl.lit(stat, pl.String).alias("stat"),
                         pl.lit(unit, pl.String).alias("unit"), pl.col(col).cast(pl.Float64).alias("value"),
                         pl.col(f"{col}_text").alias("value_text"))
             for metric, stat, col, unit in _SUMMARY_CELLS]
    return pl.concat(parts).sort("source_line", maintain_order=True)


# -- traces ----------------------------------------------------------------------------------

def _gpu_trace(rows: pl.DataFrame, table: str, result: ParseResult) -> None:
    trace = rows.select(
        pl.col("line_no").alias("source_line"),
        pl.col("trace_name").alias("name"),
        V.scaled(pl.col("start")).alias("start_ns"),
        V.scaled(pl.col("duration")).alias("duration_ns"),
        V.scaled(pl.col("size")).alias("bytes"),
        pl.col("trace_device").alias("device"),
        V.integer(pl.col("context")).alias("context"),
        V.integer(pl.col("stream")).alias("stream"),
        V.integer(pl.col("correlation_id")).alias("correlation_id"),
        printed_dims(pl.col("grid")).alias("grid"), printed_dims(pl.col("block")).alias("block"))
    add_gpu_trace(trace, result)


def add_gpu_trace(trace: pl.DataFrame, result: ParseResult) -> None:
    """Trace rows -> one activity each (their kind from their name, once per distinct name,
    unless the reader knows it), and one `kernels` launch per kernel launch (memcpy and memset
    rows are activities only, as in the nsys trace; the summary mode alone lists copies among
    the kernels). The kernels are picked from the conformed activities, so both tables share
    one copy of each name (Categorical -> shared-buffer String)."""
    if "kind" not in trace.columns:
        trace = trace.with_columns(_kinds(trace))
    activities = schema.conform("activities", trace)
    result.add("activities", activities)
    # Columns picked before filtering: the filter copies only what the kernels keep.
    result.add("kernels", activities.select(
        "source_line", pl.col("source_line").alias("launch_id"), "name",
        pl.lit("launch").alias("kind"), pl.lit(1).alias("count"), "duration_ns", "device",
        "context", "stream", "grid", "block").filter(activities["kind"] == "kernel"))


def _kinds(trace: pl.DataFrame) -> pl.Series:
    """Each trace row's kind: a row with a grid is a kernel launch, any other row an activity
    of the kind its name says (a copy, a set, a Unified Memory page fault...), `other` when
    its name says none."""
    kinds = activity_kinds(trace["name"]).alias("kind")
    if trace["grid"].null_count() == trace.height:   # a trace that prints no grids at all
        return kinds
    # Names and grids agree on almost every row: only the rows where they do not are changed
    # (no second column of millions of kind strings).
    launched = trace["grid"].is_not_null()
    disagree = (launched != (kinds == "kernel")).arg_true()
    if not disagree.len():
        return kinds
    return kinds.scatter(disagree, pl.select(pl.when(launched.gather(disagree)).then(pl.lit("kernel"))
                                             .otherwise(pl.lit("other"))).to_series())


def _api_trace(rows: pl.DataFrame, table: str, result: ParseResult) -> None:
    result.add("api_calls", rows.select(
        pl.col("line_no").alias("source_line"), pl.lit("trace").alias("kind"),
        pl.col("api_name").alias("name"), pl.lit(1).alias("calls"),
        V.scaled(pl.col("start")).alias("start_ns"),
        V.scaled(pl.col("duration")).alias("total_ns")))


# -- metrics and events ----------------------------------------------------------------------

STATS = ["min", "max", "avg", "total"]


def _counted(rows: pl.DataFrame, table: str) -> pl.DataFrame:
    """Metric or event rows as `add_counted` takes them."""
    name_col = "metric_name" if table == "metrics" else "event_name"
    return rows.select(
        pl.col("line_no").alias("source_line"), pl.col("kernel_line").alias("launch_id"), "pid", "device",
        pl.col("kernel").alias("kernel_name"), V.integer(pl.col("invocations")).alias("invocations"),
        pl.col(name_col).alias("metric"),
        pl.lit("Metric result" if table == "metrics" else "Event result").alias("section"),
        *[(pl.col(f"value_{s}") if f"value_{s}" in rows.columns else pl.lit(None, pl.String)).alias(s)
          for s in STATS])


def add_counted(values: pl.DataFrame, result: ParseResult) -> None:
    """Metric/event rows (source_line, launch_id, pid, device, kernel_name, invocations, metric,
    section, one text column per stat of STATS) -> metrics in long form, and one kernels row per
    (process, device, kernel).

    A kernel's rows share one launch id: the line of its `Kernel:` header in text (events and
    metrics of one kernel meet there), its first row in CSV (`launch_id` null)."""
    keys = ["pid", "device", "kernel_name"]
    launches = values.group_by(keys, maintain_order=True).agg(
        pl.coalesce(pl.col("launch_id").min(), pl.col("source_line").min()).alias("launch_id"),
        pl.col("invocations").max().alias("count"))
    values = values.drop("launch_id").join(launches.select(*keys, "launch_id"), on=keys,
                                           how="left", nulls_equal=True)
    result.add("kernels", launches.select(
        pl.col("launch_id").alias("source_line"), "launch_id", pl.col("kernel_name").alias("name"),
        pl.lit("summary").alias("kind"), "count", "device"))
    parts = [values.select(
        "source_line", "launch_id", "kernel_name", "device", "section", "metric",
        pl.lit(stat).alias("stat"), V.cell_unit(pl.col(stat)).alias("text_unit"),
        V.scaled(pl.col(stat)).alias("value"), pl.col(stat).str.strip_chars().alias("value_text"))
        .filter(pl.col("value_text").is_not_null()) for stat in STATS]
    long = pl.concat(parts).sort("source_line", maintain_order=True)
    result.add("metrics", long.with_columns(V.base_unit(pl.col("text_unit")).alias("unit"))
               .drop("text_unit"))


# -- Unified Memory ---------------------------------------------------------------------------

def _unified_memory(rows: pl.DataFrame, table: str, result: ParseResult) -> None:
    base = rows.select(pl.col("line_no").alias("source_line"), "device",
                       pl.col("um_name").alias("kernel_name"), "um_count", "um_avg_size",
                       "um_min_size", "um_max_size", "um_total_size", "um_total_time")
    cells = [("Count", None, "um_count"), ("Size", "avg", "um_avg_size"), ("Size", "min", "um_min_size"),
             ("Size", "max", "um_max_size"), ("Size", "total", "um_total_size"),
             ("Time", "total", "um_total_time")]
    parts = [base.select(
        "source_line", "device", "kernel_name", pl.lit("Unified Memory").alias("section"),
        pl.lit(metric).alias("metric"), pl.lit(stat, pl.String).alias("stat"),
        V.base_unit(V.cell_unit(pl.col(col))).alias("unit"), V.scaled(pl.col(col)).alias("value"),
        pl.col(col).alias("value_text")) for metric, stat, col in cells]
    result.add("metrics", pl.concat(parts).sort("source_line", maintain_order=True))


def add_um_totals(lines: pl.DataFrame, result: ParseResult) -> None:
    """`Total CPU Page faults: 24` lines of the Unified Memory section (program output such as
    `Total Iterations: 100` elsewhere is not)."""
    syntax = load()
    totals = lines.filter((pl.col("kind") == "um_total_line") & (pl.col("section") == "um"))
    if not totals.height:
        return
    fields = totals.with_columns(syntax.extract(pl.col("text"), "um_total_line"))
    result.add("metrics", fields.select(
        pl.col("line_no").alias("source_line"), "device",
        pl.lit("Unified Memory").alias("section"),
        pl.concat_str([pl.lit("Total "), pl.col("um_total_name")]).alias("metric"),
        pl.col("um_total_count").cast(pl.Float64).alias("value"),
        pl.col("um_total_count").alias("value_text")))
