"""`nvidia-smi dmon` (and `pmon`) on the real corpus: column order following `-s`, `-` for a
missing value, headers reprinted every page, prompts around the capture, no time stamps (the
sample number times the `-d` period; a start time in the file name)."""

from __future__ import annotations

from datetime import datetime

import polars as pl
import pytest

from roofreport.families import smi
from roofreport.families.common.textio import Document
from roofreport.families.smi import read as smi_read
from roofreport.pipeline.ingest import ingest, parse_file
from roofreport.pipeline.sniff import sniff
from roofreport.tables import schema
from tests.conftest import CORPUS, corpus_path


def read(path):
    found = sniff(path)
    result = parse_file(path, found.spec.name, found.variant, str(path))
    return result.tables.get("samples", schema.empty("samples")), result


def read_text(text: str, variant: str):
    result = smi_read.parse_text(Document.from_text(text, display="dmon.txt"), variant)
    return result.tables.get("samples", schema.empty("samples")), result


def _data_rows(path) -> list[list[str]]:
    """The file's data rows split on blanks, for sums checked against the parse."""
    return [line.split() for line in path.read_text().splitlines()
            if line.strip() and line.lstrip()[0].isdigit()]


@pytest.mark.parametrize("name", sorted(p.name for p in (CORPUS / "smi" / "dmon").glob("*"))
                         if (CORPUS / "smi" / "dmon").is_dir() else ["(corpus absent)"])
def test_every_dmon_row_is_one_sample_one_second_apart(name):
    path = corpus_path("smi", "dmon", name)
    samples, result = read(path)
    rows = _data_rows(path)
    assert result.error is None and not [w for w in result.warnings if w.code == "smi.bad-row"]
    assert samples.height == len(rows)
    assert samples["elapsed_s"].to_list() == [float(i) for i in range(len(rows))]
    assert samples["gpu_index"].unique().to_list() == [0]


@pytest.fixture(scope="module")
def hw5():
    return ingest([corpus_path("course", "adityamwagh-hpml-hw")])


@pytest.mark.parametrize(("run", "util_sum", "power_sum", "first"), [
    # sums of the `sm` and `pwr` columns over the 179 rows (awk), and the first row
    ("hw5/part_a/gpu_utilization_v100.txt", 17162, 47434, (281.0, 65.0, 97.0, 62.0, 877.0, 1530.0)),
    ("hw5/part_a/gpu_utilization_rtx8000.txt", 17339, 42797, (231.0, 72.0, 98.0, 69.0, 6500.0, 1620.0)),
])
def test_course_dmon_captures_give_utilisation_per_gpu_over_three_minutes(hw5, run, util_sum, power_sum, first):
    samples = hw5["samples"].filter(pl.col("run") == run).sort("source_line")
    assert samples.height == 179                       # `timeout 3m nvidia-smi dmon`, 1 s
    assert samples["util_gpu_pct"].sum() == util_sum
    assert samples["power_w"].sum() == power_sum
    assert samples["elapsed_s"].min() == 0.0 and samples["elapsed_s"].max() == 178.0
    assert samples["gpu_index"].unique().to_list() == [0]
    row = samples.row(0, named=True)
    assert (row["power_w"], row["temperature_c"], row["util_gpu_pct"], row["util_mem_pct"],
            row["mem_clock_mhz"], row["sm_clock_mhz"]) == first
    assert row["source_line"] == 4                     # after the prompt and the two header lines
    runs = hw5["runs"].filter(pl.col("run") == run).row(0, named=True)
    assert runs["tool"] in ("nvidia-smi",) and runs["host"] in ("gv009", "gr007")


def test_mtemp_dash_on_gddr_boards_is_null(hw5):
    samples = hw5["samples"].filter(pl.col("run") == "hw5/part_a/gpu_utilization_rtx8000.txt")
    assert samples["temperature_c"].null_count() == 0   # gtemp is read, mtemp `-` is not used


def test_column_order_follows_the_s_letters():
    samples, _ = read(corpus_path("smi", "dmon", "whatsupjones__gpu-roofline__docs__validation__h100__dynamic_smi.txt"))
    # -s pcut: `0  134  33  39  2619  1980  9  4 ...` = pwr gtemp mtemp mclk pclk sm mem
    row = samples.row(2, named=True)
    assert (row["power_w"], row["temperature_c"], row["mem_clock_mhz"], row["sm_clock_mhz"],
            row["util_gpu_pct"], row["util_mem_pct"]) == (134.0, 33.0, 2619.0, 1980.0, 9.0, 4.0)


