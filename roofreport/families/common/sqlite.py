"""SQLite files, as nsys exports and nvprof profiles are: recognising one, opening it safely,
reading its tables.

A file is SQLite when it starts with the format's magic. It is opened read-only and immutable
(no lock or journal files beside it), with `trusted_schema` off and queries only: nothing
stored in the file is executed, and the readers run fixed queries on tables and columns they
looked up first, fetched in batches (`query`). A family recognises its own databases by their tables (`sniff`); one that
SQLite cannot read at all is claimed by the family whose file name it has, so its reader
reports SQLite's own complaint instead of "not a profiler log".
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import polars as pl

from roofreport.families.common.textio import Head

MAGIC = b"SQLite format 3\x00"   # every SQLite database starts so


def is_sqlite(head: Head) -> bool:
    return head.raw.startswith(MAGIC)


def connect(path: Path) -> sqlite3.Connection:
    """Read-only, immutable, nothing in the file trusted (see the module docstring)."""
    uri = f"file:{urllib.parse.quote(str(path))}?mode=ro&immutable=1"
    con = sqlite3.connect(uri, uri=True)
    con.execute("PRAGMA trusted_schema=OFF")
    con.execute("PRAGMA query_only=ON")
    # A damaged file is refused where SQLite finds the damage, not read past it; SQLite's own
    # memory stays small (its page cache at 16 MiB, no memory map of the file). A file too
    # damaged to take them is reported by the reader's first query.
    try:
        con.execute("PRAGMA cell_size_check=ON")
        con.execute("PRAGMA cache_size=-16384")
        con.execute("PRAGMA mmap_size=0")
    except sqlite3.DatabaseError:
        pass
    return con


def table_names(con: sqlite3.Connection) -> set[str]:
    return {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


# Rows fetched from SQLite at a time: a query streams (only one batch is held as Python
# objects beside the frames made so far), not fetched whole (a table of millions of rows as
# tuples costs ~10x the frame).
QUERY_BATCH = 200_000


def query(con: sqlite3.Connection, sql: str) -> pl.DataFrame:
    """The rows of one of the readers' own fixed queries, as a frame, fetched in batches (each
    batch typed from all its rows; the batches joined to their common types)."""
    cursor = con.execute(sql)
    names = [column[0] for column in cursor.description]
    parts = []
    while rows := cursor.fetchmany(QUERY_BATCH):
        parts.append(pl.DataFrame(rows, schema=names, orient="row", infer_schema_length=None))
    if len(parts) == 1:
        return parts[0]
    return pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame([], schema=names, orient="row")


def sniff(head: Head, recognise: Callable[[sqlite3.Connection, set[str]], str | None],
          suffixes: tuple[str, ...], unreadable: str) -> str | None:
    """`recognise(connection, table names)` of the database `head` starts (a variant, or None:
    not this family's); None for a file that is no SQLite. A database SQLite cannot read is
    the `unreadable` variant when its name ends in one of `suffixes`, else no one's."""
    if not is_sqlite(head):
        return None
    try:
        con = connect(head.path)
        try:
            return recognise(con, table_names(con))
        finally:
            con.close()
    except sqlite3.Error:
        return unreadable if head.path.suffix.lower() in suffixes else None
