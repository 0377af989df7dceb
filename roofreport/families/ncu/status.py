"""What ncu says about itself in any of its outputs: `==PROF==`/`==WARNING==`/`==ERROR==` status
lines, its refusals (nothing profiled, unsupported device, unreadable report), the `Available
Kernels:` list after a kernel filter that matched nothing, and its version where a path shows it.

Text and CSV parsers both hand their classified lines here, so a failed run reads the same
whatever page or format it was asked for: its error is ncu's own message.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.spec import ParseResult

FAMILY = "ncu"

# Messages ncu prints when it profiled nothing or could not read a report: a file holding no
# results is reported with ncu's own words.
NOTHING_PROFILED = re.compile(
    r"No kernels were profiled|Profiling is not supported on device|ERR_NVGPUCTRPERM|"
    r"The application returned an error code|LaunchFailed|newer than the current version|"
    r"Failed to (?:profile|import|load report)|cannot be read|could not be (?:loaded|opened)|"
    r"An error occurred while trying to profile", re.I)

# Status messages only ncu writes, enough to tell an ncu log that holds nothing else.
NCU_ONLY = re.compile(
    r"==PROF==|==ERROR== (?:Failed to load report file|Profiling is not supported on device|"
    r"ERR_NVGPUCTRPERM|LaunchFailed)|==WARNING== No kernels were profiled")

_TAG = r"==(PROF|WARNING|ERROR)== ?(.*)$"


def status_frame(lines: pl.DataFrame) -> pl.DataFrame:
    """(line_no, tag, msg) of the classified `status_line`s."""
    status = lines.filter(pl.col("kind") == "status_line")
    return status.select(
        "line_no", "text",
        pl.col("text").str.extract(_TAG, 1).alias("tag"),
        pl.col("text").str.extract(_TAG, 2).str.strip_chars().alias("msg"))


def report(lines: pl.DataFrame, result: ParseResult, has_results: bool,
           all_lines: Callable[[], pl.DataFrame] | None = None) -> None:
    """Warnings for ncu's WARNING/ERROR lines; when nothing was read, ncu's reason as the error.
    `lines` holds at least the status lines; `all_lines` gives every line (for the list of
    available kernels) when `lines` does not."""
    status = status_frame(lines)
    # One warning per message: ncu repeats some after every kernel (`No metrics to show for
    # section(s): ...` with chart sections), thousands of times in a big log.
    alarms = status.filter(pl.col("tag") != "PROF").group_by("tag", "msg", maintain_order=True).agg(
        pl.col("line_no").first(), pl.len().alias("times"))
    for tag, msg, line_no, times in alarms.iter_rows():
        code = "ncu.error" if tag == "ERROR" else "ncu.warning"
        again = f" (printed {times} times)" if times > 1 else ""
        result.warn(code, f"ncu: {msg}{again}", line=line_no)
    if has_results or result.error is not None:
        return
    reason = _first_refusal(status.filter(pl.col("tag") == "ERROR")) or _first_refusal(status)
    if reason is not None:
        line_no, text, msg = reason
        every = lines if all_lines is None else all_lines()
        result.error = ParseError(f"ncu reported: {msg}{_available(every)}", line=line_no, text=text)


def _first_refusal(status: pl.DataFrame) -> tuple[int, str, str] | None:
    for line_no, text, _, msg in status.iter_rows():
        if NOTHING_PROFILED.search(msg or ""):
            return line_no, text, msg
    return None


def _available(lines: pl.DataFrame) -> str:
    """`Available Kernels:` list printed after a filter matched nothing, as message text."""
    syntax = grammar.load("ncu")
    items = lines.filter(pl.col("text").str.contains(syntax.regex("available_kernel_line"))
                         & (pl.col("line_no") > _title_line(lines, syntax)))
    if not items.height:
        return ""
    names = items.select(syntax.extract(pl.col("text"), "available_kernel_line"))["kernel_name"]
    return f" Available kernels: {', '.join(names.head(50).to_list())}"


def _title_line(lines: pl.DataFrame, syntax: grammar.Grammar) -> int:
    title = lines.filter(pl.col("text").str.contains(syntax.regex("available_title_line")))
    return title["line_no"][0] if title.height else 1 << 62


def protobuf_warnings(lines: pl.DataFrame, result: ParseResult) -> None:
    """`[libprotobuf ERROR ...]` lines explain why an older ncu refused a newer report."""
    rows = lines.filter(pl.col("text").str.starts_with("[libprotobuf "))
    for line_no, text in rows.select("line_no", "text").head(5).iter_rows():
        result.warn("ncu.report-format", f"ncu: {text.strip()}", line=line_no)


def tool_version(lines: pl.DataFrame) -> str | None:
    """The ncu version where an installation path shows it (rule tracebacks, report paths)."""
    syntax = grammar.load("ncu")
    candidates = lines.filter(pl.col("text").str.contains("(?i)nsight.?compute"))
    if not candidates.height:
        return None
    found = candidates.select(syntax.extract(pl.col("text"), "tool_version_hint")).drop_nulls()
    return found["tool_version"][0] if found.height else None


def device_name(metrics: pl.DataFrame) -> str | None:
    """The GPU's display name when the log listed device attributes (raw pages)."""
    if not metrics.height:
        return None
    names = metrics.filter((pl.col("metric") == "device__attribute_display_name")
                           & pl.col("value_text").str.strip_chars().ne(""))["value_text"]
    return names[0].strip() if names.len() else None
