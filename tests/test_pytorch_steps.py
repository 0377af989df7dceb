"""Training steps of PyTorch traces: FLOPs from shapes against FlopCounterMode (the oracle
traces of tests/data/kineto_oracles, made by make_pytorch_oracles.py), against an analytic
count of ResNet-18 (the corpus's H100 trace), the time split of each step against a sweep of
the events written here independently, MFU against the GPU's dense peak, outliers, and the
model FLOPs given beside a trace or on the command line."""

from __future__ import annotations

import gzip
import json
import re
from functools import cache
from itertools import pairwise
from pathlib import Path

import polars as pl
import pytest

import roofreport
from roofreport import Limits, gpu
from roofreport.analysis import steps as step_analysis
from roofreport.families.common import limits
from roofreport.families.pytorch import counter, flops
from roofreport.families.pytorch.kineto import parse_kineto
from roofreport.pipeline.sniff import sniff
from roofreport.tables import schema
from tests.conftest import corpus_path

ORACLES = Path(__file__).resolve().parent / "data" / "kineto_oracles"
COUNTS = json.loads((ORACLES / "counts.json").read_text())["flop_counter_total_per_step"]
ORACLE_TRACES = sorted(ORACLES.rglob("*.pt.trace.json.gz"))


@cache
def _steps(path: Path) -> pl.DataFrame:
    result = parse_kineto(path, "kineto trace")
    assert result.error is None, result.error
    return result.tables["steps"]


# -- FLOPs against FlopCounterMode -------------------------------------------------------------

def test_the_oracles_are_there():
    assert {p.parent.name + "/" + p.name.split(".")[0] for p in ORACLE_TRACES} == {
        "gpt/eager", "gpt/compiled", "gpt-checkpoint/eager", "cnn/eager", "cnn/compiled"}


@pytest.mark.parametrize("path", ORACLE_TRACES, ids=lambda p: f"{p.parent.name}/{p.name.split('.')[0]}")
def test_flops_per_step_match_flop_counter_mode_within_one_percent(path):
    """The counter runs eagerly; a compiled step does the same matrix math."""
    steps = _steps(path)
    assert steps["name"].to_list() == ["ProfilerStep#2", "ProfilerStep#3"]
    expected = COUNTS[path.parent.name]
    for value in steps["flops"].to_list():
        assert abs(value / expected - 1) < 0.01, (value, expected)
    assert steps["flops_missing_ops"].to_list() == [0, 0]
    assert steps["precision"].to_list() == ["bf16", "bf16"]
    assert steps["compiled"].to_list() == [path.name.startswith("compiled")] * 2


def test_recomputed_forward_work_is_hardware_flops_not_model_flops():
    """Activation checkpointing: the counter counts the recomputation (HFU's numerator); the
    model FLOPs are those of the same model without it."""
    steps = _steps(ORACLES / "gpt-checkpoint" / "eager.pt.trace.json.gz")
    assert steps["recompute_flops"].to_list() == pytest.approx([COUNTS["gpt-checkpoint"] - COUNTS["gpt"]] * 2)
    model = (steps["flops"] - steps["recompute_flops"]).to_list()
    assert model == pytest.approx([COUNTS["gpt"]] * 2, rel=0.01)
    assert _steps(ORACLES / "gpt" / "eager.pt.trace.json.gz")["recompute_flops"].to_list() == [0.0, 0.0]


def test_causal_attention_is_said_and_counted_in_full():
    steps = _steps(ORACLES / "gpt" / "eager.pt.trace.json.gz")
    assert steps["causal_attention"].to_list() == [True, True]
    # 2 layers x (forward 4·b·h·s²·d + backward 10·b·h·s²·d), b=4, h=4, s=32, d=16
    assert steps["flops_attention"].to_list() == [2 * 14 * 4 * 4 * 32 * 32 * 16] * 2


