"""Issue #34: "a rocprof stats CSV with quoted kernel names of up to 7,000 characters (gunrock/rocprim
templates with commas, parentheses, lambdas and ` [clone .kd]`): one row (19 of 56 calls)
disappears". The reader kept every row; the row vanished from the per-kernel view, which summed
kernels by their short name: rocprim's `transform_kernel<...>` instantiations are distinct
kernels that share one. The file here is written with Python's csv as rocprof writes `--stats`
(every cell quoted), its names built as gunrock's are."""

from __future__ import annotations

import csv

import polars as pl
import pytest
from click.testing import CliRunner

import roofreport
from roofreport.analysis import share
from roofreport.cli import cli

_PART = ("gunrock::operators::advance::detail::execute<(gunrock::operators::load_balance_t)2, "
         "gunrock::operators::advance_direction_t::forward, gunrock::graph::graph_t<(gunrock::memory_space_t)1, int, "
         "int, float, gunrock::graph::graph_csr_t<int, int, float> >, gunrock::sssp::enactor_t<gunrock::sssp::problem_t"
         "<gunrock::graph::graph_t<(gunrock::memory_space_t)1, int, int, float> > >::loop(gunrock::gcuda::multi_context_t&)"
         "::{lambda(int const&, int const&, int const&, float const&)#1}>(...)::{lambda(int const&)#%d}")


def _name(instance: int, parts: int) -> str:
    inner = ", ".join(_PART % j for j in range(1, parts + 1))
    return (f"void rocprim::detail::transform_kernel<rocprim::detail::default_config, {instance}u, int*, "
            f"{inner}>(int*, unsigned long, rocprim::identity<int>) [clone .kd]")


ROWS = [(_name(1, 12), 19, 27_400), (_name(2, 14), 20, 25_100), (_name(3, 9), 10, 12_700),
        ("void gunrock::sssp::relax_kernel<int, float>(int*, float*) [clone .kd]", 7, 8_300)]


@pytest.fixture(scope="module")
def stats(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gunrock")
    path = folder / "results.stats.csv"
    total = sum(calls * avg for _, calls, avg in ROWS)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL, lineterminator="\n")
        writer.writerow(["Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage"])
        for name, calls, avg in ROWS:
            writer.writerow([name, calls, calls * avg, avg, 100 * calls * avg / total])
    return path


def test_the_names_are_as_long_as_the_issues(stats):
    lengths = [len(name) for name, _, _ in ROWS[:3]]
    assert max(lengths) > 6_500 and min(lengths) > 4_000
    assert all(short == "rocprim::detail::transform_kernel" for short in
               (roofreport.read(stats, jobs=1).kernels["short_name"].to_list()[:3]))


def test_every_row_is_kept_and_no_view_sums_distinct_kernels(stats):
    data = roofreport.read(stats, jobs=1)
    assert data.files[0].status == "ok"
    assert sorted(data.kernels["count"].to_list()) == sorted(calls for _, calls, _ in ROWS)
    kernels = share.per_kernel(data.model)
    assert kernels.height == len(ROWS)                                # one row per kernel the file lists
    assert sorted(kernels["count"].to_list()) == sorted(calls for _, calls, _ in ROWS)
    nineteen = kernels.filter(pl.col("count") == 19).row(0, named=True)
    assert nineteen["time_ns"] == 19 * 27_400
    # sharing a short name, each is labelled by its whole name (less the code-object suffix)
    assert nineteen["short_name"] == ROWS[0][0].removesuffix(" [clone .kd]")
    assert kernels.filter(pl.col("count") == 7)["short_name"][0] == "gunrock::sssp::relax_kernel"


def test_the_summary_prints_four_kernels(stats):
    result = CliRunner().invoke(cli, ["summary", str(stats)], catch_exceptions=False, env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    top = result.output.split("Top 10 kernels per run")[1]
    rows = [line for line in top.splitlines() if "µs" in line]
    assert len(rows) == 4 and sum(" 19 " in line for line in rows) == 1
