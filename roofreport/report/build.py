"""`build_report`: analyses → report context → HTML → PDF, each output written atomically.

The steps are separate and callable alone: `assemble(dataset, options)` gives the `Report`
dataclasses, `render_html(report)` the page, `write_pdf(html, path)` the PDF. Matplotlib and
WeasyPrint are imported only once rendering starts (the CLI stays fast for other commands).
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from roofreport.tables.output import atomic_path


@dataclass(frozen=True)
class ReportOptions:
    title: str | None = None
    gpu_override: str | None = None
    peaks_file: Path | None = None
    top_n: int = 10
    window: tuple[float, float] | None = None
    inputs: list[Path] = field(default_factory=list)

    @classmethod
    def from_cli(cls, title, gpu_override, peaks_file, top_n, window, inputs) -> "ReportOptions":
        from roofreport.errors import UsageError
        span = None
        if window:
            try:
                start, _, end = window.partition(":")
                span = (float(start or 0), float(end) if end else float("inf"))
            except ValueError:
                raise UsageError(f"--window must be START:END in seconds, not {window!r}") from None
            if span[0] < 0 or span[1] <= span[0]:
                raise UsageError(f"--window START:END needs 0 <= START < END, not {window!r}")
        return cls(title=title, gpu_override=gpu_override, peaks_file=peaks_file, top_n=top_n,
                   window=span, inputs=inputs)


def build_report(dataset, output: Path, html_out: Path | None, options: ReportOptions) -> list[Path]:
    """Write the report to `output` (.pdf or .html) and, when given, the HTML to `html_out`."""
    from roofreport.report.render import write_pdf

    html = _page(dataset, options)
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


def _page(dataset, options: ReportOptions) -> str:
    """The HTML; a defect on data no rule foresaw becomes a RenderError naming it (the CLI reports
    it without a traceback; ROOFREPORT_DEBUG=1 adds the traceback to the message)."""
    import polars as pl

    from roofreport.errors import RenderError, RoofreportError
    from roofreport.report.assemble import assemble
    from roofreport.report.render import render_html

    try:
        return render_html(assemble(dataset, options))
    except RoofreportError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError,
            pl.exceptions.PolarsError) as exc:
        detail = "\n" + traceback.format_exc() if os.environ.get("ROOFREPORT_DEBUG") else ""
        raise RenderError(f"the report could not be built ({type(exc).__name__}: {exc}){detail}") from exc
