"""Kernel categories from names: an ordered, user-extendable list of (category, regex) rules.

The shipped rules live in `roofreport/data/kernel_categories.tsv` (category, pattern, why). The
first rule whose pattern matches a kernel's full name wins (so `implicit_convolve_sgemm` is a
convolution before it can be a gemm); a name no rule matches is "other", the uncategorized share
that every report shows. Patterns are Rust-regex (polars) dialect: no look-around.

Users prepend their own rules with `load_rules(path)` (TSV with `category` and `pattern` columns,
or TOML `[[rule]]` tables with the same keys): `categorize(names, load_rules(p) + CATEGORIES)`.
"""

from __future__ import annotations

import csv
import io
from functools import cache
from pathlib import Path

import polars as pl

from roofreport.errors import UsageError
from roofreport.resources import package_data
from roofreport.tables.frames import per_distinct

_DEFAULT = package_data("kernel_categories.tsv")
OTHER = "other"
NAMES = ("conv", "gemm", "fft", "attention", "elementwise", "reduction", "normalization", "softmax/loss",
         "pooling", "communication", "memcpy", "memset", "optimizer", OTHER)

Rule = tuple[str, str]


def load_rules(path: Path) -> list[Rule]:
    """(category, pattern) rules from a TSV or TOML file, in file order; patterns are checked."""
    from roofreport.userfiles import read_records  # (tomllib: only for a user's file)

    return _rules(read_records(path, "rule", "category rules", delimiter="\t"), path)


def _rules(rows: list[dict], path: Path) -> list[Rule]:
    rules = []
    for index, row in enumerate(rows, start=1):
        category, pattern = (row.get("category") or "").strip(), row.get("pattern") or ""
        if not category or not pattern:
            _check_all(rules, path)  # a bad pattern above is reported first
            raise UsageError(f"category rules {path}: rule {index} needs a category and a pattern")
        rules.append((category, pattern))
    _check_all(rules, path)
    return rules


def _check_all(rules: list[Rule], path: Path) -> None:
    """Every pattern compiles (one polars call for all; the first bad one is named)."""
    try:
        pl.select(pl.lit("").str.contains(p).alias(str(i)) for i, (_, p) in enumerate(rules))
    except pl.exceptions.PolarsError:
        for index, (_, pattern) in enumerate(rules, start=1):
            _check(pattern, f"{path}: rule {index}")
        raise


def _check(pattern: str, where: str) -> None:
    try:
        pl.Series([""]).str.contains(pattern)
    except pl.exceptions.PolarsError as exc:
        raise UsageError(f"category rules {where}: bad pattern {pattern!r}: {exc}") from exc


@cache
def default_rules() -> list[Rule]:
    """The shipped rules (`CATEGORIES`), read on first use. Their patterns are not compiled
    here only to be compiled again by `categorize` (tests/test_startup.py checks them)."""
    text = _DEFAULT.read_text(encoding="utf-8-sig")
    return [(row["category"].strip(), row["pattern"])
            for row in csv.DictReader(io.StringIO(text), delimiter="\t")]


def __getattr__(name: str):
    # `CATEGORIES` is read when asked for, not when the module is imported (every run imports
    # this module; only runs with kernels categorize).
    if name == "CATEGORIES":
        return default_rules()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def categorize(names: pl.Series, rules: list[Rule] | None = None) -> pl.Series:
    """The category of every name (first matching rule; "other" when none; null for null),
    decided once per distinct name."""
    rules = default_rules() if rules is None else rules
    expr = pl.lit(OTHER)
    for category, pattern in reversed(rules):
        expr = pl.when(pl.col("name").str.contains(pattern)).then(pl.lit(category)).otherwise(expr)
    return per_distinct(names, lambda d: d.to_frame("name").select(expr.alias("category")))["category"]


COPIES = frozenset({"memcpy", "memset"})


