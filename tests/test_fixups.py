"""Regression tests for defects found across families: GPU numbering of headerless nvidia-smi
captures, nvprof trace rows in `kernels`, roofline ceilings matched to the time source's clock,
FLOPs from ncu raw pages that carry only per-cycle rates."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.pipeline.sniff import sniff
from tests.conftest import CORPUS, corpus_path, parse_path


def parse(path):
    return parse_path(path)


# -- 1. nvidia-smi: headerless single-GPU captures are one GPU ------------------------------

def test_headerless_single_gpu_capture_is_gpu_0():
    """`2 %, 588 MiB` lines, no index column and no time: 23,646 samples of ONE GPU, not a
    GPU per row."""
    result = parse(corpus_path("smi", "query_csv", "cosmosapjw-quantum__omoknuni_small__gpu_usage.log"))
    samples = result.tables["samples"]
    assert samples.height == 23646
    assert samples["gpu_index"].unique().to_list() == [0]
    assert "smi.gpu-by-position" not in {w.code for w in result.warnings}


def _headerless(path) -> bool:
    sniffed = sniff(path)
    return sniffed.family == "nvidia-smi" and "noheader" in (sniffed.variant or "")


NOHEADER = [p for p in sorted((CORPUS / "smi" / "query_csv").glob("*")) if _headerless(p)] \
    if CORPUS.exists() else []


@pytest.mark.parametrize("path", NOHEADER, ids=lambda p: p.name)
def test_noheader_captures_number_gpus_per_sweep(path):
    """Without an index column a GPU number is a position in a sweep: never more GPUs than a
    node holds, and each GPU has as many samples as the others (within one sweep)."""
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

NVPROF_TRACES = sorted((CORPUS / "nvprof" / "trace").glob("*gpu_trace*")) + sorted(
    (CORPUS / "derived" / "nvprof").glob("*gputrace*")) + sorted(
    (CORPUS / "nvprof" / "nvvp").glob("*.prof")) if CORPUS.exists() else []


@pytest.mark.parametrize("path", NVPROF_TRACES, ids=lambda p: p.name)
def test_nvprof_trace_kernels_are_kernel_launches_only(path):
    """Trace rows fill `activities` (and `kernels` for kernel launches), as nsys traces do."""
    result = parse(path)
    acts, kernels = result.tables.get("activities"), result.tables.get("kernels")
    assert acts is not None and acts.height, "a GPU trace gives activities"
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
    from roofreport import gpu
    from roofreport.model import derive, roofline
    from roofreport.pipeline.ingest import ingest
    rows = roofline.run_roofline(derive(ingest(paths, jobs=1).tables, gpu.load_database()))
    return rows.filter(pl.col("run").str.ends_with("vgg11") & (pl.col("precision") == "fp32")
                       & pl.col("gpu_model").str.starts_with("A100")).row(0, named=True)


def test_trace_time_is_judged_against_boost_peaks():
    """a100/vgg11: kernel time from the nsys trace (boost clock), so the FP32 roof is the A100
    datasheet 19.5 TFLOP/s, not 19.5 x 1100/1410 MHz (ncu's locked clock): 64 %, not 82 %."""
    from tests.conftest import SAMPLE_LOGS
    p = _vgg11_fp32([SAMPLE_LOGS])
    assert p["time_source"].startswith("nsys trace")
    assert p["peak_flops_per_s"] == pytest.approx(19.5e12)
    # against the FP32 instruction-mix ceiling (issue 31: 99.8 % FMA, so 19.48 TFLOP/s): 64.14 % of
    # the bare peak, 64.22 % of the ceiling its instructions could reach
    assert p["pct_of_roof"] == pytest.approx(64.22, abs=0.05)
    assert "at 1100 MHz" not in p["peak_source"]


def test_ncu_time_is_judged_against_peaks_at_the_logged_clock(tmp_path):
    """The same ncu log without its trace: time from gpu__time_duration at 1100 MHz, so the
    datasheet peak is scaled to that clock (19.5e12 x 1100 / 1410)."""
    from tests.conftest import SAMPLE_LOGS
    run = tmp_path / "a100" / "vgg11"
    run.mkdir(parents=True)
    (run / "ncu-log-vgg11.txt").symlink_to(SAMPLE_LOGS / "a100" / "vgg11" / "ncu-log-vgg11.txt")
    # The log names no device and the path token `a100` fits four A100s: the user says which.
    (tmp_path / "roofreport.toml").write_text('[[run]]\ngpu = "A100-SXM4-40GB"\n', encoding="utf-8")
    p = _vgg11_fp32([tmp_path])
    assert p["time_source"].startswith("ncu")
    assert p["peak_flops_per_s"] == pytest.approx(19.5e12 * 1100 / 1410, rel=2e-3)
    assert "at 1100 MHz" in p["peak_source"]


# -- 4. FLOPs from ncu raw pages that log only per-cycle rates ------------------------------

def _named(metrics: pl.DataFrame) -> pl.DataFrame:
    return metrics.with_columns(source_file=pl.lit("page"))  # ingest sets it; parse_file does not


def test_flops_from_per_cycle_rates_worked_example():
    """volta_sgemm_32x128_nn on 3136x64x64 (tiles pad M to 3200): the raw page logs
    ffma 936.297417 and fmul 14.629647 inst/cycle, smsp__cycles_elapsed.avg.per_second
    1.305874 cycle/ns and gpu__time_duration 10.72 us, i.e. 13,999 cycles per SMSP
    (smsp__cycles_elapsed.sum 3,807,720 / 272 SMSPs): ffma = 13,107,200 = 3200·64·64,
    fmul = 204,800 = 3200·64, FP32 FLOPs = 2·ffma + fmul = 26,419,200."""
    result = parse(corpus_path("derived", "ncu", "rtx2080ti_sgemm_3136_64_64.raw.csv"))
    from roofreport.enrich.counters import kernel_counters
    row = kernel_counters(_named(result.tables["metrics"])).row(0, named=True)
    assert row["flops_fp32"] == pytest.approx(26_419_200, rel=1e-6)
    assert row["flops_fp64"] == 0.0


def test_per_cycle_rates_only_used_without_counts():
    from roofreport.enrich.counters import kernel_counters
    rows = [("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 100.0),
            ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed", 999.0),
            ("smsp__cycles_elapsed.avg.per_second", 1e9), ("gpu__time_duration.sum", 1000.0)]
    metrics = pl.DataFrame({"source_file": ["f"] * 4, "launch_id": [1] * 4, "section": [None] * 4,
                            "metric": [m for m, _ in rows], "stat": [None] * 4,
                            "value": [v for _, v in rows]})
    assert kernel_counters(metrics)["flops_fp32"].to_list() == [200.0]
    rates_only = metrics.filter(pl.col("metric") != rows[0][0])
    # 999 inst/cycle x 1 GHz x 1000 ns = 999,000 FFMA = 1,998,000 FLOPs
    assert kernel_counters(rates_only)["flops_fp32"].to_list() == [pytest.approx(1_998_000.0)]


@pytest.mark.parametrize("stem", ["rtx2080ti_sgemm_3136_64_64", "julia_indexspaces_profile",
                                  "speedy_scan_profile"])
def test_raw_csv_and_text_pages_agree_on_flops(stem):
    """The same profile printed as a raw CSV and a raw text page (rates rounded to 3 digits)."""
    from roofreport.enrich.counters import kernel_counters
    csv = kernel_counters(_named(parse(corpus_path("derived", "ncu", f"{stem}.raw.csv")).tables["metrics"]))
    txt = kernel_counters(_named(parse(corpus_path("derived", "ncu", f"{stem}.raw.txt")).tables["metrics"]))
    assert csv.height == txt.height and csv["flops_fp32"].null_count() == 0
    for a, b in zip(csv.sort("launch_id")["flops_fp32"], txt.sort("launch_id")["flops_fp32"]):
        assert a == pytest.approx(b, rel=5e-3, abs=1e-9)