def test_resnet18_on_an_h100_counts_its_convolutions_exactly():
    """The corpus's H100 trace (two iterations, batch 32, 224x224): the convolutions of
    ResNet-18 counted here from its architecture, forward, weight gradients, and input gradients
    of every layer but the first (its input needs none)."""
    steps = _steps(corpus_path("kineto", "h100-resnet18", "kineto_resnet18_b32.json"))
    layers = [(112, 64, 3, 7)] + [(56, 64, 64, 3)] * 4
    for size, width in ((28, 128), (14, 256), (7, 512)):
        layers += [(size, width, width // 2, 3), (size, width, width, 3), (size, width, width, 3),
                   (size, width, width, 3), (size, width, width // 2, 1)]
    macs = [size * size * out_ch * in_ch * kernel * kernel for size, out_ch, in_ch, kernel in layers]
    forward = 2 * 32 * sum(macs)
    per_iteration = 2 * forward + 2 * 32 * (sum(macs) - macs[0])
    row = steps.row(0, named=True)
    assert row["name"] == "whole trace" and row["step"] is None
    assert row["flops_conv"] == 2 * per_iteration
    assert row["flops_matmul"] == 2 * 3 * (2 * 32 * 512 * 1000)   # the fc layer: forward and two gradients
    assert row["precision"] == "fp32"


def test_resnet18_convolution_kernel_time_agrees_with_its_key_averages_table():
    """The kernels the convolution calls launched, against the printed key_averages table of
    the same run (Self CUDA of aten::cudnn_convolution and aten::convolution_backward)."""
    steps = _steps(corpus_path("kineto", "h100-resnet18", "kineto_resnet18_b32.json"))
    table = corpus_path("kineto", "h100-resnet18", "key_averages_resnet18_b32.txt").read_text()
    self_cuda = 0.0
    for name in ("aten::cudnn_convolution", "aten::convolution_backward"):
        cells = re.search(rf"^\s*{re.escape(name)}\s+(.*)$", table, re.MULTILINE).group(1).split()
        value, unit = re.fullmatch(r"([\d.]+)(ms|us)", cells[5]).groups()
        self_cuda += float(value) * (1e6 if unit == "ms" else 1e3)
    assert steps["time_conv_ns"][0] == pytest.approx(self_cuda, rel=0.02)


# -- the time split ----------------------------------------------------------------------------

_COMMUNICATION = re.compile(r"(?i)nccl")


def _sweep(path: Path) -> list[dict]:
    """Per ProfilerStep: compute / communication / memory / idle and the overlap, by a sweep
    over every GPU event's edges (written without the reader's code)."""
    with gzip.open(path) as handle:
        events = json.load(handle)["traceEvents"]
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    steps = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                    and re.fullmatch(r"ProfilerStep#\d+", e["name"])), key=lambda e: e["ts"])
    out = []
    for step in steps:
        low, high = step["ts"] * 1000, (step["ts"] + step["dur"]) * 1000
        edges, spans = {low, high}, []
        for event in gpu:
            start, end = max(event["ts"] * 1000, low), min((event["ts"] + event["dur"]) * 1000, high)
            if end > start:
                role = "memory" if event["cat"] != "kernel" else \
                    "communication" if _COMMUNICATION.search(event["name"]) else "compute"
                spans.append((start, end, role))
                edges |= {start, end}
        edges = sorted(edges)
        totals = dict.fromkeys(("compute", "communication", "memory", "idle", "overlap"), 0.0)
        for left, right in pairwise(edges):
            active = {role for start, end, role in spans if start <= left and end >= right}
            part = next((r for r in ("compute", "communication", "memory") if r in active), "idle")
            totals[part] += right - left
            if {"compute", "communication"} <= active:
                totals["overlap"] += right - left
        out.append(totals)
    return out


def test_each_step_splits_into_compute_communication_memory_and_idle_as_a_sweep_does():
    """HTA's trace of a two-rank job with NCCL all-reduce, five steps."""
    path = corpus_path("kineto", "hta-df_index_resolver", "df_index_resolver.json.gz")
    steps = _steps(path)
    assert steps["name"].to_list() == [f"ProfilerStep#{n}" for n in range(2, 7)]
    for row, expected in zip(steps.iter_rows(named=True), _sweep(path)):
        for part in ("compute", "communication", "memory", "idle"):
            assert row[f"{part}_ns"] == pytest.approx(expected[part], abs=2)
        assert row["comm_overlap_ns"] == pytest.approx(expected["overlap"], abs=2)
        parts = sum(row[f"{part}_ns"] for part in ("compute", "communication", "memory", "idle"))
        assert parts == pytest.approx(row["duration_ns"], abs=1)
        causes = sum(row[f"idle_{cause}_ns"] for cause in ("dataloader", "sync", "launch", "other"))
        assert causes == pytest.approx(row["idle_ns"], abs=1)
        assert row["communication_ns"] > 0 and row["rank"] == 1


def test_overlapping_communication_is_measured(tmp_path):
    """A collective half hidden under a compute kernel on another stream."""
    def kernel(name, ts, dur, stream, correlation):
        return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
                "args": {"device": 0, "stream": stream, "correlation": correlation}}
    def call(ts, correlation, name="cudaLaunchKernel"):
        return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 1,
                "args": {"correlation": correlation}}
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
              call(1, 1), call(2, 2), call(60, 3), call(85, 4, "cudaStreamSynchronize"),
              kernel("volta_sgemm_128x64_nn", 10, 40, 7, 1),
              kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 30, 40, 14, 2),
              kernel("elementwise", 80, 10, 7, 3)]
    path = tmp_path / "overlap.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    row = _steps(path).row(0, named=True)
    # ns: compute [10,50) and [80,90); communication alone [50,70), overlapped [30,50); idle the rest
    assert (row["compute_ns"], row["communication_ns"], row["memory_ns"], row["idle_ns"]) == (50e3, 20e3, 0.0, 30e3)
    assert row["comm_overlap_ns"] == 20e3
    # idle [0,10): its kernel's launch ended at 2 us, after the GPU was idle: "launch";
    # [70,80): launched at 60 us, before the GPU went idle at 70 (queued behind the collective on
    # its stream): "other"; [90,100): nothing follows, no call open: "other"
    assert (row["idle_launch_ns"], row["idle_other_ns"], row["idle_sync_ns"]) == (10e3, 20e3, 0.0)
    assert (row["kernel_launches"], row["kernels"]) == (3, 3)


