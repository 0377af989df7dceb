"""An AMD folder with two GPUs (issue #34): the MI250X's stencil code (`sample_logs/amd/mi250x/stencil`)
run again, same command and grid, on an MI300X (`sample_logs/amd/mi300x/stencil`, with its node's
ERT `roofline.json`). Page 1 says which GPU is faster, by how much and why, as it does for NVIDIA;
the speedup is checked against the two runs' kernel time summed here from their `--stats` files."""

from __future__ import annotations

import csv
import json
import re

import pytest
from click.testing import CliRunner

from roofreport.cli import cli
from tests.conftest import SAMPLE_LOGS
from tests.test_report_render import text_of

FOLDERS = [SAMPLE_LOGS / "amd" / "mi250x" / "stencil", SAMPLE_LOGS / "amd" / "mi300x" / "stencil"]


def _kernel_ns(folder) -> int:
    with (folder / "results.stats.csv").open(newline="") as handle:
        return sum(int(row["TotalDurationNs"]) for row in csv.DictReader(handle))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("amd-pair")
    html, summary = out / "report.html", out / "summary.json"
    result = CliRunner().invoke(cli, ["build", *map(str, FOLDERS), "-o", str(html), "--json-summary", str(summary)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(summary.read_text(encoding="utf-8")), text_of(html.read_text(encoding="utf-8"))


def test_page_one_says_which_gpu_is_faster_by_how_much_and_why(built):
    summary, text = built
    findings = [f["text"] for f in summary["findings"]]
    (pair,) = [f for f in findings if " is faster than " in f]
    found = re.match(r"The MI300X is faster than the MI250X \(GCD\) for stencil (\d+\.\d)×", pair)
    assert found, pair
    assert float(found.group(1)) == pytest.approx(_kernel_ns(FOLDERS[0]) / _kernel_ns(FOLDERS[1]), abs=0.05)
    # why: the peak ratios, the DRAM bandwidth ERT measured on the MI300X among them
    assert "peak ratios" in pair and "DRAM bandwidth" in pair
    # the MFMA roof named as a TA would, not "3.4× TENSOR compute" (stop 38's page 1)
    assert re.search(r"\(\d\.\d× tensor/matrix-core compute, \d\.\d× DRAM bandwidth\)", pair), pair
    assert "TENSOR" not in pair
    assert pair in text
    # each GPU's bound, said once, in its own bullet with its share (issue 31 items 2 and 12): the
    # stencil's time sits about half on each side of the ridge (49-51 % in compute-side kernels),
    # so neither memory- nor compute-bound; the pair sentence does not say it again
    assert "-bound" not in pair
    for gpu in ("MI300X", "MI250X (GCD)"):
        (said,) = [f for f in findings if "-bound" in f and f"stencil · {gpu}" in f]
        assert said.startswith(f"On the {gpu}, 1 run is neither memory- nor compute-bound"), said
        assert re.search(r"; (49|51)% of its counted time in (compute|memory)-side kernels", said), said


def test_the_speedup_table_pairs_the_two_runs(built):
    summary, _ = built
    (row,) = summary["speedups"]
    assert (row["faster_run"], row["slower_run"]) == ("amd/mi300x/stencil", "amd/mi250x/stencil")
    assert (row["faster_time_ns"], row["slower_time_ns"]) == (_kernel_ns(FOLDERS[1]), _kernel_ns(FOLDERS[0]))
    bounds = {run["run"]: run["bound"] for run in summary["runs"]}
    assert (row["faster_bound"], row["slower_bound"]) == (bounds["amd/mi300x/stencil"], bounds["amd/mi250x/stencil"])
    assert row["faster_bound"] == row["slower_bound"] == "mixed"
    # the MI300X's DRAM roof is what ERT measured on it, the MI250X GCD's the datasheet's 1.6384 TB/s
    assert row["slower_peak_dram_bytes_per_s"] == pytest.approx(1638.4e9)
    assert row["peak_ratio_dram"] == pytest.approx(row["faster_peak_dram_bytes_per_s"] / 1638.4e9)
