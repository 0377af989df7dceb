"""`roofreport summary` and the view (`--kernel REGEX`, `--run GLOB`) it shares with `build`:
views narrow what is shown, never what is counted."""

from __future__ import annotations

import csv
import io
import json

import polars as pl
import pytest
from click.testing import CliRunner

import roofreport
from roofreport.analysis.view import View
from roofreport.cli import cli
from roofreport.errors import UsageError
from tests.conftest import SAMPLE_LOGS


@pytest.fixture(scope="module")
def data():
    return roofreport.read(SAMPLE_LOGS)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_summary_runs_hold_the_run_totals_whatever_the_view(data):
    whole = roofreport.summary(data)
    narrow = roofreport.summary(data, kernel="(?i)gemm", runs="a100/*")
    totals = dict(data.runs.select("run", "kernel_time_ns").iter_rows())
    assert narrow.runs["run"].to_list() == ["a100/lenet5", "a100/resnet18", "a100/vgg11"]
    for run, time in narrow.runs.select("run", "kernel_time_ns").iter_rows():
        assert time == totals[run]
    assert whole.runs.height == data.runs.filter(pl.col("duplicate_of").is_null()).height


def test_a_kernel_view_keeps_matching_kernels_and_their_shares_of_the_whole_run(data):
    whole = roofreport.summary(data, top=1000).kernels
    gemm = roofreport.summary(data, kernel="(?i)gemm", top=1000).kernels
    assert gemm.height and gemm["kernel"].str.contains("(?i)gemm").all()
    same = gemm.join(whole, on=["run", "kernel"], suffix="_all")
    assert same.height == gemm.height
    assert (same["share"] == same["share_all"]).all()          # a share of the run's whole GPU time
    assert (same["time_ns"] == same["time_ns_all"]).all()
    categories = roofreport.summary(data, kernel="(?i)gemm").categories
    assert categories.group_by("run").agg(pl.col("share").sum())["share"].max() < 1.0


def test_top_n_kernels_per_run_largest_first(data):
    kernels = roofreport.summary(data, top=3).kernels
    assert kernels.group_by("run").len()["len"].max() == 3
    for _, group in kernels.group_by("run"):
        assert group["rank"].to_list() == list(range(1, group.height + 1))
        assert group["time_ns"].to_list() == sorted(group["time_ns"].to_list(), reverse=True)
        assert (group["avg_ns"] == group["time_ns"] / group["count"]).all()


def test_the_view_of_a_build_narrows_the_kernel_frames_not_the_totals(data):
    whole = roofreport.analyze(data)
    narrow = roofreport.analyze(data, kernel="(?i)gemm", runs=["a100/*", "v100/*"])
    assert set(narrow.runs["run"]) == {r for r in whole.runs["run"] if r.startswith(("a100/", "v100/"))}
    joined = narrow.runs.join(whole.runs, on="run", suffix="_all")
    assert (joined["kernel_time_ns"].fill_null(-1) == joined["kernel_time_ns_all"].fill_null(-1)).all()
    assert narrow.top["short_name"].str.contains("(?i)gemm").all()
    assert narrow.kernel_roofline["short_name"].str.contains("(?i)gemm").all()
    rest = narrow.top_rest.join(whole.top_rest, on="run", suffix="_all")
    assert (rest["total_ns"] == rest["total_ns_all"]).all()   # "GPU time (kernels + copies)" stays whole


def test_view_errors_are_usage_errors_that_say_what_is_wrong(data):
    with pytest.raises(UsageError, match=r"--kernel 'a\(b' is not a regular expression \(error: unclosed group\)"):
        View(kernel="a(b")
    with pytest.raises(UsageError, match=r"no run matches --run nope/\* \(runs: a100/lenet5, "):
        roofreport.summary(data, runs="nope/*")


def test_summary_prints_three_tables():
    result = run("summary", SAMPLE_LOGS / "v100", "--top", "2")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "Runs"
    assert "Kernel categories (share of each run's GPU time)" in lines and "Top 2 kernels per run" in lines
    cells = [[cell.strip() for cell in line.split("  ") if cell.strip()] for line in lines]  # two blanks apart
    # the label under the run's id (issue 33: a table fits the terminal); the units in the headings;
    # compute-bound, classed by kernel name: ncu counted 14 % of the run's kernel time, under
    # model/bound.py's coverage floor, and the kernels it counted take 90 % of it
    row = cells.index(["v100/resnet18", "168", "22.4 ms", "3.50 ms", "nsys trace", "34.1 T", "422", "compute"])
    assert lines[row + 1] == "  resnet18 · V100-SXM2-16GB"
    assert ["run", "launches", "kernel time", "transfers", "time source", "FLOP/s", "FLOP/B", "bound"] in cells


