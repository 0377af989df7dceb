"""Texts that said the wrong thing (issue 33, item 7), each on the logs that showed it: a GPU
trace without device properties called a CPU trace, an unknown precision called a missing peak,
monitoring-only runs paired as a workload named "run", a reason cut to fit its column, and "no
workload ran on two GPUs" beside a baseline section that compares two."""

from __future__ import annotations

import polars as pl

import roofreport
from roofreport import terminal
from roofreport.report.context import Table
from roofreport.report.naming import RunNames
from roofreport.report.sections.comparison import GPU_EMPTY, comparison_section
from roofreport.report.sections.findings import conclusion
from roofreport.report.sections.steps import steps_section
from tests.conftest import SAMPLE_LOGS, corpus_path


def _peak_cells(folder: str, **settings) -> list[str]:
    """The "Peak used" cells of the training steps' MFU table of a corpus Kineto folder."""
    analysis = roofreport.analyze(corpus_path("kineto", folder), **settings)
    section = steps_section(analysis, RunNames(analysis.tables["runs"]))
    mfu = next(block for block in section.blocks if isinstance(block, Table))
    column = [c.label for c in mfu.columns].index("Peak used")
    return [row[column].text for row in mfu.rows]


def test_a_gpu_trace_without_device_properties_is_no_cpu_trace():
    # HTA's sampled ranks: kernels on the GPU, but no deviceProperties to name it
    cells = _peak_cells("hta-trace_filter", model_flops=1e12)
    assert cells == ["– (the trace names no GPU: no peak; name it with --gpu)"] * 2
    named = _peak_cells("hta-trace_filter", model_flops=1e12, gpu="A100")   # naming it gives the peak
    assert all(cell.startswith("Tensor TF32 dense, A100-SXM4-40GB") for cell in named)


def test_model_flops_on_an_a100_say_the_precision_is_unknown_not_the_peak():
    # the alexnet trace names its A100, but records no input types: the precision is the gap
    cells = _peak_cells("hta-critical_path_alexnet", model_flops=1e12)
    assert cells == ["– (the steps' precision is unknown: the trace has no input types, and the peak depends on it)"]
    assert "no known" not in cells[0]


def test_monitoring_only_runs_are_no_workload_to_compare_across_gpus():
    # nvidia-smi dmon logs of one homework on a Quadro RTX 8000 and a V100: no kernel, no work
    analysis = roofreport.analyze(corpus_path("smi", "dmon"))
    monitored = analysis.tables["runs"].filter(pl.col("experiment") == "adityamwagh_hpml-hw_hw5_part_a")
    assert monitored.height == 2 and monitored["gpu_label"].n_unique() == 2
    assert analysis.pivot.height == 0 and analysis.speedups.height == 0
    assert conclusion(analysis) == []
    assert comparison_section(analysis).empty == GPU_EMPTY
    # the same rule keeps a run that has kernels: it holds a workload
    from roofreport.analysis.workloads import holds_workload
    assert not holds_workload({"tool": "dcgm+nvidia-smi+tegrastats"})
    assert holds_workload({"tool": "nsys+nvidia-smi", "kernel_launches": 3})
    assert holds_workload({"tool": "rocm", "kernel_launches": 12}) and not holds_workload({"tool": "rocm"})


def test_a_reason_is_wrapped_never_cut():
    comparison = roofreport.compare(SAMPLE_LOGS / "v100", SAMPLE_LOGS / "a100")
    reasons = comparison.unpaired["reason"].to_list()
    assert any(len(reason) > terminal.NAME_WIDTH for reason in reasons)
    printed = terminal.comparison(comparison.frames(top=5), "table")
    shown = printed[printed.index("Runs not compared"):].splitlines()
    column = shown[1].index("reason")            # the reason column's lines, read down
    text = " ".join(line[column:].strip() for line in shown[3:])
    for reason in reasons:
        assert reason in text                   # "… no run of B has its workload": every word
    assert max(len(line[column:]) for line in shown) <= terminal.NAME_WIDTH      # wrapped
    assert len(shown[3:]) > len(reasons)


def test_no_workload_on_two_gpus_is_not_said_where_the_baseline_compares_two():
    against = roofreport.analyze(SAMPLE_LOGS / "a100" / "resnet18", baseline=SAMPLE_LOGS / "v100" / "resnet18")
    empty = comparison_section(against).empty
    assert empty == ("No workload ran on two GPUs within these logs; against the baseline, the runs on "
                     "V100-SXM2-16GB and A100-SXM4-40GB are compared (Against the baseline).")
    alone = roofreport.analyze(SAMPLE_LOGS / "a100" / "resnet18")
    assert comparison_section(alone).empty == GPU_EMPTY
