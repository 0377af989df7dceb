"""The report layer on its own: number spelling, charts (deterministic, escaped), the page built
from a small synthetic dataset whose names are hostile, empty sections, the offline fetcher.

Real-log end-to-end reports are in test_report_render.py.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import polars as pl
import pytest

from roofreport import build_report, gpu
from roofreport.errors import LogWarning
from roofreport.pipeline.dataset import Dataset, FileOutcome
from roofreport.report import fmt
from roofreport.report.context import Paragraph, Span, ticks
from roofreport.tables import schema

EVIL = "<script>alert(1)</script>&"


# -- numbers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value, unit, text", [
    (1.234e12, "FLOP/s", "1.23 TFLOP/s"), (19.5e12, "FLOP/s", "19.5 TFLOP/s"), (9.79e9, "B", "9.79 GB"),
    (1555e9, "B/s", "1.56 TB/s"), (512.0, "B", "512 B"), (0.0, "FLOP", "0 FLOP"), (None, "B", "–"),
    (float("nan"), "B", "–"), (float("inf"), "B", "–"),
])
def test_si_prefixes(value, unit, text):
    assert fmt.si(value, unit) == text


def test_durations_percentages_ratios():
    assert fmt.duration(21_050_000.0) == "21.1 ms"
    assert fmt.duration(841_000.0) == "841 µs"
    assert fmt.duration(4.5e9) == "4.50 s"
    assert fmt.duration(None) == "–"
    assert fmt.share(0.4467) == "44.7 %"
    assert fmt.percent(8.8) == "8.8 %"
    assert fmt.ratio(18.83) == "19×" and fmt.ratio(45.8) == "46×"
    assert fmt.intensity(12.5) == "12.5 FLOP/B"
    assert fmt.seconds(185.0) == "3.1 min"


def test_backticks_mark_code_only_in_author_text():
    assert ticks("log with `nvidia-smi -l 1` here") == [Span("log with "), Span("nvidia-smi -l 1", code=True),
                                                        Span(" here")]
    # Log text goes through Paragraph.of / Span and keeps its backticks as text.
    assert Paragraph.of("a `b` c").spans == [Span("a `b` c")]


# -- charts ----------------------------------------------------------------------------------

def svg_texts(svg: str) -> list[str]:
    """The text of every <text> element of a chart, unescaped."""
    return [html.unescape(t) for t in re.findall(r"<text\b[^>]*>([^<]*)</text>", svg)]


def _roofline_svg(label: str) -> str:
    from roofreport.model.roofline import ceilings
    from roofreport.report.charts.roofline import RoofPoint, roofline_svg

    spec = gpu.match("A100-SXM4-40GB")
    points = [RoofPoint(label, label, 1.2, 5.6e11, "fp32"),
              RoofPoint(label, label + "_kernel", 30.0, 5e12, "fp32", kernel=True),
              RoofPoint("other $x$ run", "k", 0.2, 4e11, "fp32", kernel=True, above_roof=True)]
    return roofline_svg("roof1", ceilings(spec), points)


def test_roofline_svg_is_deterministic_escaped_and_prefixed():
    first, second = _roofline_svg(EVIL), _roofline_svg(EVIL)
    assert first == second
    assert first.startswith("<svg") and "<?xml" not in first and "<metadata" not in first
    assert "<script" not in first.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&amp;" in first      # the legend label, escaped
    assert EVIL in svg_texts(first)
    ids = re.findall(r'\bid="([^"]+)"', first)
    assert ids and all(i.startswith("roof1-") for i in ids)
    refs = re.findall(r'(?:url\(#|href="#)([^")]+)', first)
    assert refs and all(r.startswith("roof1-") for r in refs) and set(refs) <= set(ids)
    # Ceilings are labelled with their values; the two 312 TFLOP/s tensor roofs share one line.
    texts = svg_texts(first)
    for text in ("FP32 19.5 TFLOP/s", "DRAM 1.56 TB/s", "Arithmetic intensity (FLOP/byte)", "Performance (FLOP/s)"):
        assert text in texts, text
    assert "Tensor FP16 / Tensor BF16 312 TFLOP/s" in texts


def _drawn_elements(svg: str) -> list:
    """Every element but the groups, in document order, with its attributes (a rotation by 0
    left out) and the transforms, clips and styles of the groups around it."""
    import xml.etree.ElementTree as ET

    out = []

    def walk(node, around):
        for child in node:
            attrs = dict(child.attrib)
            if attrs.get("transform", "").startswith("rotate(-0 "):
                del attrs["transform"]
            if child.tag.endswith("}g"):
                walk(child, around + tuple(sorted((k, v) for k, v in attrs.items() if k != "id")))
            else:
                out.append((child.tag, tuple(sorted(attrs.items())), (child.text or "").strip(), around))
                walk(child, around)
    walk(ET.fromstring(svg), ())
    return out


def test_charts_drop_only_groups_that_change_no_drawing(monkeypatch):
    """Issue 32 (rendering speed): matplotlib's wrapping groups (its own ids, or none) leave the
    SVG, halving what WeasyPrint visits; every drawn element, its attributes, the transforms,
    clips and styles around it, and a chart's own gids (the roofline's marks) stay."""
    from roofreport.report.charts import svg as charts
    from roofreport.report.charts.share import share_bars_svg
    from roofreport.report.charts.sweep import SweepSeries, time_sweep_svg

    drawings = [
        lambda: time_sweep_svg("tsweep1", "batch_size", None, "Time per iteration",
                               [SweepSeries("alexnet", "K80", [4, 8, 16, 32], [1e8, 1.5e8, 3e8, 9e8], [40, 50, 55, 35]),
                                SweepSeries("vgg16", "P40", [4, 8, 16, 32], [2e7, 3e7, 5e7, 1e8], [200, 260, 320, 320])]),
        lambda: share_bars_svg("share1", ["alexnet · K80", "bs 4", EVIL], [None, {"conv": 0.6, "gemm": 0.4},
                                                                           {"conv": 0.2, "gemm": 0.7}], ["conv", "gemm"]),
        lambda: _roofline_svg(EVIL),
    ]
    for draw in drawings:
        flat = draw()
        monkeypatch.setattr(charts, "without_bare_groups", lambda svg: svg)
        full = draw()
        monkeypatch.undo()
        assert _drawn_elements(flat) == _drawn_elements(full)
        assert flat.count("<g") < full.count("<g") / 2 and 'rotate(-0 ' not in flat and 'rotate(-0 ' in full
        kept = re.findall(r"<g\b[^>]*>", flat)
        assert kept and not [t for t in kept if re.fullmatch(r'<g(?: id="(?!\w+-legend_)[\w.-]+_\d+")?>', t)]
    roofline = _roofline_svg(EVIL)
    assert re.search(r'<g id="roof1-pt0"', roofline)         # the marks' groups stay, and the legend's
    assert re.search(r'<g id="roof1-legend_1">', roofline)
    # (before the ids get the chart's prefix, as in to_svg) An empty group of matplotlib's own
    # (a tick of length 0) goes too; an empty one of the chart's own or with a clip stays.
    assert charts.without_bare_groups('<g id="line2d_1"><g><use x="1"/></g><g id="pt3"><path/></g>'
                                      '<g clip-path="url(#c)"><g id="text_2"/></g><g id="pt4"/>'
                                      '<g clip-path="url(#d)"/><g/></g>') == \
        '<use x="1"/><g id="pt3"><path/></g><g clip-path="url(#c)"></g><g id="pt4"/><g clip-path="url(#d)"/>'
    from roofreport.report.charts.share import share_bars_svg

    bars = share_bars_svg("share1", [f"bs {n}" for n in range(12)], [{"conv": 0.5, "gemm": 0.5}] * 12, ["conv", "gemm"])
    assert not re.search(r'<g id="[^"]*"/>', bars)        # its y ticks have length 0: nothing drawn, nothing written


def test_chart_labels_are_not_mathtext_and_are_shortened():
    from roofreport.report.charts import svg as charts

    assert charts.label("a $x$ b") == r"a \$x\$ b"
    assert len(charts.label("k" * 200, 48)) == 48 and charts.label("k" * 200, 48).endswith("…")


def test_a_chart_that_cannot_be_drawn_leaves_a_note():
    from roofreport.report.context import Chart, chart

    def broken(chart_id, values):
        raise ValueError(f"cannot plot {values}")

    block = chart("roof9", "Roofline of X", broken, [float("nan")])
    assert isinstance(block, Paragraph) and block.level == "problem"
    assert block.text == "Roofline of X: the chart could not be drawn (ValueError: cannot plot [nan])."
    assert isinstance(chart("roof9", "ok", lambda chart_id: "<svg/>"), Chart)


def _page_report(blocks):
    from roofreport.report.context import Report, Section

    return Report("Title", "subtitle", "0", [], [Section("sec", "Section", blocks=blocks)])


def test_the_pdf_page_leaves_out_and_never_draws_what_only_the_html_shows():
    """Issue 32 (rendering speed): the PDF's page carries no screen-only block (WeasyPrint parsed
    and styled them to hide them) and a screen-only chart is drawn only for the HTML, once."""
    from roofreport.report.context import Heading, chart
    from roofreport.report.render import render_html

    calls = []

    def draw(chart_id, value):
        calls.append(chart_id)
        return f'<svg width="{value}pt" height="20pt"><text>{chart_id} drawn</text></svg>'

    words = Paragraph.of("only the HTML says this")
    words.media = "screen"
    report = _page_report([chart("both1", "on both pages", draw, 30), Heading("HTML heading", media="screen"),
                           words, chart("html1", "on the HTML only", draw, 40, media="screen")])
    assert calls == ["both1"]                           # assembled: the HTML's own chart not drawn yet
    static = render_html(report)
    assert calls == ["both1"]
    assert 'id="both1"' in static and "on both pages" in static
    assert "html1" not in static and "HTML heading" not in static and "only the HTML says" not in static
    page = render_html(report, interactive=True)
    assert calls == ["both1", "html1"]
    assert 'id="html1"' in page and "HTML heading" in page and "only the HTML says" in page
    svg = base64.b64decode(re.search(r'id="html1">\s*<img class="chart" src="data:image/svg\+xml;base64,([^"]+)"',
                                     page).group(1)).decode()
    assert "html1 drawn" in svg and 'width="53"' in page      # 40 pt at 96 px per inch
    render_html(report, interactive=True)
    assert calls == ["both1", "html1"]                  # drawn once


def test_a_deferred_chart_that_cannot_be_drawn_leaves_its_note_on_the_page_that_shows_it():
    from roofreport.report.context import Chart, chart
    from roofreport.report.render import render_html

    def broken(chart_id):
        raise ValueError("no points")

    report = _page_report([chart("html1", "Shares", broken, media="screen")])
    assert isinstance(report.sections[0].blocks[0], Chart)
    assert "could not be drawn" not in render_html(report)
    page = render_html(report, interactive=True)
    assert "Shares: the chart could not be drawn (ValueError: no points)." in page
    assert re.search(r'<p class="note problem screen-only">Shares: the chart could not', page)


def test_share_bars_and_sweep_charts_draw_every_label():
    from roofreport.report.charts.share import SweepLine, share_bars_svg, sweep_svg

    svg = share_bars_svg("share1", ["alexnet · K80", "run a", EVIL],
                         [None, {"conv": 0.6, "other": 0.4}, {"gemm": 1.0}], ["conv", "gemm", "other"])
    texts = svg_texts(svg)
    assert "<script" not in svg.lower() and EVIL in texts
    assert {"conv", "gemm", "uncategorized", "run a"} <= set(texts)     # "other" reads as what it is
    assert "alexnet · K80" in texts                                      # a group's heading row
    assert any(t.startswith("Share of the run's steady-state GPU time") for t in texts)
    lines = [SweepLine(gpu, "alexnet", "NCCL kernels", [4, 16, 64], [0.05, 0.12, 0.23], "#332288", True)
             for gpu in ("Tesla K80", "Tesla P40")]
    texts = svg_texts(sweep_svg("sweep1", lines))
    assert {"Tesla K80 · alexnet", "Tesla P40 · alexnet", "NCCL kernels", "Batch size"} <= set(texts)


# -- the page from a synthetic dataset ---------------------------------------------------------

def hostile_dataset() -> Dataset:
    """Two runs on a known GPU whose kernel, run and file names are all HTML."""
    run = f"a100/{EVIL}"
    kernels = pl.DataFrame({
        "run": [run, run, "v100/ok"], "source_file": [f"/logs/{EVIL}.txt"] * 2 + ["/logs/ok.txt"],
        "source_line": [10, 20, 10], "launch_id": [1, 2, 1],
        "name": [f"void {EVIL}<float>(int)", "volta_sgemm_128x64_nn", "volta_sgemm_128x64_nn"],
        "kind": ["launch"] * 3, "count": [1, 1, 1], "duration_ns": [2.0e6, 1.0e6, 1.5e6],
        "flops_fp32": [4.0e9, 2.0e9, 2.0e9], "dram_bytes": [1.0e9, 1.0e8, 1.0e8],
        "flops_complete": [True, True, True], "tensor_active": [False, False, False],
    })
    runs = pl.DataFrame({"run": [run, "v100/ok"], "gpu": ["A100-SXM4-40GB", "Tesla V100-SXM2-16GB"],
                         "gpu_model": [gpu.match("A100-SXM4-40GB").key, gpu.match("Tesla V100-SXM2-16GB").key],
                         "model": ["vgg11", "vgg11"], "tool": ["ncu", "ncu"], "files": [1, 1]})
    tables = {name: schema.empty(name) for name in schema.TABLES}
    tables["kernels"] = schema.conform("kernels", kernels)
    tables["runs"] = schema.conform("runs", runs)
    files = [
        FileOutcome(path=f"/logs/{EVIL}.txt", family="ncu", variant="text 2023+", status="partial",
                    rows={"kernels": 2}, warnings=[LogWarning("ncu.truncated-name", f"name {EVIL} cut", 7)],
                    error=f"/logs/{EVIL}.txt:9:3: bad value {EVIL}", run=run),
        FileOutcome(path="/logs/ok.txt", family="ncu", variant="text 2023+", status="ok", rows={"kernels": 1},
                    run="v100/ok"),
        FileOutcome(path=f"/logs/{EVIL}.py", family=None, variant=None, status="skipped",
                    error="not a profiler log (Python script)"),
    ]
    tables["files"] = schema.empty("files")
    return Dataset(tables=tables, files=files, inputs=[Path("/logs")])


@pytest.fixture(scope="module")
def hostile_html(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("hostile") / "report.html"
    written = build_report(hostile_dataset(), out, title=f"title {EVIL}")
    assert written == [out]
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    return html.replace("<wbr>", "")     # line-break hints inside code spans


def without_own_script(html: str) -> str:
    """The page without its one script, which must be the interactive HTML's own, word for word
    (templates/interactive.js: it reads data- attributes and holds no data of its own)."""
    from roofreport.resources import template_dir

    own = "<script>\n" + (template_dir() / "interactive.js").read_text(encoding="utf-8") + "\n</script>"
    assert html.count("<script") == html.count(own) == 1
    return html.replace(own, "")


def test_hostile_names_are_escaped_everywhere(hostile_html):
    assert "<script" not in without_own_script(hostile_html).lower()
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&amp;"
    # title, run names, file names, warnings and errors all show the text, escaped
    assert hostile_html.count(escaped) >= 6
    assert f"<title>title {escaped}</title>" in hostile_html
    assert "ncu.truncated-name" in hostile_html


def chart_svgs(html: str) -> dict[str, str]:
    """figure id -> the chart's SVG, decoded from its data: URI or (interactive HTML) inline."""
    found = re.findall(r'<figure class="chart[^"]*" id="(\w+)">\s*<img class="chart" src="data:image/svg\+xml;base64,'
                       r'([A-Za-z0-9+/=]+)"', html)
    inline = re.findall(r'<figure class="chart interactive[^"]*" id="(\w+)">\s*<div class="plot">(<svg\b.*?</svg>)',
                        html, re.S)
    return {**{fid: base64.b64decode(data).decode("utf-8") for fid, data in found}, **dict(inline)}


