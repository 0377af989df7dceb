"""The GPU database: sourced peaks (roofreport/data/gpu_specs.tsv, agreeing with
reference/gpu_specs.tsv), matched from device names as the logs spell them (prefix traps, a missing
`NVIDIA `, names cut by nvidia-smi, nvprof and ncu, path tokens) only when one GPU fits, user
overrides. tests/test_gpu_corpus_names.py checks every device name of the real corpus."""

from __future__ import annotations

import csv
import io

import pytest

from roofreport import gpu
from roofreport.errors import UsageError
from roofreport.pipeline import identity
from tests.conftest import ROOT

SHIPPED = ROOT / "roofreport" / "data" / "gpu_specs.tsv"
REFERENCE = ROOT.parent / "shared" / "reference" / "gpu_specs.tsv"
DB = gpu.load_database()
K80 = "Tesla K80 (per GK210 GPU)"

# Device names CUDA gives to more than one Jetson module: listed on each, matched to none.
SHARED_NAMES = {"Xavier": 2, "Orin": 6, "NVIDIA Tegra X1": 2}


def _rows(path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")), delimiter="\t"))


@pytest.mark.parametrize("device, key", [
    ("NVIDIA L4", "NVIDIA L4"),                      # a prefix of L40 / L40S
    ("NVIDIA L40S", "NVIDIA L40S"),
    ("NVIDIA L40", "NVIDIA L40"),
    ("NVIDIA L20", "NVIDIA L20"),
    ("NVIDIA A10", "NVIDIA A10"),                    # a prefix of A10G
    ("NVIDIA A10G", "NVIDIA A10G"),
    ("Tesla V100-SXM2-16GB", "Tesla V100 SXM2 16GB"),
    ("Tesla V100-SXM2-16GB (0)", "Tesla V100 SXM2 16GB"),   # nvprof metrics device column
    ("Tesla V100S-PCIE-32GB", "Tesla V100S PCIe 32GB"),     # 'Tesla V100' is a prefix
    ("Tesla V100-PCIE-32GB", "Tesla V100 PCIe 32GB"),
    ("Tesla V100-DGXS-32GB", "Tesla V100 DGXS 32GB"),
    ("NVIDIA H200", "H200 SXM 141GB"),                      # a prefix of H200 NVL
    ("NVIDIA H200 NVL", "H200 NVL 141GB"),
    ("NVIDIA H20", "NVIDIA H20"),                           # a prefix of H200 and of H20-3e
    ("NVIDIA H20-3e", "NVIDIA H20-3e"),
    ("A100-SXM4-40GB", "A100 SXM4 40GB"),                   # pre-R470 driver: no NVIDIA prefix
    ("NVIDIA A100-SXM4-40GB (0)", "A100 SXM4 40GB"),        # nsys gputrace Device column
    ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
    ("NVIDIA A800-SXM4-80GB", "A800 SXM4 80GB"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB"),
    ("NVIDIA GH200 480GB", "GH200 (96GB HBM3 GPU)"),
    ("NVIDIA GH200 144G HBM3e", "GH200 (144GB HBM3e GPU)"),
    ("Tesla K80", K80),
    ("Tesla K80 (3)", K80),
    ("Tesla K20m", "Tesla K20"),
    ("Tesla K20Xm", "Tesla K20X"),                          # 'Tesla K20' is a prefix
    ("Tesla K10.G2.8GB", "Tesla K10 (per GK104 GPU)"),
    ("Tesla M40 24GB", "Tesla M40 24GB"),                   # 'Tesla M40' is a prefix
    ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090"),
    ("GeForce RTX 3090", "GeForce RTX 3090"),
    ("NVIDIA GeForce RTX 3070 Ti", "GeForce RTX 3070 Ti"),  # 'RTX 3070' is a prefix
    ("NVIDIA GeForce RTX 3070 Laptop GPU", "GeForce RTX 3070 Laptop GPU"),
    ("NVIDIA GeForce RTX 3050Ti Laptop GPU", "GeForce RTX 3050 Ti Laptop GPU"),  # HP's spelling
    ("NVIDIA GeForce RTX 4090 D", "GeForce RTX 4090 D"),
    ("NVIDIA GeForce RTX 2070 Super", "GeForce RTX 2070 SUPER"),          # case does not matter
    ("GeForce GTX TITAN X", "GeForce GTX TITAN X"),                       # Maxwell
    ("TITAN X (Pascal)", "TITAN X (Pascal)"),                             # Pascal
    ("TITAN Xp COLLECTORS EDITION", "TITAN Xp"),
    ("NVIDIA RTX A4500", "NVIDIA RTX A4500"),
    ("NVIDIA RTX 4000 SFF Ada Generation", "NVIDIA RTX 4000 SFF Ada Generation"),
    ("NVIDIA RTX 4000 Ada Generation", "NVIDIA RTX 4000 Ada Generation"),
    ("NVIDIA A800 80GB PCIe LC", "A800 PCIe 80GB"),                       # liquid-cooled board
    ("NVIDIA Tegra X2", "Jetson TX2"),
    ("GK20A", "Jetson TK1"),
])
def test_device_names_match_the_right_sku(device, key):
    spec = gpu.match(device)
    assert spec is not None and spec.key == key


@pytest.mark.parametrize("device", [
    "NVIDIA GeForce", "GeForce GTX 106", "", "   ", None, "vgg11",
    "NVIDIA H100",                                  # a real name (PCI 2339) of an H100 not described here
    "NVIDIA A100-SXM4-40GB MIG 1g.5gb",             # a MIG slice has a fraction of the SMs
    "NVIDIA GeForce RTX 3050 A Laptop GPU",         # not the RTX 3050, nor its laptop GPU
    "NVIDIA GeForce RTX 2080 with Max-Q Design",    # not the desktop RTX 2080
    "NVIDIA RTX A5000 Laptop GPU",
    "NVIDIA T1000 8GB", "NVIDIA H20 NVL16", "NVIDIA L2",
    "a2", "A16", "hw2",                             # folders, not the NVIDIA A2 / A16
])
def test_names_of_other_gpus_or_saying_nothing_do_not_match(device):
    assert gpu.match(device) is None


# -- names cut by the tools ------------------------------------------------------------------

@pytest.mark.parametrize("device, rows", [
    # srikarym-hpml (nvidia-smi tables of 2019): never one of these, always no GPU.
    ("GeForce RTX 208...", {"GeForce RTX 2080", "GeForce RTX 2080 SUPER", "GeForce RTX 2080 Ti"}),
    ("GeForce GTX TIT...", {"GeForce GTX TITAN", "GeForce GTX TITAN Black", "GeForce GTX TITAN X",
                            "GeForce GTX TITAN Z (per GK110B GPU)"}),
    ("Tesla V100-SXM2...", {"Tesla V100 SXM2 16GB", "Tesla V100 SXM2 32GB"}),   # same peaks, two rows
    ("GeForce GTX 105...", {"GeForce GTX 1050", "GeForce GTX 1050 Ti"}),
    ("NVIDIA GeForce GTX 1650 ...", {"GeForce GTX 1650 SUPER", "GeForce GTX 1650 Ti"}),  # a word follows 1650
    ("Tesla V100-SXM2", {"Tesla V100 SXM2 16GB", "Tesla V100 SXM2 32GB"}),      # nvprof trace, 15 characters
])
def test_cut_names_that_fit_several_gpus_match_none(device, rows):
    assert gpu.match(device) is None
    assert {s.key for s in DB.candidates(device)} == rows


@pytest.mark.parametrize("device, key", [
    ("NVIDIA GeForce RTX 3060 L...", "GeForce RTX 3060 Laptop GPU"),   # only one GPU's name begins so
    ("NVIDIA A100-SXM4-4", "A100 SXM4 40GB"),                          # ncu's raw page keeps 18 characters
    ("Tesla V100S-P...", "Tesla V100S PCIe 32GB"),
])
def test_cut_names_that_fit_one_gpu_match_it(device, key):
    assert gpu.match(device).key == key


def test_a_cut_name_is_its_own_gpu_or_none_never_another():
    """Every name of every row, cut after any number of characters as nvidia-smi does."""
    for spec in DB.specs:
        for name in (spec.key, *spec.aliases):
            for end in range(3, len(name)):
                found = gpu.match(name[:end] + "...")
                assert found is None or found.key == spec.key, (name[:end], found.key)


def test_a_tesla_k40m_gets_k40_peaks_never_the_k80s():
    k40 = gpu.match("Tesla K40m")
    k80 = gpu.match("Tesla K80")
    assert k40.key == "Tesla K40" and k40.label == "K40" and k40.compute_capability == "3.5"
    assert k40.sm_count == 15 and k40.dram_capacity == 12 * 2.0**30
    assert k40.fp32 == pytest.approx(5.04e12) and k40.fp64 == pytest.approx(1.68e12)   # 2880 x 2 x 875 MHz
    assert k40.dram_bw == 288e9
    assert (k40.fp32, k40.dram_bw) != (k80.fp32, k80.dram_bw)
    assert gpu.match("k40m") is k40 and gpu.match("K40") is k40      # path tokens too


# -- path tokens -----------------------------------------------------------------------------

@pytest.mark.parametrize("token, key", [
    ("K80", K80), ("k80", K80), ("P40", "Tesla P40"), ("T4", "Tesla T4"), ("L4", "NVIDIA L4"),
    ("K20M", "Tesla K20"), ("RTX8000", "Quadro RTX 8000"), ("rtx2080ti", "GeForce RTX 2080 Ti"),
    ("RTX 2080 Ti", "GeForce RTX 2080 Ti"), ("RTX3050TI", "GeForce RTX 3050 Ti Laptop GPU"),
    ("RTX5070", "GeForce RTX 5070"), ("RTXA5000", "NVIDIA RTX A5000"), ("B200", "B200 (HGX, 1000 W)"),
    ("h200nvl", "H200 NVL 141GB"), ("titanxp", "TITAN Xp"), ("rtx6000ada", "NVIDIA RTX 6000 Ada Generation"),
    ("alexnet_16_0.01_k80_full.756013", K80), ("out.resnet18_4_0.01_p40_conv.775781", "Tesla P40"),
])
def test_path_tokens_naming_one_gpu_match_it(token, key):
    assert gpu.match(token).key == key


@pytest.mark.parametrize("token, family, count", [
    ("V100", "volta", 6), ("v100", "volta", 6), ("A100", "ampere", 4), ("a100_vgg11", "ampere", 4),
    ("H100", "hopper", 3), ("H200", "hopper", 2), ("GH200", "hopper", 2),
    ("RTX3070", "ampere", 2),               # the desktop card or the laptop GPU
    ("titanx", None, 2),                    # Maxwell GTX TITAN X or Pascal TITAN X
    ("xavier", "volta", 2), ("a100_vs_v100", None, 10),
])
def test_path_tokens_naming_several_gpus_match_none_but_may_tell_the_family(token, family, count):
    assert gpu.match(token) is None
    assert len(DB.candidates(token)) == count
    assert DB.family(token) == family


@pytest.mark.parametrize("stem", [
    "alexnet_16_0.01_k80_full", "resnet18_4_0.01_p40_conv", "ncu_resnet18_v100", "vgg11_a100",
    "llama3_l4_nsys2023_L4", "rtx2080ti_sgemm", "rtxa5000_nsys2024.4_report1", "rtx3050ti_laptop_2mm",
    "openacc_nbody_k20m", "gpt2_t4_bf16", "k40m_run", "h800_bench", "rtx_4090_super",
])
def test_the_token_runs_py_finds_is_read_as_the_whole_name_is(stem):
    """pipeline/identity.py finds a GPU token in a path and hands gpu.py the token; gpu.py reads
    path components itself too (enrich/__init__.py): both give the same GPU."""
    token = identity.read_name(stem).get("gpu")
    assert token is not None
    assert DB.candidates(token) == DB.candidates(stem)


# -- the table -------------------------------------------------------------------------------

def _grades(confidence: str, leave_out: tuple[str, ...] = ()) -> list[str]:
    return [part for part in confidence.split(";") if part and part.split("=")[0] not in leave_out]


def test_every_reference_row_has_the_same_values_here():
    """reference/gpu_specs.tsv is the sourced table this one grew from: each of its rows keeps
    every value (aliases may grow, columns may be added). One exception: the base clocks it
    graded low (`base=L`) and gave no source for. Those are now the cited value
    (`base_clock_source`) or empty (issue 31: no clock without its source)."""
    if not REFERENCE.is_file():
        pytest.skip(f"reference table not found at {REFERENCE}")
    ours = {r["gpu"]: r for r in _rows(SHIPPED)}
    reference = _rows(REFERENCE)
    assert reference
    for ref in reference:
        row = ours[ref["gpu"]]
        unsourced_base = "base=L" in _grades(ref["confidence"])
        for column, value in ref.items():
            if column == "aliases":
                assert set(value.split("|")) <= set(row["aliases"].split("|")), ref["gpu"]
            elif column == "base_clock_mhz" and unsourced_base:
                assert row[column] == value or row["base_clock_source"] or not row[column], ref["gpu"]
            elif column == "confidence":
                assert _grades(row[column], ("base", "memclk")) == _grades(value, ("base",)), ref["gpu"]
            else:
                assert row[column] == value, (ref["gpu"], column)


def test_every_row_names_its_source_and_grades_its_values():
    rows = _rows(SHIPPED)
    assert len(DB.specs) == len(rows) >= 150
    for row in rows:
        assert row["source"].strip() and row["arch"].strip(), row["gpu"]
        graded = {part.split("=")[0] for part in row["confidence"].split(";") if part}
        given = {"sm_count": "sm", "fp32_tflops": "fp32", "dram_gbps": "bw", "dram_gib": "mem"}
        assert {grade for column, grade in given.items() if row[column]} <= graded, row["gpu"]


_CORES_PER_SM = {"kepler": 192, "maxwell": 128, "pascal": 128, "volta": 64, "turing": 64, "ampere": 128,
                 "ada": 128, "hopper": 128, "blackwell": 128,
                 # AMD: FP32 lanes per compute unit (non-packed; RDNA3's dual issue doubles them)
                 "gcn5": 64, "cdna1": 64, "cdna2": 64, "cdna3": 64, "cdna4": 64, "rdna2": 64, "rdna3": 128}


@pytest.mark.parametrize("spec", DB.specs, ids=lambda s: s.key)
def test_peaks_are_plausible(spec):
    """Ridge points (peak FLOP/s per DRAM byte/s) of real GPUs lie between 1 and 150 FLOP/byte
    for FP32 and below 1000 for tensor cores; FP32 = SMs x cores per SM x 2 x boost clock."""
    if spec.fp32 and spec.dram_bw:
        assert 1 < spec.fp32 / spec.dram_bw < 150
    if spec.fp16_tensor and spec.dram_bw:
        assert 5 < spec.fp16_tensor / spec.dram_bw < 1000
    if spec.fp64 and spec.fp32:
        assert spec.fp64 <= spec.fp32
    if spec.fp16_tensor and spec.fp32:
        assert spec.fp16_tensor >= spec.fp32
    if spec.sm_count and spec.boost_clock_mhz and spec.fp32:
        per_sm = 64 if spec.arch.split()[1] in ("GP100", "GA100") else _CORES_PER_SM[spec.family]
        assert spec.fp32 == pytest.approx(spec.sm_count * per_sm * 2 * spec.boost_clock_mhz * 1e6, rel=0.03)


def test_no_two_gpus_share_a_name_or_a_label():
    """Each key and alias finds its own row alone; the Jetson names CUDA gives several modules
    find every module listing them, and so match none."""
    labels = [s.label for s in DB.specs]
    assert len(set(labels)) == len(labels) and all(labels)
    for spec in DB.specs:
        for name in (spec.key, *spec.aliases):
            found = DB.candidates(name)
            if name in SHARED_NAMES:
                assert spec in found and len(found) == SHARED_NAMES[name]
                assert gpu.match(name) is None
            else:
                assert found == [spec], (name, [s.key for s in found])


@pytest.mark.parametrize("device, label", [
    ("Tesla K80", "K80"), ("Tesla V100-SXM2-16GB", "V100-SXM2-16GB"), ("A100-SXM4-40GB", "A100-SXM4-40GB"),
    ("NVIDIA GeForce RTX 2080 Ti", "RTX 2080 Ti"), ("NVIDIA RTX A6000", "RTX A6000"), ("Quadro RTX 8000", "Quadro RTX 8000"),
])
def test_each_gpu_has_a_short_label(device, label):
    assert gpu.match(device).label == label


def test_k80_peaks_are_per_gpu_not_per_board():
    k80 = gpu.match("Tesla K80")
    # The board datasheet says 8.73 TFLOP/s FP32 and 480 GB/s for its two GK210 GPUs.
    assert k80.fp32 == pytest.approx(4.37e12)
    assert k80.fp64 == pytest.approx(1.46e12)
    assert k80.dram_bw == pytest.approx(240e9)
    assert k80.family == "kepler" and k80.compute_capability == "3.7"


def test_peaks_are_in_base_units_with_their_source():
    v100 = gpu.match("Tesla V100-SXM2-16GB")
    assert v100.fp32 == 15.7e12 and v100.fp64 == 7.8e12 and v100.fp16_tensor == 125e12
    assert v100.dram_bw == 900e9
    assert v100.peak("fp32") == 15.7e12 and v100.peak("tensor_fp16") == 125e12
    assert v100.peak("tensor_tf32") is None          # Volta has no TF32 tensor cores
    assert "datasheet" in v100.source
    a100 = gpu.match("A100-SXM4-40GB")
    assert a100.peak("tensor_tf32") == 156e12 and a100.peak("tensor_bf16") == 312e12
    assert a100.family == "ampere" and a100.boost_clock_mhz == 1410 and a100.base_clock_mhz == 1095
    with pytest.raises(UsageError):
        a100.peak("fp8")


def test_unpublished_values_stay_empty():
    a10g = gpu.match("NVIDIA A10G")
    assert a10g.fp32 is None and a10g.fp16_tensor is None     # never the A10's peaks
    assert a10g.dram_bw == 600e9


def test_clock_scaling_to_the_logged_sm_clock():
    # NERSC: V100 FP64 peak is 6.7 TFLOP/s at the 1312 MHz ncu locks to (7.8 at 1530 MHz boost).
    v100 = gpu.match("Tesla V100-SXM2-16GB")
    locked = v100.at_clock(1312e6)
    assert locked.fp64 == pytest.approx(6.69e12, rel=1e-3)
    assert locked.dram_bw == v100.dram_bw   # the SM clock lock does not set the memory clock
    assert "1312 MHz" in locked.notes
    assert v100.at_clock(None) is v100


def test_dram_bandwidth_follows_a_logged_memory_clock_and_only_it():
    # ncu's bandwidth ceilings are per-cycle peaks x the memory clock: a V100 (877 MHz HBM2 in
    # the table) logged at 810 MHz gets 900 x 810/877 GB/s; its SM clock leaves it alone.
    v100 = gpu.match("Tesla V100-SXM2-16GB")
    assert v100.mem_clock_mhz == 877
    slower = v100.at_clock(1312e6, 810e6)
    assert slower.dram_bw == pytest.approx(900e9 * 810 / 877)
    assert slower.fp64 == pytest.approx(v100.at_clock(1312e6).fp64)
    assert "810 MHz" in slower.notes
    assert v100.at_clock(None, 810e6).fp32 == v100.fp32
    # A clock above the table's is another convention (a data rate): the datasheet stays.
    assert v100.at_clock(None, 1754e6) is v100
    # The colab T4 ncu logged its GDDR6 at 4.68 GHz, against the 5000 MHz its 320 GB/s is quoted at.
    t4 = gpu.match("Tesla T4")
    assert t4.at_clock(None, 4.68e9).dram_bw == pytest.approx(320e9 * 4680 / 5000)
    # No memory clock in the table (no source agrees with the MI300X's 5.3 TB/s): nothing to scale against.
    mi300x = DB.get("Instinct MI300X")
    assert mi300x.mem_clock_mhz is None and mi300x.at_clock(None, 2.5e9) is mi300x


# -- a user's own values ---------------------------------------------------------------------

def test_tsv_overrides_change_given_values_and_add_gpus(tmp_path):
    path = tmp_path / "peaks.tsv"
    path.write_text("gpu\taliases\tfp32_tflops\tdram_gbps\tarch\tsource\n"
                    "A100 SXM4 40GB\t\t\t1400\t\tour STREAM run\n"
                    "Lab GPU 9000\tNVIDIA Lab GPU 9000|LabGPU9000\t50\t2000\tAmpere GA100\tvendor sheet\n",
                    encoding="utf-8")
    db = gpu.load_database(path)
    a100 = db.match("NVIDIA A100-SXM4-40GB")
    assert a100.dram_bw == 1400e9 and a100.fp32 == 19.5e12      # only the given value changed
    assert "our STREAM run" in a100.source and str(path) in a100.source
    assert a100.label == "A100-SXM4-40GB"
    lab = db.match("NVIDIA Lab GPU 9000 (1)")
    assert lab.key == "Lab GPU 9000" and lab.fp32 == 50e12 and lab.family == "ampere" and lab.label == "Lab GPU 9000"
    assert gpu.match("NVIDIA Lab GPU 9000") is None          # the default stays untouched


def test_toml_overrides(tmp_path):
    path = tmp_path / "peaks.toml"
    path.write_text('[[gpu]]\ngpu = "NVIDIA A10G"\naliases = ["NVIDIA A10G"]\narch = "Ampere GA102"\n'
                    'fp32_tflops = 31.2\ndram_gbps = 600\nsource = "AWS G5 page"\n', encoding="utf-8")
    db = gpu.load_database(path)
    spec = db.match("NVIDIA A10G")
    assert spec.key == "NVIDIA A10G" and spec.dram_bw == 600e9 and spec.fp32 == 31.2e12
    assert db.match("NVIDIA A10").key == "NVIDIA A10"


def test_a_users_gpu_wins_a_name_it_shares_with_shipped_gpus(tmp_path):
    path = tmp_path / "peaks.toml"
    path.write_text('[[gpu]]\ngpu = "Our Xavier NX"\naliases = ["Xavier"]\narch = "Volta GV10B"\n'
                    'fp32_tflops = 0.8\ndram_gbps = 51.2\nsource = "our board"\n', encoding="utf-8")
    assert gpu.match("Xavier") is None
    assert gpu.load_database(path).match("Xavier (0)").key == "Our Xavier NX"


def test_bad_override_files_raise_usage_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[gpu]\n", encoding="utf-8")
    with pytest.raises(UsageError):
        gpu.load_database(bad)
    with pytest.raises(UsageError):
        gpu.load_database(tmp_path / "missing.tsv")
