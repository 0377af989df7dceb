"""nvprof summary mode, text and CSV, on real logs: every time cell in its own unit, the Type
column carried forward, the CUDA <= 8 layout, NVTX ranges, Unified Memory, many processes in one
log, `--import-profile` output, hand-made and course CSVs with their per-column units row."""

from __future__ import annotations

import math

import polars as pl
import pytest

from tests.conftest import corpus_path, parse_path


def parse(*parts):
    return parse_path(corpus_path(*parts), "nvprof")


def row(frame: pl.DataFrame, name: str) -> dict:
    found = frame.filter(pl.col("name") == name)
    assert found.height == 1, (name, found.height)
    return found.row(0, named=True)


def metric(result, kernel: str, name: str, stat: str | None) -> dict:
    m = result.tables["metrics"]
    cond = (pl.col("kernel_name") == kernel) & (pl.col("metric") == name)
    cond &= pl.col("stat").is_null() if stat is None else (pl.col("stat") == stat)
    found = m.filter(cond)
    assert found.height == 1, (kernel, name, stat, found.height)
    return found.row(0, named=True)


def test_text_summary_with_nvtx_ranges():
    result = parse("nvprof", "summary", "llmc_gpt2_t4_bf16_training_summary.txt")
    kernels, api = result.tables["kernels"], result.tables["api_calls"]
    assert result.error is None
    assert kernels.height == 29 and api.height == 51
    assert set(kernels["kind"]) == {"summary"} and set(api["kind"]) == {"summary"}
    first = kernels.row(0, named=True)
    # ` GPU activities:   67.30%  8.92100s      1512  5.9001ms  1.4169ms  115.18ms  void magma...`
    assert first["name"].startswith("void magma_sgemmEx_kernel<float, __nv_bfloat16, __nv_bfloat16, bool=1")
    assert (first["count"], first["duration_ns"], first["source_line"]) == (1512, 8.921e9, 5)
    nccl = kernels.filter(pl.col("name").str.starts_with("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t("))
    assert nccl["count"].to_list() == [4] and nccl["duration_ns"].to_list() == [57632.0]
    launch = row(api, "cudaLaunchKernel")
    assert (launch["calls"], launch["total_ns"], launch["avg_ns"], launch["min_ns"], launch["max_ns"]) == \
        (4864, 31.354e6, 6446.0, 3269.0, 5.4846e6)
    # NVTX: the ranges go to regions; what ran inside them is not counted again as kernels.
    regions = result.tables["regions"]
    assert regions.height == 35 and set(regions["kind"]) == {"nvtx"}
    allreduce = regions.filter(pl.col("path") == "NCCL/ncclAllReduce").row(0, named=True)
    assert (allreduce["name"], allreduce["duration_ns"], allreduce["count"]) == ("ncclAllReduce", 815.36e6, 4)
    assert regions.filter(pl.col("path") == "Train step 0")["duration_ns"].to_list() == [9.53508e9]
    inside = result.tables["metrics"].filter(pl.col("section") == "NVTX NCCL/ncclAllReduce: GPU activities")
    assert inside.filter((pl.col("metric") == "Time") & (pl.col("stat") == "total"))["value"].to_list() == [57632.0]
    assert inside["launch_id"].null_count() == inside.height
    assert [w.code for w in result.warnings] == ["nvprof.warning"]  # `Found 1 invalid range marker(s)`


def test_every_time_cell_has_its_own_unit():
    result = parse("nvprof", "summary", "cs533_mpi_vecadd_v100_summary_allprocs.txt")
    # `0.04%  350.86us  102  3.4390us  303ns  142.70us  cuDeviceGetAttribute`
    attr = row(result.tables["api_calls"], "cuDeviceGetAttribute")
    assert (attr["total_ns"], attr["calls"], attr["avg_ns"], attr["min_ns"], attr["max_ns"]) == \
        (350860.0, 102, 3439.0, 303.0, 142700.0)
    assert row(result.tables["api_calls"], "cudaMallocHost")["total_ns"] == 624.30e6
    vec = row(result.tables["kernels"], "vector_add_kernel(float const *, float const *, float*, int)")
    assert (vec["count"], vec["duration_ns"]) == (30, 1.0493e6)
    assert metric(result, "[CUDA memcpy HtoD]", "Time(%)", None)["value"] == 61.98
    assert metric(result, "[CUDA memcpy HtoD]", "Time", "min")["value_text"] == "73.312us"


