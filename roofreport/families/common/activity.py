"""What kind of GPU activity a trace row is, from its name: the one rule of every reader that
meets activities by name (nsys and nvprof traces, text and CSV, and nvprof's SQLite profiles,
whose copies and sets are named as nvprof prints them).

Kernels carry their own names; the tools name everything else in brackets: nsys
`[CUDA memcpy Host-to-Device]`, `[CUDA memset]`, `[CUDA Unified Memory memcpy HtoD]`; nvprof
`[CUDA memcpy HtoD]`, `[Unified Memory Memcpy DtoH]`, `[Unified Memory GPU page faults]`. A
Unified Memory migration moves bytes as a copy does, so both tools' are copies; any other
bracketed name (page faults, throttling) is some other activity. A row without a name counts as
a kernel. (Readers that know the kind from elsewhere, the nsys SQLite tables and Kineto's
event categories, use the same kind names.)
"""

from __future__ import annotations

import polars as pl

from roofreport.tables.frames import per_distinct

# Name prefix -> kind, first match wins; a name matching none is a kernel's.
ACTIVITY_KINDS: list[tuple[str, str]] = [
    ("[CUDA memset", "memset"),
    ("[CUDA memcpy", "memcpy"),
    ("[CUDA Unified Memory memcpy", "memcpy"),
    ("[Unified Memory Memcpy", "memcpy"),
    ("[", "other"),
]
KERNEL = "kernel"


def activity_kind(name: pl.Expr) -> pl.Expr:
    """The kind of the activity named `name` (memset, memcpy, other, kernel)."""
    (prefix, kind), *rest = ACTIVITY_KINDS
    chain = pl.when(name.str.starts_with(prefix)).then(pl.lit(kind))
    for prefix, kind in rest:
        chain = chain.when(name.str.starts_with(prefix)).then(pl.lit(kind))
    return chain.otherwise(pl.lit(KERNEL))


def activity_kinds(names: pl.Series) -> pl.Series:
    """`activity_kind` of every row, decided once per distinct name (a trace names a few dozen
    kernels a million times)."""
    kinds = per_distinct(names.cast(pl.String), lambda distinct: distinct.to_frame("name").select(
        activity_kind(pl.col("name")).alias("kind")))["kind"]
    return kinds.fill_null(KERNEL)
