"""`nvidia-smi dmon` and `pmon` -> raw samples.

The `# gpu pwr gtemp ...` header (parsed by Lark once per distinct text) names the columns in
the order `-s` asked for; the rows under it are split on whitespace by polars; `-` is a missing
value. dmon prints no time unless `-o DT` added `Date`/`Time` columns: a row's time is its
sample number times the `-d` period (1 s by default, or the `-d N` of an echoed command).

pmon rows are per process, not per GPU: its `sm`/`mem` shares are sampled per process and do
not add up to the GPU's utilisation, so pmon output is recognised but kept out of `samples`,
with a warning saying so.
"""

from __future__ import annotations

from functools import lru_cache

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common import headers as headers_once
from roofreport.families.common.textio import Document
from roofreport.families.smi.fields import MONITOR_FIELDS, VALUE_UNITS
from roofreport.families.smi.lines import LogLines
from roofreport.families.spec import ParseResult

DEFAULT_PERIOD_S = 1.0
_MAX_ROW_WARNINGS = 20


@lru_cache(maxsize=64)
def column_names(header: str) -> tuple[str, ...]:
    """`# gpu   pwr gtemp` -> ("gpu", "pwr", "gtemp") (Lark parses each distinct header once)."""
    tokens = grammar.load("smi").tokens(header.strip(), "monitor_header_line")
    names = next(t for t in tokens if t.type == "MONITOR_NAMES")
    return tuple(str(names).split())


def read(lines: LogLines, doc: Document, result: ParseResult, period: float | None) -> pl.DataFrame:
    # A capture runs from one echoed command to the next (its header is reprinted every page).
    frame = lines.frame.with_columns(capture=(pl.col("kind") == "command_line").cum_sum())
    section = frame.filter(pl.col("section") == "monitor")
    if not section.height:
        return pl.DataFrame()
    headers = frame.filter(pl.col("kind") == "monitor_header_line").select(
        header_line="line_no", header_text="text")
    names_of = _names_of(headers, result)
    if any("pid" in names for names in names_of.values()):
        result.warn("smi.pmon-not-sampled", "pmon output lists utilisation per process, which "
                    "does not add up to per-GPU samples: recognised, not read into samples",
                    line=headers["header_line"][0])
    rows = _rows(section, doc, result).join(headers, on="header_line", how="left")
    # One group per distinct header: dmon reprints its header every page.
    parts = [_read_group(rows.filter(pl.col("header_text") == text), names,
                         _units(frame, headers, text), doc, result)
             for text, names in names_of.items() if "pid" not in names]
    parts = [p for p in parts if p.height]
    if not parts:
        return pl.DataFrame()
    return pl.concat(parts, how="diagonal_relaxed").with_columns(
        part=pl.lit("monitor"), interval_s=pl.lit(period or DEFAULT_PERIOD_S))


def _names_of(headers: pl.DataFrame, result: ParseResult) -> dict[str, tuple[str, ...]]:
    """Distinct header text -> its column names; a header Lark refuses (damaged, or too long to
    parse) is reported and its rows are left out."""
    def refused(exc: ParseError, line_no: int) -> None:
        result.warn("smi.bad-header", f"dmon header unreadable: {exc.message}", line=line_no)

    found = headers_once.read_each(headers, column_names, refused, text="header_text", line="header_line")
    return {text: names for text, _, names in found}


def _rows(section: pl.DataFrame, doc: Document, result: ParseResult) -> pl.DataFrame:
    """The data rows of the monitor sections; other text there (a prompt typed after the
    capture, a message) is reported when it is not a known kind of line."""
    syntax = grammar.load("smi")
    candidates = section.filter(pl.col("kind") == "other")
    is_row = pl.col("text").str.contains(syntax.regex("monitor_row_line"))
    bad = candidates.filter(~is_row).select("line_no", "text")
    for line_no, text in bad.head(_MAX_ROW_WARNINGS).iter_rows():
        err = ParseError("nvidia-smi dmon: not a data row", path=doc.display, line=line_no,
                         column=1, text=text)
        result.warn("smi.bad-row", err.describe(), line=line_no)
    # Damaged rows still were samples: counting them keeps the time of the rows after them.
    candidates = candidates.with_columns(seq=pl.int_range(pl.len()).over("capture"))
    return candidates.filter(is_row).select(
        "line_no", "text", "header_line", "block", "seq",
        cells=pl.col("text").str.extract_all(r"\S+"))


