"""families/common/pieces.py: a CSV body read in pieces cut after line breaks equals one read of it."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from roofreport import tuning
from roofreport.families.common.pieces import line_count, read_csv_pieces, spans
from roofreport.families.common.textio import Document

SCHEMA = {"start": pl.Float64, "name": pl.String, "count": pl.Int64}


def _doc(tmp_path, body: bytes) -> Document:
    path = tmp_path / "trace.csv"
    path.write_bytes(b"start,name,count\n" + body)
    return Document.open(path)


@pytest.mark.parametrize("final_break", [True, False])
@pytest.mark.parametrize("piece_bytes", [7, 64, 1 << 20])
def test_pieces_read_as_one_read(tmp_path, monkeypatch, piece_bytes, final_break):
    monkeypatch.setattr(tuning, "CSV_PIECE_BYTES", piece_bytes)
    rows = [f'{i * 0.5},"void k<{i % 7}>(int, float)",{i}' for i in range(500)]
    body = ("\n".join(rows) + ("\n" if final_break else "")).encode()
    doc = _doc(tmp_path, body)
    start = len(b"start,name,count\n")
    frame, lines = read_csv_pieces(doc, start, doc.path.stat().st_size, has_header=False, schema=SCHEMA)
    assert lines == 500
    assert frame.n_chunks() == 1
    assert_frame_equal(frame, pl.read_csv(body, has_header=False, schema=SCHEMA))


def test_spans_end_after_line_breaks_and_cover_everything(tmp_path):
    doc = _doc(tmp_path, b"".join(b"%d,a,%d\n" % (i, i) for i in range(100)))
    start, end = 17, doc.path.stat().st_size
    cuts = spans(doc, start, end, 50)
    assert cuts[0][0] == start and cuts[-1][1] == end
    assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:]))
    data = doc.path.read_bytes()
    assert all(data[high - 1:high] == b"\n" for _, high in cuts)


def test_keep_drops_columns_after_the_reader_checked_them(tmp_path):
    doc = _doc(tmp_path, b"1.0,a,1\n2.0,b,oops\n")
    with pytest.raises(pl.exceptions.PolarsError):   # a bad cell in a column not kept
        read_csv_pieces(doc, 17, doc.path.stat().st_size, keep=["start"], has_header=False, schema=SCHEMA)
    good = _doc(tmp_path, b"1.0,a,1\n2.0,b,2\n")
    frame, lines = read_csv_pieces(good, 17, good.path.stat().st_size, keep=["start"],
                                   has_header=False, schema=SCHEMA)
    assert frame.columns == ["start"] and frame["start"].to_list() == [1.0, 2.0] and lines == 2


def test_an_empty_body_gives_no_rows(tmp_path):
    doc = _doc(tmp_path, b"")
    size = doc.path.stat().st_size
    frame, lines = read_csv_pieces(doc, size, size, has_header=False, schema=SCHEMA)
    assert (frame.height, lines, frame.schema) == (0, 0, pl.Schema(SCHEMA))


def test_line_count_counts_a_last_line_without_a_break():
    assert line_count(b"a\nb\nc") == 3 and line_count(b"a\nb\n") == 2
