"""The CLI tells the truth and outputs are safe (issue 7).

Exit codes: 0 when every input was read, 1 when some failed but the output was written (they
are listed), 2 for usage errors; `--strict` fails on any warning. Outputs are written to a
temporary file and renamed into place: a failed build leaves no partial file and keeps the
previous report; an output that is an input (also through a hard link, or a table file over an
input log) is refused with exit 2. Unexpected exceptions never show a traceback.
"""

from __future__ import annotations

import os
import stat

import pytest
from click.testing import CliRunner

from roofreport.cli import cli
from roofreport.errors import RenderError, RoofreportError
from roofreport.families import REGISTRY
from roofreport.pipeline import ingest as ingest_mod
from roofreport.tables.output import atomic_path
from tests.test_hostile_report import ncu_log


def run(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


@pytest.fixture
def good(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "ncu.txt").write_text(ncu_log([("void k(float*)", "2.00")]))
    return logs


def _fail(logs):
    (logs / "failed.txt").write_text("==PROF== Connected to process 7 (/bin/app)\n"
                                     "==ERROR== No kernels were profiled.\n")


def test_exit_0_when_every_input_was_read(good, tmp_path):
    result = run("parse", good, "-o", tmp_path / "t", "--format", "csv")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "t" / "kernels.csv").exists()


def test_exit_1_when_some_input_failed_but_tables_were_written_and_listed(good, tmp_path):
    _fail(good)
    result = run("parse", good, "-o", tmp_path / "t", "--format", "csv")
    assert result.exit_code == 1
    assert "failed.txt" in result.output and "No kernels were profiled" in result.output
    assert (tmp_path / "t" / "kernels.csv").read_text().count("\n") == 2  # header + the kernel


def test_exit_2_for_usage_errors(good, tmp_path):
    assert run("build", good, "-o", tmp_path / "report.docx").exit_code == 2
    assert run("parse", good, "-o", tmp_path / "t", "--format", "xml").exit_code == 2
    assert run("inspect", tmp_path / "missing").exit_code == 2


def test_strict_fails_on_any_warning(good, tmp_path):
    log = ncu_log([("void a(int)", "1.00")]).replace("==PROF== Disconnected",
                                                     "==WARNING== Found outstanding GPU clock reset\n==PROF== Disconnected")
    (good / "warned.txt").write_text(log)   # ncu.warning: read whole, with a warning
    assert run("parse", good, "-o", tmp_path / "t1", "-q").exit_code == 0
    result = run("parse", good, "-o", tmp_path / "t2", "--strict")
    assert result.exit_code == 1 and "--strict" in result.output


def test_output_that_is_an_input_is_refused(good, tmp_path):
    log = good / "ncu.txt"
    before = log.read_bytes()
    assert run("build", log, "-o", log.with_suffix(".html")).exit_code == 0   # beside it: fine
    assert run("build", good, "-o", log).exit_code == 2                     # .txt: usage anyway
    link = tmp_path / "link.html"
    os.link(log, link)
    result = run("build", link, "-o", log.with_suffix(".html"), "--html", link)
    assert result.exit_code == 2 and "is one of the inputs" in result.output
    assert log.read_bytes() == before


