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
import re
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
    page_margins,
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


MICRO = Path(__file__).resolve().parent / "data" / "gtx1080_micro"


def folders() -> list[str]:
    if os.environ.get("ROOFREPORT_LAYOUT_FOLDERS") == "all" and (CORPUS / "course").is_dir():
        course = sorted(p.name for p in (CORPUS / "course").iterdir() if p.is_dir())
    else:
        course = list(LAYOUT_FOLDERS)
    return ["sample_logs", MICRO.name, *course]


@dataclass
class Printed:
    pages: list[PageText]
    layout: Layout
    static_html: str             # the page the PDF is made from
    interactive_html: str
    report: object
    analysis: object


_BUILT: dict[str, Printed] = {}


def _path(folder: str) -> Path:
    if folder == MICRO.name:
        return MICRO
    return SAMPLE_LOGS if folder == "sample_logs" else corpus_path("course", folder)


def _printed(folder: str) -> Printed:
    """The folder's report, laid out once per session: its PDF pages and its layout tree."""
    import weasyprint

    import roofreport
    from roofreport.report.assemble import assemble
    from roofreport.report.render import offline_fetcher, render_html

    if folder not in _BUILT:
        analysis = roofreport.analyze(roofreport.read(_path(folder)))
        report = assemble(analysis)
        static = render_html(report)
        document = weasyprint.HTML(string=static, base_url=None, url_fetcher=offline_fetcher()).render()
        _BUILT[folder] = Printed(pdf_pages(document.write_pdf()), layout(document), static,
                                 render_html(report, True), report, analysis)
    return _BUILT[folder]


@pytest.fixture(params=folders())
def printed(request) -> tuple[str, Printed]:
    return request.param, _printed(request.param)


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


def test_a_table_that_runs_onto_another_page_says_so_in_that_pages_running_head(printed):
    """The repeated head gives the table's title and column headings; the running head of each
    page it runs onto names it "(continued)", and no other page's does."""
    folder, built = printed
    top = page_margins()[0]
    heads = {page.number: "".join(c["text"] for c in page.chars if c["top"] < top).replace(" ", "")
             for page in built.pages}
    continued = {}
    for table in built.layout.tables:
        for number in sorted(table.rows_per_page)[1:]:
            continued.setdefault(number, []).append(table.name)
    for number, head in heads.items():
        if number in continued:
            assert "(continued)" in head, f"{folder} p{number}: {continued[number]} runs on; the head says {head!r}"
            # (a table without a caption is "table (continued)" under its section's name)
            names = [name.replace(" ", "")[:24] if not name.startswith("table on p") else "table(continued)"
                     for name in continued[number]]
            assert any(name in head for name in names), (folder, number, head)
        else:
            assert "(continued)" not in head, f"{folder} p{number}: {head!r} but no table runs onto it"


def test_every_run_label_and_top_kernel_is_in_the_pdf_or_the_html(printed):
    """No page goal met by dropping content: each run's label (copies included) and each of its
    top kernels (the analysis' list, as the input gives them) is printed or in the HTML report."""
    import html as html_text

    folder, built = printed
    pdf_text = "".join(c["text"] for page in built.pages for c in page.chars).replace(" ", "")
    pages = html_text.unescape(built.static_html + built.interactive_html)

    def shown(text: str) -> bool:
        return text in pages or text.replace(" ", "") in pdf_text

    runs = built.analysis.dataset.tables["runs"]
    assert not [label for label in runs["label"].to_list() if not shown(label)], folder
    kernels = set(built.analysis.top["short_name"].drop_nulls().to_list())
    assert kernels or not built.analysis.top.height
    assert not sorted(name for name in kernels if not shown(name)), folder


# -- 40 micro-benchmark runs on one GPU (tests/data/gtx1080_micro, our own nvprof logs) ------------

