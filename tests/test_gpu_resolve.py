"""The one GPU resolver (roofreport/gpu/resolve.py): each kind of evidence alone, each conflict,
the table's defaults as data, kernel-name hints as a lower bound, and a compute capability of
any vendor (an AMD gfx target resolves like NVIDIA's 8.0, from table rows alone)."""

from __future__ import annotations

import json

import pytest

from roofreport import gpu
from roofreport.gpu.architectures import kernel_hint, runs_on
from roofreport.gpu.specs import read_tsv
from roofreport.pipeline.facts import FileFacts
from tests.conftest import ROOT

DB = gpu.load_database()
E = gpu.Evidence


def _resolve(**evidence) -> gpu.GpuIdentity:
    return gpu.resolve(E(**evidence), DB)


# -- each kind of evidence alone ---------------------------------------------------------------

def test_the_users_word_names_the_gpu():
    found = _resolve(user="Jetson AGX Orin 64GB")
    assert (found.key, found.label, found.family, found.evidence, found.assumed) == (
        "Jetson AGX Orin 64GB", "Jetson AGX Orin 64GB", "ampere", "user", False)
    unknown = _resolve(user="Lab GPU 9000")
    assert (unknown.key, unknown.label, unknown.evidence) == (None, "Lab GPU 9000", "user")
    assert "not in the GPU table" in unknown.note and "--peaks" in unknown.note


def test_a_full_device_name_names_the_gpu():
    found = _resolve(names=("Tesla V100-SXM2-16GB (0)",))
    assert (found.key, found.name, found.label, found.evidence, found.assumed, found.note) == (
        "Tesla V100 SXM2 16GB", "Tesla V100-SXM2-16GB (0)", "V100-SXM2-16GB", "log", False, None)
    assert _resolve(names=("0", "Tesla K40m")).key == "Tesla K40"     # a bare device index says nothing


def test_a_compute_capability_alone_takes_its_default_and_the_sm_count_narrows_it():
    volta = _resolve(compute_capability="7.0")
    assert (volta.key, volta.name, volta.evidence, volta.assumed) == ("Tesla V100 SXM2 16GB", "CC 7.0", "cc", True)
    assert "14.0-16.4 TFLOP/s" in volta.note and "--gpu" in volta.note       # the span of CC 7.0's GPUs
    a30 = _resolve(compute_capability="8.0", sm_count=56)                   # CC 8.0 with 56 SMs: the A30 alone
    assert (a30.key, a30.assumed) == ("NVIDIA A30", True) and "one GPU" in a30.note
    a100 = _resolve(compute_capability="8.0", sm_count=108)                 # A100 or A800: the CC's default
    assert a100.key == "A100 SXM4 40GB" and "over 8 GPUs" in a100.note
    # CC 7.5 with 72 SMs: Quadro RTX 6000/8000 or TITAN RTX, no default among them: the family only
    turing = _resolve(compute_capability="7.5", sm_count=72)
    assert (turing.key, turing.family, turing.label) == (None, "turing", "Turing GPU (CC 7.5, 72 SMs)")
    assert _resolve(compute_capability="8.6").key is None                   # GeForce 30s, A10, A40...: no default
    assert _resolve(compute_capability="8.6", sm_count=82).key == "GeForce RTX 3090"


def test_a_path_token_names_a_gpu_or_its_products_default_variant():
    k80 = _resolve(path_tokens=("K80",))
    assert (k80.key, k80.evidence, k80.assumed, k80.note) == ("Tesla K80 (per GK210 GPU)", "path", False, None)
    for token, key in (("V100", "Tesla V100 SXM2 16GB"), ("A100", "A100 SXM4 40GB"), ("H100", "H100 SXM5 80GB"),
                       ("P100", "Tesla P100 PCIe 16GB"), ("GH200", "GH200 (96GB HBM3 GPU)")):
        found = _resolve(path_tokens=(token,))
        assert (found.key, found.evidence, found.assumed) == (key, "path", True), token
        assert f"the path's {token!r} does not name the variant" in found.note
    # TITAN X (Maxwell or Pascal) and the Jetson Orin modules are different GPUs: no default
    for token, family in (("TITANX", None), ("JETSON ORIN", "ampere")):
        found = _resolve(path_tokens=(token,))
        assert (found.key, found.label, found.family) == (None, token, family)