def _read_group(rows: pl.DataFrame, names: tuple[str, ...], units: list[str],
                doc: Document, result: ParseResult) -> pl.DataFrame:
    ok = rows.filter(pl.col("cells").list.len() == len(names))
    for line_no, text, cells in rows.filter(pl.col("cells").list.len() != len(names)).select(
            "line_no", "text", pl.col("cells").list.len()).head(_MAX_ROW_WARNINGS).iter_rows():
        err = ParseError(f"nvidia-smi dmon: row has {cells} columns, its header {len(names)}",
                         path=doc.display, line=line_no, column=1, text=text)
        result.warn("smi.bad-row", err.describe(), line=line_no)
    ok = ok.select("line_no", "block", "seq", *[
        pl.col("cells").list.get(i).alias(f"_c{i}") for i in range(len(names))])
    exprs, bad, taken = [], [], set()
    for index, name in enumerate(names):
        target, cell = MONITOR_FIELDS.get(name), pl.col(f"_c{index}")
        if target == "gpu_index":
            exprs.append(cell.cast(pl.Int64, strict=False).alias(target))
        elif target in ("_date", "_clock") or target is None or target in taken:
            continue               # `temp` and `gtemp` both feed temperature_c: the first wins
        else:
            value = _number(cell) * VALUE_UNITS.get(units[index] if index < len(units) else "", 1.0)
            exprs.append(value.alias(target))
            bad.append((value.is_null() & (cell != "-")).alias(f"_bad_{name}"))
        taken.add(target)
    if "Date" in names and "Time" in names:   # `-o DT`
        stamp = pl.col(f"_c{names.index('Date')}") + " " + pl.col(f"_c{names.index('Time')}")
        exprs.append(stamp.str.strptime(pl.Datetime("us"), "%Y%m%d %H:%M:%S", strict=False)
                     .alias("timestamp"))
    out = ok.select(pl.col("line_no").alias("source_line"), "block", "seq", *exprs, *bad)
    _warn_bad_values(out, result)
    gpus = max(out["gpu_index"].n_unique(), 1) if "gpu_index" in out.columns else 1
    return out.with_columns(sample_no=(pl.col("seq") // gpus).cast(pl.Int64)).drop(
        "seq", *[c for c in out.columns if c.startswith("_bad_")])


def _number(cell: pl.Expr) -> pl.Expr:
    """A dmon cell: a plain integer (dmon prints no separators or units in cells), or `-`."""
    value = cell.cast(pl.Float64, strict=False)
    return pl.when(value.is_finite()).then(value)


def _warn_bad_values(out: pl.DataFrame, result: ParseResult) -> None:
    for col in [c for c in out.columns if c.startswith("_bad_")]:
        bad = out.filter(pl.col(col))
        if bad.height:
            first = bad["source_line"][0]
            result.warn("smi.bad-value", f"{bad.height} value(s) of dmon column {col[5:]!r} are "
                        f"neither a number nor `-` (first at line {first}); they are null", line=first)


def _units(frame: pl.DataFrame, headers: pl.DataFrame, text: str) -> list[str]:
    """The `# Idx W C ...` line that follows the first print of this header."""
    first = headers.filter(pl.col("header_text") == text)["header_line"][0]
    unit_line = frame.filter((pl.col("kind") == "monitor_units_line") & (pl.col("line_no") > first))
    if not unit_line.height:
        return []
    return unit_line["text"][0].lstrip("#").split()
