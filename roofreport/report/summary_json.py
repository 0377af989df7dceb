"""`build --json-summary FILE`: what page 1 says, for scripts (a CI job tracking its speedups).

The same frames page 1 is written from, and page 1's own sentences, so the page and the file
never disagree (one computation: `analysis/conclusions.py`, worded by `sections/conclusions.py`):

* `findings`: page 1, sentence by sentence (level and text);
* `conclusions`: per experiment and pair of GPUs (`Analysis.experiment_conclusions`), each with
  the `text` page 1 prints for it;
* `by_model`: per model, experiment and pair of GPUs (`Analysis.conclusions`: the geometric
  means, never across experiments);
* `speedups`: every workload compared on two GPUs with its reasons (`Analysis.speedup_reasons`),
  and `not_compared`: the workloads run on two GPUs that could not be compared, and why;
* `runs`: per run its identity, totals and the facts its speedups cite (`Analysis.runs` with
  `Analysis.reasons`), a distributed job's rank, ranks and parallelism among them;
* `jobs`, `ranks`, `scaling`: the jobs on several GPUs (`Analysis.distributed`: per job its
  straggler, hidden communication and bandwidth against the link; per (run, rank) its time
  split; the speedups between GPU counts, strong or weak);
* `variants`: on one GPU, the build and code variants compared (`Analysis.variants`), and
  `sweep_checks`: the sweeps split by hidden GPU or left without a curve, and why.

Times are in ns, FLOP/s and bytes in base units, shares as fractions, % of roof in percent, as
in the tables; values no log gave are null. Where `flops_complete` is false the FLOPs, FLOP/s,
AI and % of roof are lower bounds (page 1's "≥"). `bound` is "memory", "compute", "mixed" (at the
ridge) or "latency" (model/bound.py), `bound_note` the shares that gave it, or why none (by kernel
name where the counted launches cover under half the kernel time: `*_by_name`); `ceiling` names the
compute ceiling % of roof is against (the instruction mix's: model/mix.py) and `roof_clock` the
clock it is at (model/clocks.py).
"""

from __future__ import annotations

import json
import math

from typing import TYPE_CHECKING

import polars as pl

from roofreport.report.context import Report
from roofreport.report.sections.conclusions import conclusion_texts
from roofreport.version import __version__

if TYPE_CHECKING:
    from roofreport.analysis.bundle import Analysis

FORMAT = 1    # raised when a key changes meaning or goes away
_RUN_COLUMNS = ("run", "label", "gpu_label", "gpu_model", "model", "experiment", "batch_size", "cut_short",
                "kernel_time_ns", "transfer_time_ns", "setup_time_ns", "time_source", "iterations",
                "iterations_source", "time_per_iteration_ns", "elapsed_per_iteration_ns", "flops", "flops_complete",
                "dram_bytes", "arithmetic_intensity",
                "achieved_flops_per_s", "roof_precision", "pct_of_roof", "bound", "bound_note", "compute_time_share",
                "bound_coverage", "bound_coverage_by_name", "compute_time_share_by_name", "memory_time_share_by_name",
                "fma_share", "ceiling", "ceiling_flops_per_s", "roof_clock", "job_gpus",
                "rank", "ranks", "distributed_job", "parallelism")


def summary(analysis: Analysis, report: Report) -> dict:
    """The summary as a JSON-ready dict (module docstring)."""
    rows = analysis.experiment_conclusions
    conclusions = [{**row, "text": text} for row, text in zip(rows.iter_rows(named=True), conclusion_texts(rows))]
    apart = analysis.speedups.filter(~pl.col("comparable")) if analysis.speedups.height else analysis.speedups
    runs = analysis.runs.select([c for c in _RUN_COLUMNS if c in analysis.runs.columns])
    if analysis.reasons.height:      # the facts the totals do not already give (setup_time_ns)
        facts = analysis.reasons.select("run", *[c for c in analysis.reasons.columns if c not in runs.columns])
        runs = runs.join(facts, on="run", how="left")
    return {
        "format": FORMAT, "roofreport": __version__, "title": report.title,
        "findings": [{"level": p.level, "text": p.text} for p in report.findings],
        "conclusions": conclusions,
        "by_model": _records(analysis.conclusions),
        "speedups": _records(analysis.speedup_reasons),
        "not_compared": _records(apart.select("model", "experiment", "config", "faster", "slower", "reason_kind",
                                              "reason")) if apart.height else [],
        "runs": _records(runs),
        # jobs on several GPUs (`analysis/distributed.py`): per job, per (run, rank), and scaling
        "jobs": _records(analysis.distributed.jobs),
        "ranks": _records(analysis.distributed.ranks),
        "scaling": _records(analysis.distributed.scaling),
        "variants": _records(analysis.variants) if analysis.variants is not None else [],
        "sweep_checks": _records(analysis.sweep_checks.drop("series")) if analysis.sweep_checks is not None else [],
    }


def summary_text(analysis: Analysis, report: Report) -> str:
    """The summary as the JSON file `--json-summary` writes."""
    return json.dumps(_finite(summary(analysis, report)), indent=1, ensure_ascii=False, default=str) + "\n"


def _records(frame: pl.DataFrame) -> list[dict]:
    return frame.to_dicts() if frame.height else []


def _finite(value):
    """NaN and infinities (a ratio over a zero) as null: JSON has no spelling for them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value
