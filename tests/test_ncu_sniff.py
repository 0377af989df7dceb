"""Every Nsight Compute file of the corpus is sniffed as ncu and parses without a crash; no file
of another family (nsys, nvprof, nvidia-smi, course scripts and READMEs) is taken for ncu.

Files are found by globbing the corpus folders, so a new sample is a new case; the manifests
say which files are not ncu output at all (an author's grep/awk totals).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from roofreport.families import ncu
from roofreport.families.common.textio import read_head
from roofreport.pipeline.ingest import parse_file
from roofreport.pipeline.sniff import _NOT_LOG_SUFFIXES, sniff
from tests.conftest import CORPUS, corpus_path


def _manifest(folder: str) -> dict[str, str]:
    """file (relative to the folder) -> format, from the folder's MANIFEST.tsv."""
    path = CORPUS / folder / "MANIFEST.tsv"
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8") as fh:
        return {row["file"]: row["format"] for row in csv.DictReader(fh, delimiter="\t")}


def _rel(path: Path) -> str:
    return path.relative_to(CORPUS).as_posix()


def _course_ncu() -> set[str]:
    return {f for f, kind in _manifest("course").items() if kind.startswith("ncu text")}


def _ncu_files() -> list[str]:
    own = _manifest("ncu")
    files = [p for p in sorted((CORPUS / "ncu").glob("*/*"))
             if own.get(p.relative_to(CORPUS / "ncu").as_posix(), "ncu").startswith("ncu")]
    files += sorted((CORPUS / "derived" / "ncu").glob("*"))
    files += [CORPUS / "course" / f for f in sorted(_course_ncu())]
    return [_rel(p) for p in files if p.is_file()]


def _other_files() -> list[str]:
    """Other families' files, course scripts/READMEs/other logs, non-ncu files in ncu/, and
    the corpus's own manifests and field guides (they quote ncu's messages)."""
    found = [CORPUS / "ncu" / f for f, kind in _manifest("ncu").items() if not kind.startswith("ncu")]
    for folder in ("nsys", "nvprof", "smi", "derived/nsys", "derived/nvprof", "course"):
        found += sorted((CORPUS / folder).rglob("*"))
    course_ncu = {f"course/{f}" for f in _course_ncu()}
    found += [*CORPUS.glob("*.md"), *CORPUS.glob("*/MANIFEST.tsv"), *CORPUS.glob("derived/*.*")]
    return [_rel(p) for p in found if p.is_file() and _rel(p) not in course_ncu]


NCU_FILES = _ncu_files() if CORPUS.is_dir() else []
OTHER_FILES = _other_files() if CORPUS.is_dir() else []

# ncu's refusals: files holding no results, reported with ncu's own words.
REFUSALS = {
    "derived/ncu/triton_silu_2025.details.txt": "Failed to load report file 'triton_silu_2025.ncu-rep'.",
    "derived/ncu/raytracer_octree_cc89.details.txt": "Failed to load report file 'raytracer_octree_cc89.ncu-rep'.",
    "derived/ncu/gpu_power_model_PS1_100.details.txt":
        "Failed to load report file 'gpu_power_model_PS1_100.ncu-rep'.",
    "ncu/csv/b200_flashinfer_fp8_no_kernels_error.csv": "The application returned an error code (1).",
    "ncu/csv/windows_no_kernels_available_kernels_list.csv": "No kernels were profiled.",
}


def test_the_corpus_globs_find_every_kind():
    corpus_path("ncu")
    kinds = {f.split("/")[1] for f in NCU_FILES if f.startswith("ncu/")}
    assert kinds == {"text", "csv", "raw_csv", "rep"}
    assert sum(f.startswith("derived/ncu/") for f in NCU_FILES) >= 30
    assert sum(f.startswith("course/") for f in NCU_FILES) == 6


@pytest.mark.parametrize("rel", NCU_FILES)
def test_every_ncu_file_is_sniffed_as_ncu(rel):
    sniffed = sniff(corpus_path(*rel.split("/")))
    assert sniffed.family == "ncu", sniffed.skip_reason
    if rel.endswith((".ncu-rep", ".nsight-cuprof-report")):  # read when the extra is installed
        if ncu.report_module_installed():
            assert sniffed.readable and sniffed.spec.name == "ncu-rep"
        else:
            assert not sniffed.readable and "binary Nsight Compute report" in sniffed.skip_reason
    else:
        assert sniffed.readable and sniffed.variant


@pytest.mark.parametrize("rel", [f for f in NCU_FILES if not f.endswith(("-rep", "-report"))])
def test_every_ncu_file_parses_to_kernels_or_to_ncus_own_refusal(rel):  # reports: test_ncu_rep.py
    path = corpus_path(*rel.split("/"))
    sniffed = sniff(path)
    result = parse_file(path, sniffed.spec.name, sniffed.variant, rel)
    if rel in REFUSALS:
        assert not result.tables
        assert result.error.message.startswith(f"ncu reported: {REFUSALS[rel]}")
        assert result.error.path == rel and result.error.line is not None
        return
    assert result.error is None, result.error.describe()
    kernels = result.tables["kernels"]
    assert kernels.height > 0
    assert kernels["name"].null_count() == 0 and kernels["launch_id"].is_unique().all()
    assert kernels["source_line"].min() >= 1
    metrics = result.tables["metrics"]
    assert metrics.height > 0
    assert set(metrics["launch_id"].unique()) <= set(kernels["launch_id"])


@pytest.mark.parametrize("rel", OTHER_FILES)
def test_files_of_other_families_are_not_ncu(rel):
    path = corpus_path(*rel.split("/"))
    assert sniff(path).family != "ncu"
    if path.suffix.lower() not in _NOT_LOG_SUFFIXES:  # documents never reach the sniffers
        head = read_head(path)
        assert ncu.sniff_csv(head) is None
        assert ncu.sniff_text(head) is None
