"""Short kernel names: no return type, template arguments, parameter list or anonymous namespaces.

`void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)` -> `at::native::vectorized_elementwise_kernel`.
Mangled names (`_ZN2at6native18elementwise_kernel...`, as nvprof and nsys SQLite store them) are
reduced to their nested name; nvprof's trailing correlation id (` [105]`) is dropped.
Names are computed once per distinct name (there are few), then joined back.

The training phase a name tells (forward, backward, optimizer: `phase_of`) lives here too: it is
a fact of the name, filled into `kernels.region` at ingest and read by the region analysis.
"""

from __future__ import annotations

import re
from functools import lru_cache

import polars as pl

from roofreport.tables.frames import per_distinct

_CORR_ID = re.compile(r" \[\d+\]$")
_ANON = re.compile(r"\((?:anonymous namespace)\)::|<unnamed>::|unnamed>::|_GLOBAL__N__\w+::")
_LAMBDA = re.compile(r"\{lambda\([^()]*\)#\d+\}|\[lambda\([^()]*\) \(instance \d+\)\]")


@lru_cache(maxsize=65536)
def short_name(name: str | None) -> str | None:
    if name is None:
        return None
    s = _CORR_ID.sub("", name.strip())
    if s.startswith("["):  # [CUDA memcpy HtoD], [CUDA memset]
        return s
    if s.startswith("_Z"):
        return _demangle_nested(s) or s
    s = _LAMBDA.sub("lambda", s)
    # Anonymous namespaces first: `<unnamed>::` would otherwise be taken for template brackets.
    s = _ANON.sub("", s)
    s = _strip_brackets(s, "<", ">")
    # The parameter list is the last top-level (...) group; drop it and anything after.
    s = _drop_params(s)
    s = s.strip()
    if s.startswith("void "):
        s = s[5:]
    # A remaining return type ("float foo"): keep the last whitespace-separated token.
    if " " in s:
        s = s.rsplit(" ", 1)[-1]
    return s or name


def _strip_brackets(s: str, open_: str, close: str) -> str:
    out, depth = [], 0
    for ch in s:
        if ch == open_:
            depth += 1
        elif ch == close and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _drop_params(s: str) -> str:
    depth = 0
    for i, ch in enumerate(s):
        if ch == "(":
            if depth == 0 and i > 0 and s[:i].rstrip() and s[:i].rstrip()[-1] not in ":":
                return s[:i]
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
    return s


def _demangle_nested(s: str) -> str | None:
    """Itanium `_ZN<len><id>...E` or `_Z<len><id>` -> `a::b::c` (no templates or parameters)."""
    i = 2
    nested = s.startswith("_ZN")
    if nested:
        i = 3
        while i < len(s) and s[i] in "rVKRO":
            i += 1
    parts = []
    while i < len(s) and s[i].isdigit():
        j = i
        while j < len(s) and s[j].isdigit():
            j += 1
        n = int(s[i:j])
        parts.append(s[j:j + n])
        i = j + n
        if not nested:
            break
        if i < len(s) and s[i] == "I":  # template args of the last component: stop here
            break
    return "::".join(p for p in parts if p) or None


def short_names(names: pl.Series) -> pl.Series:
    """`short_name` of each of a few names (a Python call per value: give it distinct ones)."""
    return pl.Series([short_name(n) for n in names.to_list()], dtype=pl.String)


def with_short_names(frame: pl.DataFrame, name_col: str = "name", out_col: str = "short_name") -> pl.DataFrame:
    """`frame` with `out_col` filled (where null) from `name_col`, once per distinct name."""
    if not frame.height:
        return frame
    shorts = per_distinct(frame[name_col], lambda d: short_names(d).to_frame("s"))["s"]
    if out_col in frame.columns:
        return frame.with_columns(pl.coalesce(pl.col(out_col), shorts).alias(out_col))
    return frame.with_columns(shorts.alias(out_col))


# Ordered: the first phase whose pattern matches wins (Rust regex, case-insensitive).
PHASES = [
    ("optimizer", r"(?i)optimizer|adam|sgd|adagrad|rmsprop|lamb_|lambfunctor|multi_tensor_apply|"
                  r"fused_optim|_foreach_|momentum"),
    ("backward", r"(?i)backward|_bwd|bwd_|dgrad|wgrad|grad_?input|gradinput|grad_?weight|gradweight|"
                 r"grad_?param|accgradparameters|bias_diff|bn_bw|_bw_"),
    ("forward", r"(?i)forward|_fwd|fwd_|fprop|bn_fw|_fw_|updateoutput"),
]


def phase_of(names: pl.Series) -> pl.Series:
    """"forward", "backward", "optimizer" where a kernel name tells, else null (decided once
    per distinct name)."""
    expr = pl.lit(None, pl.String)
    for phase, pattern in reversed(PHASES):
        expr = pl.when(pl.col("n").str.contains(pattern)).then(pl.lit(phase)).otherwise(expr)
    return per_distinct(names, lambda d: d.to_frame("n").select(expr.alias("phase")))["phase"]
