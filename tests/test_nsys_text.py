"""nsys console tables of every layout generation, read from the real corpus.
Values were checked by hand against the files."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.families.common.textio import Document, read_head
from roofreport.families.nsys import text as nsys_text
from tests.conftest import corpus_path


def parse(*parts: str):
    path = corpus_path(*parts)
    variant = nsys_text.sniff_text(read_head(path))
    assert variant is not None, f"{path.name} not sniffed as nsys console output"
    return nsys_text.parse_text(Document.open(path), variant)


def text(name: str):
    return parse("nsys", "text", name)


def _row(frame: pl.DataFrame, **where) -> dict:
    match = frame.filter(*[pl.col(k) == v for k, v in where.items()])
    assert match.height >= 1, f"no row with {where}"
    return match.row(0, named=True)


def test_classic_nanoseconds_table_and_2020_table_in_one_file():
    result = text("cub_sort_nsys_cuda11.2_vs_cuda10.2_tables.txt")
    k = result.tables["kernels"]
    assert k.height == 8 and result.error is None
    # Generation A (`Total Time` without unit, 80-dash Name column, names not cut).
    onesweep = _row(k, name="DeviceRadixSortOnesweepKernel")
    assert (onesweep["count"], onesweep["duration_ns"]) == (4, 267293)
    # Generation B (`Total Time (ns)`, names cut at 100 characters with `…`).
    first = k.row(0, named=True)
    assert first["name"].startswith("void cub::DeviceRadixSortDownsweepKernel<cub::DeviceRadixSortPolicy<int, int, int>")
    assert first["name"].endswith("…") and len(first["name"]) == 100
    assert (first["count"], first["duration_ns"]) == (3, 133280)
    assert [w.code for w in result.warnings] == ["nsys.truncated-name"]


def test_console_kernel_summary_keeps_min_median_and_max_as_printed():
    """A 2023 console table (`Med (ns)  Min (ns)  Max (ns)`), and a 2020-21 one that prints
    `Minimum  Maximum` in the report's default unit (ns) and no median."""
    kernels = parse("nsys", "text", "hpml_llama3_l4_nsys2023.4_stats.txt").tables["kernels"]
    gemv = kernels.filter(pl.col("source_line") == 42).row(0, named=True)
    assert gemv["name"].startswith("std::enable_if<!T7, void>::type internal::gemvx::kernel<")
    assert (gemv["count"], gemv["min_ns"], gemv["median_ns"], gemv["max_ns"]) == (92330, 10143.0, 36384.0, 4134162.0)
    classic = parse("nsys", "text", "cub_sort_nsys_cuda11.2_vs_cuda10.2_tables.txt").tables["kernels"]
    first = classic.row(0, named=True)
    assert first["name"].startswith("void cub::DeviceRadixSortDownsweepKernel<")
    assert (first["count"], first["min_ns"], first["median_ns"], first["max_ns"]) == (3, 43712.0, None, 45152.0)

def test_mpi_ranks_interleaved_tables_are_read_by_their_headers_not_their_titles():
    result = text("cori_v100_openmp_8ranks_nsys2021.2_stats_interleaved.out")
    assert result.error is None
    k, api = result.tables["kernels"], result.tables["api_calls"]
    assert k.filter(pl.col("name") == "nvkernel_ppush__F1L665_1_").height == 8      # one per rank
    assert api.filter(pl.col("name") == "cuStreamSynchronize").height == 8
    assert api.height == 8 * 17
    # Line 1519 says "CUDA API Statistics:" but the table under it is a kernel table.
    mislabelled = _row(k, source_line=1523)
    assert (mislabelled["name"], mislabelled["count"], mislabelled["duration_ns"]) == (
        "nvkernel_cpush__F1L1124_2_", 10, 31430748)
    memset = k.filter(pl.col("name") == "[CUDA memset]")
    assert memset.height == 8 and memset["count"].to_list() == [110] * 8
    # `(by size in KiB)` tables: 685692.109 KiB of device-to-host copies per rank.
    dtoh = result.tables["metrics"].filter((pl.col("kernel_name") == "[CUDA memcpy DtoH]")
                                           & (pl.col("stat") == "total"))
    assert dtoh.height == 8 and dtoh["value"][0] == pytest.approx(685692.109 * 1024)


def test_2022_layout_with_thousands_separators_and_os_runtime_table():
    result = text("olcf_hw6_rtx3070_nsys2022_oldnames_newcols_um.output")
    api = result.tables["api_calls"]
    poll = _row(api, name="poll")
    assert (poll["kind"], poll["calls"], poll["total_ns"]) == ("osrt_summary", 829, 16_163_175_344)
    launch = _row(api, name="cudaLaunchKernel")
    assert (launch["kind"], launch["calls"], launch["total_ns"]) == ("summary", 10_000, 7_811_058_351)
    assert launch["avg_ns"] == 781_105.8
    inc = _row(result.tables["kernels"], name="inc(int *, unsigned long)")
    assert (inc["count"], inc["duration_ns"]) == (10_000, 8_694_795_789)
    um = _row(result.tables["kernels"], name="[CUDA Unified Memory memcpy HtoD]")
    assert (um["count"], um["duration_ns"]) == (64, 29_131_078)


