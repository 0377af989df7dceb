"""Regression tests for defects found across families: GPU numbering of headerless nvidia-smi
captures, nvprof trace rows in `kernels`, roofline ceilings matched to the time source's clock,
FLOPs from ncu raw pages that carry only per-cycle rates."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.ingest import parse_file
from roofreport.sniff import sniff
from tests.conftest import CORPUS, corpus_path


def parse(path):
    sniffed = sniff(path)
    assert sniffed.family is not None, path
    return parse_file(path, sniffed.spec.name, sniffed.variant, str(path))


# -- 1. nvidia-smi: headerless single-GPU captures are one GPU ------------------------------

def test_headerless_single_gpu_capture_is_gpu_0():
    """`2 %, 588 MiB` lines, no index column and no time: 23,646 samples of ONE GPU, not a
    GPU per row."""
    result = parse(corpus_path("smi", "query_csv", "cosmosapjw-quantum__omoknuni_small__gpu_usage.log"))
    samples = result.tables["samples"]
    assert samples.height == 23646
    assert samples["gpu_index"].unique().to_list() == [0]
    assert "smi.gpu-by-position" not in {w.code for w in result.warnings}


NOHEADER = sorted((CORPUS / "smi" / "query_csv").glob("*")) if CORPUS.exists() else []


@pytest.mark.parametrize("path", NOHEADER, ids=lambda p: p.name)
def test_noheader_captures_number_gpus_per_sweep(path):
    """Without an index column a GPU number is a position in a sweep: never more GPUs than a
    node holds, and each GPU has as many samples as the others (within one sweep)."""
    sniffed = sniff(path)
    if sniffed.family != "nvidia-smi" or "noheader" not in (sniffed.variant or ""):
        pytest.skip("not a headerless query capture")
    samples = parse(path).tables["samples"]
    per_gpu = samples.group_by("gpu_index").len()["len"]
    assert per_gpu.len() <= 16
    assert per_gpu.max() - per_gpu.min() <= 1


def test_headerless_multi_gpu_capture_numbered_by_position():
    # `2025/09/21 16:12:24.315, 0, 0, 0, 4, 24564` then `..., 1, 0, ...`: two GPUs per sweep.
    result = parse(corpus_path("smi", "query_csv", "simaosantos01__test__gpu_usage.log"))
    samples = result.tables["samples"]
    assert samples.group_by("gpu_index").len().sort("gpu_index").rows() == [(0, 940), (1, 940)]


# -- 2. nvprof traces: copies and sets are activities, not kernels --------------------------

NVPROF_TRACES = sorted((CORPUS / "nvprof" / "trace").glob("*")) + sorted(
    (CORPUS / "derived" / "nvprof").glob("*gputrace*")) + sorted(
    (CORPUS / "nvprof" / "nvvp").glob("*.prof")) if CORPUS.exists() else []


@pytest.mark.parametrize("path", NVPROF_TRACES, ids=lambda p: p.name)
def test_nvprof_trace_kernels_are_kernel_launches_only(path):
    """Trace rows fill `activities` (and `kernels` for kernel launches), as nsys traces do."""
    result = parse(path)
    acts, kernels = result.tables.get("activities"), result.tables.get("kernels")
    if acts is None or not acts.height:
        pytest.skip("no GPU trace rows")
    launches = kernels.filter(pl.col("kind") == "launch") if kernels is not None else kernels
    n_kernel_acts = acts.filter(pl.col("kind") == "kernel").height
    assert (launches.height if launches is not None else 0) == n_kernel_acts
    if launches is not None and launches.height:
        assert not launches["name"].str.starts_with("[CUDA mem").any()


def test_nvprof_trace_csv_counts():
    # 2011 kernel launches, 4518 copies and 170 sets, as the SQLite profile records them.
    result = parse(corpus_path("derived", "nvprof", "darknet_jetson_xavier_nvprof_sqlite_out.gputrace.csv"))
    assert result.tables["activities"].height == 2011 + 4518 + 170
    assert result.tables["kernels"].height == 2011


def test_nvprof_summary_keeps_copies_among_kernels():
    """Summary rows (GPU activities incl. `[CUDA memcpy HtoD]`) stay kernels of kind summary."""
    result = parse(corpus_path("derived", "nvprof", "darknet_jetson_xavier_nvprof_sqlite_out.summary.csv"))
    kernels = result.tables["kernels"]
    assert set(kernels["kind"]) == {"summary"}
    htod = kernels.filter(pl.col("name") == "[CUDA memcpy HtoD]")
    assert htod["count"].to_list() == [4518]


# -- 3. roofline ceilings at the clock of the time source -----------------------------------

def _vgg11_fp32(paths):
    from roofreport import hardware
    from roofreport.analysis import roofline
    from roofreport.ingest import ingest
    rows = roofline.run_roofline(ingest(paths, jobs=1).tables, hardware.load_database())
    return rows.filter(pl.col("run").str.ends_with("vgg11") & (pl.col("precision") == "fp32")
                       & pl.col("gpu_model").str.starts_with("A100")).row(0, named=True)


def test_trace_time_is_judged_against_boost_peaks():
    """a100/vgg11: kernel time from the nsys trace (boost clock), so the FP32 roof is the A100
    datasheet 19.5 TFLOP/s, not 19.5 x 1100/1410 MHz (ncu's locked clock): 64 %, not 82 %."""
    from tests.conftest import SAMPLE_LOGS
    p = _vgg11_fp32([SAMPLE_LOGS])
    assert p["time_source"].startswith("nsys trace")
    assert p["peak_flops_per_s"] == pytest.approx(19.5e12)
    assert p["pct_of_roof"] == pytest.approx(64.14, abs=0.05)
    assert "at 1100 MHz" not in p["peak_source"]


def test_ncu_time_is_judged_against_peaks_at_the_logged_clock(tmp_path):
    """The same ncu log without its trace: time from gpu__time_duration at 1100 MHz, so the
    datasheet peak is scaled to that clock (19.5e12 x 1100 / 1410)."""
    from tests.conftest import SAMPLE_LOGS
    run = tmp_path / "a100" / "vgg11"
    run.mkdir(parents=True)
    (run / "ncu-log-vgg11.txt").symlink_to(SAMPLE_LOGS / "a100" / "vgg11" / "ncu-log-vgg11.txt")
    p = _vgg11_fp32([tmp_path])
    assert p["time_source"].startswith("ncu")
    assert p["peak_flops_per_s"] == pytest.approx(19.5e12 * 1100 / 1410, rel=2e-3)
    assert "at 1100 MHz" in p["peak_source"]
