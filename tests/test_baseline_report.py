"""`roofreport build LOGS --baseline B` (#25): the report's "Against the baseline" section shows
`roofreport compare B LOGS`'s frames, on Anoushka21's vgg13 on a V100 (the baseline) and an A100
(tests/test_compare.py checks those frames against the nsys CSVs summed by hand).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

import roofreport
from roofreport.cli import cli
from roofreport.report import fmt
from roofreport.report.assemble import assemble
from roofreport.report.context import Table
from tests.conftest import corpus_path
from tests.test_compare import COURSE
from tests.test_report_render import text_of



@pytest.fixture(scope="module")
def vgg13() -> tuple:
    """The V100 (baseline) and A100 folders of vgg13 (a fixture, so that without the corpus
    each test skips, saying why, rather than the module failing to collect)."""
    return tuple(corpus_path(*COURSE, gpu, "vgg13") for gpu in ("v100", "a100"))


@pytest.fixture(scope="module")
def against(vgg13):
    """The A100 run analysed against the V100 baseline, compare's frames, and the section."""
    v100, a100 = vgg13
    analysis = roofreport.analyze(a100, baseline=v100)
    section = assemble(analysis).section("baseline")
    return analysis, roofreport.compare(v100, a100), section


def _tables(section) -> dict[str, Table]:
    return {block.css: block for block in section.blocks if isinstance(block, Table)}


def test_the_analysis_holds_compares_frames(against):
    analysis, compared, _ = against
    for name in ("pairs", "totals", "categories", "kernels"):
        assert_frame_equal(getattr(analysis.baseline, name), getattr(compared, name))


def test_the_sections_totals_are_compares(against):
    _, compared, section = against
    totals = _tables(section)["baseline-totals"]
    shown = [[c.text for c in row] for row in totals.rows]
    expected = [[row["what"], fmt.duration(row["time_a_ns"]), fmt.duration(row["time_b_ns"]),
                 ("+" if row["delta_ns"] > 0 else "") + fmt.duration(row["delta_ns"]), fmt.ratio(row["speedup"])]
                for row in compared.totals.iter_rows(named=True)]
    assert shown == expected
    assert shown[0] == ["kernels", "61.3 ms", "30.2 ms", "-31.0 ms", "2.0×"]     # 61,260,583 / 30,212,278 ns
    sorted_by = [c.sort for c in totals.rows[0][1:]]
    assert sorted_by == [61_260_583, 30_212_278, 30_212_278 - 61_260_583, pytest.approx(61_260_583 / 30_212_278)]


def test_categories_and_kernels_show_every_category_and_the_biggest_changes(against):
    _, compared, section = against
    tables = _tables(section)
    categories = tables["baseline-categories"]
    assert [row[0].text for row in categories.rows] == compared.categories["category"].to_list()
    assert categories.sortable and tables["baseline-kernels"].sortable
    kernels = tables["baseline-kernels"].rows
    assert [row[0].title or row[0].text for row in kernels] == compared.kernels["kernel"].head(len(kernels)).to_list()
    gemm = next(row for row in kernels if row[0].text == "gemm kernels")    # pooled across architectures
    assert [c.text for c in gemm[3:]] == ["23.8 ms", "1.24 ms", "-22.5 ms", "19×"]
    changes = {row[2].text for row in kernels}
    assert "appears (B only)" in changes                  # the A100's elementwise kernels V100 had none of


def test_build_with_a_baseline_writes_the_section(vgg13, tmp_path):
    v100, a100 = vgg13
    html = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["build", str(a100), "--baseline", str(v100), "-o", str(html), "--quiet"])
    assert result.exit_code == 0, result.output
    text = text_of(html.read_text(encoding="utf-8"))
    assert '<section id="baseline"' in html.read_text(encoding="utf-8")
    assert "Against the baseline" in text and "kernels 61.3 ms 30.2 ms -31.0 ms 2.0×" in text


def test_a_baseline_without_logs_stops_before_the_report(vgg13, tmp_path):
    a100 = vgg13[1]
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(cli, ["build", str(a100), "--baseline", str(empty), "-o",
                                      str(tmp_path / "r.html"), "--quiet"])
    assert result.exit_code == 1
    assert result.output == f"roofreport: error: no profiler log found in {empty}: no files\n"
    assert not (tmp_path / "r.html").exists()


def test_an_analysis_given_to_build_report_takes_no_baseline(against, vgg13, tmp_path):
    v100 = vgg13[0]
    with pytest.raises(roofreport.UsageError, match="pass .* and baseline to analyze"):
        roofreport.build_report(against[0], tmp_path / "r.html", baseline=v100)