def test_a_table_file_never_overwrites_an_input_log(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "kernels.csv"
    log.write_text(ncu_log([("void k(float*)", "2.00")]))
    before = log.read_bytes()
    result = run("parse", log, "-o", logs, "--format", "csv")
    assert result.exit_code == 2 and "kernels.csv" in result.output
    assert log.read_bytes() == before


def test_a_failed_build_leaves_no_partial_file_and_keeps_the_old_report(good, tmp_path, monkeypatch):
    import roofreport.report.render as render

    out = tmp_path / "out" / "report.pdf"
    out.parent.mkdir()
    out.write_bytes(b"%PDF previous report")

    def half_written(html, target):
        with open(target, "wb") as fh:
            fh.write(b"%PDF-1.7 half a page")
        raise RenderError("PDF rendering failed: simulated")

    monkeypatch.setattr(render, "write_pdf", half_written)
    result = run("build", good, "-o", out)
    assert result.exit_code == 1 and "simulated" in result.output
    assert out.read_bytes() == b"%PDF previous report"
    assert sorted(p.name for p in out.parent.iterdir()) == ["report.pdf"]


def test_atomic_path_cleans_up_and_reports_filesystem_errors(tmp_path):
    target = tmp_path / "t.html"
    with pytest.raises(ZeroDivisionError):
        with atomic_path(target) as tmp:
            tmp.write_text("partial")
            1 / 0
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "dir.html").mkdir()
    with pytest.raises(RoofreportError, match="cannot write"):
        with atomic_path(tmp_path / "dir.html") as tmp:
            tmp.write_text("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.html"]


def test_outputs_get_ordinary_file_modes_not_owner_only(tmp_path):
    umask = os.umask(0o022)
    try:
        with atomic_path(tmp_path / "r.html") as tmp:
            tmp.write_text("x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "r.html").stat().st_mode) == 0o644


def test_an_unwritable_output_is_a_message_not_a_traceback(good, tmp_path):
    (tmp_path / "report.html").mkdir()
    result = run("build", good, "-o", tmp_path / "report.html")
    assert result.exit_code == 1 and "cannot write" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_parser_defect_is_contained_and_explained(good, monkeypatch):
    spec = next(s for s in REGISTRY if s.name == "ncu-text")

    def broken(doc, variant):
        raise AttributeError("'NoneType' object has no attribute 'group'")

    monkeypatch.setattr(ingest_mod, "REGISTRY", [type(spec)(**{**spec.__dict__, "parse": broken})
                                                 if s is spec else s for s in REGISTRY])
    result = ingest_mod.parse_file(good / "ncu.txt", "ncu-text", "text 2019-2022", "ncu.txt")
    message = result.error.describe()
    assert message.startswith("ncu.txt: could not read this ncu file (AttributeError:")
    assert "ROOFREPORT_DEBUG=1" in message and "Traceback" not in message
    monkeypatch.setenv("ROOFREPORT_DEBUG", "1")
    result = ingest_mod.parse_file(good / "ncu.txt", "ncu-text", "text 2019-2022", "ncu.txt")
    assert "Traceback" in result.error.describe() and "in broken" in result.error.describe()


def test_an_internal_error_in_the_cli_is_one_line_not_a_traceback(good, tmp_path, monkeypatch):
    from roofreport.pipeline.dataset import Dataset

    def boom(*args, **kwargs):
        raise KeyError("missing column")

    monkeypatch.setattr(Dataset, "write", boom)
    result = run("parse", good, "-o", tmp_path / "t")
    assert result.exit_code == 1
    assert "internal error (KeyError" in result.output and "Traceback" not in result.output


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_in_a_log_folder_is_skipped_not_waited_on(good):
    os.mkfifo(good / "pipe.log")
    result = run("inspect", "--json", good)
    assert result.exit_code == 0, result.output
    assert '"cannot read: not a regular file' in result.output


def test_a_polars_panic_in_a_parser_is_contained_too(good, monkeypatch):
    """Rust panics reach Python as pyo3's PanicException, a BaseException."""
    import polars as pl

    spec = next(s for s in REGISTRY if s.name == "ncu-text")

    def panics(doc, variant):
        raise pl.exceptions.PanicException("assertion failed: i < self.len()")

    monkeypatch.setattr(ingest_mod, "REGISTRY", [type(spec)(**{**spec.__dict__, "parse": panics})
                                                 if s is spec else s for s in REGISTRY])
    result = ingest_mod.parse_file(good / "ncu.txt", "ncu-text", "text 2019-2022", "ncu.txt")
    assert "PanicException: assertion failed" in result.error.describe()
