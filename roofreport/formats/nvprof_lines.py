"""Every line of an nvprof log classified at once, with its context carried forward.

One frame per log, one row per line: the line's kind (`grammars/nvprof.lark`, rule `line`),
what a `==PID==` line says (rule `status_kind`), and, carried forward with window operations,
the process, the result section, the table the line sits in (the last header, until a blank or
`==PID==` line ends it), the device and kernel of metrics tables and the NVTX range path.
Spreadsheet re-saves (TAB-separated, quoted banner lines) are normalised first.
"""

from __future__ import annotations

import re
from functools import cache

import polars as pl

from roofreport import grammar

# header line kind -> table kind
TABLES = {
    "summary_header_line": "summary",
    "old_summary_header_line": "summary",
    "gpu_trace_header_line": "gpu_trace",
    "api_trace_header_line": "api_trace",
    "metrics_header_line": "metrics",
    "events_header_line": "events",
    "um_header_line": "um",
    "csv_header_line": "csv",
}
# Lines that close the table above them.
_ENDS_TABLE = ["status_line", "blank_line", "no_data_line", "job_end_line", "um_total_line"]
# status kind -> result section it opens
SECTIONS = {
    "process_message": "start",
    "result_message": "result",
    "metric_result_message": "metrics",
    "event_result_message": "events",
    "api_calls_message": "api",
    "nvtx_result_message": "nvtx",
    "um_result_message": "um",
}


def load() -> grammar.Grammar:
    return grammar.load("nvprof")


@cache
def _compiled(rule: str) -> re.Pattern:
    return re.compile(load().regex(rule))


def kind_of(text: str) -> str:
    """The `line` kind of one line (for the few lines looked at one by one: a file's head)."""
    for kind in load().alternatives("line"):
        if _compiled(kind).match(text):
            return kind
    return "other"


def matches(text: str, rule: str) -> bool:
    return _compiled(rule).match(text) is not None


def annotate(lines: pl.DataFrame) -> pl.DataFrame:
    """`lines` (line_no, text) with kind, status, message, pid and the carried context."""
    g = load()
    lines = _classify(lines, g)
    lines = _with_status(lines, g)
    return _with_context(lines)


@cache
def _any_kind(g: grammar.Grammar) -> str:
    """One regex matching a line of any kind of `line` (capture names dropped): a single pass
    finds the few structural lines among millions of table rows."""
    kinds = [re.sub(r"\(\?P<\w+>", "(?:", g.regex(k)) for k in g.alternatives("line")]
    return "|".join(f"(?:{rx})" for rx in kinds)


def _classify(lines: pl.DataFrame, g: grammar.Grammar) -> pl.DataFrame:
    """The `line` kind of every line; only lines of some kind go through the rule by rule
    classification, the rest (table rows, program output) are `other` at once."""
    known = lines.filter(pl.col("text").str.contains(_any_kind(g)))
    kinds = known.select("line_no", g.classify(pl.col("text"), "line").alias("kind"))
    return lines.join(kinds, on="line_no", how="left", maintain_order="left") \
        .with_columns(pl.col("kind").fill_null("other"))


def _with_status(lines: pl.DataFrame, g: grammar.Grammar) -> pl.DataFrame:
    is_status = pl.col("kind") == "status_line"
    prefix, message = g.extract(pl.col("text"), "status_line")
    lines = lines.with_columns(
        message=pl.when(is_status).then(message.fill_null("")),
        pid=pl.when(is_status).then(prefix.str.extract(r"(\d+)", 1).cast(pl.Int64)),
    )
    return lines.with_columns(
        status=pl.when(is_status).then(g.classify(pl.col("message"), "status_kind", other="note")))


def _carry(start: pl.Expr, value: pl.Expr, reset: pl.Expr) -> pl.Expr:
    """`value` where `start` holds, carried forward until the next `reset` (then null)."""
    marked = pl.when(start).then(value.cast(pl.String)).when(reset).then(pl.lit("\x00"))
    carried = marked.otherwise(None).forward_fill()
    return pl.when(carried == "\x00").then(None).otherwise(carried)


