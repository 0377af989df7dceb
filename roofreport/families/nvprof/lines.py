"""Every line of an nvprof log classified at once, with its context carried forward.

One frame per log, one row per line: the line's kind (`grammars/nvprof.lark`, rule `line`),
what a `==PID==` line says (rule `status_kind`), and, carried forward with window operations,
the process, the result section, the table the line sits in (the last header, until a blank or
`==PID==` line ends it), the device (of metrics tables and Unified Memory sections, and of each
GPU's part of a `--print-summary-per-gpu` result), the kernel of metrics tables and the NVTX
range path.
Spreadsheet re-saves (TAB-separated, quoted banner lines) are normalised first.
"""

from __future__ import annotations

import re
from functools import cache

import polars as pl

from roofreport import grammar
from roofreport.families.common.context import carried

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
# CSV report kind -> columns that identify it in a header (all of them), first match wins. A
# GPU trace names its launches' grids, its copies' sizes or its Unified Memory transfers (a
# trace without a kernel has no grid columns); a trace of API calls has times and names only;
# `--print-gpu-trace --metrics` names each launch's kernel and correlation id.
_CSV_KINDS = [("metrics", ("Invocations", "Metric Name")), ("events", ("Invocations", "Event Name")),
              ("gpu_trace", ("Start", "Grid X")), ("gpu_trace", ("Start", "Size")),
              ("gpu_trace", ("Start", "Unified Memory")), ("summary", ("Time(%)", "Calls")),
              ("api_trace", ("Start",)), ("kernel_metrics", ("Kernel", "Correlation_ID"))]
# Lines that close the table above them.
_ENDS_TABLE = ["status_line", "blank_line", "no_data_line", "job_end_line", "um_total_line"]
# status kind -> result section it opens (a `section_message` opens the section it titles,
# `OpenACC (excl)`, `CPU profiling result (bottom up)`: its title is the section's name)
SECTIONS = {
    "process_message": "start",
    "result_message": "result",
    "metric_result_message": "metrics",
    "event_result_message": "events",
    "api_calls_message": "api",
    "nvtx_result_message": "nvtx",
    "um_result_message": "um",
    # `--print-summary-per-gpu`: each GPU's part of the result (its summary table, Unified
    # Memory and NVTX sections) opens with `==PID== Device "..."`
    "device_message": "result",
    "section_message": None,
}
# What ends a GPU's part of a `--print-summary-per-gpu` result: the next process, or its next
# result (the next GPU's part sets its own).
_ENDS_GPU_PART = ["process_message", "application_message", "result_message"]


def load() -> grammar.Grammar:
    return grammar.load("nvprof")


def kind_of(text: str) -> str:
    """The `line` kind of one line (for the few lines looked at one by one: a file's head)."""
    return load().classify_line(text)


def matches(text: str, rule: str) -> bool:
    return load().pattern(rule).match(text) is not None


def report_kind(names: tuple[str, ...]) -> str | None:
    """The report a CSV header's column names make (`_CSV_KINDS`), or None."""
    for kind, columns in _CSV_KINDS:
        if all(column in names for column in columns):
            return kind
    return None


def status_message(text: str) -> str | None:
    """What a `==PID==` line says (None for other lines)."""
    if "==" not in text:   # (every status prefix holds it: `==PID==`, `========`)
        return None
    match = load().pattern("status_line").match(text)
    return match.group("status_message") or "" if match else None


# Up to this many structural lines, their kinds and fields are read line by line with Python's
# `re` (`_fields_each`: the same regexes, compiled once per process); above it, by polars queries
# over the column (`_fields`). A course log holds ~10 such lines, and each polars query there costs
# its fixed ~0.1-0.3 ms and compiles its regexes again: 19 course logs, `annotate` 10.8 -> 4.4 ms
# a file (CPU, one process). Past a few hundred lines polars' pass wins. Only plain lines
# (`grammar.is_plain`) go line by line: there `re` and polars' regex engine agree;
# tests/test_nvprof_lines_each.py compares the two paths.
_FEW_KNOWN = 200


def annotate(lines: pl.DataFrame) -> pl.DataFrame:
    """`lines` (line_no, text) with kind, status, message, pid and the carried context."""
    syntax = load()
    known = lines.filter(pl.col("text").str.contains(_any_kind(syntax)))
    if known.height <= _FEW_KNOWN and all(map(grammar.is_plain, known["text"])):
        known = _fields_each(known, syntax)
    else:
        known = _fields(known.with_columns(kind=syntax.classify_lines(known["text"], "line")), syntax)
    return lines.join(known.drop("text"), on="line_no", how="left", maintain_order="left") \
        .with_columns(pl.col("kind").fill_null("other")).with_columns(**_context()).with_columns(_nvtx_path())


@cache
def _any_kind(syntax: grammar.Grammar) -> str:
    """One regex matching a line of any kind of `line` (capture names dropped): a single pass
    finds the few structural lines among millions of table rows and program output."""
    kinds = [re.sub(r"\(\?P<\w+>", "(?:", syntax.regex(k)) for k in syntax.alternatives("line")]
    return "|".join(f"(?:{rx})" for rx in kinds)


def _field(syntax: grammar.Grammar, text: pl.Expr, rule: str, field: str) -> pl.Expr:
    return syntax.extract(text, rule)[syntax.groups(rule).index(field)]