def test_kernel_names_alone_tell_only_a_class():
    found = _resolve(kernel_hint=kernel_hint(["cudnn_convolve_sgemm_sm35_ldg_nn_64x16x64x16x16"]))
    assert (found.key, found.evidence, found.label) == (None, None, "GPU not named (Kepler-class kernels)")
    assert _resolve(kernel_hint="8.0").label == "GPU not named (Ampere-class kernels)"
    assert _resolve().label == gpu.NOT_NAMED


@pytest.mark.parametrize("names, needs", [
    (["maxwell_scudnn_128x64_relu_small_nn"], "5.0"),      # runs on a P40 (Pascal) too
    (["volta_sgemm_128x64_nn", "maxwell_sgemm_128x64_nt"], "7.0"),    # the highest bound wins
    (["Ampere_hmma_tf32_traits"], "8.0"),
    (["void cutlass::Kernel<cutlass::arch::Sm80>(Params)"], "8.0"),
    (["sm86_xmma_fprop_implicit_gemm_tf32f32"], "8.6"),
    (["sm90_xmma_gemm_bf16bf16"], "9.0"),
    (["sm100_xmma_gemm"], "10.0"),
    (["sgemm_sm_heavy_nt_ldg", "elementwise_kernel", None], None),
])
def test_kernel_name_hints_are_a_lower_bound(names, needs):
    assert kernel_hint(names) == needs


def test_a_lower_bound_checks_the_gpu():
    assert runs_on("9.0", "8.0") and runs_on("8.9", "8.6") and not runs_on("8.0", "8.6")
    assert runs_on("gfx90a", "8.0") and runs_on(None, "7.0")      # nothing to compare: no contradiction


# -- cut names ---------------------------------------------------------------------------------

def test_a_cut_name_takes_the_full_name_other_logs_of_the_folder_give():
    found = _resolve(names=("NVIDIA GeForce",), neighbours=("NVIDIA GeForce RTX 3090",))
    assert (found.key, found.name, found.evidence) == ("GeForce RTX 3090", "NVIDIA GeForce RTX 3090", "log")
    assert "cut the name" in found.note
    cut = _resolve(names=("GeForce RTX 208...",), neighbours=("NVIDIA GeForce RTX 2080 Ti",))
    assert cut.key == "GeForce RTX 2080 Ti"
    # neighbours that disagree with each other complete nothing, nor does one that is another GPU
    assert _resolve(names=("GeForce RTX 208...",),
                    neighbours=("NVIDIA GeForce RTX 2080 Ti", "NVIDIA GeForce RTX 2080")).key is None
    assert _resolve(names=("GeForce RTX 208...",), neighbours=("Tesla T4",)).key is None


def test_a_cut_name_is_never_a_wrong_gpu():
    """srikarym-hpml's nvidia-smi tables: a 2080, 2080 SUPER or 2080 Ti, different GPUs."""
    found = _resolve(names=("GeForce RTX 208...",))
    assert (found.key, found.name, found.label, found.family, found.evidence) == (
        None, "GeForce RTX 208...", "GeForce RTX 208...", "turing", "log")
    assert "RTX 2080 Ti" in found.note and "RTX 2080 SUPER" in found.note
    titan = _resolve(names=("GeForce GTX TIT...",))
    assert (titan.key, titan.family) == (None, None)           # Kepler or Maxwell TITANs
    # the rest of the evidence settles it: a path naming one of the choices
    assert _resolve(names=("GeForce RTX 208...",), path_tokens=("RTX2080TI",)).key == "GeForce RTX 2080 Ti"
    # variants of one product (nvprof's trace keeps 15 characters): the product's default
    sxm2 = _resolve(names=("Tesla V100-SXM2",))
    assert (sxm2.key, sxm2.assumed) == ("Tesla V100 SXM2 16GB", True) and "over 2 GPUs" in sxm2.note


