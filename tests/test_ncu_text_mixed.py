"""Logs whose blocks are read both ways: some as codes of their distinct lines (values
repeat), some as text (values kept as strings, parsed row by row). Every mix gives the tables
of one whole read, and the header fast path agrees with the grammar."""

from __future__ import annotations

import itertools

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from roofreport import grammar, tuning
from roofreport.families.common.textio import Document
from roofreport.families.ncu import text as ncu_text, text_lines as ncu_text_lines
from tests.conftest import CORPUS, corpus_path

TEXT_LOGS = sorted(p.relative_to(CORPUS).as_posix() for p in
                   [*CORPUS.glob("ncu/text/*"), *CORPUS.glob("derived/ncu/*.txt")]) if CORPUS.is_dir() else []

# Row-shaped lines holding ", ": kernel headers or rows, unless `==` or `sight` sends them to
# the grammar's other rules.
HEADER_LIKE = [
    "  k(int), Context 1, Stream 7", "    k(int), Context 1, Stream 7", "  k, Context 1, Stream x",
    "  k, 2024-Mar-12 16:22:45, Context 1, Stream 7", "  k (1, 1, 1)x(2, 2, 2), Context 3, Stream 9",
    "  k(int), Device 0, CC 8.6", "  k, Block Size 256, Grid Size 8, 1 invocations",
    "  k, Block Size 256, Grid Size 8, Device 0, 12 invocations  ", "  a, b", "    a, b  unit  1,5",
    "  k, Context 1, Stream 7 ==PROF== x", "  /opt/nsight, Context 1, Stream 7", "  Device 0, CC 8.6",
    "  Device 0, Context 1, Stream 7", "   k, Context 1, Stream 7", "      k, Context 1, Stream 7",
    "    Section: a, b", "    OPT   a, b", "  Metric Name, x", "  ---, Context 1, Stream 7",
    "  k, Context 1, Stream 7, Device 0, CC 8.6", "  k, Context 1, Stream 7, Device 0, CC 8.6, Invocations 3",
    "  k, Context 1, Stream 7 ", "  k,Context 1, Stream 7", "  k, Context 1, Stream 7x",
]


def test_header_fast_path_agrees_with_the_grammar():
    g = grammar.load("ncu")
    text = pl.Series(HEADER_LIKE, dtype=pl.String)
    got = pl.Series(ncu_text_lines.kinds(g)).gather(ncu_text_lines.classify(text, g)[0]).to_list()
    assert got == g.classify_lines(text, "line").to_list()
    kinds = dict(zip(HEADER_LIKE, got))
    assert kinds["  k(int), Context 1, Stream 7"] == "kernel_line"
    assert kinds["  k, Context 1, Stream x"] == "raw_row_line"
    assert kinds["    a, b  unit  1,5"] == "table_row_line"
    assert kinds["  k, Context 1, Stream 7 ==PROF== x"] == "status_line"


def _parse(rel: str):
    return ncu_text.parse_text(Document.open(corpus_path(*rel.split("/"))), "text")


def _same(a, b) -> None:
    assert [(w.code, w.message, w.line) for w in a.warnings] == [(w.code, w.message, w.line) for w in b.warnings]
    assert (a.error and a.error.describe()) == (b.error and b.error.describe())
    assert (a.tool_version, a.hints) == (b.tool_version, b.hints)
    assert a.tables.keys() == b.tables.keys()
    for name in a.tables:
        assert_frame_equal(a.tables[name], b.tables[name])


@pytest.mark.parametrize("rel", TEXT_LOGS)
@pytest.mark.parametrize("first_coded", [False, True])
def test_blocks_read_both_ways_give_the_same_tables(rel, first_coded, monkeypatch):
    """Blocks of ~2 KB, every other one read as codes (whatever its sample): the value cells
    of one kernel come as codes and as strings, summaries' minimums and maximums too."""
    whole = _parse(rel)
    monkeypatch.setattr(tuning, "TEXT_BLOCK_BYTES", 2048)
    turns = itertools.cycle([first_coded, not first_coded])
    monkeypatch.setattr(ncu_text_lines.Distinct, "_repeats", classmethod(lambda cls, data: next(turns)))
    _same(whole, _parse(rel))


def test_a_mixed_log_reads_values_of_both_kinds(monkeypatch):
    """rtx30 metrics log (41 launches, 5 counters each), blocks of 4 KB read alternately as
    codes and as text: values are the same numbers either way (first row line 50 `3.58 Kbyte`
    = 3580 byte; the last launch's `dram__bytes_write.sum byte 128` on line 531)."""
    monkeypatch.setattr(tuning, "TEXT_BLOCK_BYTES", 4096)
    turns = itertools.cycle([True, False])
    monkeypatch.setattr(ncu_text_lines.Distinct, "_repeats", classmethod(lambda cls, data: next(turns)))
    metrics = _parse("ncu/text/rtx30_metrics_flops_dram_kbyte.txt").tables["metrics"]
    assert metrics.height == 205
    first = metrics.row(0, named=True)
    assert (first["source_line"], first["metric"], first["value"], first["value_text"]) == \
        (50, "dram__bytes_read.sum", 3580.0, "3.58")
    last = metrics.filter(pl.col("source_line") == 531).row(0, named=True)
    assert (last["launch_id"], last["metric"], last["value"], last["value_text"]) == \
        (40, "dram__bytes_write.sum", 128.0, "128")


def test_decimal_comma_counts_values_of_both_kinds(monkeypatch):
    """The V100 log printed in a decimal-comma locale (`84,58 %`): read with its blocks
    alternately as codes and as text, its values are still read with a decimal comma."""
    rel = "ncu/text/v100_locale_decimal_comma_ax_2020.txt"
    whole = _parse(rel).tables["metrics"]
    monkeypatch.setattr(tuning, "TEXT_BLOCK_BYTES", 1024)
    turns = itertools.cycle([False, True])
    monkeypatch.setattr(ncu_text_lines.Distinct, "_repeats", classmethod(lambda cls, data: next(turns)))
    mixed = _parse(rel).tables["metrics"]
    assert_frame_equal(whole, mixed)
    values = dict(zip(mixed["source_line"], zip(mixed["value_text"], mixed["value"])))
    assert values[16] == ("84,58", 84.58)
    assert values[17] == ("13 181 137", 13181137.0)
    assert values[18][0] == "1,25" and values[18][1] == pytest.approx(1.25e9)


@pytest.mark.parametrize("values", [[f"  kernel_{i}, Context 1, Stream {i}" for i in range(200)],
                                    [f"    Section: s{i % 3}" for i in range(200)],
                                    [f"x{i}" for i in range(64)] + ["x1"] * 50])
def test_by_distinct_derives_each_value(values):
    """Whether the values are hashed to their distinct strings or derived one by one (first
    strings all distinct), every row gets its own value's result."""
    calls = []

    def derive(texts: pl.Series) -> pl.DataFrame:
        calls.append(texts.len())
        return pl.DataFrame({"n": texts.str.len_bytes(), "t": texts})

    found = ncu_text_lines.by_distinct(pl.Series(values), derive)
    assert found["t"].to_list() == values and found["n"].to_list() == [len(v) for v in values]
    assert calls == [len(set(values)) if len(set(values[:64])) < 64 else len(values)]
