"""Issue 21 on the real course folders: every run a GPU is named for has its roofs, folders that
keep only the GPU tokens of their paths keep their peaks and bound classes (assumed), the user's
`--gpu` renames the runs everywhere whichever road it takes, and the names the logs cut or
spell oddly stay as they are."""

from __future__ import annotations

import re
import shutil
from functools import cache
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import roofreport
from roofreport import gpu
from roofreport.enrich.gpu_evidence import file_evidence
from roofreport.pipeline import identity
from tests.conftest import SAMPLE_LOGS, corpus_path, parse_path

FOLDERS = ["Anoushka21-Cloud-and-MachineLearning", "PranavDani-Flame", "adityamwagh-hpml-hw",
           "nin-ran-jan-HPML_Project", "pramitmallick-examples", "pranshu777-imagenet", "srikarym-hpml",
           "srinidhigoud-examples"]
# A device name with its index, as nsys, nvprof and ncu columns print it: `NVIDIA A100-SXM4-40GB (0)`.
_INDEXED_NAME = re.compile(r"(?:NVIDIA|Tesla|GeForce|Quadro|TITAN) [^\"\t,\n()]*?\((\d+)\)")


@cache
def _read(folder: str) -> roofreport.Dataset:
    return roofreport.read(corpus_path("course", folder), jobs=1)


def _body(data: roofreport.Dataset) -> pl.DataFrame:
    return data.runs.filter(pl.col("duplicate_of").is_null())


def _path_tokens(run_row: dict) -> list[str]:
    parts = Path(run_row["run"]).parts
    return [t for t in (identity.read_name(p).get("gpu") for p in parts) if t]


# -- every run a GPU is named for has its roofs -------------------------------------------------

@pytest.mark.parametrize("folder", FOLDERS)
def test_every_run_whose_evidence_names_a_gpu_has_roofs(folder):
    """Peaks and a ridge point for every run whose logs, folder or file names or compute
    capability name a GPU of the table (a product without its variant takes its default); a
    bound class wherever FLOPs and DRAM bytes are known and complete. The runs without roofs
    are those nothing names (kernel names alone tell a class, never a GPU) or whose logs cut
    the name to several GPUs."""
    runs = _body(_read(folder))
    named = runs.filter(pl.col("gpu_model").is_not_null())
    assert named.filter(pl.col("peak_flops_per_s").is_null() | pl.col("ridge_ai").is_null()).height == 0
    measured = named.filter((pl.col("flops") > 0) & (pl.col("dram_bytes") > 0) & pl.col("flops_complete")
                            & pl.col("achieved_flops_per_s").is_not_null())
    assert measured.filter(pl.col("bound").is_null() & ~pl.col("bound_note").str.starts_with("above")).height == 0
    for row in runs.filter(pl.col("gpu_model").is_null()).iter_rows(named=True):
        assert not _path_tokens(row), row["run"]           # no path token names a GPU it could have
        assert row["gpu_evidence"] in (None, "log"), row["run"]
        if row["gpu_evidence"] == "log":                 # a name cut to several GPUs, never a guess
            assert row["gpu"].endswith("...") and row["gpu_note"], row["run"]
        else:
            assert row["gpu_label"].startswith(gpu.NOT_NAMED), row["run"]
    assumed = runs.filter(pl.col("gpu_assumed"))
    assert (assumed["gpu_note"].str.contains("--gpu")).all()


def test_the_k40m_and_the_cut_names_of_srikarym_stay_as_they_are():
    runs = _body(_read("srikarym-hpml"))
    k40 = runs.filter(pl.col("gpu") == "Tesla K40m").row(0, named=True)
    assert (k40["gpu_model"], k40["gpu_label"], k40["gpu_evidence"], k40["gpu_assumed"]) == ("Tesla K40", "K40", "log", False)
    assert k40["ridge_ai"] == pytest.approx(5.04e12 / 288e9)            # the K40's, never the K80's
    for cut, choices in (("GeForce RTX 208...", "RTX 2080"), ("GeForce GTX TIT...", "GTX TITAN")):
        rows = runs.filter(pl.col("gpu") == cut)
        assert rows.height and rows["gpu_model"].null_count() == rows.height
        assert set(rows["gpu_label"]) == {cut} and set(rows["gpu_evidence"]) == {"log"}
        assert all(choices in note for note in rows["gpu_note"])
        assert rows["ridge_ai"].null_count() == rows.height


def test_kernel_names_tell_apart_runs_nothing_names():
    runs = _body(_read("pramitmallick-examples"))
    unnamed = runs.filter(pl.col("gpu_evidence").is_null())
    classes = set(unnamed["gpu_label"])
    assert {"GPU not named (Kepler-class kernels)", "GPU not named (Maxwell-class kernels)"} <= classes
    assert unnamed["gpu_model"].null_count() == unnamed.height            # a class is never a GPU
    kepler = unnamed.filter(pl.col("gpu_label").str.contains("Kepler"))
    assert all("CC 3.5" in note for note in kepler["gpu_note"])


