"""The boxed `nvidia-smi` table (79/87-89/91 columns, drivers 384-591, Windows WDDM, UTF-16,
repeated in loops under ctime lines, painted by `watch`) and `nvidia-smi -q` reports, on the real
corpus: one sample per GPU per table, values read by hand from the files."""

from __future__ import annotations

from datetime import datetime

import polars as pl
import pytest

from roofreport.pipeline.ingest import ingest, parse_file
from roofreport.pipeline.sniff import sniff
from roofreport.tables import schema
from tests.conftest import CORPUS, corpus_path

STATS = ("gpu_index", "gpu_name", "temperature_c", "pstate", "power_w", "power_limit_w",
         "mem_used_mib", "mem_total_mib", "util_gpu_pct")


def read(*parts: str):
    path = corpus_path("smi", *parts)
    found = sniff(path)
    result = parse_file(path, found.spec.name, found.variant, str(path))
    return result.tables.get("samples", schema.empty("samples")), result


def stats(samples: pl.DataFrame, i: int = 0) -> tuple:
    row = samples.row(i, named=True)
    return tuple(row[c] for c in STATS)


@pytest.mark.parametrize("name", sorted(p.name for p in (CORPUS / "smi" / "snapshot").glob("*"))
                         if (CORPUS / "smi" / "snapshot").is_dir() else ["(corpus absent)"])
def test_every_table_gives_one_sample_per_gpu_with_its_driver(name):
    samples, result = read("snapshot", name)
    assert result.error is None and samples.height > 0
    assert result.tool_version.startswith("driver ")
    assert samples["gpu_name"].null_count() == 0 and samples["mem_total_mib"].null_count() == 0
    assert samples["timestamp"].null_count() == 0      # every table sits under its ctime line


# -- the three box widths --------------------------------------------------------------------

def test_79_columns_driver_384_four_gpus_repeated_74_times():
    samples, result = read("snapshot", "enningxie__check_in__gpu.log")
    # | 34%   60C    P2    75W / 250W |  11996MiB / 12189MiB |     27%      Default |
    assert stats(samples) == (0, "TITAN X (Pascal)", 60.0, "P2", 75.0, 250.0, 11996.0, 12189.0, 27.0)
    assert samples["timestamp"][0] == datetime(2018, 6, 24, 21, 32, 4)
    assert result.tool_version == "driver 384.130"       # no CUDA Version field in 384
    # 73 complete tables of 4 GPUs; the 74th was cut after GPU 0's name line (line 786).
    assert samples.group_by("gpu_index").len().sort("gpu_index")["len"].to_list() == [73] * 4
    assert [w.line for w in result.warnings if w.code == "smi.truncated-table"] == [786]


def test_79_columns_power_cap_na_and_an_echoed_prompt():
    samples, result = read("snapshot", "aiyijing__gpu-test__nvidia.log")
    # | N/A   51C    P0    15W /  N/A |   3723MiB /  3911MiB |      2%      Default |
    assert stats(samples) == (0, "GeForce GTX 1650", 51.0, "P0", 15.0, None, 3723.0, 3911.0, 2.0)
    assert result.hints.host == "aiyijing"


def test_79_columns_pasted_in_an_issue_power_usage_na():
    samples, _ = read("other", "issue__influxdata_telegraf_6258__snapshot_partial.txt")
    # |  0%   54C    P0    N/A / 120W |      0MiB /  4040MiB |      0%      Default |
    assert stats(samples) == (0, "GeForce GTX 105...", 54.0, "P0", None, 120.0, 0.0, 4040.0, 0.0)


def test_87_to_89_columns_driver_530():
    samples, result = read("snapshot", "AleksaRacic__Diplomski__gpu.txt")
    # | 57%   52C    P2               47W / 170W|   1810MiB / 12288MiB |     16%      Default |
    assert stats(samples) == (0, "NVIDIA GeForce RTX 3060", 52.0, "P2", 47.0, 170.0, 1810.0, 12288.0, 16.0)
    assert result.tool_version == "driver 530.30.02"


