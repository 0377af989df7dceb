"""Docs and options a new user hits (issue 33, item 8): the module the README names for kernel
categories exists, its category list is the rules' own, the Kineto example says which rank it
shows and shows every step; `parse -v` (which parse's summary suggests) lists warnings; a
`--window` without its colon is refused; a parent folder's roofreport.toml applies to a
sub-folder read (not past a git repository's root)."""

from __future__ import annotations

import importlib
import re
import shutil

import pytest
from click.testing import CliRunner

import roofreport
from roofreport.cli import cli
from roofreport.enrich import categories
from roofreport.pipeline import config
from tests.conftest import ROOT, SAMPLE_LOGS, corpus_path

README = (ROOT / "README.md").read_text(encoding="utf-8")


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_the_readme_names_the_categories_module_that_exists_and_its_whole_list():
    named = re.findall(r"`(roofreport(?:\.\w+)+)`", README)
    for module in {name for name in named if name.count(".") >= 2 and "categor" in name}:
        found = importlib.import_module(module)
        assert {"categorize", "load_rules"} <= set(dir(found)) and found.CATEGORIES
    assert "`roofreport.enrich.categories`" in README and "roofreport.analysis.categories" not in README
    listed = re.search(r"\*\*Kernel categories\*\* \(([^)]*)\)", README.replace("\n  ", " ")).group(1)
    assert [word.strip() for word in listed.split(",")] == list(categories.NAMES)


def test_the_kineto_example_names_its_rank_and_shows_every_step():
    steps = roofreport.read(corpus_path("kineto", "hta-df_index_resolver")).steps
    assert set(steps["rank"]) == {1}
    example = README[README.index("hta-df_index_resolver") - 200:]
    assert "rank 1 of a two-rank job" in " ".join(example[:400].split())
    shown = re.findall(r"│ (ProfilerStep#\d+) ┆ ([\d.]+) ┆", example[:example.index("```\n\n")])
    assert [name for name, _ in shown] == steps["name"].to_list()
    assert [float(ms) for _, ms in shown] == [round(ns / 1e6, 1) for ns in steps["duration_ns"]]


def test_parse_accepts_the_verbose_flag_its_summary_suggests(tmp_path):
    quiet = run("parse", SAMPLE_LOGS / "a100", "-o", tmp_path / "plain")
    assert quiet.exit_code == 0 and "`-v` or `roofreport inspect` lists them" in quiet.stderr
    loud = run("parse", SAMPLE_LOGS / "a100", "-o", tmp_path / "verbose", "-v")
    assert loud.exit_code == 0, loud.stderr
    listed = [line for line in loud.stderr.splitlines() if line.strip().startswith("warning [")]
    assert len(listed) == roofreport.read(SAMPLE_LOGS / "a100").warning_count
    updated = run("parse", SAMPLE_LOGS / "a100", "-o", tmp_path / "dataset", "--update", "-v")
    assert updated.exit_code == 0 and any(line.strip().startswith("warning [") for line in updated.stderr.splitlines())


@pytest.mark.parametrize("window", ["60", "60.5", "abc"])
def test_a_window_without_its_colon_is_a_usage_error_before_reading(tmp_path, window):
    result = run("build", SAMPLE_LOGS / "v100", "-o", tmp_path / "report.html", "--window", window)
    assert result.exit_code == 2 and not (tmp_path / "report.html").exists()
    assert result.stderr == (f"roofreport: usage error: a window must be START:END in seconds (60:240; 60: to "
                             f"the end; :240 from the start), not {window!r}\n")
    with pytest.raises(roofreport.UsageError, match="START:END"):
        roofreport.api.analysis_settings(window=window)
    assert roofreport.api.analysis_settings(window="60:").window == (60.0, float("inf"))


def _logs_under(folder, toml: str | None):
    """`folder`/a100/resnet18/ holding sample_logs' nsys log, and `toml` as folder's roofreport.toml."""
    run_dir = folder / "a100" / "resnet18"
    run_dir.mkdir(parents=True)
    shutil.copy(SAMPLE_LOGS / "a100" / "resnet18" / "nsys-profile-stats.txt", run_dir)
    if toml is not None:
        (folder / "roofreport.toml").write_text(toml, encoding="utf-8")
    return run_dir


def test_a_parent_folders_toml_applies_to_a_sub_folder(tmp_path):
    run_dir = _logs_under(tmp_path / "logs", '[[run]]\nmatch = "a100/*/*"\nbatch_size = 48\noptimizer = "lamb"\n'
                                             'exclude = ["*.bak"]\n')
    (run_dir / "old.bak").write_text("x", encoding="utf-8")
    for given in (tmp_path / "logs", tmp_path / "logs" / "a100", run_dir):
        data = roofreport.read(given)
        assert data.runs["batch_size"].to_list() == [48], given
        assert data.runs["optimizer"].to_list() == ["lamb"], given
    # the toml's own folder given as a relative path works the same (globs relative to it)
    relative = roofreport.read(run_dir.relative_to(ROOT) if run_dir.is_relative_to(ROOT) else run_dir)
    assert relative.runs["batch_size"].to_list() == [48]


def test_a_toml_above_a_git_repository_does_not_apply_inside_it(tmp_path):
    (tmp_path / "roofreport.toml").write_text('[[run]]\nmatch = "*"\nbatch_size = 7\n', encoding="utf-8")
    repo = tmp_path / "repo"
    run_dir = _logs_under(repo / "logs", None)
    (repo / ".git").mkdir()
    assert roofreport.read(run_dir).runs["batch_size"].to_list() == [None]
    (repo / "roofreport.toml").write_text('[[run]]\nmatch = "logs/a100/*/*"\nbatch_size = 9\n', encoding="utf-8")
    config.governing.cache_clear()
    assert roofreport.read(run_dir).runs["batch_size"].to_list() == [9]    # the repository's own applies
