"""The consistency oracle: `corpus/derived/nsys/` holds one real profile exported by nsys
itself as CSV reports, console tables and SQLite. Whatever roofreport reads from one form
must agree with the others (kernel counts and times per name, row by row for traces)."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.pipeline.ingest import parse_file
from roofreport.pipeline.sniff import sniff
from tests.conftest import CORPUS, corpus_path

ELLIPSIS = "\u2026"

# Profile -> the SQLite export its CSV reports were made from. (The MANIFEST names the `_nvtx`
# export as the source of the cs336 reports, but their timestamps are those of the plain one.)
SQLITE = {
    "flame_torch_rtxa4500": ("nsys", "rep", "flame_torch_rtxa4500.sqlite"),
    "cs336_pytorch_lm2.7B_nsys2024.6": ("nsys", "rep", "cs336_pytorch_lm2.7B_nsys2024.6.sqlite"),
    "olcf_hw6_rtx3070_nsys2022_um": ("nsys", "rep", "olcf_hw6_rtx3070_nsys2022_um.sqlite"),
    "alpa_jax_rtx3090_nsys2022.1_report1": ("derived", "nsys", "alpa_jax_rtx3090_nsys2022.1_report1.sqlite"),
    "zasdfgbnm_misc_2020_report1": ("derived", "nsys", "zasdfgbnm_misc_2020_report1.sqlite"),
}


def _profiles(suffix: str) -> list[str]:
    folder = CORPUS / "derived" / "nsys"
    if not folder.is_dir():
        return []
    return sorted(p.name.removesuffix(suffix) for p in folder.glob(f"*{suffix}"))


def read(*parts: str):
    path = corpus_path(*parts)
    found = sniff(path)
    assert found.family == "nsys", path
    return parse_file(path, found.spec.name, found.variant, str(path))


def derived(profile: str, what: str):
    return read("derived", "nsys", f"{profile}{what}")


def _per_name(frame: pl.DataFrame, count: str) -> dict[str, tuple[int, float]]:
    totals = frame.group_by("name").agg(pl.col(count).sum(), pl.col("duration_ns").sum())
    return {name: (n, t) for name, n, t in totals.iter_rows()}


@pytest.mark.parametrize("profile", sorted(set(_profiles("_gpukernsum.csv")) & set(_profiles("_gputrace.csv"))))
def test_kernel_summary_agrees_with_the_trace(profile):
    summary = derived(profile, "_gpukernsum.csv").tables["kernels"]
    launches = derived(profile, "_gputrace.csv").tables["kernels"]
    assert _per_name(summary, "count") == _per_name(launches, "count")
    assert summary["count"].sum() == launches.height


@pytest.mark.parametrize("profile", sorted(set(_profiles("_gpumemtimesum.csv")) & set(_profiles("_gputrace.csv"))))
def test_memory_summary_agrees_with_the_trace(profile):
    summary = derived(profile, "_gpumemtimesum.csv").tables["kernels"]
    trace = derived(profile, "_gputrace.csv").tables["activities"].filter(pl.col("kind") != "kernel")
    assert _per_name(summary, "count") == _per_name(trace.with_columns(n=pl.lit(1)), "n")


@pytest.mark.parametrize("profile", sorted(SQLITE))
def test_sqlite_agrees_with_the_csv_trace_row_by_row(profile):
    csv = derived(profile, "_gputrace.csv").tables["activities"]
    db = read(*SQLITE[profile]).tables["activities"]
    keys = ["start_ns", "duration_ns", "correlation_id", "kind", "name", "stream", "grid", "block"]
    assert db.select(keys).sort(keys).equals(csv.select(keys).sort(keys))
    assert db.height == csv.height


def test_flame_trace_counts_from_the_sqlite():
    db = read(*SQLITE["flame_torch_rtxa4500"]).tables["activities"]
    assert db.height == 2685
    assert dict(db.group_by("kind").len().iter_rows()) == {"kernel": 2482, "memcpy": 122, "memset": 81}


def test_sqlite_api_calls_agree_with_the_api_summary():
    db = read(*SQLITE["flame_torch_rtxa4500"]).tables["api_calls"]
    summary = derived("flame_torch_rtxa4500", "_cudaapisum.csv").tables["api_calls"]
    per_name = {n: (c, t) for n, c, t in db.group_by("name").agg(
        pl.len().cast(pl.Int64), pl.col("total_ns").sum()).iter_rows()}
    assert {n: (c, t) for n, c, t in summary.select("name", "calls", "total_ns").iter_rows()} == per_name


def test_sqlite_nvtx_ranges_agree_with_the_nvtx_summary():
    db = read(*SQLITE["flame_torch_rtxa4500"]).tables["regions"]
    summary = derived("flame_torch_rtxa4500", "_nvtxsum.csv").tables["regions"]
    assert _per_name(db.with_columns(n=pl.lit(1)), "n") == _per_name(summary, "count")


def _same_name(console: str, full: str) -> bool:
    return console == full or (console.endswith(ELLIPSIS) and full.startswith(console[:-1]))


@pytest.mark.parametrize("profile", _profiles(".stats_column.txt"))
def test_console_summaries_agree_with_the_csv_summaries(profile):
    console = derived(profile, ".stats_column.txt")
    assert console.error is None
    csv_tables: dict[str, list[pl.DataFrame]] = {}
    for report in ("gpukernsum", "gpumemtimesum", "cudaapisum", "nvtxsum"):
        if (CORPUS / "derived" / "nsys" / f"{profile}_{report}.csv").exists():
            for table, frame in derived(profile, f"_{report}.csv").tables.items():
                csv_tables.setdefault(table, []).append(frame)
    assert set(console.tables) == set(csv_tables)
    columns = {"kernels": ["count", "duration_ns", "grid", "block"],
               "api_calls": ["calls", "total_ns", "avg_ns", "min_ns", "max_ns"],
               "regions": ["count", "duration_ns"]}
    for table, frames in csv_tables.items():
        full, shown = pl.concat(frames), console.tables[table]
        assert shown.height == full.height, table
        assert shown.select(columns[table]).equals(full.select(columns[table])), table
        assert all(_same_name(a, b) for a, b in zip(shown["name"], full["name"])), table


@pytest.mark.parametrize("profile", _profiles(".gputrace_column.txt"))
def test_console_trace_agrees_with_the_csv_trace(profile):
    """The console trace was cut at 400 kB and nsys cut wide cells with `…`: every row it
    shows, and every value it did not cut, equals the CSV's."""
    result = derived(profile, ".gputrace_column.txt")
    console = result.tables["activities"]
    csv = derived(profile, "_gputrace.csv").tables["activities"].head(console.height)
    assert console.height >= min(csv.height, 100)
    lost = 0
    for col in ("start_ns", "duration_ns", "correlation_id", "bytes", "stream", "kind"):
        shown = console[col]
        known = shown.is_not_null() | csv[col].is_null()
        assert (shown.filter(known) == csv[col].filter(known)).all(), col
        lost += int((~known).sum())
    # Values missing from the console are exactly the ones nsys cut (and said so).
    said = [w.message for w in result.warnings if w.code == "nsys.truncated-value"]
    assert lost <= (int(said[0].split()[0]) if said else 0)
    assert all(_same_name(a, b) for a, b in zip(console["name"], csv["name"]))


def test_kernels_are_placed_in_the_nvtx_range_that_launched_them_as_nsys_does():
    """nsys's nvtxkernsum counts a kernel under every range enclosing its launch; the
    innermost one is the kernel's region: `forward` (1,240 launches) or none (1,242)."""
    kernels = read(*SQLITE["flame_torch_rtxa4500"]).tables["kernels"]
    leaf = kernels.with_columns(pl.col("region").str.extract(r"([^/]*)$", 1).alias("leaf"))
    ours = _per_name(leaf.with_columns(name="leaf", n=pl.lit(1)), "n")
    nsys = derived("flame_torch_rtxa4500", "_nvtxkernsum.csv").tables["kernels"]
    theirs = _per_name(nsys.with_columns(name="region"), "count")
    assert ours == {None: theirs[None], "forward": theirs["forward"]}
    assert theirs["forward"] == (1240, 170_195_924)
    assert leaf.filter(pl.col("leaf") == "forward")["region"][0] == "iteration10/forward"
