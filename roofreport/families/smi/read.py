"""Reading an nvidia-smi log: the lines classified once (`lines.py`), each output kind's reader
(`table.py`, `query.py`, `monitor.py`, `report.py`, `watch.py`) turning its sections into raw rows,
and `samples.py` numbering GPUs, dating samples and computing elapsed time for all of them.
CSV files of wrappers around nvidia-smi are read by `wrapper.py`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING

import polars as pl

from roofreport import grammar
from roofreport.families.common import monitor
from roofreport.families.common.textio import Document
from roofreport.families.smi import FAMILY
from roofreport.families.spec import ParseResult

if TYPE_CHECKING:
    from roofreport.families.smi.lines import LogLines

_HOST = re.compile(r"[\w.-]+@([\w.-]+)")


def parse_text(doc: Document, variant: str) -> ParseResult:
    from roofreport.families.smi import (
        lines as smi_lines,
        monitor as smi_monitor,
        query as smi_query,
        report as smi_report,
        samples as smi_samples,
        sniff as smi_sniff,
        table as smi_table,
        watch as smi_watch,
    )
    from roofreport.families.smi.time import start_from_name

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
    # (a reader's warnings say why a file without samples has none: no error of our own then)
    monitor.failures(lines.frame, doc, result, tool="nvidia-smi", code="smi.failed",
                     nothing_sampled="no GPU samples found in this nvidia-smi output",
                     unless_warned=True)
    _host(lines.frame, result)
    _truncation(doc, result)
    return result


def parse_wrapper(doc: Document, variant: str) -> ParseResult:
    from roofreport.families.smi import lines as smi_lines, samples as smi_samples, wrapper as smi_wrapper

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


def _period(lines: LogLines) -> float | None:
    """The loop period: an echoed `-l N`/`-lms N`/`-d N`, or watch's `Every 2.0s`."""
    from roofreport.families.smi.time import interval_from_command

    for command in lines.commands:
        period = interval_from_command(command)
        if period:
            return period
    syntax = grammar.load("smi")
    titles = lines.frame.filter(pl.col("kind") == "watch_title_line")
    if titles.height:
        interval = titles.select(syntax.extract(pl.col("text"), "watch_title_line")[0])
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