def _with_context(lines: pl.DataFrame) -> pl.DataFrame:
    kind, status = pl.col("kind"), pl.col("status")
    header = kind.is_in(list(TABLES))
    opens_section = status.is_in(list(SECTIONS))
    return lines.with_columns(
        pid=pl.col("pid").forward_fill(),
        section=_carry(opens_section, status.replace_strict(SECTIONS, default=None), pl.lit(False)),
        table=_carry(header, kind.replace_strict(TABLES, default=None), kind.is_in(_ENDS_TABLE)),
        block=header.cum_sum().cast(pl.Int64),
        device=_carry(kind == "device_line", pl.col("text"),
                      opens_section | (status == "process_message")),
        kernel=_carry(kind == "kernel_line", pl.col("text"),
                      header | (kind == "device_line") | (kind == "status_line")),
        kernel_line=_carry(kind == "kernel_line", pl.col("line_no"),
                           header | (kind == "device_line") | (kind == "status_line")).cast(pl.Int64),
        nvtx_domain=_carry(status == "nvtx_domain_message", pl.col("message"),
                           status.is_in(["nvtx_thread_message", "nvtx_result_message"])
                           | (opens_section & (status != "nvtx_result_message"))),
        nvtx_range=_carry(status == "nvtx_range_message", pl.col("message"),
                          status.is_in(["nvtx_domain_message", "nvtx_thread_message"]) | opens_section),
    ).with_columns(_nvtx_path(), _device_name(), _kernel_name())


def _nvtx_path() -> pl.Expr:
    """`Domain "NCCL"` + `Range "ncclAllReduce"` -> `NCCL/ncclAllReduce` (unnamed domain dropped)."""
    domain = pl.col("nvtx_domain").str.extract(r'Domain "([^"]+)"', 1)
    rng = pl.col("nvtx_range").str.extract(r'Range "([^"]+)"', 1)
    domain = pl.when(domain == "<unnamed>").then(None).otherwise(domain)
    path = pl.concat_str([domain, rng], separator="/", ignore_nulls=True)
    return pl.when(rng.is_null()).then(None).otherwise(path).alias("nvtx_path")


def _device_name() -> pl.Expr:
    return pl.col("device").str.extract(r'Device "([^"]+)"', 1).alias("device")


def _kernel_name() -> pl.Expr:
    return pl.col("kernel").str.extract(r"Kernel: (.*?)[ \t]*$", 1).alias("kernel")


# -- spreadsheet re-saves -------------------------------------------------------------------

def is_spreadsheet(lines: pl.DataFrame) -> bool:
    """A `--csv` log re-saved by a spreadsheet as TAB-separated text (header with TABs)."""
    header = r'^"?(?:Device|Type|Start|Time\(%\))"?\t"?(?:Kernel|Time\(%\)|Duration|Time)"?\t'
    return bool(lines.select(pl.col("text").str.contains(header).any()).item())


def unspreadsheet(lines: pl.DataFrame) -> pl.DataFrame:
    """Undo what the re-save did to the lines around the table: padding TABs stripped, a line
    the spreadsheet quoted unquoted (`""` -> `"`). Table rows stay TAB-separated."""
    text = pl.col("text").str.strip_chars_end("\t")
    quoted = text.str.contains(r'^"[^\t]*"$')
    inner = text.str.slice(1, text.str.len_chars() - 2).str.replace_all('""', '"', literal=True)
    text = pl.when(quoted).then(inner).otherwise(text)
    # nvprof's own lines were split at their commas (`process 95001<TAB> command: ...`).
    status = text.str.contains(r"^(?:==\d+==|========)")
    return lines.with_columns(text=pl.when(status).then(text.str.replace_all("\t", ",", literal=True))
                              .otherwise(text))
