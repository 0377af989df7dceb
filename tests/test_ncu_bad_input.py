"""Damaged ncu files and the few ncu variants the corpus lacks (../shared/corpus/FORMATS-ncu.md describes them).

Damaged files are real corpus files cut or broken in a temporary folder: errors carry the
file, line, column and a caret snippet, and everything read before the damage is kept (status
"partial"). The hand-written logs follow the field guide's exact examples: a per-gpu summary,
NVTX columns in a details CSV, an unsupported device, several processes in one log.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from roofreport.families.spec import ParseResult
from roofreport.pipeline.ingest import ingest, parse_file
from roofreport.pipeline.sniff import sniff
from tests.conftest import corpus_path


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def _parse(path: Path) -> ParseResult:
    sniffed = sniff(path)
    assert sniffed.family == "ncu", sniffed.skip_reason
    return parse_file(path, sniffed.spec.name, sniffed.variant, path.name)


def _csv_lines(*parts: str) -> list[str]:
    return corpus_path(*parts).read_text(encoding="utf-8").splitlines()


# -- damaged CSV -----------------------------------------------------------------------------

def test_csv_cut_inside_a_quoted_field_keeps_the_rows_before(tmp_path):
    lines = _csv_lines("ncu", "csv", "a100_sgemm_roofline_metrics_print_fp.csv")
    cut = lines[20][:lines[20].index("smsp__") + 10]  # line 21 ends inside "smsp__sass..."
    path = _write(tmp_path, "cut.csv", "\n".join(lines[:20] + [cut]))
    result = _parse(path)
    err = result.error
    assert (err.path, err.line) == ("cut.csv", 21)
    assert err.column == cut.index('"smsp__') + 1
    assert err.describe().splitlines()[0].startswith("cut.csv:21:")
    assert err.describe().splitlines()[-1].strip() == "^"
    # Launch 0 (rows 2-16) and the first rows of launch 1 survive.
    assert result.tables["kernels"]["launch_id"].to_list() == [0, 1]
    assert result.tables["metrics"]["source_line"].max() == 20
    assert ingest([path], jobs=1).files[0].status == "partial"


def test_csv_cut_between_fields_is_a_short_last_row(tmp_path):
    lines = _csv_lines("ncu", "csv", "a100_sgemm_roofline_metrics_print_fp.csv")
    cut = lines[20][:lines[20].index('"Command line')]  # `"1",...,"8.0",`
    path = _write(tmp_path, "short.csv", "\n".join(lines[:20] + [cut]))
    result = _parse(path)
    assert (result.error.line, result.error.column) == (21, len(cut) + 1)
    assert "fewer fields than the header's 15" in result.error.message
    assert result.tables["metrics"].height == 19


def test_broken_row_in_the_middle_is_skipped_with_its_place(tmp_path):
    lines = _csv_lines("ncu", "csv", "a100_sgemm_roofline_metrics_print_fp.csv")
    broken = lines[5] + "x"  # `..."764,999,991.90"x`: text after a closing quote
    path = _write(tmp_path, "broken.csv", "\n".join(lines[:5] + [broken] + lines[6:]))
    result = _parse(path)
    (warning,) = [w for w in result.warnings if w.code == "ncu.unreadable-row"]
    assert warning.line == 6
    assert f"broken.csv:6:{len(broken)}:" in warning.message
    assert result.tables["metrics"].height == 44  # 45 rows, one lost
    # a lost row makes the file partial (issue #34): a failed input, never "ok"
    assert (result.error.path, result.error.line) == ("broken.csv", 6)
    assert "ncu.unreadable-row" in result.error.message
    assert ingest([path], jobs=1).files[0].status == "partial"


def test_program_output_between_rows_is_skipped_with_a_warning(tmp_path):
    lines = _csv_lines("ncu", "csv", "a100_sgemm_roofline_metrics_print_fp.csv")
    path = _write(tmp_path, "chatty.csv", "\n".join(lines[:10] + ["Time = 2.5 s, ok"] + lines[10:]))
    result = _parse(path)
    assert result.error is None and result.tables["metrics"].height == 45
    assert [(w.code, w.line) for w in result.warnings] == [("ncu.program-output", 11)]


def test_broken_header_is_an_error_at_its_column(tmp_path):
    header = '"ID","Process ID","Process Name,"Host Name","Kernel Name"'
    path = _write(tmp_path, "header.csv", "==PROF== Disconnected from process 1\n" + header + "\n")
    result = _parse(path)
    assert not result.tables
    assert (result.error.line, result.error.path) == (2, "header.csv")
    assert result.error.column == header.index("Host Name") + 1


# -- damaged text ----------------------------------------------------------------------------

def test_text_log_cut_inside_a_table_keeps_the_kernels_and_warns(tmp_path):
    """A cut log is a partial read (README: rows before the problem kept, status `partial`)."""
    lines = corpus_path("ncu", "text", "t4_alexnet_imagenet_roofline_metrics_table_layout.txt") \
        .read_text(encoding="utf-8").splitlines()
    last_head = max(i for i, line in enumerate(lines[:200]) if line.startswith("  ") and ", Context " in line)
    path = _write(tmp_path, "cut.txt", "\n".join(lines[:last_head + 8]))
    result = _parse(path)
    assert (result.error.path, result.error.line) == ("cut.txt", last_head + 8)
    assert result.error.message == (f"the log was cut short: log ends inside a metrics table (line {last_head + 8}): "
                                    "the last kernel may be incomplete; the kernels before are kept")
    assert [w.code for w in result.warnings] == ["ncu.truncated"]
    assert result.warnings[0].line == last_head + 8
    assert result.tables["kernels"]["source_line"].max() == last_head + 1


# -- variants described in ../shared/corpus/FORMATS-ncu.md but absent from the corpus --------------------------

UNSUPPORTED = """\
==PROF== Connected to process 4242 (/home/u/bin/ax)
==ERROR== Profiling is not supported on device 0. To find out supported GPUs refer --list-chips option.
==PROF== Disconnected from process 4242
"""


def test_unsupported_device_is_ncus_own_error(tmp_path):
    result = _parse(_write(tmp_path, "p100.txt", UNSUPPORTED))
    assert result.variant == "text (no results)"
    assert result.error.message == ("ncu reported: Profiling is not supported on device 0. "
                                    "To find out supported GPUs refer --list-chips option.")
    assert result.error.line == 2
    assert result.error.text.startswith("==ERROR== Profiling is not supported")


PER_GPU = """\
[7001] raytrace@127.0.0.1
  Device 0
    render(sphere (*)[488], int), Block Size 256, Grid Size 8192, 1 invocations 
    Section: GPU Speed Of Light Throughput
    Metric Name            Metric Unit Minimum            Maximum            Average           
    ---------------------- ----------- ------------------ ------------------ ------------------
    gpu__time_duration.sum nsecond     13009685195.000000 13009685195.000000 13009685195.000000
    dram__bytes.sum        Mbyte       12.500000          12.500000          12.500000         

    render(sphere (*)[488], int), Block Size 256, Grid Size 8192, 1 invocations 
    Section: Launch Statistics
    Metric Name          Metric Unit Minimum    Maximum    Average   
    -------------------- ----------- ---------- ---------- ----------
    launch__block_size               256.000000 256.000000 256.000000
  Device 1
    render(sphere (*)[488], int), Block Size 256, Grid Size 8192, 3 invocations 
    Section: GPU Speed Of Light Throughput
    Metric Name            Metric Unit Minimum   Maximum   Average  
    ---------------------- ----------- --------- --------- ---------
    gpu__time_duration.sum nsecond     10.000000 20.000000 15.000000
