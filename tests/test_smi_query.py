"""`nvidia-smi --query-gpu ... --format=csv` series on the real corpus, values checked by hand
against the files (header/noheader/nounits, repeated headers, date lines, multi-GPU with and
without `index`, every timestamp spelling, UTF-16, NUL damage, missing values)."""

from __future__ import annotations

from datetime import datetime

import polars as pl
import pytest

from roofreport.errors import ROWS_LOST
from roofreport.families import smi
from roofreport.families.common.textio import Document
from roofreport.families.smi import read as smi_read
from roofreport.pipeline.ingest import parse_file
from roofreport.pipeline.sniff import sniff
from roofreport.tables import schema
from tests.conftest import CORPUS, corpus_path


def read(*parts: str):
    """Sniff and parse one corpus file as the pipeline does; its samples and the result."""
    path = corpus_path("smi", *parts)
    found = sniff(path)
    result = parse_file(path, found.spec.name, found.variant, str(path))
    return result.tables.get("samples", schema.empty("samples")), result


def read_text(text: str, variant: str | None = None):
    doc = Document.from_text(text, display="log.csv")
    if variant is None:
        from roofreport.families.common.textio import Head
        head = Head(path=doc.path, raw=doc.data, encoding="utf-8", text=doc.text(),
                    size=len(doc.data), truncated=False)
        variant = smi.sniff_text(head)
    result = smi_read.parse_text(doc, variant)
    return result.tables.get("samples", schema.empty("samples")), result


def codes(result) -> set[str]:
    return {w.code for w in result.warnings}


@pytest.mark.parametrize("name", sorted(p.name for p in (CORPUS / "smi" / "query_csv").glob("*"))
                         if (CORPUS / "smi" / "query_csv").is_dir() else ["(corpus absent)"])
def test_every_query_file_gives_samples_in_the_schema(name):
    samples, result = read("query_csv", name)
    # a file is "ok" unless rows were left out, and then it is partial, saying so (issue #34:
    # theabrusch's overwritten captures leave a fragment ` %` on a line of its own)
    lost = [w for w in result.warnings if w.code in ROWS_LOST]
    assert (result.error is None) == (not lost), result.error
    if lost:
        assert result.error.line == lost[0].line and "left out" in result.error.message
    assert samples.height > 0
    assert samples.columns == list(schema.SAMPLES)
    # Missing is null, never 0 from nowhere: no column holds NaN.
    for col, dtype in schema.SAMPLES.items():
        if dtype == pl.Float64:
            assert samples[col].is_nan().sum() == 0
    # Every row has a GPU number and, where the file has any time, an elapsed time.
    assert samples["gpu_index"].null_count() == 0


def test_header_with_units_and_index_two_gpus_interleaved():
    samples, result = read("query_csv", "tkjunsei__OpenAD__gpu_usage.csv")
    first = samples.head(2).to_dicts()
    # 2024/11/23 12:23:29.950, 0, NVIDIA RTX A6000, 92 %, 73 %, 49140 MiB, 25073 MiB, 23498 MiB
    assert first[0]["gpu_index"] == 0 and first[0]["util_gpu_pct"] == 92.0
    assert first[0]["util_mem_pct"] == 73.0 and first[0]["mem_used_mib"] == 25073.0
    assert first[0]["mem_total_mib"] == 49140.0
    assert first[0]["timestamp"] == datetime(2024, 11, 23, 12, 23, 29, 950000)
    assert first[1]["gpu_index"] == 1 and first[1]["mem_used_mib"] == 15.0
    assert samples.group_by("gpu_index").len().sort("gpu_index")["len"].to_list() == [473, 473]
    assert result.hints.device_name == "NVIDIA RTX A6000"


