"""What every GPU time-series reader outside nvidia-smi does last (DCGM, tegrastats): raw rows
of `samples` columns become the `samples` table, with `elapsed_s` filled as the nvidia-smi
family fills it.

A raw row holds the columns its reader could read plus `sample_no` (the how-many-th reading of
its GPU). `elapsed_s` is the seconds since the file's first timestamp when the rows are dated;
otherwise `sample_no` times the sampling period when the log says it (an echoed `-d 500`, a
loop's `sleep 5`) or the tool has a default one (dcgmi and tegrastats: 1 s); otherwise null.
"""

from __future__ import annotations

import polars as pl

from roofreport.errors import ParseError
from roofreport.grammar import Grammar
from roofreport.tables import schema

DT = pl.Datetime("us")
MAX_LINE_WARNINGS = 20


def finish(raw: pl.DataFrame, period_s: float | None) -> pl.DataFrame:
    """The `samples` table of raw rows (kept in their order)."""
    if not raw.height:
        return schema.empty("samples")
    if "timestamp" not in raw.columns:
        raw = raw.with_columns(timestamp=pl.lit(None, DT))
    if "sample_no" not in raw.columns:
        raw = raw.with_columns(sample_no=pl.lit(None, pl.Int64))
    stamp = pl.col("timestamp").cast(DT)
    since_first = (stamp - stamp.min()).dt.total_microseconds() / 1e6
    by_count = pl.col("sample_no").cast(pl.Float64) * pl.lit(period_s, pl.Float64)
    raw = raw.with_columns(elapsed_s=pl.when(stamp.is_not_null().any()).then(since_first)
                           .otherwise(by_count))
    return schema.conform("samples", raw.select([c for c in schema.SAMPLES if c in raw.columns]))


def warn_rows(result, code: str, what: str, rows: list[tuple[int, int, str]], path: str,
              limit: int = MAX_LINE_WARNINGS) -> None:
    """One warning per bad line (line, column, text), the first `limit` of them, each with
    file:line:column and the line drawn with a caret; then how many more there were."""
    for line_no, column, text in rows[:limit]:
        err = ParseError(what, path=path, line=line_no, column=column, text=text)
        result.warn(code, err.describe(), line=line_no)
    if len(rows) > limit:
        result.warn(code, f"{len(rows) - limit} more such lines (first {limit} shown)",
                    line=rows[limit][0])


def warn_unparsed(result, code: str, syntax: Grammar, rule: str, lines: list[tuple[int, str]],
                  path: str, limit: int = MAX_LINE_WARNINGS) -> None:
    """Lines that should have been `rule` and are not: Lark says where each goes wrong
    (file:line:column, what it expected), for the first `limit` of them."""
    for line_no, text in lines[:limit]:
        # A line that parses as the rule was out of place (before its header...).
        err = syntax.explain(text, rule, path, line_no, otherwise=ParseError(
            f"{syntax.name}: {rule.replace('_', ' ')} out of place", path=path,
            line=line_no, column=1, text=text))
        result.warn(code, err.describe(), line=line_no)
    if len(lines) > limit:
        result.warn(code, f"{len(lines) - limit} more such lines (first {limit} shown)",
                    line=lines[limit][0])
