"""The fast paths of the ncu text parser agree with the plain ones on the real logs: rows told
by their shape get the kind the grammar's line rules give; a log read in small blocks (context
carried from block to block) or per distinct line gives the tables of one whole read."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from roofreport import grammar, tuning
from roofreport.families.common.textio import Document
from roofreport.families.ncu import text as ncu_text, text_lines as ncu_text_lines
from roofreport.families.ncu.text_lines import Distinct, Memo
from tests.conftest import CORPUS, corpus_path

TEXT_LOGS = sorted(p.relative_to(CORPUS).as_posix() for p in
                   [*CORPUS.glob("ncu/text/*"), *CORPUS.glob("derived/ncu/*.txt")]) if CORPUS.is_dir() else []

# Row-shaped lines that are something else, or rows that look like something else.
TRICKY = [
    "    dram__bytes.sum      Mbyte     76.02", "  device__attribute_display_name    NVIDIA A100",
    "    Section: GPU Speed Of Light", "    Section:", "    OPT   Est. Speedup: 12%", "    OPTIMIZE   x",
    "    INF   info", "    WRN   warn", "    ERR   error", "    NVTX Start/End Ranges:", "    NVTXs  1",
    "    Metric Name   Metric Unit   Metric Value", "  Metric Name   Metric Unit   Minimum  Maximum  Average",
    "  Device 0", "  Device 0  ", "  Devices  3", "    ==PROF== glued", "    x ==WARNING== y",
    "  kernel(int) (1, 1, 1)x(1, 1, 1), Context 1, Stream 7", "    kernel(int), Device 0, CC 8.6",
    "    name, Block Size 256, Grid Size 8, 1 invocations ", "    value (1, 2, 3)", "    a, b",
    "    /opt/nvidia/nsight-compute/2024.3.2/sections", "    Nsight Compute 2023.1 x", "    -5  inst  3",
    "    ---- -----", "  ----- ---", "    ", "  ", "", "\t", "      <0,range>", "          more text",
    "    \u00a0nbsp", "    \u2003em space", "    x\u00a0y  unit  1", "[123] app@host", "    µs  1",
]


def _kind_names(text: pl.Series) -> list[str]:
    g = grammar.load("ncu")
    return pl.Series(ncu_text_lines.kinds(g)).gather(ncu_text_lines.classify(text, g)[0]).to_list()


def test_fast_classification_agrees_with_the_grammar_on_tricky_lines():
    text = pl.Series(TRICKY, dtype=pl.String)
    assert _kind_names(text) == grammar.load("ncu").classify_lines(text, "line").to_list()
    kinds = dict(zip(TRICKY, _kind_names(text)))
    assert kinds["    dram__bytes.sum      Mbyte     76.02"] == "table_row_line"
    assert kinds["  device__attribute_display_name    NVIDIA A100"] == "raw_row_line"
    assert kinds["    ==PROF== glued"] == "status_line"
    assert kinds["    kernel(int), Device 0, CC 8.6"] == "kernel_line"
    assert kinds["    OPT   Est. Speedup: 12%"] == "advice_line"
    assert kinds["    OPTIMIZE   x"] == "table_row_line"


@pytest.mark.parametrize("rel", TEXT_LOGS)
def test_fast_classification_agrees_with_the_grammar(rel):
    text = Document.open(corpus_path(*rel.split("/"))).lines()["text"]
    assert _kind_names(text) == grammar.load("ncu").classify_lines(text, "line").to_list()


def _parse(rel: str):
    path = corpus_path(*rel.split("/"))
    return ncu_text.parse_text(Document.open(path), "text")


def _same(a, b) -> None:
    assert [(w.code, w.message, w.line) for w in a.warnings] == [(w.code, w.message, w.line) for w in b.warnings]
    assert (a.error and a.error.describe()) == (b.error and b.error.describe())
    assert (a.tool_version, a.hints) == (b.tool_version, b.hints)
    assert a.tables.keys() == b.tables.keys()
    for name in a.tables:
        assert_frame_equal(a.tables[name], b.tables[name])


@pytest.mark.parametrize("rel", TEXT_LOGS)
def test_small_blocks_and_distinct_lines_give_the_same_tables(rel, monkeypatch):
    whole = _parse(rel)
    # Blocks of ~2 KB cut kernels, tables and sections apart: the context crosses blocks.
    monkeypatch.setattr(tuning, "TEXT_BLOCK_BYTES", 2048)
    blocks = _parse(rel)
    _same(whole, blocks)
    # Every block worked per distinct line, or none.
    for most in (1.0, 0.0):
        monkeypatch.setattr(ncu_text_lines.Distinct, "MOST", most)
        _same(whole, _parse(rel))


@pytest.mark.parametrize("rel", TEXT_LOGS)
@pytest.mark.parametrize("coded", [False, True])
def test_blocks_hold_the_documents_lines(rel, coded, monkeypatch):
    """Blocks of 1 KB (a BOM or U+001F starting a block included) give Document.lines(),
    read as text or (every block, whatever its sample) as codes of distinct lines."""
    monkeypatch.setattr(ncu_text_lines.Distinct, "MOST", 1.0)
    doc = Document.open(corpus_path(*rel.split("/")))
    assert_frame_equal(pl.concat(ncu_text_lines.read_blocks(doc, size=1024, coded=coded)), doc.lines())


@pytest.mark.parametrize("coded", [False, True])
def test_blocks_hold_the_lines_of_odd_bytes(coded, monkeypatch):
    monkeypatch.setattr(ncu_text_lines.Distinct, "MOST", 1.0)
    text = "\ufeff\ufeffhead\n" + "x\x1fy\n\ufeffz\n\n" * 200 + "\u00e9 last"
    doc = Document.from_text(text)
    for size in (7, 64, 1 << 20):
        assert_frame_equal(pl.concat(ncu_text_lines.read_blocks(doc, size=size, coded=coded)), doc.lines())


def test_coded_blocks_only_where_lines_repeat():
    """A block is read as codes when few of its sampled lines are distinct."""
    repeating = b"    dram__bytes.sum    Mbyte    76.02\n" * 5000
    distinct = Distinct.read(repeating)
    assert distinct is not None and distinct.texts.to_list() == ["    dram__bytes.sum    Mbyte    76.02"]
    assert distinct.codes.len() == 5000 and distinct.codes.n_unique() == 1
    assert Distinct.read(b"".join(b"    m%d  unit  %d\n" % (i, i) for i in range(5000))) is None
    blanks = Distinct.read(b"a\n\n" * 3000)   # blank lines are "" as split_lines gives them
    assert blanks.texts.gather(blanks.codes).head(3).to_list() == ["a", "", "a"]
    # A block cut mid-line: the cut line is left out, its text never derived.
    cut = Distinct.read(b"a\nb\n" * 100 + b"half a li", cut=True)
    assert cut.texts.gather(cut.codes).to_list() == ["a", "b"] * 100
    assert set(cut.texts) == {"a", "b"}


def test_memo_derives_each_distinct_text_once():
    memo, calls = Memo(), []

    def derive(texts: pl.Series) -> pl.DataFrame:
        calls.append(texts.to_list())
        return pl.DataFrame({"n": texts.str.len_chars()})

    for block in (["ab", "c"], ["c", "ab", "defg"], ["defg"]):
        texts = pl.Series(block)
        assert memo.derive("len", memo.ids(texts), texts, derive)["n"].to_list() == [len(t) for t in block]
    assert calls == [["ab", "c"], ["defg"]]
    # Past `MOST` texts the memo starts afresh (derives again).
    memo.MOST = 2
    texts = pl.Series(["x", "y", "z"])
    assert memo.derive("len", memo.ids(texts), texts, derive)["n"].to_list() == [1, 1, 1]
    assert calls[-1] == ["x", "y", "z"]


def test_block_boundaries_fall_between_lines():
    """A line cut by a block's end is read whole in the next block; lines are numbered on."""
    doc = Document.from_text("a\n\nbb\nccc\n" * 3 + "last")
    got = list(ncu_text_lines.read_blocks(doc, size=5))
    lines = pl.concat(got)
    assert lines["text"].to_list() == ["a", "", "bb", "ccc"] * 3 + ["last"]
    assert lines["line_no"].to_list() == list(range(1, 14))
    assert len(got) > 3


