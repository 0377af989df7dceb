"""nsys files inside the course folders, read through the whole pipeline.

NYU Cloud & ML 2023 (proj1): the author summed the `Duration(nsec)` column of each
`tmp_nsys_gputrace.csv` into `nsys-final-metric-<model>.txt`; roofreport must reproduce that
number exactly and file each trace under the run of its folder, with the ncu log beside it."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.pipeline.ingest import ingest
from tests.conftest import corpus_path

RUNS = ["a100/vgg11", "a100/vgg13", "a100/vgg19", "v100/vgg11", "v100/vgg13", "v100/vgg19"]


@pytest.fixture(scope="module")
def proj1():
    root = corpus_path("course", "Anoushka21-Cloud-and-MachineLearning", "proj1")
    return root, ingest([root], jobs=1)


@pytest.mark.parametrize("run", RUNS)
def test_trace_time_equals_the_authors_runtime_exactly(proj1, run):
    root, data = proj1
    model = run.split("/")[1]
    text = (root / run / f"nsys-final-metric-{model}.txt").read_text().split()
    assert text[0] == "Runtime(nanosec)"
    activities = data["activities"].filter(pl.col("run") == run)
    assert activities["source_file"].str.ends_with("tmp_nsys_gputrace.csv").all()
    assert int(activities["duration_ns"].sum()) == int(text[1])


@pytest.mark.parametrize("run", RUNS)
def test_trace_and_ncu_log_form_one_run(proj1, run):
    _, data = proj1
    files = data["files"].filter(pl.col("run") == run)
    assert set(files["family"]) == {"ncu", "nsys"}
    assert files.filter(pl.col("family") == "nsys")["status"].to_list() == ["ok"]
    nsys_kernels = data["kernels"].filter((pl.col("run") == run) & (pl.col("kind") == "launch")
                                          & pl.col("source_file").str.ends_with(".csv"))
    assert nsys_kernels.height > 200 and nsys_kernels["duration_ns"].min() > 0


def test_runs_take_the_device_name_from_the_trace(proj1):
    _, data = proj1
    runs = data["runs"].sort("run")
    assert runs["run"].to_list() == RUNS
    assert runs["gpu"].to_list() == ["NVIDIA A100-SXM4-40GB"] * 3 + ["Tesla V100-SXM2-16GB"] * 3
    assert set(runs["tool"]) == {"ncu+nsys"}


def test_author_metric_files_are_not_logs(proj1):
    _, data = proj1
    metric = data["files"].filter(pl.col("path").str.contains("final-metric"))
    assert metric.height == 12 and set(metric["status"]) == {"skipped"} and metric["family"].null_count() == 12


def test_flame_power_project_traces():
    root = corpus_path("course", "PranavDani-Flame")
    data = ingest([root], jobs=1)
    act = data["activities"]
    per_file = dict(act.group_by("source_file").len().iter_rows())
    assert sorted(per_file.values()) == [2685, 12038]
    fluids = act.filter(pl.col("source_file").str.contains("fluidsGL"))
    assert fluids.filter(pl.col("kind") == "kernel").height == 11208
    assert fluids.filter(pl.col("name") == "[CUDA memcpy Host-to-Device]")["bytes"][0] == pytest.approx(2.097e6)