def test_89_columns_repeated_1368_times_laptop_without_power_cap():
    samples, result = read("snapshot", "Markshilong__a_MoE_experiments__gpu_log.txt")
    assert samples.height == 1368
    # | N/A   61C    P0               22W /  N/A|   1386MiB /  6144MiB |      0%      Default |
    assert stats(samples) == (0, "NVIDIA GeForce RTX 3060 L...", 61.0, "P0", 22.0, None, 1386.0, 6144.0, 0.0)
    assert samples["power_limit_w"].null_count() == 1368
    assert "smi.truncated-name" in {w.code for w in result.warnings}
    assert samples["elapsed_s"][-1] == (datetime(2023, 6, 10, 15, 40, 31) - datetime(2023, 6, 10, 13, 48, 28)).total_seconds()


def test_91_columns_eight_gpus():
    samples, result = read("snapshot", "nightlessbaron__cllm_baseline__nvidia-smi.txt")
    assert samples["gpu_index"].to_list() == list(range(8))
    # | N/A   29C    P0             76W /  700W |       0MiB / 143771MiB |      0%      Default |
    assert stats(samples) == (0, "NVIDIA H200", 29.0, "P0", 76.0, 700.0, 0.0, 143771.0, 0.0)
    assert result.tool_version == "driver 570.133.20"


def test_91_columns_driver_580_plus_separator():
    samples, _ = read("snapshot", "cenzwong__gpu_and_inference_hw__nvidia-smi.txt")
    # | N/A   39C    P0            104W /  325W |     803MiB /  46068MiB |      0%      Default |
    assert stats(samples) == (0, "NVIDIA L40S", 39.0, "P0", 104.0, 325.0, 803.0, 46068.0, 0.0)


def test_repeated_tables_under_marker_and_ctime_lines():
    samples, _ = read("snapshot", "Zeesh-an__Grouped_eRAG__gpu_usage.log")
    assert samples.height == 1261
    assert samples["timestamp"].head(2).to_list() == [datetime(2025, 5, 4, 4, 27, 32),
                                                      datetime(2025, 5, 4, 4, 27, 56)]
    assert stats(samples) == (0, "Quadro RTX 8000", 31.0, "P8", 31.0, 260.0, 1.0, 49152.0, 0.0)


# -- Windows ---------------------------------------------------------------------------------

def test_windows_wddm_table_after_an_echoed_command():
    samples, _ = read("snapshot", "forever84721__LISA__nvidia-smi.txt")
    # | 41%   55C    P0             42W /  170W |    1342MiB /  12288MiB |      3%      Default |
    assert stats(samples) == (0, "NVIDIA GeForce RTX 3060", 55.0, "P0", 42.0, 170.0, 1342.0, 12288.0, 3.0)
    assert samples["timestamp"][0] == datetime(2025, 9, 20, 0, 11, 14)


def test_utf16_crlf_wddm_table():
    samples, result = read("snapshot", "longeacc__DuraXell__nvidia_smi.txt")
    # | N/A   45C    P8              2W /   50W |       0MiB /   4096MiB |      0%      Default |
    assert stats(samples) == (0, "NVIDIA GeForce GTX 1650", 45.0, "P8", 2.0, 50.0, 0.0, 4096.0, 0.0)
    assert result.tool_version == "driver 581.08"


def test_crlf_wddm_table_with_a_cut_name():
    samples, result = read("snapshot", "graemester__VisionFaceService__gpu_status.txt")
    assert stats(samples) == (0, "NVIDIA GeForce GTX 1650 ...", 30.0, "P8", 8.0, 100.0, 2483.0, 4096.0, 11.0)
    assert result.tool_version == "driver 591.59"


# -- watch and -q ----------------------------------------------------------------------------

