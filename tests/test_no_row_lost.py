"""No row lost in silence (issue #34): over every CSV log of the corpus, each file's data rows,
counted with Python's `csv` module (`tests/norowlost.py`), are its rows read plus the rows its
warnings say were left out, and a file with rows left out is `partial`, never "ok"."""

from __future__ import annotations

import pytest

import roofreport
from roofreport.pipeline.sniff import sniff
from tests import norowlost
from tests.conftest import CORPUS, corpus_path

# Layouts whose rows are not one output row each: DCGM's field-value CSV has a row per GPU, time
# and field, folded into one sample per GPU and time (rows of fields without a samples column
# are not kept: `families/dcgm/csv.py`).
FOLDED = ("field-value csv",)


def _csv_logs() -> list[str]:
    if not CORPUS.is_dir():
        return ["(corpus absent)"]
    found = []
    for path in sorted(CORPUS.rglob("*.csv")):
        sniffed = sniff(path)
        if sniffed.spec is not None and not (sniffed.variant or "").endswith(FOLDED):
            found.append(str(path.relative_to(CORPUS)))
    return found


@pytest.mark.corpus
@pytest.mark.parametrize("name", _csv_logs())
def test_every_data_row_of_a_csv_log_is_read_or_warned(name):
    path = corpus_path(name)
    data = roofreport.read_file(str(path))
    (read,) = data.files
    if read.status == "error":
        assert read.error   # no row read, and the file says why: a failed input
        return
    count = norowlost.count(path.read_bytes(), data.tables, read.warnings)
    if read.status == "ok":
        assert (count.rows_warned, count.rows_out) == (0, count.rows_in), count
    else:
        assert read.status == "partial" and count.rows_warned, (read.status, count)
        assert count.rows_out + count.rows_warned >= count.rows_in, count


def test_the_count_leaves_out_tool_lines_headers_units_and_repeats():
    text = ("==PROF== Connected to process 1\n"
            '"Type","Time(%)","Time","Name"\n'
            ",%,s,\n"
            '"GPU activities",27.6,435.5,"k<a, b>(int)"\n'
            "\n"
            '"Type","Time(%)","Time","Name"\n'
            '"GPU activities",10.4,163.9,"sgemm"\n')
    assert norowlost.data_rows(text.encode()) == 2
    assert norowlost.data_rows(b"0, Tesla V100, 94 %\n1, Tesla V100, 3 %\n") == 2   # no header