def test_a_name_the_table_does_not_know_stays_as_logged_unless_other_evidence_names_the_gpu():
    alone = _resolve(names=("NVIDIA Thor",))
    assert (alone.key, alone.label, alone.evidence) == (None, "NVIDIA Thor", "log")
    with_cc = _resolve(names=("NVIDIA Thor",), compute_capability="11.0")
    assert (with_cc.key, with_cc.evidence, with_cc.assumed) == ("Jetson AGX Thor", "cc", True)
    assert "does not know" in with_cc.note


# -- conflicts: the stronger evidence wins, the note says what disagreed -----------------------

def test_the_users_word_wins_and_a_logged_name_that_disagrees_is_noted():
    found = _resolve(user="Tesla V100-PCIE-32GB", names=("Tesla T4",), path_tokens=("T4",))
    assert (found.key, found.evidence) == ("Tesla V100 PCIe 32GB", "user")
    assert "the logs name Tesla T4" in found.note
    agrees = _resolve(user="Tesla T4", names=("Tesla T4",))
    assert agrees.note is None
    product = _resolve(user="V100", names=("Tesla V100-SXM2-16GB",))
    assert (product.key, product.assumed) == ("Tesla V100 SXM2 16GB", True)


def test_a_logged_name_wins_over_the_path_and_the_compute_capability():
    found = _resolve(names=("Tesla T4",), path_tokens=("V100",), compute_capability="7.0")
    assert (found.key, found.evidence, found.assumed) == ("Tesla T4", "log", False)
    assert "the path's 'V100' names another GPU" in found.note and "CC 7.0" in found.note
    assert _resolve(names=("Tesla T4",), path_tokens=("T4",), compute_capability="7.5").note is None


def test_a_compute_capability_wins_over_the_path():
    found = _resolve(compute_capability="7.5", path_tokens=("V100",))
    assert (found.key, found.evidence) == ("Tesla T4", "cc")
    assert "names another GPU" in found.note
    # the path narrows the capability's GPUs where it agrees: CC 8.0 and `a800` is an A800
    assert _resolve(compute_capability="8.0", path_tokens=("A800",)).key == "A800 SXM4 80GB"


def test_kernel_names_that_need_a_newer_gpu_are_noted():
    found = _resolve(names=("Tesla V100-SXM2-16GB",), kernel_hint="8.0")
    assert found.key == "Tesla V100 SXM2 16GB"
    assert "kernel names need CC 8.0 or later" in found.note
    assert _resolve(names=("NVIDIA A100-SXM4-40GB",), kernel_hint="7.0").note is None   # volta_ on an A100


def test_logged_names_of_two_gpus_keep_the_first_and_say_so():
    found = _resolve(names=("Tesla K80", "Tesla P40"))
    assert found.key == "Tesla K80 (per GK210 GPU)" and "also name P40" in found.note


# -- the table's defaults are data, for any vendor ---------------------------------------------

def test_every_product_has_one_default_variant_and_every_cc_at_most_one_default():
    products: dict[str, list] = {}
    for spec in DB.specs:
        products.setdefault(spec.product, []).append(spec)
    for product, variants in products.items():
        defaults = [s for s in variants if "product" in s.default_for]
        assert len(defaults) == (1 if len(variants) > 1 else 0), product
    ccs = [s.compute_capability for s in DB.specs if "cc" in s.default_for]
    assert len(ccs) == len(set(ccs)) and "7.0" in ccs and "8.0" in ccs


def test_family_of_a_compute_capability_comes_from_the_table():
    got = [DB.family_of_cc(cc) for cc in ("3.7", "6.1", "7.0", "7.2", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0",
                                          "12.1", None)]
    assert got == ["kepler", "pascal", "volta", "volta", "turing", "ampere", "ampere", "ada", "hopper", "blackwell",
                   "blackwell", None]


