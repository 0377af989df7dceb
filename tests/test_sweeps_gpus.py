"""A sweep is a curve over runs of one GPU, known or shown to be one (issue 31, item 7).

pramitmallick's expCloudML runs at batch size 16 name no GPU, and their kernels are all
Maxwell-class; the same elementwise kernels take 2× longer on average in two of them: two GPU
models behind one name. The learning rate changes no kernel: it gets no curve.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

import roofreport
from roofreport.analysis import sweeps
from roofreport.report.sections.findings import sweep_check_findings
from tests.conftest import corpus_path


@pytest.mark.corpus
def test_no_learning_rate_sweep_mixes_pramitmallicks_two_hidden_gpus():
    an = roofreport.analyze(roofreport.read(corpus_path("course", "pramitmallick-examples", "imagenet", "outputs")))
    checks = an.sweep_checks
    split = checks.filter((pl.col("param") == "learning_rate") & (pl.col("kind") == sweeps.MIXED).not_()
                          & pl.col("ratio").is_not_null())
    assert split.height and (split["ratio"] > 1.8).all() and (split["groups"] == 2).all()
    assert "kernelPointwiseApply" in split["example_kernel"][0]
    # the learning rate changes no kernel: no curve, in either group
    assert not an.time_sweeps.filter(pl.col("param") == "learning_rate").height
    assert (checks.filter(pl.col("param") == "learning_rate")["kind"] == sweeps.NO_CHANGE).any()
    # the batch-size sweep across those runs would mix the two: not drawn, said why
    mixed = checks.filter((pl.col("param") == "batch_size") & (pl.col("kind") == sweeps.MIXED))
    assert mixed.height == 1 and "Maxwell" in mixed["gpu"][0]
    assert not an.time_sweeps.filter((pl.col("param") == "batch_size") & (pl.col("gpu") == mixed["gpu"][0])).height
    # named GPUs keep their curves
    assert an.time_sweeps.filter((pl.col("param") == "batch_size") & (pl.col("gpu") == "P40")).height == 3
    text = " ".join(p.text for p in sweep_check_findings(checks))
    assert "likely two GPU models behind one name" in text and "changes no kernel" in text


def _runs(rows):
    return pl.DataFrame([{"run": r, "gpu_label": "GPU not named", "model": "net", "experiment": "exp",
                          "params": json.dumps(p), "kernel_time_ns": 1.0, "iterations": 100, "cut_short": False,
                          "batch_size": p.get("batch_size"), "time_per_iteration_ns": t}
                         for r, p, t in rows])


def _rows(run, scale, batch=16):
    out = []
    for name, base, category in (("void elementwise_add<float>(float*)", 100.0, "elementwise"),
                                 ("void elementwise_mul<float>(float*)", 50.0, "elementwise"),
                                 ("sgemm_128x64_nn", 400.0, "gemm")):
        per = base * batch / 16 * (scale if category == "elementwise" else 1.0)
        out.append({"run": run, "name": name, "short_name": name, "category": category, "count": 1000,
                    "time_ns": per * 1000})
    return out


def test_a_sweep_over_two_hidden_gpus_is_split_and_a_parameter_that_changes_no_kernel_has_no_curve():
    runs = _runs([("a", {"batch_size": 16, "learning_rate": 0.1}, 1e6), ("b", {"batch_size": 16, "learning_rate": 0.01}, 2e6),
                  ("c", {"batch_size": 16, "learning_rate": 0.001}, 1e6), ("d", {"batch_size": 16, "learning_rate": 0.5}, 2e6)])
    rows = pl.DataFrame(_rows("a", 1) + _rows("b", 2.1) + _rows("c", 1.05) + _rows("d", 2.0))
    groups, found = sweeps.hidden_gpus(runs, rows)
    assert groups["a"] == groups["c"] != groups["b"] == groups["d"]
    assert found[0]["ratio"] == pytest.approx(2.1, rel=0.05)
    checks, _, dropped = sweeps.sweep_checks(runs, rows)
    assert set(checks["kind"].to_list()) == {sweeps.SPLIT, sweeps.NO_CHANGE}
    assert not sweeps.time_sweeps(runs, rows).height         # the learning rate changes no kernel
    # within noise (5 %): one GPU, one series (still no curve: the learning rate changes no kernel)
    same = pl.DataFrame(_rows("a", 1) + _rows("b", 1.05) + _rows("c", 1.0) + _rows("d", 0.98))
    assert sweeps.hidden_gpus(runs, same) == ({}, [])


def test_a_batch_size_sweep_of_one_gpu_keeps_its_curve():
    runs = _runs([("a", {"batch_size": 16, "learning_rate": 0.1}, 1e6), ("b", {"batch_size": 32, "learning_rate": 0.1}, 2e6),
                  ("c", {"batch_size": 64, "learning_rate": 0.1}, 4e6)])
    rows = pl.DataFrame(_rows("a", 1, 16) + _rows("b", 1, 32) + _rows("c", 1, 64))
    got = sweeps.time_sweeps(runs, rows)
    assert got.height == 3 and set(got["param"].to_list()) == {"batch_size"}


def test_a_throughput_chart_says_what_it_divides_by():
    """Issue 31, item 5: samples per second divide the batch size by GPU time summed over a
    run's GPUs, not by the job's elapsed time: the chart says so."""
    from roofreport.report.context import Chart
    from roofreport.report.sections.comparison import time_sweep_blocks

    runs = _runs([("a", {"batch_size": 16, "learning_rate": 0.1}, 1e6), ("b", {"batch_size": 32, "learning_rate": 0.1}, 2e6)])
    rows = pl.DataFrame(_rows("a", 1, 16) + _rows("b", 1, 32))
    charts = [b for b in time_sweep_blocks(sweeps.time_sweeps(runs, rows)) if isinstance(b, Chart)]
    assert charts and all(sweeps.THROUGHPUT_BASIS in c.caption for c in charts)
    assert "summed over all of a run's GPUs" in sweeps.THROUGHPUT_BASIS
