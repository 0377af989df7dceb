"""What one input may cost (issue #27): the limits (`families/common/limits.py`), compressed
inputs read as a capped stream (`compressed.py`), long lines cut (`textio`), a roofreport.toml
that may only lower a limit, SQLite rows fetched in batches, and a worker's memory limit.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import sqlite3
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

import roofreport
from roofreport.cli import cli
from roofreport.errors import ParseError, UsageError
from roofreport.families.common import compressed, limits, sqlite as common_sqlite
from roofreport.families.common.limits import Limits
from roofreport.families.common.textio import Document
from roofreport.pipeline import config
from tests.conftest import corpus_path


# -- the limits ------------------------------------------------------------------------------

def test_sizes_are_read_in_binary_units():
    assert [limits.parse_size(text) for text in ("1048576", "512K", "1.5G", "2GiB", "3 MB")] == \
        [1 << 20, 512 << 10, 3 << 29, 2 << 30, 3 << 20]
    for bad in ("", "10x", "-1M", "0", "1.5Q"):
        with pytest.raises(UsageError):
            limits.parse_size(bad, "--max-line")


def test_the_unpacked_cap_is_the_smaller_of_ratio_and_size():
    assert Limits().unpacked_cap(3 << 20) == 150 << 20            # 50 x a 3 MiB file
    assert Limits().unpacked_cap(100 << 20) == 2 << 30            # 2 GiB for a 100 MiB one
    assert Limits(unpacked_ratio=10, unpacked_bytes=1 << 20).unpacked_cap(1 << 20) == 1 << 20
    # a small file may always unpack to 64 MiB, unless the size limit is lower
    assert Limits().unpacked_cap(100_000) == limits.SMALL_UNPACKED == 64 << 20
    assert Limits(unpacked_bytes=1 << 20).unpacked_cap(100_000) == 1 << 20
    with pytest.raises(UsageError):
        Limits(line_bytes=0)


def test_a_toml_may_only_lower_a_limit(tmp_path):
    (tmp_path / "roofreport.toml").write_text('[limits]\nmax_line = "64K"\nmax_unpacked = "100G"\n'
                                              'max_memory = "3G"\n')
    log = tmp_path / "run.log"
    log.write_text("x\n")
    config.load.cache_clear()
    given = Limits(line_bytes=1 << 20, unpacked_bytes=1 << 30, max_memory=None)
    effective = config.file_limits(given, log, tmp_path)
    assert effective.line_bytes == 64 << 10          # lowered
    assert effective.unpacked_bytes == 1 << 30       # 100G would raise it: the CLI's stays
    assert effective.max_memory == 3 << 30           # unlimited lowered to 3G
    assert effective.unpacked_ratio == given.unpacked_ratio   # not named: unchanged


def test_a_toml_naming_an_unknown_limit_is_a_usage_error(tmp_path):
    (tmp_path / "roofreport.toml").write_text("[limits]\nmax_lines = 10\n")
    config.load.cache_clear()
    with pytest.raises(UsageError, match="max_lines"):
        config.load(tmp_path)


# -- compressed inputs -----------------------------------------------------------------------

@pytest.mark.parametrize("pack, kind", [(gzip.compress, "gzip"), (bz2.compress, "bzip2"),
                                        (lzma.compress, "xz")])
def test_a_compressed_input_is_read_up_to_its_cap(tmp_path, pack, kind):
    body = b'{"traceEvents": [' + b" " * (4 << 20) + b"]}"
    path = tmp_path / "trace.json.gz"
    path.write_bytes(pack(body))
    assert compressed.compression(path.read_bytes()[:8]) == kind
    with limits.applied(Limits(unpacked_ratio=1e6)):
        assert compressed.read_unpacked(path) == body
    with limits.applied(Limits(unpacked_ratio=1e6, unpacked_bytes=1 << 20)), pytest.raises(ParseError) as refused:
        compressed.read_unpacked(path, "trace.json.gz")
    message = refused.value.describe()
    assert message.startswith("trace.json.gz: ") and "unpacks to more than 1.0 MiB" in message
    assert "--max-unpacked" in message


def test_a_stream_that_ends_at_its_cap_is_whole(tmp_path):
    path = tmp_path / "exact.gz"
    path.write_bytes(gzip.compress(b"a" * 1000))
    with limits.applied(Limits(unpacked_bytes=1000)):
        assert len(compressed.read_unpacked(path)) == 1000
    with limits.applied(Limits(unpacked_bytes=999)), pytest.raises(ParseError):
        compressed.read_unpacked(path)


def test_a_plain_file_is_given_as_it_is(tmp_path):
    path = tmp_path / "trace.json"
    path.write_bytes(b'{"traceEvents": []}')
    with compressed.open_unpacked(path) as stream:
        assert stream.read() == b'{"traceEvents": []}'


def test_a_bomb_costs_no_more_than_the_cap(tmp_path):
    """A 1 GiB run of spaces packs into ~1 MB: reading stops at the cap (50 x 1 MB)."""
    path = tmp_path / "bomb.json.gz"
    with gzip.open(path, "wb", compresslevel=9) as fh:
        for _ in range(1024):
            fh.write(b" " * (1 << 20))
    cap = Limits().unpacked_cap(path.stat().st_size)
    with compressed.open_unpacked(path) as stream, pytest.raises(ParseError):
        while stream.read(1 << 20):
            pass
    assert cap < 100 << 20


@pytest.mark.parametrize("pack, kind", [(gzip.compress, "gzip"), (bz2.compress, "bzip2"),
                                        (lzma.compress, "xz")])
def test_a_cut_stream_is_an_error_or_kept_up_to_the_cut(tmp_path, pack, kind):
    body = bytes(range(256)) * 40_000
    packed = pack(body)
    path = tmp_path / "cut.bin"
    path.write_bytes(packed[:len(packed) // 2])
    with pytest.raises(ParseError, match=f"the {kind} stream ends early"):
        compressed.read_unpacked(path, "cut.bin")
    with compressed.open_unpacked(path, keep_damaged=True) as stream:
        kept = stream.read()
        assert stream.damage == f"the {kind} stream ends early (the file was cut)"
    assert 0 < len(kept) < len(body) and body.startswith(kept)


def test_a_damaged_gzip_stream_keeps_what_unpacked_before(tmp_path):
    body = b"".join(b"line %d of a trace\n" % n for n in range(200_000))
    packed = bytearray(gzip.compress(body))
    packed[len(packed) // 2:len(packed) // 2 + 64] = b"\xff" * 64
    path = tmp_path / "damaged.gz"
    path.write_bytes(packed)
    with compressed.open_unpacked(path, keep_damaged=True) as stream:
        kept = stream.read()
        assert stream.damage.startswith("the gzip stream is damaged (")
    assert 0 < len(kept) < len(body) and body.startswith(kept)


def _gzip_trace(path: Path, blanks: int) -> Path:
    """A Kineto trace of one kernel, then `blanks` spaces, gzipped (about 1 KB per MB)."""
    event = b'{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"device": 0}}'
    path.write_bytes(gzip.compress(b'{"schemaVersion": 1, "traceEvents": [' + event + b" " * blanks + b"]}",
                                   compresslevel=9))
    return path


def test_a_trace_is_unpacked_under_the_limits_of_the_cli_and_a_toml(tmp_path):
    """The Kineto reader unpacks through the one capped stream: --max-unpacked and a
    roofreport.toml's [limits] cap a .json.gz trace as they cap any compressed log."""
    trace = _gzip_trace(tmp_path / "rank0.pt.trace.json.gz", 8 << 20)
    config.load.cache_clear()
    assert _entry(CliRunner().invoke(cli, ["inspect", "--json", str(trace)]))["status"] == "ok"
    refused = _entry(CliRunner().invoke(cli, ["inspect", "--json", "--max-unpacked", "4M", str(trace)]))
    assert refused["status"] == "partial" and refused["rows"]["kernels"] == 1   # the event before the cap
    assert f"this gzip file ({limits.shown(trace.stat().st_size)}) unpacks to more than 4.0 MiB, the limit " \
        "for it (the most any file may unpack to)" in refused["error"]
    (tmp_path / "roofreport.toml").write_text('[limits]\nmax_unpacked = "2M"\n')
    config.load.cache_clear()
    assert "unpacks to more than 2.0 MiB" in _entry(CliRunner().invoke(cli, ["inspect", "--json", str(tmp_path)]))["error"]
    config.load.cache_clear()


