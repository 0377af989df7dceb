"""The consistency oracle: one real ncu report exported by ncu itself as details text, details
CSV, raw CSV (and with `--print-units base`) must give the same kernels — count, names,
launch ids and durations in ns — whichever export roofreport reads.

Durations printed in auto-scaled units are rounded (`459.46 usecond` for 459,456 ns): each is
compared with the exact base-unit value within half a unit of its last printed digit.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from roofreport.pipeline.ingest import ingest
from tests.conftest import CORPUS, corpus_path

DERIVED = CORPUS / "derived" / "ncu"
PROFILES = sorted(p.name.removesuffix(".details.csv") for p in DERIVED.glob("*.details.csv")) \
    if DERIVED.is_dir() else []
EXPORTS = ["details.txt", "details.csv", "raw.csv", "details_base.txt", "raw_base.csv", "raw.txt"]
_DURATION = ("gpu__time_duration.sum", "gpu__time_duration", "Duration")


def _read(path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    data = ingest([path], jobs=1)
    (outcome,) = data.files
    assert outcome.status == "ok", outcome.error
    return data["kernels"].sort("launch_id"), data["metrics"]


def _half_digit(metrics: pl.DataFrame) -> dict[int, float]:
    """launch_id -> half a unit of the last printed digit of its duration, in ns."""
    rows = metrics.filter(pl.col("metric").is_in(_DURATION) & pl.col("value").is_not_null())
    out = {}
    for launch, text, value in rows.select("launch_id", "value_text", "value").iter_rows():
        number = float(text.replace(",", ""))
        decimals = len(text.split(".")[1]) if "." in text else 0
        factor = value / number if number else 1.0
        out[launch] = max(out.get(launch, 0.0), 0.5 * 10 ** -decimals * factor)
    return out


def test_every_profile_with_three_exports_is_covered():
    corpus_path("derived", "ncu")
    assert PROFILES == ["julia_indexspaces_profile", "pmkid_final", "rtx2080ti_sgemm_3136_64_64",
                        "speedy_scan_profile"]


@pytest.mark.parametrize("profile", PROFILES)
def test_all_exports_of_one_profile_give_the_same_kernels(profile):
    reference, _ = _read(corpus_path("derived", "ncu", f"{profile}.raw_base.csv"))
    assert reference.height > 0 and reference["duration_ns"].null_count() == 0
    for export in EXPORTS:
        path = DERIVED / f"{profile}.{export}"
        if not path.exists():
            continue
        kernels, metrics = _read(path)
        assert kernels.height == reference.height, export
        assert kernels["name"].to_list() == reference["name"].to_list(), export
        assert kernels["launch_id"].to_list() == reference["launch_id"].to_list(), export
        assert (kernels["kind"] == "launch").all() and (kernels["count"] == 1).all()
        slack = _half_digit(metrics)
        for launch, got, exact in zip(kernels["launch_id"], kernels["duration_ns"],
                                      reference["duration_ns"]):
            assert got == pytest.approx(exact, abs=slack[launch] + 1e-6 * exact), (export, launch)


@pytest.mark.parametrize("profile", PROFILES)
def test_summary_export_gives_one_summary_row_per_kernel_with_the_same_time(profile):
    reference, _ = _read(corpus_path("derived", "ncu", f"{profile}.raw_base.csv"))
    kernels, metrics = _read(DERIVED / f"{profile}.summary.txt")
    assert kernels["name"].to_list() == reference["name"].to_list()
    assert (kernels["kind"] == "summary").all() and (kernels["count"] == 1).all()
    # The summary prints the exact base value with six decimals (`459.456000 usecond`).
    assert kernels["duration_ns"].to_list() == pytest.approx(reference["duration_ns"].to_list())
    assert set(metrics["stat"].unique()) == {"min", "max", "avg"}


def test_base_unit_exports_agree_exactly():
    """`--print-units base` prints ns integers: text and CSV exports agree to the nanosecond."""
    corpus_path("derived", "ncu")
    text, _ = _read(DERIVED / "julia_indexspaces_profile.details_base.txt")
    raw, _ = _read(DERIVED / "julia_indexspaces_profile.raw_base.csv")
    assert text["duration_ns"].to_list() == raw["duration_ns"].to_list() == [459456.0, 8974464.0]
