"""One real nvprof profile, exported by nvprof itself in five forms (corpus/derived/nvprof and
the SQLite `.prof` they came from): every form gives the same kernel launches and the same total
time per kernel, to the printed precision of the form; the API summary agrees with the API
trace and the SQLite records."""

from __future__ import annotations

import math

import polars as pl
import pytest

from roofreport.enrich.names import with_short_names
from tests.conftest import corpus_path, parse_path

STEM = "darknet_jetson_xavier_nvprof_sqlite_out"
FORMS = {
    "summary text": ("derived", "nvprof", f"{STEM}.summary.txt"),
    "summary csv": ("derived", "nvprof", f"{STEM}.summary.csv"),
    "gpu trace text": ("derived", "nvprof", f"{STEM}.gputrace.txt"),
    "gpu trace csv": ("derived", "nvprof", f"{STEM}.gputrace.csv"),
    "sqlite": ("nvprof", "nvvp", f"{STEM}.prof"),
}


def parse(path):
    return parse_path(path, "nvprof")


@pytest.fixture(scope="module")
def results():
    return {form: parse(corpus_path(*parts)) for form, parts in FORMS.items()}


def _gpu_rows(result) -> pl.DataFrame:
    """Every GPU activity: the summary lists copies and sets among its kernels; a trace puts
    them in `activities` only (its `kernels` hold the kernel launches, as nsys traces do)."""
    kernels = result.tables["kernels"]
    if set(kernels["kind"]) == {"summary"}:
        return kernels
    return result.tables["activities"].with_columns(count=pl.lit(1, pl.Int64))


def _per_kernel(result) -> pl.DataFrame:
    # The SQLite stores names mangled (`_Z11fill_kerneliPfi`), the exports demangled: compare
    # short names, which both reduce to `fill_kernel`.
    kernels = with_short_names(_gpu_rows(result))
    return kernels.group_by("short_name").agg(pl.col("count").sum(), pl.col("duration_ns").sum(),
                                              pl.len().alias("rows"))


def _printed_half_unit(text: str) -> float:
    """Half a unit of the last printed digit of `31.615ms`, in ns."""
    number = text.rstrip("nums")
    unit = text[len(number):]
    decimals = len(number.split(".")[1]) if "." in number else 0
    return 0.5 * 10 ** -decimals * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]


def test_every_form_parses_cleanly(results):
    for form, result in results.items():
        assert result.error is None, form
        assert result.warnings == [], form


def test_same_kernels_and_launch_counts_in_every_form(results):
    reference = _per_kernel(results["sqlite"]).sort("short_name")
    assert reference.height == 15
    assert reference["count"].sum() == 2011 + 4518 + 170  # kernels + copies + sets
    for form, result in results.items():
        got = _per_kernel(result).sort("short_name")
        assert got["short_name"].to_list() == reference["short_name"].to_list(), form
        assert got["count"].to_list() == reference["count"].to_list(), form
    # Traces and the SQLite have one row per launch, summaries one row per kernel.
    assert _per_kernel(results["gpu trace text"])["rows"].sum() == 6699
    assert _per_kernel(results["summary csv"])["rows"].sum() == 15


def test_trace_kernels_are_the_kernel_launches_only(results):
    """Trace rows fill `activities` (and `kernels` for kernel launches): 2011 launches of the
    6699 activities; the summary keeps copies among its kernels (kind "summary")."""
    for form in ("gpu trace text", "gpu trace csv", "sqlite"):
        kernels = results[form].tables["kernels"]
        assert kernels.height == 2011 and set(kernels["kind"]) == {"launch"}, form
        assert not kernels["name"].str.starts_with("[CUDA").any(), form
    summary = results["summary csv"].tables["kernels"]
    assert "[CUDA memcpy HtoD]" in set(summary["name"])