def test_page_is_self_contained(hostile_html):
    assert not re.search(r'<(?:link|script|iframe|object|embed)\b', without_own_script(hostile_html), re.I)
    srcs = re.findall(r'\b(?:src|href)="([^"#][^"]*)"', hostile_html)
    assert srcs and all(s.startswith("data:image/svg+xml;base64,") for s in srcs)
    assert "@page" in hostile_html and "counter(page)" in hostile_html   # print CSS inline


def test_charts_are_images_with_escaped_labels(hostile_html):
    svgs = chart_svgs(hostile_html)
    assert set(svgs) >= {"roof1", "roof2"}
    assert hostile_html.count('<figure class="chart') == len(svgs)
    for svg in svgs.values():
        assert svg.startswith("<svg") and "<script" not in svg.lower() and "<!DOCTYPE" not in svg
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&amp;" in svgs["roof1"] + svgs["roof2"]


def test_sections_without_data_are_left_out_and_the_overview_says_which_log(hostile_html):
    for section in ("findings", "overview", "runs", "rooflines", "share", "inputs", "left-out", "methodology"):
        assert f'id="{section}"' in hostile_html, section
    for section in ("regions", "utilization", "api"):          # nothing to show: not printed empty
        assert f'id="{section}"' not in hostile_html, section
    assert 'class="note empty"' not in hostile_html
    gaps = hostile_html[hostile_html.index("What these logs cannot tell"):hostile_html.index('<section id="runs"')]
    assert "No nvidia-smi samples" in gaps
    assert "<code>nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu" in gaps
    assert "No CUDA API calls" in gaps and "No regions" in gaps
    # The roofline has data here: one chart per GPU.
    assert 'id="roof1"' in hostile_html and 'id="roof2"' in hostile_html


