"""Kernel categories from names: an ordered, user-extendable list of (category, regex) rules.

The shipped rules live in `roofreport/data/kernel_categories.tsv` (category, pattern, why). The
first rule whose pattern matches a kernel's full name wins (so `implicit_convolve_sgemm` is a
convolution before it can be a gemm); a name no rule matches is "other", the uncategorized share
that every report shows. Patterns are Rust-regex (polars) dialect: no look-around.

Users prepend their own rules with `load_rules(path)` (TSV with `category` and `pattern` columns,
or TOML `[[rule]]` tables with the same keys): `categorize(names, load_rules(p) + CATEGORIES)`.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from roofreport.errors import UsageError
from roofreport.frames import per_distinct
from roofreport.userfiles import read_records

_DEFAULT = Path(__file__).resolve().parent.parent / "data" / "kernel_categories.tsv"
OTHER = "other"
NAMES = ("conv", "gemm", "attention", "elementwise", "reduction", "normalization", "pooling",
         "communication", "memcpy", "memset", "optimizer", OTHER)

Rule = tuple[str, str]


def load_rules(path: Path) -> list[Rule]:
    """(category, pattern) rules from a TSV or TOML file, in file order; patterns are checked."""
    rows = read_records(path, "rule", "category rules", delimiter="\t")
    rules = []
    for i, row in enumerate(rows, start=1):
        category, pattern = (row.get("category") or "").strip(), row.get("pattern") or ""
        if not category or not pattern:
            raise UsageError(f"category rules {path}: rule {i} needs a category and a pattern")
        _check(pattern, f"{path}: rule {i}")
        rules.append((category, pattern))
    return rules


def _check(pattern: str, where: str) -> None:
    try:
        pl.Series([""]).str.contains(pattern)
    except pl.exceptions.PolarsError as exc:
        raise UsageError(f"category rules {where}: bad pattern {pattern!r}: {exc}") from exc


CATEGORIES: list[Rule] = load_rules(_DEFAULT)


def categorize(names: pl.Series, rules: list[Rule] | None = None) -> pl.Series:
    """The category of every name (first matching rule; "other" when none; null for null),
    decided once per distinct name."""
    rules = CATEGORIES if rules is None else rules
    expr = pl.lit(OTHER)
    for category, pattern in reversed(rules):
        expr = pl.when(pl.col("n").str.contains(pattern)).then(pl.lit(category)).otherwise(expr)
    return per_distinct(names, lambda d: d.to_frame("n").select(expr.alias("category")))["category"]
