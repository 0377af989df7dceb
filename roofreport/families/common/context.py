"""Context carried forward in line-oriented logs: what a line sets (the current process,
device, section, table, kernel, NVTX domain or range) holds for the lines after it, until a line
ends it or sets another. One spelling for every reader, in two steps:

* `marks`: the value where a line sets it, a `reset` mark where a line ends it, null elsewhere;
* forward-fill the marks, then `unmarked`: the reset marks become null (no context).

The steps stay apart so that a reader working a block at a time can put the previous block's
context in front before filling (ncu's text logs); `carried` does both for a whole log at once.
"""

from __future__ import annotations

import polars as pl

# The reset mark of `carried`'s text values: no line of a log holds a NUL (`textio` reports
# and replaces them before any reader sees a line).
NO_TEXT = "\x00"


def marks(sets: pl.Expr, value: pl.Expr, ends: pl.Expr, reset: pl.Expr) -> pl.Expr:
    """`value` where `sets` holds, else `reset` where `ends` holds, else null (to be filled)."""
    return pl.when(sets).then(value).when(ends).then(reset)


def unmarked(filled: pl.Expr, reset: object) -> pl.Expr:
    """Forward-filled marks with the reset ones null: each line's context."""
    return pl.when(filled != reset).then(filled)


def carried(sets: pl.Expr, value: pl.Expr, ends: pl.Expr) -> pl.Expr:
    """`value` (as text) where `sets` holds, carried forward until the next `ends` (then null)."""
    filled = marks(sets, value.cast(pl.String), ends, pl.lit(NO_TEXT)).forward_fill()
    return unmarked(filled, NO_TEXT)
