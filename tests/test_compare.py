"""`roofreport compare` / `roofreport.compare`: against numbers computed by hand from the logs.

Anoushka21's vgg13 on a V100 and on an A100 (a course's `<gpu>/<model>/` folders, each with an
nsys gputrace CSV and an ncu log): the kernel time of each run is the sum of the trace's kernel
rows (every row but `[CUDA memcpy ...]`/`[CUDA memset ...]`), read here with the csv module.
"""

from __future__ import annotations

import csv
import io
import json
import math

import polars as pl
import pytest
from click.testing import CliRunner

import roofreport
from roofreport.analysis import diff
from roofreport.cli import cli
from tests.conftest import corpus_path

COURSE = ("course", "Anoushka21-Cloud-and-MachineLearning", "proj1")


def _trace_times(gpu: str) -> tuple[float, float]:
    """(kernel time, transfer time) in ns: the gputrace CSV summed by hand."""
    path = corpus_path(*COURSE, gpu, "vgg13", "tmp_nsys_gputrace.csv")
    kernels = transfers = 0.0
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["Name"].startswith(("[CUDA memcpy", "[CUDA memset")):
                transfers += float(row["Duration(nsec)"])
            else:
                kernels += float(row["Duration(nsec)"])
    return kernels, transfers


@pytest.fixture(scope="module")
def vgg13():
    return roofreport.compare(corpus_path(*COURSE, "v100", "vgg13"), corpus_path(*COURSE, "a100", "vgg13"))


def test_kernel_totals_and_their_ratio_are_the_traces_summed_by_hand(vgg13):
    kernels_v100, transfers_v100 = _trace_times("v100")
    kernels_a100, transfers_a100 = _trace_times("a100")
    assert (kernels_v100, kernels_a100) == (61_260_583, 30_212_278)   # as printed in the CSVs' rows
    totals = {row["what"]: row for row in vgg13.totals.iter_rows(named=True)}
    assert totals["kernels"]["time_a_ns"] == kernels_v100
    assert totals["kernels"]["time_b_ns"] == kernels_a100
    assert totals["kernels"]["delta_ns"] == kernels_a100 - kernels_v100
    assert totals["kernels"]["speedup"] == pytest.approx(kernels_v100 / kernels_a100)   # 2.028
    assert totals["transfers"]["time_a_ns"] == transfers_v100
    assert totals["transfers"]["time_b_ns"] == transfers_a100
    assert totals["GPU time"]["delta_ns"] == (kernels_a100 + transfers_a100) - (kernels_v100 + transfers_v100)


def test_category_deltas_sum_to_the_total_delta(vgg13):
    totals = {row["what"]: row["delta_ns"] for row in vgg13.totals.iter_rows(named=True)}
    cats = vgg13.categories
    kernel_cats = cats.filter(~pl.col("category").is_in(["memcpy", "memset"]))
    assert kernel_cats["delta_ns"].sum() == pytest.approx(totals["kernels"], abs=1e-3)
    assert cats["delta_ns"].sum() == pytest.approx(totals["GPU time"], abs=1e-3)
    # and every kernel row is counted once: the kernel rows of each side add up to its GPU time
    assert vgg13.kernels["time_a_ns"].sum() == pytest.approx(cats["time_a_ns"].sum())
    assert vgg13.kernels["time_b_ns"].sum() == pytest.approx(cats["time_b_ns"].sum())
    assert cats["share_a"].sum() == pytest.approx(1.0) and cats["share_b"].sum() == pytest.approx(1.0)


def test_across_architectures_names_that_differ_are_pooled_per_category(vgg13):
    pair = vgg13.pairs.row(0, named=True)
    assert (pair["family_a"], pair["family_b"]) == ("volta", "ampere")
    assert pair["like_for_like"] is True   # same workload on two GPUs
    assert pair["note"] == "FLOP/s and intensity not compared: B's FLOPs miss tensor-core work"
    gemm = vgg13.kernels.filter(pl.col("kernel") == "gemm kernels").row(0, named=True)
    assert gemm["match"] == "category" and gemm["change"] == "faster"
    assert gemm["name_a"].startswith("volta_sgemm") and gemm["kernels_a"] > 1 and gemm["kernels_b"] > 1
    # the kernels both GPUs ran under one name stay matched by name (and launch where names collide)
    matched = vgg13.kernels.filter(pl.col("match") != "category")
    assert {"memcpy HtoD", "at::native::max_pool_forward_nchw"} <= set(matched["kernel"].to_list())
    assert (matched["match"] == "name+launch").any()
    assert matched.filter(pl.col("change").is_in(["added", "removed"])).height == 0
    # biggest change first
    assert vgg13.kernels["delta_ns"].abs().to_list() == sorted(vgg13.kernels["delta_ns"].abs().to_list(), reverse=True)


def test_on_one_architecture_kernels_match_by_name_and_the_rest_appear_or_vanish():
    folder = corpus_path(*COURSE, "v100")
    result = roofreport.compare(folder, runs_a="vgg11", runs_b="vgg13")
    pair = result.pairs.row(0, named=True)
    assert pair["matching"] == "kernels by name" and pair["like_for_like"] is True   # one GPU
    assert set(result.kernels["match"].unique().to_list()) <= {"name", "name+launch"}
    assert set(result.kernels["change"].unique().to_list()) <= {"added", "removed", "faster", "slower", "same"}
    added = result.kernels.filter(pl.col("change") == "added")
    assert added.height and added["time_a_ns"].is_null().all() and (added["delta_ns"] == added["time_b_ns"]).all()