def test_old_layout_without_type_column_and_separate_api_section():
    result = parse("nvprof", "summary", "thrust2d_convolve_old_notype_cuda8.profile.time")
    kernels, api = result.tables["kernels"], result.tables["api_calls"]
    assert kernels["name"].to_list() == ["[CUDA memcpy DtoH]", "[CUDA memcpy HtoD]",
                                         "conv_shared_Kernel(float const *, float const *, float*, int, int)",
                                         "[CUDA memset]"]
    htod = row(kernels, "[CUDA memcpy HtoD]")
    assert (htod["count"], htod["duration_ns"]) == (2, 44.096e6)
    assert metric(result, "[CUDA memcpy HtoD]", "Time", "min")["value"] == 672.0
    assert api.height == 11 and "cudaMalloc" not in kernels["name"].to_list()
    setup = row(api, "cudaSetupArgument")
    assert (setup["calls"], setup["total_ns"], setup["min_ns"]) == (5, 3125.0, 112.0)
    assert result.hints.command == "./convolve.o"


def test_thirty_processes_and_their_unified_memory_sections():
    result = parse("nvprof", "summary", "nyu_hpml_hw5_vecadd_multi_runs_concat.out")
    kernels = result.tables["kernels"]
    adds = kernels.filter(pl.col("name") == "add(__int64, float*, float*)")
    assert adds.height == 30  # one summary per process
    assert adds["duration_ns"].head(2).to_list() == [92.203e6, 391.75e6]
    um = result.tables["metrics"].filter(pl.col("section") == "Unified Memory")
    first = um.filter(pl.col("source_line") == 386)
    cells = {(r["metric"], r["stat"]): r for r in first.iter_rows(named=True)}
    assert cells[("Count", None)]["value"] == 48
    # nvprof's KB/MB are binary: `4.0000KB` is a 4096-byte page.
    assert cells[("Size", "min")]["value"] == 4096.0
    assert cells[("Size", "total")]["value"] == pytest.approx(7.632813 * 2**20)
    assert cells[("Time", "total")]["value"] == 738750.0
    faults = um.filter(pl.col("metric") == "Total CPU Page faults")
    assert faults["value"].head(2).to_list() == [24.0, 118.0]
    gaps = um.filter((pl.col("kernel_name") == "Gpu page fault groups") & (pl.col("metric") == "Size"))
    assert gaps["value"].null_count() == gaps.height and set(gaps["value_text"]) == {"-"}
    assert result.hints.device_name == "Quadro RTX 8000"


def test_log_without_trailing_newline_keeps_its_last_row():
    result = parse("nvprof", "summary", "cs566_reduction_summary_2024.out")
    last = result.tables["api_calls"].row(-1, named=True)
    assert (last["name"], last["total_ns"]) == ("cuDeviceGetUuid", 147.0)
    assert result.tables["kernels"]["name"].to_list()[0] == "fill(void)"


def test_csv_units_row_applies_per_column():
    """`,%,ms,,ms,us,ms,`: Min is in microseconds while Avg and Max are in milliseconds."""
    result = parse("nvprof", "csv", "hpml_alexnet_p40_backprop_mixed_col_units.csv.log")
    first = result.tables["kernels"].row(0, named=True)
    assert first["name"].startswith("void kernelPointwiseApply2<TensorCAddOp<float>")
    assert (first["count"], first["duration_ns"]) == (2880, pytest.approx(520.573951e6))
    name = first["name"]
    assert metric(result, name, "Time", "avg")["value"] == pytest.approx(180754.0)
    assert metric(result, name, "Time", "min")["value"] == pytest.approx(1184.0)
    assert metric(result, name, "Time", "max")["value"] == pytest.approx(1.781982e6)
    winograd = result.tables["kernels"].filter(pl.col("name") == "maxwell_scudnn_winograd_128x128_ldg1_ldg4_tile228n_nt")
    assert winograd["count"].to_list() == [273]


