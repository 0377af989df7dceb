"""Reading damaged text (issue 7): encodings, NUL runs, line ends, very long lines.

textio repairs what it can once, for every parser, and says so with coded warnings naming the
first line touched; line numbers always match what an editor shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from roofreport.families.common import limits
from roofreport.families.common.textio import (
    Document,
    detect_encoding,
    read_head,
    repair,
    split_lines,
)
from roofreport.pipeline.ingest import parse_file
from roofreport.pipeline.sniff import sniff
from tests.conftest import corpus_path
from tests.test_hostile_report import ncu_log


def _doc(tmp_path: Path, data: bytes, name: str = "log.txt") -> Document:
    path = tmp_path / name
    path.write_bytes(data)
    return Document.open(path)


def test_nul_runs_are_removed_and_reported_at_their_first_line(tmp_path):
    doc = _doc(tmp_path, b"one\ntwo\n" + b"\0" * 5000 + b"three\nfour\0\0\n")
    assert doc.lines()["text"].to_list() == ["one", "two", "three", "four"]
    (w,) = doc.warnings
    assert w.code == "input.nul-bytes" and w.line == 3
    assert "5002 NUL bytes" in w.message and "lines 3-4" in w.message


def test_a_log_whose_lines_start_after_a_nul_run_still_parses(tmp_path):
    """Two jobs writing one log with line buffering: the NUL gap ends where a line starts."""
    text = ncu_log([("void first(int)", "4.00"), ("void second(int)", "6.00")]).encode()
    cut = text.index(b"  void second")
    path = tmp_path / "ncu.txt"
    path.write_bytes(text[:cut] + b"\0" * 3000 + text[cut:])
    sn = sniff(path)
    result = parse_file(path, sn.spec.name, sn.variant, "ncu.txt")
    assert result.rows()["kernels"] == 2
    assert result.warnings[0].code == "input.nul-bytes"
    assert result.warnings[0].line == text[:cut].count(b"\n") + 1


def test_bytes_that_are_not_utf8_are_read_as_windows_1252_with_a_warning(tmp_path):
    doc = _doc(tmp_path, "Duration,ms\n".encode() + b"kernel \xb5s,1.5\ncaf\xc3\xa9 ok\n")
    assert doc.lines()["text"].to_list() == ["Duration,ms", "kernel µs,1.5", "café ok"]
    (w,) = doc.warnings
    assert w.code == "input.not-utf8" and w.line == 2


def test_valid_utf8_and_ascii_are_left_alone():
    assert repair("µs °C café".encode()) == ("µs °C café".encode(), [])
    assert repair(b"plain ascii\n") == (b"plain ascii\n", [])


@pytest.mark.parametrize(("encoded", "name"), [
    (b"\xff\xfe" + "==PROF== x\r\nline two\r\n".encode("utf-16-le"), "utf-16-le"),
    (b"\xfe\xff" + "==PROF== x\r\nline two\r\n".encode("utf-16-be"), "utf-16-be"),
    (("==PROF== Connected to process 1 (/usr/bin/app)\r\n" * 3).encode("utf-16-le"), "utf-16-le"),
])
def test_utf16_with_and_without_bom(tmp_path, encoded, name):
    assert detect_encoding(encoded) == name
    doc = _doc(tmp_path, encoded)
    assert doc.lines()["text"][0].startswith("==PROF== ")
    assert doc.warnings == []


def test_utf16_cut_mid_character_loses_only_that_character(tmp_path):
    encoded = b"\xff\xfe" + "abc\ndef\n".encode("utf-16-le")
    doc = _doc(tmp_path, encoded[:-1])
    assert doc.lines()["text"].to_list() == ["abc", "def"]


def test_mixed_line_ends_count_lines_as_an_editor_does(tmp_path):
    doc = _doc(tmp_path, b"a\r\nb\rc\nd\r\n\re")
    lines = doc.lines()
    assert lines["text"].to_list() == ["a", "b", "c", "d", "", "e"]
    assert lines["line_no"].to_list() == [1, 2, 3, 4, 5, 6]


def test_a_3_mb_line_without_newline_is_one_line(tmp_path):
    """Kept whole under a line limit that allows it; cut to the limit (1 MiB by default) and
    named otherwise (issue #27: a line is never gathered past the limit)."""
    with limits.applied(limits.Limits(line_bytes=4 << 20)):
        doc = _doc(tmp_path, b"first\n" + b"x" * (3 << 20))
    lines = doc.lines()
    assert lines.height == 2 and len(lines["text"][1]) == 3 << 20
    doc = _doc(tmp_path, b"first\n" + b"x" * (3 << 20))
    assert doc.lines().height == 2 and len(doc.lines()["text"][1]) == 1 << 20
    assert [(w.code, w.line) for w in doc.warnings] == [("input.long-line", 2)]


def test_only_regular_files_are_opened(tmp_path):
    with pytest.raises(OSError, match="not a regular file"):
        read_head(tmp_path)
    with pytest.raises(OSError, match="not a regular file"):
        Document.open(tmp_path)


def test_the_sniffing_head_sees_lines_without_nul_runs(tmp_path):
    path = tmp_path / "ncu.txt"
    path.write_bytes(b"\0" * 100 + ncu_log([("void k(int)", "1.00")]).encode())
    assert read_head(path).lines[0].startswith("==PROF== Connected")
    assert sniff(path).family == "ncu"


def test_split_lines_keeps_unit_separators_out_of_the_way():
    frame = split_lines(b"a\x1fb\nc\n")
    assert frame["text"].to_list() == ["a b", "c"]


# -- damage in a real log ---------------------------------------------------------------------

_DAMAGE = {
    "nul run": lambda data: data[:len(data) // 2] + b"\0" * 40 + data[len(data) // 2:],
    "not utf-8": lambda data: data[:len(data) // 3] + b"\xb5s\xff" + data[len(data) // 3:],
    "crlf": lambda data: data.replace(b"\n", b"\r\n"),
}


@pytest.mark.parametrize("damage", list(_DAMAGE))
@pytest.mark.parametrize("parts", [
    ("nsys", "csv", "flame_torch_rtxa4500_cuda_gpu_trace_base_greenctx.csv"),
    ("ncu", "text", "mindspore_nvtx_start_end_ranges_metrics.txt"),
])
def test_a_damaged_real_log_is_repaired_and_read(tmp_path, parts, damage):
    """A real log with damage is read from its repaired text, each repair reported first among
    its warnings; line ends alone change nothing in its tables."""
    clean_path, path = corpus_path(*parts), tmp_path / parts[-1]
    path.write_bytes(_DAMAGE[damage](clean_path.read_bytes()))
    sn = sniff(path)
    result = parse_file(path, sn.spec.name, sn.variant, str(path))
    repairs = [w.code for w in result.warnings if w.code.startswith("input.")]
    assert repairs == {"nul run": ["input.nul-bytes"], "not utf-8": ["input.not-utf8"]}.get(damage, [])
    assert result.tables and all(table.height for table in result.tables.values())
    if damage == "crlf":
        clean = parse_file(clean_path, sn.spec.name, sn.variant, str(path))
        assert clean.tables.keys() == result.tables.keys()
        for name, table in clean.tables.items():
            assert table.equals(result.tables[name]), name
