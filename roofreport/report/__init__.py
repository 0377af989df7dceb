"""The report: analyses → report context (dataclasses) → Jinja HTML → WeasyPrint PDF.

`build_report(analysis, output, html_out, title)` writes the requested files atomically and
returns their paths. Heavy modules (matplotlib, weasyprint) are imported only here.
"""

from __future__ import annotations

from roofreport.report.build import build_report

__all__ = ["build_report"]
