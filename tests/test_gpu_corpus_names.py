"""Every GPU the real corpus names gets the right row of the GPU database, or none when the
name fits several (cut names, shared Jetson names, path tokens such as `v100`).

The names are collected the way each tool writes them, independently of roofreport's readers:
ncu's `device__attribute_display_name` (text pages, raw CSV columns, `.ncu-rep` strings), nvprof's
`Device "Tesla K80 (0)"`, nvidia-smi tables, `-q` reports and `--query-gpu` CSV cells, the
`Device` column of nsys/nvprof CSV traces, nsys SQLite `TARGET_INFO_GPU`, nvprof SQLite devices,
and Kineto's `deviceProperties`. A name that shows up in the corpus and is missing from EXPECTED
fails the first test: decide its row by hand and add it.
"""

from __future__ import annotations

import csv
import re
import sqlite3
from pathlib import Path

import pytest

from roofreport import gpu
from roofreport.pipeline import identity
from tests.conftest import corpus_path

K80 = "Tesla K80 (per GK210 GPU)"

# Device name -> the row it must match (None: it fits several GPUs, or none described here).
# Checked by hand against the files and the corpus MANIFESTs.
EXPECTED = {
    "Tesla K20m": "Tesla K20",
    "Tesla K40m": "Tesla K40",                       # srikarym-hpml C2: a K40, never the K80
    "Tesla K80": K80,
    "Tesla P40": "Tesla P40",
    "Tesla V100-PCIE-32GB": "Tesla V100 PCIe 32GB",
    "Tesla V100-SXM2-16GB": "Tesla V100 SXM2 16GB",
    "Tesla V100-SXM2-32GB": "Tesla V100 SXM2 32GB",
    "Tesla V100S-PCIE-32GB": "Tesla V100S PCIe 32GB",
    "NVIDIA A100-SXM4-40GB": "A100 SXM4 40GB",
    "NVIDIA A100-SXM4-80GB": "A100 SXM4 80GB",
    "NVIDIA A100 80GB PCIe": "A100 PCIe 80GB",
    "NVIDIA A40": "NVIDIA A40",
    "NVIDIA H100 80GB HBM3": "H100 SXM5 80GB",
    "NVIDIA H200": "H200 SXM 141GB",
    "NVIDIA GH200 480GB": "GH200 (96GB HBM3 GPU)",   # 480 GB counts the Grace CPU's memory
    "NVIDIA B200": "B200 (HGX, 1000 W)",
    "NVIDIA L40S": "NVIDIA L40S",
    "NVIDIA RTX A4500": "NVIDIA RTX A4500",
    "NVIDIA RTX A5000": "NVIDIA RTX A5000",
    "NVIDIA RTX A6000": "NVIDIA RTX A6000",
    "Quadro RTX 5000": "Quadro RTX 5000",
    "Quadro RTX 8000": "Quadro RTX 8000",
    "TITAN X (Pascal)": "TITAN X (Pascal)",
    "GeForce GTX 770": "GeForce GTX 770",
    "GeForce GTX 980": "GeForce GTX 980",
    "GeForce GTX 1070": "GeForce GTX 1070",
    "GeForce GTX 1080": "GeForce GTX 1080",
    "GeForce GTX 1650": "GeForce GTX 1650",
    "NVIDIA GeForce GTX 1650": "GeForce GTX 1650",
    "GeForce RTX 2070": "GeForce RTX 2070",
    "NVIDIA GeForce RTX 2070": "GeForce RTX 2070",
    "NVIDIA GeForce RTX 2060 SUPER": "GeForce RTX 2060 SUPER",
    "GeForce RTX 2080 Ti": "GeForce RTX 2080 Ti",
    "NVIDIA GeForce RTX 2080 Ti": "GeForce RTX 2080 Ti",
    "GeForce RTX 3090": "GeForce RTX 3090",
    "NVIDIA GeForce RTX 3090": "GeForce RTX 3090",
    "NVIDIA GeForce RTX 3060": "GeForce RTX 3060",
    "NVIDIA GeForce RTX 3060 Laptop GPU": "GeForce RTX 3060 Laptop GPU",
    "NVIDIA GeForce RTX 3060 L...": "GeForce RTX 3060 Laptop GPU",  # no other GPU's name begins so
    "NVIDIA GeForce RTX 3070": "GeForce RTX 3070",
    "NVIDIA GeForce RTX 3070 Laptop GPU": "GeForce RTX 3070 Laptop GPU",
    "NVIDIA GeForce RTX 3080 Ti": "GeForce RTX 3080 Ti",
    "NVIDIA GeForce RTX 4080": "GeForce RTX 4080",
    "NVIDIA GeForce RTX 4090": "GeForce RTX 4090",
    # Cut or shared names: several GPUs fit, so none is chosen.
    "GeForce RTX 208...": None,                      # 2080, 2080 SUPER or 2080 Ti (srikarym-hpml)
    "GeForce GTX TIT...": None,                      # GTX TITAN, Black, Z or X (srikarym-hpml)
    "GeForce GTX 105...": None,                      # 1050 or 1050 Ti
    "Tesla V100-SXM2...": None,                      # 16 GB or 32 GB
    "Tesla V100-SXM2": None,                         # nvprof's trace column (15 characters)
    "NVIDIA GeForce RTX": None,                      # ncu's raw page (18 characters)
    "NVIDIA GeForce ...": None,
    "NVIDIA GeForce GTX 1650 ...": None,             # 1650 SUPER or 1650 Ti
    "Xavier": None,                                  # Jetson AGX Xavier or Xavier NX
}

