"""The GPU table's base and memory clocks, each with its source (issue 31, item 1).

ncu locks the SMs to the base clock by default, so a run's roofs are only as right as the base
clock the table gives; the DRAM roof follows the memory clock a log records against the one the
datasheet bandwidth is quoted at. Every clock the table gives names where it comes from; one
no source gives stays empty, and a run that needs it says so."""

from __future__ import annotations

import csv
import io
import re

import polars as pl
import pytest

from roofreport import gpu
from roofreport.gpu import clocks
from roofreport.resources import package_data

DB = gpu.load_database()
TPU = "TechPowerUp GPU Database, https://www.techpowerup.com/gpu-specs/"
REFERENCE = "reference/gpu_specs.tsv, graded H, citing: "


def _rows() -> list[dict]:
    text = package_data("gpu_specs.tsv").read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text), delimiter="\t"))


def test_no_row_gives_a_clock_without_its_source():
    rows = _rows()
    based = [r for r in rows if r["base_clock_mhz"]]
    timed = [r for r in rows if r["mem_clock_mhz"]]
    assert len(based) >= 140 and len(timed) >= 130          # most GPUs have both, cited
    for row in rows:
        assert bool(row["base_clock_mhz"]) == bool(row["base_clock_source"].strip()), row["gpu"]
        assert bool(row["mem_clock_mhz"]) == bool(row["mem_clock_source"].strip()), row["gpu"]
        grades = dict(part.split("=", 1) for part in row["confidence"].split(";") if "=" in part)
        assert ("base" in grades) == bool(row["base_clock_mhz"]), row["gpu"]   # graded when given, never else


@pytest.mark.parametrize("spec", DB.specs, ids=lambda s: s.key)
def test_clocks_are_plausible(spec):
    """The base clock is at most the boost clock; a memory clock counted at half the per-pin
    data rate gives the datasheet bandwidth over a bus of one of the widths GPUs are built
    with (within the datasheet's rounding)."""
    if spec.base_clock_mhz and spec.boost_clock_mhz:
        assert 0.2 * spec.boost_clock_mhz <= spec.base_clock_mhz <= spec.boost_clock_mhz
    if spec.mem_clock_mhz and spec.dram_bw:
        bits = spec.dram_bw * 8 / (2 * spec.mem_clock_mhz * 1e6)
        assert any(abs(bits - width) <= 0.04 * width for width in _BUS_WIDTHS), (spec.key, bits)


_BUS_WIDTHS = (64, 96, 128, 160, 192, 256, 320, 352, 384, 512, 1024, 2048, 3072, 4096, 5120, 6144, 8192)


@pytest.mark.parametrize(("device", "base", "source"), [
    # Kepler .. Blackwell, datacenter and GeForce, and AMD
    ("Tesla K40m", 745, "NVIDIA Tesla K40 board specification BD-06902-001_v05"),
    ("GeForce GTX TITAN X", 1000, "NVIDIA GeForce GTX TITAN X specifications page"),
    ("GeForce GTX 1080", 1607, "NVIDIA GeForce GTX 1080 specifications page"),
    # the sourced reference table's graded values keep their citation, said as the reference's
    ("Tesla V100-SXM2-16GB", 1312, REFERENCE + "NERSC 'nominal 1312 MHz'"),
    ("Tesla T4", 585, REFERENCE + "NVIDIA T4 datasheet"),
    ("A100-SXM4-40GB", 1095, TPU + "a100-sxm4-40-gb"),
    ("NVIDIA L4", 795, REFERENCE + "NVIDIA L4 Tensor Core GPU datasheet"),
    ("NVIDIA H100 80GB HBM3", 1590, TPU + "h100-sxm5-80-gb"),
    ("NVIDIA GeForce RTX 5090", 2017, "NVIDIA GeForce RTX 5090 specifications page"),
    ("AMD Instinct MI250X", 1000, TPU + "radeon-instinct-mi250x"),
])
def test_base_clocks_with_their_sources(device, base, source):
    spec = gpu.match(device) or DB.chosen(device)
    assert spec is not None, device
    assert spec.base_clock_mhz == base
    assert spec.base_clock_source.startswith(source)


def test_where_sources_disagree_both_are_said():
    """The V100 SXM2 32GB keeps the 1312 MHz NERSC measured on the V100 (the reference table's
    value) and names the 1290 MHz TechPowerUp gives, so a reader can judge."""
    spec = DB.get("Tesla V100 SXM2 32GB")
    assert spec.base_clock_mhz == 1312
    assert "TechPowerUp lists 1290 MHz" in spec.base_clock_source


