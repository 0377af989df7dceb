"""Which ROCm CSV a file is, from its header line: the one place sniffing and reading ask.

The header is the first line (of the first `HEADER_LINES`) that the grammar reads as
`csv_header_line` and whose column names make a known kind of file: a table of the profilers
(`columns.REPORTS`), an info file (`columns.INFO_REPORTS`) or an SMI series (`smi.recognise`).
The variant names the tool and the report (`rocprofv3 kernel_trace csv`), so that the files of
one run, each of another report, are told apart (a run holds one log of each kind).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.rocm import columns, smi

HEADER_LINES = 50     # a header sits on the first line; noise before it is a few lines at most
MAX_HEADER_CHARS = 1 << 20   # rocprof-compute's pmc_perf.csv headers run to ~40 KB


@dataclass(frozen=True)
class RocmHeader:
    line_no: int            # 1-based
    names: tuple[str, ...]
    kind: str               # "table", "info" or "smi"
    report: str             # columns.REPORTS id, INFO_REPORTS key, or the SMI tool
    tool: str               # rocprof, rocprofv2, rocprofv3, rocprof-compute, rocm-smi, amd-smi
    file_report: str | None  # what the file's name says (`kernel_trace`, `pmc_perf`...)

    @property
    def counted(self) -> bool:
        """The file holds hardware counters per dispatch: a counter collection, whose
        dispatches the tool serialised (and replayed per pass) to count them."""
        return self.report == "counters" or (self.report == "dispatches" and bool(columns.counter_columns(list(self.names))))

    @property
    def variant(self) -> str:
        """`<tool> <report> csv`, and ` (counters)` for a counter collection (the analysis times
        its dispatches as it does ncu's: `model/timing.py` COUNTED_VARIANT)."""
        if self.kind == "smi":
            return f"{self.tool} csv"
        what = self.file_report or self.report
        if self.report == "dispatches" and self.tool == "rocprof":
            what = "results"
        return f"{self.tool} {what} csv" + (" (counters)" if self.counted else "")


def names_of(text: str) -> list[str] | None:
    """The column names of a header line (None when the grammar does not read it as one)."""
    if "," not in text or len(text) > MAX_HEADER_CHARS:
        return None
    syntax = grammar.load("rocm")
    if not syntax.pattern("csv_header_line").match(text):
        return None
    try:
        tokens = syntax.tokens(text, "csv_header_line")
    except ParseError:
        return None
    return [str(t) for t in tokens if t.type in ("NAME", "QUOTED_NAME")]


_TELLS = columns.TELLS | smi.TELLS


def _may_be_header(text: str) -> bool:
    """A cheap test before the grammar: a cell of the line is a name every header of some kind
    holds (`columns.TELLS`, the SMI tools' device columns). Sniffing asks it of the head of every
    file no other family claimed."""
    return "," in text and not _TELLS.isdisjoint(cell.strip().strip('"') for cell in text.split(","))


def recognise(text: str, line_no: int, path: PurePath) -> RocmHeader | None:
    if not _may_be_header(text):
        return None
    names = names_of(text)
    if not names or len(set(names)) < 2:
        return None
    file_report = columns.report_name(path)
    report = columns.recognise(names)
    if report is not None:
        return RocmHeader(line_no, tuple(names), "table", report.id, columns.tool_of(names, file_report), file_report)
    info = columns.recognise_info(names)
    if info is not None:
        tool = "rocprofv3" if info == "agent_info" else "rocprof-compute"
        return RocmHeader(line_no, tuple(names), "info", info, tool, None)
    tool = smi.recognise(names)
    if tool is not None:
        return RocmHeader(line_no, tuple(names), "smi", tool, tool, None)
    return None


def find(lines: list[str], path: PurePath) -> RocmHeader | None:
    """The first line of `lines` (the head of a file) that is a ROCm CSV header (never raises)."""
    for index, text in enumerate(lines[:HEADER_LINES]):
        found = recognise(text.rstrip("\r"), index + 1, path)
        if found is not None:
            return found
    return None