# -- long lines ------------------------------------------------------------------------------

def test_a_long_line_is_cut_and_named(tmp_path):
    path = tmp_path / "nvprof.log"
    path.write_bytes(b"==1== Profiling result:\n" + b"x" * (3 << 20) + b"\nlast line\n")
    doc = Document.open(path)
    assert doc.lines()["text"].str.len_bytes().to_list() == [23, 1 << 20, 9]
    assert [(w.code, w.line) for w in doc.warnings] == [("input.long-line", 2)]
    assert "3,145,728 bytes" in doc.warnings[0].message


@pytest.mark.parametrize("end", [b"\r\n", b"\r"])
def test_line_numbers_of_cut_lines_count_every_line_end(tmp_path, end):
    path = tmp_path / "log.txt"
    path.write_bytes(end.join([b"a", b"b", "é".encode() * 700_000, b"c", b""]))
    doc = Document.open(path)
    assert doc.warnings[0].line == 3
    text = doc.lines()["text"].to_list()
    assert text[0:2] == ["a", "b"] and text[3] == "c"
    assert text[2] == "é" * (1 << 19)   # cut at a character's start, never inside it


def test_the_line_limit_comes_from_the_cli_and_a_toml_lowers_it(tmp_path):
    log = tmp_path / "gpu.csv"
    log.write_text("timestamp, name, utilization.gpu [%]\n"
                   "2024/03/12 14:03:11.123, NVIDIA A100-SXM4-40GB, 87 %\n" + "y" * 5000 + "\n")
    out = CliRunner().invoke(cli, ["inspect", "--json", "--max-line", "4K", str(log)])
    assert [w["code"] for w in _entry(out)["warnings"] if w["code"].startswith("input.")] == ["input.long-line"]
    assert [w for w in _entry(CliRunner().invoke(cli, ["inspect", "--json", str(log)]))["warnings"]
            if w["code"] == "input.long-line"] == []
    (tmp_path / "roofreport.toml").write_text('[limits]\nmax_line = "1K"\n')
    config.load.cache_clear()
    warned = _entry(CliRunner().invoke(cli, ["inspect", "--json", str(tmp_path)]))["warnings"]
    assert any(w["code"] == "input.long-line" and "1,024" in w["message"] for w in warned)


