"""Every nvprof file of the corpus is recognised as nvprof and parses without an exception;
nothing else (other profilers' logs, scripts, READMEs, job output) is taken for nvprof.

The cases are the corpus MANIFESTs' rows, so a new sample is a new case.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from roofreport.families import nvprof
from roofreport.families.common.textio import Document, read_head
from roofreport.families.nvprof import sqlite as nvprof_sqlite
from roofreport.pipeline.sniff import sniff
from tests.conftest import CORPUS

# A failed nvprof run the course MANIFEST files as plain job output: nvprof's own
# `======== Warning: unable to locate cuda driver library, GPU profiling skipped`.
_NVPROF_BEYOND_MANIFEST = {"course/srinidhigoud-examples/_deleted_in_history/imagenet/slurm-766274.out"}


def _manifest_rows() -> list[tuple[str, str]]:
    """(path relative to the corpus, format) for every file the MANIFESTs list."""
    rows = []
    for manifest in sorted(CORPUS.rglob("MANIFEST.tsv")) if CORPUS.is_dir() else []:
        folder = manifest.parent.relative_to(CORPUS).as_posix()
        with open(manifest, encoding="utf-8") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                # Some listed binary reports are not shipped in the corpus copy.
                if (manifest.parent / row["file"]).is_file():
                    rows.append((f"{folder}/{row['file']}", row.get("format") or ""))
    return rows


def _is_nvprof(rel: str, fmt: str) -> bool:
    return (rel.startswith(("nvprof/", "derived/nvprof/")) or fmt.lower().startswith("nvprof")
            or rel in _NVPROF_BEYOND_MANIFEST)


ROWS = _manifest_rows()
NVPROF = [rel for rel, fmt in ROWS if _is_nvprof(rel, fmt)]
OTHERS = [rel for rel, fmt in ROWS if not _is_nvprof(rel, fmt)]


def _existing(rel: str) -> Path:
    path = CORPUS / rel
    if not path.is_file():
        pytest.skip(f"corpus file missing: {path}")
    return path


def test_the_corpus_has_nvprof_files_of_every_kind():
    if not CORPUS.is_dir():
        pytest.skip(f"real-log corpus not found at {CORPUS}")
    assert len(NVPROF) > 380
    assert len(OTHERS) > 300


@pytest.mark.parametrize("rel", NVPROF)
def test_nvprof_file_is_recognised_and_parses(rel):
    path = _existing(rel)
    sniffed = sniff(path)
    assert sniffed.family == "nvprof", (rel, sniffed.skip_reason)
    # Called directly, not through ingest.parse_file: an exception here fails the test.
    source = path if sniffed.spec.binary else Document.open(path)
    result = sniffed.spec.parse(source, sniffed.variant)
    assert result.family == "nvprof"
    # Either something was read, or the file says why not.
    assert result.rows() or result.error is not None, rel
    if result.error is not None and not result.rows():
        assert result.error.message


@pytest.mark.parametrize("rel", OTHERS)
def test_other_files_are_not_taken_for_nvprof(rel):
    path = _existing(rel)
    head = read_head(path)
    assert nvprof.sniff_log(head) is None, rel
    assert nvprof.sniff_session_xml(head) is None, rel
    assert nvprof_sqlite.sniff(head) is None, rel


def test_nvvp_session_xml_is_nvprof_without_data():
    path = _existing("nvprof/nvvp/openacc_nbody_k20m_session_xml.nvvp")
    sniffed = sniff(path)
    assert (sniffed.family, sniffed.variant) == ("nvprof", "nvvp session (xml)")
    result = sniffed.spec.parse(Document.open(path), sniffed.variant)
    assert result.rows() == {}
    assert result.error.message.startswith("NVVP session file: holds no profile data")


@pytest.mark.parametrize("rel, variant", [
    ("nvprof/summary/llmc_gpt2_t4_bf16_training_summary.txt", "summary"),
    ("nvprof/summary/thrust2d_convolve_old_notype_cuda8.profile.time", "summary (CUDA <= 8 layout)"),
    ("nvprof/csv/hpml_alexnet_k80x4_nccl_winograd_summary.csv.log", "summary csv"),
    ("nvprof/csv/epicflow_sor_handmade_summary_noeol.csv", "summary csv (no Type column)"),
    ("nvprof/trace/cs533_mpi_vecadd_v100_gpu_trace_allprocs.txt", "gpu trace"),
    ("nvprof/trace/cs533_mpi_vecadd_v100_api_trace_allprocs.txt", "api trace"),
    ("derived/nvprof/darknet_jetson_xavier_nvprof_sqlite_out.gputrace.csv", "gpu trace csv"),
    ("nvprof/metrics/darknet19_v100_metrics_all_text.txt", "metrics"),
    ("nvprof/metrics/maxdnn_gtx980_events_and_metrics_2015_readme_excerpt.txt", "events"),
    ("nvprof/metrics/hpml_alexnet_p40x4_flopdp_metrics.csv.log", "metrics csv"),
    ("nvprof/metrics/hpml_vgg16_k80x4_flopdp_excel_quoted_crlf.tsv", "metrics tsv (spreadsheet re-save)"),
    ("nvprof/nvvp/darknet_jetson_xavier_nvprof_sqlite_out.prof", "sqlite profile"),
    # 1,700 lines of training output fill the 64 KiB head before the table starts.
    ("nvprof/csv/hpml_alexnet_p40x4_full_with_training_log.csv.log", "log"),
    ("nvprof/summary/hpml_alexnet_k80_internal_profiling_error.log", "log"),
])
def test_variant_names_the_first_table(rel, variant):
    assert sniff(_existing(rel)).variant == variant
