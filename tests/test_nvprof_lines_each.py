"""The structural lines of an nvprof log read one by one with Python's `re` (`lines._fields_each`,
for the ~10 such lines of a course log) give the same frame as the polars queries over the column
(`lines._fields`): kinds, status messages and kinds, PIDs, devices, kernels, NVTX domains and
ranges, section titles. Compared on every line of the corpus's nvprof and course logs that is a
structural line, and on hand-written lines of every kind; `annotate` takes the polars path for
lines outside plain ASCII, where the two regex engines' classes could differ."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from roofreport.families.common.textio import Document
from roofreport.families.nvprof import lines as nvprof_lines
from tests.conftest import corpus_path

ROOT = Path(__file__).resolve().parents[1]


def _known(lines: pl.DataFrame) -> pl.DataFrame:
    syntax = nvprof_lines.load()
    return lines.filter(pl.col("text").str.contains(nvprof_lines._any_kind(syntax)))


def _both(known: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    syntax = nvprof_lines.load()
    by_query = nvprof_lines._fields(known.with_columns(kind=syntax.classify_lines(known["text"], "line")),
                                    syntax)
    return nvprof_lines._fields_each(known, syntax), by_query


def _logs() -> list[Path]:
    folders = [corpus_path("nvprof"), corpus_path("course"), corpus_path("derived", "nvprof"),
               ROOT / "sample_logs"]
    return sorted(p for folder in folders for p in folder.rglob("*")
                  if p.is_file() and p.stat().st_size < 4_000_000 and p.suffix not in (".prof", ".nvvp", ".sqlite", ".gz"))


def test_the_corpus_structural_lines_read_the_same_line_by_line_as_by_polars():
    frames = []
    for path in _logs():
        try:
            lines = Document.open(path).lines()
        except Exception:   # (binary files, which no nvprof reader sees)
            continue
        known = _known(lines)
        if known.height:
            frames.append(known.with_columns(pl.lit(str(path)).alias("file")))
    known = pl.concat(frames).select("line_no", "text")
    plain = known.filter(pl.col("text").str.contains(r"^[\t\x20-\x7e]*$"))
    each, by_query = _both(plain)
    assert_frame_equal(each, by_query)
    kinds = set(each["kind"])
    assert {"status_line", "device_line", "kernel_line", "csv_header_line"} <= kinds, kinds
    assert each["status"].n_unique() > 10 and each["pid"].null_count() < each.height


LINES = [
    "==123== NVPROF is profiling process 123, command: ./a.out",
    "==123== Profiling result:",
    "======== Warning: No CUDA application was profiled, exiting",
    "==7== NVTX result:",
    '==7==   Thread "<unnamed>" (id = 1)',
    '==7==     Domain "<unnamed>"',
    '==7==       Range "forward pass"',
    "==7== Unified Memory profiling result:",
    '==9== Metric result:',
    'Device "Tesla K80 (0)"',
    '    Kernel: void sgemm<float>(float*, int)',
    "\tKernel: relu(float*)",
    "OpenACC (excl):",
    "==1== Some other note",
    "==5==",
    "",
    "plain program output",
    '"Type","Time(%)","Time","Calls","Avg","Min","Max","Name"',
    "            Type  Time(%)      Time     Calls       Avg       Min       Max  Name",
]


@pytest.mark.parametrize("known", [LINES, LINES[::-1], []], ids=["in order", "reversed", "none"])
def test_hand_written_lines_of_every_kind_read_the_same_line_by_line_as_by_polars(known):
    frame = pl.DataFrame({"line_no": range(1, len(known) + 1), "text": known},
                         schema={"line_no": pl.Int64, "text": pl.String})
    each, by_query = _both(frame)
    assert_frame_equal(each, by_query)


def test_annotate_reads_lines_outside_plain_ascii_by_polars(monkeypatch):
    """A structural line with a character outside plain ASCII (a Unicode digit, a non-breaking
    space) is never read by `re`: the frame is the polars path's."""
    calls = []
    monkeypatch.setattr(nvprof_lines, "_fields_each", lambda *a: calls.append(a))
    lines = pl.DataFrame({"line_no": [1, 2], "text": ["==12== Profiling result:", 'Device "K80\u00a0(0)"']})
    annotated = nvprof_lines.annotate(lines)
    assert calls == []
    assert annotated["device_name"].to_list() == [None, "K80\u00a0(0)"]


@pytest.mark.parametrize("text", [
    "==41== Profiling application: ./train --data /home/a/b.txt",
    "==41== Profiling application: ./train --data /home/\u00e9t\u00e9/b.txt",   # not plain: by polars
    "==\u0664\u0661== Profiling application: ./x",                               # a Unicode digit
    "not a status line",
    "",
])
def test_one_lines_fields_by_re_equal_the_polars_extract(text):
    syntax = nvprof_lines.load()
    for rule in ("status_line", "device_line", "kernel_line"):
        expected = pl.select(syntax.extract(pl.lit(text, pl.String), rule)).row(0, named=True)
        assert syntax.fields(text, rule) == expected
    message = syntax.fields(text, "status_line")["status_message"]
    if message is not None:
        rule = syntax.classify_line(message, "status_kind", other="note")
        if rule != "note":
            expected = pl.select(syntax.extract(pl.lit(message, pl.String), rule)).row(0, named=True)
            assert syntax.fields(message, rule) == expected
