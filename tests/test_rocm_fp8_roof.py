"""The FP8 matrix roof on an AMD roofline (issue #34), and the MI100/MI200/MI300 matrix peaks of the
GPU table against AMD's datasheets.

The FP8 roof is one a kernel is judged against only when its counters name FP8
(`SQ_INSTS_VALU_MFMA_MOPS_F8`); it is drawn on the chart of those runs, not on every chart of
a GPU that has it. The counter file here is written as rocprofv3 writes `--pmc`
(`*_counter_collection.csv`, a row per dispatch and counter, the corpus's layout)."""

from __future__ import annotations

import polars as pl
import pytest
from click.testing import CliRunner

import roofreport
from roofreport import gpu
from roofreport.cli import cli
from roofreport.model import roofline
from tests.conftest import SAMPLE_LOGS

HEADER = ('"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Id",'
          '"Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count",'
          '"Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"')
GEMM = "Cijk_Ailk_Bljk_F8BS_BH_MT256x256x128_MI16x16x32x1_SN_1LDSB1_GRVW16_K1"


def _fp8_gemm_folder(root):
    """Three FP8 GEMMs (8192^3) at 60 % of the MI300X's dense FP8 peak, in a folder naming the GPU."""
    folder = root / "mi300x" / "fp8-gemm"
    folder.mkdir(parents=True)
    n, start = 8192, 3_104_228_990_120_400
    rows = [HEADER]
    for dispatch in (1, 2, 3):
        ns = round(2 * n ** 3 / (2614.9e12 * 0.6) * 1e9)
        counters = {"SQ_INSTS_VALU_MFMA_MOPS_F8": 2 * n ** 3 / 512, "SQ_INSTS_VALU_ADD_F32": 1024,
                    "SQ_INSTS_VALU_MUL_F32": 1024, "SQ_INSTS_VALU_FMA_F32": 4096, "SQ_INSTS_VALU_TRANS_F32": 0,
                    "FETCH_SIZE": 2 * n * n * 1.2 / 1024, "WRITE_SIZE": n * n * 2 / 1024}
        for name, value in counters.items():
            cell = f"{value:.6f}" if value else "0.00000000e+00"
            rows.append(f'{dispatch},{dispatch},"Agent 2",1,60112,60112,262144,7,"{GEMM}",256,65536,0,256,256,104,'
                        f'"{name}",{cell},{start},{start + ns}')
        start += ns + 9_000
    (folder / "60112_counter_collection.csv").write_text("\n".join(rows) + "\n")
    return folder


def test_an_fp8_run_is_judged_and_drawn_against_the_fp8_roof(tmp_path):
    folder = _fp8_gemm_folder(tmp_path)
    data = roofreport.read(folder.parent, jobs=1)
    run = data.runs.row(0, named=True)
    assert run["gpu_model"] == "Instinct MI300X" and run["roof_precision"] == "tensor"
    assert run["pct_of_roof"] == pytest.approx(60, abs=1)           # of 2614.9 TF, not of BF16's 1307.4
    assert roofline.counted_tensor_types(data.kernels, [run["run"]]) == {"tensor_fp8"}
    html = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["build", str(folder.parent), "-o", str(html)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = html.read_text(encoding="utf-8")
    assert "Tensor FP8 2.61 PFLOP/s" in text                          # the roof's label on the chart


def test_a_run_counting_no_fp8_draws_no_fp8_roof():
    data = roofreport.read(SAMPLE_LOGS / "amd" / "mi300x" / "llama3-8b", jobs=1)
    counted = roofline.counted_tensor_types(data.kernels, data.runs["run"].to_list())
    assert counted == {"tensor_bf16"}
    labels = [c.label for c in roofline.ceilings(gpu.match("AMD Instinct MI300X"), {}, counted)]
    assert "Tensor FP8" not in labels and "Tensor BF16" in labels


# AMD's datasheets (dense, per device; MI200 per GCD = half the board, as the profilers show a GCD):
#   MI100: FP64 11.5, FP32 23.1, FP32 matrix 46.1, FP16 matrix 184.6, BF16 92.3, INT8 184.6 TOPS, 1.2288 TB/s
#   MI210: FP64/FP32 vector 22.6, FP64/FP32 matrix 45.3, FP16/BF16 181.0, INT8 181.0, 1.6384 TB/s
#   MI250X board: 47.9 / 95.7 / 383.0 / 383.0, 3.2768 TB/s; MI250 board: 45.3 / 90.5 / 362.1 / 362.1
#   MI300A: FP64 61.3, FP64/FP32 matrix 122.6, TF32 490.3, FP16/BF16 980.6, FP8 1961.2, INT8 1961.2, 5.3 TB/s
#   MI300X: FP64 81.7, FP64/FP32 matrix 163.4, TF32 653.7, FP16/BF16 1307.4, FP8 2614.9, INT8 2614.9, 5.3 TB/s
#   MI325X: the MI300X's compute, 6.0 TB/s
# (AMD Instinct MI100/MI210/MI250/MI250X/MI300A/MI300X/MI325X data sheets; the MI200 board table as
# AMD's launch release printed it; rocm.docs.amd.com "AMD Instinct MI300 series microarchitecture").
DATASHEETS = {
    "AMD Instinct MI100": dict(fp64=11.5, tensor_fp32=46.1, tensor_fp16=184.6, tensor_bf16=92.3, tensor_int8=184.6,
                               tensor_fp64=None, tensor_fp8=None, dram=1228.8),
    "AMD Instinct MI210": dict(fp64=22.6, tensor_fp64=45.3, tensor_fp32=45.3, tensor_fp16=181.0, tensor_bf16=181.0,
                               tensor_int8=181.0, tensor_fp8=None, dram=1638.4),
    "AMD Instinct MI250X": dict(fp64=47.9 / 2, tensor_fp64=95.7 / 2, tensor_fp32=95.7 / 2, tensor_fp16=383.0 / 2,
                                tensor_bf16=383.0 / 2, tensor_int8=383.0 / 2, tensor_fp8=None, dram=3276.8 / 2),
    "AMD Instinct MI250": dict(fp64=45.3 / 2, tensor_fp64=90.5 / 2, tensor_fp16=362.1 / 2, tensor_int8=362.1 / 2,
                               tensor_fp8=None, dram=3276.8 / 2),
    "AMD Instinct MI300A": dict(fp64=61.3, tensor_fp64=122.6, tensor_fp32=122.6, tensor_tf32=490.3, tensor_fp16=980.6,
                                tensor_bf16=980.6, tensor_fp8=1961.2, tensor_int8=1961.2, dram=5300),
    "AMD Instinct MI300X": dict(fp64=81.7, tensor_fp64=163.4, tensor_fp32=163.4, tensor_tf32=653.7, tensor_fp16=1307.4,
                                tensor_bf16=1307.4, tensor_fp8=2614.9, tensor_int8=2614.9, dram=5300),
    "AMD Instinct MI325X": dict(fp64=81.7, tensor_fp64=163.4, tensor_fp16=1307.4, tensor_fp8=2614.9, dram=6000),
}


@pytest.mark.parametrize("name", DATASHEETS)
def test_the_gpu_tables_amd_peaks_are_the_datasheets(name):
    spec = gpu.match(name)
    for field, tera in DATASHEETS[name].items():
        value = spec.dram_bw if field == "dram" else spec.peak(field)
        expected = None if tera is None else tera * (1e9 if field == "dram" else 1e12)
        assert value == (None if expected is None else pytest.approx(expected, rel=0.005)), (name, field)   # rounded figures
