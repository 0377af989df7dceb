"""Every FLOP, byte, time, clock and ceiling rule of docs/methodology.md (a, b, c) pinned to a worked
example on a small hand-built metrics frame, as the parsers would hand it over."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.enrich import enrich_kernels
from roofreport.enrich.tensor import shape_flops
from roofreport.tables import schema

FILE = "log.txt"
SOL = "GPU Speed Of Light Throughput"


def frames(kernels: list[dict], metrics: list[tuple]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """kernels: dicts with launch_id, name (+ kind, count); metrics: (launch_id, metric, value
    [, stat [, section [, value_text]]])."""
    k = schema.conform("kernels", pl.DataFrame([
        {"run": "r", "source_file": FILE, "source_line": i, "kind": "launch", "count": 1, **row}
        for i, row in enumerate(kernels, start=1)]))
    names = {row["launch_id"]: row["name"] for row in kernels}
    m = []
    for i, t in enumerate(metrics):
        launch, metric, value, stat, section, text = (*t, None, None, None, None)[:6]
        m.append({"run": "r", "source_file": FILE, "source_line": 1000 + i, "launch_id": launch,
                  "kernel_name": names.get(launch), "metric": metric, "value": value, "stat": stat,
                  "section": section or "Command line profiler metrics", "value_text": text})
    return k, schema.conform("metrics", pl.DataFrame(m, infer_schema_length=None))


def one(kernels, metrics, family: str | None = None) -> dict:
    k, m = frames(kernels, metrics)
    out = enrich_kernels(k, m, families={FILE: family} if family else {})
    return out.row(0, named=True)


K = [{"launch_id": 1, "name": "my_kernel(float*)"}]
OP = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"


# -- a.1 CUDA-core FLOPs ---------------------------------------------------------------------

def test_fp64_is_dadd_plus_dmul_plus_two_dfma():
    row = one(K, [(1, OP.format("dadd"), 10.0), (1, OP.format("dmul"), 20.0), (1, OP.format("dfma"), 30.0)])
    assert row["flops_fp64"] == 10 + 20 + 2 * 30
    assert row["flops_fp32"] is None            # not logged: null, never 0


def test_fp32_and_fp16_with_either_prefix():
    sm = "sm__sass_thread_inst_executed_op_{}_pred_on.sum"
    row = one(K, [(1, sm.format("fadd"), 1.0), (1, sm.format("fmul"), 2.0), (1, sm.format("ffma"), 3.0),
                  (1, OP.format("hadd"), 4.0), (1, OP.format("hmul"), 0.0), (1, OP.format("hfma"), 5.0)])
    assert row["flops_fp32"] == 1 + 2 + 2 * 3
    assert row["flops_fp16"] == 4 + 0 + 2 * 5
    assert row["flops_complete"] is True and row["tensor_active"] is False


def test_a_missing_term_counts_as_zero_when_the_others_were_logged():
    row = one(K, [(1, OP.format("ffma"), 100.0)])
    assert row["flops_fp32"] == 200.0


def test_nvprof_flop_counts_are_already_fma_times_two_and_summary_rows_are_totals():
    kernels = [{"launch_id": 1, "name": "sgemm_kernel", "kind": "summary", "count": 5}]
    row = one(kernels, [(1, "flop_count_sp", 1000.0, "avg"), (1, "flop_count_sp", 10.0, "min"),
                        (1, "flop_count_dp", 7.0, "avg"), (1, "flop_count_hp", 0.0, "avg")])
    assert row["flops_fp32"] == 5 * 1000.0      # average per invocation x invocations
    assert row["flops_fp64"] == 35.0 and row["flops_fp16"] == 0.0


# -- a.2 tensor-core FLOPs -------------------------------------------------------------------

def test_volta_tensor_flops_are_512_per_tensor_instruction():
    kernels = [{"launch_id": 1, "name": "volta_h884gemm_64x64_ldg8_nn"}]
    row = one(kernels, [(1, OP.format("ffma"), 10.0), (1, "sm__inst_executed_pipe_tensor.sum", 1000.0)],
              family="volta")
    assert row["flops_tensor"] == 512 * 1000
    assert row["flops_complete"] is True and row["tensor_active"] is True


def test_the_512_rule_is_never_used_off_volta():
    # A100 CSV logs carry sm__inst_executed_pipe_tensor.sum too; x512 would be wrong there.
    kernels = [{"launch_id": 1, "name": "void xmma_new::gemm::kernel<Ampere_hmma_tf32_traits>()"}]
    row = one(kernels, [(1, OP.format("ffma"), 10.0), (1, "sm__inst_executed_pipe_tensor.sum", 1000.0)],
              family="ampere")
    assert row["flops_tensor"] is None
    assert row["flops_complete"] is False and row["tensor_active"] is True


def test_ampere_op_path_counters_are_summed_without_double_counting_sparsity():
    ops = "sm__ops_path_tensor_src_{}.sum"
    row = one(K, [(1, ops.format("fp16_dst_fp32"), 4096.0),
                  (1, ops.format("fp16_dst_fp32_sparsity_off"), 4096.0),   # child of the parent above
                  (1, ops.format("tf32_dst_fp32_sparsity_off"), 2048.0),   # child without a parent
                  (1, ops.format("tf32_dst_fp32_sparsity_on"), 1024.0),
                  (1, "sm__inst_executed_pipe_tensor.sum", 3.0)], family="ampere")
    assert row["flops_tensor"] == 4096 + 2048 + 1024
    assert row["flops_complete"] is True


def test_turing_ampere_instruction_times_the_mma_shape_named_in_the_kernel():
    kernels = [{"launch_id": 1, "name": "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_32x6_tn_align4>()"}]
    row = one(kernels, [(1, "sm__inst_executed_pipe_tensor_op_hmma.sum", 100.0)], family="ampere")
    assert row["flops_tensor"] == 100 * 2 * 16 * 8 * 8
    assert shape_flops("sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_tensor16x8x16_kernel") == 4096
    assert shape_flops("turing_h1688gemm_256x128_ldg8_nn") == 2048
    assert shape_flops("volta_sgemm_128x64_nt") is None       # not a tensor kernel
    assert shape_flops("kernel_884_and_1688") is None          # two shapes: ambiguous


def test_hopper_instruction_count_alone_is_insufficient():
    kernels = [{"launch_id": 1, "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_tensor16x8x16"}]
    row = one(kernels, [(1, OP.format("ffma"), 5.0), (1, "sm__inst_executed_pipe_tensor_op_gmma.sum", 100.0)],
              family="hopper")
    assert row["flops_tensor"] is None
    assert row["flops_complete"] is False


def test_hopper_hmma_op_path_reading_zero_with_instructions_is_unknown_not_zero():
    kernels = [{"launch_id": 1, "name": "sm90_gemm_wgmma"}]
    row = one(kernels, [(1, "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32.sum", 0.0),
                        (1, "sm__inst_executed_pipe_tensor_op_gmma.sum", 100.0)], family="hopper")
    assert row["flops_tensor"] is None and row["flops_complete"] is False


def test_zero_tensor_instructions_mean_zero_tensor_flops():
    row = one(K, [(1, OP.format("ffma"), 5.0), (1, "smsp__inst_executed_pipe_tensor.sum", 0.0)], family="ampere")
    assert row["flops_tensor"] == 0.0 and row["flops_complete"] is True and row["tensor_active"] is False


def test_tensor_kernel_names_flag_counts_without_tensor_metrics_as_incomplete():
    kernels = [{"launch_id": 1, "name": "void xmma_new::gemm::kernel<xmma_new::implicit_gemm::fprop::"
                                         "Kernel_traits<xmma_new::Ampere_hmma_tf32_traits<unsigned int>>>()"}]
    row = one(kernels, [(1, OP.format("ffma"), 25690112.0)], family="ampere")
    assert row["tensor_active"] is True and row["flops_complete"] is False


def test_nvprof_tensor_utilization_levels_mark_tensor_work_nvprof_cannot_count():
    kernels = [{"launch_id": 1, "name": "volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", "kind": "summary", "count": 2},
               {"launch_id": 2, "name": "sgemm_plain", "kind": "summary", "count": 2}]
    k, m = frames(kernels, [
        (1, "flop_count_sp", 10.0, "avg"), (1, "tensor_precision_fu_utilization", None, "max", None, "Low (1)"),
        (2, "flop_count_sp", 10.0, "avg"), (2, "tensor_precision_fu_utilization", None, "max", None, "Idle (0)")])
    out = enrich_kernels(k, m, families={FILE: "volta"}).sort("launch_id")
    assert out["tensor_active"].to_list() == [True, False]
    assert out["flops_complete"].to_list() == [False, True]
    assert out["flops_tensor"].to_list() == [None, None]


def test_no_flop_counters_leave_completeness_unknown():
    row = one(K, [(1, "dram__bytes.sum", 64.0)])
    assert row["flops_complete"] is None


# -- b. bytes --------------------------------------------------------------------------------

@pytest.mark.parametrize("metrics, expected", [
    ([("dram__sectors.sum", 10.0), ("dram__bytes.sum", 999.0)], 320.0),     # exact sectors win
    ([("dram__sectors_read.sum", 3.0), ("dram__sectors_write.sum", 2.0)], 160.0),
    ([("dram__bytes.sum", 999.0)], 999.0),
    ([("dram__bytes_read.sum", 100.0), ("dram__bytes_write.sum", 50.0)], 150.0),
    ([("dram__bytes_op_read.sum", 100.0), ("dram__bytes_op_write.sum", 1.0)], 101.0),
    ([("dram_read_transactions", 4.0), ("dram_write_transactions", 1.0)], 160.0),   # nvprof
    ([("dram_read_bytes", 64.0), ("dram_write_bytes", 32.0)], 96.0),
    ([("dram__sectors_read.sum", 3.0)], None),                                      # half a pair
])
def test_dram_bytes(metrics, expected):
    row = one(K, [(1, name, value) for name, value in metrics])
    assert row["dram_bytes"] == expected


@pytest.mark.parametrize("metrics, expected", [
    ([("lts__t_sectors.sum", 10.0), ("lts__t_bytes.sum", 1.0)], 320.0),
    ([("lts__t_bytes.sum", 77.0)], 77.0),
    ([("lts__t_sectors_op_read.sum", 1.0), ("lts__t_sectors_op_write.sum", 2.0),
      ("lts__t_sectors_op_atom.sum", 3.0), ("lts__t_sectors_op_red.sum", 4.0)], 320.0),
    ([("l2_read_transactions", 2.0), ("l2_write_transactions", 1.0)], 96.0),
])
def test_l2_bytes(metrics, expected):
    assert one(K, [(1, n, v) for n, v in metrics])["l2_bytes"] == expected


def test_l1_bytes_and_keplers_transactions():
    assert one(K, [(1, "l1tex__t_sectors.sum", 2.0)])["l1_bytes"] == 64.0
    assert one(K, [(1, "l1tex__t_bytes.sum", 5.0)])["l1_bytes"] == 5.0
    nvprof = [(1, "gld_transactions", 3.0), (1, "gst_transactions", 1.0)]
    assert one(K, nvprof, family="pascal")["l1_bytes"] == 128.0
    # Kepler's gld/gst transactions are 32, 64 or 128 bytes: x32 would be wrong.
    assert one(K, nvprof, family="kepler")["l1_bytes"] is None


# -- c. time, clock and measured ceilings ----------------------------------------------------

def test_duration_sources():
    assert one(K, [(1, "gpu__time_duration.sum", 10720.0)])["duration_ns"] == 10720.0
    assert one(K, [(1, "Duration", 5000.0, None, SOL)])["duration_ns"] == 5000.0
    # A "Duration" row outside the Speed Of Light section is something else.
    assert one(K, [(1, "Duration", 5000.0, None, "Launch Statistics")])["duration_ns"] is None
    # NERSC: cycles / cycles per second.
    row = one(K, [(1, "sm__cycles_elapsed.avg", 1.3e6), (1, "sm__cycles_elapsed.avg.per_second", 1.3e9)])
    assert row["duration_ns"] == pytest.approx(1e6)


def test_measured_ceilings_rtx2080ti_raw_page_values():
    # Values of corpus/derived/ncu/rtx2080ti_sgemm_3136_64_64.raw_base.csv (volta_sgemm_32x128_nn).
    row = one(K, [
        (1, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", 4352.0),
        (1, "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained", 136.0),
        (1, "sm__cycles_elapsed.avg.per_second", 1305874122.04),
        (1, "dram__bytes.sum.peak_sustained", 96.0), (1, "dram__cycles_elapsed.avg.per_second", 6638805970.15),
        (1, "lts__t_bytes.sum.peak_sustained", 1408.0), (1, "lts__cycles_elapsed.avg.per_second", 1242444029.85),
        (1, "l1tex__t_bytes.sum.peak_sustained", 34816.0), (1, "l1tex__cycles_elapsed.avg.per_second", 1305874122.04),
    ])
    assert row["sm_clock_hz"] == pytest.approx(1.3059e9, rel=1e-4)
    assert row["peak_flops_fp32"] == pytest.approx(2 * 4352 * 1305874122.04)   # 11.37 TFLOP/s
    assert row["peak_flops_fp64"] == pytest.approx(2 * 136 * 1305874122.04)
    assert row["peak_dram_bytes_per_s"] == pytest.approx(96 * 6638805970.15)    # 637 GB/s
    assert row["peak_l2_bytes_per_s"] == pytest.approx(1408 * 1242444029.85)
    assert row["peak_l1_bytes_per_s"] == pytest.approx(34816 * 1305874122.04)


def test_sol_sm_frequency_is_the_clock_and_rates_are_not_multiplied_by_invocations():
    kernels = [{"launch_id": 1, "name": "k", "kind": "summary", "count": 14}]
    row = one(kernels, [(1, "SM Frequency", 1.5e9, "avg", SOL), (1, "Duration", 2000.0, "avg", SOL)])
    assert row["sm_clock_hz"] == 1.5e9
    assert row["duration_ns"] == 14 * 2000.0


def test_hfma2_mma_register_moves_on_the_tensor_pipe_are_not_tensor_work():
    # corpus/ncu/csv/a100_sgemm_roofline_metrics_print_fp.csv, kernel 2 (a CUDA-core sgemm):
    # pipe_tensor 67,161,292,800 warp instructions, hfma 32x that many thread instructions.
    row = one([{"launch_id": 1, "name": "void gemm_v1<float>(float *, float *, float *, int, int, int)"}],
              [(1, "smsp__inst_executed_pipe_tensor.sum", 67161292800.0), (1, OP.format("ffma"), 34359738368000.0),
               (1, OP.format("hfma"), 2149161369600.0), (1, OP.format("hadd"), 0.0), (1, OP.format("hmul"), 0.0)],
              family="ampere")
    assert row["tensor_active"] is False and row["flops_tensor"] == 0.0 and row["flops_complete"] is True
    assert row["flops_fp32"] == 2 * 34359738368000.0
    assert row["flops_fp16"] == 0.0          # the moves are not FP16 arithmetic
    # Tensor-pipe instructions beyond the moves are MMA work nobody measured: incomplete.
    row = one([{"launch_id": 1, "name": "my_wmma_kernel"}],
              [(1, "smsp__inst_executed_pipe_tensor.sum", 100.0), (1, OP.format("hfma"), 32 * 40.0),
               (1, OP.format("ffma"), 1.0)], family="ampere")
    assert row["tensor_active"] is True and row["flops_complete"] is False
    assert row["flops_fp16"] == 0.0


# -- the same rules on real logs -------------------------------------------------------------

def _ingest(*parts: str) -> pl.DataFrame:
    from roofreport.pipeline.ingest import ingest
    from tests.conftest import corpus_path
    return ingest([corpus_path(*parts)]).tables["kernels"]


def test_a100_pytorch_csv_with_the_generic_tensor_count_is_complete():
    # A100 (GA100) log with sm__inst_executed_pipe_tensor.sum and no op-path counters: every
    # tensor-pipe instruction there is an HFMA2.MMA move; the x512 Volta rule must not apply.
    kernels = _ingest("ncu", "csv", "a100_pytorch_gpt_roofline_metrics_kerneltime_rules.csv")
    assert kernels.height == 26
    assert kernels["flops_complete"].all() and not kernels["tensor_active"].any()
    assert kernels["flops_tensor"].to_list() == [0.0] * 26
    sgemm = kernels.filter(pl.col("short_name") == "ampere_sgemm_128x32_tn")
    assert sgemm["flops_fp32"][0] == 76087296.0


def test_rtx2080ti_raw_page_measured_ceilings():
    kernels = _ingest("derived", "ncu", "rtx2080ti_sgemm_3136_64_64.raw_base.csv")
    row = kernels.row(0, named=True)
    assert row["short_name"] == "volta_sgemm_32x128_nn" and row["duration_ns"] == 10720.0
    assert row["peak_flops_fp32"] == pytest.approx(2 * 4352 * 1305874122.04)
    assert row["peak_dram_bytes_per_s"] == pytest.approx(96 * 6638805970.15)
    assert row["peak_l1_bytes_per_s"] == pytest.approx(34816 * 1305874122.04)
    # The auto-scaled export of the same profile gives the same ceilings.
    scaled = _ingest("derived", "ncu", "rtx2080ti_sgemm_3136_64_64.raw.csv").row(0, named=True)
    assert scaled["peak_dram_bytes_per_s"] == pytest.approx(row["peak_dram_bytes_per_s"], rel=1e-5)


@pytest.mark.parametrize(("parts", "sm_mhz", "mem_mhz"), [
    # cycle/nsecond, and a summary page whose only SM clock is gpc__ (ncu's SOL "SM Frequency")
    (("derived", "ncu", "rtx2080ti_sgemm_3136_64_64.summary.txt"), 1306.374, 6638.806),
    # cycle/usecond: a colab T4 replayed at 550 MHz, below its 585 MHz base: kept as logged
    (("ncu", "text", "colab_t4_raytracer_warning_interleaved.txt"), 550.50, 4680.0),
    # Ghz (ncu 2025 on a GH200) and Mhz (a laptop RTX 3050 Ti)
    (("ncu", "text", "pytorch_silu_gh200_ncu2025.txt"), 1520.0, 2620.0),
    (("ncu", "text", "rtx3050ti_laptop_2mm_tensor_setfull.txt"), 733.17, 5490.0),
])
def test_logged_sm_and_memory_clocks_in_every_unit_ncu_prints(parts, sm_mhz, mem_mhz):
    row = _ingest(*parts).sort("launch_id").row(0, named=True)
    assert row["sm_clock_hz"] == pytest.approx(sm_mhz * 1e6, rel=1e-6)
    assert row["mem_clock_hz"] == pytest.approx(mem_mhz * 1e6, rel=1e-6)


def test_gpc_clock_comes_first_and_the_sm_peak_keeps_the_sm_clock():
    row = one(K, [(1, "gpc__cycles_elapsed.avg.per_second", 1.306374e9), (1, "sm__cycles_elapsed.avg.per_second", 1.3e9),
                  (1, "sm__" + OP.format("ffma")[6:] + ".peak_sustained", 64.0)])
    assert row["sm_clock_hz"] == 1.306374e9
    assert row["peak_flops_fp32"] == 2 * 64.0 * 1.3e9


# -- the counter table: first value per (kernel, counter), however launches are numbered ------

def _metrics(rows: list[tuple]) -> pl.DataFrame:
    """rows: (source_file, launch_id, metric, value)."""
    return pl.DataFrame(rows, schema={"source_file": pl.String, "launch_id": pl.Int64,
                                      "metric": pl.String, "value": pl.Float64}, orient="row") \
        .with_columns(stat=pl.lit(None, pl.String), section=pl.lit(SOL))


@pytest.mark.parametrize("launches", [(0, 1), (5, 2), (-3, 7), (None, 4), (0, 10**12)])
def test_counter_table_takes_each_counters_first_row_per_kernel(launches):
    """Launch ids 0..n (slots), negative, null or huge ids (kernels numbered by key) give the
    same table; a counter printed twice for one kernel counts with its first row."""
    from roofreport.enrich.counters import kernel_counters
    a, b = launches
    dram = "dram__bytes.sum"
    rows = [("x.txt", a, dram, 100.0), ("x.txt", b, dram, 200.0), ("x.txt", a, dram, 999.0),
            ("y.txt", a, dram, 300.0), ("x.txt", b, "gpu__time_duration.sum", 50.0),
            ("y.txt", a, "inst_executed", 1.0)]
    out = kernel_counters(_metrics(rows)).sort("source_file", "launch_id", nulls_last=True)
    got = {(f, l): (d, t) for f, l, d, t in out.select("source_file", "launch_id", "dram_bytes",
                                                      "duration_ns").iter_rows()}
    assert got == {("x.txt", a): (100.0, None), ("x.txt", b): (200.0, 50.0), ("y.txt", a): (300.0, None)}
