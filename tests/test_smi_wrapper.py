"""CSV files written by wrappers around nvidia-smi / NVML (their own header names, epoch or
ISO times, a quoted cell holding a newline), read only when every column is a known quantity."""

from __future__ import annotations

from datetime import datetime

import pytest

from roofreport.families.smi import wrapper as smi_wrapper
from roofreport.pipeline.ingest import parse_file
from roofreport.pipeline.sniff import sniff
from roofreport.tables import schema
from tests.conftest import corpus_path


def read(name: str):
    path = corpus_path("smi", "other", name)
    found = sniff(path)
    assert found.variant == "wrapper csv"
    result = parse_file(path, found.spec.name, found.variant, str(path))
    return result.tables.get("samples", schema.empty("samples")), result


def test_a_quoted_cell_with_a_line_break_keeps_its_first_line():
    samples, result = read("SII-HaoyuTang__DCConv__gpu_usage.csv")
    # 0.08,0,472,49140,29,"26.11\n0"  then  0.34,2,502,49140,29,"36.51\n0"
    first = samples.row(0, named=True)
    assert (first["util_gpu_pct"], first["mem_used_mib"], first["mem_total_mib"],
            first["temperature_c"], first["power_w"]) == (0.0, 472.0, 49140.0, 29.0, 26.11)
    assert samples["source_line"].head(3).to_list() == [2, 4, 6]   # each record spans 2 lines
    assert samples["elapsed_s"].head(2).to_list() == pytest.approx([0.0, 0.26])
    assert [w.code for w in result.warnings] == ["smi.multiline-cell"]
    assert samples.height == 135


def test_epoch_float_times_crlf_and_leading_spaces():
    samples, _ = read("ogunatalay__Machine-Translation__gpu_usage.csv")
    first = samples.row(0, named=True)
    # 1746556382.8348258,0, 0, 15360
    assert first["timestamp"] == datetime(2025, 5, 6, 18, 33, 2, 834825)
    assert (first["util_gpu_pct"], first["mem_used_mib"], first["mem_total_mib"]) == (0.0, 0.0, 15360.0)


def test_units_in_parentheses_are_part_of_the_name():
    samples, _ = read("ratcht__camouflaged-poisoning__gpu_stats.csv")
    row = samples.row(0, named=True)
    # 1740565077.4759753,0,4851.00,46068.00,10.53,40.0
    assert (row["util_gpu_pct"], row["mem_used_mib"], row["mem_total_mib"], row["util_mem_pct"],
            row["temperature_c"]) == (0.0, 4851.0, 46068.0, 10.53, 40.0)


def test_renamed_query_columns_with_index_name_and_bus_id():
    samples, result = read("AkshayRoyal__gpu-usage__gpu_usage_cleaned.csv")
    row = samples.row(0, named=True)
    # 2023-06-22 18:56:56, 0, NVIDIA GeForce RTX 2070, 00000000:01:00.0,22,6,841,7140,8192
    assert (row["timestamp"], row["gpu_index"], row["gpu_name"], row["util_gpu_pct"],
            row["util_mem_pct"], row["mem_used_mib"], row["mem_total_mib"]) == \
        (datetime(2023, 6, 22, 18, 56, 56), 0, "NVIDIA GeForce RTX 2070", 22.0, 6.0, 841.0, 8192.0)
    assert result.hints.device_name == "NVIDIA GeForce RTX 2070"


def test_ctime_times():
    samples, _ = read("KamaTechOrg__MultiDrone_Algo__gpu_utilization.csv")
    assert samples["timestamp"][0] == datetime(2024, 8, 8, 15, 42, 9)
    assert samples["elapsed_s"].head(2).to_list() == [0.0, 2.0]


@pytest.mark.parametrize(("header", "readable"), [
    ("timestamp,gpu_index,temperature_C,utilization_gpu_percent,power_W", True),
    ("Time,GPU_Usage", True),
    ("timestamp,gpu,index,memory.used,memory.total", False),   # two GPU columns: ambiguous
    ("GPUId,TimeStampUs,Field,Values", False),                 # DCGM long format
    ("timestamp,index,name", False),                           # nothing measured
    ("model,batch_size,gpu_util,throughput", False),           # a results table, not a series
    ("timestamp,gpu_util,fan_rpm", True),                      # fan_rpm skipped with a warning
])
def test_a_wrapper_header_is_read_only_when_every_column_is_known(header, readable):
    assert (smi_wrapper.mapping(header) is not None) == readable


def test_an_unknown_wrapper_column_is_skipped_with_a_reason():
    from roofreport.families.common.textio import Document
    from roofreport.families.smi import read as smi_read
    doc = Document.from_text("timestamp,gpu_util,fan_rpm\n1686584907.5,40,1200\n", display="w.csv")
    result = smi_read.parse_wrapper(doc, "wrapper csv")
    assert result.tables["samples"]["util_gpu_pct"].to_list() == [40.0]
    (warning,) = result.warnings
    assert warning.code == "smi.unknown-column" and "'fan_rpm'" in warning.message
