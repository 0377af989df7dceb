"""Whole reports from real logs, checked as a reader sees them: the PDF's pages rendered to PNG
(poppler's pdftoppm/pdftotext) and the HTML opened in headless Chromium. Without those tools the
visual tests skip and say which package to install (`.ci/run` installs both).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from roofreport.cli import cli
from tests.conftest import SAMPLE_LOGS, corpus_path
from tests.test_report import chart_svgs, svg_texts

PROJ1 = ("course", "Anoushka21-Cloud-and-MachineLearning", "proj1")
PROJ1_GPUS = {"a100": "A100-SXM4-40GB", "v100": "V100-SXM2-16GB"}
PROJ1_RUNS = [f"{model} · {gpu}" for gpu in PROJ1_GPUS.values() for model in ("vgg11", "vgg13", "vgg19")]
# proj1 holds no samples, regions or API calls: those sections are left out of the body.
SECTIONS = ["findings", "overview", "runs", "rooflines", "share", "inputs", "left-out", "methodology"]


def need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} not installed (Debian package {package}); `.ci/run` installs it")
    return path


def build(tmp: Path, *inputs: Path, exit_code: int = 0, pdf: bool = True) -> tuple[Path, Path, str]:
    """`roofreport build INPUTS -o report.pdf --html report.html` (or only `-o report.html`);
    exit 1: some inputs failed, the report lists them."""
    pdf_path, html = tmp / "report.pdf", tmp / "report.html"
    args = ["-o", str(pdf_path), "--html", str(html)] if pdf else ["-o", str(html)]
    result = CliRunner().invoke(cli, ["build", *map(str, inputs), *args, "--quiet"])
    assert result.exit_code == exit_code, result.output
    assert not pdf or pdf_path.read_bytes().startswith(b"%PDF")
    return pdf_path, html, html.read_text(encoding="utf-8")


def text_of(html: str) -> str:
    """The page's visible text (tags and line-break hints removed, entities decoded)."""
    import html as htmllib
    body = re.sub(r"<(svg|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", "", body.replace("<wbr>", ""))))


@pytest.fixture(scope="module")
def proj1(tmp_path_factory):
    return build(tmp_path_factory.mktemp("proj1"), corpus_path(*PROJ1))


# -- what the report says ------------------------------------------------------------------------

def test_proj1_names_every_run_and_both_gpus(proj1):
    _, _, html = proj1
    text = text_of(html)
    for run in PROJ1_RUNS:
        assert run in text, run
    body = text_of(html[:html.index('<section id="inputs"')])
    assert not re.search(r"\b[av]100/vgg", body)             # runs go by their labels, not their paths
    assert "6 runs" in text
    assert "A100-SXM4-40GB (Ampere GA100)" in text and "V100-SXM2-16GB (Volta GV100)" in text


def test_proj1_explains_the_incomplete_a100_flops(proj1):
    text = text_of(proj1[2])
    sentence = re.search(r"The A100-SXM4-40GB FLOP counts of 3 runs miss TF32 tensor-core work:[^•]*?"
                         r"Their FLOP/s and arithmetic intensity are lower bounds[^•]*?the times are measured", text)
    assert sentence, "finding about the TF32 tensor-core work missing from the A100 counts"
    # Only the achieved FLOP/s are understated, not the time (issue #22): no "looks N× slower".
    assert "slower than it is" not in text
    assert ("No bound class for vgg11 · A100-SXM4-40GB, vgg13 · A100-SXM4-40GB and vgg19 · A100-SXM4-40GB"
            in text)


def test_proj1_draws_one_roofline_per_gpu(proj1):
    html = proj1[2]
    section = html[html.index('<section id="rooflines"'):html.index('<section id="share"')]
    assert section.count('<figure class="chart interactive"') == 2     # inline in the HTML file
    assert "<h3>A100-SXM4-40GB (Ampere GA100)</h3>" in section
    svgs = chart_svgs(section)
    # Ceilings labelled with their values, runs in the legend by their labels.
    for fid, labels in {"roof1": ("FP32 19.5 TFLOP/s", "Tensor TF32 156 TFLOP/s", "DRAM 1.56 TB/s",
                                  "vgg19 · A100-SXM4-40GB"),
                        "roof2": ("FP32 15.7 TFLOP/s", "DRAM 900 GB/s", "vgg11 · V100-SXM2-16GB")}.items():
        for label in labels:
            assert label in svg_texts(svgs[fid]), (fid, label)


def test_proj1_sections_with_data_and_hints(proj1):
    html = proj1[2]
    for section in SECTIONS:
        assert f'id="{section}"' in html, section
    text = text_of(html)
    assert "could not be drawn" not in text
    assert "What these logs cannot tell" in text
    assert "No nvidia-smi samples" in text and "nvidia-smi --query-gpu=timestamp" in text
    assert "Top 10 kernels per run" in text and "xmma_new::gemm::kernel" in text
    # The same model on both GPUs side by side: one table per model, a column per GPU.
    assert re.search(r"<caption>vgg11</caption>\s*<thead><tr>.*?A100-SXM4-40GB.*?V100-SXM2-16GB", html)
    assert "Files skipped and excluded" in text and "Code/" in text and "main2.py" in text


