"""Every analysis the report uses, run once from explicit settings, kept together as frames.

`analyze(dataset, settings)` gives an `Analysis`: the dataset it read, the GPU database, and one
frame per question (runs side by side with their totals, the same work on each GPU and the
speedups, rooflines, kernel share, sweeps, regions, utilization, API time). Every derived number
comes from one model (`roofreport.model`: time rows, iterations, counted times, roofline points,
run totals), the dataset's own (`roofreport.read` keeps it), derived once. When the settings'
GPU or peaks differ from those the dataset was read with, the runs' GPUs, labels and
family-dependent kernel columns are worked out again (`gpus.with_settings`) and the model with
them, so
`analyze(read(LOGS), gpu=X)` and `analyze(read(LOGS, gpu=X))` give the same tables. Runs that
copy another (`duplicate_of`) are left out of every frame (`runsets.body_tables`) and listed in
`duplicates` for the appendix. The report computes no FLOPs, peaks, rooflines or bound classes
of its own: every number a section shows comes from one of these frames. The settings are what
a user may change (`AnalysisSettings`: the GPU and peaks, `gpu.GpuSettings`; kernels per run; a
utilization window; the model FLOPs of a training step; a `view.View` of the runs and kernels to
show); the CLI's options and `roofreport.analyze`'s arguments both become one. A view narrows
the frames after the run totals are made: every frame keeps only the runs it shows, the kernel frames (share,
top kernels, kernel roofline, sweeps of shares) only the kernels it shows, and the run totals
count every kernel. Given a baseline (`build LOGS --baseline BASE`), `baseline` holds
`diff.compare(BASE, LOGS)`: the baseline's runs are side A, the runs the view shows side B (a
view's kernel regex does not narrow it: a comparison's totals and pools need every kernel).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from roofreport import gpu
from roofreport.analysis import (
    api_calls as api,
    compare,
    conclusions,
    diff,
    distributed as multi_gpu,
    reasons,
    regions,
    runsets,
    share,
    speedup,
    steps,
    sweeps,
    utilization,
    variants,
    workloads,
)
from roofreport.analysis.view import View
from roofreport.errors import UsageError
from roofreport.model import Model, derive, gpus, roofline
from roofreport.model.source import Source

# Kernel families worth following across a batch-size sweep (label -> Rust regex on full names).
SWEEP_PATTERNS = {
    "NCCL kernels": "(?i)nccl",
    "winograd kernels": "(?i)winograd",
    "FFT kernels": "(?i)fft",
    "implicit-GEMM kernels": "(?i)implicit_?(?:convolve_)?[sdh]?gemm|implicit_gemm",
}


@dataclass(frozen=True)
class AnalysisSettings:
    """What a user may change about the analyses (the CLI's `build` options)."""

    gpu: gpu.GpuSettings = gpu.NO_SETTINGS   # the GPU every run ran on; a peaks file
    top: int = 10                              # kernels listed per run
    top_print: int = 3                         # kernels listed per run in the PDF (at most `top`)
    window: tuple[float, float] | None = None  # utilization window, seconds from the first sample
    model_flops: float | None = None           # model FLOPs per training step (MFU), instead of shapes'
    view: View = field(default_factory=View)   # the runs and kernels shown (--run, --kernel)

    def __post_init__(self) -> None:
        if self.top < 1 or self.top_print < 1:
            raise UsageError(f"top must be at least 1, not {min(self.top, self.top_print)}")
        if self.model_flops is not None and not self.model_flops > 0:
            raise UsageError(f"model FLOPs per step must be a positive number, not {self.model_flops}")
        if self.window is not None and not 0 <= self.window[0] < self.window[1]:
            raise UsageError(f"a window needs 0 <= start < end, not {self.window}")


def parse_window(text: str) -> tuple[float, float]:
    """`"60:240"` -> (60.0, 240.0); `":240"` starts at 0, `"60:"` runs to the end. A bare
    number (`60`) is refused: from 60 s, or the first 60 s?"""
    if ":" not in text:
        raise UsageError(f"a window must be START:END in seconds (60:240; 60: to the end; :240 from "
                         f"the start), not {text!r}")
    try:
        start, _, end = text.partition(":")
        span = (float(start or 0), float(end) if end else float("inf"))
    except ValueError:
        raise UsageError(f"a window must be START:END in seconds, not {text!r}") from None
    if span[0] < 0 or span[1] <= span[0]:
        raise UsageError(f"a window START:END needs 0 <= START < END, not {text!r}")
    return span


@dataclass
class Analysis:
    """The answers of every analysis, as frames, with the dataset and settings they came from."""

    dataset: Source                  # what was read (`roofreport.read`'s Dataset)
    settings: AnalysisSettings
    tables: dict[str, pl.DataFrame]  # the dataset's tables without copies, `settings.gpu` applied
    db: gpu.GpuDatabase
    model: Model                     # what the frames read: `tables` derived (the runs shown)
    runs: pl.DataFrame               # compare.run_table: the runs table's identity and totals
    roofline: pl.DataFrame           # roofline.run_roofline
    kernel_roofline: pl.DataFrame    # roofline.kernel_roofline
    chart_ceilings: dict             # roofline.gpu_chart_ceilings: gpu_model -> the roofs its chart draws
    off_chart: pl.DataFrame          # roofline.off_chart: uncounted tensor kernels, listed beside the chart
    size_series: pl.DataFrame        # sweeps.size_series: runs a roofline draws as one series, sized by input size
    share: pl.DataFrame              # share.kernel_share (the steady state: setup copies apart)
    context: pl.DataFrame            # share.by_launch_context: time a category holds that names read otherwise
    leaders: pl.DataFrame            # share.leading_categories: each run's largest kernel category
    top: pl.DataFrame                # share.top_kernels
    top_rest: pl.DataFrame           # share.top_kernels_rest: the kernels each run's top leaves out
    top_print: pl.DataFrame          # the same two for the PDF's shorter lists (settings.top_print)
    top_rest_print: pl.DataFrame
    uncategorized: pl.DataFrame      # share.uncategorized_share
    sweeps: pl.DataFrame             # share.sweep_share: kernel categories along batch-size sweeps
    pattern_sweeps: pl.DataFrame     # share.sweep_pattern_share with SWEEP_PATTERNS
    pattern_swings: pl.DataFrame     # share.pattern_swings: per GPU, the families moving most along a sweep
    pivot: pl.DataFrame              # speedup.gpu_pivot: model x configuration x GPU
    speedups: pl.DataFrame           # speedup.speedups: every pair of GPUs per workload
    gpu_summary: pl.DataFrame        # speedup.model_summary: per model, experiment and pair of GPUs
    reasons: pl.DataFrame            # reasons.run_reasons: per run, what its logs say of why (tensor, NCCL, GPUs...)
    speedup_reasons: pl.DataFrame    # conclusions.speedup_reasons: each compared workload with its reasons
    conclusions: pl.DataFrame        # conclusions.conclusions: per model, experiment and pair of GPUs
    experiment_conclusions: pl.DataFrame  # conclusions.experiment_conclusions: per experiment: page 1
    time_sweeps: pl.DataFrame        # sweeps.time_sweeps: time and throughput along every sweep
    incomplete: pl.DataFrame         # compare.incomplete_flops
    estimates: pl.DataFrame          # compare.estimates
    regions: pl.DataFrame            # regions.region_times
    utilization: pl.DataFrame        # utilization.utilization_stats, whole series
    utilization_window: pl.DataFrame | None
    utilization_series: pl.DataFrame  # utilization.chart_series: the series drawn, binned per run
    processes: pl.DataFrame          # utilization.process_memory
    process_series: pl.DataFrame     # utilization.chart_process_series: each process's memory, binned
    api: pl.DataFrame                # api_calls.api_summary
    duplicates: pl.DataFrame         # runsets.duplicate_runs: the copies left out of the above
    gaps: pl.DataFrame               # runsets.run_gaps: runs shown without kernels, kernel time or GPU name
    steps: pl.DataFrame              # steps.with_step_metrics: training steps with MFU, HFU, outliers
    step_summary: pl.DataFrame       # steps.step_summary: per run, medians and the time breakdown
    step_comparisons: pl.DataFrame   # steps.step_comparisons: runs differing in compile, batch or GPU
    distributed: multi_gpu.Distributed  # jobs on several GPUs: per-rank time, collectives, stragglers, scaling
    baseline: diff.Comparison | None = None   # diff.compare: from a baseline's runs (A) to these (B)
    sweep_checks: pl.DataFrame | None = None  # sweeps.sweep_checks: sweeps split or left out, and why
    variants: pl.DataFrame | None = None      # variants.variant_comparisons: build/code variants on one GPU

    @property
    def files(self) -> list[Any]:
        return self.dataset.files

    def __repr__(self) -> str:
        """A few lines (runs, GPUs, what the frames hold, the settings), never the frames."""
        runs = self.runs
        timed = runs.filter(pl.col("kernel_time_ns").is_not_null()).height if runs.height else 0
        counted = runs.filter(pl.col("flops").is_not_null()).height if runs.height else 0
        gpus = sorted(g for g in runs["gpu_label"].unique().to_list() if g) if runs.height else []
        settings = ", ".join(f"{k}={v!r}" for k, v in vars(self.settings).items()
                             if v != getattr(AnalysisSettings(), k))
        frames = ", ".join(f"{name} {frame.height}" for name, frame in vars(self).items()
                           if isinstance(frame, pl.DataFrame) and name != "runs" and frame.height)
        return (f"<Analysis: {runs.height} runs ({timed} with kernel time, {counted} with FLOPs) on "
                f"{len(gpus)} GPU model{'s' if len(gpus) != 1 else ''}"   # kinds of GPU, not devices (#31 item 12)
                f"{': ' + ', '.join(gpus[:6]) if gpus else ''}{' ...' if len(gpus) > 6 else ''}\n"
                f"  rows: {frames or 'none'}\n  settings: {settings or 'defaults'}>")

    __str__ = __repr__


def analyze(dataset: Source, settings: AnalysisSettings | None = None,
            baseline: Source | None = None) -> Analysis:
    """Run every analysis on `dataset` (see the module docstring); with `baseline`, compare
    the runs shown with it."""
    settings = settings or AnalysisSettings()
    db = settings.gpu.database()
    source = dataset.tables
    other_gpus = settings.gpu != dataset.gpu
    if other_gpus:
        source = gpus.with_settings(source, settings.gpu)
    tables = runsets.body_tables(source)
    whole_model = _body_model(dataset, tables, db, other_gpus)
    tables["runs"] = whole_model.runs()       # other GPUs or peaks: other bounds
    tables["steps"] = steps.with_step_metrics(tables, db, settings.model_flops)
    whole = tables
    tables = settings.view.keep_runs(tables)
    view = settings.view
    model = whole_model.keep_runs(tables["runs"]["run"].to_list(), tables) if view.runs else whole_model
    step_summary = steps.step_summary(tables["steps"])
    samples = tables["samples"]
    runs = compare.run_table(tables)
    why = reasons.run_reasons(model.time_rows, tables["runs"])
    pivot = speedup.gpu_pivot(runs, workloads.without_workload(tables["runs"]), why)
    pairs = speedup.speedups(pivot)
    summary = speedup.model_summary(pairs)
    pair_reasons = conclusions.speedup_reasons(pairs, tables["runs"], why, reasons.category_times(model.time_rows),
                                               db)
    per_model = conclusions.conclusions(summary, pair_reasons)
    kernel_share = share.kernel_share(model, view)
    run_roofline = model.run_roofline
    kernel_points = model.kernel_roofline if view.kernel is None else \
        roofline.kernel_roofline(model, view.keep_kernels(model.points))
    pattern_sweeps = share.sweep_pattern_share(model, SWEEP_PATTERNS, view=view)
    utilization_stats = utilization.utilization_stats(samples)
    processes = utilization.process_memory(samples)
    return Analysis(
        dataset=dataset, settings=settings, tables=tables, db=db, model=model,
        runs=runs, pivot=pivot, speedups=pairs, gpu_summary=summary, reasons=why,
        speedup_reasons=pair_reasons, conclusions=per_model,
        experiment_conclusions=conclusions.experiment_conclusions(per_model, pair_reasons),
        time_sweeps=sweeps.time_sweeps(tables["runs"], model.time_rows),
        sweep_checks=sweeps.sweep_checks(tables["runs"], model.time_rows)[0],
        variants=variants.variant_comparisons(tables["runs"]),
        roofline=run_roofline,
        kernel_roofline=kernel_points,
        chart_ceilings=roofline.gpu_chart_ceilings(run_roofline, tables["kernels"], db, runs),
        off_chart=roofline.off_chart(kernel_points, runs),
        size_series=sweeps.size_series(tables["runs"]),
        share=kernel_share, leaders=share.leading_categories(kernel_share),
        context=share.by_launch_context(model, view),
        top=share.top_kernels(model, top_n=settings.top, view=view),
        top_rest=share.top_kernels_rest(model, top_n=settings.top, view=view),
        top_print=share.top_kernels(model, top_n=min(settings.top, settings.top_print), view=view),
        top_rest_print=share.top_kernels_rest(model, top_n=min(settings.top, settings.top_print), view=view),
        uncategorized=share.uncategorized_share(model, view),
        sweeps=share.sweep_share(model, view=view),
        pattern_sweeps=pattern_sweeps, pattern_swings=share.pattern_swings(pattern_sweeps),
        incomplete=compare.with_tensor_kind(compare.incomplete_flops(model), run_roofline),
        estimates=compare.estimates(model),
        regions=regions.region_times(model),
        utilization=utilization_stats,
        utilization_window=utilization.utilization_stats(samples, settings.window) if settings.window else None,
        utilization_series=utilization.chart_series(samples, utilization_stats),
        processes=processes, process_series=utilization.chart_process_series(samples, processes),
        api=api.api_summary(tables["api_calls"], top_n=15),
        duplicates=runsets.duplicate_runs(source), gaps=runsets.run_gaps(tables, runs, dataset.files),
        steps=tables["steps"], step_summary=step_summary,
        step_comparisons=steps.step_comparisons(step_summary, tables["runs"]),
        distributed=multi_gpu.distributed(tables, model, why, step_summary),
        baseline=None if baseline is None else diff.compare(
            dataset_model(baseline), whole_model, runs_b=View(runs=view.runs), db=db),
    )


def dataset_model(dataset: Source) -> Model:
    """The dataset's model (`roofreport.read` keeps it), derived now when it has none (a
    Dataset made by `ingest` alone)."""
    if dataset.model is None:
        dataset.model = derive(dataset.tables, dataset.gpu.database())
    return dataset.model


def _body_model(dataset: Source, body: dict[str, pl.DataFrame], db: gpu.GpuDatabase, other_gpus: bool) -> Model:
    """The model of `body` (the dataset's tables without copies): the dataset's own narrowed to
    them, or derived again under other GPU settings (other GPUs, other peaks: other bounds)."""
    if other_gpus:
        return derive(body, db)
    return dataset_model(dataset).keep_runs(body["runs"]["run"].to_list(), body)
