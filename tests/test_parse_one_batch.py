"""`parse` of logs that make one batch reads them in memory (issue #35): a dataset folder of
its own would hold their rows whole all the same (`store.one_batch`), so spooling them to disk
and back only costs CPU and memory. The tables written are the spooled read's, exactly."""

from __future__ import annotations

import shutil

import polars as pl
from click.testing import CliRunner
from polars.testing import assert_frame_equal

from roofreport.cli import cli
from roofreport.pipeline import generation, store
from roofreport.tables import schema
from tests.conftest import SAMPLE_LOGS

ONE_FILE = SAMPLE_LOGS / "v100" / "resnet18" / "report_cuda_gpu_trace.csv"


def _parse(*args: str) -> None:
    result = CliRunner().invoke(cli, ["parse", *args, "--quiet", "-j", "1"], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_one_file_is_one_batch_two_batches_are_not_and_a_dataset_folder_never(tmp_path, monkeypatch):
    # (the cuts hash the names below the folder given, not the temporary folder above it: no
    # patch keeps a.csv and b.csv together, wherever pytest puts them)
    assert store.one_batch([ONE_FILE])
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("a.csv", "b.csv"):
        shutil.copy(ONE_FILE, logs / name)
    assert store.one_batch([logs])
    monkeypatch.setattr(generation, "FILES_PER_BATCH", 1)   # every file opens a batch
    assert not store.one_batch([logs])
    _parse(str(ONE_FILE), "-o", str(tmp_path / "ds"), "--update")
    assert not store.one_batch([tmp_path / "ds"])


def test_parse_of_one_batch_reads_in_memory_and_writes_the_spooled_reads_tables(tmp_path, monkeypatch):
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS / "v100" / "resnet18", logs)
    assert store.one_batch([logs])
    with monkeypatch.context() as patched:     # no dataset folder: a spooled read would fail
        def refused(*args, **kwargs):
            raise AssertionError("parse of one batch went through a dataset folder")
        patched.setattr(store, "prepare_update", refused)
        _parse(str(logs), "-o", str(tmp_path / "memory"))
    with monkeypatch.context() as patched:
        patched.setattr(store, "one_batch", lambda paths: False)
        _parse(str(logs), "-o", str(tmp_path / "spooled"))
    for name in schema.TABLES:
        memory = pl.read_parquet(tmp_path / "memory" / f"{name}.parquet")
        spooled = pl.read_parquet(tmp_path / "spooled" / f"{name}.parquet")
        assert_frame_equal(memory, spooled, check_exact=True)
    assert pl.read_parquet(tmp_path / "memory" / "kernels.parquet")["in_run_total"].any()


def test_whether_logs_make_one_batch_is_told_from_a_walk_that_stops_at_the_second(monkeypatch):
    """`parse` asks before its read walks the logs: the question walks no further than the
    file that opens a second batch (the demo logs: their third file), not the whole campaign."""
    from roofreport.pipeline.discover import discover, walk

    walked = []

    def counted(paths):
        for path, root in walk(paths):
            walked.append(path)
            yield path, root

    monkeypatch.setattr(store, "walk", counted)
    assert not store.one_batch([SAMPLE_LOGS])
    found = discover([SAMPLE_LOGS])
    cut = generation.batches_of([str(path) for path, _ in found], generation.batch_names(found))
    assert len(walked) == len(cut[0].members) + 1 < len(found)
    assert walked == [path for path, _ in found[:len(walked)]]
    walked.clear()
    assert store.one_batch([ONE_FILE]) and walked == [ONE_FILE]
