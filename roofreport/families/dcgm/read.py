"""Reading a DCGM file: its lines classified by `grammars/dcgm.lark`, the reader of its kind
(`dmon`, `csv`, `exporter`), then the samples finished as every GPU series is
(`families.common.series`).

Warning codes: `dcgm.bad-row` (a line that is no row of its table: file:line:column and the
line), `dcgm.bad-value` (a cell that is not a number: null), `dcgm.bad-header`,
`dcgm.no-header` (dmon rows before any header), `dcgm.unknown-field`, `dcgm.entity-skipped`
(MIG instances, links, switches, CPUs), `dcgm.no-gpu` (an exporter line without a gpu label),
`dcgm.truncated` (the file ends inside a row), `dcgm.failed` (dcgmi's own error beside
samples; alone it is the file's error).
"""

from __future__ import annotations

import re
from collections import Counter

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common import series
from roofreport.families.common.textio import Document
from roofreport.families.dcgm import (EXPORTER, FAMILY, FIELD_CSV, csv as dcgm_csv, dmon as dcgm_dmon,
                                      exporter as dcgm_exporter)
from roofreport.families.spec import ParseResult

DMON_DEFAULT_PERIOD_S = 1.0        # dcgmi dmon -d: 1000 ms unless given
_DELAY = re.compile(r"(?:^|\s)(?:-d|--delay)[ =](\d+)")
_LOOP_SLEEP = re.compile(r"\bsleep (\d+(?:\.\d+)?)|\bwatch (?:.*\s)?-n ?(\d+(?:\.\d+)?)")


def lines_of(doc: Document) -> pl.DataFrame:
    """line_no, text and kind (the first alternative of the grammar's `line` it matches)."""
    frame = doc.lines()
    return frame.with_columns(kind=grammar.load("dcgm").classify_lines(frame["text"]))


def parse(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    frame = lines_of(doc)
    frame = _drop_truncated(frame, doc, result)
    commands = frame.filter(pl.col("kind") == "command_line")["text"].to_list()
    if variant == FIELD_CSV:
        raw, period = dcgm_csv.read(frame, doc, result), None
    elif variant == EXPORTER:
        raw, period = dcgm_exporter.read(frame, doc, result), _loop_period(commands)
    else:
        raw, period = dcgm_dmon.read(frame, doc, result), _dmon_period(commands)
    if raw.height:
        samples = series.finish(raw, period)
        result.add("samples", samples)
        _hints(samples, result)
    _failures(frame, doc, result)
    return result


def _dmon_period(commands: list[str]) -> float:
    for command in commands:
        found = _DELAY.search(command)
        if found and "dmon" in command:
            return int(found.group(1)) / 1000.0
    return DMON_DEFAULT_PERIOD_S


def _loop_period(commands: list[str]) -> float | None:
    """A scrape loop's period, when the echoed loop says it (`; sleep 5; done`, `watch -n 5`)."""
    for command in commands:
        found = _LOOP_SLEEP.search(command)
        if found:
            return float(found.group(1) or found.group(2))
    return None


def _drop_truncated(frame: pl.DataFrame, doc: Document, result: ParseResult) -> pl.DataFrame:
    """A file that stops inside its last row (a copy cut short, a killed `tee`): that row's
    cells are incomplete, so it is reported and not read."""
    if not frame.height or doc.tail(1) in (b"\n", b""):
        return frame
    line_no, text, kind = frame.row(-1)
    if kind in ("blank_line", "stopped_line", "command_line"):
        return frame
    err = ParseError("the file ends in the middle of this line (no final line break): its row "
                     "is incomplete and is not read", path=doc.display, line=line_no,
                     column=len(text) + 1, text=text)
    result.warn("dcgm.truncated", err.describe(), line=line_no)
    return frame.head(-1)


def _hints(samples: pl.DataFrame, result: ParseResult) -> None:
    names = samples["gpu_name"].drop_nulls()
    if names.len():
        result.hints.device_name = Counter(names.to_list()).most_common(1)[0][0]


def _failures(frame: pl.DataFrame, doc: Document, result: ParseResult) -> None:
    """dcgmi's own error is the file's error when nothing was sampled, else a warning."""
    found = frame.filter(pl.col("kind") == "failure_line").select("line_no", "text")
    if found.height:
        line_no, text = found.row(0)
        message = f"dcgmi reported: {text.strip()}"
        if "samples" in result.tables:
            result.warn("dcgm.failed", message, line=line_no)
        else:
            result.error = ParseError(message, path=doc.display, line=line_no)
    elif "samples" not in result.tables:
        result.error = ParseError("no GPU samples found in this DCGM output (no GPU rows, or "
                                  "no field with a samples column)", path=doc.display)