def test_findings_and_inputs_report_what_happened(hostile_html):
    assert "could not be read" in hostile_html and "skipped" in hostile_html
    assert "not a profiler log (Python script)" in hostile_html
    # Peaks used name their source from the GPU database.
    assert gpu.match("A100-SXM4-40GB").source.split(";")[0] in hostile_html


def test_same_input_same_html(tmp_path):
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    for out in (a, b):
        build_report(hostile_dataset(), out)
    assert a.read_bytes() == b.read_bytes()


# -- offline rendering -------------------------------------------------------------------------

def test_offline_fetcher_refuses_everything_but_data_uris():
    from roofreport.report.render import RefusedFetch, refuse_fetch

    for url in ("http://example.com/a.png", "https://x/y.css", "file:///etc/passwd", "ftp://h/f"):
        with pytest.raises(RefusedFetch):
            refuse_fetch(url)
    refuse_fetch("data:image/png;base64,AAAA")


def test_pdf_rendering_fetches_nothing(tmp_path, monkeypatch):
    """External references in the page are refused before any opener runs."""
    import urllib.request

    from roofreport.report import render

    opened = []
    monkeypatch.setattr(urllib.request.OpenerDirector, "open", lambda self, *a, **k: opened.append(a) or None)
    html = ('<html><body><p>x</p><img src="http://127.0.0.1:9/a.png"><img src="file:///etc/hostname">'
            '<link rel="stylesheet" href="https://127.0.0.1:9/s.css"></body></html>')
    render.write_pdf(html, tmp_path / "x.pdf")
    assert (tmp_path / "x.pdf").read_bytes().startswith(b"%PDF")
    assert opened == []


