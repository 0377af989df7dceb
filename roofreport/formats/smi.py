"""nvidia-smi logs -> the `samples` table: every output kind, drivers 384-591.

* `--query-gpu=... --format=csv[,noheader][,nounits]` series (smi_query), with repeated
  headers, date lines and prompts between blocks, multi-GPU sweeps with or without `index`;
* `dmon` (smi_monitor; `pmon` is recognised and reported, not sampled);
* the boxed table, alone, repeated in a loop under ctime lines, or painted by `watch`
  (smi_table, smi_watch), and `-q` reports (smi_report);
* CSV files written by wrappers whose every column is a known quantity (smi_wrapper).

The syntax is `grammars/smi.lark`; smi_lines classifies and contextualises the lines once,
each reader turns its sections into raw rows, and smi_samples numbers GPUs, dates samples and
computes elapsed time for all of them. One file may mix kinds (a table, then a query loop).

Warning codes: `smi.bad-row` (a row that does not fit its header: file:line:column and the
line), `smi.bad-value` (a cell that is not a number in its unit: null), `smi.bad-header`,
`smi.no-header` (noheader output: the numbers' meaning is not in the file, only times and ids
are read), `smi.no-measurement`, `smi.gpu-by-position`, `smi.gpu-unknown`, `smi.gpu-changed`,
`smi.truncated-name`, `smi.truncated-table`, `smi.truncated` (file ends mid-row),
`smi.time-backwards`, `smi.multiline-cell`, `smi.nul-bytes`, `smi.pmon-not-sampled`,
`smi.failed` (nvidia-smi's failure message beside samples; alone it is the file's error).

Every file not claimed by another family is sniffed here, so the readers are imported only when
a file is parsed (sniffing needs `smi_sniff`, or `smi_wrapper` for a CSV header).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.formats.base import FormatSpec, ParseResult
from roofreport.textio import Document, Head

if TYPE_CHECKING:
    from roofreport.formats.smi_lines import Lines

FAMILY = "nvidia-smi"

_HOST = re.compile(r"[\w.-]+@([\w.-]+)")


def sniff_text(head: Head) -> str | None:
    from roofreport.formats import smi_sniff

    return smi_sniff.sniff(head)


def sniff_wrapper(head: Head) -> str | None:
    from roofreport.formats import smi_wrapper

    return smi_wrapper.sniff(head)


def parse_text(doc: Document, variant: str) -> ParseResult:
    from roofreport.formats import (smi_lines, smi_monitor, smi_query, smi_report, smi_samples,
                                    smi_sniff, smi_table, smi_watch)
    from roofreport.formats.smi_time import start_from_name

    result = ParseResult(family=FAMILY, variant=variant)
    screens = smi_watch.screens(doc.text()) if variant.startswith("watch") else None
    initial = "query" if variant == smi_sniff.HEADERLESS else None
    lines = smi_lines.prepare(doc, initial, screens)
    if lines.nul_lines:
        result.warn("smi.nul-bytes", f"{lines.nul_lines} lines hold NUL bytes (several writers "
                    "overwrote the same file); the NULs were removed", line=None)
    period = _period(lines)
    parts = [smi_table.read(lines, result, period), smi_query.read(lines, doc, result),
             smi_monitor.read(lines, doc, result, period), smi_report.read(lines, doc, result)]
    raw = [p.with_columns(interval_s=pl.lit(period, pl.Float64)) if "interval_s" not in p.columns
           else p for p in parts if p.height]
    if raw:
        samples = smi_samples.finish(pl.concat(raw, how="diagonal_relaxed"), lines, result,
                                     start_from_name(doc.path))
        if screens is not None:
            samples = _to_capture_lines(samples, screens, result)
        result.add("samples", samples)
        _hints(samples, result)
    _failures(lines.frame, doc, result)
    _host(lines.frame, result)
    _truncation(doc, result)
    return result


def parse_wrapper(doc: Document, variant: str) -> ParseResult:
    from roofreport.formats import smi_lines, smi_samples, smi_wrapper

    result = ParseResult(family=FAMILY, variant=variant)
    raw = smi_wrapper.parse(doc, result)
    if raw.height:
        lines = smi_lines.prepare(doc, None, pl.DataFrame(schema={"line_no": pl.Int64, "text": pl.String}))
        samples = smi_samples.finish(raw, lines, result)
        result.add("samples", samples)
        _hints(samples, result)
    return result


def _to_capture_lines(samples: pl.DataFrame, screens: pl.DataFrame,
                      result: ParseResult) -> pl.DataFrame:
    """watch: from the replayed screens' lines back to the lines of the capture file."""
    physical = dict(zip(screens["line_no"].to_list(), screens["physical_line"].to_list()))
    result.warnings = [replace(w, line=physical.get(w.line, w.line)) for w in result.warnings]
    return samples.with_columns(pl.col("source_line").replace_strict(physical))