def _entry(out) -> dict:
    import json

    assert out.exit_code in (0, 1), out.output
    return json.loads(out.stdout)[0]     # (an exit 1 says why on stderr: the JSON is stdout alone)


def test_bad_limit_options_are_usage_errors(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("x\n")
    for option in (["--max-line", "lots"], ["--max-memory", "-5G"], ["--max-unpacked-ratio", "0.5"]):
        assert CliRunner().invoke(cli, ["inspect", *option, str(log)]).exit_code == 2, option


# -- SQLite ----------------------------------------------------------------------------------

def test_sqlite_rows_are_fetched_in_batches_to_the_same_frame(monkeypatch):
    path = corpus_path("nsys", "rep", "flame_torch_rtxa4500.sqlite")
    con = common_sqlite.connect(path)
    sql = 'SELECT start, "end", deviceId, gridX, demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL'
    whole = common_sqlite.query(con, sql)
    monkeypatch.setattr(common_sqlite, "QUERY_BATCH", 97)
    assert_frame_equal(common_sqlite.query(con, sql), whole)
    with pytest.raises(sqlite3.OperationalError):   # read-only
        con.execute("CREATE TABLE evil (x)")
    assert whole.height > 97


def test_an_empty_sqlite_query_is_an_empty_frame(tmp_path):
    path = tmp_path / "x.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    frame = common_sqlite.query(common_sqlite.connect(path), "SELECT a, b FROM t")
    assert frame.columns == ["a", "b"] and frame.height == 0


# -- a worker's memory -----------------------------------------------------------------------

def _gputrace(path: Path, rows: int) -> None:
    header = ("Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),"
              "DymSMem (MB),Bytes (MB),Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name\n")
    row = ("{start},2144,{corr},120,1,1,256,1,1,32,0.000,0.000,,,,,NVIDIA A100-SXM4-80GB (0),1,,7,"
           "\"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int, T2)\"\n")
    with open(path, "w") as fh:
        fh.write(header)
        fh.writelines(row.format(start=1_000_000 + index * 3000, corr=index) for index in range(rows))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no RLIMIT_DATA on this platform")
def test_a_file_past_the_memory_limit_fails_alone(tmp_path):
    _gputrace(tmp_path / "big_cuda_gpu_trace.csv", 300_000)        # ~60 MB
    small = tmp_path / "small_cuda_gpu_trace.csv"
    _gputrace(small, 50)
    data = roofreport.read(tmp_path, limits=Limits(max_memory=150 << 20))
    outcome = {Path(f.path).name: f for f in data.files}
    assert outcome["small_cuda_gpu_trace.csv"].status == "ok"
    big = outcome["big_cuda_gpu_trace.csv"]
    assert big.status == "error" and "--max-memory" in big.error and "150.0 MiB" in big.error
    assert data.kernels.filter(pl.col("source_file").str.ends_with("small_cuda_gpu_trace.csv")).height == 50
    # without the limit the same file reads
    assert roofreport.read_file(tmp_path / "big_cuda_gpu_trace.csv").kernels.height == 300_000


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_a_clean_file_with_a_line_past_the_limit_is_not_taken_as_it_is(chunk):
    import io

    from roofreport.families.common.textio import _as_is

    data = b"short\n" + b"x" * 100 + b"\nend"
    assert _as_is(io.BytesIO(data), chunk, line_limit=100)
    assert not _as_is(io.BytesIO(data), chunk, line_limit=99)
    assert not _as_is(io.BytesIO(b"y" * 100), chunk, line_limit=99)   # the last line, no line end
