"""What a campaign's parse keeps per file until its runs are grouped (issue #30's memory at 50k
files): each file's facts compacted as they arrive from a worker, equal to the facts read, and
the files manifest built a few thousand files at a time, equal to one built at once."""

from __future__ import annotations

import pickle
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from roofreport.pipeline import discover, generation, ingest
from roofreport.pipeline.facts import FileFacts
from tests.conftest import corpus_path


def _read_facts(*folders: Path) -> list[FileFacts]:
    tasks = ingest.file_tasks(discover.discover(list(folders)), (), fingerprint=True)
    return [pickle.loads(pickle.dumps(ingest.read_one(task).facts)) for task in tasks]   # (as a worker sends them)


def test_compacted_facts_equal_the_facts_read_and_share_their_limits():
    facts = _read_facts(corpus_path("course", "srikarym-hpml"), corpus_path("course", "PranavDani-Flame"))
    compact = [f.compact() for f in facts]
    assert len(facts) > 50 and any(f.warnings for f in facts) and any(f.hints.device_name for f in facts)
    assert compact == facts                                          # every field (the JSON text apart)
    assert [c.to_json() for c in compact] == [f.to_json() for f in facts]
    assert all(c._json is None for c in compact)                    # the text is not kept
    read = [c for c in compact if c.limits is not None]
    assert len(read) > 50 and all(c.limits is read[0].limits for c in read)   # one dict for all


def test_the_files_manifest_written_in_pieces_equals_one_written_whole(tmp_path, monkeypatch):
    facts = [f.compact() for f in _read_facts(corpus_path("course", "srikarym-hpml"))]
    mtimes = [n * 1000 if n % 7 else None for n in range(len(facts))]
    displays = [f.display for f in facts]
    batches = generation.batches_of(displays, displays)
    generation._write_files_manifest(tmp_path, facts, mtimes, batches)
    whole = pl.read_parquet(tmp_path / generation.FILES_MANIFEST)
    monkeypatch.setattr(generation, "_MANIFEST_CHUNK", 5)
    pieces_dir = tmp_path / "pieces"
    generation._write_files_manifest(pieces_dir, facts, mtimes, batches)
    pieces = pl.read_parquet(pieces_dir / generation.FILES_MANIFEST)
    assert whole.height == len(facts) > 10
    assert_frame_equal(pieces, whole)
    assert whole["facts"].to_list() == [f.to_json() for f in facts]
    assert whole["mtime_ns"].to_list() == mtimes
    assert generation._write_files_manifest(tmp_path / "none", [], [], []) is None
    assert pl.read_parquet(tmp_path / "none" / generation.FILES_MANIFEST).height == 0
