"""nvprof `--metrics` / `--events`, text, CSV and spreadsheet re-saves: one `kernels` row per
(device, kernel) holding the invocations, its metric rows (min/max/avg) sharing its launch id,
values in base units; the shared counter code turns nvprof's counters into FLOPs and bytes."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.pipeline.ingest import ingest
from tests.conftest import corpus_path, parse_path


def parse(*parts):
    return parse_path(corpus_path(*parts), "nvprof")


def values(result, kernel_prefix: str, metric: str) -> dict:
    m = result.tables["metrics"].filter(pl.col("kernel_name").str.starts_with(kernel_prefix)
                                        & (pl.col("metric") == metric))
    return {r["stat"]: (r["value"], r["unit"], r["value_text"]) for r in m.iter_rows(named=True)}


def test_text_metrics_of_every_value_format():
    result = parse("nvprof", "metrics", "darknet19_v100_metrics_all_text.txt")
    kernels = result.tables["kernels"]
    assert kernels.height == 16 and set(kernels["kind"]) == {"summary"}
    norm = kernels.row(0, named=True)
    assert (norm["name"], norm["count"], norm["device"]) == \
        ("normalize_kernel(int, float*, float*, float*, int, int, int)", 18, "Tesla V100-PCIE-32GB (0)")
    metrics = result.tables["metrics"].filter(pl.col("launch_id") == norm["launch_id"])
    assert metrics.height == 3 * metrics["metric"].n_unique() and set(metrics["stat"]) == {"min", "max", "avg"}
    assert values(result, "normalize_kernel", "flop_count_sp")["avg"] == (7864320.0, None, "7864320")
    assert values(result, "normalize_kernel", "branch_efficiency")["max"] == (100.0, "%", "100.00%")
    # Throughputs are binary: `281.84GB/s` is 281.84 GiB/s.
    value, unit, text = values(result, "normalize_kernel", "gld_throughput")["avg"]
    assert (unit, text) == ("byte/second", "281.84GB/s") and value == pytest.approx(281.84 * 2**30)
    assert values(result, "normalize_kernel", "dram_read_throughput")["min"][:2] == (0.0, "byte/second")
    # Utilization levels keep their level as the value.
    assert values(result, "normalize_kernel", "dram_utilization") == {
        "min": (0.0, None, "Idle (0)"), "max": (7.0, None, "High (7)"), "avg": (1.0, None, "Low (1)")}
    assert result.hints.device_name == "Tesla V100-PCIE-32GB"
    assert result.hints.command.startswith("./darknet classifier predict")


def test_counters_give_flops_and_bytes_of_nvprof_metrics():
    """The shared counter code (enrich/counters.py): flop_count_sp × invocations, DRAM bytes =
    (read + write transactions) × 32 × invocations, on the real log."""
    data = ingest([corpus_path("nvprof", "metrics", "darknet19_v100_metrics_all_text.txt")], jobs=1)
    norm = data["kernels"].filter(pl.col("short_name") == "normalize_kernel").row(0, named=True)
    assert norm["flops_fp32"] == 7864320 * 18
    assert norm["flops_fp64"] == 0.0
    assert norm["dram_bytes"] == (15831 + 20018) * 32 * 18
    assert norm["flops_complete"] is True
    sgemm = data["kernels"].filter(pl.col("short_name") == "volta_sgemm_128x32_nn").row(0, named=True)
    assert sgemm["count"] == 8 and sgemm["flops_fp32"] > 0


def test_flop_count_in_scientific_notation():
    result = parse("nvprof", "metrics", "openacc_nbody_k20m_metrics_text_step2_shellprompt.out")
    assert values(result, "calculate_velocity_34_gpu", "flop_count_sp")["avg"][0] == 2.5481e10
    assert values(result, "calculate_velocity_34_gpu", "alu_fu_utilization")["avg"][2] == "Mid (5)"
    # The shell prompt pasted after the table is no row, and no warning either.
    assert result.warnings == [] and result.tables["kernels"]["count"].to_list() == [1]
    data = ingest([corpus_path("nvprof", "metrics", "openacc_nbody_k20m_metrics_text_step2_shellprompt.out")], jobs=1)
    assert data["kernels"]["flops_fp32"].to_list() == [2.5481e10]


def test_events_and_metrics_of_one_kernel_share_its_launch():
    """2015 layout: `<TAB>Kernel:` lines, an Event result and a Metric result for one kernel."""
    result = parse("nvprof", "metrics", "maxdnn_gtx980_events_and_metrics_2015_readme_excerpt.txt")
    kernels = result.tables["kernels"]
    assert kernels.select("name", "count", "device").rows() == [("multiconvolution_64", 10, "GeForce GTX 980 (0)")]
    metrics = result.tables["metrics"]
    assert set(metrics["launch_id"]) == {kernels["launch_id"][0]}
    assert set(metrics["section"]) == {"Event result", "Metric result"}
    assert values(result, "multiconvolution_64", "elapsed_cycles_sm")["avg"][0] == 75451292
    assert values(result, "multiconvolution_64", "inst_fp_32")["max"][0] == 9144115200
    assert values(result, "multiconvolution_64", "flop_sp_efficiency")["avg"][:2] == (94.55, "%")


def test_csv_metrics_per_device():
    result = parse("nvprof", "metrics", "hpml_alexnet_p40x4_flopdp_metrics.csv.log")
    kernels = result.tables["kernels"]
    assert kernels.height == 24
    assert kernels.group_by("device").len().sort("device").rows() == [
        (f"Tesla P40 ({i})", 6) for i in range(4)]
    first = kernels.row(0, named=True)
    assert first["name"].startswith("void cudnn::detail::implicit_convolve_sgemm<float, float, int=512,")
    metrics = result.tables["metrics"]
    assert set(metrics["metric"]) == {"flop_count_dp"}
    assert metrics.filter(pl.col("launch_id") == first["launch_id"]).height == 3
    assert result.hints.device_name == "Tesla P40"


def test_csv_percent_values_keep_their_unit():
    result = parse("nvprof", "metrics", "hpml_alexnet_k80x4_gld_efficiency_pct_metrics.csv.log")
    m = values(result, "cudnn_convolve_sgemm_sm35_ldg_nn_64x16x64x16x16", "gld_efficiency")
    assert m["avg"] == (0.0, "%", "0.000000%")
    counts = result.tables["kernels"].filter(
        pl.col("name") == "cudnn_convolve_sgemm_sm35_ldg_nn_64x16x64x16x16")["count"].to_list()
    assert counts == [6, 5, 5, 5]  # one row per device, Invocations each


def _comparable(result) -> pl.DataFrame:
    return result.tables["metrics"].select("device", "kernel_name", "metric", "stat", "value") \
        .sort("device", "kernel_name", "stat")


def test_spreadsheet_resave_reads_as_the_original_csv():
    original = parse("nvprof", "metrics", "hpml_resnet18_k80x4_flopdp_metrics.csv.log")
    resaved = parse("nvprof", "metrics", "hpml_resnet18_k80x4_flopdp_excel_resaved_crlf.tsv")
    assert resaved.tables["metrics"].height == 72
    assert _comparable(resaved).equals(_comparable(original))
    # The banner the spreadsheet split at its comma reads whole again.
    assert resaved.hints.command == original.hints.command
    assert resaved.hints.command.startswith("python main.py --arch resnet18 -b 64 --epochs 1 --lr 0.10")
    assert [w.message for w in resaved.warnings] == [w.message for w in original.warnings]


def test_spreadsheet_resave_with_quoted_banner_lines():
    result = parse("nvprof", "metrics", "hpml_vgg16_k80x4_flopdp_excel_quoted_crlf.tsv")
    assert result.hints.command.startswith("python main.py --arch vgg16 -b 64 --epochs 1 --lr 0.10")
    assert not result.hints.command.endswith('"')
    assert values(result, "cudnn_convolve_sgemm_sm35_ldg_nn_64x16x64x16x16", "flop_count_dp")["avg"][0] == 43173660
    assert result.tables["kernels"]["device"].unique().sort().to_list() == [f"Tesla K80 ({i})" for i in range(4)]


def test_mangled_pytorch_kernels_and_winograd():
    result = parse("nvprof", "metrics", "ddlbench_horovod_resnet50_v100_inst_fp32.prof.txt")
    names = result.tables["kernels"]["name"].to_list()
    assert len(names) == 85
    assert names[0].startswith("_ZN2at6native18elementwise_kernelILi512ELi1EZNS0_15gpu_kernel_impl")
    assert "void cudnn::winograd_nonfused::winogradForwardOutput4x4<float, float>(cudnn::winograd_nonfused::" \
           "WinogradOutputParams<float, float>)" in names
    assert values(result, "void cudnn::winograd_nonfused::winogradForwardOutput4x4", "inst_fp_32")["avg"][0] == 122376605