def only_copies(names: pl.Series) -> bool:
    """Whether `categorize(names)` would give every name a copy category (memcpy, memset) or
    null, without categorizing: the shipped rules that come before the first rule of another
    category decide it (a name matching none of them is categorized by a later rule or
    "other"). Ingest asks it of every file: a summary of copies and memsets alone measured no
    kernel. One or two regexes over the distinct names, not every rule (~5 ms a file)."""
    rules = default_rules()
    first = next((i for i, (category, _) in enumerate(rules) if category not in COPIES), len(rules))
    names = names.drop_nulls().unique()
    if not names.len():
        return True
    if not first:
        return False
    frame = names.to_frame("name")
    return bool(frame.select(pl.any_horizontal([pl.col("name").str.contains(pattern)
                                                for _, pattern in rules[:first]]).all()).item())


# -- what launched a kernel ------------------------------------------------------------------
#
# A name says what a kernel computes, not which layer it served: cuDNN's Winograd and FFT
# convolutions transform their inputs, run a plain GEMM (`volta_sgemm_64x64_nn`, `cgemm`), and
# transform the result back. Those GEMMs are convolution time. So, best evidence first:
# 1. the operators that launched the kernel, where its region or its operator path names them
#    (PyTorch's aten operators as NVTX ranges or annotations, a Kineto trace's cpu_op ancestry:
#    `aten::cudnn_convolution` -> conv, `aten::scaled_dot_product_attention` -> attention,
#    `aten::addmm` -> gemm; the widest layer wins: a GEMM under a convolution is conv);
# 2. in a trace (launches in order), a GEMM whose nearest launches before and after on its
#    stream, GEMMs aside, are one convolution's input and output transforms;
# 3. the name (summaries: no order, no operator).
# `category` holds the reading; `category_by_name` the name rule's, so both can be shown
# ("conv (via GEMM)"); `category_source` which of the three decided.
BY_NAME, BY_NEIGHBOURHOOD, BY_OPERATOR = "name", "launch neighbourhood", "operator"
CONV, GEMM = "conv", "gemm"
# A convolution's transforms around its GEMM: inputs (data, filter, Wgrad delta; FFT r2c) before,
# the output transform (Winograd output; FFT c2r) after.
_INPUT_TRANSFORM = r"(?i)winograd\w*(?:Data|Filter|Delta)|fft\w*r2c"
_OUTPUT_TRANSFORM = r"(?i)winograd\w*Output|fft\w*c2r"
# Operators that launch convolutions, attention, plain GEMMs: aten names (in NVTX ranges,
# annotations, a Kineto trace's cpu_op path) and the autograd nodes of their backward passes.
_CONV_OPERATOR = (r"(?i)aten::(?:_?convolution|conv\w*|cudnn_convolution\w*|mkldnn_convolution\w*)|cudnn_convolution"
                  r"|\b(?:Cudnn)?Convolution\w*Backward\d*\b")
_ATTENTION_OPERATOR = (r"(?i)aten::\w*(?:attention|_attn)\w*|\b\w*Attention\w*Backward\d*\b"
                       r"|\bflash_attn\w*")
_GEMM_OPERATOR = (r"aten::(?:linear|addmm|mm|bmm|baddbmm|matmul|addbmm|_addmm_activation)\b"
                  r"|\b(?:Mm|Addmm|Bmm|Baddbmm|Linear|Matmul)Backward\d*\b")
# The layer an operator path serves, widest first: a GEMM launched anywhere under a convolution
# serves it (cuDNN's Winograd and FFT paths, im2col + GEMM); under attention, attention (SDPA's
# math path runs bmm); else under a matrix product, gemm.
_OPERATOR_READINGS = ((CONV, _CONV_OPERATOR), ("attention", _ATTENTION_OPERATOR), (GEMM, _GEMM_OPERATOR))


