"""Speedups of jobs on several GPUs (issue 31, item 5) and on thin evidence (item 8).

A kernel time summed over 4 GPUs is no time per iteration of the job: a speedup compares the
elapsed time of a batch where the logs print it, else each sum per GPU (saying so), else it is
a GPU-time ratio, never "faster". pramitmallick's backprop experiment ran the K80 jobs on 4
GPUs (DataParallel, the job scripts ask for 4) and the P40 jobs on one.
"""

from __future__ import annotations

import polars as pl
import pytest

import roofreport
from roofreport.analysis import speedup
from roofreport.report.sections.findings import findings
from tests.conftest import corpus_path


@pytest.fixture(scope="module")
def pramit():
    return roofreport.analyze(roofreport.read(corpus_path("course", "pramitmallick-examples")))


@pytest.mark.corpus
def test_a_4_gpu_dataparallel_job_against_a_1_gpu_job_compares_per_gpu(pramit):
    backprop = pramit.speedups.filter((pl.col("experiment") == "backprop") & pl.col("comparable"))
    assert backprop.height == 15
    for row in backprop.iter_rows(named=True):
        assert {row["faster_gpus"], row["slower_gpus"]} == {4, 1}
        assert row["basis"] == f"{speedup.PER_ITERATION} {speedup.PER_GPU}" and row["measure"] == speedup.SPEEDUP
        k80 = row["faster_time_ns"] if row["faster"] == "K80" else row["slower_time_ns"]
        cell = pramit.pivot.filter((pl.col("config_key") == row["config_key"]) & (pl.col("gpu") == "K80")).row(0, named=True)
        assert k80 == pytest.approx(cell["time_per_iteration_ns"] / 4)       # the K80's sum over its 4 GPUs, per GPU
    page = " ".join(p.text for p in findings(pramit, pramit.files))
    bullets = [p.text for p in findings(pramit, pramit.files) if p.text.startswith("backprop:")]
    assert bullets and all("jobs on 4 GPUs" in b and "jobs on 1 GPU" in b for b in bullets)
    assert "divided by their number" in bullets[0] and page.count("divided by their number") == 1
    assert page.count("The K80 jobs ran on 4 GPUs") == 1          # each finding once
    # no 4-GPU-summed time is called slower: the old "summed over its 4 GPUs, the P40's is not"
    # comparison and its "different numbers of GPUs" cause are gone
    assert "The K80's time is summed over its 4 GPUs" not in page
    assert "summed over different numbers of GPUs" not in page
    # peaks compared job to job: 4 K80s against one P40
    assert "4 K80s" in " ".join(bullets) and "one P40" in " ".join(bullets)


@pytest.mark.corpus
def test_elapsed_batch_times_the_logs_print_are_the_basis_where_both_sides_print_them(pramit):
    cloud = pramit.speedups.filter((pl.col("experiment") == "expCloudML") & pl.col("comparable"))
    assert cloud.height and (cloud["basis"] == speedup.ELAPSED).all()
    runs = pramit.runs.select("run", "elapsed_per_iteration_ns")
    for row in cloud.iter_rows(named=True):
        fast = runs.filter(pl.col("run") == row["faster_run"])["elapsed_per_iteration_ns"][0]
        assert row["faster_time_ns"] == pytest.approx(fast)
    # one basis per model, experiment and pair of GPUs: "full" has configurations without
    # printed times on one side, so every one of them compares kernel time
    full = pramit.speedups.filter((pl.col("experiment") == "full") & pl.col("comparable"))
    for (_,), group in full.group_by(["model"]):
        assert group["basis"].n_unique() == 1


@pytest.mark.corpus
def test_a_speedup_on_a_handful_of_iterations_is_flagged(pramit):
    """vgg16 backprop on the P40: 4 iterations."""
    vgg = pramit.speedups.filter((pl.col("experiment") == "backprop") & (pl.col("model") == "vgg16")
                                 & pl.col("comparable"))
    assert vgg.height and vgg["thin"].is_not_null().all()
    assert all("4 iterations" in t for t in vgg["thin"].to_list())
    page = " ".join(p.text for p in findings(pramit, pramit.files))
    assert "rest on thin evidence" in page


def _cell(gpu, **values):
    base = {"model": "m", "experiment": None, "config": "bs 8", "config_key": "k", "gpu": gpu, "run": f"run-{gpu}",
            "runs": 1, "batch_size": 8, "iterations": 100, "time_per_iteration_ns": 1e6, "kernel_time_ns": 1e8,
            "timed_runs": 1, "complete_runs": 1, "cut_short": False, "elapsed_per_iteration_ns": None,
            "gpus": 1, "multi_gpu": False, "one_off_share": 0.0}
    return {**base, **values}


def _pairs(*cells):
    pivot = pl.DataFrame([{c: cell.get(c) for c in speedup.PIVOT_COLUMNS} for cell in cells],
                         schema=speedup.PIVOT_COLUMNS)
    return speedup.speedups(pivot).row(0, named=True)


def test_a_sum_over_several_gpus_of_unknown_count_is_a_gpu_time_ratio():
    pair = _pairs(_cell("A", time_per_iteration_ns=4e6, gpus=None, multi_gpu=True), _cell("B", time_per_iteration_ns=1e6))
    assert pair["measure"] == speedup.GPU_TIME_RATIO and pair["basis"] == speedup.PER_ITERATION


def test_known_gpu_counts_compare_per_gpu_and_equal_counts_as_they_are():
    pair = _pairs(_cell("A", time_per_iteration_ns=4e6, gpus=4, multi_gpu=True), _cell("B", time_per_iteration_ns=2e6))
    assert pair["faster"] == "A" and pair["speedup"] == pytest.approx(2.0) and pair["basis"].endswith(speedup.PER_GPU)
    same = _pairs(_cell("A", time_per_iteration_ns=4e6, gpus=4, multi_gpu=True),
                  _cell("B", time_per_iteration_ns=2e6, gpus=4, multi_gpu=True))
    assert same["faster"] == "B" and same["basis"] == speedup.PER_ITERATION


def test_printed_elapsed_times_come_first_and_an_autotuning_run_is_flagged():
    pair = _pairs(_cell("A", elapsed_per_iteration_ns=3e7, gpus=4, multi_gpu=True),
                  _cell("B", elapsed_per_iteration_ns=6e7))
    assert pair["basis"] == speedup.ELAPSED and pair["faster"] == "A" and pair["speedup"] == pytest.approx(2.0)
    tuned = _pairs(_cell("A", iterations=6, one_off_share=0.4), _cell("B", iterations=6))
    assert "6 iterations" in tuned["thin"] and "40 % of the A run's kernel time" in tuned["thin"]
