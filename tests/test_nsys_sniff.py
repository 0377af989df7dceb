"""Every nsys file of the corpus is recognised as nsys and parses without an exception; files
of other families and non-log files are never taken for nsys."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofreport.families.common.textio import Document
from roofreport.pipeline.discover import discover
from roofreport.pipeline.sniff import sniff
from tests.conftest import CORPUS, corpus_path

_OPAQUE = (".nsys-rep", ".qdrep")


def _nsys_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    found = [p for p in (CORPUS / "nsys").rglob("*") if p.is_file() and p.name != "MANIFEST.tsv"]
    found += [p for p in (CORPUS / "derived" / "nsys").glob("*") if p.is_file()]
    course = CORPUS / "course"
    found += course.glob("Anoushka21-Cloud-and-MachineLearning/proj1/*/*/tmp_nsys_gputrace.csv")
    found += course.glob("PranavDani-Flame/Results/*/*_cuda_gpu_trace_base.csv")
    found += course.glob("nin-ran-jan-HPML_Project/**/*.txt")
    return sorted(found)


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(CORPUS)) for p in paths]


NSYS_FILES = _nsys_files()


def test_the_corpus_has_nsys_files():
    corpus_path("nsys")
    assert len(NSYS_FILES) >= 70


@pytest.mark.parametrize("path", NSYS_FILES, ids=_ids(NSYS_FILES))
def test_every_nsys_file_is_nsys_and_parses(path):
    found = sniff(path)
    assert found.family == "nsys", found.skip_reason
    if path.suffix in _OPAQUE:
        assert found.spec is None and "nsys export" in found.skip_reason
        return
    source = path if found.spec.binary else Document.open(path)
    result = found.spec.parse(source, found.variant)   # an exception here fails the test
    assert result.rows() or result.error is not None
    if result.error is not None:
        assert result.error.path and result.error.message


@pytest.mark.parametrize("folder", ["ncu", "nvprof", "smi", "course", "derived/ncu", "derived/nvprof"])
def test_no_other_file_is_taken_for_nsys(folder):
    root = corpus_path(*folder.split("/"))
    nsys = {p.resolve() for p in NSYS_FILES}
    wrong = [str(p.relative_to(CORPUS)) for p, _ in discover([root])
             if p.resolve() not in nsys and sniff(p).family == "nsys"]
    assert wrong == []


def test_variants_name_the_report_and_the_layout():
    corpus_path("nsys")   # (skips, saying why, without the corpus)
    variants = {p.name: sniff(p).variant for p in NSYS_FILES}
    assert variants["flame_torch_rtxa4500_cuda_gpu_trace_base_greenctx.csv"] == "gputrace csv"
    assert variants["flame_torch_rtxa4500_gpukernsum.csv"] == "gpukernsum csv"
    assert variants["flame_torch_rtxa4500_nvtxkernsum.csv"] == "nvtxkernsum csv"
    assert variants["cub_sort_nsys_cuda11.2_vs_cuda10.2_tables.txt"] == "stats console 2020-2021"
    assert variants["olcf_hw6_rtx3070_nsys2022_oldnames_newcols_um.output"] == "stats console 2022"
    assert variants["torch_gcn_nsys2024_stats.txt"] == "stats console 2023+"
    assert variants["pytorch_a100_nsys2022_gputrace_progressbar_cr.log"] == "gputrace console"
    assert variants["abc_nsys2023.1_analyze_rules_memcpy_sync_gaps.txt"] == "expert rules console"
    assert variants["olcf_hw6_rtx3070_nsys2022_um.sqlite"] == "sqlite export (schema 2.9.1)"
    assert variants["nsysai_h100_2gpu_1s_nsys2026.2.sqlite"] == "sqlite export (schema 3.25.0)"


def test_nvprof_sqlite_is_not_nsys():
    root = corpus_path("nvprof", "nvvp")
    sqlite = [p for p in root.iterdir() if p.read_bytes()[:16] == b"SQLite format 3\x00"]
    assert sqlite, "the corpus should hold nvprof SQLite files"
    assert all(sniff(p).family != "nsys" for p in sqlite)


def test_the_text_sniffers_literal_check_only_skips_heads_it_would_refuse(monkeypatch):
    """`text._NEEDED` (a table rule, a report's processing, step or title line, a classic
    title) lets the console sniffer refuse a head without classifying its lines: on every file
    of the corpus and sample_logs it gives the verdict the full sniff gives, and it does skip
    most of them (the files of other families)."""
    import re

    from roofreport.families.common.textio import read_head
    from roofreport.families.nsys import text
    from tests.conftest import SAMPLE_LOGS

    files = sorted(p for root in (CORPUS, SAMPLE_LOGS) if root.is_dir() for p in root.rglob("*") if p.is_file())
    heads = [read_head(p) for p in files]
    quick = [text.sniff_text(head) for head in heads]
    skipped = sum(1 for head in heads if not head.binary and not text._NEEDED.search(head.text))
    monkeypatch.setattr(text, "_NEEDED", re.compile(""))
    assert quick == [text.sniff_text(head) for head in heads]
    assert any(quick) and skipped > len(files) / 2