def test_multi_gpu_without_index_numbered_by_position_in_the_sweep():
    samples, result = read("query_csv", "SINGROUP__ters_gen__gpu_usage.log")
    # Four H200s sampled 3 ms apart every 2 s, no index column: temperatures 29, 26, 25, 28.
    sweep = samples.head(4)
    assert sweep["gpu_index"].to_list() == [0, 1, 2, 3]
    assert sweep["temperature_c"].to_list() == [29.0, 26.0, 25.0, 28.0]
    assert samples.group_by("gpu_index").len()["len"].to_list() == [134] * 4
    second = samples.filter(pl.col("source_line") == 7).row(0, named=True)  # .470, ..., 26
    assert (second["gpu_index"], second["temperature_c"]) == (1, 26.0)
    assert "smi.gpu-by-position" in codes(result)


def test_date_lines_repeated_headers_and_eight_gpus_without_index_or_time():
    samples, result = read("query_csv", "DucMinhNgo__convert-cpu_gpu-to-excel__output_gpu.log")
    assert samples.height == 2830 * 8  # a `date` line, a header and 8 rows, 2830 times
    block = samples.head(8)
    assert block["gpu_index"].to_list() == list(range(8))
    assert block["timestamp"].unique().to_list() == [datetime(2020, 6, 9, 9, 0, 1)]
    # line 5: `97 %, 44 %, 11019 MiB, 36 MiB, 10983 MiB` is GPU 2
    gpu2 = block.row(2, named=True)
    assert (gpu2["util_gpu_pct"], gpu2["util_mem_pct"], gpu2["mem_used_mib"]) == (97.0, 44.0, 10983.0)
    last = samples.tail(1).row(0, named=True)
    assert last["timestamp"] == datetime(2020, 8, 22, 13, 30, 1)
    assert last["elapsed_s"] == (datetime(2020, 8, 22, 13, 30, 1) - datetime(2020, 6, 9, 9, 0, 1)).total_seconds()


def test_header_repeated_before_every_row_without_time():
    samples, _ = read("query_csv", "zoujili__WFH__gpu.log")
    assert samples.height == 102
    first = samples.row(0, named=True)
    # 98 %, 81 %, 10986 MiB, 47 MiB, 10939 MiB, 77
    assert (first["util_gpu_pct"], first["util_mem_pct"], first["mem_total_mib"],
            first["mem_used_mib"], first["temperature_c"]) == (98.0, 81.0, 10986.0, 10939.0, 77.0)
    assert samples["gpu_index"].unique().to_list() == [0]
    assert samples["timestamp"].null_count() == samples.height
    assert samples["elapsed_s"].null_count() == samples.height  # no time, no known period


def test_fields_in_any_order_with_power_clocks_and_pstate():
    samples, _ = read("query_csv", "amitadate__GPU_Power_Model__histogram_power_model_20250320_033741__strategy_3_metrics.csv")
    row = samples.row(4, named=True)
    # 2025/03/20 03:39:54.721, 100 %, 6 %, 94.17 W, 54, 1920 MHz, 6801 MHz, 258 MiB, 8192 MiB, P2
    assert row == {**row, "util_gpu_pct": 100.0, "util_mem_pct": 6.0, "power_w": 94.17,
                   "temperature_c": 54.0, "sm_clock_mhz": 1920.0, "mem_clock_mhz": 6801.0,
                   "mem_used_mib": 258.0, "mem_total_mib": 8192.0, "pstate": "P2"}
    assert row["elapsed_s"] == pytest.approx(20.066)


def test_utf16_powershell_redirect():
    samples, _ = read("query_csv", "Zunaira3010__land-ct-full__gpu_log.csv")
    first = samples.row(0, named=True)
    # 2026/08/01 03:59:40.361, 10549 MiB, 11264 MiB, 100 %
    assert (first["mem_used_mib"], first["mem_total_mib"], first["util_gpu_pct"]) == (10549.0, 11264.0, 100.0)
    assert first["timestamp"] == datetime(2026, 8, 1, 3, 59, 40, 361000)
    assert samples.height == 434


