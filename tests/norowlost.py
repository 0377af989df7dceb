"""No row lost in silence (issue #34): the rows of a CSV log counted without the reader under
test, and the invariant every CSV reader keeps: data rows in = rows out + rows warned.

"Rows in" are counted with Python's `csv` module, less what no layout calls a data row: blank
records, the tools' own message lines (`==PROF==`, `==1234== NVPROF ...`), the column header
(the first record after those) and its repeats, a units row right under it (nvprof's
`,%,ms,,ms,...`, ncu raw's `"","","nsecond",...`: no cell a number), and the rows each layout
documents as no data: ncu's rule rows (a rule's text, no metric: FORMATS-ncu.md) and the
decoded clock-reason bits of DCGM's sample scripts (FORMATS-smi_course.md). "Rows out" are the
distinct `source_line`s of the file's rows in every table; "rows warned" the lines the
`errors.ROWS_LOST` warnings name, and the counts of their "N more ..." summaries.
`tests/test_no_row_lost.py` holds the corpus to it, `tests/fuzzing.py` its mutants.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

import polars as pl

from roofreport.errors import ROWS_LOST, LogWarning

# a number, a time, a size with its unit (`94 %`, `32510 MiB`, `2024/01/01 ...`): a data cell
_LEADING_DIGIT = re.compile(r"^[-+]?\.?\d")
# Layouts whose rows are not one output row each: DCGM's field-value CSV has a row per GPU, time
# and field, folded into one sample per GPU and time (rows of fields without a samples column
# are not kept: `families/dcgm/csv.py`). Told by the variant's ending.
FOLDED = ("field-value csv",)
_TOOL_LINE = re.compile(r"^==[\w ]*==")
_MORE = re.compile(r"\b(\d+) more\b")
# DCGM's sample scripts print the clock-reason bit fields decoded; no GPU metric
_DCGM_DECODED = ("throttle_reason_", "clocks_event_reason_")


@dataclass(frozen=True)
class Count:
    rows_in: int
    rows_out: int
    rows_warned: int

    @property
    def holds(self) -> bool:
        return self.rows_in == self.rows_out + self.rows_warned


def data_rows(data: bytes) -> int:
    """The data rows of a CSV log, counted with `csv` (see the module docstring)."""
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff").replace("\0", "")
    records = [[cell.strip() for cell in record]
               for record in csv.reader(io.StringIO(text, newline=""))]
    records = [r for r in records if any(r) and not _TOOL_LINE.match(r[0])]
    at = next((index for index, record in enumerate(records) if _is_header(record)), None)
    if at is None:
        return len(records)                     # no header line (`--format=csv,noheader`)
    header = records[at]
    rows = [r for r in records[at + 1:] if r != header]     # a header printed again
    if rows and not any(_LEADING_DIGIT.match(cell) for cell in rows[0]):
        rows = rows[1:]                         # the units row
    if "Metric Name" in header and "Rule Name" in header:
        metric = header.index("Metric Name")
        rows = [r for r in rows if len(r) <= metric or r[metric]]
    if "Field" in header and "GPUId" in header:
        field = header.index("Field")
        rows = [r for r in rows if len(r) <= field or not r[field].startswith(_DCGM_DECODED)]
    return len(rows)


def _is_header(record: list[str]) -> bool:
    """Column names: two or more cells, none a number (what a program prints before its
    header, `device: RTX 5070 (sm_120), 48 SMs`, holds numbers)."""
    return len(record) >= 2 and not any(_LEADING_DIGIT.match(cell) for cell in record)


def rows_out(tables: dict[str, pl.DataFrame], source: str | None = None) -> int:
    """The distinct lines that gave rows (of the file `source` names, when the tables hold
    several files')."""
    lines: set[int] = set()
    for name, frame in tables.items():
        if name in ("runs", "files") or "source_line" not in frame.columns:
            continue
        if source is not None:
            frame = frame.filter(pl.col("source_file").str.ends_with(source))
        lines |= set(frame["source_line"].drop_nulls().to_list())
    return len(lines)


def rows_warned(warnings: list[LogWarning]) -> int:
    """Rows the warnings say were left out: one per warned line, and a summary's count."""
    lost = [w for w in warnings if w.code in ROWS_LOST]
    summaries = [int(found[1]) for w in lost if (found := _MORE.search(w.message))]
    return len({w.line for w in lost if not _MORE.search(w.message)}) + sum(summaries)


def count(data: bytes, tables: dict[str, pl.DataFrame], warnings: list[LogWarning],
          source: str | None = None) -> Count:
    return Count(data_rows(data), rows_out(tables, source), rows_warned(warnings))
