"""The interactive HTML (#25): roofline points with their data on hover, runs toggled, kernel
tables sorted; self-contained, and kernel names from logs are text wherever they go.

The browser tests open the page in headless Chromium (they skip, naming the Debian package,
without it; `.ci/run` installs it). A copy of the page gets a probe script at its end that
hovers a point (a `mouseover` as a pointer would send), unticks a run and clicks a heading, then
writes what the page shows into an attribute that `--dump-dom` prints. The logs are our own
sample_logs' V100 folder, copied with one kernel renamed to a script-and-image payload.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

import roofreport
from roofreport.report import fmt
from roofreport.report.charts.marks import attribute, with_marks
from roofreport.resources import template_dir
from tests.conftest import SAMPLE_LOGS
from tests.test_report_render import chromium

KERNEL = "volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1"     # vgg11's top kernel
PAYLOAD = "</script><img src=x onerror=document.title=2>"     # its own short name: shown whole


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """sample_logs/v100 (vgg11 and resnet18) with vgg11's top kernel named PAYLOAD, its analysis,
    and its report: the HTML (interactive) and the PDF."""
    root = tmp_path_factory.mktemp("interactive")
    logs = root / "v100"
    shutil.copytree(SAMPLE_LOGS / "v100", logs)
    for name in ("ncu-log-vgg11.txt", "report_cuda_gpu_trace.csv"):
        path = logs / "vgg11" / name
        path.write_text(path.read_text(encoding="utf-8").replace(KERNEL, PAYLOAD), encoding="utf-8")
    analysis = roofreport.analyze(logs)
    assert PAYLOAD in analysis.kernel_roofline["short_name"].to_list()
    html = root / "report.html"
    roofreport.build_report(analysis, root / "report.pdf", html=html)
    return analysis, html


class _Elements(HTMLParser):
    """Start tags with their attributes, and the text inside each <script>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def elements(html: str) -> _Elements:
    parsed = _Elements()
    parsed.feed(html)
    return parsed


# -- the page as written ---------------------------------------------------------------------

def test_the_page_has_one_script_and_it_holds_no_data(hostile):
    page = elements(hostile[1].read_text(encoding="utf-8"))
    assert len(page.scripts) == 1
    assert page.scripts[0].strip() == (template_dir() / "interactive.js").read_text(encoding="utf-8").strip()
    assert "{{" not in page.scripts[0] and "{%" not in page.scripts[0]      # Jinja left it as written
    assert not [attrs for tag, attrs in page.tags
                if tag in ("script", "link") and (attrs.get("src") or attrs.get("href"))]


def test_the_payload_is_an_escaped_attribute_of_its_points(hostile):
    html = hostile[1].read_text(encoding="utf-8")
    points = [attrs for tag, attrs in elements(html).tags
              if tag == "g" and "point" in (attrs.get("class") or "").split()]
    assert [p for p in points if p["data-name"] == PAYLOAD], "no roofline point names the renamed kernel"
    assert f'data-name="{attribute(PAYLOAD)}"' in html
    assert "<img src=x" not in html and "</script><img" not in html


def test_the_rooflines_are_inline_in_the_html_and_images_in_the_pdf_page(hostile):
    from roofreport.report.assemble import assemble
    from roofreport.report.render import render_html

    report = assemble(hostile[0])
    static, interactive = render_html(report), render_html(report, interactive=True)
    assert "<script" not in static and "<svg" not in static and "sortable" in static
    assert interactive.count("<svg") == 1 == interactive.count('<figure class="chart interactive"')
    roofline = next(c for s in report.sections for c in s.charts if c.interactive)
    ET.fromstring(roofline.svg)        # still an XML document: the PDF's <img> reads it so


def test_marks_escape_values_and_drop_what_xml_forbids():
    svg = '<svg><g id="c1-pt0">\n</g><g id="c1-pt1"></g><g id="c1-axes"></g></svg>'
    marked = with_marks(svg, "c1", {"pt0": {"data-name": 'a"b<c>&\x00d\x1fe'}, "pt1": {"data-run": "r"}})
    assert '<g id="c1-pt0" data-name="a&#34;b&lt;c&gt;&amp;\ufffdd\ufffde">' in marked
    assert '<g id="c1-pt1" data-run="r">' in marked and '<g id="c1-axes">' in marked
    assert ET.fromstring(marked).find("g").get("data-name") == 'a"b<c>&\ufffdd\ufffde'


# -- the page in a browser -------------------------------------------------------------------

