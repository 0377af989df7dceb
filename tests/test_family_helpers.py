"""The helpers every family shares, each written once (issue #14), checked where the families
meet: the same run read from its different forms gives the same launch shapes, activity kinds,
Lark's account of a bad line, the context carried down a log ... as every reader now asks
the one helper."""

from __future__ import annotations

import re

import polars as pl
import pytest

from roofreport import grammar
from roofreport.api import read_file
from roofreport.enrich.categories import categorize
from roofreport.errors import ParseError
from roofreport.families.common import units
from roofreport.families.common.activity import activity_kinds
from roofreport.families.common.context import carried, unmarked
from roofreport.families.common.textio import Document
from roofreport.families.smi import read as smi_read
from roofreport.pipeline.ingest import parse_file
from roofreport.pipeline.sniff import sniff
from roofreport.tables.frames import launch_dims, printed_dims
from tests.conftest import corpus_path

# One nvprof run (darknet on a Jetson Xavier) in three forms: its SQLite profile and the GPU
# trace nvprof printed from it as text and as CSV.
DARKNET = [("nvprof", "nvvp", "darknet_jetson_xavier_nvprof_sqlite_out.prof"),
           ("derived", "nvprof", "darknet_jetson_xavier_nvprof_sqlite_out.gputrace.txt"),
           ("derived", "nvprof", "darknet_jetson_xavier_nvprof_sqlite_out.gputrace.csv")]
# One nsys profile: its SQLite export, the CSV trace and the kernel summary made from it.
FLAME = [("nsys", "rep", "flame_torch_rtxa4500.sqlite"),
         ("derived", "nsys", "flame_torch_rtxa4500_gputrace.csv"),
         ("derived", "nsys", "flame_torch_rtxa4500_gpukernsum.csv")]
# An nsys profile of Unified Memory migrations: its export (the kind from the CUPTI table) and
# its CSV trace (the kind from the name).
UNIFIED = [("nsys", "rep", "olcf_hw6_rtx3070_nsys2022_um.sqlite"),
           ("derived", "nsys", "olcf_hw6_rtx3070_nsys2022_um_gputrace.csv")]


def _kernels(parts: tuple[str, ...]) -> pl.DataFrame:
    return read_file(corpus_path(*parts)).kernels


# -- launch shapes ----------------------------------------------------------------------------

def test_the_launch_shapes_of_one_nvprof_run_agree_in_its_three_forms():
    shapes = [_kernels(parts).select("grid", "block") for parts in DARKNET]
    assert shapes[0].height == 2011 and shapes[0]["grid"].null_count() == 0
    for other in shapes[1:]:
        assert other.equals(shapes[0])


def test_an_nsys_summary_prints_the_launch_shapes_its_trace_has():
    traced = [set(_kernels(parts).select("name", "grid", "block").unique().rows()) for parts in FLAME[:2]]
    summary = set(_kernels(FLAME[2]).select("name", "grid", "block").rows())
    assert traced[0] == traced[1] == summary and len(summary) == 46


def test_printed_launch_shapes_read_as_three_numbers_or_not_at_all():
    printed = pl.Series(["(4097 1 1)", "   1 1568    1", "(2, 3, 4)", "-", "", None, "1 2"])
    got = pl.select(printed_dims(pl.lit(printed))).to_series().to_list()
    assert got == ["(4097, 1, 1)", "(1, 1568, 1)", "(2, 3, 4)", None, None, None, None]


def test_launch_columns_give_nothing_when_one_is_unknown_or_missing():
    frame = pl.DataFrame({"grid_x": [4, None], "grid_y": [1, 2], "grid_z": [1, 1]})
    assert frame.select(launch_dims(frame, "grid"))["grid"].to_list() == ["(4, 1, 1)", None]
    assert frame.with_columns(launch_dims(frame, "block"))["block"].to_list() == [None, None]


# -- activity kinds ---------------------------------------------------------------------------

def _kinds(parts: tuple[str, ...]) -> list[tuple[str, int]]:
    return sorted(read_file(corpus_path(*parts)).activities["kind"].value_counts().rows())


def test_one_nvprof_run_has_the_same_activities_in_its_three_forms():
    kinds = [_kinds(parts) for parts in DARKNET]
    assert kinds[0] == [("kernel", 2011), ("memcpy", 4518), ("memset", 170)]
    assert kinds[1] == kinds[2] == kinds[0]


