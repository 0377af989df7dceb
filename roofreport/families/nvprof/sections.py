"""The summary sections nvprof prints, and the ones roofreport does not read.

Where each section's rows go (`text.py`, `csv.py`; the decisions are listed in the family's
docstring, `__init__.py`): GPU activities -> kernels, API calls -> api_calls, NVTX ranges ->
regions, OpenACC / OpenMP rows, the activities inside NVTX ranges and Unified Memory -> metrics.
A section nvprof titles (`==PID== CPU profiling result (bottom up):`, `======== NVLink
Topology:`) with no table roofreport reads under it is skipped, with a warning that names it
and says why (`nvprof.section-skipped`).
"""

from __future__ import annotations

import polars as pl

from roofreport.families.nvprof.lines import SECTIONS
from roofreport.families.spec import ParseResult

# Title start -> why its rows have no place in the tables (first match wins).
SKIP_REASONS = [
    ("CPU", "host CPU samples (a sampled call tree of host functions): roofreport's tables hold "
            "GPU work, CUDA API calls and regions, not host functions"),
    ("NVLink", "NVLink topology and link usage are not per-kernel or per-call data; roofreport "
               "reads NVLink counters where nvprof prints them as metrics"),
]
_DEFAULT_REASON = "roofreport reads no table of this section"


def reason(title: str) -> str:
    return next((why for start, why in SKIP_REASONS if title.startswith(start)), _DEFAULT_REASON)


def report_skipped(lines: pl.DataFrame, result: ParseResult) -> None:
    """A warning for every titled section under which no table was read (annotated `lines`:
    status, section_title, table)."""
    if "section_title" not in lines.columns or not (lines["status"] == "section_message").any():
        return   # (no titled section: none skipped, and no grouping query for a small log)
    opens = pl.col("status").is_in(list(SECTIONS)).fill_null(False)
    parts = lines.select("line_no", "status", "section_title", "table", part=opens.cum_sum())
    found = parts.group_by("part", maintain_order=True).agg(
        pl.col("line_no").first(), pl.col("status").first(), pl.col("section_title").first(),
        pl.col("table").is_not_null().any().alias("read"))
    skipped = found.filter((pl.col("status") == "section_message") & ~pl.col("read"))
    for line_no, title in skipped.select("line_no", "section_title").iter_rows():
        result.warn("nvprof.section-skipped", f"nvprof section `{title}` (line {line_no}) not read: "
                    f"{reason(title)}", line=line_no)
