"""Calls the analysis layer once for the whole report and keeps its answers together.

The report computes no FLOPs, peaks, rooflines or bound classes of its own: every number a
section shows comes from one of these frames (the contract in `roofreport.analysis`). The
only thing done here is applying the build options: `--peaks` (the GPU database) and `--gpu`
(a device name for runs whose logs name none).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from roofreport import hardware
from roofreport.analysis import api_calls as api, compare, regions, roofline, share, utilization

# Kernel families worth following across a batch-size sweep (label -> Rust regex on full names).
SWEEP_PATTERNS = {
    "NCCL kernels": "(?i)nccl",
    "winograd kernels": "(?i)winograd",
    "FFT kernels": "(?i)fft",
    "implicit-GEMM kernels": "(?i)implicit_?(?:convolve_)?[sdh]?gemm|implicit_gemm",
}


@dataclass
class Analyses:
    tables: dict[str, pl.DataFrame]
    db: hardware.GpuDatabase
    runs: pl.DataFrame               # compare.run_table
    roofline: pl.DataFrame           # roofline.run_roofline
    kernel_roofline: pl.DataFrame    # roofline.kernel_roofline
    share: pl.DataFrame              # share.kernel_share
    top: pl.DataFrame                # share.top_kernels
    uncategorized: pl.DataFrame      # share.uncategorized_share
    sweeps: pl.DataFrame             # share.sweep_share
    pattern_sweeps: pl.DataFrame     # share.sweep_pattern_share with SWEEP_PATTERNS
    incomplete: pl.DataFrame         # compare.incomplete_flops
    estimates: pl.DataFrame          # compare.estimates
    regions: pl.DataFrame            # regions.region_times
    utilization: pl.DataFrame        # utilization.utilization_stats, whole series
    utilization_window: pl.DataFrame | None
    api: pl.DataFrame                # api.api_summary


def run_analyses(dataset, options) -> Analyses:
    db = hardware.load_database(options.peaks_file)
    tables = dict(dataset.tables)
    if options.gpu_override:
        tables["runs"] = assume_gpu(tables["runs"], options.gpu_override, db)
    samples = tables["samples"]
    return Analyses(
        tables=tables, db=db,
        runs=compare.run_table(tables, db),
        roofline=roofline.run_roofline(tables, db),
        kernel_roofline=roofline.kernel_roofline(tables, db),
        share=share.kernel_share(tables),
        top=share.top_kernels(tables, n=options.top_n),
        uncategorized=share.uncategorized_share(tables),
        sweeps=share.sweep_share(tables),
        pattern_sweeps=share.sweep_pattern_share(tables, SWEEP_PATTERNS),
        incomplete=compare.incomplete_flops(tables),
        estimates=compare.estimates(tables, list(options.inputs), db),
        regions=regions.region_times(tables),
        utilization=utilization.utilization_stats(samples),
        utilization_window=utilization.utilization_stats(samples, options.window) if options.window else None,
        api=api.api_summary(tables["api_calls"], n=15),
    )


def assume_gpu(runs: pl.DataFrame, device: str, db: hardware.GpuDatabase) -> pl.DataFrame:
    """`--gpu`: runs whose logs and paths name no GPU get this one."""
    spec = db.match(device)
    key = spec.key if spec else None
    unknown = pl.col("gpu").is_null() & pl.col("gpu_model").is_null()
    return runs.with_columns(
        pl.when(unknown).then(pl.lit(device)).otherwise(pl.col("gpu")).alias("gpu"),
        pl.when(unknown).then(pl.lit(key, pl.String)).otherwise(pl.col("gpu_model")).alias("gpu_model"),
    )
