"""How ncu CSV exports are read without holding the file (families/ncu/csv.py): one streaming pass over
the lines keeps the few lines that are not records and every line's length; the records are
read from the file, only the columns every row needs, a launch's own columns from its first
row. These tests pin what that must not change: damage in a column not kept per row is still
found, a launch's columns come from its first row, raw pages keep file order, and the lines
read again by offset are the lines of the file.
"""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl
import pytest

from roofreport import grammar
from roofreport.families.common import numbers
from roofreport.families.common.textio import Document
from roofreport.families.ncu import csv as ncu_csv, status as ncu_status
from roofreport.families.ncu.csv_tables import roles_of, row_columns
from tests.conftest import CORPUS, corpus_path, parse_path

SGEMM = ("ncu", "csv", "a100_sgemm_roofline_metrics_print_fp.csv")
RAW = ("ncu", "raw_csv", "b200_flashinfer_decode_raw.csv")


def _lines(*parts: str) -> list[str]:
    return corpus_path(*parts).read_text(encoding="utf-8").splitlines()


def _write(tmp_path: Path, name: str, lines: list[str], newline: str = "\n", last: bool = True) -> Path:
    path = tmp_path / name
    path.write_bytes((newline.join(lines) + (newline if last else "")).encode("utf-8"))
    return path


def _ncu_csv_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for folder in ("csv", "raw_csv") for p in (CORPUS / "ncu" / folder).iterdir())


# -- the line scan ---------------------------------------------------------------------------

@pytest.mark.parametrize("crlf", [False, True], ids=["as-is", "normalised"])
def test_line_scan_keeps_the_lines_that_are_not_records_and_finds_any_line_again(tmp_path, crlf):
    lines = _lines(*SGEMM)
    prelude = ["==PROF== Connected to process 7 (/opt/nvidia/nsight-compute/2023.2.1/target/x)",
               "Epoch 1, µs ok"]
    lines = prelude + lines
    path = _write(tmp_path, "scan.csv", lines, newline="\r\n" if crlf else "\n")
    doc = Document.open(path)
    scan = ncu_csv.ScannedLines.scan(doc, grammar.load("ncu"))
    assert scan.count == len(lines) == 48
    kept = scan.kept.select("line_no", "quoted").rows()
    assert kept == [(1, False), (2, False), (3, True)]  # two plain lines, then the header
    assert scan.lengths.to_list() == [len(line.encode("utf-8")) for line in lines]
    assert scan.texts([2, 48, 3]) == [lines[1], lines[47], lines[2]]
    records = scan.records([4, 34], 15)  # the first rows of launches 0 and 2
    assert records["line_no"].to_list() == [4, 34]
    assert records["c4"].to_list() == ["void randomInit<float>(T1 *, int, int, unsigned int)",
                                       "void gemm_v1<float>(float *, float *, float *, int, int, int)"]
    assert records["c14"].to_list() == ["5,323,503,232.00", "807,658,682,624.00"]
    assert ncu_csv.parse_csv(doc, "csv").tool_version == "2023.2.1"


def test_rows_read_only_the_columns_every_row_needs():
    names = ncu_csv.header_names(_lines(*SGEMM)[0])
    # ID, section, metric, unit and value (the last column); the launch's own columns
    # (process, kernel name, grid, ...) are read from each launch's first row.
    assert row_columns(roles_of(names)) == [0, 11, 12, 13, 14]


@pytest.mark.parametrize("path", _ncu_csv_files(), ids=lambda p: p.name)
def test_tool_version_from_the_kept_lines_is_the_one_all_lines_give(path):
    doc = Document.open(path)
    kept = ncu_csv.ScannedLines.scan(doc, grammar.load("ncu")).kept
    assert ncu_status.tool_version(kept) == ncu_status.tool_version(doc.lines())


@pytest.mark.parametrize(("line", "version"), [
    ("==PROF== /opt/nvidia/nsight-compute/2024.3.2/ncu", "2024.3.2"),
    ('"0","See NVIDIA Nsight Compute/2022.4.1/Sections/x.py"', "2022.4.1"),  # a quoted row
    ('"x","NSIGHT-COMPUTE/2024.1/y"', None),  # not how a path to ncu is spelled
])
def test_tool_version_hints_in_any_line_are_kept(tmp_path, line, version):
    lines = _lines(*SGEMM)
    path = _write(tmp_path, "v.csv", lines[:3] + [line] + lines[3:])
    doc = Document.open(path)
    kept = ncu_csv.ScannedLines.scan(doc, grammar.load("ncu")).kept
    assert ncu_status.tool_version(kept) == ncu_status.tool_version(doc.lines()) == version


