"""A small log's lines split by Python (`textio._small_lines`) are the lines polars' CSV reader
makes of it (`textio.split_lines`): on hand-made edge cases and on every corpus file and sample
log of up to 64 KiB; inputs where the two would differ (a CR, a leading BOM, invalid UTF-8)
are left to polars."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from roofreport.families.common import textio
from roofreport.families.common.textio import Document, split_lines
from tests.conftest import corpus_path

ROOT = Path(__file__).resolve().parents[1]

CASES = [b"a", b"a\n", b"a\n\n", b"\n", b"\n\n\n", b"\na", b"a\nb", b"a\n\nb\n", b" \n", b"\t\n",
         b'"a\n', b'"\n"\n', b"a\x1fb\n", b"#x\n", b"a,b,\"c,d\"\n", "\u00e9t\u00e9 \u2013 \u00b5s\n".encode(),
         b"x" * 60000 + b"\n", b"a\n \n", "==1== \u0664\n".encode()]


@pytest.mark.parametrize("data", CASES, ids=range(len(CASES)))
def test_small_input_lines_equal_the_csv_readers(data):
    small = textio._small_lines(data)
    assert small is not None
    assert_frame_equal(small, split_lines(data))


@pytest.mark.parametrize("data", [b"a\r\nb\n", b"\r\n", codecs.BOM_UTF8 + b"a\n", b"a\xff\n", b"",
                                  b"x" * (textio._SMALL_BYTES + 1)])
def test_inputs_where_the_splits_could_differ_go_to_polars(data):
    assert textio._small_lines(data) is None


def test_every_small_corpus_log_splits_the_same(tmp_path):
    folders = [corpus_path("course"), corpus_path("nvprof"), corpus_path("smi"), corpus_path("ncu"),
               corpus_path("nsys"), ROOT / "sample_logs"]
    compared = 0
    for path in sorted(p for folder in folders for p in folder.rglob("*") if p.is_file()):
        if path.stat().st_size > textio._SMALL_BYTES:
            continue
        try:
            doc = Document.open(path)
        except Exception:   # (not text a reader would see)
            continue
        source = doc._data if doc._data is not None else doc.path
        small = textio._small_lines(source)
        if small is not None:
            assert_frame_equal(small, split_lines(source))
            compared += 1
    assert compared > 500
