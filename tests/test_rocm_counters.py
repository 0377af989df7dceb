"""AMD's counter formulas (docs/methodology.md a.3, b.2) pinned to worked examples, the AMD rows of
the GPU table, and what the analysis makes of AMD runs: the matrix peak of each kernel's input
type, the time of a counter collection, and AMD and NVIDIA rooflines side by side."""

from __future__ import annotations

import polars as pl
import pytest

import roofreport
from roofreport import gpu
from roofreport.model import roofline
from roofreport.enrich import enrich_kernels
from roofreport.tables import schema
from tests.conftest import SAMPLE_LOGS

FILE = "results.csv"


def one(metrics: dict[str, float], family: str | None = None, name: str = "my_kernel(float*) [clone .kd]") -> dict:
    """The enriched kernel row of one dispatch with these counters (as the ROCm reader writes them)."""
    kernels = schema.conform("kernels", pl.DataFrame([{
        "run": "r", "source_file": FILE, "source_line": 2, "launch_id": 1, "name": name, "kind": "launch", "count": 1}]))
    rows = [{"run": "r", "source_file": FILE, "source_line": 2, "launch_id": 1, "kernel_name": name,
             "section": "counters", "metric": metric, "value": value, "value_text": str(value)}
            for metric, value in metrics.items()]
    out = enrich_kernels(kernels, schema.conform("metrics", pl.DataFrame(rows)), families={FILE: family} if family else {})
    return out.row(0, named=True)


# -- a.3 VALU FLOPs: lanes x (ADD + MUL + TRANS + 2 FMA) per precision ---------------------------

def test_valu_flops_per_precision_are_64_lanes_times_weighted_wave_instructions():
    row = one({"SQ_INSTS_VALU_ADD_F64": 10, "SQ_INSTS_VALU_MUL_F64": 20, "SQ_INSTS_VALU_TRANS_F64": 5,
               "SQ_INSTS_VALU_FMA_F64": 30, "SQ_INSTS_VALU_FMA_F32": 100, "SQ_INSTS_VALU_ADD_F16": 7})
    assert row["flops_fp64"] == 64 * (10 + 20 + 5 + 2 * 30)
    assert row["flops_fp32"] == 64 * 2 * 100
    assert row["flops_fp16"] == 64 * 7
    assert row["flops_tensor"] is None and row["flops_complete"] is True


def test_a_precision_without_counters_stays_unknown():
    row = one({"SQ_INSTS_VALU_FMA_F64": 30})
    assert row["flops_fp64"] == 64 * 60 and row["flops_fp32"] is None and row["flops_fp16"] is None


def test_the_dispatch_wave_size_wins_over_the_family_default():
    # a wave32 dispatch (RDNA) counts 32 work-items per instruction
    assert one({"SQ_INSTS_VALU_FMA_F32": 100, "wave_size": 32})["flops_fp32"] == 32 * 200
    assert one({"SQ_INSTS_VALU_FMA_F32": 100}, family="cdna3")["flops_fp32"] == 64 * 200


# -- a.3 matrix cores: 512 x MOPS into flops_tensor ---------------------------------------------------

def test_mfma_flops_are_512_times_mops_and_name_the_input_type():
    row = one({"SQ_INSTS_VALU_MFMA_MOPS_F64": 1000, "SQ_INSTS_VALU_MFMA_MOPS_F32": 10, "SQ_INSTS_MFMA": 400,
               "SQ_INSTS_VALU_FMA_F64": 8})
    assert row["flops_tensor"] == 512 * (1000 + 10)
    assert row["tensor_precision"] == "fp64" and row["tensor_active"] is True and row["flops_complete"] is True
    bf16 = one({"SQ_INSTS_VALU_MFMA_MOPS_BF16": 50, "SQ_INSTS_VALU_MFMA_MOPS_F16": 20})
    assert bf16["flops_tensor"] == 512 * 70 and bf16["tensor_precision"] == "bf16"