"""


def test_per_gpu_summary_groups_kernels_by_device(tmp_path):
    path = _write(tmp_path, "summary_per_gpu.log", PER_GPU)
    result = _parse(path)
    assert result.variant == "text summary per-gpu"
    kernels = result.tables["kernels"]
    assert kernels.select("launch_id", "device", "count", "grid", "block").rows() == [
        (0, "0", 1, "8192", "256"), (1, "1", 3, "8192", "256")]
    assert (kernels["name"] == "render(sphere (*)[488], int)").all()
    metrics = result.tables["metrics"].filter(pl.col("stat") == "avg")
    assert metrics.select("launch_id", "metric", "value").rows() == [
        (0, "gpu__time_duration.sum", 13009685195.0), (0, "dram__bytes.sum", 12.5e6),
        (0, "launch__block_size", 256.0), (1, "gpu__time_duration.sum", 15.0)]
    durations = ingest([path], jobs=1)["kernels"].sort("launch_id")["duration_ns"].to_list()
    assert durations == [13009685195.0, 45.0]


NVTX_CSV = """\
==PROF== Connected to process 51 (/usr/bin/python3)
"ID","Process ID","Process Name","Host Name","thread Domain:Push/Pop_Range:PL_Type:PL_Value",\
"Id:Domain:Start/Stop_Range:PL_Type:PL_Value","Kernel Name","Kernel Time","Context","Stream",\
"Section Name","Metric Name","Metric Unit","Metric Value"
"0","51","python3","127.0.0.1",""," ""0:<default domain>:linear_nvtx:none:none"" ","k(float*)",\
"2023-May-07 20:01:31","1","13","Command line profiler metrics","gpu__time_duration.sum","usecond","1,234.50"
"1","51","python3","127.0.0.1","","","k(float*)","2023-May-07 20:01:31","1","13",\
"Command line profiler metrics","gpu__time_duration.sum","nsecond","800"
"""


def test_nvtx_columns_of_a_details_csv_give_the_region(tmp_path):
    result = _parse(_write(tmp_path, "nvtx.csv", NVTX_CSV))
    assert result.variant == "csv details 14 columns"
    kernels = result.tables["kernels"]
    assert kernels.select("launch_id", "region", "stream").rows() == [(0, "linear_nvtx", 13), (1, None, 13)]
    assert result.tables["metrics"]["value"].to_list() == [1234500.0, 800.0]
    assert not result.warnings


TWO_PROCESSES = """\
==PROF== Connected to process 100 (/bin/a)
==PROF== Profiling "k" - 0: 0%....50%....100% - 8 passes
==PROF== Disconnected from process 100
==PROF== Connected to process 200 (/bin/b)
==PROF== Profiling "k" - 1: 0%....50%....100% - 8 passes
==PROF== Disconnected from process 200
[100] a@127.0.0.1
  k(int) (1, 1, 1)x(32, 1, 1), Context 1, Stream 7, Device 0, CC 8.6
    Section: Command line profiler metrics
    ---------------------- ----------- ------------
    Metric Name            Metric Unit Metric Value
    ---------------------- ----------- ------------
    gpu__time_duration.sum          us         1.50
    ---------------------- ----------- ------------

