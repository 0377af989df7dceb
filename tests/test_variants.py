"""The folder's own question on one GPU (issue 31, item 11): runs that differ in one build or
code variant get page 1's answer to a GPU pair: which is faster, by how much, and why.

tests/data/gtx1080_micro: 40 nvprof runs on one GTX 1080, a conv2d sweep (kernel size 3 and 5,
stride 1 and 2, seven sizes) and a GPP-style kernel built with and without FMA (six sizes).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import roofreport
from roofreport.analysis import variants
from roofreport.report.sections.findings import findings

MICRO = Path(__file__).parent / "data" / "gtx1080_micro"


@pytest.fixture(scope="module")
def micro():
    return roofreport.analyze(roofreport.read(MICRO))


def test_kernel_size_stride_and_the_fma_build_are_compared_pair_by_pair(micro):
    rows = {row["variant"]: row for row in micro.variants.iter_rows(named=True)}
    assert set(rows) == {"kernel size", "stride", "program"}
    runs = micro.tables["runs"]
    # stride: each stride-2 run against the stride-1 run of the same kernel size and size
    stride = rows["stride"]
    assert (stride["faster"], stride["slower"], stride["pairs"]) == ("stride 2", "stride 1", 14)
    assert stride["matched_on"] == "kernel size and size"
    times = {r["run"]: r["kernel_time_ns"] for r in runs.iter_rows(named=True)}
    ratios = [times[f"conv2d/k{k}_s1_n{n}"] / times[f"conv2d/k{k}_s2_n{n}"]
              for k in (3, 5) for n in (64, 128, 256, 512, 1024, 2048, 4096)]
    assert stride["speedup_min"] == pytest.approx(min(ratios)) and stride["speedup_max"] == pytest.approx(max(ratios))
    # why: stride 1 computes four times the outputs (the counters' FLOPs)
    assert stride["flops_ratio"] == pytest.approx(4.0, rel=0.01)
    assert rows["kernel size"]["faster"] == "kernel size 3" and rows["kernel size"]["flops_ratio"] > 2
    # the FMA build against the no-FMA build of the same size: six pairs, the same time in these logs
    fma = rows["program"]
    assert fma["subject"] == "gpp" and {fma["faster"], fma["slower"]} == {"gpp_fma.x", "gpp_nofma.x"}
    assert fma["pairs"] == 6 and fma["speedup"] == pytest.approx(1.0)


def test_page_one_answers_the_folders_own_question(micro):
    page = [p.text for p in findings(micro, micro.files)]
    assert not micro.experiment_conclusions.height       # one GPU: no GPU pair
    stride = next(t for t in page if "stride 2 is faster than stride 1" in t)
    assert "14 pairs matched on kernel size and size" in stride and "stride 1 does 4.0× the FLOPs" in stride
    assert any("kernel size 3 is faster than kernel size 5 for conv2d" in t for t in page)
    assert any("gpp_fma.x and gpp_nofma.x take the same time for gpp" in t for t in page)


def test_a_parameter_of_many_values_is_a_sweep_not_a_variant(micro):
    assert "size" not in micro.variants["variant"].to_list()


def test_runs_on_two_gpus_are_no_variant_of_each_other():
    runs = pl.DataFrame([{"run": f"r{i}", "gpu_label": gpu, "program": "a.x", "command": "./a.x 64",
                          "params": '{"stride": %d}' % stride, "kernel_time_ns": 1e6 * stride,
                          "time_per_iteration_ns": None, "cut_short": False, "flops": None, "dram_bytes": None,
                          "pct_of_roof": None, "iterations": None}
                         for i, (gpu, stride) in enumerate([("A100", 1), ("V100", 2)])])
    assert not variants.variant_comparisons(runs).height


def test_the_json_summary_says_what_page_one_says_of_the_variants(micro):
    from roofreport.report.assemble import assemble
    from roofreport.report.summary_json import summary

    report = assemble(micro)
    got = summary(micro, report)
    stride = next(v for v in got["variants"] if v["variant"] == "stride")
    assert (stride["faster"], stride["pairs"]) == ("stride 2", 14)
    assert any("stride 2 is faster than stride 1" in f["text"] for f in got["findings"])


def _programs(times_ms: dict[str, float], sizes=(1, 5)) -> pl.DataFrame:
    """One run per program and size on one GPU, the same arguments: the programs differ in one word."""
    return pl.DataFrame([{"run": f"{program}-{size}", "gpu_label": "Quadro RTX 8000", "program": program,
                          "command": f"./{program} {size}", "params": "{}", "kernel_time_ns": 1e6 * ms * size,
                          "time_per_iteration_ns": None, "cut_short": False, "flops": None, "dram_bytes": None,
                          "pct_of_roof": None, "iterations": None}
                         for program, ms in times_ms.items() for size in sizes])


def test_three_programs_are_ranked_in_one_sentence_not_three_pairs():
    """adityamwagh's q3 gave four bullets "q3_2c.o is faster than …", each ending "the logs count no
    FLOPs or bytes to tell why": one finding said four times. Three or more values of one variant:
    the fastest, and each other's time against it, once."""
    from roofreport.report.sections.findings import variant_findings

    rows = variants.variant_comparisons(_programs({"vec_a.x": 8.0, "vec_b.x": 2.0, "vec_c.x": 1.0}))
    assert rows.height == 3
    fastest = rows.filter(pl.col("fastest"))
    assert sorted(fastest["slower"].to_list()) == ["vec_a.x", "vec_b.x"] and set(fastest["faster"]) == {"vec_c.x"}
    (said,) = [p.text for p in variant_findings(rows)]
    assert said == ("On the Quadro RTX 8000, vec_c.x is the fastest of 3 programs for vec, on kernel time of the "
                    "whole run (2 pairs each, matched on parameters and arguments); the others take longer: "
                    "vec_b.x 2.0× its time and vec_a.x 8.0×. The logs count no FLOPs or bytes to tell why.")
    two = variants.variant_comparisons(_programs({"vec_a.x": 8.0, "vec_c.x": 1.0}))
    assert not two["fastest"].any()
    assert variant_findings(two)[0].text.startswith("On the Quadro RTX 8000, vec_c.x is faster than vec_a.x for vec 8.0×")


@pytest.mark.corpus
def test_adityamwagh_q3_programs_are_ranked_once():
    from tests.conftest import corpus_path

    analysis = roofreport.analyze(roofreport.read(corpus_path("course", "adityamwagh-hpml-hw")))
    text = [p.text for p in findings(analysis, analysis.files)]
    said = [p for p in text if "q3_2c.o" in p and "faster" in p or "fastest" in p]
    assert len(said) == 1 and said[0].startswith("On the Quadro RTX 8000, q3_2c.o is the fastest of 6 programs for q3_o")
    rows = analysis.variants.filter(pl.col("fastest"))
    assert rows.height == 5 and set(rows["faster"]) == {"q3_2c.o"}
    for row in rows.iter_rows(named=True):       # every other program, with its ratio, in the one sentence
        assert f"{row['slower']} {row['speedup']:.0f}×" in said[0], row
    assert sum(p.count("to tell why") for p in text) == 1
