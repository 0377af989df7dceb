"""Page-1 sentences a TA found wrong by a rule of the field (issue 31, item 3 of stop 38's
reading), each on the folder that showed it and on a frame that gives every branch."""

from __future__ import annotations

import polars as pl
import pytest

import roofreport
from roofreport.report.sections.findings import cut_short_findings, findings
from tests.conftest import corpus_path


@pytest.fixture(scope="module")
def pranshu():
    """pranshu777's K80/P40 nvprof logs: `flop_count_dp` alone, most runs stopped by nvprof's timeout."""
    return roofreport.analyze(roofreport.read(corpus_path("course", "pranshu777-imagenet")))


@pytest.mark.corpus
def test_runs_that_counted_fp64_flops_only_say_so_and_point_to_no_bullet_that_is_not_there(pranshu):
    """It read "their FLOP counts are incomplete, so the true points lie higher … (see below)", and no
    bullet below said why: the bullet below is about tensor-core work, which these logs do not miss."""
    text = [p.text for p in findings(pranshu, pranshu.files)]
    (said,) = [p for p in text if p.startswith("No bound class for")]
    assert said.endswith(": only FP64 FLOPs were counted; FP32 work was not measured."), said
    assert "(see below)" not in said and not any("tensor-core work" in p for p in text)


@pytest.mark.corpus
def test_runs_cut_short_whose_logs_count_no_iterations_are_said_not_compared_once(pranshu):
    """It read "They are compared per iteration where their logs count iterations (0 of 23 do), and
    not at all otherwise"."""
    text = [p.text for p in findings(pranshu, pranshu.files)]
    (said,) = [p for p in text if "cut short before the end" in p]
    assert said.startswith("23 of 24 runs were cut short before the end")
    assert said.endswith("their totals cover only the part that ran. Their logs count no iterations, so they are "
                         "not compared."), said


def _runs(iterations: list[int | None]) -> pl.DataFrame:
    return pl.DataFrame({"run": [f"r{i}" for i in range(len(iterations)) ] + ["whole"],
                         "cut_short": [True] * len(iterations) + [False],
                         "cut_short_reason": ["nvprof: Execution timeout [out.1 line 3]"] * len(iterations) + [None],
                         "iterations": iterations + [10]}, schema_overrides={"iterations": pl.Int64})


@pytest.mark.parametrize("iterations, ends", [
    ([None], "its totals cover only the part that ran, and its logs count no iterations, so it is not compared."),
    ([5], "its totals cover only the part that ran, so it is compared with other runs per iteration only."),
    ([None, None], "Their logs count no iterations, so they are not compared."),
    ([5, None], "They are compared per iteration where their logs count iterations (1 of 2 do), and not at all "
                "otherwise."),
    ([5, 6], "They are compared per iteration (their logs count iterations)."),
])
def test_a_cut_short_sentence_never_says_compared_and_not_compared_at_once(iterations, ends):
    """The sample's page 1 read "so it is compared with other runs per iteration only, and its logs
    do not count iterations: it is not compared"."""
    (said,) = cut_short_findings(_runs(iterations))
    assert said.text.endswith(ends), said.text
    assert "nvprof: Execution timeout" in said.text and "[out.1 line 3]" not in said.text


def test_every_run_left_without_a_class_is_said_with_the_models_reason():
    """A run with FLOPs and no class said nothing on page 1 unless its FLOPs were incomplete: a run
    on an unidentified GPU (no ridge point) or without timed kernels vanished from the bound bullets."""
    from roofreport.report.sections.findings import bound_findings

    runs = pl.DataFrame({"run": ["a", "b", "c", "d"], "label": ["a · ?", "b · K80", "c · K80", "d · V100"],
                         "gpu_label": [None, "K80", "K80", "V100"], "bound": [None, None, None, "compute"],
                         "bound_note": ["no GPU identified, so no ridge point", "no counted kernel has a time, so "
                                        "where the run's time sits is not known (intensity 1.4× the ridge point)",
                                        "no counted kernel has a time, so where the run's time sits is not known "
                                        "(intensity 0.2× the ridge point)", "90% of the counted time in compute-side "
                                        "kernels"],
                         "flops": [1e9, 1e9, 1e9, 1e9], "flops_complete": [True, True, None, True],
                         "bound_coverage": [None, None, None, 1.0], "compute_time_share": [None, None, None, 0.9],
                         "kernel_time_ns": [1e6] * 4, "arithmetic_intensity": [1.0, 25.0, 3.0, 40.0],
                         "ridge_ai": [None, 18.2, 18.2, 17.4], "pct_of_roof": [None, None, None, 60.0]})
    text = [p.text for p in bound_findings(runs)]
    assert "No bound class for a · ?: no GPU identified, so no ridge point." in text
    assert ("No bound class for b · K80: no counted kernel has a time, so where the run's time sits is not known "
            "(intensity 1.4× the ridge point).") in text
    assert any(t.startswith("No bound class for c · K80: no counted kernel has a time") for t in text)
    assert any(t.startswith("On the V100, 1 run is compute-bound (d · V100)") for t in text)
    assert len(text) == 4