# -- the PDF, page by page ---------------------------------------------------------------------------

def page_images(pdf: Path, tmp: Path, dpi: int = 40) -> list[Path]:
    need("pdftoppm", "poppler-utils")
    subprocess.run(["pdftoppm", "-r", str(dpi), "-png", str(pdf), str(tmp / "page")], check=True, timeout=300)
    return sorted(tmp.glob("page-*.png"))


def ink(png: Path) -> tuple[float, float]:
    """(fraction of non-white pixels, fraction of saturated colour pixels) of a page image."""
    from PIL import Image

    with Image.open(png) as img:
        rgb = img.convert("RGB")
        n = rgb.width * rgb.height
        dark = sum(rgb.convert("L").histogram()[:235])
        colourful = sum(rgb.convert("HSV").getchannel("S").histogram()[90:])
    return dark / n, colourful / n


def pages_mentioning(pdf: Path, needle: str) -> list[int]:
    need("pdftotext", "poppler-utils")
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True,
                          text=True, timeout=300).stdout
    return [i + 1 for i, page in enumerate(text.split("\f")) if needle in page]


def test_pdf_pages_are_filled_and_charts_are_drawn(proj1, tmp_path):
    pdf = proj1[0]
    pages = page_images(pdf, tmp_path)
    assert 6 <= len(pages) <= 20
    for page in pages:
        dark, _ = ink(page)
        assert dark > 0.004, f"{page.name} looks blank"
    roofline_pages = pages_mentioning(pdf, "Roofline of A100-SXM4-40GB")     # the figure's caption
    assert len(roofline_pages) == 1
    first = pages[roofline_pages[0] - 1]
    # Text pages have no saturated pixels (< 0.01 %); the roofline's coloured points give more (fewer
    # since the A100's uncounted tensor GEMMs are listed beside the chart, not placed: issue 31 item 10).
    _, colour = ink(first)
    assert colour > 0.0004, "the roofline page has no coloured points"
    share_page = pages[pages_mentioning(pdf, "GPU time by kernel category")[0] - 1]
    assert ink(share_page)[1] > 0.02, "the stacked share bars are missing"
    assert pages_mentioning(pdf, f"Page 3 of {len(pages)}") == [3]


def test_pdf_text_keeps_names_and_page_furniture(proj1):
    pdf = proj1[0]
    assert pages_mentioning(pdf, "GPU performance report: proj1")[:2] == [1, 2]   # title, then running header
    assert pages_mentioning(pdf, "Appendix: Methodology")


# -- the HTML in a browser ------------------------------------------------------------------------

class _Figures(HTMLParser):
    """Counts figures, the SVGs inside them (images, or inline: the interactive rooflines), and
    scripts (the interactive HTML's one)."""

    def __init__(self):
        super().__init__()
        self.figures, self.svgs_in_figures, self.scripts, self._in_figure = 0, 0, 0, False

    def handle_starttag(self, tag, attrs):
        src = dict(attrs).get("src") or ""
        if tag == "figure":
            self.figures += 1
            self._in_figure = True
        elif self._in_figure and (tag == "svg" or tag == "img" and src.startswith("data:image/svg+xml;")):
            self.svgs_in_figures += 1
        elif tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag):
        if tag == "figure":
            self._in_figure = False


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    exe = need("chromium", "chromium")
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}"]
    return subprocess.run(base + list(args), capture_output=True, text=True, timeout=300)


def test_html_renders_in_chromium_with_every_chart(proj1, tmp_path):
    _, html_path, html = proj1
    source = _Figures()
    source.feed(html)
    assert source.figures == source.svgs_in_figures == html.count('<figure class="chart') == 3
    done = chromium("--dump-dom", html_path.as_uri(), profile=tmp_path / "profile")
    assert done.returncode == 0, done.stderr[-2000:]
    dom = _Figures()
    dom.feed(done.stdout)
    assert dom.figures == source.figures and dom.svgs_in_figures == source.figures
    assert dom.scripts == source.scripts == 1
    assert "Uncaught" not in done.stderr
    for section in SECTIONS:
        assert f'id="{section}"' in done.stdout


def test_html_screenshot_is_not_blank(proj1, tmp_path):
    _, html_path, _ = proj1
    shot = tmp_path / "shot.png"
    done = chromium(f"--screenshot={shot}", "--window-size=1100,6000", html_path.as_uri(),
                    profile=tmp_path / "profile")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    dark, colour = ink(shot)
    assert dark > 0.01 and colour > 0.001      # text, and the charts' colours


# -- other folders ---------------------------------------------------------------------------------

