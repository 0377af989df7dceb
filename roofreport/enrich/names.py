"""Short kernel names: no return type, template arguments, parameter list or anonymous namespaces.

`void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)` -> `at::native::vectorized_elementwise_kernel`.
Mangled names (`_ZN2at6native18elementwise_kernel...`, as nvprof and nsys SQLite store them) are
reduced to their nested name; nvprof's trailing correlation id (` [105]`) and ROCm's code-object suffix (` [clone .kd]`) are
dropped.
Names are computed once per distinct name (there are few), then joined back.

The training phase a name tells (forward, backward, optimizer: `phase_of`) lives here too: it is
a fact of the name, filled into `kernels.region` at ingest and read by the region analysis.
"""

from __future__ import annotations

import re
from functools import lru_cache

import polars as pl

from roofreport.tables import kernel_names
from roofreport.tables.frames import per_distinct

# nvprof's correlation id, ROCm's code-object suffix (`tables/kernel_names.py`)
_CORR_ID = re.compile(kernel_names.CORR_ID)
_CODE_OBJECT = re.compile(kernel_names.CODE_OBJECT)
_ANON = re.compile(r"\((?:anonymous namespace)\)::|<unnamed>::|unnamed>::|_GLOBAL__N__\w+::")
_LAMBDA = re.compile(r"\{lambda\([^()]*\)#\d+\}|\[lambda\([^()]*\) \(instance \d+\)\]")


@lru_cache(maxsize=65536)
def short_name(name: str | None) -> str | None:
    if name is None:
        return None
    text = _CODE_OBJECT.sub("", _CORR_ID.sub("", name.strip()))
    if text.startswith("["):  # [CUDA memcpy HtoD], [CUDA memset]
        return text
    if text.startswith("_Z"):
        return _demangle_nested(text) or text
    text = _LAMBDA.sub("lambda", text)
    # Anonymous namespaces first: `<unnamed>::` would otherwise be taken for template brackets.
    text = _ANON.sub("", text)
    text = _strip_brackets(text, "<", ">")
    # The parameter list is the last top-level (...) group; drop it and anything after.
    text = _drop_params(text)
    text = text.strip()
    if text.startswith("void "):
        text = text[5:]
    # A remaining return type ("float foo"): keep the last whitespace-separated token.
    if " " in text:
        text = text.rsplit(" ", 1)[-1]
    return text or name


def _strip_brackets(text: str, open_: str, close: str) -> str:
    out, depth = [], 0
    for ch in text:
        if ch == open_:
            depth += 1
        elif ch == close and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _drop_params(text: str) -> str:
    depth = 0
    for index, ch in enumerate(text):
        if ch == "(":
            if depth == 0 and index > 0 and text[:index].rstrip() and text[:index].rstrip()[-1] not in ":":
                return text[:index]
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
    return text


def _demangle_nested(text: str) -> str | None:
    """Itanium `_ZN<len><id>...E` or `_Z<len><id>` -> `a::b::c` (no templates or parameters)."""
    index = 2
    nested = text.startswith("_ZN")
    if nested:
        index = 3
        while index < len(text) and text[index] in "rVKRO":
            index += 1
    parts = []
    while index < len(text) and text[index].isdigit():
        end = index
        while end < len(text) and text[end].isdigit():
            end += 1
        length = int(text[index:end])
        parts.append(text[end:end + length])
        index = end + length
        if not nested:
            break
        if index < len(text) and text[index] == "I":  # template args of the last component: stop here
            break
    # an anonymous namespace (`_GLOBAL__N_1`, nvcc's `_GLOBAL__N__<hash>`) is dropped, as its
    # demangled spellings are (`_ANON`): ncu's demangled name and a mangled one then meet
    return "::".join(p for p in parts if p and not p.startswith("_GLOBAL__N")) or None


def short_names(names: pl.Series) -> pl.Series:
    """`short_name` of each of a few names (a Python call per value: give it distinct ones)."""
    return pl.Series([short_name(n) for n in names.to_list()], dtype=pl.String)


def with_short_names(frame: pl.DataFrame, name_col: str = "name", out_col: str = "short_name") -> pl.DataFrame:
    """`frame` with `out_col` filled (where null) from `name_col`, once per distinct name."""
    if not frame.height:
        return frame
    shorts = per_distinct(frame[name_col], lambda d: short_names(d).to_frame("short_name"))["short_name"]
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
        expr = pl.when(pl.col("name").str.contains(pattern)).then(pl.lit(phase)).otherwise(expr)
    return per_distinct(names, lambda d: d.to_frame("name").select(expr.alias("phase")))["phase"]
