"""An AMD folder builds a report with an AMD roofline (issue #34): `sample_logs/amd/mi210/` holds a
CG solver profiled by rocprof (v1) — its Chrome trace `results.json`, `--stats` summaries and a
counter pass `results.csv` of the same application — beside a rocprof-compute DGEMM workload, both
on an MI210. `build --json-summary` and the HTML say the GPU, where its peaks come from, each
run's bound and % of roof, and the top kernel category."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from roofreport.cli import cli
from tests.conftest import SAMPLE_LOGS
from tests.test_report_render import text_of


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("amd")
    html, summary = out / "report.html", out / "summary.json"
    result = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS / "amd" / "mi210"), "-o", str(html),
                                      "--json-summary", str(summary)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(summary.read_text(encoding="utf-8")), text_of(html.read_text(encoding="utf-8"))


def test_each_run_has_its_gpu_bound_and_percent_of_roof(built):
    summary, _ = built
    runs = {run["run"]: run for run in summary["runs"]}
    assert set(runs) == {"amd/mi210/cg", "amd/mi210/workloads/dgemm/MI210"}
    cg = runs["amd/mi210/cg"]
    assert (cg["gpu_model"], cg["time_source"], cg["bound"], cg["roof_precision"]) == (
        "Instinct MI210", "rocprof trace", "memory", "fp64")
    # the SpMV-dominated solver at 0.26 FLOP/B streams at most of the MI210's 1.64 TB/s
    assert cg["arithmetic_intensity"] == pytest.approx(0.261, rel=0.01)
    assert 70 < cg["pct_of_roof"] < 85
    assert cg["transfer_time_ns"] > 0        # the trace's COPY lane
    dgemm = runs["amd/mi210/workloads/dgemm/MI210"]
    assert (dgemm["bound"], dgemm["roof_precision"]) == ("compute", "tensor")


def test_page_one_names_the_gpu_the_bounds_and_the_top_category(built):
    summary, text = built
    findings = [finding["text"] for finding in summary["findings"]]
    assert any(f.startswith("On the MI210, 1 run is memory-bound (cg") and "% of the roof" in f for f in findings)
    assert any(f.startswith("On the MI210, 1 run is compute-bound") for f in findings)
    # the solver's kernels: its SpMV (no category rule names sparse kernels: "other") leads
    assert any(f.startswith("In cg · MI210, ") and "other takes" in f and "the largest single kernel is spmv_csr" in f
               for f in findings)
    assert any(" gemm takes " in f for f in findings)
    for finding in findings:
        assert finding in text                                   # the page says it word for word


def test_the_report_says_where_the_peaks_come_from(built):
    _, text = built
    assert "ceilings: FP64: datasheet; DRAM: datasheet (MI210)" in text
    assert "MI210: AMD Instinct MI210 datasheet" in text