def test_summary_says_why_a_run_has_no_bound_class_in_the_models_words(data):
    """The bound column read "–" and said no more; each run left without a class now points to
    its reason below the table, the runs table's `bound_note` (page 1's words), each reason once."""
    result = run("summary", SAMPLE_LOGS, "--table", "runs", "-q")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    runs = data.runs.filter(pl.col("duplicate_of").is_null()).sort("run")
    reasons = list(dict.fromkeys(runs.filter(pl.col("bound").is_null())["bound_note"].to_list()))
    assert len(reasons) >= 2 and None not in reasons          # every run without a class has a reason
    legend = lines.index("No bound class where marked, because:")
    assert lines[legend + 1:] == [f"[{n}] {reason}" for n, reason in enumerate(reasons, 1)]
    start = lines[1].index("bound")
    width = len(lines[2][start:].split("  ")[0])               # the column's dashes
    marks = [line[start:start + width].strip() for line in lines[3:legend] if not line.startswith("  ")]
    expected = [bound or f"– [{reasons.index(note) + 1}]"
                for bound, note in runs.select("bound", "bound_note").iter_rows()]
    assert marks == expected
    # the page-1 sentence of a thinly counted run says the same note
    # (a100/resnet18: its ncu window misses the large-tile convolutions, so even by kernel name
    # the counters reach under half its kernel time)
    thin = runs.filter(pl.col("run") == "a100/resnet18").row(0, named=True)
    assert thin["bound"] is None and thin["bound_note"].startswith("too little of the run's kernel time is counted")
    # scripts get the note itself, for every run (a class's shares too)
    objects = json.loads(run("summary", SAMPLE_LOGS, "--format", "json", "--table", "runs", "-q").stdout)["runs"]
    assert {r["run"]: r["bound_note"] for r in objects} == dict(runs.select("run", "bound_note").iter_rows())


@pytest.mark.corpus
def test_a_run_without_counts_or_gpu_still_says_why_it_has_no_class():
    """pranshu777's `out.expCloudML.811402`: nvprof profiled nothing, and no GPU is named; its
    bound note was null, so the summary had no reason to give."""
    from tests.conftest import corpus_path
    folder = corpus_path("course", "pranshu777-imagenet")
    runs = roofreport.read(folder).runs
    row = runs.filter(pl.col("run") == "out.expCloudML.811402").row(0, named=True)
    assert (row["bound"], row["flops"], row["bound_note"]) == (None, None, "no FLOP counts in the logs")
    assert runs.filter(pl.col("bound").is_null() & pl.col("bound_note").is_null()).height == 0


def test_summary_csv_and_json_for_scripts():
    result = run("summary", SAMPLE_LOGS, "--format", "csv", "--table", "kernels", "--kernel", "(?i)sgemm",
                 "--top", "2", "-q")
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert rows and all("sgemm" in r["kernel"].lower() for r in rows)
    assert set(rows[0]) == {"run", "rank", "kernel", "category", "category_label", "count", "time_ns", "avg_ns",
                            "min_ns", "median_ns", "max_ns", "share"}
    objects = json.loads(run("summary", SAMPLE_LOGS, "--format", "json", "--run", "a100/*", "-q").stdout)
    assert set(objects) == {"runs", "categories", "kernels"}
    assert {r["run"] for r in objects["runs"]} == {"a100/lenet5", "a100/resnet18", "a100/vgg11"}


def test_summary_says_a_view_is_on_and_refuses_a_bad_regex():
    result = run("summary", SAMPLE_LOGS / "v100", "--kernel", "gemm")
    assert result.stderr.splitlines()[-1] == ("roofreport: showing kernels matching /gemm/; run totals count "
                                              "every kernel")
    result = run("summary", SAMPLE_LOGS / "v100", "--kernel", "a(b")
    assert (result.exit_code, result.stderr) == (
        2, "roofreport: usage error: --kernel 'a(b' is not a regular expression (error: unclosed group)\n")


def test_a_report_built_with_a_view_says_so(data, tmp_path):
    out = tmp_path / "report.html"
    roofreport.build_report(data, out, kernel="(?i)gemm", runs="a100/*")
    page = out.read_text(encoding="utf-8")
    assert ("showing runs matching &#39;a100/*&#39;; kernels matching /(?i)gemm/ (run totals count every "
            "kernel)") in page


@pytest.mark.corpus
def test_summary_shows_a_kernels_category_as_the_report_tables_do():
    """Anoushka21's V100 VGG-11: the Winograd convolutions' SGEMMs are "conv (via GEMM)" in the
    report's kernel tables, and the summary printed "conv"; its JSON keeps `category` for scripts
    and gains the label, read from the analysis's one `category_label`."""
    from roofreport.analysis import share
    from roofreport.analysis.bundle import dataset_model
    from tests.conftest import corpus_path
    trace = corpus_path("course", "Anoushka21-Cloud-and-MachineLearning", "proj1", "v100", "vgg11",
                        "tmp_nsys_gputrace.csv")
    result = run("summary", trace, "--table", "kernels", "--top", "3", "-q")
    rows = [line for line in result.stdout.splitlines() if line.startswith("volta_sgemm")]
    assert len(rows) == 2 and all("conv (via GEMM)" in line for line in rows)
    objects = json.loads(run("summary", trace, "--format", "json", "--table", "kernels", "--top", "3", "-q").stdout)
    via = [k for k in objects["kernels"] if k["kernel"].startswith("volta_sgemm")]
    assert [(k["category"], k["category_label"]) for k in via] == [("conv", "conv (via GEMM)")] * 2
    labels = dict(share.per_kernel(dataset_model(roofreport.read(trace))).select("short_name", "category_label")
                  .iter_rows())
    assert all(labels[k["kernel"]] == k["category_label"] for k in objects["kernels"])