PROBE = """<script>
(function () {
  var NAME = %(name)s, out = {};
  var points = Array.prototype.filter.call(document.querySelectorAll("figure.interactive g.point"),
    function (point) { return point.getAttribute("data-name") === NAME; });
  out.points = points.length;
  var point = points[0], figure = point.closest("figure"), box = point.getBoundingClientRect();
  point.dispatchEvent(new MouseEvent("mouseover", {bubbles: true, clientX: box.left, clientY: box.top}));
  var tip = figure.querySelector(".point-tip");
  out.hidden = tip.hidden;
  out.tip = Array.prototype.map.call(tip.children, function (line) { return line.textContent; });
  var run = point.getAttribute("data-run"), labels = figure.querySelectorAll("fieldset.run-toggles label");
  out.toggles = Array.prototype.map.call(labels, function (label) { return label.textContent; });
  Array.prototype.forEach.call(labels, function (label) {
    if (label.textContent === run) label.querySelector("input").click();
  });
  var marks = figure.querySelectorAll("[data-run]");
  out.off = Array.prototype.map.call(marks, function (mark) {
    return [mark.getAttribute("data-run") === run, mark.classList.contains("off")];
  });
  var table = document.querySelector("table.sortable"), rows = table.tBodies[0].rows;
  table.tHead.rows[0].cells[2].click();
  out.sorted = Array.prototype.map.call(rows, function (row) {
    return [row.cells[0].textContent, row.cells[2].getAttribute("data-sort")];
  });
  table.tHead.rows[0].cells[2].click();
  out.again = Array.prototype.map.call(rows, function (row) {
    return row.cells[2].getAttribute("data-sort");
  });
  out.order = table.tHead.rows[0].cells[2].getAttribute("aria-sort");
  out.title = document.title;
  out.images = document.querySelectorAll("img[onerror], img:not([src^='data:'])").length;
  document.body.setAttribute("data-probe", JSON.stringify(out));
}());
</script>"""


@pytest.fixture(scope="module")
def probed(hostile, tmp_path_factory):
    """What the probe saw in the page (hover, toggle, sort), from Chromium's DOM."""
    html = hostile[1].read_text(encoding="utf-8")
    name = json.dumps(PAYLOAD).replace("</", "<\\/")      # the probe's own script must not end early
    copy = tmp_path_factory.mktemp("probe") / "probe.html"
    copy.write_text(html.replace("</body>", PROBE % {"name": name} + "</body>"), encoding="utf-8")
    done = chromium("--dump-dom", copy.as_uri(), profile=copy.parent / "profile")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Uncaught" not in done.stderr, done.stderr[-2000:]
    body = next((attrs for tag, attrs in elements(done.stdout).tags if tag == "body"), {})
    assert "data-probe" in body, "the probe did not run to its end:\n" + done.stderr[-2000:]
    return json.loads(body["data-probe"])


def labels(analysis) -> dict[str, str]:
    return dict(analysis.runs.select("run", "label").iter_rows())


def test_hovering_a_point_shows_its_kernel_run_and_numbers_from_the_frames(hostile, probed):
    analysis = hostile[0]
    assert probed["points"] >= 1 and probed["hidden"] is False
    name, run, ai, perf, time = probed["tip"]
    assert name == PAYLOAD                                        # as text, not markup
    rows = analysis.kernel_roofline.filter(pl.col("short_name") == PAYLOAD)
    assert run == f"run {labels(analysis)[rows['run'][0]]}" and rows["run"].n_unique() == 1
    expected = {(f"AI {fmt.intensity(r['ai_dram'])}", f"FLOP/s {fmt.rate(r['achieved_flops_per_s'])}",
                 f"time {fmt.duration(r['time_ns'])}") for r in rows.iter_rows(named=True)}
    assert (ai, perf, time) in expected


def test_the_payload_ran_nowhere(probed):
    assert probed["title"] == "GPU performance report: v100"      # neither script of the payload ran
    assert probed["images"] == 0                                   # every image is a chart's data: URI


def test_unticking_a_run_hides_its_marks_and_only_its_marks(hostile, probed):
    names = labels(hostile[0])
    assert sorted(probed["toggles"]) == sorted(names[run] for run in ("vgg11", "resnet18"))
    assert probed["off"] and all(mine == off for mine, off in probed["off"])
    assert any(mine for mine, _ in probed["off"]) and not all(mine for mine, _ in probed["off"])


def test_a_kernel_table_sorts_by_its_values_with_the_rest_and_total_last(probed):
    rows = probed["sorted"]
    assert [name for name, _ in rows[-2:]] == ["other kernels", "GPU time (kernels + copies)"]
    values = [float(value) for _, value in rows[:-2] if value is not None]
    assert len(values) >= 3 and values == sorted(values, reverse=True)
    keys = [value for _, value in rows[:-2]]
    assert None not in keys[:len(values)]                          # blank cells after the values
    again = [float(value) for value in probed["again"][:-2] if value is not None]
    assert again == sorted(values) and probed["order"] == "ascending"
