"""What nvprof said about its run, beside the tables: the profiled command and device (run
hints), its warnings, and, when no table was read, why, in the tool's own words.

A message that would be fatal alone (`Error: Internal profiling error 4277:999.`,
`No kernels were profiled.`, `Profiling is not supported on device 0`) becomes the file's
error when nothing was read, and a warning when data exists. A log that ends before nvprof
printed results (the batch system killed the job) says so, quoting the scheduler.
"""

from __future__ import annotations

import re

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common.textio import Document
from roofreport.families.nvprof.lines import load
from roofreport.families.spec import ParseResult

# status kind -> warning code
_WARNINGS = {
    "error_message": "nvprof.error",
    "unsupported_message": "nvprof.unsupported",
    "timeout_message": "nvprof.timeout",
    "invalid_records_message": "nvprof.invalid-records",
    "warning_message": "nvprof.warning",
}
_FATAL = ("error_message", "unsupported_message")
_TIMEOUT_NOTE = ("the profiled application was stopped at nvprof's --timeout; the results cover "
                 "only the part of the run before it")


def apply(lines: pl.DataFrame, doc: Document, result: ParseResult) -> None:
    """Hints, warnings and (when nothing was read) the error, from the log's own lines."""
    _hints(lines, result)
    has_data = bool(result.rows())
    notes = _notes(lines)
    for line_no, kind, text in notes.iter_rows():
        if kind in _WARNINGS:
            message = f"nvprof: {text}"
            if kind == "timeout_message":
                message += f" ({_TIMEOUT_NOTE})"
            result.warn(_WARNINGS[kind], message, line=line_no)
        elif kind == "no_data_line" and has_data:
            result.warn("nvprof.no-data", f"nvprof: {text}", line=line_no)
    _unfinished_processes(lines, result, has_data)
    if not has_data:
        result.error = _why_empty(lines, notes, doc)


def _notes(lines: pl.DataFrame) -> pl.DataFrame:
    """(line_no, kind, text) of nvprof's messages and the batch system's last word."""
    status = pl.col("status")
    message = pl.col("message").str.strip_chars()
    notes = lines.filter(status.is_in(list(_WARNINGS)) | pl.col("kind").is_in(["no_data_line", "job_end_line"]))
    _, job_end = load().extract(pl.col("text"), "job_end_line")
    return notes.select("line_no", pl.coalesce(status, pl.col("kind")).alias("kind"),
                        pl.coalesce(message, job_end, pl.col("text").str.strip_chars()).alias("text"))


def _why_empty(lines: pl.DataFrame, notes: pl.DataFrame, doc: Document) -> ParseError:
    """The error of a log with no readable table, in nvprof's (or the scheduler's) words."""
    said = notes.filter(pl.col("kind").is_in([*_FATAL, "no_data_line"]))
    if said.height:
        return ParseError("nvprof reported: " + "; ".join(said["text"].to_list()),
                          path=doc.display, line=said["line_no"][0])
    killed = notes.filter(pl.col("kind") == "job_end_line")
    if killed.height:
        return ParseError("the log ends before nvprof printed its results; the batch system "
                          f"said: {killed['text'][0]}", path=doc.display, line=killed["line_no"][0])
    status = set(lines["status"].drop_nulls().to_list())
    if "result_message" in status:
        what = "nvprof printed `Profiling result:` but no table roofreport could read"
    elif "application_message" in status:
        what = "the log ends after `Profiling application:`, before nvprof printed any result"
    elif status:
        what = "the log ends before nvprof printed any result (was the run cut off?)"
    else:
        what = "no nvprof result table found"
    return ParseError(what, path=doc.display)


def _unfinished_processes(lines: pl.DataFrame, result: ParseResult, has_data: bool) -> None:
    """Processes that nvprof started profiling but printed no result for, in a log that has
    results of other processes."""
    if not has_data:
        return
    by_pid = lines.filter(pl.col("status").is_not_null() & pl.col("pid").is_not_null()) \
        .group_by("pid", maintain_order=True).agg(
            pl.col("line_no").first(), (pl.col("status") == "result_message").any().alias("done"))
    for pid, line_no, done in by_pid.iter_rows():
        if not done:
            result.warn("nvprof.no-result", f"nvprof printed no result for process {pid} "
                        "(cut off or failed)", line=line_no)


# -- hints -----------------------------------------------------------------------------------

def _hints(lines: pl.DataFrame, result: ParseResult) -> None:
    g = load()
    starts = lines.filter(pl.col("status").is_in(["process_message", "application_message"]))
    if starts.height:
        first = starts.row(0, named=True)
        rule = first["status"]
        fields = dict(zip(g.groups(rule), _extract(first["message"], rule)))
        result.hints.command = (fields.get("command") or "").strip() or None
    result.hints.device_name = result.hints.device_name or _device(lines, result)
    _label(lines, result)


def _label(lines: pl.DataFrame, result: ParseResult) -> None:
    """The configuration name a batch job echoed on the log's first line
    (`alexnet_16_0.01_k80_full`, `hw_32_0.001_alexnet_k80`), kept as a run hint: the pipeline
    reads model, batch size, learning rate and GPU from it as it reads file names."""
    if not lines.height or lines["kind"][0] != "other":
        return
    first = lines["text"][0].strip()
    if re.fullmatch(r"[\w.%-]{3,120}", first):
        result.hints.label = first


def _extract(text: str, rule: str) -> list[str | None]:
    return pl.select(load().extract(pl.lit(text, pl.String), rule)).row(0)


def _device(lines: pl.DataFrame, result: ParseResult) -> str | None:
    """The GPU named by a `Device "Tesla K80 (0)"` line or a CSV/trace Device cell that was not
    cut to the column width (it ends with the device index)."""
    names = [lines["device"]]
    for table in ("kernels", "activities", "metrics"):
        if table in result.tables:
            names.append(result.tables[table]["device"])
    for series in names:
        # The first distinct value in order of appearance: a trace repeats one or two devices
        # a million times, so the pattern runs over those, not every row.
        distinct = series.drop_nulls().unique(maintain_order=True)
        full = distinct.filter(distinct.str.contains(r"\(\d+\)$"))
        if full.len():
            return full[0].rsplit(" (", 1)[0].strip()
    return None
