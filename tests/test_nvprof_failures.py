"""Failed, empty and cut nvprof runs: the file's error is nvprof's own message (or the batch
system's) when nothing was read, a coded warning when data exists; a log cut mid-table keeps
every complete record and says where it was cut."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.families.common.textio import Document
from roofreport.families.nvprof import read as nvprof_read
from roofreport.pipeline import identity
from tests.conftest import corpus_path, parse_path

COURSE = "course"


def parse(*parts):
    return parse_path(corpus_path(*parts), "nvprof")


def test_internal_profiling_error():
    result = parse("nvprof", "summary", "hpml_alexnet_k80_internal_profiling_error.log")
    assert result.rows() == {}
    assert result.error.message == ("nvprof reported: Error: Internal profiling error 4277:999.; "
                                    "Error: CUDA profiling error.")
    assert result.error.line == 4
    assert result.error.describe().startswith(str(corpus_path("nvprof", "summary")))
    assert result.hints.command.startswith("python main.py --arch alexnet -b 16")
    assert [w.code for w in result.warnings] == ["nvprof.timeout", "nvprof.error", "nvprof.error"]


def test_no_events_or_metrics_profiled():
    result = parse("nvprof", "metrics", "hpml_resnet18_no_events_metrics_profiled.log")
    assert result.rows() == {}
    assert (result.error.message, result.error.line) == ("nvprof reported: No events/metrics were profiled.", 8)


def test_nothing_profiled_and_a_crashed_application():
    result = parse(COURSE, "pramitmallick-examples", "_deleted_in_history", "imagenet",
                   "out.general_300_alexnet_16_0.01_full_mem.744566")
    assert result.error.message == ("nvprof reported: No kernels were profiled.; No API activities were "
                                    "profiled.; Error: Application received signal 139")


def test_job_killed_before_nvprof_printed_results():
    result = parse(COURSE, "pramitmallick-examples", "imagenet", "final", "out.resnet18_8_0.01_p40_full.775824")
    assert result.rows() == {}
    assert result.error.message == (
        "the log ends before nvprof printed its results; the batch system said: slurmstepd: error: "
        "*** JOB 775824 ON gpu-31 CANCELLED AT 2019-04-16T03:11:15 DUE TO TIME LIMIT ***")
    assert result.error.line == 1746
    assert result.hints.label == "resnet18_8_0.01_p40_full"  # the first line: the job's label
    facts = identity.read_name(result.hints.label, is_file=False).facts
    assert facts["batch_size"] == 8 and facts["model"] == "resnet18"


def test_scheduler_message_glued_to_program_output():
    result = parse(COURSE, "pramitmallick-examples", "imagenet", "outputs", "out.expCloudML.702932")
    assert result.error.message.endswith("slurmstepd: error: *** JOB 702932 ON gpu-07 CANCELLED AT "
                                         "2019-04-11T03:52:16 DUE TO TIME LIMIT ***")


def test_log_that_ends_after_the_banner():
    result = parse(COURSE, "pramitmallick-examples", "imagenet", "outputs", "out.expCloudML.710822")
    assert result.error.message == "the log ends before nvprof printed any result (was the run cut off?)"
    assert result.hints.command.startswith("python main.py --arch alexnet -b 8")


def test_profiling_skipped_without_a_driver():
    result = parse(COURSE, "srinidhigoud-examples", "_deleted_in_history", "imagenet", "slurm-766274.out")
    assert result.error.message == ("nvprof reported: Warning: unable to locate cuda driver library, GPU "
                                    "profiling skipped; Error: Application returned non-zero code 1")


def test_timeout_and_invalid_records_are_warnings_when_data_exists():
    result = parse(COURSE, "pramitmallick-examples", "imagenet", "final", "out.alexnet_16_0.01_k80_full.756013")
    assert result.error is None and result.tables["kernels"].height == 89
    timeout = next(w for w in result.warnings if w.code == "nvprof.timeout")
    assert timeout.line == 4 and "Execution timeout, stopping the application..." in timeout.message
    assert "--timeout" in timeout.message


# -- cut logs ------------------------------------------------------------------------------------

def _cut(parts: tuple[str, ...], line_no: int, keep: int) -> tuple[Document, Document]:
    """The whole log, and the same log cut `keep` characters into line `line_no`."""
    text = corpus_path(*parts).read_text(encoding="utf-8")
    lines = text.split("\n")
    cut = "\n".join(lines[:line_no - 1] + [lines[line_no - 1][:keep]])
    return Document.from_text(text, "whole.log"), Document.from_text(cut, "cut.log")


@pytest.mark.parametrize("parts, line_no, keep, table", [
    (("nvprof", "csv", "hpml_alexnet_k80x4_nccl_winograd_summary.csv.log"), 40, 60, "kernels"),
    (("nvprof", "summary", "llmc_gpt2_t4_bf16_training_summary.txt"), 20, 50, "kernels"),
    (("nvprof", "trace", "cs533_mpi_vecadd_v100_gpu_trace_allprocs.txt"), 70, 90, "activities"),
    (("nvprof", "metrics", "darknet19_v100_metrics_all_text.txt"), 300, 100, "metrics"),
    (("nvprof", "metrics", "hpml_alexnet_p40x4_flopdp_metrics.csv.log"), 20, 120, "metrics"),
])
def test_a_cut_log_keeps_every_complete_record(parts, line_no, keep, table):
    whole_doc, cut_doc = _cut(parts, line_no, keep)
    whole = nvprof_read.parse_log(whole_doc, "log")
    cut = nvprof_read.parse_log(cut_doc, "log")
    before = whole.tables[table].filter(pl.col("source_line") < line_no)
    kept = cut.tables[table].filter(pl.col("source_line") < line_no)
    assert before.height > 0 and kept.equals(before)
    assert cut.tables[table].filter(pl.col("source_line") >= line_no).height == 0
    truncated = [w for w in cut.warnings if w.code == "nvprof.truncated"]
    assert [w.line for w in truncated] == [line_no]
    assert cut.error is None


def test_an_overflowing_number_is_unknown_and_reported():
    text = corpus_path("nvprof", "csv", "hpml_alexnet_k80x4_nccl_winograd_summary.csv.log").read_text()
    damaged = text.replace(",299.452280,36442,", ",1e999,36442,", 1)
    result = nvprof_read.parse_log(Document.from_text(damaged, "damaged.log"), "summary csv")
    nccl = result.tables["kernels"].filter(pl.col("name") == "ncclBroadcastKernel_copy_i8(ncclColl)")
    assert nccl.select("count", "duration_ns").rows() == [(36442, None)]
    assert ("nvprof.bad-number", 11) in [(w.code, w.line) for w in result.warnings]


def test_a_damaged_row_is_reported_and_the_rest_kept():
    text = corpus_path("nvprof", "summary", "cs566_reduction_summary_2024.out").read_text()
    damaged = text.replace("  2.2027ms       400", "  2.2027xs       400", 1)
    result = nvprof_read.parse_log(Document.from_text(damaged, "damaged.log"), "summary")
    assert "fill(void)" not in result.tables["kernels"]["name"].to_list()
    assert result.tables["kernels"].height == 5 and result.tables["api_calls"].height == 14
    warning = next(w for w in result.warnings if w.code == "nvprof.unreadable-row")
    assert warning.line == 9 and "damaged.log:9:" in warning.message
