"""`build_report`: an `Analysis` -> report context -> HTML -> PDF, each output written atomically.

The steps are separate and callable alone: `assemble(analysis, title)` gives the `Report`
dataclasses, `render_html(report)` the page, `write_pdf(html, path)` the PDF, and
`summary_json.summary_text(analysis, report)` page 1 for scripts (`--json-summary`). Matplotlib
and WeasyPrint are imported only once rendering starts (the CLI stays fast for other commands).
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
    """Write the report to `output` (.pdf or .html) and, when given, the HTML to `html_out` and
    the JSON summary of page 1 to `json_out`."""
    from roofreport.report.render import write_pdf

    report, html = _page(analysis, title)
    written = []
    if json_out is not None:
        from roofreport.report.summary_json import summary_text

        with atomic_path(json_out) as tmp:
            tmp.write_text(summary_text(analysis, report), encoding="utf-8")
        written.append(json_out)
    html_target = html_out or (output if output.suffix.lower() in (".html", ".htm") else None)
    if html_target is not None:
        with atomic_path(html_target) as tmp:
            tmp.write_text(html, encoding="utf-8")
        written.append(html_target)
    if output.suffix.lower() == ".pdf":
        with atomic_path(output) as tmp:
            write_pdf(html, tmp)
        written.append(output)
    return written


def _page(analysis: Analysis, title: str | None) -> tuple[Report, str]:
    """The report's context and its HTML; a defect on data no rule foresaw becomes a RenderError
    naming it (the CLI reports it without a traceback; ROOFREPORT_DEBUG=1 adds the traceback)."""
    import polars as pl

    from roofreport.errors import RenderError, RoofreportError
    from roofreport.report.assemble import assemble
    from roofreport.report.render import render_html

    try:
        report = assemble(analysis, title)
        return report, render_html(report)
    except RoofreportError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError,
            pl.exceptions.PolarsError) as exc:
        detail = "\n" + traceback.format_exc() if os.environ.get("ROOFREPORT_DEBUG") else ""
        raise RenderError(f"the report could not be built ({type(exc).__name__}: {exc}){detail}") from exc