def test_exact_forms_agree_to_the_nanosecond(results):
    """SQLite (integer ns), trace CSV and summary CSV (ms with 6 decimals) give the same totals."""
    exact = _per_kernel(results["sqlite"]).sort("short_name")
    for form in ("gpu trace csv", "summary csv"):
        got = _per_kernel(results[form]).sort("short_name")
        for (name, ns), (_, count), (_, other) in zip(
                exact.select("short_name", "duration_ns").iter_rows(),
                exact.select("short_name", "count").iter_rows(),
                got.select("short_name", "duration_ns").iter_rows()):
            slack = 0.5 * (count if form == "gpu trace csv" else 1) + 1e-6
            assert abs(other - ns) <= slack, (form, name, other, ns)


def test_summary_text_totals_are_the_exact_totals_rounded_as_printed(results):
    exact = dict(_per_kernel(results["sqlite"]).select("short_name", "duration_ns").iter_rows())
    metrics = with_short_names(results["summary text"].tables["metrics"], "kernel_name")
    totals = metrics.filter((pl.col("metric") == "Time") & (pl.col("stat") == "total"))
    assert totals.height == 15
    for name, value, text in totals.select("short_name", "value", "value_text").iter_rows():
        assert abs(value - exact[name]) <= _printed_half_unit(text) + 1e-6, (name, text)
    # e.g. `31.615ms` for the 160 volta_sgemm_64x64_nn launches (31,615,123 ns).
    assert exact["volta_sgemm_64x64_nn"] == 31_615_123


def test_trace_text_durations_match_the_sqlite_to_five_digits(results):
    text = results["gpu trace text"].tables["activities"]
    exact = results["sqlite"].tables["activities"]
    assert text.height == exact.height == 6699
    both = pl.DataFrame({"text": text["duration_ns"], "exact": exact["duration_ns"],
                         "tstart": text["start_ns"], "start": exact["start_ns"]})
    # `9.7280us`, `2.0923ms`, `800ns`: five significant digits at most.
    assert both.filter((pl.col("text") - pl.col("exact")).abs() > pl.col("exact") * 5e-5 + 0.5).height == 0
    assert both.filter((pl.col("tstart") - pl.col("start")).abs() > pl.col("start") * 5e-5 + 0.5).height == 0
    # The same activities in the same order: copies, sets and kernels interleave identically.
    assert text["kind"].to_list() == exact["kind"].to_list()
    sizes = pl.DataFrame({"text": text["bytes"], "exact": exact["bytes"]}).drop_nulls()
    assert sizes.height == 4518 + 170
    # `1.0313MB` is 1,081,344 bytes printed in MiB to five digits.
    assert sizes.filter((pl.col("text") - pl.col("exact")).abs() > pl.col("exact") * 5e-5).height == 0


def test_api_summary_agrees_with_api_trace_and_sqlite():
    summary = parse(corpus_path("derived", "nvprof", f"{STEM}.summary.txt")).tables["api_calls"]
    trace = parse(corpus_path("derived", "nvprof", f"{STEM}.apitrace.txt")).tables["api_calls"]
    records = parse(corpus_path("nvprof", "nvvp", f"{STEM}.prof")).tables["api_calls"]
    calls = dict(summary.select("name", "calls").iter_rows())
    assert calls["cudaMemcpy"] == 4517 and calls["cudaLaunchKernel"] == 2011
    for other in (trace, records):
        counted = dict(other.group_by("name").len().iter_rows())
        assert counted == calls
    # Totals: the trace's printed durations sum to the summary's printed total.
    launch = trace.filter(pl.col("name") == "cudaLaunchKernel")["total_ns"].sum()
    assert math.isclose(launch, 73.344058e6, rel_tol=1e-4)
    exact = records.filter(pl.col("name") == "cudaLaunchKernel")["total_ns"].sum()
    assert abs(exact - summary.filter(pl.col("name") == "cudaLaunchKernel")["total_ns"][0]) <= 500