def test_nul_damaged_file_with_a_table_then_a_query_loop_and_a_gpu_model_change():
    samples, result = read("query_csv", "theabrusch__semi_active_seizure__gpu_stats.csv")
    table = samples.filter(pl.col("source_line") == 10).row(0, named=True)
    # | N/A   30C    P0    42W / 300W |      0MiB / 32510MiB |      0%      Default |
    assert (table["gpu_name"], table["power_w"], table["power_limit_w"], table["temperature_c"],
            table["mem_total_mib"], table["util_gpu_pct"]) == ("Tesla V100-SXM2...", 42.0, 300.0, 30.0,
                                                             32510.0, 0.0)
    assert table["timestamp"] == datetime(2022, 1, 5, 15, 9, 50)
    # Line 24 followed a run of NUL bytes: 0, Tesla V100-PCIE-32GB, ..., 67, P0, 95 %, 65 %
    row = samples.filter(pl.col("source_line") == 24).row(0, named=True)
    assert (row["gpu_name"], row["temperature_c"], row["util_gpu_pct"], row["util_mem_pct"]) == \
        ("Tesla V100-PCIE-32GB", 67.0, 95.0, 65.0)
    assert any("nul-bytes" in c for c in codes(result))
    # Concurrent jobs cut rows: ` %` (line 528) is skipped, `31639 MiBB` / `32510 Mi` are null.
    bad_rows = [w for w in result.warnings if w.code == "smi.bad-row"]
    assert [w.line for w in bad_rows] == [528]
    assert "theabrusch__semi_active_seizure__gpu_stats.csv:528:" in bad_rows[0].message
    assert samples.filter(pl.col("source_line") == 348)["mem_used_mib"].to_list() == [None]
    assert samples.filter(pl.col("source_line") == 529)["mem_total_mib"].to_list() == [None]
    assert samples.filter(pl.col("source_line") == 529)["mem_used_mib"].to_list() == [30062.0]
    assert "smi.gpu-changed" in codes(result)
    assert result.hints.device_name == "Tesla V100-PCIE-32GB"  # most samples
    assert result.tool_version == "driver 495.44"


# -- time stamps -----------------------------------------------------------------------------

def test_epoch_seconds_written_by_a_wrapper_before_noheader_rows():
    samples, result = read("query_csv", "LukeJYK__AutoScientists__gpu_stats.log")
    assert samples["timestamp"][0] == datetime(2026, 8, 5, 17, 38, 3)   # 1785951483
    assert samples["elapsed_s"].head(3).to_list() == [0.0, 5.0, 10.0]
    # The values' meaning is not in the file: nothing is guessed, and the user is told.
    assert samples["util_gpu_pct"].null_count() == samples.height
    assert "smi.no-header" in codes(result)


def test_iso_8601_utc_times_of_a_wrapper_header_eight_gpus_one_timestamp():
    samples, _ = read("query_csv", "karpathy__nanoGPT__gpu_metrics.csv")
    sweep = samples.head(8)
    assert sweep["gpu_index"].to_list() == list(range(8))
    assert sweep["timestamp"].unique().to_list() == [datetime(2025, 9, 24, 3, 48, 33, 493000)]
    # 2025-09-24T03:48:33.493Z,0, 38, 100, 387.26
    assert sweep.row(0, named=True) | {} == {**sweep.row(0, named=True), "temperature_c": 38.0,
                                              "util_gpu_pct": 100.0, "power_w": 387.26}


def test_time_of_day_without_date_utf16():
    samples, _ = read("query_csv", "NagusameCS__HyperTensor__gpu_monitor.txt")
    # 15:38:43.359, 15:38:43.633, 15:38:43.922 (PowerShell, UTF-16LE, CRLF)
    assert samples["elapsed_s"].head(3).to_list() == pytest.approx([0.0, 0.274, 0.563])
    assert samples["timestamp"].null_count() == samples.height
    assert samples.height == 23