# GPU tokens pipeline/identity.py finds in the corpus's paths -> the row (None: the token fits several).
EXPECTED_TOKENS = {
    "K20M": "Tesla K20", "K80": K80, "P40": "Tesla P40", "T4": "Tesla T4", "L4": "NVIDIA L4",
    "B200": "B200 (HGX, 1000 W)", "GTX980": "GeForce GTX 980", "GTX1070": "GeForce GTX 1070",
    "RTX2080TI": "GeForce RTX 2080 Ti", "RTX3090": "GeForce RTX 3090", "RTX3050TI LAPTOP": "GeForce RTX 3050 Ti Laptop GPU",
    "RTX5070": "GeForce RTX 5070", "RTX5090": "GeForce RTX 5090", "RTX8000": "Quadro RTX 8000",
    "RTXA4500": "NVIDIA RTX A4500", "RTXA5000": "NVIDIA RTX A5000",
    "V100": None, "A100": None, "H100": None, "GH200": None, "JETSON XAVIER": None,   # PCIe, SXM, NVL, memory sizes
    "RTX3070": None,                                            # the desktop card or the laptop GPU
}

_LINES = [
    re.compile(rb"^\s*device__attribute_display_name[ \t]{2,}(\S[^\r\n]*?)\s*$", re.MULTILINE),    # ncu page
    re.compile(rb'Device "([^"\r\n]+)"'),                                                   # nvprof
    re.compile(rb"^\|\s+\d+\s+(\S[^|\r\n]*?)\s+(?:On|Off|WDDM|TCC)\s*\|", re.MULTILINE),            # smi table
    re.compile(rb"^\s*Product Name\s*:\s*(\S[^\r\n]*?)\s*$", re.MULTILINE),                         # smi -q
    re.compile(rb"(?:^|[,\t])[ ]*((?:NVIDIA|Tesla|GeForce|Quadro|TITAN) [^,\t\r\n]*?)[ ]*(?=[,\t]|\r?$)", re.MULTILINE),
]
_COLUMNS = {"device__attribute_display_name", "name", "Device"}      # CSV headers naming the GPU
_BRAND = re.compile(rb"(?:NVIDIA|Tesla|GeForce|Quadro|TITAN) [\x20-\x7e]+")
_INDEX = re.compile(r"\s*\(\d+\)\s*$")


def _csv_names(text: str) -> set[str]:
    """Cells of a GPU-name column, below the first header row (within 50 lines) that has one."""
    lines = text.splitlines()
    for number, line in enumerate(lines[:50]):
        header = [cell.strip() for cell in next(csv.reader([line]), [])]
        columns = [i for i, cell in enumerate(header) if cell in _COLUMNS]
        if columns and len(header) > 2:
            try:
                rows = [row for row in csv.reader(lines[number + 1:]) if len(row) == len(header)]
            except csv.Error:           # not CSV after all (a kernel name longer than csv allows)
                return set()
            return {row[i].strip() for row in rows for i in columns if re.search("[A-Za-z]", row[i])}
    return set()