def test_the_sample_pair_judges_each_run_at_its_own_precision():
    """sample_logs' A100/V100 pair read "2 of 2 speedups exceed the A100-SXM4-40GB's peak ratios over
    the V100-SXM2-16GB (1.2× FP32 compute …)": resnet18 (AMP: FP16 GEMMs with FP32 accumulate,
    `ampere_fp16_s16816gemm_fp16`) was judged by the A100's TF32 peak (156 TFLOP/s) and named FP32.
    At its FP16 tensor peak (312 against the V100's 125 TFLOP/s: 2.5×) its 2.1× is within; only
    vgg11's 4.0× (TF32 tensor cores against FP32) exceeds."""
    from tests.conftest import SAMPLE_LOGS

    analysis = roofreport.analyze(roofreport.read([SAMPLE_LOGS / "a100", SAMPLE_LOGS / "v100"]))
    runs = {row["label"]: row for row in analysis.runs.iter_rows(named=True)}
    assert runs["resnet18 · A100-SXM4-40GB · bs 64"]["peak_flops_per_s"] == 312e12
    assert runs["resnet18 · V100-SXM2-16GB · bs 64"]["peak_flops_per_s"] == 125e12
    text = [p.text for p in findings(analysis, analysis.files)]
    (pair,) = [p for p in text if p.startswith("The A100-SXM4-40GB is faster than the V100-SXM2-16GB")]
    assert ("1 of 2 speedups exceeds the A100-SXM4-40GB's peak ratios over the V100-SXM2-16GB (1.2× to 2.5× compute "
            "at each run's precision, 1.7× DRAM bandwidth; up to 4.0×): likely the A100-SXM4-40GB's tensor cores") in pair
    assert "FP32 compute" not in pair and "-bound" not in pair


def test_a_run_classed_by_kernel_name_says_so_and_a_thin_one_says_what_its_kernels_cover_only_when_more():
    """model/bound.py's classing by kernel name on page 1: the share the counters cover, what the
    kernels they name take, and the side's share of that (memory here, with 10 % of the named time
    on both sides of the ridge: 0.65 + 0.25 + 0.10); a run under the floor says what its kernels
    cover only when that differs from what its launches cover."""
    from roofreport.report.sections.findings import bound_findings

    runs = pl.DataFrame({"run": ["a", "b", "c"], "label": ["a · T4", "b · T4", "c · T4"], "gpu_label": ["T4"] * 3,
                         "bound": ["memory", None, None], "bound_note": ["classed by kernel name: …", "too little …",
                                                                          "too little …"],
                         "flops": [1e9] * 3, "flops_complete": [True] * 3, "kernel_time_ns": [1e6] * 3,
                         "counted_kernels": [3, 2, 2], "kernel_launches": [40, 30, 30],
                         "bound_coverage": [0.08, 0.2, 0.3], "bound_coverage_by_name": [0.81, 0.2, 0.3],
                         "compute_time_share": [0.3, 1.0, 1.0], "compute_time_share_by_name": [0.25, 1.0, 1.0],
                         "memory_time_share_by_name": [0.65, 0.0, 0.0], "arithmetic_intensity": [3.0, 40.0, 40.0],
                         "ridge_ai": [25.0] * 3, "pct_of_roof": [40.0, 50.0, 50.0]})
    text = [p.text for p in bound_findings(runs)]
    # the intensity and % of roof are the counted window's (the counted kernels'), not the run's
    assert text[0] == ("On the T4, 1 run is memory-bound (a · T4): its counted kernels' arithmetic intensity 3.00 "
                       "FLOP/B against a ridge point of 25.0 FLOP/B; they reach 40.0 % of the roof at that intensity; "
                       "classed by kernel name: "
                       "the counters cover 8% of its kernel time, and the kernels they name take 81% of it, 65% of "
                       "that in memory-side kernels.")
    assert text[1] == ("No bound class for b · T4 and c · T4: the counters cover only 20% to 30% of their kernel time, "
                       "too little to tell where most of it sits.")
    more = bound_findings(runs.with_columns(pl.Series("bound_coverage_by_name", [0.81, 0.2, 0.45])))
    assert more[1].text.endswith("20% to 30% of their kernel time, and the kernels they name 20% to 45%, too little "
                                 "to tell where most of it sits.")
