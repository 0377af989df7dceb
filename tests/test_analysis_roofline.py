"""Roofline arithmetic on hand-built tables: intensity, roof, ridge, bound class, counting errors,
which ceilings and which time are used (docs/methodology.md c, d)."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport import gpu
from roofreport.model import derive, roofline
from roofreport.tables import schema

DB = gpu.load_database()
V100 = "Tesla V100 SXM2 16GB"        # 15.7 TFLOP/s FP32, 900 GB/s -> ridge 17.4 FLOP/byte


def tables(kernels: list[dict], gpu_model: str = V100, extra_files: dict | None = None) -> dict[str, pl.DataFrame]:
    rows = [{"run": "r", "source_file": "ncu.txt", "launch_id": i, "source_line": i, "kind": "launch",
             "count": 1, "name": f"k{i}", "short_name": f"k{i}", **k} for i, k in enumerate(kernels, start=1)]
    frame = schema.conform("kernels", pl.DataFrame(rows, infer_schema_length=None))
    files = {"ncu.txt": "ncu", **(extra_files or {})}
    return {
        "kernels": frame,
        "runs": schema.conform("runs", pl.DataFrame({"run": ["r"], "gpu_model": [gpu_model], "gpu": ["x"]})),
        "files": schema.conform("files", pl.DataFrame({"path": list(files), "family": list(files.values())})),
    }


def kernel(flops: float, dram: float, ns: float, **more) -> dict:
    return {"flops_fp32": flops, "dram_bytes": dram, "duration_ns": ns, "flops_complete": True,
            "tensor_active": False, **more}


def one(t: dict) -> dict:
    out = roofline.kernel_roofline(derive(t, DB))
    assert out.height == 1
    return out.row(0, named=True)


def test_memory_bound_kernel():
    row = one(tables([kernel(1e9, 1e9, 2e6)]))
    assert row["ai_dram"] == 1.0
    assert row["achieved_flops_per_s"] == pytest.approx(5e11)
    assert row["ridge_ai"] == pytest.approx(15.7e12 / 900e9)
    assert row["attainable_flops_per_s"] == pytest.approx(900e9)      # bandwidth x AI
    assert row["pct_of_roof"] == pytest.approx(100 * 5e11 / 9e11)
    assert row["bound"] == "memory" and row["above_roof"] is False
    assert row["time_source"] == "ncu duration"
    assert row["peak_source"] == f"FP32: datasheet; DRAM: datasheet ({V100})"


def test_compute_bound_kernel():
    row = one(tables([kernel(1e12, 1e9, 1e8)]))
    assert row["attainable_flops_per_s"] == pytest.approx(15.7e12)
    assert row["bound"] == "compute"
    assert row["pct_of_roof"] == pytest.approx(100 * 1e13 / 15.7e12)


def test_far_below_both_roofs_is_latency_bound():
    row = one(tables([kernel(1e6, 1e6, 1e6)]))      # 1 GFLOP/s where 900 were attainable
    assert row["pct_of_roof"] < 100 * roofline.LATENCY_FRACTION
    assert row["bound"] == "latency"


def test_points_above_a_roof_are_counting_errors():
    row = one(tables([kernel(1e9, 1e6, 1e3)]))      # 1 PFLOP/s on a V100
    assert row["above_roof"] is True and row["bound"] is None
    assert "counting error" in row["note"]
    # The L2 roof counts too: 1e9 FLOPs over 1e9 L2 bytes cannot run faster than the L2 allows.
    row = one(tables([kernel(1e9, 1e6, 1e8, l2_bytes=1e9, peak_l2_bytes_per_s=1e6)]))
    assert row["ai_l2"] == 1.0 and row["above_roof"] is True


def test_hierarchical_intensities():
    row = one(tables([kernel(1e9, 1e8, 1e6, l2_bytes=4e8, l1_bytes=1e9)]))
    assert (row["ai_l1"], row["ai_l2"], row["ai_dram"]) == (1.0, 2.5, 10.0)


def test_the_logs_measured_ceilings_win():
    # rtx2080ti_sgemm raw page: 2 x 4352 FFMA/cycle x 1.306 GHz, 96 byte/cycle x 6.64 GHz.
    row = one(tables([kernel(1e9, 1e8, 1e6, peak_flops_fp32=11.366e12, peak_dram_bytes_per_s=637.3e9)],
                     gpu_model="GeForce RTX 2080 Ti"))
    assert row["peak_flops_per_s"] == 11.366e12 and row["peak_dram_bytes_per_s"] == 637.3e9
    assert row["peak_source"] == "FP32: measured (ncu); DRAM: measured (ncu) (GeForce RTX 2080 Ti)"
    # Without a GPU in the database the log's ceilings still make a roofline.
    row = one(tables([kernel(1e9, 1e8, 1e6, peak_flops_fp32=11.366e12, peak_dram_bytes_per_s=637.3e9)],
                     gpu_model=None))
    assert row["ridge_ai"] == pytest.approx(11.366e12 / 637.3e9)


def test_datasheet_peaks_scale_to_the_clock_ncu_locked():
    row = one(tables([kernel(1e9, 1e8, 1e6, sm_clock_hz=1312e6)]))
    assert row["peak_flops_per_s"] == pytest.approx(15.7e12 * 1312 / 1530)
    assert row["peak_dram_bytes_per_s"] == 900e9
    assert "datasheet at 1312 MHz" in row["peak_source"]


def test_tensor_work_is_judged_against_the_tensor_peak_of_its_input_type():
    tf32 = {"flops_fp32": 1e6, "flops_tensor": 1e12, "dram_bytes": 1e9, "duration_ns": 1e8,
            "flops_complete": True, "tensor_active": True, "name": "sm80_xmma_gemm_tf32f32_tf32f32_f32_nn"}
    row = one(tables([tf32], gpu_model="A100 SXM4 40GB"))
    assert row["precision"] == "tensor" and row["peak_flops_per_s"] == 156e12
    fp16 = {**tf32, "name": "ampere_h16816gemm_256x128_ldg8_stages_64x3_nn"}
    assert one(tables([fp16], gpu_model="A100 SXM4 40GB"))["peak_flops_per_s"] == 312e12


def test_incomplete_counts_get_no_bound_class():
    k = kernel(1e6, 1e9, 1e6, flops_complete=False, tensor_active=True, name="Ampere_hmma_tf32_kernel")
    row = one(tables([k], gpu_model="A100 SXM4 40GB"))
    assert row["precision"] == "tensor" and row["bound"] is None
    assert "incomplete" in row["note"]


def test_run_rows_partition_kernels_by_dominant_precision():
    fp64 = {"flops_fp64": 4e9, "flops_fp32": 1e3, "dram_bytes": 1e9, "duration_ns": 1e6, "flops_complete": True}
    t = tables([kernel(1e9, 1e9, 2e6), kernel(3e9, 1e9, 2e6), fp64])
    out = roofline.run_roofline(derive(t, DB))
    assert out["precision"].to_list() == ["fp32", "fp64"]
    fp32 = out.row(0, named=True)
    assert fp32["flops"] == 4e9 and fp32["dram_bytes"] == 2e9 and fp32["time_ns"] == 4e6
    assert fp32["achieved_flops_per_s"] == pytest.approx(1e12)
    assert out.row(1, named=True)["peak_flops_per_s"] == 7.8e12      # V100 FP64


def test_trace_time_of_the_same_launches_is_preferred_to_ncu_time():
    t = tables([kernel(1e9, 1e9, 5e6, short_name="gemm"), kernel(1e9, 1e9, 5e6, short_name="relu")],
               extra_files={"trace.csv": "nsys"})
    trace = [{"run": "r", "source_file": "trace.csv", "launch_id": i, "source_line": i, "kind": "launch", "count": 1,
              "name": n, "short_name": n, "duration_ns": d}
             for i, (n, d) in enumerate([("memset_k", 1.0), ("gemm", 1e6), ("relu", 1e6), ("tail", 9.0)], start=1)]
    t["kernels"] = pl.concat([t["kernels"], schema.conform("kernels", pl.DataFrame(trace))])
    out = roofline.run_roofline(derive(t, DB)).row(0, named=True)
    assert out["time_ns"] == 2e6
    assert out["time_source"] == "nsys trace (matched 2 of 2 launches)"


def test_ceilings_of_a_gpu():
    found = {c.label: c for c in roofline.ceilings(DB.match("A100-SXM4-40GB"))}
    assert found["FP32"].value == 19.5e12 and found["FP32"].kind == "compute"
    assert found["Tensor TF32"].value == 156e12
    assert found["DRAM"].value == 1555e9 and found["DRAM"].level == "dram"
    assert "L2" not in found                         # no datasheet L2 bandwidth
    measured = {c.label: c for c in roofline.ceilings(DB.match("A100-SXM4-40GB"),
                                                      {"fp32": 1e13, "l2": 4e12, "sm_clock_hz": 705e6})}
    assert measured["FP32"].value == 1e13 and measured["FP32"].source == "measured (ncu)"
    assert measured["L2"].value == 4e12 and measured["L2"].level == "l2"
    assert measured["FP64"].value == pytest.approx(9.7e12 / 2)     # datasheet at half the boost clock


@pytest.mark.parametrize("names, kind", [
    (["ampere_fp16_s16816gemm_fp16_64x64_ldg8_f2f_stages_64x5_tn"], "tensor_fp16"),     # FP16 in, FP32 accumulate
    (["sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize64x64x32_stage4_warpsize2x2x1_g1_"
      "tensor16x8x16_kernel", "ampere_fp16_s16816gemm_fp16_64x64_ldg8_f2f_stages_64x5_tn"], "tensor_fp16"),
    (["cutlass_tensorop_s16816gemm_f16_256x128_32x3_nn_align8"], "tensor_fp16"),
    (["cutlass_tensorop_s1688gemm_f16_256x128_32x2_nn_align8"], "tensor_fp16"),         # Turing's FP16 shape
    (["turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn"], "tensor_fp16"),
    (["ampere_bf16_s16816gemm_bf16_64x64_ldg8_f2f_stages_64x5_tn"], "tensor_bf16"),
    (["ampere_s1688gemm_128x128_ldg8_stages_32x3_nn"], "tensor_tf32"),
    (["void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_32x6_tn_align4>()"], "tensor_tf32"),
    (["sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16"], "tensor_tf32"),
])
def test_the_tensor_peak_follows_the_input_type_the_kernel_name_gives(names, kind):
    """m16n8k16 ("s16816") is FP16/BF16's MMA shape, never TF32's (m16n8k8): sample_logs' A100
    resnet18 (AMP, FP16 GEMMs with FP32 accumulate) was judged by the TF32 peak, 156 TFLOP/s, half
    the FP16 tensor peak its kernels ran against, and its 2.1x over the V100 read as above the
    peak ratio."""
    assert roofline._tensor_kind(names) == kind
    tf32 = pl.DataFrame({"name": names}).select(roofline.tf32_by_name())["name"].any()
    assert tf32 == (kind == "tensor_tf32")