def test_an_llvm_target_resolves_like_a_compute_capability(tmp_path):
    """AMD rows (gfx targets in `compute_capability`, CDNA in `arch`) need nothing but rows: the
    shipped Instinct rows, and a user's own."""
    mi250x = _resolve(compute_capability="GFX90A")
    assert (mi250x.key, mi250x.family, mi250x.evidence, mi250x.assumed) == ("Instinct MI250X (per GCD)", "cdna2", "cc", True)
    both = _resolve(compute_capability="gfx90a", sm_count=104)           # an MI210 or an MI250 GCD: no default
    assert (both.key, both.family) == (None, "cdna2")
    assert _resolve(compute_capability="gfx942", sm_count=228).key == "Instinct MI300A"
    assert _resolve(names=("gfx942:sramecc+:xnack-",)).key == "Instinct MI300X"       # a target where a name stands
    assert _resolve(names=("AMD Instinct MI250X",)).assumed is False
    peaks = tmp_path / "lab.toml"
    rows = [("Lab Accelerator A", 48, 10.0, ""), ("Lab Accelerator B", 96, 20.0, "cc")]
    peaks.write_text("".join(
        f'[[gpu]]\ngpu = "{name}"\naliases = ["{name}"]\ncompute_capability = "gfx1201"\narch = "RDNA4 Lab"\n'
        f'sm_count = {cus}\nfp32_tflops = {fp32}\ndram_gbps = 640\ndefault_for = "{default}"\nsource = "test"\n'
        for name, cus, fp32, default in rows), encoding="utf-8")
    db = gpu.load_database(peaks)
    found = gpu.resolve(E(compute_capability="gfx1201"), db)
    assert (found.key, found.family, found.assumed) == ("Lab Accelerator B", "rdna4", True)
    assert gpu.resolve(E(compute_capability="gfx1201", sm_count=48), db).key == "Lab Accelerator A"
    assert db.family_of_cc("gfx90a") == "cdna2" and DB.family_of_cc("gfx1201") is None


# -- the identity travels: runs table rows, file facts -----------------------------------------

@pytest.mark.parametrize("evidence", [
    E(names=("Tesla T4",)), E(path_tokens=("V100",)), E(compute_capability="8.0"), E(names=("GeForce RTX 208...",)),
    E(kernel_hint="3.5"), E(), E(names=("NVIDIA Thor",)),
])
def test_the_user_gpu_on_a_runs_row_is_the_user_gpu_on_the_evidence(evidence):
    """`analyze(data, gpu=...)` overrides what a runs row holds; `read(..., gpu=...)` resolves the
    evidence with the user's word: one answer."""
    row = gpu.resolve(evidence, DB).columns()
    for user in ("Tesla V100-PCIE-32GB", "A100", "Some GPU"):
        at_ingest = gpu.resolve(E(**{**evidence.to_dict(), "user": user}), DB)
        afterwards = gpu.override(gpu.GpuIdentity.from_row(row, DB), user, DB)
        assert afterwards == at_ingest


def test_a_peaks_file_names_a_logged_gpu_the_shipped_table_did_not_know(tmp_path):
    peaks = tmp_path / "peaks.tsv"
    peaks.write_text("gpu\taliases\tarch\tfp32_tflops\tdram_gbps\tsource\n"
                     "Lab GPU 9000\tNVIDIA Lab GPU 9000\tAmpere GA100\t50\t2000\tvendor sheet\n", encoding="utf-8")
    row = _resolve(names=("NVIDIA Lab GPU 9000",)).columns()
    assert row["gpu_model"] is None
    db = gpu.load_database(peaks)
    again = gpu.GpuIdentity.from_row(row, db)
    assert again == gpu.resolve(E(names=("NVIDIA Lab GPU 9000",)), db)
    assert (again.key, again.family) == ("Lab GPU 9000", "ampere")


def test_a_files_evidence_survives_its_facts_json():
    facts = FileFacts("x.log", gpu=E(names=("Tesla K80 (0)",), compute_capability="3.7", sm_count=13, kernel_hint="3.5"))
    again = FileFacts.from_json(json.dumps(json.loads(facts.to_json())))
    assert again.gpu == facts.gpu


def test_the_token_table_is_the_one_run_identity_reads_paths_with():
    rows = read_tsv((ROOT / "roofreport" / "data" / "gpu_tokens.tsv").read_text(encoding="utf-8"))
    assert len(rows) == len(gpu.names.token_regexes())
    source = (ROOT / "roofreport" / "pipeline" / "identity.py").read_text(encoding="utf-8")
    assert "k80|k40" not in source and "token_alternatives" in source
