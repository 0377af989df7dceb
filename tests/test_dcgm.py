"""DCGM series into `samples`: `dcgmi dmon` in both layouts DCGM has printed, field-value CSVs
(the corpus's real one, checked row by row against the stdlib's csv reader) and dcgm-exporter
scrapes; damage (garbage lines, a cut last line, N/A, blanks, unknown fields, MIG rows) gives
warnings with file:line:column and never loses the rest of the file."""

from __future__ import annotations

import csv
import re
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import pytest

from roofreport import grammar
from roofreport.families import dcgm
from roofreport.families.common.textio import read_head
from roofreport.families.dcgm import fields as dcgm_fields
from roofreport.families.dcgm.dmon import layout
from tests.conftest import SAMPLE_LOGS, corpus_path, parse_path, read_samples

DMON_SAMPLE = SAMPLE_LOGS / "h100" / "dcgmi" / "dcgmi-dmon.log"
EXPORTER_SAMPLE = SAMPLE_LOGS / "h100" / "exporter" / "dcgm-exporter-scrapes.prom"


def read(tmp_path: Path, text: str, name: str = "log.txt"):
    return read_samples(tmp_path, text, name, "dcgm")


def codes(result) -> list[str]:
    return [w.code for w in result.warnings]


def warning(result, code: str):
    return next(w for w in result.warnings if w.code == code)


# -- how DCGM writes a table (the formats of dcgmi's DeviceMonitor, per version) ----------------

FIELDS = {"POWER": (" W", 10), "TMPTR": (" C", 5), "GPUTL": ("", 10), "MCUTL": ("", 10),
          "FBUSD": ("", 10), "SMACT": ("", 5), "DVNAM": ("", 20), "PSTAT": ("", 5)}


def new_layout(titles: list[str], rows: list[tuple[str, list[str]]], entity_width: int = 10) -> list[str]:
    """DCGM 2.4+: left-aligned, each column its field's width + 6, then 2 of padding."""
    def cell(text, title):
        width = FIELDS[title][1] + 6
        return text[:width].ljust(width + 2)
    head = ["#Entity".ljust(entity_width) + "".join(cell(t, t) for t in titles),
            "ID".ljust(entity_width) + "".join(cell(FIELDS[t][0], t) for t in titles)]
    return head + [entity.ljust(entity_width) + "".join(cell(v, t) for v, t in zip(values, titles))
                   for entity, values in rows]


def legacy_layout(titles: list[str], rows: list[tuple[str, int, list[str]]]) -> list[str]:
    """DCGM 1.x-2.3: right-aligned in width + 2; an overflowing value gets a space first."""
    head = ["#" + "Entity".rjust(7) + "".join(t.rjust(FIELDS[t][1] + 2) for t in titles),
            "Id".rjust(8) + "".join(FIELDS[t][0].rjust(FIELDS[t][1] + 2) for t in titles)]
    out = []
    for prefix, entity_id, values in rows:
        line = (prefix + " ").rjust(8) + str(entity_id)
        for value, title in zip(values, titles):
            width = FIELDS[title][1] + 2
            line += (" " if len(value) >= width else "") + value.rjust(width)
        out.append(line)
    return head + out


# -- grammar ----------------------------------------------------------------------------------

def test_the_grammar_builds_with_lark_and_explains_a_bad_row():
    g = grammar.load("dcgm")
    with pytest.raises(Exception) as info:
        g.parse("GPU x  63.000", "dmon_row_line", path="f.txt", line=7)
    assert "f.txt:7:5" in str(info.value)
    assert g.matches("dmon was stopped do to receiving a signal", "stopped_line")
    assert g.matches("dmon was stopped due to receiving a signal.", "stopped_line")


def test_header_layouts_give_titles_and_columns():
    new = layout(new_layout(["POWER", "GPUTL"], [])[0])
    assert new.titles == ("POWER", "GPUTL") and new.starts == (10, 28) and not new.right_aligned
    old = layout(legacy_layout(["POWER", "GPUTL"], [])[0])
    assert old.titles == ("POWER", "GPUTL") and old.ends == (20, 32) and old.right_aligned


