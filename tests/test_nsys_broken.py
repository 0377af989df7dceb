"""Broken nsys inputs: every problem is reported with file, line, column and the line itself,
and everything else in the file is still read (status "partial"). The broken files are real
corpus files damaged in a temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofreport.pipeline.ingest import ingest, parse_file
from roofreport.pipeline.sniff import sniff
from tests.conftest import corpus_path


def _damage(tmp_path: Path, parts: tuple[str, ...], name: str, edit) -> Path:
    lines = corpus_path(*parts).read_text(encoding="utf-8").split("\n")
    path = tmp_path / name
    path.write_text(edit(lines), encoding="utf-8")
    return path


def read(path: Path):
    found = sniff(path)
    assert found.family == "nsys", found.skip_reason
    return parse_file(path, found.spec.name, found.variant, str(path))


TRACE = ("derived", "nsys", "flame_torch_rtxa4500_gputrace.csv")
STATS = ("derived", "nsys", "flame_torch_rtxa4500.stats_column.txt")


def _set_field(lines: list[str], row: int, field: int, value: str) -> str:
    cells = lines[row].split(",")
    cells[field] = value
    lines[row] = ",".join(cells)
    return "\n".join(lines[:50]) + "\n"


def test_csv_cell_that_is_not_a_number(tmp_path):
    path = _damage(tmp_path, TRACE, "x_gputrace.csv", lambda ls: _set_field(ls, 10, 1, "12x4"))
    result = read(path)
    err = result.error
    assert (err.path, err.line, err.column) == (str(path), 11, 12)
    assert err.message == "Duration (ns): '12x4' is not a number"
    assert err.snippet().splitlines()[1].index("^") == 4 + 11
    act = result.tables["activities"]
    assert act.height == 49 and act["duration_ns"].null_count() == 1     # the rest is read
    assert [w.code for w in result.warnings] == ["nsys.bad-value"]


def test_csv_row_with_a_field_too_many(tmp_path):
    def edit(ls):
        ls[20] += ",extra"
        return "\n".join(ls[:50]) + "\n"
    path = _damage(tmp_path, TRACE, "x_gputrace.csv", edit)
    result = read(path)
    assert (result.error.line, result.error.message) == (21, "row does not have the header's 20 fields")
    assert result.error.text.endswith(",extra")
    assert result.error.text[result.error.column - 1:] == ",extra"
    assert result.tables["activities"].height == 48                       # the bad row is left out


def test_csv_cut_in_the_middle_of_the_last_row(tmp_path):
    path = _damage(tmp_path, TRACE, "x_gputrace.csv", lambda ls: "\n".join(ls[:49]) + "\n" + ls[49][:20])
    result = read(path)
    assert result.error.line == 50 and result.error.column == 21
    assert result.tables["activities"].height == 48


def test_csv_header_without_rows(tmp_path):
    path = _damage(tmp_path, TRACE, "x_gputrace.csv", lambda ls: ls[0] + "\n")
    result = read(path)
    assert not result.rows() and result.error.message == "nsys gputrace report holds no rows"


def test_console_row_that_spills_out_of_its_columns(tmp_path):
    def edit(ls):
        ls[8] = ls[8][:30] + "XXXXXXXXX" + ls[8][39:]
        return "\n".join(ls)
    path = _damage(tmp_path, STATS, "stats.txt", edit)
    result = read(path)
    err = result.error
    assert (err.line, err.column) == (9, 38)
    assert err.message == "table row does not fit the columns of its dash rule"
    assert result.tables["kernels"].height == 47 and result.tables["api_calls"].height == 20


def test_console_number_that_is_not_one(tmp_path):
    def edit(ls):
        ls[6] = ls[6].replace("39707153", "4x707153")
        return "\n".join(ls)
    path = _damage(tmp_path, STATS, "stats.txt", edit)
    result = read(path)
    assert result.error.line == 7
    assert result.error.column == result.error.text.index("4x707153") + 1
    assert result.error.message == "Total Time (ns): '4x707153' is not a number"
    assert result.tables["kernels"].height == 48


def test_console_log_cut_mid_row(tmp_path):
    path = _damage(tmp_path, STATS, "stats.txt", lambda ls: "\n".join(ls[:12]) + "\n" + ls[12][:40])
    result = read(path)
    assert result.error.line == 13
    assert result.error.message == "table row stops before its last column (Name): the log was cut"
    assert result.tables["kernels"].height == 6


def test_console_run_that_produced_no_report_says_why(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("Generating '/tmp/nsys-report-1a2b.qdstrm'\n"
                    "[1/2] [========================100%] report1.nsys-rep\n"
                    "[2/2] Executing 'cuda_gpu_kern_sum' stats report\n"
                    "SKIPPED: report1.sqlite does not contain CUDA kernel data.\n")
    result = read(path)
    assert not result.rows()
    assert result.error.message == "nsys reported: report1.sqlite does not contain CUDA kernel data."
    assert result.error.line == 4


def test_ingest_reports_partial_files_and_keeps_their_rows(tmp_path):
    _damage(tmp_path, TRACE, "x_gputrace.csv", lambda ls: _set_field(ls, 10, 1, "12x4"))
    data = ingest([tmp_path], jobs=1)
    (outcome,) = data.files
    assert (outcome.family, outcome.status) == ("nsys", "partial")
    assert outcome.rows == {"activities": 49}
    assert "x_gputrace.csv:11:12" in outcome.error


@pytest.mark.parametrize("content", [b"\x00\x01\x02" * 3000, b"Start (ns),Duration (ns)\n\xff\xfe\x00garbage\n"])
def test_garbage_never_raises(tmp_path, content):
    path = tmp_path / "junk_gputrace.csv"
    path.write_bytes(content)
    found = sniff(path)
    if found.spec is not None:
        result = parse_file(path, found.spec.name, found.variant, str(path))
        assert result.error is not None or result.rows()