def _fields(known: pl.DataFrame, syntax: grammar.Grammar) -> pl.DataFrame:
    """What the structural lines say: status message, kind and PID; device, kernel and NVTX
    names (grammar fields), on the few lines that have them."""
    kind, text = pl.col("kind"), pl.col("text")
    is_status = kind == "status_line"
    known = known.with_columns(
        message=pl.when(is_status).then(_field(syntax, text, "status_line", "status_message").fill_null("")),
        pid=pl.when(is_status).then(
            _field(syntax, text, "status_line", "status_prefix").str.extract(r"(\d+)", 1).cast(pl.Int64)),
        device_name=pl.when(kind == "device_line").then(_field(syntax, text, "device_line", "device_name")),
        kernel_name=pl.when(kind == "kernel_line").then(_field(syntax, text, "kernel_line", "kernel_name")),
    )
    message = pl.col("message")
    return known.with_columns(
        status=pl.when(is_status).then(syntax.classify(message, "status_kind", other="note")),
        domain_name=_field(syntax, message, "nvtx_domain_message", "nvtx_domain"),
        range_name=_field(syntax, message, "nvtx_range_message", "nvtx_range"),
        section_title=_field(syntax, message, "section_message", "section_title"),
        part_device=_field(syntax, message, "device_message", "device_name"))


def _fields_each(known: pl.DataFrame, syntax: grammar.Grammar) -> pl.DataFrame:
    """`_fields` of a few lines, one line at a time (`Grammar.classify_line`, `Grammar.fields`):
    the same columns, types and values."""
    columns: dict[str, list] = {name: [] for name in _EACH_SCHEMA}
    for text in known["text"]:
        kind = syntax.classify_line(text, "line")
        message = pid = device = kernel = status = None
        if kind == "status_line":
            parts = syntax.fields(text, "status_line")
            message = parts["status_message"] or ""
            digits = re.search(r"(\d+)", parts["status_prefix"] or "")
            pid = int(digits.group(1)) if digits else None
            status = syntax.classify_line(message, "status_kind", other="note")
        elif kind == "device_line":
            device = syntax.fields(text, "device_line")["device_name"]
        elif kind == "kernel_line":
            kernel = syntax.fields(text, "kernel_line")["kernel_name"]
        values = (kind, message, pid, device, kernel, status,
                  syntax.fields(message, "nvtx_domain_message")["nvtx_domain"],
                  syntax.fields(message, "nvtx_range_message")["nvtx_range"],
                  syntax.fields(message, "section_message")["section_title"],
                  syntax.fields(message, "device_message")["device_name"])
        for name, value in zip(_EACH_SCHEMA, values):
            columns[name].append(value)
    return pl.DataFrame({"line_no": known["line_no"], "text": known["text"], **columns},
                        schema_overrides=_EACH_SCHEMA)


# The columns `_fields` adds, in its order.
_EACH_SCHEMA = {"kind": pl.String, "message": pl.String, "pid": pl.Int64, "device_name": pl.String,
                "kernel_name": pl.String, "status": pl.String, "domain_name": pl.String,
                "range_name": pl.String, "section_title": pl.String, "part_device": pl.String}


@cache
def _context() -> dict[str, pl.Expr]:
    """The carried context's expressions, built once per process (building them costs ~0.4 ms,
    a sizeable part of a small log's read)."""
    kind, status = pl.col("kind"), pl.col("status")
    header = kind.is_in(list(TABLES))
    opens_section = status.is_in(list(SECTIONS))
    new_kernel = header | (kind == "device_line") | (kind == "status_line")
    return dict(
        pid=pl.col("pid").forward_fill(),
        section=carried(opens_section, pl.coalesce(status.replace_strict(SECTIONS, default=None),
                                                  pl.col("section_title")), pl.lit(False)),
        table=carried(header, kind.replace_strict(TABLES, default=None), kind.is_in(_ENDS_TABLE)),
        block=header.cum_sum().cast(pl.Int64),
        # a `Device "..."` line names the device of the section it sits in (metrics, Unified
        # Memory); a `--print-summary-per-gpu` part's device holds for all that part prints
        device=pl.coalesce(
            carried(kind == "device_line", pl.col("device_name"), opens_section | (status == "process_message")),
            carried(status == "device_message", pl.col("part_device"), status.is_in(_ENDS_GPU_PART))),
        kernel=carried(kind == "kernel_line", pl.col("kernel_name"), new_kernel),
        kernel_line=carried(kind == "kernel_line", pl.col("line_no"), new_kernel).cast(pl.Int64),
        nvtx_domain=carried(status == "nvtx_domain_message", pl.col("domain_name"),
                           status.is_in(["nvtx_thread_message", "nvtx_result_message"])
                           | (opens_section & (status != "nvtx_result_message"))),
        nvtx_range=carried(status == "nvtx_range_message", pl.col("range_name"),
                          status.is_in(["nvtx_domain_message", "nvtx_thread_message"]) | opens_section),
    )


@cache
def _nvtx_path() -> pl.Expr:
    """Domain `NCCL` + range `ncclAllReduce` -> `NCCL/ncclAllReduce` (unnamed domain dropped)."""
    domain = pl.when(pl.col("nvtx_domain") == "<unnamed>").then(None).otherwise(pl.col("nvtx_domain"))
    path = pl.concat_str([domain, pl.col("nvtx_range")], separator="/", ignore_nulls=True)
    return pl.when(pl.col("nvtx_range").is_null()).then(None).otherwise(path).alias("nvtx_path")


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
