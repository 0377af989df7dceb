"""The GPU database: sourced peaks from reference/gpu_specs.tsv, matched from device names as the
logs spell them (prefix traps, missing `NVIDIA `, truncated names, path tokens), user overrides."""

from __future__ import annotations

import csv
import io

import pytest

from roofreport import hardware
from roofreport.errors import UsageError
from tests.conftest import ROOT

SHIPPED = ROOT / "roofreport" / "data" / "gpu_specs.tsv"
REFERENCE = ROOT.parent / "shared" / "reference" / "gpu_specs.tsv"


@pytest.mark.parametrize("device, key", [
    ("NVIDIA L4", "NVIDIA L4"),                      # a prefix of L40 / L40S
    ("NVIDIA L40S", "NVIDIA L40S"),
    ("NVIDIA L40", "NVIDIA L40"),
    ("NVIDIA A10", "NVIDIA A10"),
    ("Tesla V100-SXM2-16GB", "Tesla V100 SXM2 16GB"),
    ("Tesla V100-SXM2-16GB (0)", "Tesla V100 SXM2 16GB"),   # nvprof metrics device column
    ("Tesla V100S-PCIE-32GB", "Tesla V100S PCIe 32GB"),     # 'Tesla V100' is a prefix
    ("Tesla V100-PCIE-32GB", "Tesla V100 PCIe 32GB"),
    ("NVIDIA H200", "H200 SXM 141GB"),
    ("NVIDIA H200 NVL", "H200 NVL 141GB"),
    ("A100-SXM4-40GB", "A100 SXM4 40GB"),                   # pre-R470 driver: no NVIDIA prefix
    ("NVIDIA A100-SXM4-40GB (0)", "A100 SXM4 40GB"),        # nsys gputrace Device column
    ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB"),
    ("Tesla K80", "Tesla K80 (per GK210 GPU)"),
    ("Tesla K80 (3)", "Tesla K80 (per GK210 GPU)"),
    ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090"),
])
def test_device_names_match_the_right_sku(device, key):
    spec = hardware.match(device)
    assert spec is not None and spec.key == key


@pytest.mark.parametrize("device", ["NVIDIA A10G", "NVIDIA GeForce", "GeForce GTX 106", "", None, "vgg11"])
def test_names_of_other_skus_or_saying_nothing_do_not_match(device):
    # A10G is a different SKU from A10 (not in the database); truncated "NVIDIA GeForce" names no GPU.
    assert hardware.match(device) is None


@pytest.mark.parametrize("token, key", [
    ("A100", "A100 SXM4 40GB"), ("a100", "A100 SXM4 40GB"), ("V100", "Tesla V100 SXM2 16GB"),
    ("K80", "Tesla K80 (per GK210 GPU)"), ("P40", "Tesla P40"), ("a100_vgg11", "A100 SXM4 40GB"),
    ("Tesla V100-SXM2", "Tesla V100 SXM2 16GB"),   # nvprof trace truncates the Device column
])
def test_path_tokens_map_to_a_representative_sku_with_a_note(token, key):
    spec = hardware.match(token)
    assert spec.key == key
    assert "assumed" in spec.notes or "path token" in spec.notes


def test_k80_peaks_are_per_gpu_not_per_board():
    k80 = hardware.match("Tesla K80")
    # The board datasheet says 8.73 TFLOP/s FP32 and 480 GB/s for its two GK210 GPUs.
    assert k80.fp32 == pytest.approx(4.37e12)
    assert k80.fp64 == pytest.approx(1.46e12)
    assert k80.dram_bw == pytest.approx(240e9)
    assert k80.family == "kepler" and k80.compute_capability == "3.7"


def test_peaks_are_in_base_units_with_their_source():
    v100 = hardware.match("Tesla V100-SXM2-16GB")
    assert v100.fp32 == 15.7e12 and v100.fp64 == 7.8e12 and v100.fp16_tensor == 125e12
    assert v100.dram_bw == 900e9
    assert v100.peak("fp32") == 15.7e12 and v100.peak("tensor_fp16") == 125e12
    assert v100.peak("tensor_tf32") is None          # Volta has no TF32 tensor cores
    assert "datasheet" in v100.source
    a100 = hardware.match("A100-SXM4-40GB")
    assert a100.peak("tensor_tf32") == 156e12 and a100.peak("tensor_bf16") == 312e12
    assert a100.family == "ampere" and a100.boost_clock_mhz == 1410 and a100.base_clock_mhz == 1095
    with pytest.raises(UsageError):
        a100.peak("fp8")


def test_clock_scaling_to_the_logged_sm_clock():
    # NERSC: V100 FP64 peak is 6.7 TFLOP/s at the 1312 MHz ncu locks to (7.8 at 1530 MHz boost).
    v100 = hardware.match("Tesla V100-SXM2-16GB")
    locked = v100.at_clock(1312e6)
    assert locked.fp64 == pytest.approx(6.69e12, rel=1e-3)
    assert locked.dram_bw == v100.dram_bw   # the SM clock lock does not set the memory clock
    assert "1312 MHz" in locked.notes
    assert v100.at_clock(None) is v100


def test_shipped_table_is_the_reference_table():
    if REFERENCE.is_file():
        assert SHIPPED.read_text(encoding="utf-8") == REFERENCE.read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(SHIPPED.read_text(encoding="utf-8")), delimiter="\t"))
    assert len(hardware.load_database().specs) == len(rows)
    assert all(s.source for s in hardware.load_database().specs)


def test_tsv_overrides_change_given_values_and_add_gpus(tmp_path):
    path = tmp_path / "peaks.tsv"
    path.write_text("gpu\taliases\tfp32_tflops\tdram_gbps\tarch\tsource\n"
                    "A100 SXM4 40GB\t\t\t1400\t\tour STREAM run\n"
                    "Lab GPU 9000\tNVIDIA Lab GPU 9000|LabGPU9000\t50\t2000\tAmpere GA100\tvendor sheet\n",
                    encoding="utf-8")
    db = hardware.load_database(path)
    a100 = db.match("NVIDIA A100-SXM4-40GB")
    assert a100.dram_bw == 1400e9 and a100.fp32 == 19.5e12      # only the given value changed
    assert "our STREAM run" in a100.source and str(path) in a100.source
    lab = db.match("NVIDIA Lab GPU 9000 (1)")
    assert lab.key == "Lab GPU 9000" and lab.fp32 == 50e12 and lab.family == "ampere"
    assert hardware.match("NVIDIA Lab GPU 9000") is None          # the default stays untouched


def test_toml_overrides(tmp_path):
    path = tmp_path / "peaks.toml"
    path.write_text('[[gpu]]\ngpu = "NVIDIA A10G"\naliases = ["NVIDIA A10G"]\narch = "Ampere GA102"\n'
                    'fp32_tflops = 31.2\ndram_gbps = 600\nsource = "AWS G5 page"\n', encoding="utf-8")
    db = hardware.load_database(path)
    spec = db.match("NVIDIA A10G")
    assert spec.key == "NVIDIA A10G" and spec.dram_bw == 600e9
    assert db.match("NVIDIA A10").key == "NVIDIA A10"


def test_bad_override_files_raise_usage_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[gpu]\n", encoding="utf-8")
    with pytest.raises(UsageError):
        hardware.load_database(bad)
    with pytest.raises(UsageError):
        hardware.load_database(tmp_path / "missing.tsv")