def test_idle_time_waits_on_the_cpu_launching(tmp_path):
    def kernel(ts, correlation):
        return {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts, "dur": 5,
                "args": {"device": 0, "stream": 7, "correlation": correlation}}
    def call(ts, correlation, name="cudaLaunchKernel", dur=2):
        return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
                "args": {"correlation": correlation}}
    loader = {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
              "pid": 1, "tid": 1, "ts": 40, "dur": 20}
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
              call(0, 1), kernel(2, 1),                    # busy [2,7)
              call(20, 2), kernel(23, 2),                  # idle [7,23): the launch came at 20: launch
              call(29, 9, "cudaDeviceSynchronize", 2),     # the GPU drains at 28; sync until 31
              call(33, 3), kernel(35, 3),                  # idle [28,35): sync
              loader, call(61, 4), kernel(63, 4),          # idle [40,63): the data loader
              ]
    path = tmp_path / "idle.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    row = _steps(path).row(0, named=True)
    assert row["idle_launch_ns"] == 2e3 + 16e3     # [0,2) and [7,23): each kernel's launch ended after
    assert row["idle_other_ns"] == 32e3            # [68,100): nothing follows
    assert row["idle_sync_ns"] == 7e3
    assert row["idle_dataloader_ns"] == 23e3


# -- MFU, peaks, outliers ----------------------------------------------------------------------

def _tables(steps: pl.DataFrame, gpu_model: str | None) -> dict:
    runs = schema.conform("runs", pl.DataFrame({"run": ["r"], "gpu_model": [gpu_model]}))
    return {"steps": schema.conform("steps", steps), "runs": runs}


def _step_rows(durations, precision="bf16", flops_per_step=1e15, recompute=0.0) -> pl.DataFrame:
    return pl.DataFrame({"run": "r", "source_file": "/logs/rank0.pt.trace.json", "source_line": range(1, len(durations) + 1),
                         "step": range(len(durations)), "name": [f"ProfilerStep#{n}" for n in range(len(durations))],
                         "duration_ns": [float(d) for d in durations], "flops": flops_per_step,
                         "recompute_flops": recompute, "precision": precision, "flops_source": "shapes"})


