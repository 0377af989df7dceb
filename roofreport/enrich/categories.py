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