def test_fp8_and_xf32_matrix_ops_are_512_flops_each_and_name_their_type():
    # CDNA3/4 (gfx942, gfx950): MOPS_F8 (FP8/BF8 inputs) and MOPS_XF32 (CDNA3's TF32) count as the others
    fp8 = one({"SQ_INSTS_VALU_MFMA_MOPS_F8": 4000, "SQ_INSTS_VALU_MFMA_MOPS_BF16": 100})
    assert fp8["flops_tensor"] == 512 * 4100 and fp8["tensor_precision"] == "fp8"
    xf32 = one({"SQ_INSTS_VALU_MFMA_MOPS_XF32": 30, "SQ_INSTS_VALU_MFMA_MOPS_F32": 10})
    assert xf32["flops_tensor"] == 512 * 40 and xf32["tensor_precision"] == "tf32"


def test_fp8_kernels_are_judged_against_the_fp8_matrix_peak():
    mi300x = gpu.match("AMD Instinct MI300X")
    assert roofline._tensor_kind(["gemm_fp8"], ["fp8"], mi300x) == "tensor_fp8"
    peaks = roofline.peaks_for(mi300x, {}, "tensor", ["gemm_fp8"], ["fp8"])
    assert peaks["peak_flops_per_s"] == 2614.9e12 and peaks["peak_source"].startswith("Tensor FP8: datasheet")
    assert roofline._tensor_kind(["x"], ["tf32"], mi300x) == "tensor_tf32"
    # a GPU without an FP8 peak: the name rule (FP16 by default), as for any type it lacks
    assert roofline._tensor_kind(["x"], ["fp8"], gpu.match("AMD Instinct MI250X")) == "tensor_fp16"


@pytest.mark.parametrize(("device", "dense"), [
    ("AMD Instinct MI300X", 2614.9), ("AMD Instinct MI300A", 1961.2), ("AMD Instinct MI325X", 2614.9),
    ("AMD Instinct MI350X", 4613.8), ("AMD Instinct MI355X", 5033.2),
    ("NVIDIA H100 80GB HBM3", 1978.9), ("NVIDIA H200", 1978.9), ("NVIDIA B200", 4500)])
def test_fp8_peaks_are_the_datasheets_dense_figures(device, dense):
    spec = gpu.match(device)
    assert spec.peak("tensor_fp8") == pytest.approx(dense * 1e12)
    # FP8 runs twice the FP16/BF16 matrix rate on every GPU that has it
    assert spec.peak("tensor_fp8") == pytest.approx(2 * spec.peak("tensor_bf16"), rel=0.01)
    assert "FP8" in spec.source
    assert gpu.match("AMD Instinct MI250X").peak("tensor_fp8") is None     # no FP8 before CDNA3


def test_int8_matrix_ops_are_no_flops_but_show_the_cores_ran():
    row = one({"SQ_INSTS_VALU_MFMA_MOPS_I8": 300, "SQ_INSTS_VALU_MFMA_MOPS_F16": 0, "SQ_INSTS_VALU_FMA_F32": 1})
    assert row["flops_tensor"] == 0 and row["tensor_active"] is True and row["flops_complete"] is True


def test_mi100_mfma_instructions_without_mops_leave_the_flops_incomplete():
    row = one({"SQ_INSTS_VALU_MFMA_F16": 4096, "SQ_INSTS_MFMA": 4096, "SQ_INSTS_VALU_FMA_F32": 64}, family="cdna1")
    assert row["flops_tensor"] is None and row["tensor_active"] is True and row["flops_complete"] is False
    idle = one({"SQ_INSTS_VALU_MFMA_F16": 0, "SQ_INSTS_MFMA": 0, "SQ_INSTS_VALU_FMA_F32": 64}, family="cdna1")
    assert idle["flops_tensor"] == 0 and idle["flops_complete"] is True


def test_rocprofv3_derived_mfma_flops_stand_in_for_missing_mops():
    assert one({"MfmaFlops": 5.0e9, "SQ_INSTS_MFMA": 10})["flops_tensor"] == 5.0e9
    both = one({"MfmaFlops": 5.0e9, "SQ_INSTS_VALU_MFMA_MOPS_F16": 100})
    assert both["flops_tensor"] == 512 * 100            # never counted twice