def test_watch_capture_replays_every_refresh():
    samples, result = read("snapshot", "yukiobata1__hirataken20251122-2__legacy__logs__gpu_monitor.log")
    assert samples.height == 1354                  # one screen per refresh
    first, second = samples.row(0, named=True), samples.row(1, named=True)
    assert stats(samples) == (0, "NVIDIA H100 80GB HBM3", 32.0, "P0", 71.0, 700.0, 0.0, 81559.0, 0.0)
    assert first["timestamp"] == datetime(2025, 11, 22, 11, 42, 52)
    # the second refresh rewrote `52` -> `55` in the clocks and `71` -> `99` in the power cell
    assert (second["timestamp"], second["power_w"]) == (datetime(2025, 11, 22, 11, 42, 55), 99.0)
    assert samples["temperature_c"].max() == 52.0 and samples["power_w"].max() > 300
    # CR-only line ends: all refreshes after the first are on line 13 of the capture.
    assert samples["source_line"].unique().sort().to_list() == [1, 13]
    assert {w.code for w in result.warnings} == {"smi.time-backwards"}


def test_q_report_gives_the_gpu_sample():
    samples, result = read("snapshot", "AlexeyMatskevich__cuda_test__nvidia-smi.txt")
    row = samples.row(0, named=True)
    assert row == {**row, "gpu_index": 0, "gpu_name": "NVIDIA GeForce RTX 4090", "pstate": "P0",
                   "util_gpu_pct": 2.0, "util_mem_pct": 1.0, "mem_used_mib": 2136.0,
                   "mem_total_mib": 24564.0, "power_w": 72.62, "power_limit_w": 450.0,
                   "temperature_c": 38.0, "sm_clock_mhz": 2535.0, "mem_clock_mhz": 10501.0,
                   "timestamp": datetime(2023, 8, 30, 12, 18, 12), "elapsed_s": 0.0}
    assert result.tool_version == "driver 537.13"
    assert not result.warnings


# -- the course logs: a table at the top of each training job's stdout ------------------------

def test_course_jobs_print_one_table_before_training():
    root = corpus_path("course", "srikarym-hpml", "hw2", "logs")
    data = ingest([root])
    samples = data["samples"]
    assert samples.height == 16 and samples["run"].n_unique() == 16
    row = samples.filter(pl.col("source_file").str.ends_with("C3/workers_16.out")).row(0, named=True)
    # | 34%   48C    P2    76W / 250W |    990MiB / 10989MiB |      5%      Default |
    assert tuple(row[c] for c in STATS) == (0, "GeForce RTX 208...", 48.0, "P2", 76.0, 250.0,
                                           990.0, 10989.0, 5.0)
    assert row["timestamp"] == datetime(2019, 10, 29, 18, 56, 52)
    versions = {f.tool_version for f in data.files if f.family == "nvidia-smi"}
    assert versions == {"driver 418.74", "driver 418.67"}   # C2/c2.out ran on another node


def test_utf8_bom_before_the_table(tmp_path):
    # A PowerShell `Out-File -Encoding utf8` capture starts with a BOM (authored table text).
    table = ("Sat Sep 20 00:11:14 2025\n"
             "| NVIDIA-SMI 560.94                 Driver Version: 560.94         CUDA Version: 12.6     |\n"
             "|   0  NVIDIA GeForce RTX 3060      WDDM  |   00000000:07:00.0  On |                  N/A |\n"
             "| 41%   55C    P0             42W /  170W |    1342MiB /  12288MiB |      3%      Default |\n")
    path = tmp_path / "nvidia-smi.txt"
    path.write_bytes(b"\xef\xbb\xbf" + table.replace("\n", "\r\n").encode())
    found = sniff(path)
    assert (found.family, found.variant, found.encoding) == ("nvidia-smi", "table", "utf-8-sig")
    result = parse_file(path, found.spec.name, found.variant, str(path))
    samples = result.tables["samples"]
    assert stats(samples) == (0, "NVIDIA GeForce RTX 3060", 55.0, "P0", 42.0, 170.0, 1342.0, 12288.0, 3.0)
    assert samples["timestamp"][0] == datetime(2025, 9, 20, 0, 11, 14)
