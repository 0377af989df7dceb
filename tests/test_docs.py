"""The README, the registry and the CLI stay honest with each other."""

from __future__ import annotations

import re

from roofreport.families import REGISTRY
from roofreport.resources import grammar_path
from tests.conftest import ROOT, SAMPLE_LOGS

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _codes_in_package() -> set[str]:
    codes = set()
    for path in (ROOT / "roofreport").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        codes.update(re.findall(r"warn\(\s*\"([a-z]+\.[a-z0-9-]+)\"", text))
        codes.update(re.findall(r"LogWarning\(\s*\"([a-z]+\.[a-z0-9-]+)\"", text))
    return codes


def test_every_warning_code_is_documented():
    codes = _codes_in_package()
    assert len(codes) > 20
    missing = sorted(c for c in codes if f"`{c}`" not in README)
    assert not missing, f"warning codes missing from README's Warnings table: {missing}"


def test_every_family_has_a_grammar_samples_and_a_readme_row():
    families = {spec.family for spec in REGISTRY}
    assert families == {"ncu", "nsys", "nvprof", "nvidia-smi", "dcgm", "tegrastats", "pytorch", "rocm"}
    for family in families:
        grammar = {"nvidia-smi": "smi"}.get(family, family)
        assert grammar_path(grammar).is_file()
    names = {"ncu": "Nsight Compute", "nsys": "Nsight Systems", "nvprof": "nvprof", "nvidia-smi": "nvidia-smi",
             "dcgm": "DCGM", "tegrastats": "Jetson tegrastats", "pytorch": "PyTorch profiler", "rocm": "AMD ROCm"}
    for family, label in names.items():
        assert f"| {label} |" in README
    assert any(p.is_file() for p in SAMPLE_LOGS.rglob("*"))


def test_readme_first_screen_shows_the_two_commands():
    first_screen = "\n".join(README.splitlines()[:25])
    assert "make report" in first_screen and "make test" in first_screen


def test_the_runs_gpu_columns_are_the_readmes():
    """The README's paragraph on how a run's GPU is found names every GPU column of the runs table."""
    from roofreport.tables import schema

    section = README[README.index("### How a run's GPU is found"):README.index("### Run totals")]
    columns = [c for c in schema.RUNS if c.startswith("gpu")]
    assert len(columns) == 7 and all(f"`{c}`" in section for c in columns)
