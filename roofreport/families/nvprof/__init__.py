"""nvprof (CUDA 7 - 12): text logs in every mode, their `--csv` forms, SQLite profiles (`-o`).

The syntax lives in `grammars/nvprof.lark`. A log is read in one pass over its lines
(`lines.py`): text tables (`text.py`) and CSV tables (`csv.py`) wherever their
headers appear, as many processes as the log holds, then what nvprof said about the run
(`status.py`), all driven by `read.py`. SQLite profiles are read by `sqlite.py`; an NVVP session file (XML) is
recognised and reported as holding no profile data. Sniffing needs only `lines.py` (and the
CSV reader for a header of nvprof's own columns); the readers are imported to parse.

Tables filled: `kernels`, `metrics`, `activities`, `api_calls`, `regions`.

Where each summary section nvprof prints goes (the Type column of CUDA >= 9 names it on the
first row of its group; CUDA <= 8 prints a titled section per Type):

* `GPU activities` -> `kernels` (kind "summary"; memcpy/memset rows too, as nvprof lists them)
  and their cells in `metrics`;
* `--print-summary-per-gpu`: after `==PID== Profiling result:`, one part per GPU, each opened
  by a blank line and `==PID== Device "Tesla K80 (0)"`, holding that GPU's summary table (its
  GPU activities only: Time(%) adds to 100 per GPU; no `API calls` rows), then its Unified
  Memory and NVTX results. Every row of a part carries the part's GPU as its `device`, so a
  run's kernels are per GPU (a plain summary adds every GPU's launches of a kernel into one
  row). Layout: nvprof 11.8's summary printer, read from its binary (tests/test_nvprof_per_gpu.py
  says where);
* `API calls` -> `api_calls` (kind "summary");
* `OpenACC (excl)`/`(incl)`, `OpenMP (incl)` -> `metrics`, section named by the Type, one row
  per OpenACC/OpenMP event (`acc_wait@jacobi.c:63`) as the kernel name. They are host-side
  runtime events, not kernels, and their times overlap the CUDA API calls they make
  (`acc_wait` waits in `cuStreamSynchronize`): in `api_calls` they would be counted twice;
* `==PID== NVTX result:` -> `regions` (one per range), what ran inside each range -> `metrics`
  (section `NVTX <path>: <Type>`);
* `==PID== Unified Memory profiling result:` -> `metrics` (section "Unified Memory", the device
  from its `Device "..."` line), with its `Total CPU Page faults: N` lines;
* `CPU profiling result (bottom up|top down)` (host CPU samples, a call tree of host
  functions) and any other titled section holding no table roofreport reads (`NVLink ...`):
  skipped with `nvprof.section-skipped`, which names the section and says why
  (`sections.py`).

Metric and event cells that hold no value (`<OVERFLOW>`, `n/a`, `-`, empty) are read as null
with a warning at their line and column (`novalue.py`).
"""

from __future__ import annotations

import re
from functools import cache

from roofreport.errors import ParseError
from roofreport.families.common.sqlite import is_sqlite
from roofreport.families.common.textio import Head
from roofreport.families.nvprof import lines as nvprof_lines
from roofreport.families.spec import DeferredReader, FormatSpec

FAMILY = "nvprof"

# Status messages only nvprof prints (a bare `==PID== Warning:` is valgrind's style too).
_STRONG_STATUS = ("process_message", "application_message", "result_message",
                  "metric_result_message", "event_result_message", "api_calls_message",
                  "nvtx_result_message", "um_result_message", "unsupported_message")
# first table header of the head -> variant
_VARIANTS = {
    "summary_header_line": "summary",
    "old_summary_header_line": "summary (CUDA <= 8 layout)",
    "gpu_trace_header_line": "gpu trace",
    "api_trace_header_line": "api trace",
    "metrics_header_line": "metrics",
    "events_header_line": "events",
    "um_header_line": "summary",
}


# -- sniffing --------------------------------------------------------------------------------