# -- b.2 bytes ---------------------------------------------------------------------------------------

MI300_EA = {"TCC_EA0_RDREQ_sum": 1000, "TCC_BUBBLE_sum": 300, "TCC_EA0_RDREQ_32B_sum": 100,
            "TCC_EA0_WRREQ_sum": 500, "TCC_EA0_WRREQ_64B_sum": 200}
MI200_EA = {"TCC_EA_RDREQ_sum": 1000, "TCC_EA_RDREQ_32B_sum": 100, "TCC_EA_WRREQ_sum": 500, "TCC_EA_WRREQ_64B_sum": 200}


def test_mi300_hbm_bytes_split_128_64_and_32_byte_requests():
    # rocprof-compute: 128*bubble + 32*rd32 + 64*(rd - bubble - rd32) + 32*(wr - wr64) + 64*wr64
    expected = 128 * 300 + 32 * 100 + 64 * (1000 - 300 - 100) + 32 * (500 - 200) + 64 * 200
    assert one(MI300_EA)["dram_bytes"] == expected


def test_mi200_hbm_bytes_weigh_32_and_64_byte_requests():
    expected = 32 * 100 + 64 * (1000 - 100) + 64 * 200 + 32 * (500 - 200)
    assert one(MI200_EA)["dram_bytes"] == expected


def test_rocprof_fetch_and_write_size_are_kilobytes_of_1024():
    # the reader holds them in bytes: FETCH_SIZE 4 KB + WRITE_SIZE 2 KB
    assert one({"FETCH_SIZE": 4096.0, "WRITE_SIZE": 2048.0})["dram_bytes"] == 6144.0
    # the raw requests win over the tool's own sum when both were logged
    assert one({**MI200_EA, "FETCH_SIZE": 1.0, "WRITE_SIZE": 1.0})["dram_bytes"] == one(MI200_EA)["dram_bytes"]


def test_mi300_without_bubble_counts_every_read_as_64_bytes():
    no_bubble = {k: v for k, v in MI300_EA.items() if k != "TCC_BUBBLE_sum"}
    assert one(no_bubble)["dram_bytes"] == 32 * 100 + 64 * 900 + 32 * 300 + 64 * 200
    assert one({**no_bubble, "FETCH_SIZE": 7.0, "WRITE_SIZE": 0.0})["dram_bytes"] == 7.0   # the tool's own first


def test_l2_and_l1_bytes_are_64_byte_requests():
    row = one({"TCP_TCC_READ_REQ_sum": 10, "TCP_TCC_WRITE_REQ_sum": 5, "TCP_TCC_ATOMIC_WITH_RET_REQ_sum": 1,
               "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum": 2, "TCP_TOTAL_CACHE_ACCESSES_sum": 40})
    assert row["l2_bytes"] == 64 * 18 and row["l1_bytes"] == 64 * 40


# -- the GPU table's AMD rows ------------------------------------------------------------------------

@pytest.mark.parametrize("name, key, family, target", [
    ("AMD Instinct MI300X", "Instinct MI300X", "cdna3", "gfx942"),
    ("MI300X_A1", "Instinct MI300X", "cdna3", "gfx942"),            # rocprof-compute's workload folder
    ("AMD Instinct MI300A Accelerator", "Instinct MI300A", "cdna3", "gfx942"),
    ("AMD Instinct MI325X", "Instinct MI325X", "cdna3", "gfx942"),
    ("AMD Instinct MI355X", "Instinct MI355X", "cdna4", "gfx950"),
    ("AMD Instinct MI250X", "Instinct MI250X (per GCD)", "cdna2", "gfx90a"),
    ("AMD Instinct MI250", "Instinct MI250 (per GCD)", "cdna2", "gfx90a"),
    ("AMD Instinct MI210", "Instinct MI210", "cdna2", "gfx90a"),
    ("AMD Instinct MI100", "Instinct MI100", "cdna1", "gfx908"),
    ("AMD Radeon Instinct MI50", "Radeon Instinct MI50", "gcn5", "gfx906"),
    ("AMD Radeon Instinct MI60", "Radeon Instinct MI60", "gcn5", "gfx906"),
    ("AMD Radeon PRO W7900", "Radeon PRO W7900", "rdna3", "gfx1100"),
    ("AMD Radeon PRO W6800", "Radeon PRO W6800", "rdna2", "gfx1030"),
])
def test_amd_gpus_match_with_their_family_and_llvm_target(name, key, family, target):
    spec = gpu.match(name)
    assert spec is not None and spec.key == key
    assert spec.family == family and spec.compute_capability == target


