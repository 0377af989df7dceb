"""The NYU Cloud & ML 2023 ImageNet runs: roofreport reproduces the totals their author summed
with grep/awk (`ncu-final-metric-*.txt`), from the raw ncu logs beside them."""

from __future__ import annotations

import math
import re

import polars as pl
import pytest

from roofreport.pipeline.ingest import ingest
from tests.conftest import corpus_path

RUNS = ["a100/vgg11", "a100/vgg13", "a100/vgg19", "v100/vgg11", "v100/vgg13", "v100/vgg19"]


@pytest.fixture(scope="module")
def proj1():
    root = corpus_path("course", "Anoushka21-Cloud-and-MachineLearning", "proj1")
    return root, ingest([root])


def _author_totals(path):
    text = path.read_text()
    return {k: float(v) for k, v in re.findall(r"(TOTALBYTES|TOTALFLOPS|DRDW TRANSACTIONS)\n(\S+)", text)}


@pytest.mark.parametrize("run", RUNS)
def test_flops_equal_the_authors_totalflops_exactly(proj1, run):
    root, data = proj1
    model = run.split("/")[1]
    expected = _author_totals(root / run / f"ncu-final-metric-{model}.txt")["TOTALFLOPS"]
    got = data["kernels"].filter(pl.col("run") == run)["flops_fp32"].sum()
    assert int(got) == int(expected)


def test_v100_vgg11_is_the_issue_example(proj1):
    _, data = proj1
    got = data["kernels"].filter(pl.col("run") == "v100/vgg11")["flops_fp32"].sum()
    assert int(got) == 221705941507


@pytest.mark.parametrize("run", RUNS)
def test_dram_bytes_match_totalbytes_within_the_logs_rounding(proj1, run):
    root, data = proj1
    model = run.split("/")[1]
    totals = _author_totals(root / run / f"ncu-final-metric-{model}.txt")
    kernels = data["kernels"].filter(pl.col("run") == run)
    got = kernels["dram_bytes"].sum()
    # Each printed dram__bytes.sum is rounded to its last printed digit in its unit: the
    # author's sum of printed values can differ from the exact sum by half a digit per kernel.
    rows = data["metrics"].filter((pl.col("run") == run) & (pl.col("metric") == "dram__bytes.sum"))
    slack = 0.0
    for text, value in rows.select("value_text", "value").iter_rows():
        decimals = len(text.split(".")[1]) if "." in text else 0
        number = float(text.replace(",", ""))
        unit_factor = value / number if number else 1.0
        slack += 0.5 * 10 ** (-decimals) * unit_factor
    printed = totals["TOTALBYTES"]
    # The author's script printed the V100/vgg11 total with awk's %g (6 significant digits).
    printed_precision = 0.5 * 10 ** (math.floor(math.log10(printed)) - 5)
    assert abs(got - printed) <= slack + printed_precision
    # The sector count is exact: DRAM bytes are 32 × sectors.
    assert got == 32 * totals["DRDW TRANSACTIONS"]


def test_runs_carry_gpu_and_model_from_the_path(proj1):
    _, data = proj1
    runs = data["runs"].sort("run")
    assert runs["run"].to_list() == RUNS
    assert runs["model"].to_list() == ["vgg11", "vgg13", "vgg19"] * 2
    # The nsys trace beside each ncu log names the device (`NVIDIA A100-SXM4-40GB`), which
    # wins over the path token (runs.gpu is the device name as the log spells it).
    tokens = ["A100"] * 3 + ["V100"] * 3
    assert all(token in gpu for token, gpu in zip(tokens, runs["gpu"].to_list()))
