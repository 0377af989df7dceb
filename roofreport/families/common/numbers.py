"""Numbers as profilers print them: thousands separators, decimal commas, `n/a`, `(!) nan`.

Parsing is vectorised (polars string expressions) because logs hold millions of values. The
locale is decided once per file: a naive "strip commas" turns the German `84,58 %` into 8458.
"""

from __future__ import annotations

import polars as pl

# Spellings of "no value" seen across ncu, nsys, nvprof and nvidia-smi.
MISSING = ("", "n/a", "N/A", "[N/A]", "[Not Supported]", "nan", "NaN", "-", "None", "none",
           "(!) nan", "(!) n/a")

# A decimal-comma locale shows itself by space-grouped thousands (`13 181 137`) or by a comma
# followed by other than exactly three digits (`875,84`, `0,14`).
_DECIMAL_COMMA_HINT = r"^-?\d{1,3}(?: \d{3})+(?:,\d+)?$|^-?\d+,(?:\d{1,2}|\d{4,})$"
_DOT_HINT = r"^-?[\d,]*\d\.\d+$"


def decimal_comma(values: pl.Series, counts: pl.Series | None = None) -> bool:
    """Whether one file prints its numbers with a decimal comma: more of its printed values
    look so than look like decimal points. The one place that decides it, once per file.
    `counts` (how many rows print each value) lets `values` be the distinct values only; without
    them the values are counted here, so each distinct text is looked at once."""
    if counts is None:
        counted = values.rename("value").drop_nulls().value_counts(name="count")
        values, counts = counted["value"], counted["count"]
    values = values.cast(pl.String)
    # Every hint of a decimal comma holds a comma or a space: without one the answer is no.
    if not values.str.contains("[, ]").any():
        return False
    hints = pl.DataFrame({"value": values.str.strip_chars(), "count": counts.cast(pl.Int64)})
    weighed = hints.drop_nulls("value").select(
        *[(pl.col("value").str.contains(hint) * pl.col("count")).sum().alias(name)
          for name, hint in (("comma", _DECIMAL_COMMA_HINT), ("dot", _DOT_HINT))])
    return weighed["comma"][0] > weighed["dot"][0]


def parse_number(expr: pl.Expr, decimal_comma: bool = False, instances: bool = False) -> pl.Expr:
    """Printed number -> Float64 (null when not a number). Handles `1,234.5`, `1 234,5`, `1e+10`,
    a leading `(!) ` marker and a trailing `%`; with `instances`, the instance values ncu prints
    after the aggregate (`--print-metric-instances`: `1,234 (600; 634)` is 1234)."""
    stripped = expr.str.strip_chars()
    if decimal_comma:
        number = _cleaned(stripped, decimal_comma, instances).cast(pl.Float64, strict=False)
    else:
        # Most printed values are plain numbers: cast them directly and clean only the rest
        # (null elsewhere, so the cleaning passes skip those rows): half the CPU. Cleaning
        # never changes a string that casts as it is (the cast refuses spaces, commas, `%`).
        direct = stripped.cast(pl.Float64, strict=False)
        rest = _cleaned(pl.when(direct.is_null()).then(stripped), decimal_comma, instances)
        number = direct.fill_null(rest.cast(pl.Float64, strict=False))
    # "nan"/"inf" text casts to float NaN/inf; a log's nan is "no value". Polars does not share
    # common subexpressions here: every mention of `number` evaluates its whole tree, so it is
    # named twice only (three times cost twice the CPU on 640 k values).
    return pl.when(number.is_finite()).then(number)


def _cleaned(text: pl.Expr, decimal_comma: bool, instances: bool = False) -> pl.Expr:
    """Printed number text without the `(!)` marker, `%`, grouping and (`instances`) the list
    of instance values after it, with a decimal point."""
    text = text.str.replace(r"^\(!\)\s*", "")
    if instances:
        text = text.str.replace(r"\s+\([^()]*\)$", "")
    text = text.str.strip_suffix("%")
    text = text.str.replace_all(r"[ \u00a0\u202f']", "")
    if decimal_comma:
        return text.str.replace_all(r"\.", "").str.replace(",", ".", literal=True)
    return text.str.replace_all(",", "", literal=True)
