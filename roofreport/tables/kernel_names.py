"""What a profiler appends to a kernel's name that is no part of the kernel: nvprof's trailing
correlation id (` [105]`, one per launch) and ROCm's code-object suffix (rocprof's
` [clone .kd]`, rocprof-compute's `(.kd)`, `.kd`). The one spelling of both, for the short
names (`enrich/names.py`) and the kernel identity of the per-kernel views (`analysis/share.py`):
one kernel, however many launches or suffixes name it."""

from __future__ import annotations

import polars as pl

CORR_ID = r" \[\d+\]$"
CODE_OBJECT = r"\s*(?:\[clone \.kd\]|\(\.kd\)|\.kd)$"


def bare_name(name: pl.Expr) -> pl.Expr:
    """`name` without what the profiler appended (as `enrich.names.short_name` strips it first)."""
    return name.str.strip_chars().str.replace(CORR_ID, "").str.replace(CODE_OBJECT, "")