def test_separate_time_line_before_each_row():
    samples, _ = read("query_csv", "graemester__VisionFaceService__gpu_monitor.log")
    # 13:25:50 / row / 13:25:52 / row / 13:25:54 / row / 13:25:57 / row
    assert samples["elapsed_s"].head(4).to_list() == [0.0, 2.0, 4.0, 7.0]
    assert samples["source_line"].head(2).to_list() == [2, 4]


def test_date_line_and_separators_between_noheader_blocks():
    samples, _ = read("query_csv", "simaosantos01__test__gpu_usage.log")
    # 2025/09/21 16:12:24.315, 0, ... / 2025/09/21 16:12:24.318, 1, ... / ---- / 2025-09-21 16:12:39
    assert samples["gpu_index"].head(4).to_list() == [0, 1, 0, 1]
    assert samples["timestamp"][2] == datetime(2025, 9, 21, 16, 12, 39, 360000)
    assert samples["elapsed_s"][2] == pytest.approx(15.045)


def test_power_only_at_100_ms():
    samples, _ = read("query_csv", "PranavDani__Flame__Results__fluidsGL__fluidsGL-smi.csv")
    assert samples["power_w"].head(3).to_list() == [21.76, 21.96, 22.35]
    assert samples["elapsed_s"].head(3).to_list() == pytest.approx([0.0, 0.1, 0.2])
    assert samples["util_gpu_pct"].null_count() == samples.height


# -- missing values, headerless output, damage ------------------------------------------------

def test_not_supported_is_null_with_the_query_from_the_echoed_command():
    # The line nvidia-smi printed for a GTX 770 (pasted in tutulino/Megaminer#235), under the
    # command the issue quotes: `[Not Supported]` is null, never 0.
    line = corpus_path("smi", "other", "issue__tutulino_Megaminer_235__query_noheader_not_supported.csv") \
        .read_text().strip()
    command = ("PS C:\\miner> ./nvidia-smi.exe --query-gpu=gpu_name,utilization.gpu,utilization.memory,"
               "temperature.gpu,power.draw,power.limit,fan.speed,pstate,clocks.current.graphics,"
               "clocks.current.memory,power.max_limit,power.default_limit --format=csv,noheader")
    samples, result = read_text(f"{command}\n{line}\n")
    assert result.variant == "query csv (noheader)"
    row = samples.row(0, named=True)
    assert (row["gpu_name"], row["temperature_c"], row["pstate"]) == ("GeForce GTX 770", 52.0, "P0")
    for col in ("util_gpu_pct", "util_mem_pct", "power_w", "power_limit_w", "mem_clock_mhz"):
        assert row[col] is None, col
    assert not [w for w in result.warnings if w.code == "smi.bad-value"]


def test_not_supported_without_the_command_reads_only_what_the_shapes_say():
    samples, result = read("other", "issue__tutulino_Megaminer_235__query_noheader_not_supported.csv")
    row = samples.row(0, named=True)
    # `52 %` is fan.speed here: a unit alone never decides the column.
    assert (row["gpu_name"], row["pstate"], row["util_gpu_pct"]) == ("GeForce GTX 770", "P0", None)
    assert "smi.no-header" in codes(result)


def test_nounits_keeps_the_units_in_the_header_only():
    text = ("timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]\n"
            "2024/01/02 03:04:05.100, 0, 37, 1200, 61.50\n"
            "2024/01/02 03:04:05.101, 1, [N/A], 15, [Not Supported]\n")
    samples, result = read_text(text)
    assert samples["util_gpu_pct"].to_list() == [37.0, None]
    assert samples["mem_used_mib"].to_list() == [1200.0, 15.0]
    assert samples["power_w"].to_list() == [61.5, None]
    assert not result.warnings


