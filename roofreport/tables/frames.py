"""Frame helpers that keep big tables cheap: repeated strings stored once.

A trace of a million launches names a few dozen kernels, each name hundreds of bytes long. A
polars String column read or computed row by row holds a copy per row (the whole input again);
gathering from the distinct values instead makes every row a 16-byte view into one shared
buffer. `shared_strings` turns a column into that form; `per_distinct` computes anything that
depends only on a column's value (a kernel's category, short name, tensor-core look) once per
distinct value and gathers the results back to the rows.

`launch_dims` and `printed_dims` are the one spelling of a launch's grid and block, `(x, y, z)`
(ncu's, which every reader writes), from three numeric columns or from three printed numbers."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl


def codes_and_distinct(series: pl.Series) -> tuple[pl.Series, pl.Series]:
    """(codes, distinct): the distinct non-null values, and for each row the index of its
    value among them (null for null), so `distinct.gather(codes)` equals `series`.

    Hashing goes through a Categorical (free when the column already is one); polars'
    categories are global to the process, so their physical codes are mapped to dense ones."""
    cat = series if series.dtype == pl.Categorical else series.cast(pl.String).cast(pl.Categorical)
    present = cat.unique().drop_nulls()
    distinct = present.cast(pl.String).alias(series.name)
    if not present.len():
        return pl.Series(series.name, [None] * series.len(), dtype=pl.UInt32), distinct
    physical = present.to_physical()
    dense = pl.Series([None] * (int(physical.max()) + 1), dtype=pl.UInt32).scatter(
        physical, pl.int_range(0, present.len(), dtype=pl.UInt32, eager=True))
    return dense.gather(cat.to_physical()), distinct


def shared_strings(series: pl.Series) -> pl.Series:
    """The same strings as a String column whose rows share one copy of each distinct value."""
    codes, distinct = codes_and_distinct(series)
    return distinct.gather(codes).alias(series.name)


def per_distinct(series: pl.Series, derive: Callable[[pl.Series], pl.DataFrame]) -> pl.DataFrame:
    """`derive(distinct values)` (one row per value, in order) gathered back to every row of
    `series`: a per-row result computed once per distinct value."""
    codes, distinct = codes_and_distinct(series)
    derived = derive(distinct)
    if derived.height != distinct.len():
        raise ValueError("derive must return one row per distinct value")
    return derived.select(pl.all().gather(codes))   # a null code (null value) gives nulls


def distinct_rows(frame: pl.DataFrame, cols: list[str]) -> pl.DataFrame:
    """The distinct rows of `frame[cols]` in the order first seen. Rows of a big table come in
    long runs of one value (one file's rows, one device), so the runs are cut to their first
    row by comparing neighbours before anything is hashed: hashing a million long strings
    costs several times more."""
    changed = pl.any_horizontal([pl.col(c).ne_missing(pl.col(c).shift(1)) for c in cols])
    starts = frame.select(cols).filter(changed | (pl.int_range(pl.len()) == 0))
    return starts.unique(maintain_order=True)


def per_distinct_ints(frame: pl.DataFrame, cols: list[str], expr: pl.Expr) -> pl.Series | pl.Expr:
    """`expr` over `frame[cols]` (whole numbers, e.g. a launch's grid x, y, z) worked out once
    per distinct combination and gathered back to the rows: a trace of millions of launches
    has a few dozen launch shapes, and formatting numbers row by row is slow. Falls back to
    `expr` itself (per row) when the combination does not pack into one 63-bit key."""
    packed = _packed(frame, cols)
    if packed is None:
        return expr
    first = packed.arg_unique()
    shapes = frame.select(cols).gather(first).with_columns(__key=packed.gather(first)).sort("__key")
    values = shapes.select(expr.alias("__value"))["__value"]
    return values.gather(shapes["__key"].search_sorted(packed))


def _packed(frame: pl.DataFrame, cols: list[str]) -> pl.Series | None:
    """One integer per row holding the non-negative whole numbers of `cols` side by side (-1
    when one is null), or None when they do not fit in 63 bits or are not whole numbers."""
    ints = [pl.col(c).cast(pl.Int64, strict=False) for c in cols]
    stats = frame.select([i.min().alias(f"lo{n}") for n, i in enumerate(ints)]
                         + [i.max().alias(f"hi{n}") for n, i in enumerate(ints)]).row(0)
    lows, highs = stats[:len(cols)], stats[len(cols):]
    if any(v is None for v in lows) or min(lows) < 0:
        return None
    widths = [max(int(h), 1).bit_length() for h in highs]
    if sum(widths) > 63:
        return None
    shifts = [sum(widths[i + 1:]) for i in range(len(cols))]
    key = pl.sum_horizontal([i * (1 << s) for i, s in zip(ints, shifts)], ignore_nulls=False)
    return frame.select(key.fill_null(-1).alias("key"))["key"]


def launch_dims(frame: pl.DataFrame, prefix: str) -> pl.Expr:
    """A launch's grid or block as text, `(x, y, z)`, from the whole numbers in the columns
    `{prefix}_x`, `_y`, `_z` of `frame` (null unless all three are known, as in a copy's row,
    or when `frame` lacks them). Worked out once per distinct launch shape (a trace has a few
    dozen)."""
    cols = [f"{prefix}_{axis}" for axis in "xyz"]
    if not all(col in frame.columns for col in cols):
        return pl.lit(None, pl.String).alias(prefix)
    parts = [pl.col(col).cast(pl.Int64, strict=False) for col in cols]
    dims = per_distinct_ints(frame, cols, pl.format("({}, {}, {})", *parts))
    return (pl.lit(dims) if isinstance(dims, pl.Series) else dims).alias(prefix)


def printed_dims(text: pl.Expr) -> pl.Expr:
    """A launch's grid or block printed as three whole numbers between blanks or commas, with
    or without parentheses (nvprof's `(4097 1 1)`, nsys's GridXYZ `   1 1568    1`), as
    `(4097, 1, 1)`; null for anything else (`-`, an empty cell)."""
    numbers = text.str.strip_chars(" ()").str.replace_all(r"[\s,]+", ", ")
    return pl.when(numbers.str.contains(r"^\d+, \d+, \d+$")).then(pl.format("({})", numbers))
