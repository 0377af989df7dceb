"""tables/frames.py: repeated strings stored once, facts worked out once per distinct value."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_series_equal

from roofreport.tables import schema
from roofreport.tables.frames import (
    codes_and_distinct,
    distinct_rows,
    per_distinct,
    shared_strings,
)

NAMES = ["void gemm<float>(int)", "[CUDA memcpy HtoD]", None, "void gemm<float>(int)", "relu"]


@pytest.mark.parametrize("dtype", [pl.String, pl.Categorical])
def test_shared_strings_keeps_values_order_and_nulls(dtype):
    series = pl.Series("name", NAMES).cast(dtype)
    out = shared_strings(series)
    assert out.dtype == pl.String
    assert out.name == "name"
    assert out.to_list() == NAMES


def test_codes_index_the_distinct_values():
    codes, distinct = codes_and_distinct(pl.Series("name", NAMES))
    assert distinct.gather(codes).to_list() == NAMES
    assert codes.null_count() == 1
    assert sorted(distinct.to_list()) == ["[CUDA memcpy HtoD]", "relu", "void gemm<float>(int)"]


def test_per_distinct_derives_once_per_value_and_gathers_back():
    calls = []

    def derive(values: pl.Series) -> pl.DataFrame:
        calls.append(values.len())
        return pl.DataFrame({"length": values.str.len_chars()})

    names = pl.Series("name", NAMES * 1000)
    out = per_distinct(names, derive)
    assert calls == [3]                      # once per distinct name, not per row
    assert out.height == names.len()
    assert out["length"].to_list()[:5] == [21, 18, None, 21, 4]


def test_per_distinct_rejects_a_derive_of_the_wrong_length():
    with pytest.raises(ValueError):
        per_distinct(pl.Series("n", ["a", "b"]), lambda v: pl.DataFrame({"x": [1]}))


def test_conform_turns_categorical_names_into_strings():
    frame = pl.DataFrame({"name": pl.Series(NAMES).cast(pl.Categorical), "count": [1, 2, 3, 4, 5]})
    out = schema.conform("kernels", frame)
    assert out.schema["name"] == pl.String
    assert_series_equal(out["name"], pl.Series("name", NAMES))


def test_per_distinct_of_an_all_null_column_gives_null_rows():
    out = per_distinct(pl.Series("name", [None, None], dtype=pl.String),
                       lambda values: pl.DataFrame({"length": values.str.len_chars()}))
    assert out["length"].to_list() == [None, None]


def test_distinct_rows_are_unique_in_first_seen_order_with_nulls():
    frame = pl.DataFrame({"file": ["b", "b", "a", "a", "b", None, None, "a"],
                          "device": ["x", "x", "y", None, "x", None, None, None],
                          "other": range(8)})
    got = distinct_rows(frame, ["file", "device"])
    assert got.rows() == [("b", "x"), ("a", "y"), ("a", None), (None, None)]
    assert got.rows() == frame.select("file", "device").unique(maintain_order=True).rows()


def test_distinct_rows_of_an_empty_frame_is_empty():
    frame = pl.DataFrame(schema={"file": pl.String, "device": pl.String})
    assert distinct_rows(frame, ["file", "device"]).height == 0