def test_mfu_uses_the_dense_peak_of_the_steps_precision_never_the_sparse_one():
    db = gpu.load_database()
    h100 = db.match("NVIDIA H100 80GB HBM3")
    assert h100.bf16_tensor == pytest.approx(989.4e12)   # the datasheet's 1979 is with sparsity
    steps = step_analysis.with_step_metrics(_tables(_step_rows([1e9], recompute=2e14), h100.key), db)
    row = steps.row(0, named=True)
    assert row["peak_precision"] == "bf16" and row["peak_flops_per_s"] == h100.bf16_tensor
    assert "dense" in row["peak_source"] and "BF16" in row["peak_source"]
    assert row["model_flops"] == 8e14 and row["mfu_pct"] == pytest.approx(100 * 8e14 / 989.4e12)
    assert row["hfu_pct"] == pytest.approx(100 * 1e15 / 989.4e12)
    fp32 = step_analysis.with_step_metrics(_tables(_step_rows([1e9], precision="fp32"), h100.key), db)
    assert fp32["peak_flops_per_s"][0] == h100.fp32     # no TF32 kernels named: the FP32 peak


def test_fp32_steps_on_tf32_kernels_take_the_tf32_peak():
    data = roofreport.read(corpus_path("kineto", "h100-resnet18", "kineto_resnet18_b32.json"))
    row = data.steps.row(0, named=True)
    spec = gpu.load_database().get(data.runs["gpu_model"][0])
    assert (row["precision"], row["peak_precision"]) == ("fp32", "tf32")
    assert row["peak_flops_per_s"] == spec.tf32_tensor
    assert row["mfu_pct"] == pytest.approx(100 * row["model_flops"] / (row["duration_ns"] / 1e9) / spec.tf32_tensor)


def test_a_step_far_from_the_median_is_an_outlier_left_out_of_the_medians():
    db = gpu.load_database()
    key = db.match("NVIDIA A100-SXM4-40GB").key
    steps = step_analysis.with_step_metrics(_tables(_step_rows([30e6, 10e6, 10.5e6, 9.8e6]), key), db)
    assert steps["outlier"].to_list() == [True, False, False, False]
    assert steps["outlier_reason"][0] == "2.93x the median step time"
    summary = step_analysis.step_summary(steps)
    assert summary["steps"].to_list() == [3] and summary["outliers"].to_list() == [1]
    assert summary["step_ns"].to_list() == [10e6]
    few = step_analysis.with_step_metrics(_tables(_step_rows([30e6, 10e6]), key), db)
    assert few["outlier"].to_list() == [False, False]   # two steps have no median to differ from


def test_the_model_flops_come_from_a_counter_file_beside_the_trace_or_the_command_line():
    folder = ORACLES / "gpt"
    assert sniff(folder / "flop_counter.json").spec.name == "pytorch-flop-counter"
    data = roofreport.read(folder, jobs=1)
    assert set(data.steps["model_flops_source"]) == {"flop counter flop_counter.json"}
    assert data.steps["model_flops"].to_list() == [COUNTS["gpt"]] * 4
    given = roofreport.analyze(data, model_flops=1e9)
    assert set(given.steps["model_flops_source"]) == {"--model-flops"}
    assert given.steps["model_flops"].to_list() == [1e9] * 4
    assert (step_analysis.MODEL_FLOPS_METRIC, step_analysis.FLOP_COUNTER_SECTION) == (counter.PER_STEP, counter.SECTION)


def test_a_counter_file_with_numbers_past_what_python_reads_is_refused_or_skipped(tmp_path):
    from roofreport.families.common.textio import Document

    path = tmp_path / "flop_counter.json"
    path.write_text('{"Global": {\n  "aten.mm": ' + "9" * 5000 + "}}")
    result = counter.parse_counter(Document.open(path), "flop counter")
    assert "a number of 5,000 digits" in result.error.message
    assert (result.error.line, result.error.column) == (2, 14)
    # a count no float holds (10^400) is no count; the others are read
    path.write_text('{"Global": {"aten.mm": 1' + "0" * 400 + ', "aten.bmm": 10}}')
    metrics = counter.parse_counter(Document.open(path), "flop counter").tables["metrics"]
    assert metrics.select("metric", "value").rows() == [("aten.bmm", 10.0), (counter.PER_STEP, 10.0)]


