"""What one file's rows say about the GPU it ran on, gathered where the file is read.

`file_evidence(tables, logged, ...)` gives the file's `gpu.Evidence`: the device names its rows
and its reader give (kernels', activities' and metrics' `device` columns, ncu's
`device__attribute_display_name`, nvidia-smi's and DCGM's `gpu_name`), the compute capability
and SM count it printed (ncu's kernel lines, raw pages' `device__attribute_*`, Launch
Statistics' `# SMs`), and the architecture its kernel names need at least. The pipeline keeps it
in the file's `FileFacts`, so the runs are resolved from the facts alone (`gpu/resolve.py`).
"""

from __future__ import annotations

import polars as pl

from roofreport import gpu

_CC_PARTS = ("device__attribute_compute_capability_major", "device__attribute_compute_capability_minor")
_SM_COUNTS = ("device__attribute_multiprocessor_count", "# SMs", "launch__sm_count")
_DISPLAY_NAME = "device__attribute_display_name"
_NAME_COLUMNS = {"kernels": "device", "activities": "device", "metrics": "device", "samples": "gpu_name"}


def file_evidence(tables: dict[str, pl.DataFrame], logged: list[str | None] = (),
                  compute_capability: str | None = None, sm_count: int | None = None) -> gpu.Evidence:
    """The file's GPU evidence (module docstring); `logged`: the names its reader found (the
    file's and its sessions' device names), first."""
    metrics = tables.get("metrics")
    found = _metric_values(metrics) if metrics is not None and metrics.height else {}
    kernels = tables.get("kernels")
    names = kernels["name"].unique(maintain_order=True) if kernels is not None and kernels.height else []
    return gpu.Evidence.of_names([*logged, *_device_names(tables), *found.get(_DISPLAY_NAME, [])],
                                 kernel_names=names,
                                 cc=compute_capability or _cc(found),
                                 sm_count=sm_count or next(iter(found.get("sm_count", [])), None))


def _device_names(tables: dict[str, pl.DataFrame]) -> list[str]:
    out: list[str] = []
    for table, column in _NAME_COLUMNS.items():
        frame = tables.get(table)
        if frame is not None and frame.height and column in frame.columns \
                and frame[column].null_count() < frame.height:   # (an empty column asks no query)
            out += frame[column].drop_nulls().unique(maintain_order=True).cast(pl.String).to_list()
    return out


def _metric_values(metrics: pl.DataFrame) -> dict[str, list]:
    """metric -> its values (text for the display name, numbers for the rest), in row order, for
    the few metrics that tell the GPU; the SM counts under one key."""
    wanted = [*_CC_PARTS, *_SM_COUNTS, _DISPLAY_NAME]
    rows = metrics.filter(pl.col("metric").cast(pl.String).is_in(wanted)).select(
        pl.col("metric").cast(pl.String), "value", pl.col("value_text").cast(pl.String)).unique(maintain_order=True)
    out: dict[str, list] = {}
    for metric, value, text in rows.iter_rows():
        key = "sm_count" if metric in _SM_COUNTS else metric
        cell = text.strip() if metric == _DISPLAY_NAME and text else value
        if cell not in (None, ""):
            out.setdefault(key, []).append(cell)
    return out


def _cc(found: dict[str, list]) -> str | None:
    major, minor = (found.get(part, [None])[0] for part in _CC_PARTS)
    return f"{int(major)}.{int(minor or 0)}" if major is not None else None