def test_values_read_in_blocks_on_a_real_log(monkeypatch):
    """rtx30 metrics log: 41 launches of add_heat_kernel_2d (headers on lines 45 ... 525), 5
    counters each; read in 4 KB blocks. First row line 50 `3.58 Kbyte` = 3580 byte, last
    launch's `dram__bytes_write.sum byte 128` on line 531."""
    monkeypatch.setattr(tuning, "TEXT_BLOCK_BYTES", 4096)
    result = _parse("ncu/text/rtx30_metrics_flops_dram_kbyte.txt")
    kernels, metrics = result.tables["kernels"], result.tables["metrics"]
    assert kernels.height == 41 and set(kernels["name"]) == {"add_heat_kernel_2d(float *, int, int, int, int)"}
    assert kernels["source_line"][0] == 45 and kernels["source_line"][-1] == 525
    assert metrics.height == 205
    first = metrics.row(0, named=True)
    assert (first["source_line"], first["launch_id"], first["metric"], first["unit"], first["value"],
            first["value_text"], first["section"]) == \
        (50, 0, "dram__bytes_read.sum", "Kbyte", 3580.0, "3.58", "Command line profiler metrics")
    last = metrics.filter(pl.col("source_line") == 531).row(0, named=True)
    assert (last["launch_id"], last["metric"], last["value"]) == (40, "dram__bytes_write.sum", 128.0)