def test_eager_and_compiled_runs_are_compared():
    analysis = roofreport.analyze(roofreport.read(ORACLES, jobs=1))
    pairs = analysis.step_comparisons.select("run_a", "run_b", "differs").rows()
    assert sorted(pairs) == [("cnn/eager.pt.trace.json.gz", "cnn/compiled.pt.trace.json.gz", "compile"),
                             ("gpt/eager.pt.trace.json.gz", "gpt/compiled.pt.trace.json.gz", "compile")]
    summary = analysis.step_summary
    assert summary.filter(pl.col("run") == "gpt-checkpoint/eager.pt.trace.json.gz")["checkpointed"].to_list() == [True]


# -- formulas ----------------------------------------------------------------------------------

def _call(name, dims, concrete=None, types=None, **args):
    return flops.op_flops(name, {"Input Dims": dims, "Concrete Inputs": concrete or [],
                                 "Input type": types or [], **args})


def test_matrix_product_formulas():
    assert _call("aten::mm", [[8, 4], [4, 3]])[0] == 2 * 8 * 4 * 3
    assert _call("aten::addmm", [[3], [8, 4], [4, 3], [], []])[0] == 2 * 8 * 4 * 3
    assert _call("aten::bmm", [[5, 8, 4], [5, 4, 3]])[0] == 5 * 2 * 8 * 4 * 3
    assert _call("aten::linear", [[2, 7, 4], [3, 4], [3]])[0] == 2 * 14 * 4 * 3
    assert _call("aten::matmul", [[2, 1, 8, 4], [6, 4, 3]])[0] == 2 * 12 * 8 * 4 * 3   # broadcast batch
    assert _call("aten::matmul", [[8, 4], [4]])[0] == 0.0                              # mv: not counted
    assert _call("aten::mm", [[8, 4], [4, 3]], types=["c10::BFloat16"])[2] == "bf16"
    assert _call("aten::mm", [[8, 4], [4, 3]], flops=123)[0:4:3] == (123.0, flops.TRACE)


