"""What nvprof said about its run, beside the tables: the profiled command and device (run
hints), its warnings, and, when no table was read, why, in the tool's own words.

A message that would be fatal alone (`Error: Internal profiling error 4277:999.`,
`No kernels were profiled.`, `Profiling is not supported on device 0`) becomes the file's
error when nothing was read, and a warning when data exists. A log that ends before nvprof
printed results (the batch system killed the job) says so, quoting the scheduler; one that
has results and then the scheduler's kill message gets an `nvprof.job-killed` warning (the run
was cut short: pipeline/cutshort.py).
"""

from __future__ import annotations

import re

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common.textio import Document
from roofreport.families.nvprof.lines import load
from roofreport.families.spec import ParseResult, RunHints, Session

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
    for line_no, kind, text, device in notes.iter_rows():
        if kind in _WARNINGS:
            message = f"nvprof: {text}"
            if kind == "timeout_message":
                message += f" ({_TIMEOUT_NOTE})"
            result.warn(_WARNINGS[kind], message, line=line_no)
        elif kind == "no_data_line" and has_data:
            # (a `--print-summary-per-gpu` part says it of its GPU only)
            where = f" (on {device})" if device else ""
            result.warn("nvprof.no-data", f"nvprof: {text}{where}", line=line_no)
        elif kind == "job_end_line" and has_data:
            result.warn("nvprof.job-killed", f"the batch system ended the job: {text}", line=line_no)
    _unfinished_processes(lines, result, has_data)
    if not has_data:
        result.error = _why_empty(lines, notes, doc, result)


def _notes(lines: pl.DataFrame) -> pl.DataFrame:
    """(line_no, kind, text, device) of nvprof's messages and the batch system's last word; the
    device of a line inside a `--print-summary-per-gpu` part (or a metrics section)."""
    status = pl.col("status")
    message = pl.col("message").str.strip_chars()
    notes = lines.filter(status.is_in(list(_WARNINGS)) | pl.col("kind").is_in(["no_data_line", "job_end_line"]))
    if not notes.height:
        return pl.DataFrame(schema={"line_no": lines.schema["line_no"], "kind": pl.String, "text": pl.String,
                                    "device": pl.String})
    _, job_end = load().extract(pl.col("text"), "job_end_line")
    return notes.select("line_no", pl.coalesce(status, pl.col("kind")).alias("kind"),
                        pl.coalesce(message, job_end, pl.col("text").str.strip_chars()).alias("text"),
                        pl.col("device") if "device" in notes.columns else pl.lit(None, pl.String).alias("device"))


def _why_empty(lines: pl.DataFrame, notes: pl.DataFrame, doc: Document, result: ParseResult) -> ParseError:
    """The error of a log with no readable table, in nvprof's (or the scheduler's) words, or
    the sections it printed that roofreport does not read."""
    said = notes.filter(pl.col("kind").is_in([*_FATAL, "no_data_line"]))
    if said.height:
        return ParseError("nvprof reported: " + "; ".join(said["text"].to_list()),
                          path=doc.display, line=said["line_no"][0])
    skipped = [w for w in result.warnings if w.code == "nvprof.section-skipped"]
    if skipped:
        return ParseError("nvprof printed only sections roofreport does not read: "
                          + "; ".join(w.message.removeprefix("nvprof section ") for w in skipped),
                          path=doc.display, line=skipped[0].line)
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

_STARTS = ["process_message", "application_message"]


def _hints(lines: pl.DataFrame, result: ParseResult) -> None:
    starts = lines.filter(pl.col("status").is_in(_STARTS))
    if starts.height:
        first = starts.row(0, named=True)
        result.hints.command = _command(first)
        result.hints.process_id = first["pid"]
    result.hints.device_name = result.hints.device_name or _device(lines, result)
    result.hints.label = _label(lines)
    # Several sessions need the starts of two processes at least (`_sessions`' spans): a log of
    # one asks no more queries.
    result.sessions = _sessions(lines, result) if starts["pid"].n_unique() > 1 else []


def _command(start: dict) -> str | None:
    """The profiled command line of a `NVPROF is profiling process` or `Profiling application:`
    line."""
    rule = start["status"]
    return (load().fields(start["message"], rule).get("command") or "").strip() or None


def _label(lines: pl.DataFrame) -> str | None:
    """The configuration name a batch job echoed on the log's first line
    (`alexnet_16_0.01_k80_full`, `hw_32_0.001_alexnet_k80`); the pipeline reads what it says."""
    if not lines.height or lines["kind"][0] != "other":
        return None
    first = lines["text"][0].strip()
    return first if re.fullmatch(r"[\w.%-]{3,120}", first) else None


def _sessions(lines: pl.DataFrame, result: ParseResult) -> list[Session]:
    """The nvprof sessions of a log that holds several, one after another (`nvprof ./a 1`,
    `nvprof ./a 5`... appended to one file): each starts at its first `==PID==` line and runs to
    the next one's. Processes whose lines interleave (a program and the children one nvprof
    profiled with it) are one session. None when the log holds one session."""
    status = lines.filter((pl.col("kind") == "status_line") & pl.col("status").is_not_null())
    spans = status.group_by("pid").agg(
        first=pl.col("line_no").min(), last=pl.col("line_no").max(),
        starts=pl.col("status").is_in(_STARTS).any()).filter(pl.col("starts")).sort("first")
    merged: list[list[int]] = []
    for first, last in spans.select("first", "last").iter_rows():
        if merged and first < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    if len(merged) < 2:
        return []
    bounds = [first for first, _ in merged] + [lines["line_no"].max() + 1]
    return [Session(first_line=lo, hints=_session_hints(lines, result, lo, hi))
            for lo, hi in zip(bounds, bounds[1:])]


def _session_hints(lines: pl.DataFrame, result: ParseResult, lo: int, hi: int) -> RunHints:
    inside = pl.col("line_no").is_between(lo, hi, closed="left")
    starts = lines.filter(inside & pl.col("status").is_in(_STARTS))
    command = _command(starts.row(0, named=True)) if starts.height else None
    return RunHints(command=command, device_name=_device(lines.filter(inside), result, (lo, hi)))


def _device(lines: pl.DataFrame, result: ParseResult, span: tuple[int, int] | None = None) -> str | None:
    """The GPU named by a `Device "Tesla K80 (0)"` line or a CSV/trace Device cell that was not
    cut to the column width (it ends with the device index); within `span` (first line, end)
    when given."""
    names = [lines["device"]]
    for table in ("kernels", "activities", "metrics"):
        if table in result.tables:
            frame = result.tables[table]
            if span is not None:
                frame = frame.filter(pl.col("source_line").is_between(*span, closed="left"))
            names.append(frame["device"])
    for series in names:
        if series.null_count() == series.len():
            continue   # (no device named: no queries; a summary log's lines and kernels)
        # The first distinct value in order of appearance: a trace repeats one or two devices
        # a million times, so the pattern runs over those, not every row.
        distinct = series.drop_nulls().unique(maintain_order=True)
        full = distinct.filter(distinct.str.contains(r"\(\d+\)$"))
        if full.len():
            return full[0].rsplit(" (", 1)[0].strip()
    return None