# -- folders that keep only the GPU tokens of their paths ---------------------------------------

def _stripped_copy(folder: str, into: Path) -> Path:
    """A copy of a course folder without nvidia-smi logs and with every device name replaced by
    its bare index (`"Tesla K80 (0)"` -> `"0"`): only the GPU tokens of its paths are left."""
    source = corpus_path("course", folder)
    target = into / folder
    shutil.copytree(source, target)
    smi = {f.path for f in _read(folder).files if f.family in ("nvidia-smi", "dcgm")}
    for path in target.rglob("*"):
        if not path.is_file():
            continue
        if str(source / path.relative_to(target)) in smi:
            path.unlink()
            continue
        text = path.read_bytes().decode("utf-8", errors="surrogateescape")
        stripped = _INDEXED_NAME.sub(r"\1", text)
        if stripped != text:
            path.write_bytes(stripped.encode("utf-8", errors="surrogateescape"))
    return target


@pytest.mark.parametrize("folder", ["Anoushka21-Cloud-and-MachineLearning", "pranshu777-imagenet",
                                    "pramitmallick-examples"])
def test_a_copy_without_device_names_keeps_peaks_and_bound_classes_from_its_paths(folder, tmp_path):
    original = {r["run"]: r for r in _body(_read(folder)).iter_rows(named=True)}
    stripped = roofreport.read(_stripped_copy(folder, tmp_path), jobs=1)
    assert not any(_INDEXED_NAME.search(name or "") for name in stripped.runs["gpu"])
    compared = 0
    for row in _body(stripped).iter_rows(named=True):
        before = original.get(row["run"])
        tokens = _path_tokens(row)
        if before is None or before["gpu_evidence"] != "log" or not tokens:
            continue
        compared += 1
        choices = gpu.load_database().candidates(tokens[0])
        assert (row["gpu_evidence"], row["gpu_assumed"]) == ("path", len(choices) > 1), row["run"]
        assert row["peak_flops_per_s"] is not None and row["ridge_ai"] is not None, row["run"]
        assert row["gpu_family"] == before["gpu_family"], row["run"]
        assert "does not know" not in (row["gpu_note"] or ""), row["run"]        # a bare device index names nothing
        if row["gpu_model"] == before["gpu_model"]:     # the default variant is the one the logs named
            assert (row["bound"], row["ridge_ai"], row["flops"]) == (before["bound"], before["ridge_ai"], before["flops"])
        elif before["bound"] is not None:
            assert row["bound"] is not None, row["run"]
    assert compared >= 6


def test_the_stripped_course_is_assumed_in_the_report(tmp_path):
    copy = _stripped_copy("Anoushka21-Cloud-and-MachineLearning", tmp_path)
    html = tmp_path / "report.html"
    roofreport.build_report(copy, html)
    page = html.read_text(encoding="utf-8")
    assert "How the GPUs were found" in page
    # the logs' and paths' GPU is named ("V100"): only its variant is assumed (#31 item 12)
    assert "V100-SXM2-16GB (variant assumed)" in page and "A100-SXM4-40GB (variant assumed)" in page
    assert "does not name the variant" in page and "--gpu" in page
    assert "GPU variant assumed:" in page            # on the roofline of the assumed GPU


# -- the user's GPU, by either road -------------------------------------------------------------

def _same_tables(first: dict, second: dict, names=("runs", "kernels")) -> None:
    for name in names:
        assert_frame_equal(first[name], second[name], check_exact=True)


def test_the_users_gpu_renames_the_jetson_runs_in_every_table_and_page(tmp_path):
    logs = SAMPLE_LOGS / "jetson_orin"
    name = "Jetson AGX Orin 64GB"
    plain = roofreport.read(logs, jobs=1)
    # the folder's token stands for six modules: the table's words, never the path's upper case
    assert plain.runs["gpu_label"].to_list() == ["Jetson Orin"]
    assert plain.runs["label"].to_list() == ["tegrastats · Jetson Orin"]
    at_ingest = roofreport.analyze(roofreport.read(logs, gpu=name, jobs=1))
    afterwards = roofreport.analyze(plain, gpu=name)
    _same_tables(at_ingest.tables, afterwards.tables, ("runs", "kernels", "samples"))
    assert_frame_equal(at_ingest.runs, afterwards.runs)
    row = at_ingest.tables["runs"].row(0, named=True)
    assert (row["gpu"], row["gpu_model"], row["gpu_label"], row["gpu_evidence"]) == (name, name, name, "user")
    assert name in row["label"] and "Jetson Orin" not in row["label"].replace(name, "")
    assert row["ridge_ai"] == pytest.approx(5.32e12 / 204.8e9)
    assert set(at_ingest.utilization["run"]) == {row["run"]}
    html = tmp_path / "orin.html"
    cli = roofreport.build_report(logs, html, gpu=name)
    page = html.read_text(encoding="utf-8")
    assert cli and name in page and "Jetson Orin ·" not in page and gpu.NOT_NAMED not in page


