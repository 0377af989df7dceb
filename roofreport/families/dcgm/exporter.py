"""dcgm-exporter's Prometheus text -> raw samples.

`curl localhost:9400/metrics` prints `# HELP`/`# TYPE` lines and one line per metric and GPU,
`DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-...",modelName="NVIDIA A100-SXM4-40GB",Hostname="n1"} 45`;
a loop appends scrape after scrape, sometimes with a `date` line before each or its own time
before each line. The metric name is the field's `DCGM_FI_` name (`fields`), the labels
say which GPU (`gpu`), its uuid and model; a line with `GPU_I_ID` is a MIG instance's, not the
GPU's, and is left out (`dcgm.entity-skipped`).

The n-th line of one metric and GPU belongs to the n-th scrape: a scrape is one sample per GPU,
its time the Prometheus sample time (ms) when printed, else the loop's own time, else the
`date` line above it. Other exporters' metrics in the same text are not DCGM's and are skipped;
DCGM's blank sentinels and `NaN` are null.
"""

from __future__ import annotations

import polars as pl

from roofreport import grammar
from roofreport.families.common import series
from roofreport.families.common.textio import Document
from roofreport.families.common.times import parse_datetime
from roofreport.families.dcgm import fields as dcgm_fields
from roofreport.families.spec import ParseResult

DT = pl.Datetime("us")
_LABELS = ("gpu_label", "uuid_label", "model_label", "instance_label", "host_label")


_EXPORTER_KINDS = ("exporter_comment_line", "exporter_sample_line", "blank_line", "date_line",
                   "command_line")


def read(frame: pl.DataFrame, doc: Document, result: ParseResult) -> pl.DataFrame:
    syntax = grammar.load("dcgm")
    strays = frame.filter(~pl.col("kind").is_in(_EXPORTER_KINDS)).select("line_no", "text")
    series.warn_unparsed(result, "dcgm.bad-row", syntax, "exporter_sample_line", list(strays.iter_rows()),
                         doc.display)
    lines = _parts(frame.filter(pl.col("kind") == "exporter_sample_line"), syntax)
    lines = lines.filter(pl.col("metric_name").str.starts_with("DCGM_FI_"))
    if not lines.height:
        return pl.DataFrame()
    lines = _known(lines, result)
    lines = _whole_gpus(_with_labels(lines), result)
    if not lines.height:
        return pl.DataFrame()
    lines = _times(lines, frame)
    return _wide(lines, result)


def _parts(lines: pl.DataFrame, syntax: grammar.Grammar) -> pl.DataFrame:
    """The pieces of `exporter_sample_line`, each taken with its grammar terminal from the end
    it sits at (the whole rule's regex with its captures costs several times more): the loop's
    time and the metric from the start, the labels between the braces, the value and
    Prometheus's time from the end."""
    term = syntax.terminal
    head = pl.col("text").str.extract_groups(f"^(?:({term('SCRAPE_TIME')})[ \\t]+)?({term('METRIC_NAME')})")
    tail = pl.col("text").str.extract_groups(
        f"[ \\t}}]({term('METRIC_VALUE')})(?:[ \\t]+({term('SAMPLE_MS')}))?[ \\t]*$")
    return lines.select(
        "line_no", head.struct.field("1").alias("scrape_time"), head.struct.field("2").alias("metric_name"),
        pl.col("text").str.extract(r"\{(.*)\}", 1).alias("labels"),
        tail.struct.field("1").alias("metric_value"), tail.struct.field("2").alias("sample_ms"))


def _with_labels(lines: pl.DataFrame) -> pl.DataFrame:
    """The labels roofreport reads, taken once per distinct label set (a scrape loop repeats
    the same few, one per GPU, on every line)."""
    distinct = lines.select(pl.col("labels").unique())
    distinct = distinct.with_columns(_label(pl.col("labels"), rule) for rule in _LABELS)
    return lines.join(distinct, on="labels", how="left", nulls_equal=True)


def _label(labels: pl.Expr, rule: str) -> pl.Expr:
    """One label's value (`gpu="0"` -> "0"), null when the line does not carry it."""
    rx = grammar.load("dcgm").regex(rule, anchored=False)
    group = grammar.load("dcgm").groups(rule)[0]
    return labels.str.extract(f"(?:^|[,\\s]){rx}", 1).alias(group)


