"""A hostile folder, end to end (issue 7): `roofreport build` over truncated, binary, empty,
UTF-16 and NUL-damaged logs and a kernel named like an XSS payload pointing at a local port.

The build writes an HTML and a PDF, exits 1 (one log failed), shows the payload as text (no
`<script>` or `<img>` element in the DOM, in tables or chart labels), lists every warning by
file in the report's inputs section, and opens no network connection: the test serves a port on
127.0.0.1 the payload points at and asserts nothing connected during the build.

The fixture logs are written here, in real ncu text layout (never copies of corpus files).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import threading
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

RULE = "    " + "-" * 70 + " " + "-" * 15 + " " + "-" * 30


def _row(name: str, unit: str, value: str) -> str:
    return f"    {name:<70} {unit:>15} {value:>30}"


def ncu_log(kernels: list[tuple[str, str]], pid: int = 4242) -> str:
    """An Nsight Compute 2019-2022 text log (`--section SpeedOfLight`): one block per kernel."""
    out = [f"==PROF== Connected to process {pid} (/usr/bin/app)"]
    out += [f'==PROF== Profiling "k{i}" - {i}: 0%....50%....100% - 8 passes'
            for i in range(1, len(kernels) + 1)]
    out += [f"==PROF== Disconnected from process {pid}", f"[{pid}] app@127.0.0.1"]
    for name, usecond in kernels:
        out += [f"  {name}, 2024-Jan-01 10:00:00, Context 1, Stream 7",
                "    Section: GPU Speed Of Light Throughput", RULE,
                _row("DRAM Frequency", "cycle/nsecond", "1.51"),
                _row("SM Frequency", "cycle/nsecond", "1.31"),
                _row("Elapsed Cycles", "cycle", "16,170"),
                _row("Memory Throughput", "%", "61.24"),
                _row("Duration", "usecond", usecond),
                RULE, ""]
    return "\n".join(out) + "\n"


def payload(port: int) -> str:
    return f'<script>alert("pwn")</script><img src="http://127.0.0.1:{port}/x">'


def hostile_folder(root: Path, port: int) -> Path:
    logs = root / "logs"
    # Folder names become run names and displayed paths: this one reads `<script>…</script>`.
    run = logs / 'a100 <i>&amp; "q"</i>' / '<script>alert("run")<' / "script>"
    run.mkdir(parents=True)
    name = payload(port) + "&lt;T&gt; & <T>(float*, int)"
    (run / "hostile_ncu.txt").write_text(ncu_log([(name, "12.35"), ("void k2<float, 4>(float const*)", "3.00")]))
    # Matplotlib reads `$...$` as mathtext: a run named like this must still be drawn as text.
    math = logs / r"m $\undefinedcmd{$ x_{"
    math.mkdir()
    (math / "mathtext_ncu.txt").write_text(ncu_log([(r"void k_$\frac{1}{$(int)", "7.00")]))
    whole = ncu_log([("void gemm<128>(float*)", "5.00"), ("void relu(float*)", "1.00")]).encode()
    (logs / "truncated_ncu.txt").write_bytes(whole[:whole.rindex(b"Duration") + 20])
    (logs / "binary.dat").write_bytes(bytes(range(256)) * 40)
    (logs / "empty.log").write_bytes(b"")
    text = ncu_log([("void powershell_kernel(int)", "2.50")]).replace("\n", "\r\n")
    (logs / "powershell_utf16.txt").write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    damaged = ncu_log([("void first(int)", "4.00"), ("void second(int)", "6.00")]).encode()
    cut = damaged.index(b"  void second")
    (logs / "nul_damaged.txt").write_bytes(damaged[:cut] + b"\0" * 3000 + damaged[cut:])
    (logs / "failed_ncu.txt").write_text("==PROF== Connected to process 77 (/usr/bin/app)\n"
                                         "==ERROR== No kernels were profiled.\n")
    return logs


class Listener:
    """A tiny HTTP server on 127.0.0.1 that records every connection made to it."""

    def __init__(self):
        self.connections: list[tuple[str, int]] = []
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's naming
                outer.requests.append(self.path)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            def verify_request(self, request, client_address):
                outer.connections.append(client_address)
                return True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class Dom(HTMLParser):
    """Elements and text of a page, as a browser's parser would see them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.section_text: dict[str, list[str]] = {}
        self._section: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "section":
            self._section.append(attrs.get("id"))

    def handle_endtag(self, tag):
        if tag == "section" and self._section:
            self._section.pop()

    def handle_data(self, data):
        self.text.append(data)
        for sid in self._section:
            self.section_text.setdefault(sid, []).append(data)

    def joined(self, section: str | None = None) -> str:
        parts = self.text if section is None else self.section_text.get(section, [])
        return "".join(parts)