def test_the_gtx1080_micro_benchmarks_print_in_10_pages_at_most_their_runs_table_once():
    """40 runs of 2 programs (a conv2d sweep of kernel size × stride × size; a GPP kernel built
    with and without FMA at 6 sizes): at most 10 pages, one printed table of the runs' totals, and
    their top kernels in one table per set of runs of the same kernels, not one per run."""
    from roofreport.report.context import Table

    built = _printed(MICRO.name)
    assert len(built.pages) <= 10
    tables = [block for section in built.report.sections for block in section.blocks
              if isinstance(block, Table) and block.media != "screen"]
    totals = [t for t in tables if {"Achieved", "Kernel time"} & {c.label for c in t.columns}]
    assert len(totals) == 1 and len(totals[0].rows) >= 40
    kernels = [t for t in tables if "kernels" in t.css]
    assert sorted(len(t.rows) for t in kernels) == [12, 28]
    # the two varying parameters of the GPP runs (build, size) and the three of the conv2d sweep
    # are columns, not headings of a table each
    assert sorted(tuple(c.label for c in t.columns[:3]) for t in kernels) == [
        ("Program", "Arguments", "[CUDA memcpy DtoH]"), ("kernel_size", "size", "stride")]


def test_the_gtx1080_micro_benchmarks_read_as_40_runs_on_one_gpu_in_rooflines_of_at_most_10():
    built = _printed(MICRO.name)
    analysis, html = built.analysis, built.interactive_html
    runs = analysis.tables["runs"]
    assert runs.height == 40 and runs["gpu_label"].unique().to_list() == ["GTX 1080"]
    assert not [file for file in analysis.files if file.status != "ok"]
    rooflines = [svg for chart_id, svg in chart_svgs(html) if chart_id.startswith("roof")]
    assert all(len(series(svg)) <= 10 for svg in rooflines)
    # the conv2d runs differ in size within kernel size × stride: one series each, sized by input
    # size; every run's total is still its own point, named by its series and its size on hover
    totals = [dict(re.findall(r'(data-[a-z]+)="([^"]*)"', mark)) for svg in rooflines
              for mark in re.findall(r'<g [^>]*data-name="run total[^"]*"[^>]*>', svg)]
    totals = [t for t in totals if "L2" not in t["data-name"] and "L1" not in t["data-name"]]
    assert len({(t["data-run"], t.get("data-input")) for t in totals}) == len(totals) == 40
    sized = [t for t in totals if "data-input" in t]
    assert sorted({t["data-run"] for t in sized}) == [
        f"conv2d.py · kernel_size {k} · stride {s}" for k in (3, 5) for s in (1, 2)]
    assert sorted({t["data-input"] for t in sized}) == sorted(f"size {n:,}" for n in (64, 128, 256, 512, 1024, 2048, 4096))
    assert len(rooflines) == 2             # 4 + 6 series, then 6: 40 runs in 16 series, not 40


# -- the HTML's top-kernel tables (issue #32: long labels are row headings, never column headings)

LONGEST_RUN_HEADING = 40      # three lines of a narrow run column; the old HTML had 67-character ones


def _kernel_tables(page: str) -> list[tuple[list[str], list[list[str]]]]:
    """(column headings, rows of cell texts) of each top-kernel table of a page (class
    `data kernels`, not the tables of runs alike or alone: those name runs in rows already)."""
    import html as html_text
    import re

    def text(fragment: str) -> str:
        return html_text.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()

    out = []
    for match in re.finditer(r'<table class="data kernels([^"]*)">(.*?)</table>', page, re.S):
        if {"alike", "alone"} & set(match.group(1).split()):
            continue
        head, _, body = match.group(2).partition("</thead>")
        headings = [text(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S)]
        rows = [[text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
                for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]
        out.append((headings, rows))
    return out


def test_the_html_names_runs_by_long_labels_in_row_headings_never_column_headings(printed):
    folder, built = printed
    # the top-kernel tables (the rooflines' kernel table, a row per kernel of a run, is another)
    tables = [(h, rows) for h, rows in _kernel_tables(built.interactive_html) if h[:2] == ["Kernel", "Category"]]
    assert tables or folder != "pramitmallick-examples"      # whose run labels were 67-character headings
    for headings, rows in tables:
        long = [h for h in headings[2:] if len(h) > LONGEST_RUN_HEADING]
        assert not long, (folder, long)
        if headings[2:] == ["Share"] and any(len(row) == 1 for row in rows):
            # runs one under the other: a row naming each run, then its kernels, rest and total
            assert rows[0][0] and len(rows[0]) == 1
            assert sum(row[0] == "GPU time (kernels + copies)" for row in rows) == sum(len(r) == 1 for r in rows)