def by_launch_context(kernels: pl.DataFrame, activities: pl.DataFrame | None = None) -> pl.DataFrame:
    """`kernels` with `category` read from what launched each GEMM (the comment above), the
    name rule's reading in `category_by_name` and the deciding evidence in `category_source`.
    Launch order is each file's: the trace's start times where `activities` give them (a
    kernel's activity shares its file and line), else the launch ids (ncu's IDs, trace rows)."""
    by_name = pl.col("category")
    kernels = kernels.with_columns(by_name.alias("category_by_name"),
                                   pl.when(by_name.is_not_null()).then(pl.lit(BY_NAME)).alias("category_source"))
    gemm = kernels["category"] == GEMM
    if not gemm.any():
        return kernels
    kernels = _by_neighbourhood(kernels, activities)
    return _by_operator(kernels)


def _by_neighbourhood(kernels: pl.DataFrame, activities: pl.DataFrame | None) -> pl.DataFrame:
    name, category = pl.col("name").fill_null(""), pl.col("category_by_name")
    if not kernels.select(((category == CONV) & name.str.contains(_INPUT_TRANSFORM)).any()).item():
        return kernels
    rows = kernels.with_row_index("__row")
    launches = rows.filter(pl.col("kind") == "launch").select("__row", "source_file", "source_line", "launch_id",
                                                               "stream", "name", "category_by_name")
    if activities is not None and activities.height:
        starts = activities.filter(pl.col("kind") == "kernel").select(
            "source_file", "source_line", pl.col("start_ns").alias("__start")).unique(["source_file", "source_line"])
        launches = launches.join(starts, on=["source_file", "source_line"], how="left")
    else:
        launches = launches.with_columns(pl.lit(None, pl.Float64).alias("__start"))
    lane = ["source_file", "stream"]
    # Each launch that is no GEMM marks what it is (input transform 1, output transform 2,
    # anything else 0); a GEMM sees the nearest mark before and after it on its lane.
    mark = (pl.when(category == GEMM).then(None)
            .when((category == CONV) & name.str.contains(_INPUT_TRANSFORM)).then(1)
            .when((category == CONV) & name.str.contains(_OUTPUT_TRANSFORM)).then(2)
            .otherwise(0))
    ordered = launches.with_columns(pl.col("stream").fill_null(-1)).sort(
        ["source_file", "stream", "__start", "launch_id", "__row"], nulls_last=True).with_columns(mark.alias("__mark"))
    before = pl.col("__mark").shift(1).forward_fill().over(lane)
    after = pl.col("__mark").shift(-1).backward_fill().over(lane)
    between = ordered.filter((category == GEMM) & (before == 1) & (after == 2))["__row"]
    if not between.len():
        return kernels
    inside = pl.lit(rows["__row"].is_in(between.implode()))
    return kernels.with_columns(pl.when(inside).then(pl.lit(CONV)).otherwise(pl.col("category")).alias("category"),
                                pl.when(inside).then(pl.lit(BY_NEIGHBOURHOOD)).otherwise(pl.col("category_source"))
                                .alias("category_source"))


def _by_operator(kernels: pl.DataFrame) -> pl.DataFrame:
    """A GEMM whose launch context names the operators that launched it takes the category of
    the layer they serve (`_OPERATOR_READINGS`): its region path (NVTX ranges, annotations) and
    its `operator` path (a Kineto trace's cpu_op ancestry: aten::conv2d/aten::convolution/
    aten::_convolution/aten::cudnn_convolution) read together."""
    paths = [pl.col(c).fill_null("") for c in ("region", "operator") if c in kernels.columns]
    text = pl.concat_str(paths, separator="/")
    if not kernels.select(text.str.contains(r"aten::|cudnn_convolution|Backward\d|flash_attn").any()).item():
        return kernels
    serves = pl.lit(None, pl.String)
    for category, pattern in reversed(_OPERATOR_READINGS):
        serves = pl.when(text.str.contains(pattern)).then(pl.lit(category)).otherwise(serves)
    reading = pl.when(pl.col("category_by_name") == GEMM).then(serves)
    return kernels.with_columns(pl.coalesce(reading, pl.col("category")).alias("category"),
                                pl.when(reading.is_not_null()).then(pl.lit(BY_OPERATOR))
                                .otherwise(pl.col("category_source")).alias("category_source"))
