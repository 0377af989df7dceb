"""Which files are nvidia-smi output, decided from the bounded head, on the real corpus.

Every file of smi/query_csv, smi/dmon, smi/snapshot and the course folders' nvidia-smi logs is
family `nvidia-smi`; `smi/other/` (wrappers and non-nvidia-smi material) is decided file by file
in OTHER below; no file of another family is taken for nvidia-smi output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from roofreport.families import smi
from roofreport.families.common.textio import read_head
from roofreport.pipeline.sniff import sniff
from tests.conftest import CORPUS, corpus_path

# Expected variant of each nvidia-smi file. A new corpus file must be added here.
VARIANTS = {
    "query_csv": {
        "AkramMoustafa__MetaMotion-Net__gpu_usage.log": "query csv",
        "AkshayRoyal__gpu-usage__gpu_usage1.csv": "query csv",
        "AndyZzzZzzZzz__miris__gpu_log.csv": "query csv",
        "Divpeter__EPO__gpu_usage.log": "query csv (noheader)",
        "DucMinhNgo__convert-cpu_gpu-to-excel__output_gpu.log": "query csv",
        "LukeJYK__AutoScientists__gpu_stats.log": "query csv (noheader)",          # epoch prefix
        "NagusameCS__HyperTensor__gpu_monitor.txt": "query csv (noheader)",        # UTF-16, time only
        "PranavDani__Flame__Results__fluidsGL__fluidsGL-smi.csv": "query csv",
        "PranavDani__Flame__Results__torch-ex__torch-ex-smi.csv": "query csv",
        "RdrigoMachado__fletcher-io__gpu_power.csv": "query csv",
        "SINGROUP__ters_gen__gpu_usage.log": "query csv",
        "TransistorTom__DeepLearningPH__gpu_usage.log": "query csv",
        "Zunaira3010__land-ct-full__gpu_log.csv": "query csv",                    # UTF-16LE
        "amitadate__GPU_Power_Model__histogram_power_data__histogram_power.csv": "query csv",
        "amitadate__GPU_Power_Model__histogram_power_model_20250320_033741__strategy_3_metrics.csv":
            "query csv",
        "cosmosapjw-quantum__omoknuni_small__gpu_usage.log": "query csv (noheader)",
        "dst915__llama.cpp__gpu_stats.csv": "query csv (noheader)",
        "eobo0530__vlm_optimization__gpu_log.csv": "query csv",
        "graemester__VisionFaceService__gpu_monitor.log": "query csv (noheader)",  # time lines
        "justaVinz__trojan-input__gpu_monitor.log": "query csv",
        "karpathy__nanoGPT__gpu_metrics.csv": "wrapper csv",                       # own header
        "simaosantos01__test__gpu_usage.log": "query csv (noheader)",
        "theabrusch__semi_active_seizure__gpu_stats.csv": "table + query csv",     # NUL runs
        "tkjunsei__OpenAD__gpu_usage.csv": "query csv",
        "zoujili__WFH__gpu.log": "query csv",
        "zoujili__WFH__gpu_with_tensorcore.log": "query csv",
    },
    "dmon": {name: "dmon" for name in (
        "adityamwagh__hpml-hw__hw5__part_a__gpu_utilization_rtx8000.txt",
        "adityamwagh__hpml-hw__hw5__part_a__gpu_utilization_v100.txt",
        "gitcrumbs__slm-launchpad__gpu_stats.log",
        "samisena__MyBiome__gpu_usage.log",
        "samisena__MyBiome__gpu_usage.txt",
        "verxirtam__glsltest__nvidia-smi.log",
        "verxirtam__glsltest__nvidia-smi_20160813111942.log",
        "verxirtam__glsltest__nvidia-smi_20160813112000_AA_fail.log",
        "verxirtam__glsltest__nvidia-smi_20160813112134_AB_fail.log",
        "verxirtam__glsltest__nvidia-smi_20160813112700_BA_fail.log",
        "verxirtam__glsltest__nvidia-smi_20160813113036_BB_fail.log",
        "verxirtam__glsltest__nvidia-smi_20160813114127_AA.log",
        "verxirtam__glsltest__nvidia-smi_20160813114731_BA.log",
        "verxirtam__glsltest__nvidia-smi_20160813115055_BB.log",
        "verxirtam__glsltest__nvidia-smi_20160813115943_ABB.log",
        "whatsupjones__gpu-roofline__docs__validation__h100__dynamic_smi.txt",
        "whatsupjones__gpu-roofline__docs__validation__rtx5090__burst_smi.txt",
        "whatsupjones__gpu-roofline__docs__validation__rtx5090__dynamic_smi.txt",
    )},
    "snapshot": {
        **{name: "table" for name in (
            "AleksaRacic__Diplomski__gpu.txt",
            "CS-433__ml-project-2-alchemy-furnace-1__gpu_usage.log",
            "DaisukeTakai__eval_dataset__nvidia-smi.log",
            "Markshilong__a_MoE_experiments__gpu_log.txt",
            "Markshilong__a_MoE_experiments__monitors__test.txt",
            "Markshilong__a_MoE_experiments__testFolder__nvidiasmi_test.txt",
            "Zeesh-an__Grouped_eRAG__gpu_usage.log",
            "aiyijing__gpu-test__nvidia.log",
            "cenzwong__gpu_and_inference_hw__nvidia-smi.txt",
            "enningxie__check_in__gpu.log",
            "forever84721__LISA__nvidia-smi.txt",
            "graemester__VisionFaceService__gpu_status.txt",
            "internationalJoke__aucurriculum__gpu_monitor.log",
            "jarkko-hautakorpi__asus_X670-P_WIFI_Bifurcation_problems__nvidia-smi.log",
            "longeacc__DuraXell__nvidia_smi.txt",
            "mahmoudhussein99__otfusion_DL_project__nvidia-smi.out",
            "nightlessbaron__cllm_baseline__nvidia-smi.txt",
            "sjin824__mag__gpu_usage.log",
            "windecks__triton-on-computecanada__nvidia-smi.txt",
            "wrencanfly__LangSplat__gpu_usage.log",
            "yizhitutuqiu__Muscles_with_codebook__nvidia_smi.txt",
        )},
        "AlexeyMatskevich__cuda_test__nvidia-smi.txt": "-q report",
        "yukiobata1__hirataken20251122-2__legacy__logs__gpu_monitor.log": "watch table",
    },
}

# smi/other/: the decision for each file (variant, or None = skipped as not a log), and why.
OTHER = {
    # Not nvidia-smi output: another family's format, or no known one.
    "4179e1__dcgm_test__dmon.csv": ("dcgm", "field-value csv"),     # DCGM field watch, long format
    "Meow404__FYP__gpu_stats.txt": ("tegrastats", "JetPack 3-4"),   # Jetson tegrastats
    "cosmosapjw-quantum__omoknuni_small__gpu_monitor.log": None,  # custom fixed-width monitor
    # A wrapper's CSV whose every column is a known quantity: read as "wrapper csv".
    "AkshayRoyal__gpu-usage__gpu_usage_cleaned.csv": "wrapper csv",  # renamed query columns
    "KamaTechOrg__MultiDrone_Algo__gpu_utilization.csv": "wrapper csv",
    "SII-HaoyuTang__DCConv__gpu_usage.csv": "wrapper csv",  # elapsed_sec; cell with a newline
    "downvoteed__GPGPU__gpu_usage.csv": "wrapper csv",
    "ogunatalay__Machine-Translation__gpu_usage.csv": "wrapper csv",
    "ratcht__camouflaged-poisoning__gpu_stats.csv": "wrapper csv",
    # A wrapper CSV with both `gpu` and `index` columns: which is the GPU is ambiguous; skipped.
    "xypp3__gpu_glasses__nvidia_smi.csv": None,
    # Real nvidia-smi output (pasted in issues, or noheader output behind a wrapper's epoch).
    "RCKola__Rectified-Point-Flow__gpu_usage.csv": "query csv (noheader)",
    "issue__influxdata_telegraf_6258__snapshot_partial.txt": "table",
    "issue__tutulino_Megaminer_235__query_noheader_not_supported.csv": "query csv (noheader)",
}

# The course folders' nvidia-smi logs (everything else there belongs to other families).
COURSE_SMI = {
    "adityamwagh-hpml-hw/hw5/part_a/gpu_utilization_rtx8000.txt": "dmon",
    "adityamwagh-hpml-hw/hw5/part_a/gpu_utilization_v100.txt": "dmon",
    "PranavDani-Flame/Results/fluidsGL/fluidsGL-smi.csv": "query csv",
    "PranavDani-Flame/Results/torch-ex/torch-ex-smi.csv": "query csv",
    **{f"srikarym-hpml/hw2/logs/{p}.out": "table" for p in (
        "C2/c2", "C3/workers_0", "C3/workers_1", "C3/workers_4", "C3/workers_8", "C3/workers_12",
        "C3/workers_16", "C3/workers_20", "C5/cuda_0", "C5/cuda_1", "C6/optim_adadelta",
        "C6/optim_adagrad", "C6/optim_adam", "C6/optim_nesterov", "C6/optim_sgd", "C7/no_bn")},
}


def _files(folder: str) -> list[Path]:
    if not (CORPUS / folder).is_dir():
        return []
    return sorted(p for p in (CORPUS / folder).rglob("*") if p.is_file() and p.name != "MANIFEST.tsv")


def _smi_sniff(path: Path) -> str | None:
    """What the nvidia-smi specs alone say (independent of the other families' sniffers)."""
    head = read_head(path)
    for spec in smi.SPECS:
        variant = spec.sniff(head)
        if variant:
            return variant
    return None


@pytest.mark.parametrize("folder", sorted(VARIANTS))
def test_every_nvidia_smi_file_is_sniffed_with_its_variant(folder):
    files = _files(f"smi/{folder}") or [corpus_path("smi", folder)]
    assert {p.name for p in files} == set(VARIANTS[folder]), "a corpus file without an expectation"
    for path in files:
        found = sniff(path)
        assert (found.family, found.variant) == ("nvidia-smi", VARIANTS[folder][path.name]), path.name


def test_the_other_folder_is_decided_file_by_file():
    files = _files("smi/other") or [corpus_path("smi", "other")]
    assert {p.name for p in files} == set(OTHER), "decide the new smi/other file in OTHER"
    for path in files:
        found = sniff(path)
        expected = OTHER[path.name]
        family, variant = expected if isinstance(expected, tuple) else ("nvidia-smi", expected)
        assert found.variant == variant, path.name
        if expected is None:
            assert found.family is None and found.skip_reason, path.name
        else:
            assert found.family == family, path.name
        if isinstance(expected, tuple):   # and the nvidia-smi specs alone leave it alone
            assert _smi_sniff(path) is None, path.name


def test_course_nvidia_smi_logs_and_nothing_else():
    root = corpus_path("course")
    seen = {}
    for path in _files("course"):
        variant = _smi_sniff(path)
        if variant:
            seen[path.relative_to(root).as_posix()] = variant
    assert seen == COURSE_SMI
    for rel, variant in COURSE_SMI.items():
        found = sniff(root / rel)
        assert (found.family, found.variant) == ("nvidia-smi", variant), rel


@pytest.mark.parametrize("folder", ["ncu", "nsys", "nvprof", "derived"])
def test_other_families_are_never_taken_for_nvidia_smi(folder):
    files = _files(folder) or [corpus_path(folder)]
    taken = [p.relative_to(CORPUS).as_posix() for p in files if _smi_sniff(p)]
    assert taken == []
    assert all(sniff(p).family != "nvidia-smi" for p in files)
