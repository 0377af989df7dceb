"""A training log that prints several `key_averages().table()` outputs of one profile (issue
#34): "Top 30 by cuda_time_total", "Top 10 by self_cpu_time_total", "Top 15 by
self_cuda_time_total", among the training's own prints and a Python warning. Every row of every
table is kept, each table as its own view; one view (the largest sorted by a device time) gives
the run's totals, and a `pytorch.views` warning says which.

The log is composed here from the rows of the corpus's real printout of one profile
(`kineto/h100-resnet18/key_averages_resnet18_b32.txt`, torch 2.x, sorted by CUDA total), each
view re-sorted and cut as `table(sort_by=..., row_limit=...)` does.
"""

from __future__ import annotations

import re

import polars as pl
import pytest

import roofreport
from tests.conftest import corpus_path

_UNITS = {"us": 1e3, "ms": 1e6, "s": 1e9}
# column index in a row's cells (after the name): torch's `_build_table` order
SELF_CPU, SELF_CUDA, CUDA_TOTAL = 1, 5, 7


def _ns(cell: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", cell).groups()
    return float(number) * _UNITS[unit]


def _printout():
    lines = corpus_path("kineto", "h100-resnet18", "key_averages_resnet18_b32.txt").read_text().splitlines()
    rule, header = lines[0], lines[1]
    rows = [line for line in lines[3:] if not line.startswith("-") and "time total" not in line]
    totals = [line for line in lines if "time total" in line]
    return rule, header, rows, totals


def _cells(row: str) -> list[str]:
    return row[57:].split()


def _table(rule: str, header: str, rows: list[str], totals: list[str]) -> list[str]:
    return [rule, header, rule, *rows, rule, *totals]


def _log(tmp_path):
    rule, header, rows, totals = _printout()
    by_cpu = sorted(rows, key=lambda row: -_ns(_cells(row)[SELF_CPU]))
    by_self_cuda = sorted(rows, key=lambda row: -_ns(_cells(row)[SELF_CUDA]))
    views = {"cuda": rows[:30], "cpu": by_cpu[:10], "self_cuda": by_self_cuda[:15]}
    text = [
        "Epoch 1/2", "step 10/100  loss 2.3026  acc 0.102  (31.2 img/s)",
        "/opt/conda/lib/python3.10/site-packages/torch/autograd/profiler.py:217: UserWarning: "
        "CUDA Graphs will be profiled incorrectly, see the documentation", "  warnings.warn(",
        "step 20/100  loss 2.1187  acc 0.187  (912.4 img/s)",
        "=== Top 10 by self_cpu_time_total ===",
        *_table(rule, header, views["cpu"], totals),
        "", "step 30/100  loss 1.9034  acc 0.311  (915.0 img/s)",
        "=== Top 30 by cuda_time_total ===",
        *_table(rule, header, views["cuda"], totals),
        "", "=== Top 15 by self_cuda_time_total ===",
        *_table(rule, header, views["self_cuda"], totals),
        "Epoch 2/2", "step 10/100  loss 1.4410  acc 0.498  (917.9 img/s)", "done: 183.2 s",
    ]
    path = tmp_path / "train_resnet18.log"
    path.write_text("\n".join(text) + "\n")
    return path, views


@pytest.mark.corpus
def test_every_table_of_a_log_keeps_its_rows_as_a_view(tmp_path):
    path, views = _log(tmp_path)
    data = roofreport.read_file(str(path))
    (read,) = data.files
    assert read.status == "ok"
    kernels, regions = data.kernels, data.regions
    # every printed row is a kernel or a region: 10 + 30 + 15
    assert kernels.height + regions.height == sum(len(rows) for rows in views.values()) == 55
    assert len(set(kernels["source_line"].to_list() + regions["source_line"].to_list())) == 55   # each once
    # the totals come from the CUDA-sorted view of 30 rows (the largest sorted by device time)
    summary = kernels.filter(pl.col("kind") == "summary")
    cuda_view_devices = [row for row in views["cuda"] if _ns(_cells(row)[SELF_CPU]) == 0
                         and _ns(_cells(row)[SELF_CUDA]) > 0]
    assert summary.height == len(cuda_view_devices)
    assert summary["duration_ns"].sum() == pytest.approx(sum(_ns(_cells(row)[SELF_CUDA]) for row in cuda_view_devices))
    assert regions.filter(pl.col("kind") == "operator_self").height == 30 - len(cuda_view_devices)
    # the other views are kept, named, and never timed
    views_kept = kernels.filter(pl.col("kind") == "view")
    assert set(views_kept["region"]) <= {"key_averages 1: === Top 10 by self_cpu_time_total ===",
                                         "key_averages 3: === Top 15 by self_cuda_time_total ==="}
    assert set(regions.filter(pl.col("kind") == "operator_view")["path"].str.split("/").list.first()) == {
        "key_averages 1: === Top 10 by self_cpu_time_total ===", "key_averages 3: === Top 15 by self_cuda_time_total ==="}
    (said,) = [w for w in read.warnings if w.code == "pytorch.views"]
    first_row = path.read_text().splitlines().index("=== Top 30 by cuda_time_total ===") + 3
    assert said.line == first_row and "sorted by CUDA total" in said.message and "30 rows" in said.message
    runs = roofreport.analyze(data).runs
    assert runs["kernel_time_ns"].to_list() == [pytest.approx(summary["duration_ns"].sum())]
