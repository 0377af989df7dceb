"""The body of a big CSV log read by polars in pieces cut after line breaks.

Reading a 400 MB table with one `pl.read_csv` call leaves the reader's buffers (~0.7x the file)
with polars' allocator for the rest of the run; pieces of `tuning.CSV_PIECE_BYTES` are parsed
on all cores just as fast and keep the peak near the typed frame itself (`nvprof/fast.py`, once
its header has been parsed with the grammar). The nsys gputrace reader gained nothing from it
(its peak is later, while the tables are built) and reads the file in one call.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import polars as pl

from roofreport import tuning
from roofreport.families.common.textio import Document

_PROBE_BYTES = 64 * 1024


def read_csv_pieces(doc: Document, start: int, end: int, keep: list[str] | None = None,
                    **read_csv: object) -> tuple[pl.DataFrame, int]:
    """(rows, lines): the bytes [start, end) of `doc` read by `pl.read_csv(piece, **read_csv)`
    piece by piece (`tuning.CSV_PIECE_BYTES`), concatenated into one chunk per column, and how
    many lines they hold (a last line without a break counts). `keep`: the columns kept of each
    piece once read (the reader still checked every cell of the others). Raises what
    `pl.read_csv` raises."""
    parts, lines = [], 0
    for data in _read_ahead(doc, spans(doc, start, end, tuning.CSV_PIECE_BYTES)):
        part = pl.read_csv(data, **read_csv)
        parts.append(part.select(keep) if keep is not None else part)
        lines += line_count(data)
    if not parts:
        empty = pl.read_csv(b"", **{**read_csv, "raise_if_empty": False})
        return (empty.select(keep) if keep is not None else empty), 0
    # One chunk per column: columns computed later come as one chunk, and polars copies a
    # whole frame whose columns are chunked differently at its next select.
    frame = pl.concat(parts).rechunk()
    return frame, lines


def _read_ahead(doc: Document, cuts: list[tuple[int, int]]) -> Iterator[bytes]:
    """The bytes of each span, the next one copied in a thread while the caller parses this
    one (polars lets go of the GIL): the copy, page faults included, is off the parse's path.
    Two pieces are held at a time."""
    with ThreadPoolExecutor(max_workers=1) as reader:
        ahead = reader.submit(doc.byte_ranges, cuts[:1])
        for index in range(len(cuts)):
            data = ahead.result()[0]
            ahead = reader.submit(doc.byte_ranges, cuts[index + 1:index + 2])   # [] after the last
            yield data


def line_count(data: bytes) -> int:
    """Lines in `data` (a last one without a line break counts), by polars' row counter
    (no quoting: one row a line; several GB/s)."""
    return pl.scan_csv(data, has_header=False, separator="\x1f", quote_char=None,
                       schema={"line": pl.String}).select(pl.len()).collect().item()


def spans(doc: Document, start: int, end: int, piece_bytes: int) -> list[tuple[int, int]]:
    """[start, end) in spans of about `piece_bytes`, each ending after a line break."""
    out = []
    while start < end:
        cut = _line_end(doc, min(start + piece_bytes, end), end)
        out.append((start, cut))
        start = cut
    return out


def _line_end(doc: Document, pos: int, end: int) -> int:
    """The offset just after the first line break at or after `pos` (`end` when none)."""
    while pos < end:
        probe = doc.byte_ranges([(pos, min(pos + _PROBE_BYTES, end))])[0]
        found = probe.find(b"\n")
        if found >= 0:
            return pos + found + 1
        if not probe:
            break  # (the file shrank while read)
        pos += len(probe)
    return end