# -- damage where the rows are not kept ------------------------------------------------------

def test_damage_in_a_kernel_name_mid_file_is_found_though_names_are_read_from_first_rows(tmp_path):
    lines = _lines(*SGEMM)
    broken = lines[5].replace('unsigned int)",', 'unsigned int)"x,', 1)  # text after a quote
    result = parse_path(_write(tmp_path, "name.csv", lines[:5] + [broken] + lines[6:]), "ncu")
    (warning,) = [w for w in result.warnings if w.code == "ncu.unreadable-row"]
    assert warning.line == 6
    assert result.error.line == 6   # a lost row: the file is partial (issue #34)
    assert result.tables["metrics"].height == 44  # 45 rows, the damaged one skipped
    assert 6 not in result.tables["metrics"]["source_line"].to_list()


def test_file_cut_inside_a_kernel_name_fails_at_its_last_line(tmp_path):
    lines = _lines(*SGEMM)
    cut = lines[31][:lines[31].index("gemm_v1") + 4]  # `..."void gemm`: the quote never closes
    result = parse_path(_write(tmp_path, "cut.csv", lines[:31] + [cut], last=False), "ncu")
    assert (result.error.line, result.error.column) == (32, cut.index('"void gemm') + 1)
    assert result.tables["kernels"]["launch_id"].to_list() == [0, 1]
    assert result.tables["metrics"]["source_line"].max() == 31


def test_a_launch_takes_its_columns_from_its_first_row(tmp_path):
    lines = _lines(*SGEMM)
    # Launch 0's third row names another grid: the kernels table keeps the first row's.
    lines[3] = lines[3].replace('"(640, 1280, 1)"', '"(9, 9, 9)"')
    result = parse_path(_write(tmp_path, "grid.csv", lines), "ncu")
    kernels = result.tables["kernels"]
    assert kernels.select("launch_id", "source_line", "grid").rows()[:2] == [
        (0, 2, "(640, 1280, 1)"), (1, 17, "(1280, 640, 1)")]
    metrics = result.tables["metrics"]
    assert metrics.filter(pl.col("source_line") == 4)["kernel_name"].to_list() == [
        "void randomInit<float>(T1 *, int, int, unsigned int)"]


# -- raw page --------------------------------------------------------------------------------

def test_raw_page_metrics_keep_file_order_with_the_units_rows_units():
    path = corpus_path(*RAW)
    rows = list(csv.reader(path.open(encoding="utf-8")))
    header, unit_row, first = rows[2], rows[3], rows[4]
    result = parse_path(path, "ncu")
    metrics = result.tables["metrics"]
    launch0 = metrics.filter(pl.col("launch_id") == 0)
    counters = [(name, unit or None, value)
                for name, unit, value in zip(header[11:], unit_row[11:], first[11:]) if value != ""]
    assert launch0.select("metric", "unit", "value_text").rows() == counters
    assert launch0.height == 463 and set(launch0["source_line"].to_list()) == {5}
    assert metrics["source_line"].is_sorted()  # launch by launch, as in the file
    duration = metrics.filter(pl.col("metric") == "gpu__time_duration.sum")
    assert duration.select("launch_id", "unit", "value").rows()[:2] == [
        (0, "ns", 15616.0), (1, "ns", 556544.0)]
    assert result.hints.device_name == "NVIDIA B200"


# -- numbers once per distinct text ----------------------------------------------------------

@pytest.mark.parametrize("path", _ncu_csv_files(), ids=lambda p: p.name)
def test_decimal_comma_from_distinct_values_and_counts_is_the_per_row_answer(path):
    doc = Document.open(path)
    scan = ncu_csv.ScannedLines.scan(doc, grammar.load("ncu"))
    header = ncu_csv._find_header(scan, grammar.load("ncu"))
    if header is None:
        pytest.skip("no CSV header (ncu's messages only)")
    values = pl.read_csv(doc.source(), skip_lines=header[0] - 1, infer_schema=False,
                         truncate_ragged_lines=True).get_column(header[1][-1])
    counts = values.drop_nulls().value_counts(name="n")
    weighed = numbers.decimal_comma(counts[values.name], counts["n"])
    assert weighed == numbers.decimal_comma(values)


def test_decimal_comma_counts_weigh_each_value():
    values = pl.Series(["84,58", "1.5", "2.5"])
    assert numbers.decimal_comma(values) is False
    assert numbers.decimal_comma(values, pl.Series([3, 1, 1])) is True
    assert numbers.decimal_comma(pl.Series([None, "0,14"]), pl.Series([5, 1])) is True