def test_series_names_match_no_one_gpu():
    assert gpu.match("MI200") is None and gpu.match("MI300") is None


def test_mi250x_peaks_are_per_gcd_and_matrix_peaks_per_precision():
    gcd = gpu.match("AMD Instinct MI250X")
    # the board datasheet: 47.9 TF FP64 vector, 95.7 FP64 matrix, 383 FP16/BF16, 3.2768 TB/s for two GCDs
    assert gcd.fp64 == pytest.approx(47.9e12 / 2, rel=0.01)
    assert gcd.peak("tensor_fp64") == pytest.approx(95.7e12 / 2, rel=0.01)
    assert gcd.peak("tensor_fp16") == gcd.peak("tensor_bf16") == pytest.approx(383e12 / 2, rel=0.01)
    assert gcd.dram_bw == pytest.approx(3276.8e9 / 2)
    mi300x = gpu.match("AMD Instinct MI300X")
    assert (mi300x.peak("tensor_fp64"), mi300x.peak("tensor_fp32"), mi300x.peak("tensor_tf32")) == (163.4e12, 163.4e12, 653.7e12)
    assert mi300x.peak("tensor_bf16") == 1307.4e12 and mi300x.int8_tensor == 2614.9e12
    assert gpu.match("AMD Instinct MI100").peak("tensor_fp64") is None      # no FP64 matrix before CDNA2
    assert gpu.match("AMD Instinct MI355X").peak("tensor_tf32") is None     # CDNA4 dropped XF32


def test_amd_fp32_peaks_are_the_rates_the_counters_can_reach():
    # 128 FLOP per clock per CU (non-packed): what 64 x 2 x SQ_INSTS_VALU_FMA_F32 can show
    for spec in gpu.load_database().specs:
        if spec.family and spec.family.startswith("cdna"):
            assert spec.fp32 == pytest.approx(spec.sm_count * 128 * spec.boost_clock_mhz * 1e6, rel=0.02), spec.key


def test_the_matrix_columns_load_from_a_users_file_too(tmp_path):
    path = tmp_path / "peaks.tsv"
    path.write_text("gpu\taliases\tarch\tcompute_capability\tfp64_tensor_tflops\tfp32_tensor_tflops\tsource\n"
                    "Lab MI\tLab MI\tCDNA3 test\tgfx942\t100\t50\tour DGEMM\n")
    spec = gpu.load_database(path).match("Lab MI")
    assert (spec.fp64_tensor, spec.fp32_tensor, spec.family) == (100e12, 50e12, "cdna3")
    assert spec.at_clock(spec.boost_clock_mhz) is spec


# -- the analysis of AMD runs ------------------------------------------------------------------------

def test_a_kernel_is_judged_against_the_matrix_peak_of_its_input_type():
    mi250x = gpu.match("AMD Instinct MI250X")
    assert roofline._tensor_kind(["Cijk_Ailk_Bljk_DB"], ["fp64"], mi250x) == "tensor_fp64"
    assert roofline._tensor_kind(["x"], ["bf16", "bf16", "fp16"], mi250x) == "tensor_bf16"
    # a type whose peak the GPU lacks falls back to the name rule (FP16 by default)
    assert roofline._tensor_kind(["x"], ["fp64"], gpu.match("AMD Instinct MI100")) == "tensor_fp16"
    assert roofline._tensor_kind(["ampere_tf32_gemm"], [None], None) == "tensor_tf32"


