"""Is a file nvidia-smi output, and of which kinds? Decided from the bounded head only.

The head's lines are classified with the regexes of `grammars/smi.lark`. A file is nvidia-smi
output when it shows a table's version line, a `-q` report title, a dmon/pmon header, a
`--format=csv` header nvidia-smi would print, or (no header at all) when every data line is a
row of cells shaped like nvidia-smi's (`grammar: headerless_row`). Logs that carry another
profiler's signature are left to that family even when they embed an nvidia-smi table.
"""

from __future__ import annotations

import re
from collections import Counter

from roofreport import grammar
from roofreport.families.common.textio import Head
from roofreport.families.smi.fields import query_kind
from roofreport.families.smi.lines import command_fields, header_fields
from roofreport.families.smi.watch import is_watch_capture

HEADERLESS = "query csv (noheader)"
_OTHER_FAMILIES = re.compile(
    r"==PROF==|==\d+== NVPROF|NVPROF is profiling|==\d+== Profiling result|"
    r"\*\* CUDA \w+ .*Summary|^    Section: |\"Type\",\"Time\(%\)\"|\"ID\",\"Process ID\"", re.M)
_IGNORED = {"blank_line", "date_line", "time_line", "separator_line", "command_line",
            "shell_line", "watch_title_line"}
_MIN_SHARE = 0.9
_MIN_SHARE_OF_ROWS = 0.95


def classify(line: str) -> str:
    """The kind of one line: the first alternative of `grammars/smi.lark`'s `line` it matches."""
    return grammar.load("smi").classify_line(line)


def sniff(head: Head) -> str | None:
    text = head.text.replace("\x00", "")
    if _OTHER_FAMILIES.search(text):
        return None
    if is_watch_capture(text) and "NVIDIA-SMI" in text:
        return "watch table"
    lines = [line.replace("\x00", "") for line in head.lines]
    kinds = [classify(line) for line in lines]
    found = _structured(lines, kinds)
    if not found and _headerless(lines, kinds):
        found = [(0, HEADERLESS)]
    if not found and "failure_line" in kinds and set(kinds) <= _IGNORED | {"failure_line"}:
        found = [(0, "failed run")]
    return " + ".join(dict.fromkeys(v for _, v in sorted(found))) or None


def _structured(lines: list[str], kinds: list[str]) -> list[tuple[int, str]]:
    """(first line, variant) of every self-announcing kind of output in the head."""
    found = []
    for index, (line, kind) in enumerate(zip(lines, kinds)):
        if kind == "report_title_line":
            found.append((index, "-q report"))
        elif kind in ("version_line", "gpu_stats_line"):
            found.append((index, "table"))
        elif kind == "monitor_header_line" and "monitor_units_line" in kinds[index + 1:index + 3]:
            found.append((index, "pmon" if re.search(r"\bpid\b", line) else "dmon"))
        elif kind == "query_header_line" and header_fields(line):
            found.append((index, query_kind([name for name, _ in header_fields(line)])))
        elif kind == "command_line" and command_fields(line):
            found.append((index, f"{query_kind([name for name, _ in command_fields(line)])} (noheader)"))
    return found


def _headerless(lines: list[str], kinds: list[str]) -> bool:
    """Every data line a row of nvidia-smi-shaped cells, most of one length, and saying
    something only nvidia-smi says (a unit, its timestamp, several `, `-separated cells)."""
    syntax = grammar.load("smi")
    rows = [line.strip() for line, kind in zip(lines, kinds) if kind not in _IGNORED]
    matching = [r for r in rows if syntax.pattern("headerless_row").match(r)]
    # A damaged row or two (NUL runs, a cut line) must not hide a long capture; the first line
    # must be a row (a header of any other kind means another kind of file).
    if not matching or matching[0] is not rows[0]:
        return False
    if len(matching) < (_MIN_SHARE_OF_ROWS * len(rows) if len(rows) >= 20 else len(rows)):
        return False
    rows = matching
    widths = Counter(syntax.pattern("query_row_line").match(r).group("row_cells").count(", ") + 1
                     for r in rows)
    width, count = widths.most_common(1)[0]
    if count < _MIN_SHARE * len(rows):
        return False
    tell = re.compile(r"\d (?:%|MiB|W|MHz)(?:,|$)|\d{4}/\d\d/\d\d \d\d:|\[N/A\]|\[Not Supported\]")
    return width >= 2 or any(tell.search(r) for r in rows)