def test_2024_layout_all_default_reports():
    result = text("cs336_pytorch_lm2.7B_nsys2024.6_stats_all.txt")
    assert result.tool_version == "2024.6.2" and result.error is None
    k = result.tables["kernels"]
    sgemm = _row(k, name="ampere_sgemm_128x64_tn")
    assert (sgemm["count"], sgemm["duration_ns"]) == (900, 2_991_054_425)
    copy = _row(k, name="[CUDA memcpy Host-to-Device]")
    assert (copy["count"], copy["duration_ns"]) == (294, 4_460_346_194)
    api = result.tables["api_calls"]
    assert set(api["kind"]) == {"summary", "osrt_summary"}
    assert _row(api, name="futex")["kind"] == "osrt_summary"
    sizes = result.tables["metrics"]
    total = _row(sizes, kernel_name="[CUDA memcpy Host-to-Device]", stat="total")
    assert total["value"] == pytest.approx(13627.435e6) and total["unit"] == "byte"
    codes = [w.code for w in result.warnings]
    assert codes == ["nsys.truncated-name", "nsys.skipped"]


def test_nvtx_name_option_splits_the_range_off_the_kernel_name():
    result = text("cs336_lm2.7B_trainstep_nsys2026.1_kern_sum_nvtxbase.txt")
    k = result.tables["kernels"]
    assert result.tool_version == "2026.1.1"
    opt = _row(k, source_line=17)
    assert (opt["region"], opt["name"], opt["count"]) == ("optimizer_step", "vectorized_elementwise_kernel", 69840)
    assert _row(k, source_line=12)["region"] is None          # `Kernel2`: outside any range
    assert _row(k, source_line=13)["name"].startswith("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8")


def test_nvtx_summary_with_style_column_and_separators():
    result = text("hpml_llama3_nsys2025.3_stats_nvtx_sum.txt")
    r = result.tables["regions"]
    assert r.select("name", "count", "duration_ns").rows() == [
        ("CCCL:cub::DeviceScan::InclusiveSumByKey", 15_648, 259_795_822),
        ("CCCL:cub::DeviceScan::InclusiveScan", 7_634, 231_716_518)]
    nvjet = _row(result.tables["kernels"], name="nvjet_hsh_64x8_64x16_2x1_v_bz_TNT")
    assert (nvjet["count"], nvjet["duration_ns"]) == (186_688, 4_481_578_374)
    assert result.tool_version == "2025.3.1"


def test_gputrace_console_with_progress_bars_joined_by_cr():
    result = text("pytorch_a100_nsys2022_gputrace_progressbar_cr.log")
    assert result.variant == "gputrace console"
    act = result.tables["activities"]
    assert act["kind"].to_list() == ["kernel", "memcpy", "memcpy", "kernel"]
    first = act.row(0, named=True)
    assert (first["start_ns"], first["duration_ns"], first["correlation_id"]) == (1181946452, 41152, 132)
    assert (first["grid"], first["block"], first["bytes"]) == ("(864, 1, 1)", "(256, 1, 1)", None)
    assert act.row(1, named=True)["bytes"] == pytest.approx(2000)     # 0.002 MB
    assert result.tables["kernels"]["launch_id"].to_list() == [1, 4]
    assert result.hints.device_name == "NVIDIA A100 80GB PCIe"


def test_expert_rule_tables_are_api_call_traces():
    result = text("abc_nsys2023.1_analyze_rules_memcpy_sync_gaps.txt")
    api = result.tables["api_calls"]
    assert api.height == 100 and set(api["kind"]) == {"trace"}
    first = api.row(0, named=True)
    assert (first["name"], first["total_ns"], first["start_ns"]) == ("cudaMemcpy_v3020", 21_914_592, 121_389_788_148)
    assert set(api["name"]) == {"cudaMemcpy_v3020", "cudaDeviceSynchronize_v3020"}
    assert result.tool_version == "2023.1.2"


def test_tool_warnings_become_warnings():
    result = text("dphpc_cutlass_gemm_nsys2025_warnings_progress.log")
    codes = [w.code for w in result.warnings]
    assert codes.count("nsys.warning") == 2 and "nsys.skipped" in codes
    assert any("CPU IP/backtrace sampling not supported" in w.message for w in result.warnings)
    assert result.tables["kernels"].height >= 1 and result.tables["api_calls"].height >= 1


@pytest.mark.parametrize("name, launches, launch_ns", [
    ("llama3_baseline_8_sampling_false_toks3_0.2_L4.txt", 1_487_980, 81_493_400_776),
    ("llama3_specdecode8-1_sampling_false_toks3_0.2_draft_4bit_L4.txt", 2_117_872, 71_039_991_201),
])
def test_course_stats_reports(name, launches, launch_ns):
    result = parse("course", "nin-ran-jan-HPML_Project", "spec-decoding", "llama3", "nsys", "final_runs", name)
    assert result.error is None and result.tool_version == "2023.4.4"
    launch = _row(result.tables["api_calls"], name="cudaLaunchKernel")
    assert (launch["calls"], launch["total_ns"]) == (launches, launch_ns)
    assert result.tables["api_calls"].height == 16
    # The kernel launches the API table counts are the instances the kernel table sums.
    kernels = result.tables["kernels"].filter(~pl.col("name").str.starts_with("[CUDA "))
    assert kernels["count"].sum() == launches
