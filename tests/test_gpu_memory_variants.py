"""A GPU name that states its board or memory size (`a800_sxm4_40gb`, `v100-32gb`, `NVIDIA
A100-SXM4-40GB`) names that variant wherever the GPU table has it, and no other where the table
lacks it (gpu/names.py rule 4, `GpuDatabase.other_variants`, `resolve._by_path`)."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport import gpu
from roofreport.pipeline import identity
from tests.conftest import SAMPLE_LOGS

DB = gpu.load_database()


def _by_folder(folder: str) -> gpu.GpuIdentity:
    """The GPU a folder's name alone gives, read as run identity reads a path."""
    token = identity.read_name(folder, is_file=False).get("gpu")
    return gpu.resolve(gpu.Evidence(path_tokens=(token,) if token else ()), DB)


@pytest.mark.parametrize("folder, key, assumed", [
    ("a800_sxm4_40gb", "A800 SXM4 40GB", False),          # was the A800 SXM4 80GB, the product's default
    ("A800-SXM4-40GB", "A800 SXM4 40GB", False),
    ("a100_40gb", "A100 SXM4 40GB", True),                # PCIe or SXM4, both 40 GB
    ("a100-80gb", "A100 SXM4 80GB", True),                # the 80 GB SXM4 nearest the product's default
    ("a100_80gb_pcie", "A100 PCIe 80GB", False),          # nvidia-smi's word order
    ("a100_sxm_80gb", "A100 SXM4 80GB", False),           # `sxm` is any SXM board
    ("v100_16gb", "Tesla V100 SXM2 16GB", True),
    ("v100-32gb", "Tesla V100 SXM2 32GB", True),          # was no GPU: `32gb` read as another product
    ("v100_pcie_32gb", "Tesla V100 PCIe 32GB", False),
    ("p100_12gb", "Tesla P100 PCIe 12GB", False),         # the one 12 GB P100
    ("m40_24gb", "Tesla M40 24GB", False),
    ("m40_12gb", "Tesla M40", False),                     # the 12 GB M40 is the row without a size
    ("rtx_a6000_48gb", "NVIDIA RTX A6000", False),
    ("h100_pcie_80gb", "H100 PCIe", False),
    ("h100_sxm_80gb", "H100 SXM5 80GB", False),
    ("gh200_480gb", "GH200 (96GB HBM3 GPU)", False),      # the size nvidia-smi's name gives
    ("k80_24gb", "Tesla K80 (per GK210 GPU)", False),     # the board's memory: two 12 GB GK210s
    ("mi250x_128gb", "Instinct MI250X (per GCD)", False), # two 64 GB GCDs
])
def test_a_folder_stating_a_memory_size_or_board_names_that_variant(folder, key, assumed):
    found = _by_folder(folder)
    assert (found.key, found.evidence, found.assumed) == (key, "path", assumed), found.note
    if assumed:          # what is left open is the board, never the memory size
        assert "does not name the variant" in found.note
        assert all(spec.dram_capacity == DB.get(key).dram_capacity for spec in DB.candidates(found.name))


