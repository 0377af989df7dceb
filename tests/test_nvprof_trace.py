"""nvprof `--print-gpu-trace` / `--print-api-trace`, text and CSV, and nvprof's own SQLite
profile: unit-suffixed times, binary sizes, `-` for n/a, the cut Device column, correlation ids
taken off kernel names, program output interleaved with the log."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from roofreport.pipeline.sniff import sniff
from tests.conftest import corpus_path, parse_path


def parse(*parts):
    return parse_path(corpus_path(*parts), "nvprof")


def test_gpu_trace_text():
    result = parse("nvprof", "trace", "cs533_mpi_vecadd_v100_gpu_trace_allprocs.txt")
    acts, kernels = result.tables["activities"], result.tables["kernels"]
    assert result.error is None and result.warnings == []
    assert acts.group_by("kind").len().sort("kind").rows() == [("kernel", 30), ("memcpy", 90)]
    first = acts.row(0, named=True)
    # `0ns  128.83us  -  -  -  -  -  8.0000MB  60.641GB/s  Pinned  Device  Tesla V100-SXM2  1  14  [CUDA memcpy HtoD]`
    assert (first["name"], first["start_ns"], first["duration_ns"], first["bytes"]) == \
        ("[CUDA memcpy HtoD]", 0.0, 128830.0, 8 * 2**20)
    assert (first["device"], first["context"], first["stream"], first["grid"]) == ("Tesla V100-SXM2", 1, 14, None)
    kernel = acts.row(2, named=True)
    # `271.55us  35.996us  (4097 1 1)  (512 1 1)  16  0B  0B  -  ...  vector_add_kernel(...) [129]`
    assert kernel["name"] == "vector_add_kernel(float const *, float const *, float*, int)"
    assert (kernel["kind"], kernel["correlation_id"], kernel["start_ns"], kernel["duration_ns"]) == \
        ("kernel", 129, 271550.0, 35996.0)
    assert (kernel["grid"], kernel["block"], kernel["bytes"]) == ("(4097, 1, 1)", "(512, 1, 1)", None)
    # Kernel launches are also `kernels` rows; copies are activities only (as in nsys traces).
    assert kernels.height == 30 and set(kernels["kind"]) == {"launch"} and set(kernels["count"]) == {1}
    assert kernels["launch_id"].n_unique() == 30
    assert set(kernels["name"]) == {"vector_add_kernel(float const *, float const *, float*, int)"}
    # The Device column is cut to its width: no device name is claimed from it.
    assert result.hints.device_name is None


def test_gpu_trace_with_program_output_interleaved():
    result = parse("nvprof", "trace", "matrixmul_v100_4streams_gpu_trace_interleaved_stdout.out")
    acts = result.tables["activities"]
    assert acts.group_by("kind", "stream").len().sort("stream").rows() == [
        ("kernel", 14, 6), ("kernel", 15, 5), ("kernel", 16, 5), ("kernel", 17, 5), ("memcpy", 18, 5)]
    copy_back = acts.filter(pl.col("name") == "[CUDA memcpy DtoH]").row(0, named=True)
    assert (copy_back["duration_ns"], copy_back["bytes"]) == (2.6784e6, 4 * 2**20)
    assert acts.filter(pl.col("kind") == "kernel")["name"].unique().sort().to_list() == [
        "void matrixMulCUDA<int=32>(float*, float*, float*, int, int)",
        "void matrixMulCUDA_int<int=32>(int*, int*, int*, int, int)"]
    assert result.hints.command == ("./matrixMul_concurrent --streams=4 --wA=1024 --wB=1024 "
                                    "--hA=1024 --hB=1024")
    assert result.warnings == []


def test_api_trace_text():
    result = parse("nvprof", "trace", "cs533_mpi_vecadd_v100_api_trace_allprocs.txt")
    api = result.tables["api_calls"]
    assert api.height == 341 and set(api["kind"]) == {"trace"} and set(api["calls"]) == {1}
    assert api.head(3).select("name", "start_ns", "total_ns").rows() == [
        ("cuDeviceGetPCIBusId", 0.0, 4187.0), ("cuDeviceGetCount", 211.02e6, 1008.0),
        ("cuDeviceGetCount", 211.02e6, 465.0)]
    assert api.filter(pl.col("name") == "cuDevicePrimaryCtxGetState")["start_ns"].head(1).to_list() == [2.17914e9]


def test_api_trace_names_launches_by_the_api_alone():
    """`cudaLaunchKernel (fill_kernel(int, float, float*, int) [14113])` is a cudaLaunchKernel call."""
    result = parse("derived", "nvprof", "darknet_jetson_xavier_nvprof_sqlite_out.apitrace.txt")
    api = result.tables["api_calls"]
    assert api.height == 24386
    assert api.filter(pl.col("name") == "cudaLaunchKernel").height == 2011
    assert not api["name"].str.contains(r"\(").any()


def test_gpu_trace_csv_with_its_units_row():
    # `s,ms,,,,,,,,KB,B,MB,GB/s,...`: Start in s, Duration in ms, Size in MB.
    result = parse("derived", "nvprof", "darknet_jetson_xavier_nvprof_sqlite_out.gputrace.csv")
    acts = result.tables["activities"]
    first = acts.row(0, named=True)
    assert (first["name"], first["start_ns"], first["duration_ns"], first["correlation_id"]) == \
        ("[CUDA memcpy HtoD]", 0.0, 10305.0, 133)
    assert first["bytes"] == pytest.approx(37632, rel=1e-5)  # 0.035889 MB
    assert first["device"] == "Xavier (0)" and result.hints.device_name == "Xavier"
    kernel = acts.filter(pl.col("kind") == "kernel").row(0, named=True)
    assert (kernel["name"], kernel["grid"], kernel["block"], kernel["correlation_id"]) == \
        ("fill_kernel(int, float, float*, int)", "(9216, 1, 1)", "(512, 1, 1)", 14113)
    assert kernel["duration_ns"] == pytest.approx(523628.0)
    assert acts.group_by("kind").len().sort("kind").rows() == [("kernel", 2011), ("memcpy", 4518), ("memset", 170)]


def test_sqlite_profile():
    result = parse("nvprof", "nvvp", "darknet_jetson_xavier_nvprof_sqlite_out.prof")
    acts, api = result.tables["activities"], result.tables["api_calls"]
    assert result.error is None and result.warnings == []
    assert result.hints.device_name == "Xavier"
    assert result.tool_version == "nvprof profile format 12"
    kernel = acts.filter(pl.col("kind") == "kernel").row(0, named=True)
    # Names stay as nvprof stored them: mangled for user kernels, plain for cuBLAS.
    assert (kernel["name"], kernel["duration_ns"], kernel["correlation_id"]) == \
        ("_Z11fill_kernelifPfi", 523628.0, 14113)
    assert "volta_sgemm_64x64_nn" in set(acts["name"])
    assert acts.filter(pl.col("name") == "[CUDA memcpy HtoD]").height == 4518
    assert api.height == 24182 + 204  # runtime + driver records
    assert api.filter(pl.col("name") == "cudaMalloc").height == 3120
    assert api.filter(pl.col("name") == "cuDeviceTotalMem").height == 2


def test_damaged_sqlite_profile_is_an_error_not_a_crash(tmp_path):
    source = corpus_path("nvprof", "nvvp", "darknet_jetson_xavier_nvprof_sqlite_out.prof")
    cut = tmp_path / "cut.prof"
    cut.write_bytes(source.read_bytes()[:300_000])
    sniffed = sniff(cut)
    assert sniffed.family == "nvprof"
    result = sniffed.spec.parse(cut, sniffed.variant)
    assert result.error is not None
    assert "nvprof SQLite profile" in result.error.message or result.rows()


@pytest.mark.parametrize("parts", [
    ("derived", "nvprof", "darknet_jetson_xavier_nvprof_sqlite_out.gputrace.csv"),
    ("nvprof", "trace", "cs533_mpi_vecadd_v100_gpu_trace_allprocs.txt"),
])
def test_the_one_read_csv_path_reads_as_the_line_path(parts):
    """A CSV trace that is one table is read by one `read_csv` call (families/nvprof/fast.py); the line by
    line path gives the very same tables. Other logs are left to the line path."""
    from roofreport.families.common.textio import Document
    from roofreport.families.nvprof import fast as nvprof_fast, read as nvprof_read
    from roofreport.families.spec import ParseResult

    doc = Document.open(corpus_path(*parts))
    fast, slow = ParseResult("nvprof", "x"), ParseResult("nvprof", "x")
    taken = nvprof_fast.read(doc, fast) is not None
    assert taken == parts[-1].endswith(".csv")
    if taken:
        nvprof_read.read_lines(doc, slow)
        nvprof_read._finish(fast)
        nvprof_read._finish(slow)
        assert fast.tables.keys() == slow.tables.keys() == {"activities", "kernels"}
        for name in fast.tables:
            assert fast.tables[name].equals(slow.tables[name]), name


# -- the one-table CSV trace read by the CSV reader alone (families/nvprof/fast.py) ------------------------

_TRACE_CSV = ("derived", "nvprof", "darknet_jetson_xavier_nvprof_sqlite_out.gputrace.csv")


def _both_ways(path, monkeypatch):
    """(fast path taken, fast result, line-path result) of `nvprof_read.parse_log` on one file."""
    from roofreport.families.common.textio import Document
    from roofreport.families.nvprof import fast as nvprof_fast, read as nvprof_read
    from roofreport.families.spec import ParseResult

    taken = nvprof_fast.read(Document.open(path), ParseResult("nvprof", "x")) is not None
    fast = nvprof_read.parse_log(Document.open(path), "gpu trace csv")
    with monkeypatch.context() as m:
        m.setattr(nvprof_fast, "read", lambda doc, result: None)
        slow = nvprof_read.parse_log(Document.open(path), "gpu trace csv")
    return taken, fast, slow


def _assert_same(fast, slow):
    assert fast.tables.keys() == slow.tables.keys()
    for name in fast.tables:
        assert fast.tables[name].equals(slow.tables[name]), name
    assert fast.warnings == slow.warnings
    assert fast.hints == slow.hints
    assert str(fast.error) == str(slow.error)


def _variant(tmp_path, edit) -> Path:
    """The corpus trace CSV with an edit (lines in, lines out), written to a temp file."""
    lines = corpus_path(*_TRACE_CSV).read_bytes().split(b"\n")
    path = tmp_path / "trace.csv"
    path.write_bytes(b"\n".join(edit(lines)))
    return path


_TRAILER = [b"==8431== Generated result file: /tmp/prof.nvvp", b"", b"==8431== Warning: 3 records "
            b"have invalid timestamps due to insufficient device buffer space.", b""]


@pytest.mark.parametrize("edit, taken", [
    (lambda lines: ([b"==8431== NVPROF is profiling process 8431, command: ./darknet detect"]
                    + lines[:-1] + _TRAILER), True),                    # nvprof's own trailer
    (lambda lines: lines[:-1], True),                                   # no line break at the end
    (lambda lines: lines[:500] + [b""] + lines[500:], False),           # a blank line in the table
    (lambda lines: lines[:-2] + [lines[-2][:40], b""], False),          # the last row cut short
    (lambda lines: lines[:9] + [lines[9].replace(b'"[CUDA', b'"x\n[CUDA')] + lines[10:], False),
    (lambda lines: lines[:9] + [lines[9].replace(b"0.00", b"zz", 1)] + lines[10:], False),
])
def test_the_csv_reader_path_reads_as_the_line_path_or_declines(tmp_path, monkeypatch, edit, taken):
    """Whatever the trace CSV holds around and inside its table, the one-table path gives the
    line path's tables, warnings and hints, or leaves the file to it (a blank line, a quoted
    line break, a short row or a cell that is no number: the line path says where)."""
    path = _variant(tmp_path, edit)
    was_taken, fast, slow = _both_ways(path, monkeypatch)
    assert was_taken == taken
    _assert_same(fast, slow)
    assert fast.tables["activities"].height == 6699 if taken else fast.tables["activities"].height


def test_the_trailer_keeps_its_line_numbers(tmp_path, monkeypatch):
    path = _variant(tmp_path, lambda lines: lines[:-1] + _TRAILER)
    taken, fast, _ = _both_ways(path, monkeypatch)
    last_row = len(corpus_path(*_TRACE_CSV).read_bytes().split(b"\n")) - 1
    assert taken
    # (the trailer's process printed no `Profiling result:` line of its own)
    assert [(w.code, w.line) for w in fast.warnings] == [("nvprof.warning", last_row + 3),
                                                         ("nvprof.no-result", last_row + 1)]
    assert fast.tables["activities"]["source_line"].max() == last_row


def test_the_rows_are_read_in_pieces_cut_at_line_breaks(monkeypatch):
    """Pieces of a few kB (many per file, cut mid-way through lines and moved to the next
    break) give the rows of one whole read."""
    from roofreport import tuning

    path = corpus_path(*_TRACE_CSV)
    whole = _both_ways(path, monkeypatch)[1]
    monkeypatch.setattr(tuning, "CSV_PIECE_BYTES", 4099)
    taken, pieces, _ = _both_ways(path, monkeypatch)
    assert taken
    _assert_same(pieces, whole)
    assert whole.tables["activities"].height == 6699


def test_a_crlf_trace_is_read_from_the_normalised_text(tmp_path, monkeypatch):
    """A CRLF file is normalised in memory (textio); the pieces come from those bytes."""
    path = tmp_path / "trace_crlf.csv"
    path.write_bytes(corpus_path(*_TRACE_CSV).read_bytes().replace(b"\n", b"\r\n"))
    taken, fast, slow = _both_ways(path, monkeypatch)
    assert taken
    _assert_same(fast, slow)
    assert fast.tables["activities"]["source_line"].to_list()[:2] == [4, 5]