def _roofreport(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ROOFREPORT_DEBUG"}
    return subprocess.run([sys.executable, "-m", "roofreport", *args], capture_output=True,
                          text=True, env=env, timeout=None)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    with Listener() as listener:
        logs = hostile_folder(root, listener.port)
        out = root / "out"
        result = _roofreport("build", str(logs), "-o", str(out / "report.pdf"),
                             "--html", str(out / "report.html"))
        inspected = _roofreport("inspect", "--json", str(logs))
    return dict(logs=logs, out=out, result=result, listener=listener,
                files=json.loads(inspected.stdout), inspect_rc=inspected.returncode)


def test_build_over_a_hostile_folder_exits_1_and_writes_both_reports(built):
    result = built["result"]
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "failed_ncu.txt" in result.stderr and "No kernels were profiled" in result.stderr
    html, pdf = built["out"] / "report.html", built["out"] / "report.pdf"
    assert html.stat().st_size > 1000 and pdf.read_bytes().startswith(b"%PDF")
    assert not [p for p in built["out"].iterdir() if p.name.endswith(".tmp")]


def test_every_file_gets_its_status(built):
    status = {Path(f["path"]).name: (f["status"], f["error"]) for f in built["files"]}
    assert status["failed_ncu.txt"][0] == "error"
    assert status["binary.dat"][0] == "skipped" and "binary" in status["binary.dat"][1]
    assert status["empty.log"] == ("skipped", "empty file")
    for name in ("hostile_ncu.txt", "powershell_utf16.txt", "nul_damaged.txt", "mathtext_ncu.txt"):
        assert status[name][0] == "ok", (name, status[name])
    assert status["truncated_ncu.txt"][0] == "partial"   # cut inside a kernel: its kernels kept
    rows = {Path(f["path"]).name: f["rows"].get("kernels", 0) for f in built["files"]}
    assert rows["hostile_ncu.txt"] == 2 and rows["powershell_utf16.txt"] == 1
    assert rows["nul_damaged.txt"] == 2 and rows["truncated_ncu.txt"] == 2
    codes = {Path(f["path"]).name: {w["code"] for w in f["warnings"]} for f in built["files"]}
    assert "input.nul-bytes" in codes["nul_damaged.txt"]
    assert "ncu.truncated" in codes["truncated_ncu.txt"]
    assert built["inspect_rc"] == 1


def test_no_network_connection_was_made(built):
    listener = built["listener"]
    assert listener.connections == [] and listener.requests == []


def test_the_payload_is_text_not_markup(built):
    from tests.test_report import without_own_script

    dom = Dom()
    dom.feed(without_own_script((built["out"] / "report.html").read_text(encoding="utf-8")))
    tags = [t for t, _ in dom.tags]
    assert "script" not in tags and "iframe" not in tags and "object" not in tags
    # Charts are images, but only the report's own inline `data:` ones.
    images = [a.get("src", "") for t, a in dom.tags if t == "img"]
    assert all(src.startswith("data:image/") for src in images), images
    port = str(built["listener"].port)
    leaking = [(t, a) for t, a in dom.tags for v in a.values() if v and port in v]
    assert not leaking, leaking
    styles = [a.get("style", "") for _, a in dom.tags] + [a.get("href", "") for _, a in dom.tags]
    assert not any("url(http" in s or s.startswith(("http:", "https:", "file:", "//")) for s in styles)
    text = dom.joined()
    # shown, as text: the folder (a row of its own in the inputs) and the file in it
    assert 'a100 <i>&amp; "q"</i>/<script>alert("run")</script>/' in text and "hostile_ncu.txt" in text
    assert 'a100 <i>&amp; "q"</i>' in text


def _charts(html: str) -> list[str]:
    """Every chart's SVG: inline `<svg>` elements and `data:image/svg+xml` images."""
    dom = Dom()
    dom.feed(html)
    svgs = ["<svg" + part.split("</svg>")[0] for part in html.split("<svg")[1:]]
    for tag, attrs in dom.tags:
        src = attrs.get("src") or ""
        if tag == "img" and src.startswith("data:image/svg+xml;base64,"):
            svgs.append(base64.b64decode(src.split(",", 1)[1]).decode("utf-8"))
    return svgs


def test_chart_labels_are_escaped_too(built):
    """Charts are markup the report trusts (inline SVG or SVG data URIs): kernel and run names
    inside them must arrive as text, never as elements, and reference nothing outside."""
    svgs = _charts((built["out"] / "report.html").read_text(encoding="utf-8"))
    assert svgs, "the report drew no chart"
    port = str(built["listener"].port)
    for svg in svgs:
        dom = Dom()
        dom.feed(svg)
        tags = {t for t, _ in dom.tags}
        assert not tags & {"script", "img", "i", "foreignobject", "iframe"}, tags
        refs = [v for _, a in dom.tags for k, v in a.items() if k in ("href", "xlink:href", "src") and v]
        assert all(v.startswith(("#", "data:")) for v in refs), refs
        assert port not in svg or "&lt;img" in svg or "&#" in svg


def test_the_inputs_section_lists_every_warning_by_file(built):
    dom = Dom()
    dom.feed((built["out"] / "report.html").read_text(encoding="utf-8"))
    inputs = dom.joined("inputs")
    assert inputs, "the report has no inputs section"
    for f in built["files"]:
        name = Path(f["path"]).name
        assert name in inputs, f"{name} is not listed in the inputs section"
        for w in f["warnings"]:
            assert w["code"] in inputs, f"{name}: warning {w['code']} is not in the inputs section"
    assert "No kernels were profiled" in inputs


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext (poppler-utils) not installed")
def test_the_pdf_shows_the_payload_as_text(built):
    text = subprocess.run(["pdftotext", str(built["out"] / "report.pdf"), "-"],
                          capture_output=True, text=True).stdout
    assert '<script>alert("run")</script>' in text
