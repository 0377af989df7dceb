"""Frame helpers that keep big tables cheap: repeated strings stored once.

A trace of a million launches names a few dozen kernels, each name hundreds of bytes long. A
polars String column read or computed row by row holds a copy per row (the whole input again);
gathering from the distinct values instead makes every row a 16-byte view into one shared
buffer. `shared_strings` turns a column into that form; `per_distinct` computes anything that
depends only on a column's value (a kernel's category, short name, tensor-core look) once per
distinct value and gathers the results back to the rows.
"""

from __future__ import annotations

from typing import Callable

import polars as pl


def codes_and_distinct(series: pl.Series) -> tuple[pl.Series, pl.Series]:
    """(codes, distinct): `distinct.gather(codes)` equals `series` (nulls stay null).

    Codes are the physical values of a Categorical; polars' categories are global, so the
    lookup is laid out by code (only codes present in the series are filled)."""
    cat = series if series.dtype == pl.Categorical else series.cast(pl.String).cast(pl.Categorical)
    codes = cat.to_physical()
    present = cat.unique().drop_nulls()
    if not present.len():
        return codes, pl.Series(series.name, [], dtype=pl.String)
    present_codes = present.to_physical()
    lookup = pl.Series(series.name, [None] * (int(present_codes.max()) + 1), dtype=pl.String)
    return codes, lookup.scatter(present_codes, present.cast(pl.String))


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
    return derived[codes] if codes.null_count() == 0 else _gather_nullable(derived, codes)


def _gather_nullable(frame: pl.DataFrame, codes: pl.Series) -> pl.DataFrame:
    """Rows of `frame` by code; a null code gives a row of nulls."""
    return frame.select(pl.all().gather(codes))