def test_convolution_formulas_need_the_concrete_inputs():
    dims = [[2, 3, 32, 32], [16, 3, 3, 3], [16]]
    # stride 2, padding 1: 16x16 outputs
    assert _call("aten::conv2d", dims, ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"])[0] == 2 * 2 * 16 * 16 * 16 * 3 * 9
    assert _call("aten::conv2d", dims, ["", "", "", "[1, 1]", "'same'", "[1, 1]", "1"])[0] == 2 * 2 * 32 * 32 * 16 * 3 * 9
    # dilation 2, no padding: 28x28
    assert _call("aten::convolution", dims, ["", "", "", "[1, 1]", "[0, 0]", "[2, 2]", "False", "[0, 0]", "1"])[0] \
        == 2 * 2 * 28 * 28 * 16 * 3 * 9
    assert _call("aten::conv2d", dims)[0] is None            # no stride or padding: not counted
    grouped = [[2, 8, 10, 10], [8, 2, 3, 3], []]            # groups=4: the weight holds C_in/groups
    assert _call("aten::conv2d", grouped, ["", "", "", "1", "1", "1", "4"])[0] == 2 * 2 * 100 * 8 * 2 * 9
    transposed = [[2, 4, 8, 8], [4, 6, 2, 2], []]           # the input's spatial size counts
    assert _call("aten::convolution", transposed, ["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "True"])[0] \
        == 2 * 2 * 64 * 4 * 6 * 4


def test_convolution_backward_counts_the_gradients_its_mask_asks_for():
    dims = [[2, 16, 30, 30], [2, 3, 32, 32], [16, 3, 3, 3]]
    forward = 2 * 2 * 30 * 30 * 16 * 3 * 9
    mask = ["", "", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"]
    assert _call("aten::convolution_backward", dims, mask + ["[True, True, False]"])[0] == 2 * forward
    assert _call("aten::convolution_backward", dims, mask + ["[False, True, True]"])[0] == forward


def test_attention_formulas():
    query = [2, 4, 128, 64]
    assert _call("aten::_scaled_dot_product_flash_attention", [query] * 3)[0] == 4 * 2 * 4 * 128 * 128 * 64
    assert _call("aten::_scaled_dot_product_efficient_attention_backward", [query] * 4)[0] == 10 * 2 * 4 * 128 * 128 * 64
    gqa = _call("aten::_scaled_dot_product_flash_attention", [query, [2, 1, 128, 64], [2, 1, 128, 64]])
    assert gqa[0] == 4 * 2 * 4 * 128 * 128 * 64             # the query's heads count
    flash = _call("aten::_flash_attention_forward", [[2, 128, 4, 64]] * 3)   # [b, s, h, d]
    assert flash[0] == 4 * 2 * 4 * 128 * 128 * 64
    causal = _call("aten::_scaled_dot_product_flash_attention_for_cpu", [query] * 3, ["", "", "", "0.", "True"])
    assert causal[4] is True


def test_a_trace_with_flops_args_uses_them_and_says_so(tmp_path):
    def op(name, ts, dur, **args):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
              op("aten::linear", 1, 50, **{"Input Dims": [[8, 4], [3, 4], [3]], "Input type": ["float"] * 3}),
              op("aten::addmm", 2, 40, flops=192, **{"Input Dims": [[3], [8, 4], [4, 3]], "Input type": ["float"] * 3}),
              op("aten::mm", 60, 10, **{"Input Dims": [[8, 4], [4, 3]], "Input type": ["float"] * 2})]
    path = tmp_path / "flops.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    result = parse_kineto(path, "kineto trace")
    row = result.tables["steps"].row(0, named=True)
    assert row["flops"] == 192 + 192 and row["flops_source"] == "shapes and trace" and row["flops_ops"] == 2
    operators = result.tables["regions"].filter(pl.col("kind") == "operator")
    assert dict(operators.select("path", "flops").rows()) == {
        "aten::linear": None, "aten::linear/aten::addmm": 192.0, "aten::mm": 192.0}


# -- reading in pieces -------------------------------------------------------------------------

def test_small_pieces_read_the_same_tables(monkeypatch):
    """Pieces of 4 KiB put slice ends and piece ends everywhere (inside strings, numbers, keys)."""
    path = corpus_path("kineto", "hta-trace_filter", "sampled_rank-0.json.gz")
    whole = parse_kineto(path, "kineto trace")
    from roofreport.families.pytorch import decode, source
    monkeypatch.setattr(source, "PIECE", 4096)
    monkeypatch.setattr(decode, "PIECE", 4096)
    monkeypatch.setattr(decode, "FLUSH_ROWS", 1000)
    pieces = parse_kineto(path, "kineto trace")
    assert pieces.error is None
    for name, table in whole.tables.items():
        assert pieces.tables[name].equals(table), name


def test_an_event_boundary_inside_a_name_is_no_boundary(tmp_path):
    events = [{"ph": "X", "cat": "kernel", "name": 'weird},{"name', "pid": 0, "tid": 7, "ts": i, "dur": 1,
               "args": {"device": 0}} for i in range(20)]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"traceEvents": events}))
    result = parse_kineto(path, "kineto trace")
    assert result.error is None and result.tables["kernels"]["name"].to_list() == ['weird},{"name'] * 20


def test_a_gzip_bomb_ends_in_a_clear_error_at_the_cap(tmp_path):
    """Blanks inside traceEvents that unpack far past the cap: refused with both sizes, never
    inflated whole (the cap, the limits' own, is lowered here so the test stays small and fast)."""
    body = b'{"traceEvents": [' + b" " * (64 << 20) + b"]}"
    path = tmp_path / "bomb.pt.trace.json.gz"
    path.write_bytes(gzip.compress(body, compresslevel=9))
    assert path.stat().st_size < 200_000
    with limits.applied(Limits(unpacked_bytes=1 << 20)):
        result = parse_kineto(path, "kineto trace")
    assert result.error is not None
    assert f"this gzip file ({limits.shown(path.stat().st_size)}) unpacks to more than 1.0 MiB" in result.error.message


def test_a_trace_of_kernels_alone_is_one_window_of_gpu_time(tmp_path):
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10 * i, "dur": 5,
               "args": {"device": 0}} for i in range(5)]
    path = tmp_path / "kernels.json"
    path.write_text(json.dumps({"traceEvents": events}))
    row = _steps(path).row(0, named=True)
    assert (row["name"], row["duration_ns"], row["compute_ns"], row["idle_ns"]) == ("whole trace", 45e3, 25e3, 20e3)
    assert row["flops"] is None and row["flops_ops"] is None