def test_course_sweep_shows_share_against_batch_size(tmp_path):
    """2019 K80/P40 nvprof runs: every kernel category's share against batch size, one panel per
    model and GPU; NCCL and winograd shares in the findings; the two GPUs compared."""
    from roofreport.families import nvprof

    folder = corpus_path("course", "pramitmallick-examples", "imagenet", "final")
    if not nvprof.SPECS:
        pytest.skip("the nvprof parser is not registered yet (roofreport.families.nvprof.SPECS is empty)")
    _, _, html = build(tmp_path, folder, exit_code=1, pdf=False)     # the corpus keeps failed nvprof runs
    assert "Files that failed" in html
    start = html.index('<section id="comparison"')
    section = html[start:html.index('<section id="', start + 1)]
    charts = chart_svgs(section)
    shares = "\n".join(svg for fid, svg in charts.items() if fid.startswith("ssweep"))
    assert shares, "no share-vs-batch-size chart"
    texts = set(svg_texts(shares))
    assert {"communication", "conv", "gemm", "memcpy"} <= texts
    assert {"alexnet · K80", "alexnet · P40", "full", "backprop"} <= texts
    times = "\n".join(svg for fid, svg in charts.items() if fid.startswith("tsweep"))
    assert {"alexnet · K80", "alexnet · P40", "Samples per second", "batch size"} <= set(svg_texts(times))
    text = text_of(html)
    assert re.search(r"On the K80[^.]*, NCCL kernels take", text)
    assert re.search(r"full: the P40 is faster than the K80 for alexnet [\d.]+× \([\d.]+× to [\d.]+×, \d+ "
                     r"configurations\)", text)


def test_sample_logs_fill_every_section(tmp_path):
    if not SAMPLE_LOGS.is_dir() or not any(SAMPLE_LOGS.iterdir()):
        pytest.skip("sample_logs/ is not written yet")
    _, _, html = build(tmp_path, SAMPLE_LOGS)
    empty = re.findall(r'<section id="(\w+)" class="section[^"]*\bempty\b', html)
    assert empty == []
    kinds = {re.sub(r"\d+$", "", fid) for fid in chart_svgs(html)}
    assert kinds == {"steps", "roof", "share", "tsweep", "ssweep", "util", "procmem"}
    # The story the demo folder tells (sample_logs/README.md), in the findings' words.
    text = text_of(html)
    assert "The A100-SXM4-40GB FLOP count of 1 run misses TF32 tensor-core work" in text
    assert "GPU 0 of resnet18 · A100-SXM4-40GB · bs 64 was busy only" in text
    nccl = re.search(r"NCCL kernels take ([\d.]+) % of GPU time at batch size 16 and ([\d.]+) % at 128", text)
    wino = re.search(r"winograd kernels take ([\d.]+) % of GPU time at batch size 16 and ([\d.]+) % at 128", text)
    assert nccl and float(nccl.group(1)) > float(nccl.group(2))      # NCCL's share falls as the batch grows
    assert wino and float(wino.group(1)) < float(wino.group(2))      # winograd's rises


def test_build_options_window_top_title_peaks(tmp_path):
    """--window adds window statistics and shading, --top limits the kernel tables, --title is
    escaped, --peaks replaces a GPU's datasheet values and says so."""
    run_dir = SAMPLE_LOGS / "a100"
    if not run_dir.is_dir():
        pytest.skip("sample_logs/a100 is not written yet")
    peaks = tmp_path / "peaks.tsv"
    peaks.write_text("gpu\tfp32_tflops\tsource\nA100 SXM4 40GB\t18.1\tour lab's ERT run <2024>\n", encoding="utf-8")
    out = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["build", str(run_dir), "-o", str(out), "--window", "60:120", "--top", "3",
                                      "--title", "Lab <b>report</b>", "--peaks", str(peaks), "--quiet"])
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    text = text_of(html)
    assert "<title>Lab &lt;b&gt;report&lt;/b&gt;</title>" in html
    assert "Whole series" in text and "Window 60 s to 120 s" in text
    assert "Top 3 kernels per run" in text
    # the run's label may carry its batch size ("· bs 64": labels name what varies in the folder)
    kernels_table = re.search(r"<caption>resnet18 · A100-SXM4-40GB[^<]*</caption>.*?</table>", html, flags=re.S)
    # the heading, the run's 3 kernels, the rest as "other kernels", the run's total
    assert kernels_table and kernels_table.group(0).count("<tr>") == 1 + 3 + 2
    assert "other kernels" in kernels_table.group(0)
    assert "our lab's ERT run <2024> [overridden by" in text and "18.1 TFLOP/s" in text


def test_same_logs_same_html(tmp_path):
    """Real data through every analysis and chart twice: byte-identical pages (no dates, no
    unordered groups, fixed SVG hash salt)."""
    folder = SAMPLE_LOGS / "k80_sweep"
    if not folder.is_dir():
        pytest.skip("sample_logs/k80_sweep is not written yet")
    pages = []
    for name in ("a.html", "b.html"):
        result = CliRunner().invoke(cli, ["build", str(folder), "-o", str(tmp_path / name), "--quiet"])
        assert result.exit_code == 0, result.output
        pages.append((tmp_path / name).read_bytes())
    assert pages[0] == pages[1]
    assert b'id="ssweep1"' in pages[0] and b'id="tsweep1"' in pages[0]