def test_unified_memory_migrations_are_copies_whether_the_table_or_the_name_says_so():
    assert _kinds(UNIFIED[0]) == _kinds(UNIFIED[1]) == [("kernel", 10000), ("memcpy", 128)]


def test_every_tool_s_bracketed_names_are_activities_of_their_kind():
    """nsys's and nvprof's names for copies, sets and Unified Memory events, as their GPU
    traces print them (nvprof's `[Unified Memory ...]` rows: `--print-gpu-trace` with Unified
    Memory profiling on)."""
    names = {"[CUDA memcpy HtoD]": "memcpy", "[CUDA memcpy Host-to-Device]": "memcpy",
             "[CUDA Unified Memory memcpy DtoH]": "memcpy", "[Unified Memory Memcpy HtoD]": "memcpy",
             "[CUDA memset]": "memset", "[Unified Memory GPU page faults]": "other",
             "[Unified Memory CPU page faults]": "other", "void gemm<float>(float *)": "kernel",
             "_Z11fill_kerneliPfi": "kernel", None: "kernel"}
    got = activity_kinds(pl.Series(list(names), dtype=pl.String)).to_list()
    assert dict(zip(names, got)) == names
    copies = pl.Series([name for name, kind in names.items() if kind == "memcpy"])
    assert set(categorize(copies).to_list()) == {"memcpy"}


# -- SQLite files -----------------------------------------------------------------------------

def _sqlite_files() -> list[tuple[str, object]]:
    roots = {"nsys": [corpus_path("nsys", "rep"), corpus_path("derived", "nsys")],
             "nvprof": [corpus_path("nvprof", "nvvp")]}
    return [(family, path) for family, folders in roots.items() for folder in folders
            for path in sorted(folder.iterdir()) if path.read_bytes()[:16] == b"SQLite format 3\x00"]


def test_every_sqlite_database_of_the_corpus_is_claimed_by_its_own_family():
    files = _sqlite_files()
    assert {family for family, _ in files} == {"nsys", "nvprof"} and len(files) >= 8
    for family, path in files:
        found = sniff(path)
        assert (found.family, found.spec.binary) == (family, True), path.name
        assert "unreadable" not in found.variant


def test_a_cut_database_is_claimed_by_its_name_and_its_reader_says_what_sqlite_said(tmp_path):
    for family, name, variant in (("nvprof", "cut.prof", "sqlite profile (unreadable)"),
                                  ("nsys", "cut.sqlite", "sqlite export (unreadable)")):
        source = next(path for fam, path in _sqlite_files() if fam == family)
        path = tmp_path / name
        path.write_bytes(source.read_bytes()[:8192])
        found = sniff(path)
        assert (found.family, found.variant) == (family, variant)
        result = parse_file(path, found.spec.name, found.variant, str(path))
        assert not result.rows() and "SQLite" in result.error.message
        path.rename(tmp_path / "cut.db")
        assert sniff(tmp_path / "cut.db").family is None


# -- Lark's account of a bad line -------------------------------------------------------------

def _ncu_csv_with_row_6(tmp_path, row_6: str):
    lines = corpus_path("ncu", "csv", "a100_sgemm_roofline_metrics_print_fp.csv").read_text().splitlines()
    path = tmp_path / "broken.csv"
    path.write_text("\n".join(lines[:5] + [row_6] + lines[6:]) + "\n")
    found = sniff(path)
    return lines[5], parse_file(path, found.spec.name, found.variant, path.name)


def test_lark_explains_a_short_broken_row_and_the_reader_a_long_one(tmp_path):
    """Every reader asks `Grammar.explain`: Lark says what it expected where a row breaks,
    up to the one length limit; past it the reader's own account, at the column where the
    row's quoted fields stop, and the parse does not wait on Earley."""
    row = corpus_path("ncu", "csv", "a100_sgemm_roofline_metrics_print_fp.csv").read_text().splitlines()[5]
    short = row + "x"
    _, result = _ncu_csv_with_row_6(tmp_path, short)
    (warning,) = [w for w in result.warnings if w.code == "ncu.unreadable-row"]
    assert f"broken.csv:6:{len(short)}:" in warning.message and "expected" in warning.message
    long = row[:-1] + "0" * grammar.MAX_EXPLAINED_CHARS + '"x'   # a long last value, then `x`
    _, result = _ncu_csv_with_row_6(tmp_path, long)
    (warning,) = [w for w in result.warnings if w.code == "ncu.unreadable-row"]
    assert f"broken.csv:6:{len(long)}:" in warning.message and "broken record" in warning.message
    assert result.tables["metrics"].height == 44


