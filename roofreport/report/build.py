"""`build_report`: an `Analysis` -> report context -> HTML -> PDF, each output written atomically.

The steps are separate and callable alone: `assemble(analysis, title)` gives the `Report`
dataclasses, `render_html(report, interactive)` the page (interactive for the HTML file, static
for the PDF), `write_pdf(html, path)` the PDF, and `summary_json.summary_text(analysis, report)`
page 1 for scripts (`--json-summary`). Matplotlib and WeasyPrint are imported only once
rendering starts (the CLI stays fast for other commands).
"""

from __future__ import annotations

import os
import traceback
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
