"""`build_report`: an `Analysis` -> report context -> HTML -> PDF, each output written atomically.

The steps are separate and callable alone: `assemble(analysis, title)` gives the `Report`
dataclasses, `render_html(report)` the page, `write_pdf(html, path)` the PDF. Matplotlib and
WeasyPrint are imported only once rendering starts (the CLI stays fast for other commands).
"""

from __future__ import annotations

import os
import traceback
from pathlib import Path

from roofreport.analysis.bundle import Analysis
from roofreport.tables.output import atomic_path


def build_report(analysis: Analysis, output: Path, html_out: Path | None = None,
                 title: str | None = None) -> list[Path]:
    """Write the report to `output` (.pdf or .html) and, when given, the HTML to `html_out`."""
    from roofreport.report.render import write_pdf

    html = _page(analysis, title)
    written = []
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


def _page(analysis: Analysis, title: str | None) -> str:
    """The HTML; a defect on data no rule foresaw becomes a RenderError naming it (the CLI reports
    it without a traceback; ROOFREPORT_DEBUG=1 adds the traceback to the message)."""
    import polars as pl

    from roofreport.errors import RenderError, RoofreportError
    from roofreport.report.assemble import assemble
    from roofreport.report.render import render_html

    try:
        return render_html(assemble(analysis, title))
    except RoofreportError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError,
            pl.exceptions.PolarsError) as exc:
        detail = "\n" + traceback.format_exc() if os.environ.get("ROOFREPORT_DEBUG") else ""
        raise RenderError(f"the report could not be built ({type(exc).__name__}: {exc}){detail}") from exc