def test_a_line_that_parses_gets_the_reader_s_account():
    ncu = grammar.load("ncu")
    row = corpus_path("ncu", "csv", "a100_sgemm_roofline_metrics_print_fp.csv").read_text().splitlines()[5]
    fallback = ParseError("row out of place", path="f.csv", line=6, column=1, text=row)
    assert ncu.explain(row, "csv_record_line", "f.csv", 6, otherwise=fallback) is fallback
    assert ncu.explain(row, "csv_record_line", "f.csv", 6) is None
    error = ncu.explain(row + "x", "csv_record_line", "f.csv", 6)
    assert (error.path, error.line, error.column) == ("f.csv", 6, len(row) + 1)


# -- context carried forward ------------------------------------------------------------------

NVPROF_METRICS = ["ddlbench_horovod_resnet50_v100_inst_fp32.prof.txt", "darknet19_v100_metrics_all_text.txt",
                  "openacc_nbody_k20m_metrics_text_step2_shellprompt.out"]


@pytest.mark.parametrize("name", NVPROF_METRICS)
def test_each_kernel_of_an_nvprof_metrics_log_is_on_the_device_named_last_above_it(name):
    path = corpus_path("nvprof", "metrics", name)
    named = {}
    device = None
    for line_no, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        found = re.match(r'\s*Device "(.*)"\s*$', line)
        device = found.group(1) if found else device
        named[line_no] = device
    kernels = read_file(path).kernels
    assert kernels.height > 0
    assert kernels["device"].to_list() == [named[line_no] for line_no in kernels["source_line"]]


def test_a_context_holds_from_the_line_that_sets_it_to_the_line_that_ends_it():
    lines = pl.DataFrame({"kind": ["other", "device", "row", "row", "end", "row", "device", "row"],
                          "text": ["x", "A", "1", "2", "-", "3", "B", "4"]})
    kind = pl.col("kind")
    got = lines.select(carried(kind == "device", pl.col("text"), kind == "end"))["text"].to_list()
    assert got == [None, "A", "A", "A", None, None, "B", "B"]
    codes = pl.DataFrame({"set": [None, 7, None, 2**32 - 1, None]}, schema={"set": pl.UInt32})
    filled = codes.select(unmarked(pl.col("set").forward_fill(), 2**32 - 1))["set"].to_list()
    assert filled == [None, 7, 7, None, None]


# -- units looked up once per distinct spelling -----------------------------------------------

def test_unit_factors_per_row_are_each_unit_s_scale():
    path = corpus_path("ncu", "csv", "a100_sgemm_roofline_metrics_print_fp.csv")
    printed = pl.read_csv(path, infer_schema=False)["Metric Unit"]
    assert printed.n_unique() > 2
    expected = [units.scale(unit)[1] for unit in printed.to_list()]
    assert units.factors(printed).to_list() == expected
    assert units.factors(printed.cast(pl.Categorical)).to_list() == expected
    assert units.factors(pl.Series([None, "Kbyte"], dtype=pl.String)).to_list() == [1.0, 1e3]


# -- headers read once per distinct text ------------------------------------------------------

def test_a_reprinted_header_lark_refuses_is_reported_once_at_its_first_line():
    """nvidia-smi dmon reprints its header every page: read once per distinct text, and a
    refused one (here too long to parse) is one warning at its first line, not one a page."""
    source = corpus_path("smi", "dmon", "adityamwagh__hpml-hw__hw5__part_a__gpu_utilization_rtx8000.txt")
    text = source.read_text()
    header = text.splitlines()[1]
    assert text.count(header + "\n") == 5
    read = read_file(source)
    assert read.samples.height > 0
    damaged = Document.from_text(text.replace(header + "\n", "# gpu " + "pwr " * 20000 + "\n"),
                                 display=source.name)
    result = smi_read.parse_text(damaged, sniff(source).variant)
    assert [(w.code, w.line) for w in result.warnings if w.code == "smi.bad-header"] == [("smi.bad-header", 2)]
