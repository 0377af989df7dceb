"""The helpers every family shares, each written once (issue #14), checked where the families
meet: the same run read from its different forms gives the same launch shapes, activity kinds,
... as every reader now asks the one helper."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.api import read_file
from roofreport.tables.frames import launch_dims, printed_dims
from tests.conftest import corpus_path

# One nvprof run (darknet on a Jetson Xavier) in three forms: its SQLite profile and the GPU
# trace nvprof printed from it as text and as CSV.
DARKNET = [("nvprof", "nvvp", "darknet_jetson_xavier_nvprof_sqlite_out.prof"),
           ("derived", "nvprof", "darknet_jetson_xavier_nvprof_sqlite_out.gputrace.txt"),
           ("derived", "nvprof", "darknet_jetson_xavier_nvprof_sqlite_out.gputrace.csv")]
# One nsys profile: its SQLite export, the CSV trace and the kernel summary made from it.
FLAME = [("nsys", "rep", "flame_torch_rtxa4500.sqlite"),
         ("derived", "nsys", "flame_torch_rtxa4500_gputrace.csv"),
         ("derived", "nsys", "flame_torch_rtxa4500_gpukernsum.csv")]


def _kernels(parts: tuple[str, ...]) -> pl.DataFrame:
    return read_file(corpus_path(*parts)).kernels


# -- launch shapes ----------------------------------------------------------------------------

def test_the_launch_shapes_of_one_nvprof_run_agree_in_its_three_forms():
    shapes = [_kernels(parts).select("grid", "block") for parts in DARKNET]
    assert shapes[0].height == 2011 and shapes[0]["grid"].null_count() == 0
    for other in shapes[1:]:
        assert other.equals(shapes[0])


def test_an_nsys_summary_prints_the_launch_shapes_its_trace_has():
    traced = [set(_kernels(parts).select("name", "grid", "block").unique().rows()) for parts in FLAME[:2]]
    summary = set(_kernels(FLAME[2]).select("name", "grid", "block").rows())
    assert traced[0] == traced[1] == summary and len(summary) == 46


def test_printed_launch_shapes_read_as_three_numbers_or_not_at_all():
    printed = pl.Series(["(4097 1 1)", "   1 1568    1", "(2, 3, 4)", "-", "", None, "1 2"])
    got = pl.select(printed_dims(pl.lit(printed))).to_series().to_list()
    assert got == ["(4097, 1, 1)", "(1, 1568, 1)", "(2, 3, 4)", None, None, None, None]


def test_launch_columns_give_nothing_when_one_is_unknown_or_missing():
    frame = pl.DataFrame({"grid_x": [4, None], "grid_y": [1, 2], "grid_z": [1, 1]})
    assert frame.select(launch_dims(frame, "grid"))["grid"].to_list() == ["(4, 1, 1)", None]
    assert frame.with_columns(launch_dims(frame, "block"))["block"].to_list() == [None, None]
