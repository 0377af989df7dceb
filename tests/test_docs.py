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


def test_readme_says_how_to_install_for_use():
    assert "pipx install ." in README and "pip install ." in README
    assert "`.venv/bin/roofreport`" in README   # where `make report` leaves the command


def test_docs_tables_md_is_written_from_the_schema():
    from roofreport.tables import docs, schema

    page = (ROOT / "docs" / "tables.md").read_text(encoding="utf-8")
    assert page == docs.markdown(), "docs/tables.md is stale: run `make docs` and commit it"
    for name, columns in schema.TABLES.items():
        assert f"## {name}" in page and all(f"| `{column}` |" in page for column in columns)
    assert "| `kernel_time_ns` | Float64 | GPU kernel time of the run's time source, transfers apart |" in page


def _use_examples() -> list[str]:
    """The command lines of the README's "Use" block."""
    section = README.split("## Use\n", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [re.split(r"\s+# ", line, maxsplit=1)[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readme_use_examples_run(tmp_path):
    """Every line of the "Use" block runs and exits 0, on sample_logs/ (LOGS/; A/ and B/ its
    v100/ and a100/ folders), optional [parts] left out, each output in a fresh folder (the
    report as HTML: the PDF is checked elsewhere)."""
    import shlex

    from click.testing import CliRunner

    from roofreport.cli import cli

    examples = _use_examples()
    commands = [line.split()[1] for line in examples]
    assert {"build", "summary", "compare", "inspect", "parse"} <= set(commands)
    assert any("--baseline" in line for line in examples)
    places = {"LOGS/": f"{SAMPLE_LOGS}/", "A/": f"{SAMPLE_LOGS}/v100/", "B/": f"{SAMPLE_LOGS}/a100/",
              "tables/": f"{tmp_path}/tables/", "DATASET/": f"{tmp_path}/dataset/",
              "report.pdf": f"{tmp_path}/report.html"}
    for line in examples:
        args = shlex.split(re.sub(r"\s\[[^\]]*\]", "", line))[1:]
        args = [places.get(arg, arg) for arg in args]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, (line, result.output[-2000:])
        assert result.stdout.strip() or args[0] in ("build", "parse"), line


def test_the_runs_gpu_columns_are_the_readmes():
    """The README's paragraph on how a run's GPU is found names every GPU column of the runs table."""
    from roofreport.tables import schema

    section = README[README.index("### How a run's GPU is found"):README.index("### Run totals")]
    columns = [c for c in schema.RUNS if c.startswith("gpu")]
    assert len(columns) == 7 and all(f"`{c}`" in section for c in columns)