@pytest.fixture(scope="module")
def amd_runs():
    return roofreport.read(SAMPLE_LOGS / "amd", jobs=1)


def test_the_amd_sample_runs_have_their_gpu_tool_time_and_a_roofline(amd_runs):
    runs = {row["run"]: row for row in amd_runs.runs.iter_rows(named=True)}
    assert set(runs) == {"amd/mi250x/stencil", "amd/mi300x/llama3-8b", "amd/mi300x/stream-dgemm", "amd/mi300x/rocm7/llama3-8b",
                         "amd/mi300x/stencil",
                         "amd/mi210/workloads/dgemm/MI210", "amd/mi210/cg",
                         "amd/mi250x/cg-mpi/slurm-7730121.out"}
    assert runs["amd/mi250x/stencil"]["gpu_model"] == "Instinct MI250X (per GCD)"
    assert runs["amd/mi300x/llama3-8b"]["gpu_model"] == "Instinct MI300X"
    assert runs["amd/mi210/workloads/dgemm/MI210"]["gpu_model"] == "Instinct MI210"
    assert runs["amd/mi300x/llama3-8b"]["time_source"] == "rocprof trace"
    assert runs["amd/mi250x/stencil"]["time_source"] == "rocprof summary"
    for row in runs.values():
        assert row["flops_complete"] is True and row["bound"] in ("memory", "compute", "mixed")
        assert 0 < row["pct_of_roof"] < 100
    # the stencil's time is split 51/49 between kernels either side of the ridge (model/bound.py)
    assert runs["amd/mi250x/stencil"]["bound"] == "mixed"
    assert runs["amd/mi250x/stencil"]["compute_time_share"] == pytest.approx(0.51, abs=0.01)


def test_a_counter_collection_takes_the_time_of_the_same_launches_in_the_trace(amd_runs):
    llama = amd_runs.runs.filter(pl.col("run") == "amd/mi300x/llama3-8b").row(0, named=True)
    assert llama["counted_time_source"] == "rocprof trace (matched 22 of 22 launches)"
    trace = amd_runs.kernels.filter(pl.col("source_file").str.ends_with("kernel_trace.csv"))
    assert llama["counted_time_ns"] == pytest.approx(trace["duration_ns"].sum())


def test_the_sample_counters_give_back_the_models_flops(amd_runs):
    counted = amd_runs.kernels.filter(pl.col("source_file").str.ends_with("stencil/results.csv"))
    stencil = counted.filter(pl.col("short_name") == "stencil_27pt")
    # 27-point stencil: 54 FP64 FLOPs per point of a 256^3 grid (the counters round to whole waves)
    assert stencil["flops_fp64"][0] == pytest.approx(54 * 256 ** 3, rel=1e-4)
    dgemm = counted.filter(pl.col("category") == "gemm")
    assert dgemm["flops_tensor"][0] == pytest.approx(2 * 2048 ** 3, rel=1e-6) and dgemm["tensor_precision"][0] == "fp64"
    # the CG solver's counter pass (rocprof -i, no timestamps): 2 FLOPs per nonzero in its SpMV
    cg = amd_runs.kernels.filter(pl.col("source_file").str.ends_with("cg/results.csv"))
    spmv = cg.filter(pl.col("short_name") == "spmv_csr")
    assert spmv.height == 5 and spmv["flops_fp64"][0] == 2 * (27 << 20)
    assert cg.filter(pl.col("category") == "gemm")["flops_tensor"][0] == 2 * 512 ** 3


def test_nothing_sits_above_a_roof(amd_runs):
    analysis = roofreport.analyze(amd_runs)
    points = analysis.kernel_roofline.filter(pl.col("run").str.starts_with("amd/mi"))
    assert points.height > 0 and not points["above_roof"].fill_null(False).any()
    tensor = analysis.roofline.filter(pl.col("precision") == "tensor")
    assert {r: s.split(":")[0] for r, s in tensor.select("run", "peak_source").iter_rows()} == {
        "amd/mi210/workloads/dgemm/MI210": "Tensor FP64", "amd/mi250x/stencil": "Tensor FP64", "amd/mi300x/llama3-8b": "Tensor BF16",
        "amd/mi210/cg": "Tensor FP64", "amd/mi300x/stream-dgemm": "Tensor FP64", "amd/mi300x/rocm7/llama3-8b": "Tensor BF16",
        "amd/mi300x/stencil": "Tensor FP64"}   # the solver's small DGEMM preconditioner


