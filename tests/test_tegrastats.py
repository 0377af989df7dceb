"""Jetson tegrastats logs into `samples`: the corpus's real JetPack 4 log and the demo's JetPack 6
log checked line by line against plain regexes, one line of every generation's spelling, and
damage (a garbled line, a cut last line) reported with file:line:column."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from roofreport.families import tegrastats
from roofreport.families.common.textio import read_head
from tests.conftest import SAMPLE_LOGS, corpus_path, parse_path, read_samples

DEMO = SAMPLE_LOGS / "jetson_orin" / "tegrastats.log"

# One line of each generation, as tegrastats spells it (values invented).
R24_TX1 = "RAM 1402/3983MB (lfb 312x4MB) cpu [3%,1%,0%,0%]@204 EMC 4%@40 AVP 11%@12 VDE 120 GR3D 25%@153 EDP limit 1734"
JP4_TX2 = ("RAM 1611/7854MB (lfb 1022x4MB) CPU [2%@345,off,off,1%@345,0%@345,1%@345] EMC_FREQ 5%@1600 "
           "GR3D_FREQ 61%@1122 APE 150 MTS fg 0% bg 0% BCPU@37C MCPU@37C GPU@35.5C PLL@37C Tboard@31C "
           "Tdiode@34.25C PMIC@100C thermal@36.1C VDD_IN 3921/3870 VDD_CPU 307/298 VDD_GPU 1224/1180 "
           "VDD_SOC 536/531 VDD_WIFI 0/0 VDD_DDR 480/471")
JP4_XAVIER = ("RAM 2110/15692MB (lfb 2876x4MB) SWAP 0/7846MB (cached 0MB) CPU [4%@1190,2%@1190,off,off,"
              "off,off,1%@1190,0%@1190] EMC_FREQ 9%@2133 GR3D_FREQ 44%@1377 APE 150 MTS fg 0% bg 1% "
              "AO@40C GPU@41.5C Tdiode@43.25C PMIC@100C AUX@40.5C CPU@42C thermal@41.45C Tboard@41C "
              "GPU 3108/2944 CPU 620/612 SOC 1396/1380 CV 0/0 VDDRQ 465/459 SYS5V 1690/1688")
JP5_ORIN_AGX = ("RAM 5321/30536MB (lfb 6533x4MB) SWAP 0/15268MB (cached 0MB) CPU [8%@2201,3%@2201,1%@2201,"
                "0%@2201,off,off,off,off,off,off,off,off] EMC_FREQ 11%@3199 GR3D_FREQ 67%@[1300,1300] "
                "VIC_FREQ 729 APE 174 CV0@-256C CPU@47.1C Tboard@36C SOC2@44.2C Tdiode@37.5C SOC0@44.7C "
                "CV1@-256C GPU@-256C tj@47.1C SOC1@43.9C CV2@-256C VDD_GPU_SOC 9183mW/8644mW "
                "VDD_CPU_CV 1207mW/1150mW VIN_SYS_5V0 4410mW/4386mW NC 0mW/0mW VDDQ_VDD2_1V8AO 602mW/588mW NC 0mW/0mW")
JP7_THOR = ("08-02-2026 11:05:42 RAM 21874/62817MB (lfb 3x2MB) CPU [17%@2201,12%@2201,9%@2201,21%@2201] "
            "EMC_FREQ 6%@3199 GR3D_FREQ @[1000,1000,1000] NVENC0 off NVDEC0 off NVJPG0 off VIC off OFA off "
            "NVDLA0 off PVA0_FREQ off APE 174 cpu@55.031C/55.031C soc0@51.2C/51.2C gpu@49.875C/49.875C "
            "VDD_GPU 6120mW/6088mW/6410mW VDD_CPU_SOC_MSS 3990mW/3950mW/4105mW VIN 14210mW/14180mW/14900mW")


def read(tmp_path: Path, text: str, name: str = "tegrastats.log"):
    return read_samples(tmp_path, text, name, "tegrastats")


@pytest.mark.parametrize("line, variant, expected", [
    (R24_TX1, "L4T R21-R24", dict(util_gpu_pct=25.0, sm_clock_mhz=153.0, util_mem_pct=4.0, mem_clock_mhz=40.0,
                                  mem_used_mib=1402.0, mem_total_mib=3983.0, temperature_c=None, power_w=None)),
    (JP4_TX2, "JetPack 3-4", dict(util_gpu_pct=61.0, sm_clock_mhz=1122.0, util_mem_pct=5.0, mem_clock_mhz=1600.0,
                                  mem_used_mib=1611.0, temperature_c=35.5, power_w=1.224)),
    (JP4_XAVIER, "JetPack 3-4", dict(util_gpu_pct=44.0, sm_clock_mhz=1377.0, temperature_c=41.5, power_w=3.108)),
    (JP5_ORIN_AGX, "JetPack 5+", dict(util_gpu_pct=67.0, sm_clock_mhz=1300.0, mem_clock_mhz=3199.0,
                                      temperature_c=None, power_w=9.183)),
    (JP7_THOR, "JetPack 5+, timestamped", dict(util_gpu_pct=None, sm_clock_mhz=1000.0, temperature_c=49.875,
                                               power_w=6.12, timestamp=datetime(2026, 8, 2, 11, 5, 42))),
])
def test_every_generations_spelling(tmp_path, line, variant, expected):
    samples, result = read(tmp_path, f"{line}\n{line.replace('11:05:42', '11:05:43')}\n")
    assert result.variant == variant and result.error is None and result.warnings == []
    row = samples.row(0, named=True)
    for column, value in expected.items():
        assert row[column] == (pytest.approx(value) if isinstance(value, float) else value), column
    assert row["gpu_index"] == 0 and samples["elapsed_s"].to_list() == [0.0, 1.0]


def _numbers(pattern: str, text: str) -> list[float]:
    return [float(m) for m in re.findall(pattern, text)]


def test_corpus_nano_log_line_by_line():
    path = corpus_path("smi", "other", "Meow404__FYP__gpu_stats.txt")
    result = parse_path(path, "tegrastats")
    assert result.variant == "JetPack 3-4" and result.error is None and result.warnings == []
    samples = result.tables["samples"]
    text = path.read_text(encoding="utf-8")
    assert samples["util_gpu_pct"].to_list() == _numbers(r"GR3D_FREQ (\d+)%", text)
    assert samples["util_mem_pct"].to_list() == _numbers(r"EMC_FREQ (\d+)%", text)
    assert samples["mem_used_mib"].to_list() == _numbers(r"RAM (\d+)/", text)
    assert samples["temperature_c"].to_list() == _numbers(r" GPU@([\d.]+)C", text)
    assert samples["power_w"].to_list() == [mw / 1000 for mw in _numbers(r"POM_5V_GPU (\d+)/", text)]
    assert samples["sm_clock_mhz"].null_count() == samples.height     # printed without `@MHz`: unknown
    assert samples["elapsed_s"].to_list() == [float(i) for i in range(samples.height)]


def test_demo_log_line_by_line_with_its_timestamps(tmp_path):
    text = DEMO.read_text(encoding="utf-8")
    samples, result = read(tmp_path, text)
    assert result.variant == "JetPack 5+, timestamped" and result.warnings == []
    stamps = [datetime.strptime(s, "%m-%d-%Y %H:%M:%S") for s in re.findall(r"^(\S+ \S+) RAM", text, re.M)]
    assert samples["timestamp"].to_list() == stamps and len(stamps) == 62
    assert samples["elapsed_s"].to_list() == [(s - stamps[0]).total_seconds() for s in stamps]
    assert samples["util_gpu_pct"].to_list() == _numbers(r"GR3D_FREQ (\d+)%", text)
    assert samples["sm_clock_mhz"].to_list() == _numbers(r"GR3D_FREQ \d+%@\[(\d+),", text)
    assert samples["temperature_c"].to_list() == _numbers(r" gpu@([\d.]+)C", text)
    assert samples["power_w"].to_list() == pytest.approx(
        [mw / 1000 for mw in _numbers(r"VDD_CPU_GPU_CV (\d+)mW", text)])


def test_damage_is_reported_where_it_is_and_the_rest_is_read(tmp_path):
    garbled = JP4_TX2.replace("VDD_GPU 1224/1180", "VDD_GPU 12 24/1180")
    cut = JP4_TX2[:-40]                                  # the last line, cut mid-item: `VDD_SOC 5`
    text = "\n".join(["$ sudo tegrastats --interval 500", JP4_TX2, "Segmentation fault (core dumped)",
                      garbled, JP4_TX2, JP4_TX2, cut])
    samples, result = read(tmp_path, text, "t.log")
    assert samples["source_line"].to_list() == [2, 5, 6]
    assert samples["elapsed_s"].to_list() == [0.0, 0.5, 1.0]      # `--interval 500`: half a second apart
    found = {(w.code, w.line) for w in result.warnings}
    assert found == {("tegrastats.bad-line", 3), ("tegrastats.bad-line", 4), ("tegrastats.truncated", 7)}
    truncated = next(w for w in result.warnings if w.code == "tegrastats.truncated")
    assert f"t.log:7:{len(cut) + 1}" in truncated.message and "the file ends in the middle of this line " \
        "(no final line break): its values may be cut and are not read" in truncated.message
    garbled_warning = next(w for w in result.warnings if w.line == 4)
    column = garbled.index("24/1180") + 1
    assert f"t.log:4:{column}" in garbled_warning.message and "^" in garbled_warning.message


def test_a_file_of_other_lines_is_not_tegrastats(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("RAM usage was high\n" + JP4_TX2 + "\n")
    assert tegrastats.sniff(read_head(path)) is None


def test_no_other_corpus_file_is_taken_for_tegrastats():
    root = corpus_path()
    claimed = {p.relative_to(root).as_posix() for p in sorted(root.rglob("*"))
               if p.is_file() and tegrastats.sniff(read_head(p))}
    assert claimed == {"smi/other/Meow404__FYP__gpu_stats.txt"}