def sniff_log(head: Head) -> str | None:
    """The first table's kind, `log` for nvprof output without a table in the head, or None.
    A summary under a `==PID== Device "..."` line is `--print-summary-per-gpu`'s: "(per GPU)"."""
    status_seen = per_gpu = False
    for line in head.lines[:5000]:
        message = nvprof_lines.status_message(line)
        if message is not None:
            status_seen = status_seen or any(_matches(message, k) for k in _STRONG_STATUS)
            per_gpu = per_gpu or _matches(message, "device_message")
            continue
        variant = _header_variant(line)
        if variant:
            return f"{variant} (per GPU)" if per_gpu and variant.startswith("summary") else variant
    return "log" if status_seen else None


def _header_variant(line: str) -> str | None:
    literals = _header_literals()
    if literals is None or any(literal in line for literal in literals):
        for kind, variant in _VARIANTS.items():
            if _matches(line, kind):
                return variant
    if not _may_be_csv_header(line) or not nvprof_lines.matches(line, "csv_header_line"):
        return None
    sep, _ = _csv_parts()
    if nvprof_lines.report_kind(tuple(name.strip().strip('"') for name in sep.split(line))) is None:
        return None   # a header of other columns (nsys's, ncu's, a program's): no nvprof report
    from roofreport.families.nvprof import csv as nvprof_csv  # a header of nvprof's columns only

    try:
        names, sep = nvprof_csv.header(line)
    except ParseError:
        return None
    kind = nvprof_lines.report_kind(names)
    form = "tsv (spreadsheet re-save)" if sep == "\t" else "csv"
    suffix = " (no Type column)" if kind == "summary" and "Type" not in names else ""
    return f"{kind.replace('_', ' ')} {form}{suffix}"


def sniff_sqlite(head: Head) -> str | None:
    if not is_sqlite(head):
        return None
    from roofreport.families.nvprof import sqlite as nvprof_sqlite

    return nvprof_sqlite.sniff(head)


def _may_be_csv_header(line: str) -> bool:
    """`csv_header_line` is `csv_field (CSV_SEP csv_field)+`, and no field holds a separator:
    a line whose text before its first separator is no `csv_field` (an nsys or ncu header) is
    no nvprof header. The header's regex (nvprof's column names four times over, ~2 ms to
    compile) is compiled only for a line that passes."""
    sep, field = _csv_parts()
    first = sep.split(line, 1)
    return len(first) == 2 and field.fullmatch(first[0]) is not None


@cache
def _csv_parts() -> tuple[re.Pattern, re.Pattern]:
    syntax = nvprof_lines.load()
    return re.compile(syntax.terminal("CSV_SEP")), re.compile(syntax.regex("csv_field", anchored=False))


@cache
def _header_literals() -> tuple[str, ...] | None:
    """Literals of which every table header of `_VARIANTS` holds one (None when a kind has
    none): a head line holding none of them (most: the program's own output) is none of those
    headers, told in one pass over the literals instead of a rule at a time."""
    found: set[str] = set()
    for kind in _VARIANTS:
        needed = _required_literals(kind)
        if not needed:
            return None
        found |= needed
    return tuple(sorted(found))


@cache
def _required_literals(rule: str) -> frozenset[str] | None:
    return nvprof_lines.load().required_literals(rule)


def _matches(text: str, rule: str) -> bool:
    """`lines.matches`, asked only of text holding one of the literals every match of
    the rule holds (the grammar's `required_literals`): most head lines are no table header,
    and a rule's regex is compiled when a line could be one."""
    needed = _required_literals(rule)
    return (not needed or any(literal in text for literal in needed)) and nvprof_lines.matches(text, rule)


def sniff_session_xml(head: Head) -> str | None:
    text = head.text.lstrip()
    return "nvvp session (xml)" if text.startswith("<?xml") and "<session" in text[:4096] else None


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="nvprof-session-xml", sniff=sniff_session_xml,
               parse=DeferredReader("roofreport.families.nvprof.read", "parse_session_xml")),
    FormatSpec(family=FAMILY, name="nvprof-log", sniff=sniff_log,
               parse=DeferredReader("roofreport.families.nvprof.read", "parse_log"),
               marks=("NVPROF is profiling process", "Profiling application:", "Profiling result:")),
]
BINARY_SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="nvprof-sqlite", sniff=sniff_sqlite,
               parse=DeferredReader("roofreport.families.nvprof.sqlite", "parse"), binary=True),
]