def test_rows_of_dashes_are_samples_with_nothing_known():
    samples, _ = read(corpus_path("smi", "dmon", "samisena__MyBiome__gpu_usage.log"))
    assert samples["util_gpu_pct"].head(3).to_list() == [0.0, None, None]
    assert samples["util_gpu_pct"].null_count() == 26 and samples.height == 27


def test_start_time_from_the_file_name_dates_the_samples():
    samples, _ = read(corpus_path("smi", "dmon", "verxirtam__glsltest__nvidia-smi_20160813115943_ABB.log"))
    assert samples["timestamp"][0] == datetime(2016, 8, 13, 11, 59, 43)
    assert samples["timestamp"][-1] == datetime(2016, 8, 13, 12, 8, 18)   # + 515 s
    # -s pucvmet (2016): fb is the framebuffer memory used
    assert samples["mem_used_mib"][0] == 155.0 and samples["sm_clock_mhz"][0] == 1669.0


def test_echoed_delay_date_time_columns_and_two_gpus():
    text = ("user@node:~$ nvidia-smi dmon -d 5 -o DT -s pu\n"
            "#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem    enc    dec\n"
            "#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %      %      %\n"
            " 20230509   10:14:30      0     62     34      -     10      2      0      0\n"
            " 20230509   10:14:30      1     63     35      -      -      -      0      0\n"
            " 20230509   10:14:35      0     70     36      -     55     20      0      0\n"
            " 20230509   10:14:35      1     64     35      -      0      0      0      0\n")
    samples, result = read_text(text, "dmon")
    assert samples["gpu_index"].to_list() == [0, 1, 0, 1]
    assert samples["timestamp"][2] == datetime(2023, 5, 9, 10, 14, 35)
    assert samples["elapsed_s"].to_list() == [0.0, 0.0, 5.0, 5.0]
    assert samples["util_gpu_pct"].to_list() == [10.0, None, 55.0, 0.0]
    assert result.hints.host == "node"


def test_echoed_delay_sets_the_period_without_time_columns():
    text = ("$ nvidia-smi dmon -s u -d 5\n# gpu     sm    mem\n# Idx      %      %\n"
            "    0     10      1\n    0     20      2\n    0     30      3\n")
    samples, _ = read_text(text, "dmon")
    assert samples["elapsed_s"].to_list() == [0.0, 5.0, 10.0]


def test_pmon_is_recognised_and_kept_out_of_samples_with_a_warning():
    text = ("# gpu         pid   type     sm    mem    enc    dec    jpg    ofa     fb   ccpm    command \n"
            "# Idx           #    C/G      %      %      %      %      %      %     MB     MB    name \n"
            "    0       4321     C     45     12      -      -      -      -   2048      0    python \n")
    doc = Document.from_text(text)
    from roofreport.families.common.textio import Head
    head = Head(path=doc.path, raw=doc.data, encoding="utf-8", text=doc.text(), size=len(doc.data),
                truncated=False)
    assert smi.sniff_text(head) == "pmon"
    samples, result = read_text(text, "pmon")
    assert samples.height == 0
    assert [w.code for w in result.warnings] == ["smi.pmon-not-sampled"]
    assert result.error is None


def test_a_damaged_row_is_reported_and_the_time_of_the_next_rows_kept():
    text = ("# gpu   pwr    sm\n# Idx     W     %\n    0   100    50\n    0   1\x01\x02 oops\n"
            "    0   102    52\n    0   103\n")
    samples, result = read_text(text, "dmon")
    assert samples["power_w"].to_list() == [100.0, None, 102.0]   # line 4's cells are null
    assert samples["elapsed_s"].to_list() == [0.0, 1.0, 2.0]
    assert [w.line for w in result.warnings if w.code == "smi.bad-value"] == [4, 4]
    (short,) = [w for w in result.warnings if w.code == "smi.bad-row"]
    assert short.line == 6 and short.message.startswith("dmon.txt:6:1: nvidia-smi dmon: row has 2 columns")