def test_summary_rows_keep_min_and_max_in_ns_and_no_median():
    """nvprof prints Avg, Min and Max per launch, each cell in its own unit, never a median."""
    text = parse("nvprof", "summary", "llmc_gpt2_t4_bf16_training_summary.txt").tables["kernels"]
    softmax = row(text, "softmax_forward_kernel5(__nv_bfloat16*, float, __nv_bfloat16 const *, int, int)")
    assert softmax["count"] == 288 and softmax["median_ns"] is None   # 505.26us  501.72us  513.72us
    assert (softmax["min_ns"], softmax["max_ns"]) == (pytest.approx(501720.0), pytest.approx(513720.0))
    gemm = text.row(0, named=True)                                      # 5.9001ms  1.4169ms  115.18ms
    assert (gemm["min_ns"], gemm["max_ns"]) == (pytest.approx(1.4169e6), pytest.approx(115.18e6))
    # CSV: the units row says Min is in us, Max in ms
    first = parse("nvprof", "csv", "hpml_alexnet_p40_backprop_mixed_col_units.csv.log").tables["kernels"].row(0, named=True)
    assert (first["min_ns"], first["median_ns"], first["max_ns"]) == (pytest.approx(1184.0), None, pytest.approx(1.781982e6))

def test_course_csv_with_nccl_kernels_and_nvprof_warnings():
    result = parse("nvprof", "csv", "hpml_alexnet_k80x4_nccl_winograd_summary.csv.log")
    nccl = row(result.tables["kernels"], "ncclBroadcastKernel_copy_i8(ncclColl)")
    # `,%,s,,ms,ms,ms,` then `"GPU activities",32.361562,299.452280,36442,8.217229,...`
    assert nccl["count"] == 36442 and math.isclose(nccl["duration_ns"], 299.452280e9)
    assert result.tables["api_calls"].height == 42
    codes = [w.code for w in result.warnings]
    assert codes == ["nvprof.timeout", "nvprof.invalid-records"]
    assert "Found 688086 invalid records" in result.warnings[1].message
    assert result.warnings[1].line == 6
    assert result.hints.command.startswith("python main.py --arch alexnet -b 16 --epochs 1 --lr 0.01 ")


def test_training_output_before_the_table():
    result = parse("nvprof", "csv", "hpml_alexnet_p40x4_full_with_training_log.csv.log")
    first = result.tables["kernels"].row(0, named=True)
    assert (first["source_line"], first["name"], first["count"]) == \
        (1751, "ncclBroadcastKernel_copy_i8(ncclColl)", 61150)
    assert result.tables["kernels"].height == 94


def test_api_only_csv_warns_that_no_kernel_was_profiled():
    result = parse("nvprof", "csv", "hpml_resnet18_k80_apionly_nokernels.csv.log")
    assert result.error is None and "kernels" not in result.tables
    assert result.tables["api_calls"].height == 11
    assert row(result.tables["api_calls"], "cudaGetDeviceProperties")["calls"] == 8
    no_data = [w for w in result.warnings if w.code == "nvprof.no-data"]
    assert [(w.message, w.line) for w in no_data] == [("nvprof: No kernels were profiled.", 6)]


def test_hand_made_csv_without_type_or_quotes():
    result = parse("nvprof", "csv", "epicflow_sor_handmade_summary_noeol.csv")
    kernels = result.tables["kernels"]
    # Names with commas are not quoted: the grammar's row rule keeps them whole.
    red = row(kernels, "red_sor(float*, float*, float*, float*, float*, float*, float*, float*, "
                       "float*, float, int, int, int)")
    assert (red["count"], red["duration_ns"]) == (150, 237.43e6)
    assert row(kernels, "[CUDA memcpy DtoH]")["duration_ns"] == 117.72e6  # last line, no newline
    assert metric(result, "[CUDA memcpy HtoD]", "Time(%)", None)["value"] == 47.79
