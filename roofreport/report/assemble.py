"""From an `Analysis` to the `Report` context: one builder per section.

The body holds what a reader needs, in this order: findings, overview, training steps (PyTorch
traces: MFU and where the steps' time goes, on page 1), the GPUs compared (model x GPU pivot,
speedups, sweeps), the runs compared (their totals), against a baseline (`--baseline`:
analysis/diff.py's deltas), rooflines per GPU, where the
GPU time goes, utilization, regions and phases. A body section with nothing to show is left
out; the overview's "What these logs cannot tell" says which log would fill it; one whose
tables hold a single row is that row in a sentence (`fold_single_row`). The appendix holds the
inputs (in the PDF a summary, in the HTML every file; warnings by code, failures, skipped and
excluded files), the runs left out of the body (copies, runs without kernels, time or GPU), the
CUDA API calls and the methodology.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from roofreport.analysis.bundle import Analysis
from roofreport.report.context import Bullets, Chart, Paragraph, Report, Table
from roofreport.report.naming import RunNames, in_order
from roofreport.report.sections.activity import api_section, regions_section, utilization_section
from roofreport.report.sections.baseline import baseline_section
from roofreport.report.sections.comparison import comparison_section, runs_section
from roofreport.report.sections.distributed import distributed_section
from roofreport.report.sections.findings import findings
from roofreport.report.sections.inputs import inputs_section
from roofreport.report.sections.left_out import left_out_section
from roofreport.report.sections.methodology import methodology_section
from roofreport.report.sections.overview import overview_section
from roofreport.report.sections.roofline import roofline_section
from roofreport.report.sections.share import share_section
from roofreport.report.sections.steps import steps_section
from roofreport.version import __version__


def assemble(analysis: Analysis, title: str | None = None) -> Report:
    """The `Report` context of an analysis (the title defaults to the input folder's name)."""
    an, files, settings = analysis, analysis.files, analysis.settings
    names = RunNames(an.dataset.tables.get("runs"))     # copies too: the appendix names them
    # Training steps come first, before the overview (page 1 gives their MFU), and only when a
    # PyTorch trace has them: a folder of other logs need not hear of them.
    steps = steps_section(an, names)
    # Jobs on several GPUs: only where there are some (a one-GPU folder need not hear of them)
    several = distributed_section(an, names)
    body = [
        comparison_section(an),
        _runs_with_totals(an, names),
        *([several] if not several.empty else []),
        *([baseline_section(an.baseline, settings.top)] if an.baseline is not None else []),
        roofline_section(an, settings.top, names),
        share_section(an, settings.top, names),
        utilization_section(an.utilization, an.utilization_window, an.tables["samples"], settings.window,
                            an.processes, names, an.utilization_series, an.process_series),
        regions_section(an.regions, names),
    ]
    api = api_section(an.api, names)
    for section in body:
        words_only(section)
        fold_single_row(section)
    gaps = [(s.title, s.empty) for s in [*body, api] if s.empty] + \
        [(s.title, gap) for s in body for gap in s.gaps]
    api.appendix = True
    sections = [s for s in [steps] if not s.empty] + [overview_section(an, names, gaps)] + \
        [s for s in body if not s.empty] + [
        inputs_section(files),
        left_out_section(an, names),
        *([api] if not api.empty else []),
        methodology_section(files, _gpu_keys(an.runs), an.db),
    ]
    return Report(title=title or default_title(analysis.dataset.inputs), subtitle=_subtitle(an, files, names),
                  version=__version__, findings=findings(an, files), sections=sections)


def _runs_with_totals(an: Analysis, names: RunNames):
    """Runs compared, for the runs with a kernel time or a FLOP count: a run with neither would
    be a row of dashes; it is counted here and listed in the appendix with what it lacks."""
    runs = an.runs
    if runs.height:
        runs = in_order(runs.filter(pl.col("kernel_time_ns").is_not_null() | pl.col("flops").is_not_null()), names)
    section = runs_section(_labelled(runs, names), _labelled(an.estimates, names), names)
    left = an.runs.height - runs.height
    if left and runs.height:
        section.blocks.insert(2, Paragraph.of(
            f"{left} more run{'s have' if left != 1 else ' has'} neither kernel time nor FLOP counts: "
            "listed in the appendix (Runs left out or incomplete) with what their logs hold."))
    elif left:
        section.empty = (f"No run has a kernel time or FLOP count ({left} run{'s' if left != 1 else ''}: "
                         "see the appendix, Runs left out or incomplete).")
    return section


def words_only(section) -> None:
    """A body section of words only (no table, no chart: e.g. "GPUs compared" where no pair could
    be compared) has nothing to show: it is left out, and what its lists said is its gap."""
    if section.empty or any(isinstance(b, (Table, Chart)) for b in section.blocks):
        return
    items = [p.text for b in section.blocks if isinstance(b, Bullets) for p in b.items]
    texts = items or [b.text for b in section.blocks if isinstance(b, Paragraph)][1:]
    section.empty = " ".join(texts) or "nothing to show."
    section.blocks = []


def fold_single_row(section) -> None:
    """A body section whose tables hold one row between them, and no chart, says that row in a
    sentence ("Column value; ..."), its explanations and table left out: a table of one row
    is a page's worth of headings around one fact."""
    tables = [b for b in section.blocks if isinstance(b, Table)]
    if section.empty or not tables or any(isinstance(b, Chart) for b in section.blocks):
        return
    rows = [(t, row) for t in tables for row in t.rows]
    if len(rows) != 1:
        return
    table, row = rows[0]
    said = [f"{column.label} {item.text}" if index else item.text
            for index, (column, item) in enumerate(zip(table.columns, row)) if item.text not in ("", "–")]
    lead = f"{table.caption}: " if table.caption else ""
    section.blocks = [Paragraph.of(lead + "; ".join(said) + ".")]


def _labelled(frame: pl.DataFrame, names: RunNames) -> pl.DataFrame:
    """`frame` with each run's `label` (the comparison's tables name runs by it), and the run a
    FLOPs estimate was taken from named by its label too ("RUN (GPU): how" -> "LABEL: how")."""
    if "run" not in frame.columns:
        return frame
    if not frame.height:
        return frame if "label" in frame.columns else frame.with_columns(pl.lit(None, pl.String).alias("label"))
    out = frame.with_columns(pl.col("run").map_elements(names.label, return_dtype=pl.String).alias("label"))
    if "flops_estimate_source" in out.columns:
        out = out.with_columns(pl.col("flops_estimate_source").map_elements(
            names.relabel_source, return_dtype=pl.String))
    return out


def default_title(inputs: list[Path]) -> str:
    if len(inputs) == 1:
        name = Path(inputs[0]).resolve().name or str(inputs[0])
        return f"GPU performance report: {name}"
    return "GPU performance report"


def _gpu_keys(runs: pl.DataFrame) -> list[str]:
    if not runs.height:
        return []
    return [k for k in runs["gpu_model"].unique(maintain_order=True).to_list() if k]


def _subtitle(an: Analysis, files: list, names: RunNames) -> str:
    logs = sum(1 for f in files if f.status != "skipped")
    runs = an.tables["runs"]
    # the GPUs something named, and the CPU (not "GPU not named")
    named = runs.filter(pl.col("gpu_evidence").is_not_null() | (pl.col("device_kind") == "cpu")) if runs.height else runs
    gpus = sorted({names.gpu(r) for r in named["run"].to_list()}) if named.height else []
    parts = [f"{runs.height} run{'s' if runs.height != 1 else ''}",
             f"{logs} log file{'s' if logs != 1 else ''}"]
    if gpus:
        parts.append(", ".join(gpus))
    if an.settings.view.narrows:   # --run / --kernel: say what is shown, and that totals are whole
        parts.append(f"showing {an.settings.view.describe()} (run totals count every kernel)")
    return " · ".join(parts)