def test_the_users_gpu_at_ingest_or_in_the_analysis_gives_the_same_tables():
    """On a real course folder where the user's GPU changes the family (A100 runs said to be
    V100s): the runs, their labels, the family-dependent kernel columns and the totals."""
    folder = corpus_path("course", "Anoushka21-Cloud-and-MachineLearning")
    at_ingest = roofreport.analyze(roofreport.read(folder, gpu="V100", jobs=1))
    afterwards = roofreport.analyze(_read("Anoushka21-Cloud-and-MachineLearning"), gpu="V100")
    _same_tables(at_ingest.tables, afterwards.tables)
    assert_frame_equal(at_ingest.roofline, afterwards.roofline)
    runs = at_ingest.tables["runs"]
    assert set(runs["gpu_label"]) == {"V100-SXM2-16GB"} and set(runs["gpu_family"]) == {"volta"}
    said = runs.filter(pl.col("run").str.contains("a100"))["gpu_note"]
    assert all("the logs name NVIDIA A100-SXM4-40GB" in note for note in said)


def test_a_family_the_user_changes_changes_the_kernel_counters_alike_by_either_road():
    """The demo's V100 logs count tensor instructions; said to be a P100 (Pascal: no tensor cores),
    their tensor FLOPs are unknown and the FLOPs incomplete, by either road."""
    logs = SAMPLE_LOGS / "v100"
    plain = roofreport.read(logs, jobs=1)
    at_ingest = roofreport.analyze(roofreport.read(logs, gpu="Tesla P100-PCIE-16GB", jobs=1))
    afterwards = roofreport.analyze(plain, gpu="Tesla P100-PCIE-16GB")
    _same_tables(at_ingest.tables, afterwards.tables)
    kernels = afterwards.tables["kernels"].filter(pl.col("run") == "v100/resnet18")
    assert plain.kernels.filter(pl.col("run") == "v100/resnet18")["flops_tensor"].sum() > 0
    assert kernels["flops_tensor"].sum() == 0 and not kernels["flops_complete"].drop_nulls().all()


def test_the_cli_takes_the_gpu_at_parse_and_build(tmp_path):
    from click.testing import CliRunner

    from roofreport.cli import cli

    out = tmp_path / "tables"
    result = CliRunner().invoke(cli, ["parse", str(SAMPLE_LOGS / "jetson_orin"), "-o", str(out), "--gpu",
                                      "Jetson AGX Orin 64GB", "-q"])
    assert result.exit_code == 0, result.output
    runs = pl.read_parquet(out / "runs.parquet")
    assert runs["gpu_model"].to_list() == ["Jetson AGX Orin 64GB"] and runs["ridge_ai"][0] is not None


# -- what each file says of its GPU ---------------------------------------------------------------

@pytest.mark.parametrize("parts, expected", [
    (("ncu", "text", "rtx30_metrics_flops_dram_kbyte.txt"), {"compute_capability": "8.6"}),
    (("ncu", "csv", "a100_pooling_240kernels_18col_rules.csv"), {"compute_capability": "8.0"}),
    (("ncu", "text", "pytorch_silu_gh200_ncu2025.txt"), {"sm_count": 132}),
    (("course", "pranshu777-imagenet", "alexnet_k80_32_conv.815036"), {"kernel_hint": "3.5"}),
    (("course", "Anoushka21-Cloud-and-MachineLearning", "proj1", "a100", "vgg11", "tmp_nsys_gputrace.csv"),
     {"names": ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB (0)")}),
])
def test_a_files_rows_give_its_gpu_evidence(parts, expected):
    result = parse_path(corpus_path(*parts))
    hints = result.hints
    found = file_evidence(result.tables, [hints.device_name], hints.compute_capability, hints.sm_count)
    for field, value in expected.items():
        got = getattr(found, field)
        assert (got[:len(value)] if isinstance(value, tuple) else got) == value, field


def test_a_dataset_folder_reads_everything_again_when_the_gpu_settings_change(tmp_path):
    logs = SAMPLE_LOGS / "jetson_orin"
    folder = tmp_path / "ds"
    named = roofreport.read(logs, dataset=folder, gpu="Jetson AGX Orin 64GB", jobs=1)
    assert named.runs["gpu_model"].to_list() == ["Jetson AGX Orin 64GB"]
    assert roofreport.read(folder).gpu == named.gpu          # a dataset remembers what it was read with
    again = roofreport.read(logs, dataset=folder, jobs=1)
    assert again.update_report.full and any("GPU settings" in m for m in again.update_report.messages)
    assert again.runs["gpu_label"].to_list() == ["Jetson Orin"]
