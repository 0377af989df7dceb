"""The report formats what the analysis worked out, and computes nothing of its own (issue 30):
the utilization series are binned, the findings' thresholds applied and the runs left out
found in `analysis/`, as `Analysis` fields; the sections only read them.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

import roofreport
from roofreport.analysis import share, utilization
from roofreport.tables import schema
from roofreport.tables.lazy import LazyTables
from tests.conftest import SAMPLE_LOGS


def _samples(seconds: int, util: float, pid: int | None = None) -> pl.DataFrame:
    """One run's nvidia-smi readings, one a second for `seconds` (with `pid`: a process's)."""
    start = datetime(2024, 1, 1)
    return schema.conform("samples", pl.DataFrame({
        "run": ["r"] * seconds, "gpu_index": [0] * seconds,
        "timestamp": [start + timedelta(seconds=s) for s in range(seconds)],
        "elapsed_s": [None] * seconds, "util_gpu_pct": [util] * seconds, "util_mem_pct": [1.0] * seconds,
        "power_w": [100.0] * seconds, "pid": [pid] * seconds, "process_mem_mib": [float(s) for s in range(seconds)],
    }, schema_overrides={"elapsed_s": pl.Float64, "pid": pl.Int64}))


def test_a_long_series_is_binned_by_the_analysis_to_at_most_its_points():
    """An hour of readings a second (3,600) is binned to SERIES_POINTS bins per GPU (one more
    for the last reading, at the end of the last bin), each bin the mean of its readings; a
    process's memory likewise (the bin's largest); a process seen at one instant is not drawn."""
    gpu = _samples(3600, 40.0)
    stats = utilization.utilization_stats(gpu)
    binned = utilization.chart_series(gpu, stats)
    assert binned.height == utilization.SERIES_POINTS + 1
    assert binned["util_gpu_pct"].unique().to_list() == [40.0]
    processes = _samples(3600, 40.0, pid=7)
    memory = utilization.process_memory(processes)
    series = utilization.chart_process_series(processes, memory)
    assert series.height == utilization.SERIES_POINTS + 1
    assert series["process_mem_mib"].max() == 3599.0      # the last bin's largest reading
    assert utilization.chart_process_series(processes.head(1), utilization.process_memory(processes.head(1))).height == 0


def test_the_findings_thresholds_are_the_analysis_columns():
    """A GPU busy less than LOW_UTIL_PCT on average is `low_util`; one at it is not. A run's
    transfers at TRANSFERS_LARGE of its steady state are `transfers_large`."""
    low = utilization.utilization_stats(_samples(10, utilization.LOW_UTIL_PCT - 0.5))
    busy = utilization.utilization_stats(_samples(10, utilization.LOW_UTIL_PCT))
    assert low["low_util"].to_list() == [True] and busy["low_util"].to_list() == [False]
    frame = pl.DataFrame({"run": ["r", "r", "s", "s"], "category": ["gemm", "memcpy", "gemm", "memcpy"],
                          "share": [1 - share.TRANSFERS_LARGE, share.TRANSFERS_LARGE, 0.97, 0.03]})
    leaders = share.leading_categories(frame)
    assert leaders["transfers_large"].to_list() == [True, False]
    assert leaders["transfers_notable"].to_list() == [True, False]


def test_the_runs_left_out_of_a_dataset_folder_leave_its_metrics_unread(tmp_path):
    """A dataset folder's tables are read lazily: the appendix's runs without kernels (the
    v100 dmon run: samples only) are found from each table's `run` column, so building the
    report collects no metrics table (it used to collect the whole of it)."""
    roofreport.read(SAMPLE_LOGS / "v100", dataset=tmp_path / "ds", jobs=1)
    data = roofreport.read(tmp_path / "ds")
    analysis = roofreport.analyze(data)
    assert analysis.gaps.select("run", "missing", "held").rows() == [("v100/dmon", "kernels", ["samples"])]
    roofreport.build_report(analysis, tmp_path / "r.html")
    assert isinstance(analysis.tables, LazyTables) and "metrics" in analysis.tables
    assert "metrics" not in analysis.tables.loaded()
    assert "its logs hold samples only" in (tmp_path / "r.html").read_text(encoding="utf-8")
