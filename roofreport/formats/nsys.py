"""Nsight Systems (nsys) logs: which files are nsys output, and which reader takes each.

Three kinds of file, each with its own module:

* `nsys stats --format csv` reports (`nsys_csv.py`), recognised by a header line whose
  column names are nsys report columns;
* console tables of `nsys profile --stats=true` / `nsys stats` (`nsys_text.py`), recognised
  by nsys's own progress, title and step lines or by a column header above a dash rule;
* the SQLite export (`nsys_sqlite.py`, a binary spec: it receives the path).

Report columns and kinds are data in `nsys_columns.py`; `nsys_tables.py` writes the rows.
"""

from __future__ import annotations

from roofreport.formats import nsys_csv, nsys_sqlite, nsys_text
from roofreport.formats.base import FormatSpec
from roofreport.textio import Head

FAMILY = "nsys"


def sniff_csv(head: Head) -> str | None:
    if head.binary:
        return None
    header = nsys_csv.find_header(head.lines[:400], head.path.name)
    return f"{header.report.id} csv" if header else None


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="nsys-csv", sniff=sniff_csv, parse=nsys_csv.parse_csv),
    FormatSpec(family=FAMILY, name="nsys-text", sniff=nsys_text.sniff_text, parse=nsys_text.parse_text),
]

BINARY_SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="nsys-sqlite", sniff=nsys_sqlite.sniff_sqlite,
               parse=nsys_sqlite.parse_sqlite, binary=True),
]
