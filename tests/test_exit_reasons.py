"""Every command that exits 1 says why on stderr (issue #33): the files that failed, with their
errors, and how many were read. `summary`, `compare` and `inspect --json` exited 1 silently
when an input failed; `-q` silenced `parse` and `build` too (quiet hides progress, not errors).

The failing file is an ncu log that stopped before its first result (the `==PROF==` lines ncu
prints while it profiles, then nothing), beside a good nsys log of sample_logs/."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner

from roofreport.cli import cli
from tests.conftest import SAMPLE_LOGS

NO_RESULTS = """==PROF== Connected to process 58445 (/usr/bin/python3.10)
==PROF== Profiling "implicit_convolve_sgemm" - 1: 0%....50%....100% - 3 passes
==PROF== Profiling "unrolled_elementwise_kernel" - 2: 0%....50%....100% - 3 passes
"""


@pytest.fixture
def logs(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(SAMPLE_LOGS / "a100" / "resnet18" / "nsys-profile-stats.txt", folder / "nsys.txt")
    (folder / "ncu.txt").write_text(NO_RESULTS)
    return folder


def _why(logs) -> list[str]:
    return ["roofreport: 1 of 2 files failed, 1 read (1 ok, 1 error): the output holds what the others gave:",
            f"  error: {logs / 'ncu.txt'}: ncu log holds no profiled kernel results"]


def run(*args):
    return CliRunner().invoke(cli, [str(arg) for arg in args], catch_exceptions=False)


def test_summary_says_which_files_failed(logs):
    result = run("summary", logs)
    assert result.exit_code == 1 and result.stdout    # the runs that were read, printed
    assert result.stderr.splitlines() == _why(logs)


def test_compare_says_which_files_failed(logs):
    result = run("compare", logs, SAMPLE_LOGS / "a100" / "resnet18", "--table", "totals")
    assert result.exit_code == 1 and result.stdout
    assert result.stderr.splitlines()[-2:] == _why(logs)


def test_inspect_as_json_says_which_files_failed(logs):
    result = run("inspect", logs, "--json")
    assert result.exit_code == 1 and result.stdout.startswith("[")
    assert result.stderr.splitlines() == _why(logs)


def test_inspect_lists_the_files_and_says_how_many_failed(logs):
    result = run("inspect", logs)
    assert result.exit_code == 1 and "ncu log holds no profiled kernel results" in result.stdout
    assert result.stderr.splitlines() == [_why(logs)[0].removesuffix(":")]


def test_quiet_parse_and_build_say_which_files_failed(logs, tmp_path):
    parsed = run("parse", logs, "-o", tmp_path / "tables", "-q")
    assert parsed.exit_code == 1 and parsed.stderr.splitlines() == _why(logs)
    built = run("build", logs, "-o", tmp_path / "report.html", "-q")
    assert built.exit_code == 1 and built.stderr.splitlines() == _why(logs)
    assert (tmp_path / "report.html").is_file()


def test_parse_lists_the_failures_once_then_says_the_count(logs, tmp_path):
    result = run("parse", logs, "-o", tmp_path / "tables")
    lines = result.stderr.splitlines()
    assert result.exit_code == 1
    assert lines.count(_why(logs)[1]) == 1 and lines[-1] == _why(logs)[0].removesuffix(":")


def test_a_failing_baseline_is_named_too(logs, tmp_path):
    result = run("build", SAMPLE_LOGS / "a100" / "resnet18", "--baseline", logs, "-o", tmp_path / "r.html", "-q")
    assert result.exit_code == 1 and result.stderr.splitlines() == _why(logs)
