"""From an `Analysis` to the `Report` context: one builder per section.

Section order: findings, inputs, GPUs compared, rooflines, runs compared, kernel time,
regions, utilization, API calls, methodology appendix. A section without data keeps its place
and says which log would fill it.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from roofreport.analysis.bundle import Analysis
from roofreport.report.context import Report
from roofreport.report.sections.activity import (
    api_section,
    regions_section,
    utilization_section,
)
from roofreport.report.sections.comparison import comparison_section, runs_section
from roofreport.report.sections.findings import findings
from roofreport.report.sections.inputs import inputs_section
from roofreport.report.sections.methodology import methodology_section
from roofreport.report.sections.roofline import roofline_section
from roofreport.report.sections.share import share_section
from roofreport.version import __version__


def assemble(analysis: Analysis, title: str | None = None) -> Report:
    """The `Report` context of an analysis (the title defaults to the input folder's name)."""
    an, files, settings = analysis, analysis.files, analysis.settings
    sections = [
        inputs_section(files),
        comparison_section(an),
        roofline_section(an, settings.top),
        runs_section(an.runs, an.estimates),
        share_section(an, settings.top),
        regions_section(an.regions),
        utilization_section(an.utilization, an.utilization_window, an.tables["samples"], settings.window,
                            an.processes),
        api_section(an.api),
        methodology_section(files, _gpu_keys(an.runs), an.db),
    ]
    return Report(title=title or default_title(analysis.dataset.inputs), subtitle=_subtitle(an, files),
                  version=__version__, findings=findings(an, files), sections=sections)


def default_title(inputs: list[Path]) -> str:
    if len(inputs) == 1:
        name = Path(inputs[0]).resolve().name or str(inputs[0])
        return f"GPU performance report: {name}"
    return "GPU performance report"


def _gpu_keys(runs: pl.DataFrame) -> list[str]:
    if not runs.height:
        return []
    return [k for k in runs["gpu_model"].unique(maintain_order=True).to_list() if k]


def _subtitle(an: Analysis, files: list) -> str:
    logs = sum(1 for f in files if f.status != "skipped")
    gpus = _gpu_keys(an.runs)
    parts = [f"{an.runs.height} run{'s' if an.runs.height != 1 else ''}",
             f"{logs} log file{'s' if logs != 1 else ''}"]
    if gpus:
        parts.append(", ".join(gpus))
    return " · ".join(parts)
