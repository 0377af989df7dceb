"""The derived model (roofreport/model/, issue 30): one figure for one question, worked out once.

* Agreement: `compare` of two runs gives the speedup `build --json-summary` gives them, per
  iteration where both count iterations, on sample_logs/ and every course folder of the corpus.
* Once: one build derives each expensive thing once (time rows, counted times with their
  alignment, roofline points, run totals), whatever number of sections read it.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import polars as pl
import pytest

import roofreport
from roofreport.analysis import diff, speedup
from roofreport.model import derive, roofline, timing, totals
from tests.conftest import CORPUS, SAMPLE_LOGS, corpus_path

COURSE = sorted(p.name for p in (CORPUS / "course").iterdir() if p.is_dir()) if (CORPUS / "course").is_dir() else []


@cache
def _read(folder: Path):
    data = roofreport.read(folder)
    return data, roofreport.analyze(data)


def _glob(run: str) -> str:
    """A glob matching only `run` (run ids may hold `[`, `*`, `?`)."""
    return re.sub(r"[\[*?]", lambda found: f"[{found.group(0)}]", run)


def _agreement(folder: Path) -> int:
    """Every pair of runs `build` compares in `folder`, compared again by `compare`: the same
    speedup within 1 %. A cell of several runs (repeated jobs) is their median in `build`, and
    `compare` compares the one run `build` cites for it: there the speedup is that of the two
    runs' own times on the same basis. Returns the pairs checked."""
    data, analysis = _read(folder)
    compared = analysis.speedups.filter(pl.col("comparable"))
    runs = {row["run"]: row for row in analysis.runs.iter_rows(named=True)}
    cells = dict(zip(analysis.pivot["run"].to_list(), analysis.pivot["runs"].to_list()))
    for pair in compared.iter_rows(named=True):
        slower, faster = pair["slower_run"], pair["faster_run"]
        result = roofreport.compare(data, runs_a=_glob(slower), runs_b=_glob(faster))
        if pair["basis"] == speedup.ELAPSED:       # the batch times the logs print: compare's elapsed row
            elapsed = result.totals.filter(pl.col("what") == diff.ELAPSED_TOTAL).row(0, named=True)
            assert elapsed["speedup"] == pytest.approx(pair["speedup"], rel=0.01), (slower, faster)
            continue
        assert result.pairs["basis"].to_list() == [pair["basis"]], (slower, faster)
        kernels = result.totals.filter(pl.col("what") == "kernels").row(0, named=True)
        if cells[slower] == 1 and cells[faster] == 1:
            expected = pair["speedup"]
        else:
            basis, times, _ = speedup.comparable_times(
                {**runs[slower], "timed_runs": 1}, {**runs[faster], "timed_runs": 1}, elapsed=False)
            expected = times[0] / times[1]
            if pair["basis"].endswith(speedup.PER_GPU):
                expected *= pair["faster_gpus"] / pair["slower_gpus"]
        assert kernels["speedup"] == pytest.approx(expected, rel=0.01), (slower, faster, pair["speedup"])
    return compared.height


def test_compare_gives_builds_speedups_on_the_sample_logs():
    assert _agreement(SAMPLE_LOGS) >= 2


@pytest.mark.parametrize("folder", COURSE or ["(no corpus)"])
def test_compare_gives_builds_speedups_on_every_course_folder(folder):
    _agreement(corpus_path("course", folder))


def test_compare_of_two_folders_is_per_iteration_as_build_is():
    """The V100 trace of resnet18 holds one training step, the A100 trace two: compared per
    iteration the A100 is 2.12x faster (build's figure), not the 1.06x of whole traces; its
    categories and kernels are per iteration too, so most kernels are "faster"."""
    result = roofreport.compare(SAMPLE_LOGS / "v100", SAMPLE_LOGS / "a100")
    resnet = result.pairs.filter(pl.col("pair").str.starts_with("resnet18")).row(0, named=True)
    assert (resnet["basis"], resnet["iterations_a"], resnet["iterations_b"]) == (speedup.PER_ITERATION, 1, 2)
    totals_of = result.totals.filter(pl.col("pair") == resnet["pair"])
    kernels = totals_of.filter(pl.col("what") == "kernels").row(0, named=True)
    assert kernels["speedup"] == pytest.approx(2.12, abs=0.01)
    _, analysis = _read(SAMPLE_LOGS)
    built = analysis.speedups.filter(pl.col("model") == "resnet18")["speedup"].to_list()
    assert built == [pytest.approx(kernels["speedup"], rel=1e-9)]
    # the categories of a pair still sum to its totals, per iteration
    categories = result.categories.filter(pl.col("pair") == resnet["pair"])
    gpu_time = totals_of.filter(pl.col("what") == "GPU time").row(0, named=True)
    assert categories["time_b_ns"].sum() == pytest.approx(gpu_time["time_b_ns"], rel=1e-9)
    changes = result.kernels.filter(pl.col("pair") == resnet["pair"])["change"].value_counts()
    counts = dict(changes.iter_rows())
    assert counts["faster"] > 5 * counts.get("slower", 0)