def test_a_row_cut_by_the_end_of_the_file():
    text = ("timestamp, index, name, utilization.gpu [%], memory.total [MiB], memory.used [MiB]\n"
            "2024/11/23 12:23:29.950, 0, NVIDIA RTX A6000, 92 %, 49140 MiB, 25073 MiB\n"
            "2024/11/23 12:23:30.954, 0, NVIDIA RTX A6000, 95 %, 49140 MiB, 250")
    samples, result = read_text(text)
    assert samples["mem_used_mib"].to_list() == [25073.0, None]    # `250` lost its unit: cut
    assert samples["util_gpu_pct"].to_list() == [92.0, 95.0]
    assert {"smi.bad-value", "smi.truncated"} <= codes(result)
    cut = read_text(text[:text.rindex(", 95 %")])[1]
    bad = [w for w in cut.warnings if w.code == "smi.bad-row"]
    assert bad and bad[0].line == 3 and "log.csv:3:" in bad[0].message


def test_interval_from_an_echoed_loop_command_when_rows_carry_no_time():
    text = ("$ nvidia-smi --query-gpu=utilization.gpu --format=csv -l 5\n"
            "utilization.gpu [%]\n10 %\n20 %\n30 %\n")
    samples, _ = read_text(text)
    assert samples["util_gpu_pct"].to_list() == [10.0, 20.0, 30.0]
    assert samples["elapsed_s"].to_list() == [0.0, 5.0, 10.0]


def test_wrong_field_counts_are_reported_with_line_and_column():
    text = ("index, utilization.gpu [%]\n0, 5 %\n0, 6 %, 7 %, 8 %\n0, 9 %\n")
    samples, result = read_text(text)
    assert samples["util_gpu_pct"].to_list() == [5.0, 9.0]
    (bad,) = [w for w in result.warnings if w.code == "smi.bad-row"]
    assert bad.line == 3
    assert bad.message.splitlines()[0] == "log.csv:3:9: nvidia-smi: row has 4 fields, its header 2"
    assert bad.message.splitlines()[-1].index("^") == 4 + 8


def test_windows_batch_transcript_with_date_t_and_time_t():
    # The shape of a `.bat` loop (prompts, `date /T`, `time /T`, blank lines, CRLF) as the field
    # guide describes it for DucMinhNgo's gpu.log.
    block = ("\nC:\\Users\\lab>date /T \nTue 08/18/2020\n\nC:\\Users\\lab>time /T \n{time}\n\n"
             "C:\\Users\\lab>nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv \n"
             "utilization.gpu [%], memory.used [MiB]\n{rows}\n")
    text = (block.format(time="03:44 PM", rows="12 %, 1024 MiB\n7 %, 512 MiB")
            + block.format(time="03:49 PM", rows="99 %, 4096 MiB\n98 %, 4000 MiB")).replace("\n", "\r\n")
    samples, result = read_text(text)
    assert result.variant == "query csv"
    assert samples["gpu_index"].to_list() == [0, 1, 0, 1]
    assert samples["timestamp"].to_list() == [datetime(2020, 8, 18, 15, 44)] * 2 + [datetime(2020, 8, 18, 15, 49)] * 2
    assert samples["elapsed_s"].to_list() == [0.0, 0.0, 300.0, 300.0]
    assert samples["util_gpu_pct"].to_list() == [12.0, 7.0, 99.0, 98.0]


def test_a_query_without_measurements_gives_no_samples():
    text = "pid, process_name\n4321, python\n"
    samples, result = read_text(text)
    assert samples.height == 0
    assert "smi.no-measurement" in codes(result)


def test_a_compute_apps_query_gives_one_row_per_process():
    text = "pid, used_gpu_memory [MiB]\n4321, 2048 MiB\n"
    samples, result = read_text(text)
    assert samples.select("pid", "process_mem_mib", "gpu_index", "util_gpu_pct").rows() == \
        [(4321, 2048.0, None, None)]
    assert result.variant == "compute-apps csv"