def _report_names(data: bytes) -> set[str]:
    """Device names stored in an ncu report: protobuf strings, each preceded by its length."""
    out = set()
    for m in _BRAND.finditer(data):
        text = data[m.start():m.start() + data[m.start() - 1]]
        if _BRAND.fullmatch(text):
            out.add(text.decode())
    return out


def _sqlite_names(path: Path) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        tables = {row[0] for row in db.execute("select name from sqlite_master where type = 'table'")}
        out = set()
        if "TARGET_INFO_GPU" in tables:                                      # nsys export
            out |= {row[0] for row in db.execute("select name from TARGET_INFO_GPU") if row[0]}
        if "CUPTI_ACTIVITY_KIND_DEVICE" in tables:                           # nvprof --export-profile
            out |= {row[0] for row in db.execute(
                "select s.value from CUPTI_ACTIVITY_KIND_DEVICE d join StringTable s on s._id_ = d.name")}
    return out


def _names_in(path: Path) -> set[str]:
    data = path.read_bytes()
    if path.suffix in (".ncu-rep", ".nsight-cuprof-report"):
        return _report_names(data)
    if data.startswith(b"SQLite format 3"):
        return _sqlite_names(path)
    if b"\0" in data[:4096]:          # nsys .nsys-rep/.qdrep: their SQLite exports are read instead
        return set()
    names = {m.decode("utf-8", "replace") for pattern in _LINES for m in pattern.findall(data)}
    text = data.decode("utf-8", "replace")
    names |= _csv_names(text)
    kineto = re.search(r'"deviceProperties"\s*:\s*\[(.*?)\]', text, re.DOTALL)
    if kineto:
        names |= set(re.findall(r'"name"\s*:\s*"([^"]+)"', kineto.group(1)))
    return names


@pytest.fixture(scope="module")
def corpus_names() -> dict[str, set[str]]:
    corpus = corpus_path()
    found: dict[str, set[str]] = {}
    for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
        if path.suffix == ".md" or path.name == "MANIFEST.tsv":
            continue
        for name in _names_in(path):
            found.setdefault(_INDEX.sub("", name).strip(), set()).add(str(path.relative_to(corpus)))
    return found


def test_every_device_name_in_the_corpus_is_listed(corpus_names):
    unlisted = {name: sorted(files)[:3] for name, files in corpus_names.items() if name not in EXPECTED}
    assert not unlisted
    assert len(corpus_names) >= 50


@pytest.mark.parametrize("name, key", sorted(EXPECTED.items()))
def test_each_device_name_matches_its_row(name, key):
    spec = gpu.match(name)
    assert (spec.key if spec else None) == key
    assert (gpu.match(f"{name} (0)") or spec) is spec      # as trace columns print it


def test_every_gpu_token_in_the_corpus_paths_resolves_in_the_gpu_table():
    """A GPU token found in a path (v100, MI250X, rtx3050ti_laptop) names one row of the table or,
    when it stands for several variants, a family whose rows decide the counters; never nothing.
    New folders bring new tokens: each must resolve, none needs listing by hand."""
    corpus = corpus_path()
    tokens = {identity.read_name(part).get("gpu") for path in corpus.rglob("*")
              for part in path.relative_to(corpus).parts} - {None}
    database = gpu.load_database()
    unresolved = sorted(token for token in tokens if gpu.match(token) is None and not database.family(token))
    assert not unresolved
    assert len(tokens) >= len(EXPECTED_TOKENS)
    assert set(EXPECTED_TOKENS) <= tokens      # the hand-checked rows below are still exercised


@pytest.mark.parametrize("token, key", sorted(EXPECTED_TOKENS.items()))
def test_each_gpu_token_matches_its_row(token, key):
    spec = gpu.match(token)
    assert (spec.key if spec else None) == key
    if key is None:     # several GPUs of one family: the family still decides the counters
        assert gpu.load_database().family(token)