def _period(lines: Lines) -> float | None:
    """The loop period: an echoed `-l N`/`-lms N`/`-d N`, or watch's `Every 2.0s`."""
    from roofreport.formats.smi_time import interval_from_command

    for command in lines.commands:
        period = interval_from_command(command)
        if period:
            return period
    g = grammar.load("smi")
    titles = lines.frame.filter(pl.col("kind") == "watch_title_line")
    if titles.height:
        interval = titles.select(g.extract(pl.col("text"), "watch_title_line")[0])
        return float(interval.item(0, 0))
    return None


def _hints(samples: pl.DataFrame, result: ParseResult) -> None:
    """The device name is the GPU name most samples carry; a change of model is reported."""
    names = samples.filter(pl.col("gpu_name").is_not_null())
    if not names.height:
        return
    counts = Counter(names["gpu_name"].to_list())
    result.hints.device_name = counts.most_common(1)[0][0]
    # A table's cut name (`Tesla V100-SXM2...`) is the same GPU as its full name.
    full = pl.col("gpu_name").str.strip_suffix("...").str.strip_chars()
    changed = names.with_columns(_name=full).filter(
        ~pl.col("_name").str.starts_with(pl.col("_name").shift(1).over("gpu_index"))
        & ~pl.col("_name").shift(1).over("gpu_index").str.starts_with(pl.col("_name")))
    for index, group in changed.group_by("gpu_index", maintain_order=True):
        models = names.filter(pl.col("gpu_index") == index[0])["gpu_name"].unique(maintain_order=True)
        result.warn("smi.gpu-changed", f"GPU {index[0]} changes model {group.height} times "
                    f"({', '.join(models.to_list())}): several jobs or machines wrote this file",
                    line=group["source_line"][0])


def _failures(frame: pl.DataFrame, doc: Document, result: ParseResult) -> None:
    """nvidia-smi's own failure message is the file's error when nothing was sampled, and a
    warning when samples were taken before or after it."""
    found = frame.filter(pl.col("kind") == "failure_line").select("line_no", "text")
    if found.height:
        line_no, text = found.row(0)
        message = f"nvidia-smi reported: {text.strip()}"
        if "samples" in result.tables:
            result.warn("smi.failed", message, line=line_no)
        else:
            result.error = ParseError(message, path=doc.display, line=line_no)
    elif "samples" not in result.tables and not result.warnings:
        result.error = ParseError("no GPU samples found in this nvidia-smi output",
                                  path=doc.display)


def _truncation(doc: Document, result: ParseResult) -> None:
    """A file that stops inside a row (a stdio buffer flushed at a crash, a copy cut short):
    the row was reported where it was read; say why it is incomplete."""
    if not doc.data or doc.data.endswith(b"\n"):
        return
    last = doc.lines().height
    if any(w.line == last and w.code.startswith("smi.bad") for w in result.warnings):
        result.warn("smi.truncated", f"the file ends in the middle of line {last} (no final line "
                    "break): its last row is incomplete", line=last)


def _host(frame: pl.DataFrame, result: ParseResult) -> None:
    prompts = frame.filter(pl.col("kind").is_in(["shell_line", "command_line"]))
    for text in prompts["text"].head(5).to_list():
        found = _HOST.search(text)
        if found:
            result.hints.host = found.group(1)
            return


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="smi-text", sniff=sniff_text, parse=parse_text),
    FormatSpec(family=FAMILY, name="smi-wrapper-csv", sniff=sniff_wrapper, parse=parse_wrapper),
]
BINARY_SPECS: list[FormatSpec] = []