def _known(lines: pl.DataFrame, result: ParseResult) -> pl.DataFrame:
    names = lines["metric_name"].unique(maintain_order=True).to_list()
    fields = {name: dcgm_fields.lookup(name) for name in names}
    unknown = [n for n, f in fields.items() if f is None]
    if unknown:
        first = lines.filter(pl.col("metric_name").is_in(unknown))["line_no"][0]
        result.warn("dcgm.unknown-field", f"metric(s) {', '.join(unknown[:8])} are no DCGM field "
                    "roofreport knows: not read", line=first)
    kept = {n: f for n, f in fields.items() if f is not None and f.column and not f.column.startswith("_")}
    return lines.filter(pl.col("metric_name").is_in(list(kept))).with_columns(
        column=pl.col("metric_name").replace_strict({n: f.column for n, f in kept.items()}),
        factor=pl.col("metric_name").replace_strict({n: f.factor for n, f in kept.items()},
                                                    return_dtype=pl.Float64),
        priority=pl.col("metric_name").replace_strict(
            {n: dcgm_fields.FIELDS.index(f) for n, f in kept.items()}, return_dtype=pl.Int64))


def _whole_gpus(lines: pl.DataFrame, result: ParseResult) -> pl.DataFrame:
    mig = lines.filter(pl.col("instance_label").is_not_null())
    if mig.height:
        result.warn("dcgm.entity-skipped", f"{mig.height} metric lines of MIG instances (GPU_I_ID) "
                    "are not whole GPUs: not read into samples", line=mig["line_no"][0])
    nameless = lines.filter(pl.col("gpu_label").is_null() & pl.col("instance_label").is_null())
    if nameless.height:
        result.warn("dcgm.no-gpu", f"{nameless.height} metric lines carry no gpu label: not read",
                    line=nameless["line_no"][0])
    return lines.filter(pl.col("gpu_label").is_not_null() & pl.col("instance_label").is_null()).with_columns(
        gpu_index=pl.col("gpu_label").cast(pl.Int64))


def _times(lines: pl.DataFrame, frame: pl.DataFrame) -> pl.DataFrame:
    """The scrape each line belongs to, and its time."""
    syntax = grammar.load("dcgm")
    dates = frame.filter(pl.col("kind") == "date_line").select(
        pl.col("line_no").alias("_date_line"),
        parse_datetime(syntax.extract(pl.col("text"), "date_line")[0]).alias("_date"))
    lines = lines.sort("line_no").join_asof(dates, left_on="line_no", right_on="_date_line",
                                            strategy="backward")
    own = pl.col("sample_ms").cast(pl.Int64, strict=False) * 1000
    loop_time = (parse_datetime(pl.col("scrape_time")) if lines["scrape_time"].is_not_null().any()
                 else pl.lit(None, DT))
    return lines.with_columns(
        scrape_no=pl.int_range(pl.len()).over("metric_name", "gpu_index").cast(pl.Int64),
        timestamp=pl.coalesce(own.cast(DT), loop_time, pl.col("_date")))


def _wide(lines: pl.DataFrame, result: ParseResult) -> pl.DataFrame:
    value = pl.col("metric_value").cast(pl.Float64, strict=False)
    lines = lines.with_columns(number=pl.when(value.is_finite() & (value < dcgm_fields.BLANK_AT_OR_ABOVE))
                               .then(value * pl.col("factor")))
    columns = sorted(set(lines["column"].to_list()) - {"gpu_name"})
    wide = lines.sort("priority", "line_no").group_by("gpu_index", "scrape_no").agg(
        pl.col("line_no").min().alias("source_line"),
        pl.col("timestamp").drop_nulls().first(),
        pl.col("model_label").drop_nulls().first().alias("gpu_name"),
        *[pl.col("number").filter((pl.col("column") == col) & pl.col("number").is_not_null()).first()
          .alias(col) for col in columns])
    hosts = lines["host_label"].drop_nulls()
    if hosts.len():
        result.hints.host = hosts[0]
    return wide.sort("source_line").rename({"scrape_no": "sample_no"})
