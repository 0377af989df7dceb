"""The report: analyses → report context (dataclasses) → Jinja HTML → WeasyPrint PDF.

`build_report(dataset, output, html_out, options)` writes the requested files atomically and
returns their paths. Heavy modules (matplotlib, weasyprint) are imported only here.
"""

from __future__ import annotations

from roofreport.report.build import ReportOptions, build_report

__all__ = ["ReportOptions", "build_report"]
