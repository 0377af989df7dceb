"""`build_report`: an `Analysis` -> report context -> HTML -> PDF, each output written atomically.

The steps are separate and callable alone: `assemble(analysis, title)` gives the `Report`
dataclasses, `render_html(report, interactive)` the page (interactive for the HTML file, static
for the PDF), `write_pdf(html, path)` the PDF, and `summary_json.summary_text(analysis, report)`
page 1 for scripts (`--json-summary`). Matplotlib and WeasyPrint are imported only once
rendering starts (the CLI stays fast for other commands).
"""

from __future__ import annotations

import gc
import os
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from roofreport.analysis.bundle import Analysis
from roofreport.tables.output import atomic_path

if TYPE_CHECKING:
    from roofreport.report.context import Report


def build_report(analysis: Analysis, output: Path, html_out: Path | None = None,
                 title: str | None = None, json_out: Path | None = None) -> list[Path]:
    """Write the report to `output` (.pdf or .html) and, when given, the HTML to `html_out` (the
    HTML file interactive, the PDF from the static page) and the JSON summary of page 1 to
    `json_out`."""
    with collections_less_often():
        return _build(analysis, output, html_out, title, json_out)


# Young objects the collector lets pile up before it looks at them: Python's 700 suits
# programs whose objects die young; the charts' and WeasyPrint's (artists, boxes, computed
# styles) mostly live until the page is written, so each of ~800 looks found little to free
# and 6 full collections walked every object of the process again. Measured on
# pramitmallick's 16-page report under load: rendering 5.7-6.8 -> 4.9-6.0 s CPU, the same
# peak memory (50,000: no faster; the collector off: 20 MB more). benchmarks/README.md.
YOUNG_OBJECTS = 10_000


@contextmanager
def collections_less_often(young: int = YOUNG_OBJECTS):
    """The garbage collector's first threshold raised to `young` (never lowered) while the
    report renders, restored after it."""
    thresholds = gc.get_threshold()
    gc.set_threshold(max(young, thresholds[0]), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def _build(analysis: Analysis, output: Path, html_out: Path | None, title: str | None,
           json_out: Path | None) -> list[Path]:
    from roofreport.report.render import write_pdf

    report = _guarded(_assemble, analysis, title)
    written = []
    if json_out is not None:
        from roofreport.report.summary_json import summary_text

        with atomic_path(json_out) as tmp:
            tmp.write_text(summary_text(analysis, report), encoding="utf-8")
        written.append(json_out)
    html_target = html_out or (output if output.suffix.lower() in (".html", ".htm") else None)
    if html_target is not None:
        html = _guarded(_render, report, True)
        with atomic_path(html_target) as tmp:
            tmp.write_text(html, encoding="utf-8")
        written.append(html_target)
    if output.suffix.lower() == ".pdf":
        html = _guarded(_render, report, False)
        with atomic_path(output) as tmp:
            write_pdf(html, tmp)
        written.append(output)
    return written


def _assemble(analysis: Analysis, title: str | None) -> Report:
    from roofreport.report.assemble import assemble

    return assemble(analysis, title)


def _render(report: Report, interactive: bool) -> str:
    from roofreport.report.render import render_html

    return render_html(report, interactive)


def _guarded(step, *args):
    """`step(*args)`; a defect on data no rule foresaw becomes a RenderError naming it (the CLI
    reports it without a traceback; ROOFREPORT_DEBUG=1 adds the traceback to the message)."""
    import polars as pl

    from roofreport.errors import RenderError, RoofreportError

    try:
        return step(*args)
    except RoofreportError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError,
            pl.exceptions.PolarsError) as exc:
        detail = "\n" + traceback.format_exc() if os.environ.get("ROOFREPORT_DEBUG") else ""
        raise RenderError(f"the report could not be built ({type(exc).__name__}: {exc}){detail}") from exc
