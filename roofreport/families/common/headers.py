"""Header lines read once per distinct text. Tools that sample in a loop reprint their header
every page (`nvidia-smi dmon`, `dcgmi dmon`): its text is parsed by the grammar once, and a
header the grammar refuses is reported once, at the first line that prints it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import polars as pl

from roofreport.errors import ParseError

Read = TypeVar("Read")


def read_each(headers: pl.DataFrame, read: Callable[[str], Read],
              refused: Callable[[ParseError, int], None],
              text: str = "text", line: str = "line_no") -> list[tuple[str, int, Read]]:
    """(text, first line, what `read` makes of it) for each distinct header text (column `text`
    of `headers`, line numbers in column `line`), in the order first printed. A text `read`
    refuses with a ParseError is left out, and `refused` gets the error and that first line."""
    found = []
    firsts = headers.group_by(text, maintain_order=True).agg(pl.col(line).first())
    for header, line_no in firsts.iter_rows():
        try:
            found.append((header, line_no, read(header)))
        except ParseError as exc:
            refused(exc, line_no)
    return found