def test_runs_of_two_folders_pair_by_workload_and_a_glob_leaves_the_rest_unpaired():
    result = roofreport.compare(corpus_path(*COURSE, "v100"), corpus_path(*COURSE, "a100"), runs_b="vgg1[13]")
    assert sorted(zip(result.pairs["run_a"], result.pairs["run_b"])) == [("vgg11", "vgg11"), ("vgg13", "vgg13")]
    assert result.unpaired.rows() == [("A", "vgg19", "vgg19 · V100-SXM2-16GB",
                                       "vgg19 · V100-SXM2-16GB (vgg19): no run of B has its workload")]


def test_other_gpus_and_other_workloads_are_not_like_for_like():
    folder = corpus_path(*COURSE)
    result = roofreport.compare(folder, runs_a="v100/vgg11", runs_b="a100/vgg13")
    pair = result.pairs.row(0, named=True)
    assert pair["like_for_like"] is False
    assert pair["note"].startswith("not like for like: other GPUs (V100-SXM2-16GB and A100-SXM4-40GB) and other "
                                   "workloads (vgg11 · V100-SXM2-16GB and vgg13 · A100-SXM4-40GB)")


@pytest.mark.parametrize("name", ["[CUDA memcpy HtoD]", "[CUDA memcpy Host-to-Device]",
                                  "Memcpy HtoD (Pageable -> Device)"])
def test_transfers_match_by_kind_and_direction_however_the_tool_spells_them(name):
    rows = pl.DataFrame({"name": [name], "short_name": [name], "category": ["memcpy"]})
    assert rows.select(diff._normalised())[0, 0] == "memcpy HtoD"


# -- the command ----------------------------------------------------------------------------

def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_compare_prints_totals_categories_and_kernels():
    result = run("compare", str(corpus_path(*COURSE, "v100", "vgg13")), str(corpus_path(*COURSE, "a100", "vgg13")),
                 "--top", "3", "--quiet")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "A: vgg13 · V100-SXM2-16GB  (ncu-log-vgg13.txt; time from nsys trace)"
    assert "kernels           264         251  61.3 ms  30.2 ms  -31.0 ms   2.0×" in lines
    assert "Kernels, biggest change first (3 shown)" in lines


def test_compare_csv_and_json_give_base_units():
    a, b = str(corpus_path(*COURSE, "v100", "vgg13")), str(corpus_path(*COURSE, "a100", "vgg13"))
    result = run("compare", a, b, "--format", "csv", "--table", "totals", "-q")
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["what"] for r in rows] == ["kernels", "transfers", "GPU time"]
    assert float(rows[0]["time_a_ns"]) == 61_260_583 and math.isclose(float(rows[0]["speedup"]), 61_260_583 / 30_212_278)
    result = run("compare", a, b, "--format", "json", "-q")
    objects = json.loads(result.stdout)
    assert set(objects) == {"pairs", "unpaired", "totals", "categories", "kernels"}
    assert objects["pairs"][0]["label_b"] == "vgg13 · A100-SXM4-40GB"


def test_compare_usage_errors_say_what_to_do():
    folder = str(corpus_path(*COURSE, "v100"))
    result = run("compare", folder)
    assert result.exit_code == 2
    assert result.stderr == "roofreport: usage error: give two folders A B, or one with --run-a GLOB and --run-b GLOB\n"
    result = run("compare", folder, "--run-a", "vgg11", "--run-b", "resnet*", "-q")
    assert result.exit_code == 2
    assert result.stderr == ("roofreport: usage error: side B: no run matches --run-b resnet* "
                             "(runs: vgg11, vgg13, vgg19)\n")


def test_a_kernels_category_reads_as_the_report_tables_say_it_and_a_pool_by_its_category():
    """Anoushka21's V100 VGG-11 against VGG-13 (one architecture: kernels matched by name): the
    Winograd convolutions' SGEMMs are counted in conv and labelled "conv (via GEMM)", as the
    report's kernel tables and `summary` label them; `category` stays for scripts. Across
    families (V100 against A100) the pooled rows are labelled by their category alone."""
    from roofreport.analysis import share
    from roofreport.analysis.bundle import dataset_model

    v100 = corpus_path(*COURSE, "v100")
    same = roofreport.compare(v100 / "vgg11" / "tmp_nsys_gputrace.csv", v100 / "vgg13" / "tmp_nsys_gputrace.csv")
    via = same.kernels.filter(pl.col("category_label") != pl.col("category"))
    assert via.height >= 4 and set(via["category_label"]) == {"conv (via GEMM)"} and set(via["category"]) == {"conv"}
    labels = dict(share.per_kernel(dataset_model(roofreport.read(v100 / "vgg11" / "tmp_nsys_gputrace.csv")))
                  .select("short_name", "category_label").iter_rows())
    assert all(labels[row["name_a"]] == row["category_label"] for row in via.iter_rows(named=True))
    across = roofreport.compare(v100 / "vgg11", corpus_path(*COURSE, "a100", "vgg11")).kernels
    pools = across.filter(pl.col("match") == diff.MATCH_CATEGORY)
    assert pools.height and (pools["category_label"] == pools["category"]).all()