def test_a_defect_while_building_is_a_render_error(tmp_path, monkeypatch):
    """Only roofreport's own errors reach the CLI, with the cause in the message."""
    from roofreport.errors import RenderError
    from roofreport.report import assemble

    def broken(analysis, title):
        raise KeyError("gpu_model")

    monkeypatch.setattr(assemble, "assemble", broken)
    with pytest.raises(RenderError, match=r"the report could not be built \(KeyError: 'gpu_model'\)"):
        build_report(hostile_dataset(), tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


# -- rendering's cost (issue 32: rendering speed) ----------------------------------------------

def test_the_report_renders_with_the_collector_looking_less_often_and_restores_it(tmp_path, monkeypatch):
    """Charts and WeasyPrint make millions of objects that live until the page is written: the
    collector's first threshold is raised while the report renders (never lowered), and put back
    after it, also when the build fails."""
    import gc

    from roofreport.errors import RenderError
    from roofreport.report import assemble, build

    seen = []
    real = assemble.assemble

    def watched(analysis, title):
        seen.append(gc.get_threshold())
        return real(analysis, title)

    monkeypatch.setattr(assemble, "assemble", watched)
    before = gc.get_threshold()
    build_report(hostile_dataset(), tmp_path / "r.html")
    assert seen == [(build.YOUNG_OBJECTS, *before[1:])] and build.YOUNG_OBJECTS > before[0]
    assert gc.get_threshold() == before

    monkeypatch.setattr(assemble, "assemble", lambda analysis, title: {}["gpu_model"])
    with pytest.raises(RenderError):
        build_report(hostile_dataset(), tmp_path / "broken.html")
    assert gc.get_threshold() == before

    gc.set_threshold(50_000, *before[1:])
    try:
        with build.collections_less_often():
            assert gc.get_threshold()[0] == 50_000
    finally:
        gc.set_threshold(*before)


_LIBRARIES_SEEN = """
import subprocess, sys
runs = []
real = subprocess.Popen.__init__
def recorded(self, args, *rest, **kw):
    runs.append(args[0] if isinstance(args, (list, tuple)) else args)
    return real(self, args, *rest, **kw)
subprocess.Popen.__init__ = recorded
if sys.argv[1] == "roofreport":
    from roofreport.report.render import _import_weasyprint
    _import_weasyprint()
else:
    import weasyprint
libraries = sorted({line.split()[-1].rsplit("/", 1)[-1] for line in open("/proc/self/maps")
                    if any(name in line for name in ("pango", "harfbuzz", "gobject", "fontconfig"))})
print(repr((runs, libraries)))
"""


@pytest.mark.skipif(not Path("/proc/self/maps").exists() or not Path("/sbin/ldconfig").exists(),
                    reason="Linux with glibc's ldconfig: the case the shortcut is for")
def test_weasyprint_opens_the_same_libraries_without_a_compiler_run_per_name(tmp_path):
    """cffi asks `ctypes.util.find_library` about each library name it cannot open as given,
    which runs ldconfig, gcc and ld every time (WeasyPrint tries up to six names a library):
    22 ldconfig and 16 gcc runs, 0.15 s of CPU per PDF build. Imported through the report, the
    loader's cache is read once and no compiler runs; the same libraries are opened."""
    import ast
    import subprocess
    import sys

    def seen(how: str):
        out = subprocess.run([sys.executable, "-c", _LIBRARIES_SEEN, how], capture_output=True, text=True,
                             check=True, cwd=Path(__file__).resolve().parent.parent).stdout
        return ast.literal_eval(out.strip().splitlines()[-1])

    plain_runs, plain_libraries = seen("plain")
    runs, libraries = seen("roofreport")
    assert libraries == plain_libraries and any("pango" in name for name in libraries)
    assert runs == ["/sbin/ldconfig"]
    assert len(plain_runs) > 10      # (what the shortcut saves: a compiler and linker per name)


def test_weasyprint_is_imported_the_ordinary_way_when_the_shortcut_cannot_load_it(monkeypatch):
    """A library the loader's cache cannot give fails the first import; the second, without the
    shortcut, is the ordinary one (and its error, if any, the ordinary error)."""
    import sys

    from roofreport.report import render

    class FailsOnce:
        tried = 0

        def find_spec(self, name, path=None, target=None):
            if name == "weasyprint" and not FailsOnce.tried:
                FailsOnce.tried += 1
                raise OSError("cannot load library 'libgobject-2.0-0'")
            return None

    for name in [name for name in sys.modules if name == "weasyprint" or name.startswith("weasyprint.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [FailsOnce(), *sys.meta_path])
    assert render._import_weasyprint().__name__ == "weasyprint" and FailsOnce.tried == 1


def test_inputs_of_a_big_folder_print_each_warning_message_once():
    from roofreport.report.sections.inputs import inputs_section

    files = [FileOutcome(path=f"/runs/out.{i}", family="nvprof", variant="summary csv", status="ok",
                         rows={"kernels": 3}, warnings=[LogWarning("nvprof.timeout", "Execution timeout", 4),
                                                        LogWarning("nvprof.timeout", "Execution timeout", 9)])
             for i in range(12)]
    files.append(FileOutcome(path="/runs/bad", family="nvprof", variant="summary", status="error",
                             error="/runs/bad:3:1: no result table"))
    section = inputs_section(files)
    assert section.appendix
    by_code = next(b for b in section.blocks if getattr(b, "caption", None) == "Warnings by code")
    # One row per code: files, warnings, where (file:line of the first few files) and the message.
    assert [[c.text for c in row] for row in by_code.rows] == [
        ["nvprof.timeout", "12", "24", "out.0:4; out.1:4; out.2:4 …", "Execution timeout"]]
    failed = next(b for b in section.blocks if b.kind == "table" and "failed" in b.css)
    # by folder, the file named once (not again in its message), its place kept
    assert [[c.text for c in row] for row in failed.rows] == [
        ["./"], ["bad", "error", "line 3, column 1: no result table"]]
    files_read = next(b for b in section.blocks if getattr(b, "caption", None) == "Files read")
    texts = [row[0].text for row in files_read.rows]
    assert texts[0] == "./" and len(texts) == 1 + 13      # the folder row, then every file read


def test_a_folder_without_logs_says_so_first(tmp_path):
    files = [FileOutcome(path="/x/train.py", family=None, variant=None, status="skipped",
                         error="not a profiler log (Python script)")]
    tables = {name: schema.empty(name) for name in schema.TABLES}
    out = tmp_path / "r.html"
    build_report(Dataset(tables=tables, files=files, inputs=[Path("/x")]), out)
    html = out.read_text(encoding="utf-8")
    findings = html[html.index('<section id="findings"'):html.index('<section id="overview"')]
    assert "The only file found is not a profiler log roofreport can read" in findings
    # No body section has anything to show: each is left out, and the overview lists which log
    # would fill it, one line per section (GPUs compared, runs, rooflines, share, utilization,
    # regions, API calls).
    gaps = html[html.index("What these logs cannot tell"):html.index('<section id="inputs"')]
    assert gaps.count("<li") == 7 and 'class="note empty"' not in html
