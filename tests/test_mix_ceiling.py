"""Issue 31 item 3: the ceiling a run's FP instruction mix allows, peak × (1 + f) / 2 for an FMA
share f of its FP instructions (Yang et al.'s hierarchical roofline; NERSC's GPP example), and
each run judged against it, by name.

The fixture is a GPP-style kernel on a GTX 1080 built with and without FMA, profiled as a Pascal
course run is: `nvprof --metrics flop_count_sp,flop_count_sp_add,flop_count_sp_mul,
flop_count_sp_fma,dram_read_transactions,dram_write_transactions` and `nvprof --print-gpu-trace`,
with the column widths of the corpus's nvprof/metrics/darknet19_v100_metrics_all_text.txt (whose
`flop_count_sp = add + mul + 2 × fma`) and the trace layout of tests/data/make_gtx1080_micro.py.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import polars as pl
import pytest

import roofreport
from roofreport.model import mix

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("make_gtx1080_micro", HERE / "data" / "make_gtx1080_micro.py")
layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layout)

KERNEL = "gpp_kernel(float2 const *, float2 const *, float*, int)"
PEAK = 8.87e12          # the GTX 1080's FP32 peak in the GPU table (2560 cores × 2 × 1733 MHz)
LAUNCHES = 10


HEAD = ("Invocations                               Metric Name                                               "
        "Metric Description         Min         Max         Avg")


def _line(name: str, description: str, value: float) -> str:
    """One metric row as darknet19_v100_metrics_all_text.txt prints it (min = max = avg)."""
    number = f"{int(value)}"
    return f"{LAUNCHES:>11}{name:>42}{description:>57}{number:>12}{number:>12}{number:>12}"


def _metrics(pid: int, command: str, add: float, mul: float, fma: float, nbytes: float) -> str:
    flops = add + mul + 2 * fma
    lines = [f"=={pid}== NVPROF is profiling process {pid}, command: {command}",
             f"=={pid}== Some kernel(s) will be replayed on device 0 in order to collect all events/metrics.",
             f"=={pid}== Profiling application: {command}",
             f"=={pid}== Profiling result:",
             f"=={pid}== Metric result:",
             HEAD,
             f'Device "{layout.DEVICE} (0)"',
             f"    Kernel: {KERNEL}",
             _line("flop_count_sp", "Floating Point Operations(Single Precision)", flops),
             _line("flop_count_sp_add", "Floating Point Operations(Single Precision Add)", add),
             _line("flop_count_sp_fma", "Floating Point Operations(Single Precision FMA)", fma),
             _line("flop_count_sp_mul", "Floating Point Operation(Single Precision Mul)", mul),
             _line("dram_read_transactions", "Device Memory Read Transactions",
                                 nbytes * 0.7 / 32),
             _line("dram_write_transactions", "Device Memory Write Transactions",
                                 nbytes * 0.3 / 32)]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, dict]:
    """Two builds of one kernel: 2.56e9 FLOP and 64 MB per launch (AI 40 FLOP/B, right of the
    ridge), 1 ms a launch; `nofma` does adds and multiplies only, `fma` mostly FMAs (60%)."""
    root = tmp_path_factory.mktemp("gpp_mix")
    per_launch_ns = 1e6
    builds = {"nofma": (1.6e9, 0.96e9, 0.0), "fma": (0.32e9, 0.32e9, 0.96e9)}   # add, mul, fma instructions
    for index, (build, (add, mul, fma)) in enumerate(builds.items()):
        run = root / "gpp" / build
        run.mkdir(parents=True)
        flops, nbytes = add + mul + 2 * fma, 64e6
        command = f"./gpp_{build}.x 8192"
        (run / "nvprof_metrics.log").write_text(_metrics(30000 + index, command, add, mul, fma, nbytes))
        (run / "nvprof_gpu_trace.log").write_text(
            layout._trace_log(30100 + index, command, KERNEL, per_launch_ns * LAUNCHES / 1000, LAUNCHES, 1.0))
        assert flops == pytest.approx(2.56e9)
    data = roofreport.read(root, gpu="GeForce GTX 1080")
    return {row["run"]: row for row in data.runs.iter_rows(named=True)}


def test_a_run_without_fma_is_judged_against_half_the_peak(runs):
    nofma = runs["gpp/nofma"]
    assert nofma["fma_share"] == 0.0
    assert nofma["ceiling"] == "FP32 without FMA (half the peak)"
    assert nofma["peak_flops_per_s"] == pytest.approx(PEAK, rel=0.01)
    assert nofma["ceiling_flops_per_s"] == pytest.approx(nofma["peak_flops_per_s"] / 2)
    # 2.56 TFLOP/s achieved: 29% of the FMA peak, but 58% of what adds and multiplies can reach
    assert nofma["achieved_flops_per_s"] == pytest.approx(2.56e12, rel=1e-3)
    assert nofma["pct_of_roof"] == pytest.approx(100 * 2.56e12 / (nofma["peak_flops_per_s"] / 2), rel=1e-3)
    assert nofma["ridge_ai"] == pytest.approx(nofma["ceiling_flops_per_s"] / nofma["peak_dram_bytes_per_s"])
    assert nofma["bound"] == "compute"


def test_a_run_with_some_fma_reaches_its_share_of_the_peak(runs):
    """0.96e9 FMA of 1.6e9 instructions: f = 60%, ceiling 80% of the peak."""
    fma = runs["gpp/fma"]
    assert fma["fma_share"] == pytest.approx(0.6)
    assert fma["ceiling"] == "FP32 at 60% FMA"
    assert fma["ceiling_flops_per_s"] == pytest.approx(fma["peak_flops_per_s"] * 0.8)


def test_fma_shares_from_ncu_counters_need_all_three_ops():
    """ncu's per-op instruction counters (smsp__ or sm__ spelling; a rate is the same share); a
    kernel that logged only some ops has no share."""
    op = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
    metrics = pl.DataFrame({
        "source_file": ["a.txt"] * 6 + ["b.txt"] * 2,
        "launch_id": [0, 0, 0, 1, 1, 1, 0, 0],
        "metric": [op.format("fadd"), op.format("fmul"), op.format("ffma"),
                   "sm__sass_thread_inst_executed_op_dadd_pred_on.sum", "sm__sass_thread_inst_executed_op_dmul_pred_on.sum",
                   "sm__sass_thread_inst_executed_op_dfma_pred_on.sum", op.format("fadd"), op.format("ffma")],
        "stat": [None] * 8, "value": [10.0, 30.0, 60.0, 5.0, 5.0, 0.0, 1.0, 1.0]})
    shares = {(f, i, p): s for f, i, p, s in mix.fma_shares(metrics.lazy()).iter_rows()}
    assert shares == {("a.txt", 0, "fp32"): 0.6, ("a.txt", 1, "fp64"): 0.0}


def test_yang_et_al_example_58_percent_fma_gives_5_3_of_6_7_tflops():
    assert 6.7 * mix.ceiling_factor(0.58) == pytest.approx(5.3, abs=0.01)
    assert mix.combined_share([2e9, 1e9], [1.0, 0.0]) == pytest.approx(0.5)   # 1e9 FMA + 1e9 add instructions


def test_the_chart_draws_the_no_fma_ceiling_the_run_was_judged_by(runs, tmp_path_factory):
    """The roofline of the two builds draws the FP32 peak and, under it, the half-peak line of the
    no-FMA build (the 60%-FMA build's 80% line too); the report's table names each run's ceiling."""
    root = next(iter(tmp_path_factory.getbasetemp().glob("gpp_mix*")))
    an = roofreport.analyze(roofreport.read(root, gpu="GeForce GTX 1080"))
    lines = {c.label: c.value for c in an.chart_ceilings["GeForce GTX 1080"] if c.kind == "compute"}
    assert lines["FP32 no FMA"] == pytest.approx(lines["FP32"] / 2)
    assert lines["FP32 60% FMA"] == pytest.approx(lines["FP32"] * 0.8)