@pytest.mark.parametrize(("key", "mhz", "rate"), [
    # the memory clock nvidia-smi, rocm-smi and ncu's DRAM Frequency count: half the data rate per pin
    ("Tesla V100 SXM2 16GB", 877, None),               # HBM2 at 1.75 Gbit/s (A100 whitepaper)
    ("Tesla T4", 5000, "10 Gbit/s"),                   # GDDR6; the colab T4's ncu logged 4.68 GHz
    ("GeForce RTX 2080 Ti", 7000, "14 Gbit/s"),        # GDDR6; the corpus' 2080 Ti ncu logged 6.64 GHz
    ("GeForce GTX 1080", 5004, "10.01 Gbit/s"),        # GDDR5X
    ("GeForce RTX 4090", 10504, "21.01 Gbit/s"),       # GDDR6X
    ("GeForce RTX 5090", 14000, "28 Gbit/s"),          # GDDR7
    ("H100 SXM5 80GB", 2626, "5.252 Gbit/s"),          # HBM3
    ("Instinct MI250X (per GCD)", 1600, "3.2 Gbit/s"),  # HBM2e, rocm-smi's MCLK
    # the entry matched by name and bandwidth, its boost clock another (the K80's 824 against 875)
    ("Tesla K80 (per GK210 GPU)", 2506, "5.012 Gbit/s"),  # GDDR5; nvidia-smi's 2505 MHz
])
def test_memory_clocks_with_their_sources(key, mhz, rate):
    spec = DB.get(key)
    assert spec.mem_clock_mhz == mhz
    assert spec.mem_clock_source
    if rate:
        assert spec.mem_clock_source.startswith(TPU) and f"{rate} per pin" in spec.mem_clock_source
        # the bandwidth the datasheet quotes is that data rate over the bus (a per-GPU row of a
        # board the entry describes whole: over half of it)
        width = int(re.search(r"over (\d+) bits", spec.mem_clock_source).group(1))
        whole = 2 * mhz * 1e6 * width / 8
        halves = (1, 0.5) if "per " in key else (1,)
        assert any(spec.dram_bw == pytest.approx(whole * part, rel=0.03) for part in halves), (spec.dram_bw, whole)


def test_logged_memory_clocks_of_the_corpus_sit_at_or_below_the_tables():
    """ncu's DRAM Frequency in the corpus' logs is in the table's convention: at or under the
    table's memory clock (ncu locks memory too), never a data rate twice as high."""
    for key, logged_ghz in (("Tesla T4", 4.68), ("GeForce RTX 2080 Ti", 6.64),
                            ("GeForce RTX 3050 Ti Laptop GPU", None)):
        spec = DB.get(key)
        if logged_ghz is None:
            assert spec.mem_clock_mhz is None     # no source gives the laptop part's: left empty
            continue
        assert 0.85 <= logged_ghz * 1e3 / spec.mem_clock_mhz <= 1.0
        assert spec.mem_clock_scale(logged_ghz * 1e9) == pytest.approx(logged_ghz * 1e3 / spec.mem_clock_mhz)


def test_an_ncu_run_on_a_gpu_without_a_base_clock_says_so(tmp_path):
    """ncu locked the P100 PCIe to its base clock, which no source gives: the roofs stay at the
    boost clock's peaks, and the run says why instead of assuming a clock."""
    import roofreport
    from tests.test_gpu_clocks import _COUNTERS, NCU_LOG

    assert DB.get("Tesla P100 PCIe 16GB").base_clock_mhz is None
    folder = tmp_path / "p100_pcie_16gb"
    folder.mkdir()
    text = NCU_LOG.format(command="$ ncu --metrics gpu__time_duration.sum ./vectorAdd").replace("CC 7.5", "CC 6.0")
    text = text.replace("    gpu__time_duration.sum      usecond         4.13\n",
                        "    gpu__time_duration.sum      usecond         4.13\n" + _COUNTERS)
    (folder / "ncu_vectoradd.txt").write_text(text, encoding="utf-8")
    row = roofreport.read(tmp_path).runs.filter(pl.col("flops").is_not_null()).row(0, named=True)
    assert row["gpu_model"] == "Tesla P100 PCIe 16GB" and row["clock_domain"] == clocks.BASE
    assert row["peak_flops_per_s"] == pytest.approx(9.3e12)
    assert row["roof_clock"].startswith("boost clock 1303 MHz: ncu")
    assert row["roof_clock"].endswith("but the GPU table has no base clock for this GPU")