@pytest.mark.parametrize("device, key", [
    # nvidia-smi's product names, ncu's device__attribute_display_name, nvprof's Device column
    ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"),
    ("A100-SXM4-40GB", "A100 SXM4 40GB"),                 # pre-R470 drivers omit `NVIDIA `
    ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
    ("NVIDIA A800-SXM4-40GB", "A800 SXM4 40GB"),
    ("Tesla V100-SXM2-16GB (0)", "Tesla V100 SXM2 16GB"),
    ("Tesla V100-SXM2-32GB", "Tesla V100 SXM2 32GB"),
    ("Tesla V100-PCIE-16GB", "Tesla V100 PCIe 16GB"),
    ("Tesla P100-PCIE-12GB", "Tesla P100 PCIe 12GB"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB"),
])
def test_device_names_stating_a_memory_size_name_that_variant(device, key):
    assert gpu.match(device).key == key


def test_a_name_stating_the_memory_narrows_a_product_to_its_variants_of_that_size():
    assert {s.key for s in DB.candidates("NVIDIA A100 40GB")} == {"A100 PCIe 40GB", "A100 SXM4 40GB"}
    assert {s.key for s in DB.candidates("v100 32 GB")} == {
        "Tesla V100 PCIe 32GB", "Tesla V100 SXM2 32GB", "Tesla V100 DGXS 32GB"}
    assert {s.key for s in DB.candidates("h200_141gb")} == {"H200 SXM 141GB", "H200 NVL 141GB"}


@pytest.mark.parametrize("folder, product", [
    ("a800_pcie_40gb", "A800"),           # the A800 PCIe is an 80 GB card
    ("a100_16gb", "A100"),
    ("v100_sxm2_24gb", "V100"),
    ("k80_16gb", "K80"),                 # neither a GK210's 12 GB nor the board's 24 GB
])
def test_a_variant_the_table_lacks_gives_no_peaks_and_says_so(folder, product):
    found = _by_folder(folder)
    assert (found.key, found.evidence) == (None, "path")
    assert "names a variant the GPU table lacks" in found.note and "--gpu" in found.note
    assert product in found.note                             # the variants it does have are named
    # nor does a folder above naming only the product bring back its default variant
    above = gpu.resolve(gpu.Evidence(path_tokens=(found.name, product)), DB)
    assert above.key is None and "lacks" in above.note


def test_a_logged_name_of_a_variant_the_table_lacks_is_said_so():
    found = gpu.resolve(gpu.Evidence(names=("NVIDIA A800-PCIe-40GB",)), DB)
    assert found.key is None and "a variant the GPU table lacks" in found.note
    assert [s.key for s in DB.other_variants("NVIDIA A800-PCIe-40GB")] == [
        "A800 SXM4 80GB", "A800 SXM4 40GB", "A800 PCIe 80GB", "A800 40GB Active"]
    assert DB.other_variants("NVIDIA A800-SXM4-40GB") == [] and DB.other_variants("a800") == []


def test_a_users_gpu_name_of_a_variant_the_table_lacks_is_said_so():
    found = gpu.resolve(gpu.Evidence(user="A800 PCIe 40GB"), DB)
    assert found.key is None and "'A800 PCIe 40GB' names a variant the GPU table lacks" in found.note
    assert "A800 PCIe 80GB" in found.note and "--peaks" in found.note
    assert gpu.resolve(gpu.Evidence(user="A800 40GB"), DB).assumed       # the SXM4 40GB or the 40GB Active


def test_a_mig_slice_is_not_read_as_its_whole_gpu():
    """The variant words are taken whole: `A100-SXM4-40GB MIG 1g.5gb` is no A100 token."""
    assert DB.candidates("NVIDIA A100-SXM4-40GB MIG 1g.5gb") == []
    assert identity.read_name("a100_mig_1g.5gb", is_file=False).get("gpu") is None


def test_a_folder_named_for_the_40gb_a800_gives_its_peaks(tmp_path):
    """End to end: an ncu log that names no device, in folders named for two A800 variants."""
    for folder in ("a800_sxm4_40gb", "a800_pcie_40gb"):
        run = tmp_path / folder / "vgg11"
        run.mkdir(parents=True)
        (run / "ncu-log-vgg11.txt").symlink_to(SAMPLE_LOGS / "a100" / "vgg11" / "ncu-log-vgg11.txt")
    import roofreport
    runs = roofreport.read(tmp_path, jobs=1).runs.sort("run")
    lacking, named = runs.row(0, named=True), runs.row(1, named=True)
    assert named["gpu_model"] == "A800 SXM4 40GB" and named["gpu_evidence"] == "path"
    assert named["peak_dram_bytes_per_s"] == pytest.approx(1555e9)      # the 40 GB card's HBM2, not 2039 GB/s
    assert lacking["gpu_model"] is None and "lacks" in lacking["gpu_note"]
    assert runs.filter(pl.col("gpu_model") == "A800 SXM4 80GB").height == 0
