"""GPU names as people type them (issue 33, item 3): `--gpu` (and a roofreport.toml's `gpu =`)
resolved by `GpuDatabase.named`/`chosen`; the family, label and peaks follow the named GPU; a
name the table does not know is refused before anything is read; `summary` and `compare` take
`--gpu` and `--peaks` like `build` and `parse`."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import roofreport
from roofreport import gpu
from roofreport.cli import cli
from tests.conftest import SAMPLE_LOGS

DB = gpu.load_database()
V100_LOGS = SAMPLE_LOGS / "v100"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("typed, key, assumed", [
    # a family of variants: the family's default, or the variant nearest it, marked assumed
    ("RTX 4090", "GeForce RTX 4090", True),              # the desktop card over the laptop one
    ("rtx4090", "GeForce RTX 4090", True),
    ("A100 80GB", "A100 SXM4 80GB", True),               # the default is the SXM4 40GB: its 80 GB twin
    ("a100 80 gb", "A100 SXM4 80GB", True),
    ("A100 PCIe", "A100 PCIe 40GB", True),
    ("V100 32GB", "Tesla V100 SXM2 32GB", True),
    ("A100", "A100 SXM4 40GB", True),
    # one entry after normalising: case, separators, vendor words, `SXM`, `GB`, word order
    ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090", False),
    ("RTX 4090 Laptop", "GeForce RTX 4090 Laptop GPU", False),
    ("nvidia a100-sxm4-80gb", "A100 SXM4 80GB", False),
    ("80GB PCIe A100", "A100 PCIe 80GB", False),
    ("H100 SXM", "H100 SXM5 80GB", False),
    ("Tesla V100 SXM2 32 GB", "Tesla V100 SXM2 32GB", False),
    ("AMD Instinct MI250X", "Instinct MI250X (per GCD)", False),
    ("mi300x", "Instinct MI300X", False),
    ("tesla t4", "Tesla T4", False),
    ("L4", "NVIDIA L4", False),
])
def test_a_typed_name_names_a_gpu_of_the_table(typed, key, assumed):
    identity = gpu.override(gpu.GpuIdentity(), typed, DB)
    assert (identity.key, identity.assumed, identity.evidence) == (key, assumed, gpu.USER)
    assert identity.family == identity.spec.family and identity.label == identity.spec.label
    assert ("is assumed" in (identity.note or "")) is assumed


@pytest.mark.parametrize("typed", ["RTX 4090 D", "RTX 3070 Ti", "RTX 3070"])
def test_a_word_that_makes_another_product_is_never_dropped(typed):
    assert DB.chosen(typed).key == "GeForce " + typed


def test_rtx_4090_and_a100_80gb_give_peaks_marked_assumed_and_the_family_follows():
    logged = roofreport.read(V100_LOGS)
    assert set(logged.runs["gpu_family"].drop_nulls()) == {"volta"}
    for typed, key, family in (("RTX 4090", "GeForce RTX 4090", "ada"), ("A100 80GB", "A100 SXM4 80GB", "ampere")):
        at_ingest = roofreport.read(V100_LOGS, gpu=typed).runs
        assert set(at_ingest["gpu_model"]) == {key} and set(at_ingest["gpu_family"]) == {family}
        assert at_ingest["gpu_assumed"].all()
        assert set(at_ingest["gpu_label"]) == {DB.get(key).label}
        # the same GPU given to analyze a dataset read without it (model/gpus.with_settings)
        analysed = roofreport.analyze(logged, gpu=typed).runs.filter(roofreport.analyze(logged).runs["kernel_time_ns"] > 0)
        assert set(analysed["gpu_model"]) == {key} and analysed["gpu_assumed"].all()
        # a ridge point from the typed GPU's peaks, against which the bound is judged: ncu counted
        # 14-25 % of these runs' kernel time, under model/bound.py's coverage floor, so resnet18 is
        # classed by kernel name (the kernels it counted take 90 % of its time) and vgg11 not (32 %)
        assert analysed["peak_flops_per_s"].is_not_null().all() and analysed["ridge_ai"].is_not_null().all()
        notes = dict(zip(analysed["run"], analysed["bound_note"]))
        assert notes["v100/resnet18"].startswith("classed by kernel name: the counters cover 14%"), notes
        assert notes["v100/vgg11"].startswith("too little of the run's kernel time is counted"), notes


def test_an_unknown_gpu_exits_2_on_every_command_before_anything_is_read(tmp_path):
    expected = "roofreport: usage error: --gpu 'Foo 9000' is not in the GPU table (closest: "
    for args in (("parse", V100_LOGS, "-o", tmp_path / "tables"),
                 ("build", V100_LOGS, "-o", tmp_path / "report.html"),
                 ("summary", V100_LOGS),
                 ("compare", V100_LOGS, SAMPLE_LOGS / "a100")):
        result = run(*args, "--gpu", "Foo 9000")
        assert result.exit_code == 2, args
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(expected), result.stderr
        assert lines[0].split("(closest: ")[1].split(")")[0].count(", ") == 2     # the three closest
        assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(roofreport.UsageError, match="'Foo 9000' is not in the GPU table"):
        roofreport.read(V100_LOGS, gpu="Foo 9000")


def test_a_name_of_many_gpus_with_no_default_exits_2_listing_them():
    result = run("summary", V100_LOGS, "--gpu", "RTX")
    assert result.exit_code == 2
    assert result.stderr.startswith("roofreport: usage error: --gpu 'RTX' may be any of ")
    assert "GeForce RTX 4090" in result.stderr and "(name one)" in result.stderr


def test_a_name_a_peaks_file_defines_is_known(tmp_path):
    peaks = tmp_path / "lab.toml"
    peaks.write_text('[[gpu]]\ngpu = "Foo 9000"\narch = "Ampere GA100"\ncompute_capability = "8.0"\n'
                     'fp32_tflops = 50\ndram_gbps = 2000\nsource = "lab sheet"\n', encoding="utf-8")
    result = run("summary", V100_LOGS, "--gpu", "foo-9000", "--peaks", peaks, "--format", "json", "--table", "runs")
    assert result.exit_code == 0, result.stderr
    assert '"label": "vgg11 · Foo 9000"' in result.stdout
    runs = roofreport.read(V100_LOGS, gpu="foo 9000", peaks=peaks).runs
    assert set(runs["gpu_model"]) == {"Foo 9000"} and not runs["gpu_assumed"].any()
    vgg11 = runs.filter(runs["label"] == "vgg11 · Foo 9000").row(0, named=True)   # FP32: the lab sheet's peak
    assert vgg11["peak_flops_per_s"] == 50e12 and vgg11["ridge_ai"] is not None


def test_summary_and_compare_take_the_gpu_and_its_label_follows():
    summary = run("summary", V100_LOGS, "--gpu", "RTX 4090", "--format", "csv", "--table", "runs")
    assert summary.exit_code == 0, summary.stderr
    assert "vgg11 · RTX 4090" in summary.stdout and "V100" not in summary.stdout
    compared = run("compare", V100_LOGS, SAMPLE_LOGS / "a100", "--gpu", "A100 80GB", "--format", "csv",
                   "--table", "pairs")
    assert compared.exit_code == 0, compared.stderr
    assert "A100-SXM4-80GB" in compared.stdout and "V100" not in compared.stdout