def test_build_baseline_reads_the_same_comparison():
    against = roofreport.analyze(SAMPLE_LOGS / "a100", baseline=SAMPLE_LOGS / "v100")
    result = roofreport.compare(SAMPLE_LOGS / "v100", SAMPLE_LOGS / "a100")
    assert against.baseline.totals.equals(result.totals)
    assert against.baseline.kernels.equals(result.kernels)


def test_a_pair_whose_iterations_only_one_side_counts_says_so():
    basis, note = diff._basis({"iterations": 20}, {"iterations": None})
    assert basis == speedup.WHOLE_RUN
    assert note == "times of whole runs, not per iteration: A's logs count 20 iterations, B's give no count"
    assert diff._basis({"iterations": None}, {"iterations": None}) == (speedup.WHOLE_RUN, None)
    assert diff._basis({"iterations": 2}, {"iterations": 3}) == (
        speedup.PER_ITERATION, "times per iteration (A: 2, B: 3 iterations), as build compares them")
    assert diff._basis({"iterations": 2}, {"iterations": 2}) == (speedup.PER_ITERATION, None)


# -- once ------------------------------------------------------------------------------------------

# (`candidate_rows`, a copy of the kernel rows, gives the time rows, the time partials and the
# trace launches counted launches align with: one pass for the three)
EXPENSIVE = [(timing, "candidate_rows"), (timing, "kernel_time_rows"), (timing, "counted_kernel_times"),
             (roofline, "kernel_points"), (totals, "run_totals"), (roofline, "run_roofline")]


def test_one_build_derives_the_model_once(tmp_path, monkeypatch):
    """read, analyze and the report's sections (every one of them, with the JSON summary) on
    the sample logs: each expensive derivation runs once, for all runs at once."""
    calls = {name: 0 for _, name in EXPENSIVE}
    for module, name in EXPENSIVE:
        original = getattr(module, name)

        def counted(*args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)
        monkeypatch.setattr(module, name, counted)
    roofreport.build_report(SAMPLE_LOGS, tmp_path / "report.html", json_summary=tmp_path / "summary.json", jobs=1)
    assert calls == {name: 1 for _, name in EXPENSIVE}


def test_a_model_narrowed_to_some_runs_keeps_what_it_derived():
    data = roofreport.read(SAMPLE_LOGS, jobs=1)
    model = data.model
    whole = model.totals
    kept = ["a100/resnet18", "v100/resnet18"]
    narrow = model.keep_runs(kept, {name: frame.filter(pl.col("run").is_in(kept)) if "run" in frame.columns
                                    else frame for name, frame in data.tables.items()})
    assert "totals" in narrow.__dict__ and sorted(narrow.totals["run"].to_list()) == kept
    fresh = derive(narrow.tables, model.db)
    assert fresh.totals.sort("run").equals(narrow.totals.sort("run"))
    assert fresh.time_rows.sort("run", "source_file", "order").equals(narrow.time_rows.sort("run", "source_file", "order"))


# -- one orchestration -----------------------------------------------------------------------------

def test_the_cli_build_and_the_apis_build_report_write_the_same_json_summary(tmp_path):
    """`roofreport build` and `roofreport.build_report` with the same options (an exclude, limits
    and a baseline among them): byte-identical JSON summaries. The exclude leaves vgg11's ncu
    logs unread, so neither summary has FLOPs for vgg11; the line limit (300 bytes) cuts the
    nsys CSVs' long kernel-name lines, so both count the kernel time the limited read gives, not
    the whole trace's 21.06 ms (a100/resnet18). The API's build is given as the CLI gives it
    (one `ReadOptions`) and with the reading keywords: the same bytes."""
    import json
    import subprocess
    import sys

    inputs = [str(SAMPLE_LOGS / "a100"), str(SAMPLE_LOGS / "v100")]
    cli = subprocess.run([sys.executable, "-m", "roofreport", "build", *inputs, "-o", str(tmp_path / "cli.html"),
                          "--json-summary", str(tmp_path / "cli.json"), "--baseline", str(SAMPLE_LOGS / "v100"),
                          "-q", "--jobs", "1", "--exclude", "ncu-log-vgg11.txt", "--top", "3", "--max-line", "300"],
                         capture_output=True, text=True)
    assert cli.returncode in (0, 1), cli.stderr[-2000:]
    limits = roofreport.Limits(line_bytes=300)
    roofreport.build_report(inputs, tmp_path / "api.html", json_summary=tmp_path / "api.json",
                            baseline=SAMPLE_LOGS / "v100", exclude=["ncu-log-vgg11.txt"], top=3, jobs=1,
                            limits=limits)
    options = roofreport.read_options(inputs, exclude=["ncu-log-vgg11.txt"], jobs=1, limits=limits)
    roofreport.build_report(options, tmp_path / "options.html", json_summary=tmp_path / "options.json",
                            baseline=SAMPLE_LOGS / "v100", top=3)
    written = (tmp_path / "cli.json").read_bytes()
    assert written == (tmp_path / "api.json").read_bytes() == (tmp_path / "options.json").read_bytes()
    runs = {run["run"]: run for run in json.loads(written)["runs"]}
    assert runs["a100/vgg11"]["flops"] is None and runs["a100/resnet18"]["flops"]
    assert json.loads(written)["speedups"]
    limited = dict(roofreport.read(options).runs.select("run", "kernel_time_ns").iter_rows())
    assert runs["a100/resnet18"]["kernel_time_ns"] == limited["a100/resnet18"] < 21_000_000


