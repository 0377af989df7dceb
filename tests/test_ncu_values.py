"""Values read from real ncu files, checked by hand against the files: one test per variant
(locale, auto-scaled units, CSV header layouts, raw page, summaries, NVTX, encodings)."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.families.spec import ParseResult
from roofreport.pipeline.ingest import ingest, parse_file
from roofreport.pipeline.sniff import sniff
from tests.conftest import corpus_path


def _parse(*parts: str) -> ParseResult:
    path = corpus_path(*parts)
    sniffed = sniff(path)
    return parse_file(path, sniffed.spec.name, sniffed.variant, path.name)


def _metric(result: ParseResult, metric: str, launch: int = 0, stat: str | None = None) -> dict:
    rows = result.tables["metrics"].filter(
        (pl.col("metric") == metric) & (pl.col("launch_id") == launch)
        & (pl.col("stat").is_null() if stat is None else pl.col("stat") == stat))
    assert rows.height == 1, rows
    return rows.row(0, named=True)


# -- text ------------------------------------------------------------------------------------

def test_decimal_comma_locale_with_space_thousands():
    result = _parse("ncu", "text", "v100_locale_decimal_comma_ax_2020.txt")
    assert result.variant == "text 2019-2022"
    assert _metric(result, "SOL FB")["value"] == pytest.approx(84.58)
    cycles = _metric(result, "SM Active Cycles")
    assert (cycles["value_text"], cycles["value"]) == ("12 837 852,30", pytest.approx(12837852.30))
    duration = _metric(result, "Duration")
    assert (duration["unit"], duration["value"]) == ("msecond", pytest.approx(10.55e6))
    # cycle/usecond is a rate: 875,84 cycles per microsecond = 875.84 MHz.
    assert _metric(result, "Memory Frequency")["value"] == pytest.approx(875.84e6)


def test_kbyte_is_scaled_decimally_to_bytes_and_units_change_per_kernel():
    result = _parse("ncu", "text", "rtx30_metrics_flops_dram_kbyte.txt")
    assert result.variant == "text 2023+"
    read = _metric(result, "dram__bytes_read.sum", launch=7)
    assert (read["source_line"], read["unit"], read["value_text"]) == (134, "Kbyte", "3.46")
    assert read["value"] == pytest.approx(3460.0)
    write = _metric(result, "dram__bytes_write.sum", launch=7)
    assert (write["unit"], write["value"]) == ("byte", 128.0)
    assert result.tables["kernels"].height == 41


def test_summary_per_kernel_2024_carries_invocations_and_min_max_avg():
    result = _parse("ncu", "text", "rtx40_print_summary_per_kernel_invocations.txt")
    assert result.variant == "text summary 2023+"
    kernels = result.tables["kernels"]
    assert kernels["name"].to_list() == [
        "add_heat_kernel_1d(float *, int)", "heat_kernel_1d_color(float *, uchar4 *)",
        "heat_kernel_1d_sim(float *, float *, BoundaryCondition)"]
    assert kernels["count"].to_list() == [14, 25, 250]
    assert (kernels["kind"] == "summary").all()
    assert kernels.row(2, named=True)["grid"] == "(2, 1, 1)"
    got = {stat: _metric(result, "Duration", launch=0, stat=stat)["value"] for stat in ("min", "max", "avg")}
    assert got == {"min": pytest.approx(1700.0), "max": pytest.approx(1980.0), "avg": pytest.approx(1750.0)}


def test_summary_totals_are_average_times_invocations():
    data = ingest([corpus_path("ncu", "text", "rtx40_print_summary_per_kernel_invocations.txt")], jobs=1)
    durations = data["kernels"].sort("launch_id")["duration_ns"].to_list()
    assert durations == pytest.approx([14 * 1750.0, 25 * 1860.0, 250 * 1920.0])


def test_old_per_kernel_summary_repeats_its_header_before_every_section():
    result = _parse("derived", "ncu", "pmkid_final.summary.txt")
    assert result.variant == "text summary per-kernel"
    (kernel,) = result.tables["kernels"].iter_rows(named=True)
    assert (kernel["count"], kernel["grid"], kernel["block"], kernel["device"]) == (1, "79", "512", "0")
    assert kernel["source_line"] == 2
    # No unit column value: left-aligned six-decimal floats.
    assert _metric(result, "gpu__time_duration", stat="avg")["value"] == 78626357888.0
    assert _metric(result, "ltc__sol_pct", stat="max")["value_text"] == "nan"
    assert _metric(result, "ltc__sol_pct", stat="max")["value"] is None


def test_raw_page_text_lists_every_counter_and_the_device_name():
    result = _parse("derived", "ncu", "julia_indexspaces_profile.raw.txt")
    assert result.variant == "text raw page"
    assert result.hints.device_name == "NVIDIA A40"
    assert result.tables["kernels"].height == 2
    duration = _metric(result, "gpu__time_duration.sum", launch=1)
    assert (duration["unit"], duration["value"], duration["section"]) == ("msecond", pytest.approx(8.97e6), None)
    assert _metric(result, "lts__t_sectors.sum")["value"] == 8280377.0
    assert _metric(result, "dram__bytes_write.sum")["value"] == pytest.approx(303.70e6)


def test_not_a_number_markers_give_null_values_and_keep_the_text():
    result = _parse("derived", "ncu", "pmkid_final.details.txt")
    elapsed = _metric(result, "Elapsed Cycles")
    assert (elapsed["value_text"], elapsed["value"]) == ("(!) nan", None)
    assert _metric(result, "Duration")["value"] == 78626357888.0


def test_nvtx_ranges_become_the_kernel_region():
    result = _parse("ncu", "text", "mindspore_nvtx_start_end_ranges_metrics.txt")
    assert result.tables["kernels"]["region"].to_list() == ["Gate_nvtx"] * 3


def test_utf16le_powershell_log_reads_like_any_other():
    result = _parse("ncu", "text", "windows_powershell_utf16le_crlf_triton.txt")
    kernels = result.tables["kernels"]
    assert kernels["name"].to_list()[2:] == ["extreme_reg_pressure_matmul"] * 4
    assert kernels["source_line"].to_list() == [36, 85, 134, 182, 230, 278]
    assert any(w.code == "ncu.error" and "error code" in w.message for w in result.warnings)


def test_launch_failure_keeps_the_kernel_and_the_tool_version_from_rule_paths():
    result = _parse("ncu", "text", "launchfailed_nan_na_err_rules_2024.txt")
    assert result.error is None and result.tool_version == "2024.3.2"
    assert result.tables["kernels"]["grid"].to_list() == ["(0, 0, 0)"]
    assert [w.message for w in result.warnings if w.code == "ncu.error"] == [
        "ncu: LaunchFailed", "ncu: The application returned an error code (9)."]
    assert result.tables["metrics"]["value"].drop_nulls().len() == 0


# -- details CSV -----------------------------------------------------------------------------

def test_era0_six_column_csv_has_no_id_launches_come_from_name_and_time():
    result = _parse("ncu", "csv", "rodinia_backprop_2019_6col_stats.txt")
    assert result.variant == "csv details 6 columns"
    kernels = result.tables["kernels"]
    assert kernels["name"].to_list() == ["bpnn_layerforward_CUDA", "bpnn_adjust_weights_cuda"]
    assert kernels["source_line"].to_list() == [10, 22]
    assert _metric(result, "EXEC")["value"] == 4161536.0
    assert _metric(result, "FP64", launch=1)["value"] == 524300.0


def test_print_fp_values_with_thousands_separators():
    result = _parse("ncu", "csv", "a100_sgemm_roofline_metrics_print_fp.csv")
    l1 = _metric(result, "l1tex__t_bytes.sum")
    assert (l1["value_text"], l1["value"]) == ("16,840,298,332,000.00", 16840298332000.0)
    kernel = result.tables["kernels"].row(2, named=True)
    assert (kernel["grid"], kernel["block"], kernel["device"], kernel["stream"]) == \
        ("(1280, 1280, 1)", "(32, 32, 1)", "0", 7)


def test_21_column_csv_ragged_metric_rows_rule_rows_and_body_item_labels():
    result = _parse("ncu", "csv", "cutlass_gemm_cc120_sol_roofline.csv")
    assert result.variant == "csv details 21 columns"
    assert result.tables["kernels"]["launch_id"].to_list() == [2, 3]
    duration = _metric(result, "Duration", launch=2)
    # `..."Duration","us","550.75",` : 17 fields under a 21-column header.
    assert (duration["source_line"], duration["unit"], duration["value"]) == (7, "us", pytest.approx(550750.0))
    assert duration["section"] == "GPU Speed Of Light Throughput"
    memory = _metric(result, "Memory [%]", launch=2)
    assert memory["section"] == "GPU Speed Of Light Throughput / GPU Throughput"
    # Rule rows (Rule Name SOLBottleneck, no metric) are advice, not metrics.
    assert result.tables["metrics"]["metric"].null_count() == 0
    assert not result.tables["metrics"]["section"].is_in(["SpeedOfLight", "SpeedOfLight_RooflineChart"]).any()


def test_20_column_csv_with_rule_columns():
    result = _parse("ncu", "csv", "raytracer_cc89_ragged_rule_columns.csv")
    assert result.variant == "csv details 20 columns"
    assert result.tables["kernels"]["name"][0] == "rand_init(curandStateXORWOW *)"
    assert _metric(result, "DRAM Frequency")["value"] == pytest.approx(10.47e9)
    assert _metric(result, "Duration")["value"] == pytest.approx(1760.0)


def test_bom_crlf_windows_csv_after_program_output():
    result = _parse("ncu", "csv", "rtx5070_windows_bom_crlf_metrics_gemm_tiled.csv")
    (kernel,) = result.tables["kernels"].iter_rows(named=True)
    assert kernel["name"].startswith("void unnamed>::gemm_tiled_kernel<32>(")
    assert kernel["source_line"] == 10
    assert _metric(result, "gpu__time_duration.sum")["value"] == 10195552.0
    assert _metric(result, "dram__bytes_op_read.sum")["value"] == 53261312.0


def test_na_values_are_null_with_their_text():
    result = _parse("ncu", "csv", "cc89_max_rate_metrics_na_values.csv")
    metrics = result.tables["metrics"]
    assert metrics.height == 3
    assert metrics["value_text"].to_list() == ["n/a"] * 3 and metrics["value"].null_count() == 3
    assert metrics["unit"].null_count() == 3


def test_errors_before_the_header_are_warnings_and_the_rows_are_kept():
    result = _parse("ncu", "csv", "a100_errors_before_header_partial_rows.csv")
    assert result.error is None
    assert result.tables["kernels"]["launch_id"].to_list() == [0, 1, 2]
    assert [(w.code, w.line) for w in result.warnings] == [
        ("ncu.error", 4), ("ncu.error", 6), ("ncu.warning", 7)]


def test_csv_without_csv_reports_the_available_kernels():
    result = _parse("ncu", "csv", "windows_no_kernels_available_kernels_list.csv")
    assert result.variant == "csv (no results)"
    assert result.error.line == 3
    assert result.error.message.startswith("ncu reported: No kernels were profiled. Available kernels: "
                                           "kernel_add, kernel_argmax, kernel_attention,")
    assert result.error.message.endswith("kernel_rmsnorm, kernel_rope")


def test_report_newer_than_the_exporting_ncu_is_an_error_in_ncus_words():
    result = _parse("derived", "ncu", "triton_silu_2025.details.txt")
    assert result.error.message == "ncu reported: Failed to load report file 'triton_silu_2025.ncu-rep'."
    assert result.error.line == 2
    assert [w.code for w in result.warnings] == ["ncu.error", "ncu.report-format"]


# -- raw CSV ---------------------------------------------------------------------------------

def test_raw_csv_units_row_every_counter_in_long_form_and_device_name():
    result = _parse("ncu", "raw_csv", "b200_flashinfer_decode_raw.csv")
    assert result.variant == "csv raw"
    assert result.hints.device_name == "NVIDIA B200"
    kernels = result.tables["kernels"]
    assert kernels.height == 32 and kernels["launch_id"].to_list() == list(range(32))
    first = kernels.row(0, named=True)
    assert first["name"].startswith("void PersistentVariableLengthMergeStatesKernel<8, 16, 8, 4,")
    assert (first["source_line"], first["grid"], first["block"], first["device"], first["stream"]) == \
        (5, "(1776, 1, 1)", "(16, 8, 1)", "0", 7)
    duration = _metric(result, "gpu__time_duration.sum")
    assert (duration["unit"], duration["value"], duration["source_line"]) == ("ns", 15616.0, 5)
    assert _metric(result, "launch__func_cache_config")["value_text"] == "CachePreferNone"
    # 475 columns - 11 identity columns - 1 counter left empty for every launch.
    assert result.tables["metrics"].filter(pl.col("launch_id") == 0).height == 463


def test_raw_csv_durations_reach_the_kernels_table():
    data = ingest([corpus_path("ncu", "raw_csv", "b200_flashinfer_decode_raw.csv")], jobs=1)
    kernels = data["kernels"].sort("launch_id")
    assert kernels["duration_ns"][:2].to_list() == [15616.0, 556544.0]
    assert data["runs"]["gpu"].to_list() == ["NVIDIA B200"]
