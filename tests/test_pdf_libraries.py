"""A PDF writer without its system libraries (issue #33): WeasyPrint opens Pango and GObject as
it is imported, and pip cannot install them. `build -o x.pdf` says so before reading any log,
pointing to `-o report.html`; an HTML build needs none of them and still works.

The failure is simulated as cffi raises it on a machine without Pango: importing weasyprint
raises OSError("cannot load library 'libgobject-2.0-0': ...")."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from roofreport.cli import cli
from roofreport.pipeline import ingest
from tests.conftest import SAMPLE_LOGS

LOGS = SAMPLE_LOGS / "a100" / "resnet18"
MISSING = ("cannot load library 'libgobject-2.0-0': libgobject-2.0-0: cannot open shared object file: "
           "No such file or directory")


class _NoPango:
    """An import hook: `import weasyprint` fails as it does without Pango."""

    def find_spec(self, name, path=None, target=None):
        if name == "weasyprint" or name.startswith("weasyprint."):
            raise OSError(MISSING)
        return None


@pytest.fixture
def no_pango(monkeypatch):
    for name in [name for name in sys.modules if name == "weasyprint" or name.startswith("weasyprint.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NoPango(), *sys.meta_path])


@pytest.fixture
def reads(monkeypatch):
    """The files the command read (none, when it stopped first)."""
    seen = []
    read_all = ingest.read_all

    def counted(tasks, *args, **kwargs):
        seen.extend(task.path for task in tasks)
        return read_all(tasks, *args, **kwargs)

    monkeypatch.setattr(ingest, "read_all", counted)
    return seen


def test_a_pdf_build_without_pango_says_so_before_reading(no_pango, reads, tmp_path):
    result = CliRunner().invoke(cli, ["build", str(LOGS), "-o", str(tmp_path / "np.pdf")], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stderr == (
        f"roofreport: error: cannot write {tmp_path / 'np.pdf'}: the PDF writer (WeasyPrint) cannot load a system "
        f"library ({MISSING}): install Pango (README: \"System libraries\": apt-get install libpango-1.0-0 "
        "libpangoft2-1.0-0 libharfbuzz-subset0, brew install pango, or conda install -c conda-forge pango), or write the HTML report "
        "instead: -o report.html\n")
    assert reads == [] and list(tmp_path.iterdir()) == []


def test_an_html_build_without_pango_works(no_pango, reads, tmp_path):
    result = CliRunner().invoke(cli, ["build", str(LOGS), "-o", str(tmp_path / "report.html"), "-q"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert reads and (tmp_path / "report.html").read_text(encoding="utf-8").rstrip().endswith("</html>")
