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
from roofreport.families.common import monitor, series
from roofreport.families.common.textio import Document
from roofreport.families.dcgm import (
    EXPORTER,
    FAMILY,
    FIELD_CSV,
    csv as dcgm_csv,
    dmon as dcgm_dmon,
    exporter as dcgm_exporter,
)
from roofreport.families.spec import ParseResult

DMON_DEFAULT_PERIOD_S = 1.0        # dcgmi dmon -d: 1000 ms unless given
_DELAY = re.compile(r"(?:^|\s)(?:-d|--delay)[ =](\d+)")
_MAY_END = ("blank_line", "stopped_line", "command_line")   # lines a whole log may stop after
_LOOP_SLEEP = re.compile(r"\bsleep (\d+(?:\.\d+)?)|\bwatch (?:.*\s)?-n ?(\d+(?:\.\d+)?)")


def lines_of(doc: Document) -> pl.DataFrame:
    """line_no, text and kind (the first alternative of the grammar's `line` it matches)."""
    frame = doc.lines()
    return frame.with_columns(kind=grammar.load("dcgm").classify_lines(frame["text"]))


def parse(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    frame = lines_of(doc)
    frame = monitor.drop_truncated(frame, doc, result, code="dcgm.truncated", may_end=_MAY_END,
                                   consequence="its row is incomplete and is not read")
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
    monitor.failures(frame, doc, result, tool="dcgmi", code="dcgm.failed",
                     nothing_sampled="no GPU samples found in this DCGM output (no GPU rows, or "
                                     "no field with a samples column)")
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


def _hints(samples: pl.DataFrame, result: ParseResult) -> None:
    names = samples["gpu_name"].drop_nulls()
    if names.len():
        result.hints.device_name = Counter(names.to_list()).most_common(1)[0][0]
