"""The coverage floor of the bound class (issue 31 item 2, model/bound.py `COVERAGE_FLOOR`) on
sample_logs' A100 and V100 runs: ncu profiled a window of launches (`--launch-skip`/`--launch-count`)
beside an nsys trace of several steps, so the counters cover 4 % to 25 % of each run's kernel time.
Stop 38 read "compute-bound … the counters cover 4 % of its kernel time" on page 1: now no class,
and the note says what is counted. The hand-made frames of the rule are in test_analysis_totals.py."""

from __future__ import annotations

import csv

import polars as pl
import pytest

import roofreport
from roofreport.model import bound
from roofreport.report.sections.findings import findings
from tests.conftest import SAMPLE_LOGS

FOLDERS = [SAMPLE_LOGS / "a100" / "resnet18", SAMPLE_LOGS / "v100" / "resnet18", SAMPLE_LOGS / "v100" / "vgg11"]


@pytest.fixture(scope="module")
def analysis():
    return roofreport.analyze(roofreport.read(FOLDERS))


def _ncu_launches(folder) -> int:
    """ncu's profiled launches, counted from its details CSV by hand: one ID per launch."""
    with (folder / "ncu-details.csv").open(newline="") as handle:
        lines = [line for line in handle if line.startswith('"')]
    return len({row["ID"] for row in csv.DictReader(lines)})


def _trace(folder) -> tuple[int, float]:
    """The nsys GPU trace's kernel launches and kernel time (ns), summed by hand (copies apart)."""
    with (folder / "report_cuda_gpu_trace.csv").open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if not row["Name"].startswith("[CUDA")]
    return len(rows), sum(float(row["Duration (ns)"]) for row in rows)


def test_a_run_whose_counters_cover_4_percent_of_its_time_has_no_class_and_says_what_is_counted(analysis):
    run = analysis.runs.filter(pl.col("label").str.starts_with("resnet18 · A100")).row(0, named=True)
    launches, trace_ns = _trace(FOLDERS[0])
    assert run["kernel_launches"] == launches and run["kernel_time_ns"] == pytest.approx(trace_ns)
    counted = _ncu_launches(FOLDERS[0])
    assert run["counted_kernels"] == counted
    assert run["bound"] is None and run["bound_coverage"] < 0.05
    assert run["bound_note"].startswith(f"{bound.THIN}: the counters cover 4% of it ({counted} of {launches} launches)")
    assert run["compute_time_share"] > 0.8          # what the counted launches say, kept, not a class


def test_every_sample_run_under_the_floor_is_left_unclassified_on_page_one(analysis):
    runs = analysis.runs
    thin = runs.filter(bound.thin())
    assert sorted(thin["label"].to_list()) == sorted(runs.filter(pl.col("bound_coverage").is_not_null())["label"])
    assert thin.height == 3 and (thin["bound_coverage"] < bound.COVERAGE_FLOOR).all()
    text = [p.text for p in findings(analysis, analysis.files)]
    assert not any("-bound" in p for p in text)
    (said,) = [p for p in text if p.startswith("No bound class for") and "counters cover" in p]
    assert all(label in said for label in thin["label"])
    assert "the counters cover only 4% to 25% of their kernel time, too little to tell where most of it sits" in said
