"""Nsight Systems (nsys) logs: which files are nsys output, and which reader takes each.

Three kinds of file, each with its own module:

* `nsys stats --format csv` reports (`nsys_csv.py`), recognised by a header line whose
  column names are nsys report columns;
* console tables of `nsys profile --stats=true` / `nsys stats` (`nsys_text.py`), recognised
  by nsys's own progress, title and step lines or by a column header above a dash rule;
* the SQLite export (`nsys_sqlite.py`, a binary spec: it receives the path).

Report columns and kinds are data in `nsys_columns.py`; `nsys_tables.py` writes the rows.
Each module is imported when a file needs it (sniffing a CSV loads the CSV reader, a text log
the text reader, only an SQLite file the SQLite reader).
"""

from __future__ import annotations

from roofreport.formats import later
from roofreport.formats.base import FormatSpec
from roofreport.textio import Head

FAMILY = "nsys"
_SQLITE_MAGIC = b"SQLite format 3\x00"  # (`nsys_sqlite.MAGIC`) every SQLite file starts so


def sniff_csv(head: Head) -> str | None:
    if head.binary:
        return None
    from roofreport.formats import nsys_csv

    header = nsys_csv.find_header(head.lines[:400], head.path.name)
    return f"{header.report.id} csv" if header else None


def sniff_text(head: Head) -> str | None:
    from roofreport.formats import nsys_text

    return nsys_text.sniff_text(head)


def sniff_sqlite(head: Head) -> str | None:
    if not head.raw.startswith(_SQLITE_MAGIC):
        return None
    from roofreport.formats import nsys_sqlite

    return nsys_sqlite.sniff_sqlite(head)


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="nsys-csv", sniff=sniff_csv,
               parse=later("roofreport.formats.nsys_csv", "parse_csv")),
    FormatSpec(family=FAMILY, name="nsys-text", sniff=sniff_text,
               parse=later("roofreport.formats.nsys_text", "parse_text")),
]

BINARY_SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="nsys-sqlite", sniff=sniff_sqlite,
               parse=later("roofreport.formats.nsys_sqlite", "parse_sqlite"), binary=True),
]