def test_amd_families_in_the_runs_and_files_tables_and_inspect_json(amd_runs):
    families = dict(amd_runs.runs.select("run", "gpu_family").iter_rows())
    assert families == {"amd/mi250x/stencil": "cdna2", "amd/mi300x/llama3-8b": "cdna3", "amd/mi210/workloads/dgemm/MI210": "cdna2",
                        "amd/mi210/cg": "cdna2", "amd/mi250x/cg-mpi/slurm-7730121.out": "cdna2",
                        "amd/mi300x/stream-dgemm": "cdna3", "amd/mi300x/rocm7/llama3-8b": "cdna3",
                        "amd/mi300x/stencil": "cdna3"}
    shown = {f.as_json()["path"].split("/amd/")[1]: f.as_json()["gpu_family"] for f in amd_runs.files}
    assert shown["mi300x/llama3-8b/48211_kernel_trace.csv"] == "cdna3"
    assert shown["mi250x/stencil/rocm-smi.csv"] == "cdna2"
    assert set(amd_runs.tables["files"]["gpu_family"]) == {"cdna2", "cdna3"}


# -- measured peaks: rocprof-compute's roofline.csv -------------------------------------------------

def test_a_workloads_roofline_csv_gives_its_runs_measured_peaks(amd_runs):
    analysis = roofreport.analyze(amd_runs)
    dgemm = analysis.roofline.filter(pl.col("run") == "amd/mi210/workloads/dgemm/MI210")
    tensor = dgemm.filter(pl.col("precision") == "tensor").row(0, named=True)
    # the workload's roofline.csv: MFMAF64Flops 39954.3 GFLOP/s, HBMBw 1352.6 GB/s (datasheet: 45.3 TF, 1638.4 GB/s)
    assert tensor["peak_flops_per_s"] == pytest.approx(39954.3e9)
    assert tensor["peak_dram_bytes_per_s"] == pytest.approx(1352.6e9)
    assert tensor["peak_source"] == ("Tensor FP64: measured (roofline.csv); DRAM: measured (roofline.csv) "
                                     "(Instinct MI210)")
    # a run without one keeps the datasheet's, on the same GPU
    cg = analysis.roofline.filter((pl.col("run") == "amd/mi210/cg") & (pl.col("precision") == "fp64")).row(0, named=True)
    assert cg["peak_dram_bytes_per_s"] == pytest.approx(1638.4e9) and "datasheet" in cg["peak_source"]


def test_measured_peaks_never_override_a_users_peaks_nor_scale_with_the_clock(tmp_path):
    mi210 = gpu.match("AMD Instinct MI210")
    measured = mi210.with_measured({"dram_bw": 1352.6e9, "fp64_tensor": 39954.3e9}, "roofline.csv")
    assert (measured.dram_bw, measured.peak("tensor_fp64")) == (1352.6e9, 39954.3e9)
    assert measured.source_of("dram_bw") == "measured (roofline.csv)" and measured.source_of("fp64") == "datasheet"
    half = measured.at_clock(850e6)             # half the 1700 MHz boost clock
    assert half.peak("tensor_fp64") == 39954.3e9 and half.peak("fp64") == pytest.approx(mi210.fp64 / 2)
    peaks = tmp_path / "peaks.tsv"
    peaks.write_text("gpu\tdram_gbps\tsource\nInstinct MI210\t1500\tour lab's stream run\n", encoding="utf-8")
    users = gpu.load_database(peaks).match("AMD Instinct MI210")
    assert users.with_measured({"dram_bw": 1352.6e9}, "roofline.csv") is users   # --peaks wins
    assert users.dram_bw == 1500e9