def test_field_spellings_resolve_to_one_field():
    power = dcgm_fields.lookup("POWER")
    assert power is dcgm_fields.lookup("155") is dcgm_fields.lookup("power_usage")
    assert power is dcgm_fields.lookup("DCGM_FI_DEV_POWER_USAGE") is dcgm_fields.lookup("dcgm_fi_dev_board_power_watts")
    assert dcgm_fields.lookup("SMACT").column == "sm_active_pct" and dcgm_fields.lookup("SMACT").factor == 100
    assert dcgm_fields.lookup("GRACT").column is None and dcgm_fields.known_not_kept("throttle_reason_idle")
    assert dcgm_fields.lookup("nonsense") is None


# -- dcgmi dmon, DCGM 2.4+ ----------------------------------------------------------------------

def test_sample_dmon_every_row_against_a_whitespace_split(tmp_path):
    """The demo capture has no blank or spaced cells, so splitting on whitespace is an
    independent reading of it."""
    samples, result = read(tmp_path, DMON_SAMPLE.read_text(encoding="utf-8"))
    assert result.variant == "dmon" and result.error is None and codes(result) == []
    lines = DMON_SAMPLE.read_text(encoding="utf-8").splitlines()
    rows = [(n, line.split()) for n, line in enumerate(lines, 1) if line.startswith("GPU ")]
    assert sum(line.startswith("#Entity") for line in lines) >= 5        # reprinted headers
    assert samples.height == len(rows) == 140
    by_line = {r["source_line"]: r for r in samples.iter_rows(named=True)}
    for line_no, cells in rows:
        got = by_line[line_no]
        assert got["gpu_index"] == int(cells[1])
        assert got["power_w"] == float(cells[2]) and got["temperature_c"] == float(cells[3])
        assert got["util_gpu_pct"] == float(cells[4]) and got["util_mem_pct"] == float(cells[5])
        assert got["mem_used_mib"] == float(cells[6])
        assert (got["sm_clock_mhz"], got["mem_clock_mhz"]) == (float(cells[7]), float(cells[8]))
        for column, text in zip(("sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "dram_active_pct"),
                                cells[9:13]):
            assert got[column] == (None if text == "N/A" else pytest.approx(float(text) * 100))
    # no time in dmon: the n-th row of a GPU is n periods of `-d 1000` after the first
    gpu1 = samples.filter(pl.col("gpu_index") == 1)
    assert gpu1["elapsed_s"].to_list() == [float(i) for i in range(70)]
    assert samples["timestamp"].null_count() == samples.height


def test_blank_cells_links_mig_rows_and_na(tmp_path):
    titles = ["POWER", "GPUTL", "DVNAM"]
    lines = new_layout(titles, [
        ("GPU 0", ["63.000", "45", "Tesla V100-SXM2-16GB"]),
        ("GPU 1", ["", "N/A", "Tesla V100-SXM2-16GB"]),            # DCGM 4.x leaves a missing value blank
        ("GPU-I 3", ["N/A", "N/A", "N/A"]),
        ("GPU 0 LINK 12", ["N/A", "N/A", "N/A"]),
        ("GPU 0", ["64.500", "47", "Tesla V100-SXM2-16GB"]),
    ], entity_width=16)        # DCGM 4.6, the first to list NVLinks, widened the entity column
    samples, result = read(tmp_path, "\n".join(lines) + "\n")
    assert samples.select("gpu_index", "power_w", "util_gpu_pct", "gpu_name").rows() == [
        (0, 63.0, 45.0, "Tesla V100-SXM2-16GB"), (1, None, None, "Tesla V100-SXM2-16GB"),
        (0, 64.5, 47.0, "Tesla V100-SXM2-16GB")]
    assert codes(result) == ["dcgm.entity-skipped"]
    assert "GPU-I" in result.warnings[0].message and "LINK" in result.warnings[0].message
    assert result.hints.device_name == "Tesla V100-SXM2-16GB"


def test_delay_and_pstate_and_entity_width_of_dcgm_4(tmp_path):
    lines = new_layout(["POWER", "PSTAT"], [("GPU 0", ["88.250", "0"]), ("GPU 0", ["91.000", "2"])],
                       entity_width=16)
    text = "$ dcgmi dmon -e 155,190 -d 250\n" + "\n".join(lines) + "\n"
    samples, result = read(tmp_path, text)
    assert samples.select("power_w", "pstate", "elapsed_s").rows() == [(88.25, "P0", 0.0), (91.0, "P2", 0.25)]


def test_garbage_between_rows_is_reported_where_it_is(tmp_path):
    lines = new_layout(["POWER", "GPUTL"], [("GPU 0", ["63.000", "45"]), ("GPU 0", ["63.500", "x7"])])
    lines.insert(3, "GPU0 $$$ the terminal was resized")
    lines.insert(4, "Traceback (most recent call last):")
    samples, result = read(tmp_path, "\n".join(lines) + "\n")
    assert samples["power_w"].to_list() == [63.0, 63.5]
    assert samples["util_gpu_pct"].to_list() == [45.0, None]        # `x7` is no number: null
    bad_rows = [w for w in result.warnings if w.code == "dcgm.bad-row"]
    assert [w.line for w in bad_rows] == [4, 5]
    assert "log.txt:4:4" in bad_rows[0].message and "^" in bad_rows[0].message
    bad_value = warning(result, "dcgm.bad-value")
    assert bad_value.line == 6 and "GPUTL" in bad_value.message and "log.txt:6:29" in bad_value.message


def test_a_cut_last_row_is_reported_and_not_read(tmp_path):
    lines = new_layout(["POWER", "GPUTL"], [("GPU 0", ["63.000", "45"]), ("GPU 0", ["6", ""])])
    samples, result = read(tmp_path, "\n".join(lines).rstrip())      # no final line break
    assert samples["power_w"].to_list() == [63.0]
    truncated = warning(result, "dcgm.truncated")
    assert truncated.line == 4 and "log.txt:4:" in truncated.message
    assert "the file ends in the middle of this line (no final line break): its row is incomplete " \
        "and is not read" in truncated.message


def test_rows_before_a_header_and_unknown_titles(tmp_path):
    lines = new_layout(["POWER", "GPUTL"], [("GPU 0", ["63.000", "45"])])
    unknown = lines[0].replace("GPUTL", "ZZZZZ")
    text = "\n".join([lines[2], lines[0], lines[1], lines[2], unknown, lines[1], lines[2]]) + "\n"
    samples, result = read(tmp_path, text)
    assert samples.select("source_line", "power_w", "util_gpu_pct").rows() == [
        (4, 63.0, 45.0), (7, 63.0, None)]
    assert warning(result, "dcgm.no-header").line == 1
    assert "ZZZZZ" in warning(result, "dcgm.unknown-field").message


def test_a_failed_dcgmi_is_the_files_error(tmp_path):
    path = tmp_path / "dmon.txt"
    path.write_text("$ dcgmi dmon -e 203\nError: Unable to connect to host engine. Host engine connection invalid/disconnected.\n")
    result = parse_path(path, "dcgm")
    assert result.error.message == "dcgmi reported: Error: Unable to connect to host engine. " \
        "Host engine connection invalid/disconnected."
    assert result.error.line == 2


# -- dcgmi dmon, DCGM 1.x-2.3 -------------------------------------------------------------------

def test_legacy_layout_with_ids_of_two_digits_names_with_spaces_and_overflow(tmp_path):
    titles = ["POWER", "GPUTL", "DVNAM"]
    rows = [("GPU", gpu, [power, util, "Tesla K80"]) for gpu, power, util in (
        (0, "63.000", "45"), (10, "59.125", "3"), (1, "1234567890.125", "99"))]
    text = "\n".join(legacy_layout(titles, rows[:2]) + ["", *legacy_layout(titles, rows[2:])]) + \
        "\n\ndmon was stopped due to receiving a signal.\n"
    samples, result = read(tmp_path, text)
    assert result.variant == "dmon (DCGM 1.x-2.3 layout)" and codes(result) == []
    assert samples.select("gpu_index", "power_w", "util_gpu_pct", "gpu_name").rows() == [
        (0, 63.0, 45.0, "Tesla K80"), (10, 59.125, 3.0, "Tesla K80"), (1, 1234567890.125, 99.0, "Tesla K80")]


def test_dcgm_blank_sentinels_are_null(tmp_path):
    lines = new_layout(["POWER", "TMPTR"], [("GPU 0", ["140737488355328.000", "2147483632"])])
    samples, _ = read(tmp_path, "\n".join(lines) + "\n")
    assert samples.select("power_w", "temperature_c").rows() == [(None, None)]


# -- field-value CSV ----------------------------------------------------------------------------

def test_corpus_field_csv_every_value_against_the_csv_module():
    path = corpus_path("smi", "other", "4179e1__dcgm_test__dmon.csv")
    result = parse_path(path, "dcgm")
    assert result.variant == "field-value csv" and result.error is None and codes(result) == []
    samples = result.tables["samples"]
    with open(path, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Field"] == "power_usage_instant"]
    expected = sorted((int(r["GPUId"]), datetime.fromtimestamp(int(r["TimeStampUs"]) / 1e6, timezone.utc)
                       .replace(tzinfo=None), float(r["Values"])) for r in rows)
    got = sorted(samples.select("gpu_index", "timestamp", "power_w").rows())
    assert len(got) == len(expected) == 57
    for (g_gpu, g_time, g_power), (e_gpu, e_time, e_power) in zip(got, expected):
        assert (g_gpu, g_power) == (e_gpu, e_power) and abs((g_time - e_time).total_seconds()) < 1e-5
    assert samples["gpu_index"].n_unique() == 8 and samples["elapsed_s"].min() == 0.0
    assert samples["util_gpu_pct"].null_count() == samples.height      # not in the file: null


def test_field_csv_spellings_times_and_damage(tmp_path):
    text = ("Field,Value,GPU,TimeStamp\n"
            "GPUTL,45,0,2024-06-19T10:00:00.500Z\n"
            "1002,0.75,0,2024-06-19T10:00:00.500Z\n"
            "DCGM_FI_DEV_FB_USED,30000,0,2024-06-19T10:00:00.500Z\n"
            "GPUTL,47,0,2024-06-19T10:00:01.500Z\n"
            "GPUTL,N/A,1,2024-06-19T10:00:01.500Z\n"
            "GPUTL,12,0\n"
            "GPUTL,12,zero,2024-06-19T10:00:02.500Z\n"
            "GPUTL,fast,0,2024-06-19T10:00:03.500Z\n"
            "my_own_metric,3,0,2024-06-19T10:00:03.500Z\n")
    samples, result = read(tmp_path, text, "fields.csv")
    assert result.variant == "field-value csv"
    assert samples.select("gpu_index", "elapsed_s", "util_gpu_pct", "sm_active_pct", "mem_used_mib").rows() == [
        (0, 0.0, 45.0, 75.0, 30000.0), (0, 1.0, 47.0, None, None), (1, 1.0, None, None, None),
        (0, 3.0, None, None, None)]
    assert [(w.code, w.line) for w in result.warnings] == [
        ("dcgm.bad-row", 7), ("dcgm.bad-value", 8), ("dcgm.bad-value", 9), ("dcgm.unknown-field", 10)]
    assert "fields.csv:7:11" in result.warnings[0].message
    assert "fields.csv:8:10" in result.warnings[1].message and "fields.csv:9:7" in result.warnings[2].message


def test_field_csv_epochs_in_seconds_and_milliseconds(tmp_path):
    text = "gpu_id,ts,field_id,value\n0,1718783836.5,155,70.5\n0,1718783837500,155,71.5\n"
    samples, _ = read(tmp_path, text, "f.csv")
    assert samples["timestamp"].to_list() == [datetime(2024, 6, 19, 7, 57, 16, 500000),
                                              datetime(2024, 6, 19, 7, 57, 17, 500000)]
    assert samples["power_w"].to_list() == [70.5, 71.5]


# -- dcgm-exporter --------------------------------------------------------------------------------

def test_sample_exporter_scrapes_against_the_metric_lines(tmp_path):
    samples, result = read(tmp_path, EXPORTER_SAMPLE.read_text(encoding="utf-8"), "scrapes.prom")
    assert result.variant == "exporter scrape" and codes(result) == []
    text = EXPORTER_SAMPLE.read_text(encoding="utf-8")
    util = [(int(g), float(v)) for g, v in re.findall(r'^DCGM_FI_DEV_GPU_UTIL\{gpu="(\d)".*\} (\S+)$', text, re.M)]
    dates = re.findall(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$", text, re.M)
    assert samples.height == len(util) == 2 * len(dates) == 14
    assert samples.select("gpu_index", "util_gpu_pct").rows() == util
    expected_times = [datetime.strptime(d, "%Y-%m-%dT%H:%M:%SZ") for d in dates for _ in (0, 1)]
    assert samples["timestamp"].to_list() == expected_times
    assert samples["elapsed_s"].to_list() == [(t - expected_times[0]).total_seconds() for t in expected_times]
    assert samples["gpu_name"].unique().to_list() == ["NVIDIA H100 80GB HBM3"]
    assert samples["temperature_c"].null_count() == 0      # GPU_TEMP; MEMORY_TEMP's blank has no column
    assert result.hints.host == "dgx-h100-02" and result.hints.device_name == "NVIDIA H100 80GB HBM3"


def test_exporter_times_mig_lines_unknown_metrics_and_damage(tmp_path):
    text = ('1718783836\tDCGM_FI_DEV_GPU_UTIL{gpu="0", UUID="GPU-a"} 97\n'
            '1718783836\tDCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",GPU_I_PROFILE="1g.10gb",GPU_I_ID="7"} 40\n'
            '1718783836\tDCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-a"} 0.5\n'
            '1718783836\tDCGM_FI_DEV_NEW_THING{gpu="0",UUID="GPU-a"} 1\n'
            '1718783836\tDCGM_FI_DEV_FB_USED{UUID="GPU-a"} 1\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a"} 95 1718783841000\n'
            'DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-a"} NaN 1718783841000\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a} 9\n'
            'go_goroutines 42\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-')
    samples, result = read(tmp_path, text, "m.prom")
    assert samples.select("elapsed_s", "util_gpu_pct", "sm_active_pct").rows() == [(0.0, 97.0, 50.0), (5.0, 95.0, None)]
    assert samples["timestamp"][0] == datetime(2024, 6, 19, 7, 57, 16)
    assert sorted(codes(result)) == ["dcgm.bad-row", "dcgm.entity-skipped", "dcgm.no-gpu", "dcgm.truncated",
                                     "dcgm.unknown-field"]
    assert warning(result, "dcgm.bad-row").line == 8 and "m.prom:8:" in warning(result, "dcgm.bad-row").message
    assert "DCGM_FI_DEV_NEW_THING" in warning(result, "dcgm.unknown-field").message


# -- sniffing -------------------------------------------------------------------------------------

def test_each_dcgm_variant_is_sniffed(tmp_path):
    cases = {
        "dmon": "\n".join(new_layout(["POWER"], [("GPU 0", ["1.000"])])),
        "dmon (DCGM 1.x-2.3 layout)": "\n".join(legacy_layout(["POWER"], [("GPU", 0, ["1.000"])])),
        "field-value csv": "GPUId,TimeStampUs,Field,Values\n0,1718783836956328,power_usage,71.20",
        "exporter scrape": '# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\nDCGM_FI_DEV_GPU_UTIL{gpu="0"} 1',
        "failed run": "$ dcgmi dmon -e 155\nError: Unable to connect to host engine. Timeout.",
    }
    for variant, text in cases.items():
        path = tmp_path / "f.txt"
        path.write_text(text + "\n")
        assert dcgm.sniff(read_head(path)) == variant


def test_no_other_corpus_file_is_taken_for_dcgm():
    root = corpus_path()
    mine = {"smi/other/4179e1__dcgm_test__dmon.csv"}
    claimed = set()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if dcgm.sniff(read_head(path)):
            claimed.add(path.relative_to(root).as_posix())
    assert claimed == mine
