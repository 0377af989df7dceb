"""Nsight Systems (nsys) logs: which files are nsys output, and which reader takes each.

Three kinds of file, each with its own module:

* `nsys stats --format csv` reports (`csv.py`), recognised by a header line whose
  column names are nsys report columns;
* console tables of `nsys profile --stats=true` / `nsys stats` (`text.py`), recognised
  by nsys's own progress, title and step lines or by a column header above a dash rule;
* the SQLite export (`sqlite.py`, a binary spec: it receives the path).

Report columns and kinds are data in `columns.py`; `tables.py` writes the rows.
Each module is imported when a file needs it (sniffing a CSV loads the CSV reader, a text log
the text reader, only an SQLite file the SQLite reader).
"""

from __future__ import annotations

from roofreport.families.common.sqlite import is_sqlite
from roofreport.families.common.textio import Head
from roofreport.families.spec import DeferredReader, FormatSpec

FAMILY = "nsys"


def sniff_csv(head: Head) -> str | None:
    if head.binary:
        return None
    from roofreport.families.nsys import csv as nsys_csv

    header = nsys_csv.find_header(head.lines[:400], head.path.name)
    return f"{header.report.id} csv" if header else None


def sniff_text(head: Head) -> str | None:
    from roofreport.families.nsys import text as nsys_text

    return nsys_text.sniff_text(head)


def sniff_sqlite(head: Head) -> str | None:
    if not is_sqlite(head):
        return None
    from roofreport.families.nsys import sqlite as nsys_sqlite

    return nsys_sqlite.sniff_sqlite(head)


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="nsys-csv", sniff=sniff_csv,
               parse=DeferredReader("roofreport.families.nsys.csv", "parse_csv"),
               marks=("Start (ns),", "Time (%),", "Time(%),")),
    FormatSpec(family=FAMILY, name="nsys-text", sniff=sniff_text,
               parse=DeferredReader("roofreport.families.nsys.text", "parse_text"),
               marks=("Generating '/", "Processing [", "Executing '", "Kernel Statistics", " ** ")),
]

BINARY_SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="nsys-sqlite", sniff=sniff_sqlite,
               parse=DeferredReader("roofreport.families.nsys.sqlite", "parse_sqlite"), binary=True),
]
