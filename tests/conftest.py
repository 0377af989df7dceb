"""Shared fixtures: where the real corpus lives, and a skip when it is absent.

The corpus is `../shared/corpus` beside the checkout, or the folder `ROOFREPORT_CORPUS` names
(another corpus; a path that does not exist hides it, as in a clone without one: `.ci/run`
collects the suite that way).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS_ENV = "ROOFREPORT_CORPUS"
CORPUS = Path(os.environ.get(CORPUS_ENV) or ROOT.parent / "shared" / "corpus").resolve()
SAMPLE_LOGS = ROOT / "sample_logs"


def corpus_path(*parts: str) -> Path:
    """A path inside the corpus; the test is skipped (with the reason) when it is absent."""
    if not CORPUS.is_dir():
        pytest.skip(f"real-log corpus not found at {CORPUS} (tests read it in place; {CORPUS_ENV} names another)")
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"corpus file missing: {path}")
    return path


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    """The CLI's tables fit $COLUMNS: the width of the terminal the suite runs in (a developer's,
    CI's) must not change what a test reads. A test that wants a width sets COLUMNS itself."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture
def corpus() -> Path:
    return corpus_path()


def parse_path(path: Path, family: str | None = None):
    """Sniff and parse one file as the pipeline does (the file must be a log of `family`)."""
    from roofreport.pipeline.ingest import parse_file
    from roofreport.pipeline.sniff import sniff

    sniffed = sniff(path)
    assert sniffed.readable and (family is None or sniffed.family == family), (path, sniffed.family)
    return parse_file(path, sniffed.spec.name, sniffed.variant, str(path))


def read_samples(tmp_path: Path, text: str, name: str, family: str):
    """Write `text` to `tmp_path/name`, parse it as a `family` log, and give (its samples
    table, empty when none, and the parse result): the monitor families' tests of strings."""
    from roofreport.tables import schema

    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = parse_path(path, family)
    return result.tables.get("samples", schema.empty("samples")), result


def pytest_terminal_summary(terminalreporter):
    """Print what a test recorded under "fuzz" (its seed and mutant count: issue #27), also
    from xdist workers (their reports carry the recorded properties)."""
    lines = [f"{report.nodeid}: {value}" for reports in terminalreporter.stats.values()
             for report in reports if hasattr(report, "user_properties")
             for key, value in report.user_properties if key == "fuzz"]
    if lines:
        terminalreporter.write_sep("-", "fuzzing")
        for line in dict.fromkeys(lines):
            terminalreporter.write_line(line)
