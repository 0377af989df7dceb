"""Table rows of Nsight Compute text pages, cut at their table's columns, and the `metrics`
table made from them (`text.py` reads the blocks and carries the context).

A table's columns are the dash runs of its rule line (`table_rule_line`, `raw_rule_line`),
split once per distinct rule text with the rule's own regex. The rows under one rule are cut
at its columns with fixed offsets: the metric and unit cells together (`key`, read once per
distinct text: a log repeats a few metric names and units millions of times) and the value
cells, stripped; metric and unit are kept as codes into the log's text categories, values as
codes too when the block's lines repeat, else as strings (`_TEXT`). A row overflowing its
columns is split on runs of spaces by the grammar's `metric_row` / `summary_row` rules; Lark
explains one that fits nothing. Values are parsed when the whole log is read (the decimal
comma is decided per file): coded ones once per distinct text, strings row by row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common import numbers, units
from roofreport.families.common.textio import Document
from roofreport.families.ncu import status as ncu_status
from roofreport.families.spec import ParseResult

if TYPE_CHECKING:
    from roofreport.families.ncu.text_lines import Distinct

_MAX_WARNED = 20
_SUMMARY_COLUMNS = 5   # metric, unit, minimum, maximum, average
_VALUES = ("value_cell", "min_cell", "max_cell")   # value (the average in summaries), minimum, maximum
# The value cells of blocks read as text (their values rarely repeat), kept as strings: coding
# them costs a hash per row into the log's categories, and each would be one category more.
_TEXT = {"value_cell": "value_string", "min_cell": "min_string", "max_cell": "max_string"}
_DEVICE_NAME = "device__attribute_display_name"


@dataclass
class Tables:
    """The rule columns met so far, and the rows of one log as codes into `texts`."""

    syntax: grammar.Grammar
    doc: Document
    result: ParseResult
    texts: pl.Categories
    kind: dict[str, int]               # line kind -> its code (`text_lines.kinds`)
    rules: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)  # (kind, cuts)
    _rule_id: dict[str, int] = field(default_factory=dict)
    _warned: int = 0
    _device: str | None | bool = False   # False: not known from the codes

    def __post_init__(self):
        self._row_kind = {self.kind[rule]: self.kind[row] for rule, row in
                          (("table_rule_line", "table_row_line"), ("raw_rule_line", "raw_row_line"))}

    def code_of(self, text: pl.Series) -> pl.Series:
        return text.cast(pl.Categorical(self.texts)).to_physical()

    # -- rules

    def rule_ids(self, distinct: pl.Series) -> pl.Series:
        """Rule id (an index into `rules`) of distinct texts that are rule lines (null for
        others), their columns found once."""
        for line in distinct.to_list():
            if line not in self._rule_id:
                rule = _rule(self.syntax, line, self.kind)
                self._rule_id[line] = None if rule is None else len(self.rules)
                if rule is not None:
                    self.rules.append(rule)
        return pl.Series([self._rule_id[line] for line in distinct.to_list()], dtype=pl.UInt32)

    def _row_rules(self, ctx: pl.DataFrame) -> pl.Expr:
        """Per line (columns `line_kind` and `at`), the rule whose columns cut it (null: not a table
        row of a launch): detail rows in a section under a four-space rule, raw-page rows
        under a two-space one."""
        kind = pl.Series([k for k, _ in self.rules], dtype=pl.UInt8)
        per_ctx = ctx.select(
            pl.col("rule"), kind=pl.lit(kind).gather(pl.col("rule")),
            base=pl.col("in_results") & pl.col("seq_ok") & pl.col("rule").is_not_null())
        per_ctx = per_ctx.select(
            table_row_line=pl.when(pl.col("base") & (pl.col("kind") == self.kind["table_rule_line"])
                                   & ctx["section"].is_not_null()).then("rule"),
            raw_row_line=pl.when(pl.col("base") & (pl.col("kind") == self.kind["raw_rule_line"])).then("rule"))
        rule = pl.lit(None, pl.UInt32)
        for row in per_ctx.columns:   # a kind of row no rule of the block cuts is left out
            if per_ctx[row].null_count() < per_ctx.height:
                rule = pl.when(pl.col("line_kind") == self.kind[row]) \
                    .then(pl.lit(per_ctx[row]).gather("at")).otherwise(rule)
        return rule

    # -- one block

    def rows(self, lines: pl.DataFrame, ctx: pl.DataFrame, at: pl.Series,
             distinct: Distinct | None = None) -> pl.DataFrame:
        """The block's table rows of launches: line, kernel header (`seq`), section, chart
        table name (`lab`, when the block has one) and cells (`metric_cell`, `unit_cell`,
        `value_cell`, `min_cell`, `max_cell`) as codes into `texts`. With `distinct` (the
        block's lines repeat), cells are cut once per distinct line and rule; without, the
        value cells are strings (`_TEXT`)."""
        if not self.rules:
            return pl.DataFrame()
        line = {"text": lines["text"]} if distinct is None else {"line": distinct.codes}
        label = {"lab": pl.lit(ctx["label"]).gather("at")} if ctx["label"].null_count() < ctx.height else {}
        # One query on the in-memory engine (see `text.Blocks._context`).
        rows = lines.lazy().with_columns(at=at).select(
            "line_no", "at", rule=self._row_rules(ctx), **line
        ).filter(pl.col("rule").is_not_null()).with_columns(
            seq=pl.lit(ctx["seq"].cast(pl.UInt32)).gather("at"), sec=pl.lit(ctx["section"]).gather("at"),
            **label
        ).collect(engine="in-memory")
        if not rows.height:
            return pl.DataFrame()
        present = rows["rule"].unique().to_list()
        parts = [self._rows_under(rows if len(present) == 1 else rows.filter(pl.col("rule") == rid), rid,
                                  distinct) for rid in present]
        rows = pl.concat([part for part, _, _ in parts], how="diagonal_relaxed")
        if len(parts) > 1:
            rows = rows.sort("line_no")
        loose = rows.filter(~pl.col("fits")) if not all(fit for _, fit, _ in parts) else None
        if loose is not None and loose.height:
            fixed = self._split_loose(loose, lines, coded=distinct is not None)
            rows = rows.update(fixed.select("line_no", *[c for c in fixed.columns if c in rows.columns
                                                         and c != "line_no"]), on="line_no")
        if not all(named for _, _, named in parts):
            rows = rows.filter(pl.col("metric_cell").is_not_null())
        cells = ("metric_cell", "unit_cell", *_VALUES, *_TEXT.values())
        return rows.select("line_no", *[c for c in cells if c in rows.columns], "seq", "sec",
                           *[c for c in ("lab",) if c in rows.columns])

    def _rows_under(self, part: pl.DataFrame, rid: int,
                    distinct: Distinct | None) -> tuple[pl.DataFrame, bool, bool]:
        """(the rows under rule `rid` with their cells, whether all fit the columns, whether
        all name a metric). With `distinct`, the cells are cut once per distinct line and
        only the cells needed are gathered to the rows."""
        if distinct is None:
            found, at = self._cells(part["text"], rid, coded=False), None
            checked = found
        else:  # cut every distinct line (once per log), gathered by the rows' codes
            found, at = distinct.per_text(lambda texts: self._cells(texts, rid), ("cells", rid)), part["line"]
            # The texts that can be rows under this rule (the checks look at those only).
            checked = found.filter(distinct.kinds == self._row_kind[self.rules[rid][0]])
        fit, named = bool(checked["fits"].all()), not checked["metric_cell"].null_count()
        if fit:
            found = found.drop("fits", "summary")
        cells = found if at is None else found[at]
        context = part.select("line_no", "seq", "sec", *[c for c in ("lab",) if c in part.columns])
        return pl.concat([context, cells], how="horizontal"), fit, named

    def _cells(self, text: pl.Series, rid: int, coded: bool = True) -> pl.DataFrame:
        """Lines under one rule cut at its columns: cells as codes (the metric and unit cells
        read once per distinct text; the value cells as strings named by `_TEXT` unless
        `coded`), and whether the line fits the columns."""
        cuts = self.rules[rid][1]
        summary = len(cuts) - 1 == _SUMMARY_COLUMNS
        keys = pl.Categories.random()
        values = {c if coded else _TEXT[c]: self.code_of(e.str.strip_chars()) if coded else e.str.strip_chars()
                  for c, e in _value_cells(cuts).items()}
        empty = {"value_cell": pl.lit(None, pl.UInt32)} if coded \
            else {"value_string": pl.lit(None, pl.String)}
        gaps = {"gaps": _blank_at(cuts[3]) & _blank_at(cuts[4])} if summary else {}
        cells = pl.DataFrame({"text": text}).select(
            key=_key_cell(cuts).cast(pl.Categorical(keys)), **values, **gaps)
        key = _key_fields(keys.to_series(), cuts, self.code_of)[cells["key"].to_physical()]
        return cells.select(metric_cell=key["metric_cell"], unit_cell=key["unit_cell"],
                            fits=key["fits"] & cells["gaps"] if summary else key["fits"],
                            summary=pl.lit(summary), **{**empty, **{c: c for c in values}})

    def _split_loose(self, loose: pl.DataFrame, lines: pl.DataFrame, coded: bool) -> pl.DataFrame:
        """Rows that overflow their columns, split from the right on 2+ spaces (grammar rules);
        values as codes or (not `coded`) strings, as `_cells` gives them."""
        syntax = self.syntax
        loose = loose.select("line_no", "summary",
                             text=lines["text"].gather(loose["line_no"] - lines["line_no"][0]))
        metric_rows = loose.select("line_no", *syntax.extract(pl.col("text"), "metric_row"))
        summary_rows = loose.select("line_no", *syntax.extract(pl.col("text"), "summary_row"))
        fixed = metric_rows.join(summary_rows, on="line_no", how="left", suffix="_s").join(
            loose.select("line_no", "summary", "text"), on="line_no")
        summary = pl.col("summary")
        fixed = fixed.select(
            "line_no", "text",
            metric_cell=pl.when(summary).then("metric_name_s").otherwise("metric_name"),
            unit_cell=pl.when(summary).then("metric_unit_s").otherwise("metric_unit"),
            value_cell=pl.when(summary).then("average").otherwise("metric_value"),
            min_cell=pl.when(summary).then("minimum"), max_cell=pl.when(summary).then("maximum"))
        bad = fixed.filter(pl.col("metric_cell").is_null())
        for line_no, text in bad.select("line_no", "text").head(_MAX_WARNED - self._warned).iter_rows():
            self.result.warn("ncu.unreadable-row", _explain(self.doc, syntax, text, line_no), line=line_no)
            self._warned += 1
        fixed = fixed.filter(pl.col("metric_cell").is_not_null())
        return fixed.select("line_no",
                            *[self.code_of(fixed[c]).alias(c) for c in ("metric_cell", "unit_cell")],
                            *[self.code_of(fixed[c]).alias(c) if coded else fixed[c].alias(_TEXT[c])
                              for c in _VALUES])

    # -- the whole log

    def metrics(self, blocks: list[pl.DataFrame], heads: pl.DataFrame, kernels: pl.DataFrame,
                texts: pl.Series) -> pl.DataFrame:
        """The `metrics` table from every block's rows (`texts`: the texts of the codes);
        values coded parsed once per distinct text, values kept as strings row by row."""
        blocks = [b for b in blocks if b.height]
        if not blocks or not heads.height:
            return pl.DataFrame()
        rows = pl.concat(blocks, how="diagonal_relaxed")
        value, decimal_comma = _values(texts, rows)
        factor = _factors(texts, rows["unit_cell"])
        by_seq = _by_seq(heads, kernels)
        launched = by_seq.filter(pl.col("launch_id").is_not_null())
        sec = rows["sec"]
        section = texts.gather(pl.Series([sec.min(), sec.max()], dtype=pl.UInt32)) \
            if sec.null_count() in (0, sec.len()) else texts.gather(sec.unique())
        text = pl.lit(texts)

        parsed = any(c in rows.columns for c in _TEXT.values())   # values parsed row by row

        def part(frame: pl.DataFrame, stat: str | None, cell: str) -> pl.DataFrame:
            scale = pl.lit(factor).gather(pl.col("unit_cell")).fill_null(units.scale(None)[1])
            number = (value(cell)[0] * scale).alias("value")
            out = [pl.col("line_no").alias("source_line"), pl.lit(by_seq["launch_id"]).gather(pl.col("seq")),
                   *[_spread(by_seq[c], "seq", launched[c]).alias(c) for c in ("kernel_name", "device")],
                   _section(texts, rows, section).alias("section"),
                   text.gather(pl.col("metric_cell")).alias("metric"),
                   text.gather(pl.col("unit_cell")).alias("unit"), pl.lit(stat, pl.String).alias("stat"),
                   number, value(cell)[1].alias("value_text")]
            if not parsed:
                return frame.select(out)
            # Values parsed in a select of their own: polars spreads one expression over the
            # frame's chunks (both cores), but runs each of several on one core.
            return frame.select(out[:8] + out[9:]).insert_column(8, frame.select(number).to_series())

        mins = [c for c in ("min_cell", _TEXT["min_cell"]) if c in rows.columns]
        is_summary = pl.any_horizontal([pl.col(c).is_not_null() for c in mins]) if mins else None
        if is_summary is None or not rows.select(is_summary.any()).item():
            self._device = _device_name(rows, texts)
            return _instance_values(part(rows, None, "value_cell"), decimal_comma)
        single, summary = rows.filter(~is_summary), rows.filter(is_summary)
        parts = [part(single, None, "value_cell"), part(summary, "min", "min_cell"),
                 part(summary, "max", "max_cell"), part(summary, "avg", "value_cell")]
        metrics = pl.concat(parts, how="vertical").sort("source_line", "stat", nulls_last=False)
        return _instance_values(metrics, decimal_comma)

    def device_name(self, metrics: pl.DataFrame) -> str | None:
        """The GPU's display name when the log listed device attributes (raw pages); read
        from the codes when no row holds several values."""
        return self._device if self._device is not False else ncu_status.device_name(metrics)


def _rule(syntax: grammar.Grammar, rule_text: str,
          kind: dict[str, int]) -> tuple[int, tuple[int, ...]] | None:
    """(kind code, cuts) of a rule line: the first rule kind whose regex reads it (the order of
    the grammar's `line`), and the start of its first dash run, then the end offset of every
    dash run (its DASHES field). None: not a rule line."""
    for rule in ("table_rule_line", "raw_rule_line"):
        found = _rule_regex(syntax, rule).match(rule_text)
        if found:
            start, dashes = found.start("dashes"), found.group("dashes")
            return kind[rule], (start, *(start + m.end() for m in re.finditer(r"-+", dashes)))
    return None


def _rule_regex(syntax: grammar.Grammar, rule: str) -> re.Pattern:
    return syntax.pattern(rule)


# -- cells -----------------------------------------------------------------------------------
# A rule's cuts c0 < c1 < c2 ...: the metric is text[c0:c1], the unit text[c1:c2], the value
# everything from c2 (in summaries, minimum, maximum and average are text[c2:c3], [c3:c4],
# [c4:c5]). A row fits when the character starting each cell after the metric is blank.

def _key_cell(cuts: tuple[int, ...]) -> pl.Expr:
    """Metric and unit cells and the gap after them (the rest of the line for one column)."""
    text = pl.col("text")
    return text.str.slice(cuts[0], cuts[2] - cuts[0] + 1) if len(cuts) > 2 else text.str.slice(cuts[0])


def _value_cells(cuts: tuple[int, ...]) -> dict[str, pl.Expr]:
    text, spans = pl.col("text"), len(cuts) - 1
    if spans == _SUMMARY_COLUMNS:
        return {c: text.str.slice(cuts[i], cuts[i + 1] - cuts[i])
                for c, i in (("min_cell", 2), ("max_cell", 3), ("value_cell", 4))}
    return {"value_cell": text.str.slice(cuts[2])} if spans >= 2 else {}


def _key_fields(keys: pl.Series, cuts: tuple[int, ...], code_of) -> pl.DataFrame:
    """Per distinct key cell: metric and unit as codes (null when empty) and whether the gaps
    after the metric and after the unit are blank."""
    one, two = cuts[1] - cuts[0], (cuts[2] - cuts[0] if len(cuts) > 2 else None)
    key = pl.col("key")

    def blank(at: int) -> pl.Expr:
        return key.str.slice(at, 1).is_in([" ", ""])

    cells = pl.DataFrame({"key": keys}).select(
        metric_cell=key.str.slice(0, one).str.strip_chars(),
        unit_cell=(key.str.slice(one, two - one) if two else key.str.slice(one)).str.strip_chars(),
        fits=blank(one) & (blank(two) if two else True))
    return cells.select(*[pl.when(pl.col(c) != "").then(code_of(cells[c])).alias(c)
                          for c in ("metric_cell", "unit_cell")], "fits")


def _blank_at(at: int) -> pl.Expr:
    """The character at `at` is blank (or the line ends before it)."""
    return pl.col("text").str.slice(at, 1).is_in([" ", ""])


# -- values ----------------------------------------------------------------------------------

def _values(texts: pl.Series, rows: pl.DataFrame) -> tuple[Callable[[str], tuple[pl.Expr, pl.Expr]], bool]:
    """For a value cell (`_VALUES`): (its number, its text) over `rows`, whose cells are
    codes into `texts` (numbers parsed once per distinct text) or strings (`_TEXT`, parsed row
    by row), in the log's decimal convention; and that convention (a decimal comma or not)."""
    decimal_comma = _decimal_comma(texts, rows)
    coded = any(c in rows.columns for c in _VALUES)
    number = pl.lit(pl.select(numbers.parse_number(pl.lit(texts), decimal_comma, instances=True))
                    .to_series()) if coded else None

    def value(cell: str) -> tuple[pl.Expr, pl.Expr]:
        found = []
        if cell in rows.columns:
            found.append(number.gather(pl.col(cell)))
        if _TEXT[cell] in rows.columns:
            found.append(numbers.parse_number(pl.col(_TEXT[cell]), decimal_comma))
        return (found[0] if len(found) == 1 else pl.coalesce(found)), _value_text(texts, rows, cell)
    return value, decimal_comma


def _instance_values(metrics: pl.DataFrame, decimal_comma: bool) -> pl.DataFrame:
    """`metrics` with the values printed with their instances (`--print-metric-instances`:
    `1,234 (600; 634)`) that were read as strings given their aggregate. Such a value is null
    until then, so only the null ones are looked at (none, in most logs: nothing is scanned)."""
    if not metrics["value"].null_count():
        return metrics
    at = (metrics["value"].is_null() & metrics["value_text"].str.contains(" (", literal=True)).arg_true()
    if not at.len():
        return metrics
    found = metrics[at]
    scale = units.factors(found["unit"])
    number = found.select(numbers.parse_number(pl.col("value_text"), decimal_comma, instances=True)).to_series()
    return metrics.with_columns(metrics["value"].scatter(at, number * scale))


def _value_text(texts: pl.Series, rows: pl.DataFrame, cell: str) -> pl.Expr:
    """The text of a value cell of `rows`, a code into `texts` or a string (`_TEXT`)."""
    found = [pl.lit(texts).gather(pl.col(cell))] if cell in rows.columns else []
    if _TEXT[cell] in rows.columns:
        found.append(pl.col(_TEXT[cell]))
    return found[0] if len(found) == 1 else pl.coalesce(found)


def _decimal_comma(texts: pl.Series, rows: pl.DataFrame) -> bool:
    """Whether the log prints a decimal comma: so do most of its printed values and minimums
    (each distinct coded text weighed by the rows printing it; value strings one by one)."""
    values, counts = [], []
    codes = [rows[c] for c in ("value_cell", "min_cell") if c in rows.columns]
    if codes:
        counted = pl.concat(codes).rename("code").value_counts().drop_nulls("code")
        values.append(texts.gather(counted["code"]))
        counts.append(counted["count"].cast(pl.Int64))
    strings = [rows[_TEXT[c]].drop_nulls() for c in ("value_cell", "min_cell") if _TEXT[c] in rows.columns]
    if strings:
        values.append(pl.concat(strings))
        counts.append(pl.repeat(1, values[-1].len(), dtype=pl.Int64, eager=True))
    return numbers.decimal_comma(pl.concat(values), pl.concat(counts))


def _factors(texts: pl.Series, unit: pl.Series) -> pl.Series:
    """Per text code, the factor from that unit to the base unit (for the units in use)."""
    present = unit.unique().drop_nulls()
    return pl.repeat(None, texts.len(), dtype=pl.Float64, eager=True).scatter(
        present, units.factors(texts.gather(present)))


def _section(texts: pl.Series, rows: pl.DataFrame, sections: pl.Series) -> pl.Expr:
    """The section of each row (`sections`: the texts its codes can take, see `_spread`); a
    chart table's rows under `<section> / <table name>`, as the CSV export's section and
    `Body Item Label` read."""
    plain = _spread(texts, "sec", sections)
    if "lab" not in rows.columns:
        return plain
    text = pl.lit(texts)
    named = pl.concat_str([text.gather(pl.col("sec")), pl.lit(" / "), text.gather(pl.col("lab"))])
    return pl.when(pl.col("lab").is_null()).then(plain).otherwise(named)


def _spread(lookup: pl.Series, codes: str, values: pl.Series) -> pl.Expr:
    """`lookup` gathered by the column `codes`; a constant when all `values` it can take are
    the same (a log of one GPU, one section): a constant column holds no string per row."""
    if values.len() and (values.null_count() == values.len()
                         or not values.null_count() and values.min() == values.max()):
        return pl.lit(values[0], pl.String)
    return pl.lit(lookup).gather(pl.col(codes))


def _by_seq(heads: pl.DataFrame, kernels: pl.DataFrame) -> pl.DataFrame:
    """Per kernel header number: launch id, kernel name and device of its launch."""
    launch = pl.repeat(None, int(heads["seq"].max()) + 1, dtype=pl.Int64, eager=True).scatter(
        heads["seq"], heads["launch_id"])
    by_launch = kernels if kernels["launch_id"].is_sorted() else kernels.sort("launch_id")
    return pl.DataFrame({"launch_id": launch, "kernel_name": by_launch["name"].gather(launch),
                         "device": by_launch["device"].gather(launch)})


def _device_name(rows: pl.DataFrame, texts: pl.Series) -> str | None:
    """`status.device_name` on rows of one value each, as codes (values also as strings)."""
    wanted = (texts == _DEVICE_NAME).arg_true()
    if not wanted.len():
        return None
    wanted_rows = rows.filter(pl.col("metric_cell").is_in(wanted.to_list()))
    values = wanted_rows.select(_value_text(texts, wanted_rows, "value_cell")).to_series().drop_nulls()
    values = values.filter(values.str.strip_chars() != "")
    return values[0].strip() if values.len() else None


def _explain(doc: Document, syntax: grammar.Grammar, text: str, line_no: int) -> str:
    return syntax.explain(text, "metric_row", doc.display, line_no, otherwise=ParseError(
        "table row does not fit its columns", path=doc.display, line=line_no, column=1,
        text=text)).describe()