[200] b@127.0.0.1
  k(int) (1, 1, 1)x(32, 1, 1), Context 1, Stream 7, Device 1, CC 8.6
    Section: Command line profiler metrics
    ---------------------- ----------- ------------
    Metric Name            Metric Unit Metric Value
    ---------------------- ----------- ------------
    gpu__time_duration.sum          ns          900
    ---------------------- ----------- ------------
"""


def test_several_processes_in_one_log(tmp_path):
    result = _parse(_write(tmp_path, "two.txt", TWO_PROCESSES))
    assert result.variant == "text 2023+"
    assert result.tables["kernels"].select("launch_id", "device", "source_line").rows() == [
        (0, "0", 8), (1, "1", 17)]
    assert result.tables["metrics"]["value"].to_list() == [1500.0, 900.0]


@pytest.mark.parametrize("text", ["", "\n\n", "Time = 2.5 s\n"])
def test_empty_files_are_not_ncu(tmp_path, text):
    assert sniff(_write(tmp_path, "empty.csv", text)).family is None


def test_a_run_that_printed_only_status_lines_is_an_error_not_an_empty_success(tmp_path):
    result = _parse(_write(tmp_path, "quiet.csv", "==PROF== Connected to process 1 (/bin/a)\n"
                                                  "==PROF== Disconnected from process 1\n"))
    assert result.variant == "csv (no results)"
    assert not result.tables
    assert result.error.message == "ncu log holds no profiled kernel results"


def _wide_table(rows: list[tuple[str, str, str]]) -> str:
    """A 2019-2022 ("wide") table: 70/15/30-dash columns, unit and value right-aligned."""
    rule = "    " + "-" * 70 + " " + "-" * 15 + " " + "-" * 30
    body = [f"    {name:<70} {unit:>15} {value:>30}" for name, unit, value in rows]
    return "\n".join([rule, *body, rule])


APP_REPLAY = "\n".join([
    "==PROF== Connected to process 100 (/bin/alexnet)",
    '==PROF== Profiling "k" - 1: Application replay pass 1',
    "epoch 1, loss 2.30",
    "==PROF== Disconnected from process 100",
    "==PROF== Connected to process 101 (/bin/alexnet)",
    '==PROF== Profiling "k" - 1: Application replay pass 2',
    "epoch 1, loss 2.30",
    "==PROF== Disconnected from process 101",
    "==PROF== Creating report from application replay data: 0%.....................100%",
    "[100] alexnet@127.0.0.1",
    "  k(float*), 2020-Nov-01 10:00:00, Context 1, Stream 7",
    "    Section: Command line profiler metrics",
    _wide_table([("dram__bytes.sum", "byte", "9119334400"), ("gpu__time_duration.sum", "usecond", "12.50")]),
    "",
])


def test_application_replay_prints_results_once_under_the_first_process(tmp_path):
    result = _parse(_write(tmp_path, "replay.txt", APP_REPLAY))
    assert result.variant == "text 2019-2022" and result.error is None
    (kernel,) = result.tables["kernels"].iter_rows(named=True)
    assert (kernel["name"], kernel["source_line"], kernel["context"]) == ("k(float*)", 11, 1)
    assert result.tables["metrics"]["value"].to_list() == [9119334400.0, 12500.0]


def test_csv_header_beyond_the_sniffed_head_is_still_read(tmp_path):
    lines = _csv_lines("ncu", "csv", "a100_sgemm_roofline_metrics_print_fp.csv")
    chatter = [f"step {i}: loss 0.{i:04d}, lr 0.01" for i in range(3000)]  # ~100 KB of output
    text = "\n".join(["==PROF== Connected to process 7 (/bin/sgemm)", *chatter, *lines]) + "\n"
    path = _write(tmp_path, "late_header.csv", text)
    result = _parse(path)
    assert result.variant == "csv details 15 columns" and result.error is None
    assert result.tables["kernels"]["source_line"].to_list() == [3003, 3018, 3033]
    assert result.tables["metrics"].height == 45


RAW_2019 = """\
"Kernel Name","Kernel Time","gpu__time_duration.sum","dram__bytes_read.sum"
"","","usecond","Mbyte"
"bpnn_layerforward_CUDA","2019-Mar-19 15:15:23","12.50","1.25"
"bpnn_adjust_weights_cuda","2019-Mar-19 15:15:24","3.00","2.00"
"""


def test_raw_page_without_ids_has_one_launch_per_row(tmp_path):
    result = _parse(_write(tmp_path, "raw2019.csv", RAW_2019))
    assert result.variant == "csv raw"
    assert result.tables["kernels"].select("launch_id", "name", "source_line").rows() == [
        (0, "bpnn_layerforward_CUDA", 3), (1, "bpnn_adjust_weights_cuda", 4)]
    metrics = result.tables["metrics"]
    assert metrics.select("launch_id", "metric", "unit", "value").rows() == [
        (0, "gpu__time_duration.sum", "usecond", 12500.0), (0, "dram__bytes_read.sum", "Mbyte", 1.25e6),
        (1, "gpu__time_duration.sum", "usecond", 3000.0), (1, "dram__bytes_read.sum", "Mbyte", 2e6)]