def test_read_options_travel_to_every_reader(tmp_path):
    """`ReadOptions` is how `read`, `analyze`, `summary` and `compare` read paths: an exclude in
    it leaves the same file unread for each, and `build_report`'s baseline is read with it (its
    GPU name aside: `for_baseline`)."""
    from roofreport.api import BuildSteps

    options = roofreport.read_options(exclude=["ncu-log-resnet18.txt"], jobs=1, gpu="V100-SXM2-16GB")
    side = str(SAMPLE_LOGS / "v100" / "resnet18")
    read = roofreport.read(options.reading([side]))
    assert read.runs["flops"].to_list() == [None]
    assert roofreport.analyze(side, reading=options).runs["flops"].to_list() == [None]
    assert roofreport.summary(side, reading=options).runs["flops"].to_list() == [None]
    compared = roofreport.compare(side, side, reading=options)
    assert compared.pairs.height == 1
    baseline = options.for_baseline([side])
    assert baseline.exclude == options.exclude and baseline.gpu.gpu is None and baseline.jobs == 1
    seen = []
    roofreport.build_report(options.reading([side]), tmp_path / "r.html", baseline=side,
                            steps=BuildSteps(read=lambda data, is_baseline: seen.append(
                                (is_baseline, data.runs["flops"].to_list(), data.gpu.gpu))))
    assert seen == [(False, [None], "V100-SXM2-16GB"), (True, [None], None)]
    with pytest.raises(roofreport.UsageError):
        roofreport.read(options.reading([side]), jobs=2)


def test_a_traces_copies_before_its_first_kernel_are_setup_whatever_rank_the_activities_carry():
    """The activities table carries a distributed job's process `rank`; the time rows'
    `source_rank` is the time source's. The copies of an nsys trace before its first kernel are setup (the
    weights uploaded once): 1.8 ms of a100/resnet18, 3.5 ms of v100/resnet18, and never 0 (as
    when the process rank, null, stood for the trace's)."""
    data, _ = _read(SAMPLE_LOGS)
    setup = dict(data.runs.select("run", "setup_time_ns").iter_rows())
    assert setup["a100/resnet18"] == pytest.approx(1_824_070.0)
    assert setup["v100/resnet18"] == pytest.approx(3_496_268.0)
    copies = data.model.time_rows.filter(pl.col("category").is_in(["memcpy", "memset"]))
    assert copies.height and copies["source_rank"].is_not_null().all()


def test_a_pytorch_printouts_other_views_are_never_in_the_run_total(tmp_path):
    """A printout of several key_averages tables (tests/test_pytorch_views.py): the rows of the
    view that gives the totals are in_run_total, the other views' rows (kind "view") never."""
    from tests.test_pytorch_views import _log

    path, _ = _log(tmp_path)
    data = roofreport.read_file(str(path))
    kernels = data.kernels
    assert kernels.filter(pl.col("kind") == "view").height
    assert not kernels.filter((pl.col("kind") == "view") & pl.col("in_run_total")).height
    (kernel_time,) = data.runs["kernel_time_ns"].to_list()
    assert kernels.filter("in_run_total")["duration_ns"].sum() == pytest.approx(kernel_time, rel=1e-9)


@pytest.mark.parametrize("folder", ["nsys", "ncu", "kineto", "rocm"])
def test_the_kernels_in_the_run_total_sum_to_each_runs_kernel_time_from_one_file(folder):
    """`in_run_total` (looked up by file and by run, not joined) on the corpus's logs of each
    layout: per run, the rows marked are of one file and sum to the run's `kernel_time_ns`;
    a run timed from a file read into activities only ("trace") marks none."""
    data = roofreport.read(corpus_path(folder), jobs=1)
    marked = data.kernels.filter("in_run_total").group_by("run").agg(
        pl.col("source_file").n_unique().alias("marked_files"), pl.col("duration_ns").sum().alias("sum"))
    runs = data.runs.filter(pl.col("kernel_time_ns").is_not_null()).join(marked, on="run", how="left")
    assert runs.height and marked.height
    activities_only = pl.col("time_source").str.starts_with("trace")
    assert runs.filter(~activities_only & pl.col("sum").is_null()).height == 0
    assert runs.filter(activities_only & pl.col("sum").is_not_null()).height == 0
    for run, kernel_time, files, total in runs.filter(pl.col("sum").is_not_null()).select(
            "run", "kernel_time_ns", "marked_files", "sum").iter_rows():
        assert files == 1, run
        assert total == pytest.approx(kernel_time, rel=1e-9), run
