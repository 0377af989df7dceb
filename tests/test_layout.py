"""Pages a TA hands out as is (issue #32): the printed report of sample_logs/ and of course
folders, measured on the PDF and on WeasyPrint's layout tree (tests/layout.py).

* no character outside the content box (the page width less the @page side margins);
* no page under a quarter full but the last (the running header and footer not counted);
* no text under 6 pt as printed: chart text is measured after the figure was scaled onto the page;
* no table split leaving fewer than 3 rows on a page, no table of under 8 rows split at all;
* no heading (or table caption) alone at a page's foot.

Each folder is read, analysed and laid out once per session (`laid_out`). The course folders are
those of `LAYOUT_FOLDERS` (four of the eight: a course folder costs 15-40 s to lay out); set
ROOFREPORT_LAYOUT_FOLDERS=all to check every visible course folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import CORPUS, SAMPLE_LOGS, corpus_path
from tests.layout import (
    Layout,
    PageText,
    chart_svgs,
    chart_text,
    layout,
    marker_ids,
    outside_content_box,
    pdf_pages,
    series,
    words,
)

pytestmark = [pytest.mark.slow]

LAYOUT_FOLDERS = ("Anoushka21-Cloud-and-MachineLearning", "pramitmallick-examples", "pranshu777-imagenet")
MIN_FILL = 0.25
MIN_POINT_SIZE = 6.0
MIN_ROWS_EACH_SIDE = 3
NEVER_SPLIT_BELOW = 8


def folders() -> list[str]:
    if os.environ.get("ROOFREPORT_LAYOUT_FOLDERS") == "all" and (CORPUS / "course").is_dir():
        course = sorted(p.name for p in (CORPUS / "course").iterdir() if p.is_dir())
    else:
        course = list(LAYOUT_FOLDERS)
    return ["sample_logs", *course]


@dataclass
class Printed:
    pages: list[PageText]
    layout: Layout
    static_html: str             # the page the PDF is made from
    interactive_html: str
    report: object


_BUILT: dict[str, Printed] = {}


def _path(folder: str) -> Path:
    return SAMPLE_LOGS if folder == "sample_logs" else corpus_path("course", folder)


@pytest.fixture(params=folders())
def printed(request) -> tuple[str, Printed]:
    """The folder's report, laid out once per session: its PDF pages and its layout tree."""
    import weasyprint

    import roofreport
    from roofreport.report.assemble import assemble
    from roofreport.report.render import offline_fetcher, render_html

    folder = request.param
    if folder not in _BUILT:
        report = assemble(roofreport.analyze(roofreport.read(_path(folder))))
        static = render_html(report)
        document = weasyprint.HTML(string=static, base_url=None, url_fetcher=offline_fetcher()).render()
        _BUILT[folder] = Printed(pdf_pages(document.write_pdf()), layout(document), static,
                                 render_html(report, True), report)
    return folder, _BUILT[folder]


def test_no_character_outside_the_content_box(printed):
    folder, built = printed
    faults = [f"p{page.number}: {words(out)!r}" for page in built.pages if (out := outside_content_box(page))]
    assert not faults, f"{folder}: text in the margin: {faults}"


def test_fixed_column_widths_add_up_to_the_page_at_most(printed):
    """A table that gives its column widths lays out fixed: past 100 % it runs into the margin
    (the MFU table's added up to 107 %, the inputs summary's to 101 % by rounding)."""
    from roofreport.report.context import Table

    folder, built = printed
    faults = [(section.id, block.caption, total) for section in built.report.sections for block in section.blocks
              if isinstance(block, Table) and block.fixed
              and (total := sum(float(c.width.rstrip("%")) for c in block.columns)) > 100.05]
    assert not faults, f"{folder}: {faults}"


def test_no_page_under_a_quarter_full_but_the_last(printed):
    folder, built = printed
    faults = [f"p{page.number} {page.fill:.0%}" for page in built.pages[:-1] if page.fill < MIN_FILL]
    assert not faults, f"{folder}: near-empty pages: {faults}"


def test_no_text_under_6_pt_as_printed(printed):
    """Set text from the PDF (its printed size); chart text from the SVG's font sizes times the
    scale the page prints the figure at (rotated axis labels included)."""
    folder, built = printed
    faults = [f"p{page.number}: {min(c['size'] for c in small):.1f} pt {words(small)!r}"
              for page in built.pages
              if (small := [c for c in page.chars if c["upright"] and c["size"] < MIN_POINT_SIZE - 0.05])]
    faults += [f"chart {chart_id}: {size:.1f} pt" for chart_id, svg in chart_svgs(built.static_html)
               if (size := chart_text(svg)) < MIN_POINT_SIZE - 0.05]
    assert not faults, f"{folder}: small print: {faults}"


def test_rooflines_plot_at_most_12_runs_and_their_legend_uses_the_plot_markers(printed):
    folder, built = printed
    rooflines = [(chart_id, svg) for chart_id, svg in chart_svgs(built.interactive_html) if chart_id.startswith("roof")]
    for chart_id, svg in rooflines:
        assert len(series(svg)) <= 12, f"{folder} {chart_id}: {len(series(svg))} series"
        plotted, legend = marker_ids(svg)
        assert legend and legend <= plotted, f"{folder} {chart_id}: legend markers {legend - plotted} not plotted"


def test_tables_split_leave_3_rows_on_each_page_and_short_ones_never_split(printed):
    folder, built = printed
    faults = []
    for table in built.layout.tables:
        if len(table.rows_per_page) < 2:
            continue
        if table.rows < NEVER_SPLIT_BELOW:
            faults.append(f"{table.name[:40]!r} ({table.rows} rows) split: {table.rows_per_page}")
        elif min(table.rows_per_page.values()) < MIN_ROWS_EACH_SIDE:
            faults.append(f"{table.name[:40]!r} split {table.rows_per_page}")
    assert not faults, f"{folder}: {faults}"


def test_no_heading_alone_at_a_page_foot(printed):
    folder, built = printed
    assert not built.layout.headings_at_foot, f"{folder}: {built.layout.headings_at_foot}"


# -- 40 micro-benchmark runs on one GPU (tests/data/gtx1080_micro, our own nvprof logs) ------------

MICRO = Path(__file__).resolve().parent / "data" / "gtx1080_micro"


def test_the_gtx1080_micro_benchmarks_read_as_40_runs_on_one_gpu_in_rooflines_of_at_most_10():
    import roofreport
    from roofreport.report.assemble import assemble
    from roofreport.report.render import render_html

    analysis = roofreport.analyze(roofreport.read(MICRO))
    runs = analysis.tables["runs"]
    assert runs.height == 40 and runs["gpu_label"].unique().to_list() == ["GTX 1080"]
    assert not [file for file in analysis.files if file.status != "ok"]
    html = render_html(assemble(analysis), True)
    rooflines = [svg for chart_id, svg in chart_svgs(html) if chart_id.startswith("roof")]
    assert all(len(series(svg)) <= 10 for svg in rooflines)
    assert sum(len(series(svg)) for svg in rooflines) == 40          # every run, once
