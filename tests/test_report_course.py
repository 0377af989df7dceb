"""The reports of the real course folders (../shared/corpus/course), checked as a TA reads them:
short enough to hand out (the two biggest folders in at most 30 pages), every file and every
copy accounted for in the appendix, every body section with something to show, runs named by
their labels and GPUs by theirs (never by paths), no "None" or "nan", cuFFT kernels not counted
as convolution, and a single nvidia-smi reading not read as a time series.

Each folder is read, analysed and assembled once (module fixture); the two big ones are also
laid out as PDF pages by WeasyPrint.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl
import pytest

import roofreport
from roofreport.report.assemble import assemble
from roofreport.report.context import Chart, Report, Table
from roofreport.report.render import render_html
from roofreport.report.sections.inputs import display_root, relative
from tests.conftest import CORPUS, corpus_path
from tests.test_report import chart_svgs, svg_texts
from tests.test_report_render import text_of

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

BIG = ("pramitmallick-examples", "srinidhigoud-examples")
MAX_PAGES = 30


def course_folders() -> list[str]:
    course = CORPUS / "course"
    return sorted(p.name for p in course.iterdir() if p.is_dir()) if course.is_dir() else list(BIG)


@dataclass
class Built:
    analysis: object
    report: Report
    html: str

    @property
    def body_html(self) -> str:
        return self.html[:self.html.index('class="section appendix first-appendix"')]

    def section(self, section_id: str):
        return self.report.section(section_id)


@pytest.fixture(scope="module")
def built() -> dict[str, Built]:
    corpus_path("course")
    out = {}
    for folder in course_folders():
        analysis = roofreport.analyze(roofreport.read(corpus_path("course", folder)))
        report = assemble(analysis)
        out[folder] = Built(analysis, report, render_html(report))
    return out


def tables(section) -> list[Table]:
    return [b for b in section.blocks if isinstance(b, Table)]


# -- length ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("folder", BIG)
def test_the_biggest_course_folders_fit_in_30_pages(built, folder):
    import weasyprint

    from roofreport.report.render import offline_fetcher

    document = weasyprint.HTML(string=built[folder].html, base_url=None, url_fetcher=offline_fetcher()).render()
    assert len(document.pages) <= MAX_PAGES, f"{folder}: {len(document.pages)} pages"
    assert len(document.pages) >= 8          # and still the whole report, not a stub


# -- nothing read is lost ---------------------------------------------------------------------------

def _listed_files(section) -> set[str]:
    """The paths the inputs appendix lists: a folder row, then the names of its files."""
    paths, folder = set(), ""
    for table in tables(section):
        if table.columns[0].label != "File" or len(table.columns) < 2:
            continue
        for row in table.rows:
            if row[0].css == "folder":
                folder = "" if row[0].text == "./" else row[0].text
            elif table.columns[1].label in ("Format and version", "Why"):
                assert row[0].title is None, f"{row[0].text}: a file name is never cut"
                paths.add(folder + row[0].text)
    return paths


@pytest.mark.parametrize("folder", course_folders())
def test_every_file_found_is_listed_in_the_appendix(built, folder):
    b = built[folder]
    files = b.analysis.files
    root = display_root([f.path for f in files])
    assert _listed_files(b.section("inputs")) == {relative(f.path, root) for f in files}
    assert b.section("inputs").appendix
    failed = [f for f in files if f.error and f.status != "skipped"]
    if failed:
        text = text_of(b.html)
        assert "Files that failed" in text
        for f in failed:       # each failure with its message (file:line:column when the parser gave them)
            assert f.error.splitlines()[0].replace(root.rstrip("/") + "/", "") in text


@pytest.mark.parametrize("folder", course_folders())
def test_every_copy_and_every_run_the_body_cannot_use_is_in_the_appendix(built, folder):
    b = built[folder]
    names = {r["run"]: r["label"] for r in b.analysis.dataset.tables["runs"].iter_rows(named=True)}
    left_out = b.section("left-out")
    assert left_out.appendix
    text = text_of(b.html[b.html.index('<section id="left-out"'):])
    for copy in b.analysis.duplicates.iter_rows(named=True):
        assert names[copy["run"]] in text and names[copy["duplicate_of"]] in text
        for path in copy["files"] or []:
            assert path.rsplit("/", 1)[-1] in text
    # Runs without kernels, kernel time or GPU: each named once, with what is missing and why.
    totals = b.analysis.runs.select("run", "kernel_time_ns")
    body = b.analysis.tables["runs"].select("run", "gpu_evidence", "device_kind").join(totals, on="run", how="left")
    unnamed = pl.col("gpu_evidence").is_null() & (pl.col("device_kind").fill_null("") != "cpu")   # nothing named the GPU
    lacking = body.filter(pl.col("kernel_time_ns").is_null() | unnamed)["run"].to_list()
    gap_rows = [row for t in tables(left_out) if t.css == "gaps" for row in t.rows]
    listed = [label for row in gap_rows for label in row[3].text.split("; ")]
    assert sorted(listed) == sorted(names[run] for run in lacking)
    assert all(row[1].text for row in gap_rows), "every gap says why"
    assert f"{len(lacking)} run" in text or not lacking


def test_each_run_s_top_kernels_keep_the_rest_as_other(built):
    b = built["pramitmallick-examples"]
    share = b.section("share")
    kernel_tables = [t for t in tables(share) if t.css == "kernels"]
    runs_with_kernels = set(b.analysis.top["run"].to_list())
    assert sum(len(t.columns) - 2 for t in kernel_tables) == len(runs_with_kernels)   # a column per run
    top_n = b.analysis.settings.top
    for t in kernel_tables:
        labels = [row[0].text for row in t.rows]
        assert labels[-2:] == ["other kernels", "GPU time (all kernels)"]
        for col in range(2, len(t.columns)):
            shown = [row[col].text for row in t.rows[:-2] if row[col].text]
            assert 1 <= len(shown) <= top_n


# -- what the body shows ------------------------------------------------------------------------------

@pytest.mark.parametrize("folder", course_folders())
def test_every_body_section_has_something_to_show(built, folder):
    b = built[folder]
    assert b.report.findings
    body = [s for s in b.report.sections if not s.appendix]
    assert body[0].id == "overview"
    for section in body:
        assert not section.empty, section.id
        shown = [blk for blk in section.blocks if isinstance(blk, (Table, Chart))]
        assert shown, f"{folder}: section {section.id} has no table or chart"
        assert all(t.rows for t in shown if isinstance(t, Table)), f"{folder}: an empty table in {section.id}"
    assert 'class="note empty"' not in b.html


@pytest.mark.parametrize("folder", course_folders())
def test_no_none_nan_or_zero_phase_in_any_report(built, folder):
    b = built[folder]
    text = text_of(b.html)
    assert not re.search(r"\bNone\b", text), re.search(r".{60}\bNone\b.{60}", text)
    assert not re.search(r"\bnan\b", text, re.I), re.search(r".{60}\bnan\b.{60}", text, re.I)
    for svg in chart_svgs(b.html).values():
        for label in svg_texts(svg):
            assert not re.search(r"\bNone\b|\bnan\b", label), label
    if "regions" in [s.id for s in b.report.sections]:
        phases = [t for t in tables(b.section("regions")) if t.css == "phases"]
        assert not [c.text for t in phases for row in t.rows for c in row[1:] if c.text.startswith("0.0")]


@pytest.mark.parametrize("folder", course_folders())
def test_runs_and_gpus_are_named_by_their_labels_never_by_paths(built, folder):
    b = built[folder]
    runs = b.analysis.dataset.tables["runs"]
    # A file's path may equal its run's id: the findings that name failed files are about files.
    files_sentence = re.compile(r"\d+ files? could not be read completely[^•]*?\.(?= [A-Z\d]|$)")
    body = files_sentence.sub("", text_of(b.body_html))
    charts = "\n".join(t for svg in chart_svgs(b.body_html).values() for t in svg_texts(svg))
    for r in runs.filter(pl.col("duplicate_of").is_null()).iter_rows(named=True):
        if "/" in r["run"]:
            assert r["run"] not in body and r["run"] not in charts, r["run"]
        if r["gpu_model"] and r["gpu_label"] and r["gpu_model"] not in r["gpu_label"]:
            assert not re.search(rf"(?<![\w-]){re.escape(r['gpu_model'])}(?![\w-])", body), r["gpu_model"]
    shown = [r["label"] for r in runs.filter(pl.col("duplicate_of").is_null()).iter_rows(named=True)
             if r["label"] in body]
    assert shown, "the body names its runs by their labels"


# -- labels that were wrong ---------------------------------------------------------------------------

def test_cufft_kernels_are_fft_not_convolution(built):
    """fluidsGL (a fluid solver) spends its time in cuFFT; a CNN's cuDNN FFT convolution stays conv."""
    b = built["PranavDani-Flame"]
    kernels = b.analysis.tables["kernels"]
    fft = kernels.filter(pl.col("name").str.contains("^(regular_fft|vector_fft_r2c|vector_fft_c2r)$"))
    assert fft.height and set(fft["category"].to_list()) == {"fft"}
    fluids = [r for r in b.analysis.dataset.tables["runs"].iter_rows(named=True) if r["run"].endswith("fluidsGL")][0]
    share = b.analysis.share.filter(pl.col("run") == fluids["run"])
    assert "conv" not in share["category"].to_list()
    assert share.filter(pl.col("category") == "fft")["share"].sum() > 0.2
    cnn = built["pramitmallick-examples"].analysis.tables["kernels"]
    dse = cnn.filter(pl.col("name").str.contains("DSE::|fft2d_r2c"))
    assert dse.height and set(dse["category"].to_list()) == {"conv"}


def test_a_single_nvidia_smi_reading_is_a_snapshot_not_a_series(built):
    b = built["srikarym-hpml"]
    stats = b.analysis.utilization
    assert stats.height and (stats["samples"] == 1).all()
    text = text_of(b.html)
    assert "waited for the host" not in text and "busy only" not in text
    section = b.section("utilization")
    assert not [blk for blk in section.blocks if isinstance(blk, Chart)]
    snapshot = [t for t in tables(section) if t.caption and t.caption.startswith("One reading per GPU")]
    assert snapshot and len(snapshot[0].rows) == stats.height
    findings = " ".join(p.text for p in b.report.findings)
    assert "snapshot" in findings
