"""A clone without `../shared/corpus` (issue #33): the suite collects, and every test that reads
the corpus skips, saying why. `ROOFREPORT_CORPUS` points the tests at another corpus; a path
that does not exist hides it (`.ci/run` collects the whole suite that way after `make test`)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import CORPUS_ENV, ROOT

# Files that once read the corpus while being collected, or outside a test's skip.
ONCE_BROKEN = ["tests/test_baseline_report.py", "tests/test_nsys_sniff.py", "tests/test_fixups.py",
               "tests/test_ncu_sniff.py", "tests/test_ncu_grammar.py", "tests/test_robust_fuzz.py"]


def _pytest(*args: str, corpus: str) -> subprocess.CompletedProcess:
    env = {**os.environ, CORPUS_ENV: corpus}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


def test_roofreport_corpus_names_the_corpus(tmp_path):
    probe = "from tests.conftest import CORPUS; print(CORPUS)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, CORPUS_ENV: str(tmp_path)}, check=True)
    assert done.stdout.strip() == str(tmp_path.resolve())


def test_without_the_corpus_the_tests_collect_and_skip_saying_why(tmp_path):
    hidden = str(tmp_path / "no-corpus")
    collected = _pytest("--collect-only", "-q", *ONCE_BROKEN, corpus=hidden)
    assert collected.returncode == 0, collected.stdout[-3000:]
    ran = _pytest("-q", "-rs", "tests/test_nsys_sniff.py::test_variants_name_the_report_and_the_layout",
                  "tests/test_baseline_report.py::test_build_with_a_baseline_writes_the_section", corpus=hidden)
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert "2 skipped" in ran.stdout
    assert ran.stdout.count(f"real-log corpus not found at {hidden} (tests read it in place; "
                            f"{CORPUS_ENV} names another)") == 2, ran.stdout
