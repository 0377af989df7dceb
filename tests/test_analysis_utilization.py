"""Utilization statistics over nvidia-smi series (whole series and a window, power beside it),
and the CUDA API summary."""

from __future__ import annotations

import io
from datetime import datetime, timedelta

import polars as pl
import pytest

from roofreport.analysis import api_calls as api, utilization
from roofreport.tables import schema


def _samples(util: list[float | None], power: list[float | None] | None = None, gpu: int = 0,
             run: str = "r") -> pl.DataFrame:
    start = datetime(2024, 1, 1, 12, 0, 0)
    rows = [{"run": run, "gpu_index": gpu, "gpu_name": "NVIDIA A100-SXM4-40GB", "timestamp": start + timedelta(seconds=i),
             "util_gpu_pct": u, "util_mem_pct": 10.0, "power_w": (power or [None] * len(util))[i]}
            for i, u in enumerate(util)]
    return schema.conform("samples", pl.DataFrame(rows, infer_schema_length=None))


def test_whole_series_statistics():
    util = [0.0, 0.0, 100.0, 90.0, 80.0, 100.0, 4.0, 50.0, 60.0, 100.0]
    out = utilization.utilization_stats(_samples(util, power=[50.0] * 9 + [250.0]))
    row = out.row(0, named=True)
    assert row["samples"] == 10 and row["duration_s"] == 9.0
    assert row["util_mean"] == pytest.approx(58.4)
    assert row["util_median"] == 70.0
    assert row["util_p95"] == pytest.approx(100.0)
    assert row["idle_fraction"] == pytest.approx(0.3)          # 0, 0 and 4 are below 5 %
    assert row["power_mean_w"] == 70.0 and row["power_max_w"] == 250.0
    assert row["mem_util_mean"] == 10.0 and row["gpu_name"] == "NVIDIA A100-SXM4-40GB"


def test_window_in_seconds_since_the_first_sample():
    util = [0.0, 0.0, 100.0, 90.0, 80.0, 100.0, 4.0, 50.0, 60.0, 100.0]
    row = utilization.utilization_stats(_samples(util), window=(2.0, 5.0)).row(0, named=True)
    assert row["samples"] == 4 and row["util_mean"] == 92.5 and row["idle_fraction"] == 0.0
    assert (row["window_start_s"], row["window_end_s"]) == (2.0, 5.0)


def test_gpus_are_separate_and_missing_readings_stay_missing():
    both = pl.concat([_samples([50.0, None, 70.0]), _samples([0.0, 0.0, 0.0], gpu=1)])
    out = utilization.utilization_stats(both)
    assert out["gpu_index"].to_list() == [0, 1]
    assert out["util_mean"].to_list() == [60.0, 0.0]           # the null is not a zero
    assert out["idle_fraction"].to_list() == [0.0, 1.0]
    assert out["power_mean_w"].to_list() == [None, None]


def test_elapsed_seconds_win_over_timestamps_and_series_bins():
    s = _samples([10.0, 20.0, 30.0, 40.0]).with_columns(pl.Series("elapsed_s", [0.0, 0.5, 1.0, 1.5]))
    assert utilization.utilization_stats(s)["duration_s"].to_list() == [1.5]
    series = utilization.utilization_series(s, bin_s=1.0)
    assert series["t_s"].to_list() == [0.0, 1.0] and series["util_gpu_pct"].to_list() == [15.0, 35.0]


def test_no_samples():
    assert utilization.utilization_stats(schema.empty("samples")).height == 0


def test_real_two_gpu_series():
    from roofreport.pipeline.ingest import ingest
    from tests.conftest import corpus_path
    path = corpus_path("smi", "query_csv", "tkjunsei__OpenAD__gpu_usage.csv")
    out = utilization.utilization_stats(ingest([path]).tables["samples"])
    # Independent reading of the same CSV: GPU 0 trained, GPU 1 sat idle.
    raw = pl.read_csv(io.StringIO(path.read_text()), has_header=True)
    raw = raw.rename({c: c.strip() for c in raw.columns}).with_columns(
        pl.col("utilization.gpu [%]").str.strip_chars().str.strip_suffix(" %").cast(pl.Float64).alias("u"),
        pl.col("index").cast(pl.String).str.strip_chars().cast(pl.Int64).alias("index"))
    for gpu in (0, 1):
        want = raw.filter(pl.col("index") == gpu)["u"]
        row = out.filter(pl.col("gpu_index") == gpu).row(0, named=True)
        assert row["samples"] == want.len()
        assert row["util_mean"] == pytest.approx(want.mean())
        assert row["idle_fraction"] == pytest.approx((want < 5).mean())
    assert out.filter(pl.col("gpu_index") == 1)["idle_fraction"].item() == 1.0


# -- CUDA API --------------------------------------------------------------------------------

def test_api_summary_strips_version_suffixes_and_does_not_sum_repeated_jobs():
    rows = [
        {"run": "r", "source_file": "a", "kind": "summary", "name": "cudaMemcpy_v3020", "calls": 10, "total_ns": 600.0},
        {"run": "r", "source_file": "a", "kind": "summary", "name": "cudaLaunchKernel", "calls": 100, "total_ns": 300.0},
        {"run": "r", "source_file": "a", "kind": "summary", "name": "cudaMalloc", "calls": 1, "total_ns": 100.0},
        {"run": "r", "source_file": "b", "kind": "summary", "name": "cudaMemcpy", "calls": 10, "total_ns": 500.0},
        {"run": "r", "source_file": "a", "kind": "trace", "name": "cudaMemcpy", "calls": 1, "total_ns": 5.0},
    ]
    out = api.api_summary(schema.conform("api_calls", pl.DataFrame(rows)), top_n=2)
    assert out.to_dicts() == [
        {"run": "r", "name": "cudaMemcpy", "calls": 10, "total_ns": 600.0, "share": 0.6},
        {"run": "r", "name": "cudaLaunchKernel", "calls": 100, "total_ns": 300.0, "share": 0.3},
    ]
    assert api.api_summary(schema.empty("api_calls")).height == 0
