"""The fast paths agree with Lark on the real lines: kernel headers cut at their trailing fields
(`kernel_tail` matched at the line end) give what Lark's parse of `kernel_line` gives, and
every CSV header of the corpus parses to the names polars reads."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport import grammar
from roofreport.families.common.textio import Document
from roofreport.families.ncu import csv as ncu_csv, text as ncu_text
from tests.conftest import CORPUS, corpus_path

TEXT_LOGS = sorted(p.relative_to(CORPUS).as_posix() for p in
                   [*CORPUS.glob("ncu/text/*"), *CORPUS.glob("derived/ncu/*.txt")]) if CORPUS.is_dir() else []


def _heads(rel: str) -> pl.DataFrame:
    g = grammar.load("ncu")
    lines = Document.open(corpus_path(*rel.split("/"))).lines()
    heads = lines.filter(pl.col("text").str.contains(g.regex("kernel_line")))
    # Lark's Earley parse is super-linear: distinct, not-too-long headers are enough.
    return heads.unique("text", maintain_order=True).filter(pl.col("text").str.len_chars() < 300).head(12)


@pytest.mark.parametrize("rel", TEXT_LOGS)
def test_kernel_header_fields_agree_with_lark(rel):
    g = grammar.load("ncu")
    heads = _heads(rel)
    fields = ncu_text.kernel_fields(heads, g)
    for row in fields.iter_rows(named=True):
        tree = g.parse(row["text"], "kernel_line")
        tokens = {t.type.lower(): str(t) for t in tree.scan_values(lambda v: hasattr(v, "type"))}
        assert tokens.pop("kernel_name") == row["kernel_name"]
        for name, value in tokens.items():
            assert row[name] == value, (row["text"], name)


CSV_FILES = sorted(p.relative_to(CORPUS).as_posix() for p in
                   [*CORPUS.glob("ncu/csv/*"), *CORPUS.glob("ncu/raw_csv/*"), *CORPUS.glob("derived/ncu/*.csv")]) \
    if CORPUS.is_dir() else []


@pytest.mark.parametrize("rel", CSV_FILES)
def test_csv_header_names_from_lark_match_polars(rel):
    lines = Document.open(corpus_path(*rel.split("/"))).lines()
    header = lines.filter(pl.col("text").str.contains('^"(?:ID|Kernel Name)",'))
    if not header.height:
        pytest.skip("this .csv holds no CSV (ncu's messages only)")
    text = header["text"][0]
    names = ncu_csv.header_names(text)
    assert list(names) == pl.read_csv(text.encode()).columns
    assert list(names) == ncu_csv.header_names_quick(text)
    assert names[0] in ("ID", "Kernel Name") and len(names) >= 6
