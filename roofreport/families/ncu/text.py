"""Nsight Compute text output of every era and page: details (wide 2019-2022 and table 2023+
layouts), the raw page (`--page raw`), and summaries (`--print-summary per-kernel|per-gpu`).

The syntax lives in `grammars/ncu.lark`. Parsing is vectorised and reads the file a block of
whole lines at a time, so a big log is never held whole:

* every line gets its kind from the grammar's line rules (`text_lines.py`);
* the context (process, device, kernel header, section, chart table name, table rule) is
  carried forward with polars window operations over the lines that are not rows, starting
  from what the block before left (`Carry`); each row takes the context of the last such line
  above it. A table is open from its first rule line to the rule right after its last row: a
  row-shaped line outside an open table (the title of a `--print-details all` chart) is no
  row. A process's results run from its `[pid] app@host` line (or ncu's `Disconnected`
  line, or the log's start: pasted results lack both) to ncu's next progress line
  (`==PROF==`); its warnings and errors may sit among them;
* rows are cut at the columns of their table's dash rule (`text_rows.py`).

Repeated texts (kernel names, sections, metric names, units, and the values of blocks whose
lines repeat) are kept as codes into one per-log set of categories (`Blocks.texts`) until the
tables are built, so every output row shares one copy of each distinct string, and a block's
text is freed with the block. The values of the other blocks (a real log prints different
values for every kernel) stay short strings: coding them would hash every one. What a block's
lines tell alone (kinds, notes) is worked out in the reader thread (`Blocks.prepare`).

Tables filled: `kernels` (one row per profiled launch, or per kernel in summary modes) and
`metrics` (every row the log printed, value scaled to base units, text kept; the rows of a
named chart table under the section `<section> / <table name>`, as the CSV export's
`Body Item Label` gives them).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from functools import lru_cache

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common import context
from roofreport.families.common.textio import Document
from roofreport.families.ncu import csv as ncu_csv, status as ncu_status, text_rows as ncu_text_rows
from roofreport.families.ncu.text_lines import (
    ROWS,
    Distinct,
    Memo,
    by_distinct,
    classify,
    code,
    kinds,
    read_blocks_ahead,
)
from roofreport.families.spec import ParseResult

FAMILY = "ncu"
_RULES = ("table_rule_line", "raw_rule_line")
_OPENS_KERNEL = ("kernel_line", "device_line", "process_line")
_NSIGHT = ["nsight", "Nsight"]   # lines naming an Nsight Compute path: `status.py` reads the version
_ALARMS = ["==WARNING==", "==ERROR=="]
_TAIL = 256   # a block's last lines, where its last meaningful line is looked for first
_NONE = (1 << 32) - 1  # a field reset (no process/device/section/rule in force), before filling


def parse_text(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    syntax = grammar.load("ncu")
    blocks = Blocks(syntax, doc, result)
    with closing(read_blocks_ahead(doc, coded=True, prepare=blocks.prepare)) as ahead:  # closed on an error too
        for lines, distinct, prepared in ahead:
            blocks.read(lines, distinct, prepared)
    kernels = blocks.kernels()
    if kernels.height:
        result.add("kernels", kernels)
        result.hints.compute_capability = blocks.compute_capability()
    metrics = blocks.metrics(kernels)
    if metrics.height:
        result.add("metrics", metrics)
        result.hints.device_name = blocks.tables.device_name(result.tables["metrics"])
    return _finish(blocks, kernels.height > 0, doc, syntax, result)


def _finish(blocks: Blocks, has_results: bool, doc: Document, syntax: grammar.Grammar,
            result: ParseResult) -> ParseResult:
    """ncu's own messages, the version, a cut-off log; a log without results is ncu's refusal,
    a CSV whose header lay beyond the sniffed head, or an error."""
    whole = None if has_results else _whole_lines(doc, syntax)
    status = blocks.kept("status") if has_results else whole()
    ncu_status.report(status, result, has_results=has_results, all_lines=whole)
    notes = blocks.kept("notes")
    ncu_status.protobuf_warnings(notes, result)
    result.tool_version = ncu_status.tool_version(notes)
    blocks.check_truncation()
    if whole is not None and result.error is None:
        if _has_csv_header(whole(), syntax):  # a CSV whose header lies beyond the sniffed head
            return ncu_csv.parse_csv(doc, "csv details")
        result.error = ParseError("ncu log holds no profiled kernel results", path=doc.display)
    return result


def _whole_lines(doc: Document, syntax: grammar.Grammar) -> Callable[[], pl.DataFrame]:
    """All lines with their kind names, read when first asked (only logs without results)."""
    def read() -> pl.DataFrame:
        lines = doc.lines()
        return lines.with_columns(kind=pl.Series(kinds(syntax)).gather(classify(lines["text"], syntax)[0]))
    return lru_cache(maxsize=1)(read)


def _has_csv_header(lines: pl.DataFrame, syntax: grammar.Grammar) -> bool:
    return lines.filter(pl.col("kind") == "other")["text"].str.contains(
        "^" + syntax.terminal("HEADER_FIRST") + ",").any()


def _is_alarm(text: pl.Series) -> pl.Series:
    return text.str.contains_any(_ALARMS)


def _is_note(text: pl.Series) -> pl.Series:
    return text.str.starts_with("[libprotobuf ") | text.str.contains_any(_NSIGHT)


# -- context ---------------------------------------------------------------------------------

@dataclass
class Carry:
    """The context in force after the lines read so far, which the next block starts from:
    kernel headers seen (`seq`), inside a process's results (a log starts in them: pasted
    results have no `==PROF==` or process line), whether the current header is
    (then it is a launch), the codes of the pid, gpu, section, chart table name (`label`) and
    table rule in force, and the number of the last line that is not a row."""

    seq: int = 0
    in_results: bool = True
    seq_ok: bool = False
    pid: int | None = None
    gpu: int | None = None
    section: int | None = None
    label: int | None = None
    rule: int | None = None
    line_no: int = 0

    def frame(self) -> pl.DataFrame:
        values = {name: [getattr(self, name)] for name in _CONTEXT}
        return pl.DataFrame(values, schema=_CONTEXT)

    @classmethod
    def after(cls, ctx: pl.DataFrame) -> Carry:
        return cls(**{name: ctx[name][-1] for name in _CONTEXT})


_CONTEXT = {"seq": pl.Int64, "in_results": pl.Boolean, "seq_ok": pl.Boolean, "pid": pl.UInt32,
            "gpu": pl.UInt32, "section": pl.UInt32, "label": pl.UInt32, "rule": pl.UInt32,
            "line_no": pl.Int64}
# field -> (the line kinds that set it, the line kinds that end it). A rule line that closes a
# table (`_closes`) ends the rule and the table's name instead of setting anything.
_FIELDS = {"pid": (("process_line",), ()),
           "gpu": (("device_line",), ("process_line",)),
           "section": (("section_line",), _OPENS_KERNEL),
           "label": (("table_name_line",), (*_OPENS_KERNEL, "section_line")),
           "rule": (_RULES, (*_OPENS_KERNEL, "section_line"))}
_CLOSED = ("label", "rule")


# -- the blocks ------------------------------------------------------------------------------

@dataclass
class Prepared:
    """What the lines of a block read as text tell alone (`Blocks.prepare`, worked out in the
    reader thread while the block before is taken in): each line's kind code (`kinds`) and the
    notes among the lines the grammar's line rules looked at (line_no, text)."""

    kinds: pl.Series
    notes: pl.DataFrame


@dataclass
class Blocks:
    """What the blocks of one log gave: kernel headers, table rows, NVTX items and ncu's own
    lines, with repeated texts as codes into `texts`; and the context between blocks."""

    syntax: grammar.Grammar
    doc: Document
    result: ParseResult
    texts: pl.Categories = field(default_factory=pl.Categories.random)
    carry: Carry = field(default_factory=Carry)
    heads: list[pl.DataFrame] = field(default_factory=list)
    rows: list[pl.DataFrame] = field(default_factory=list)
    nvtx: list[pl.DataFrame] = field(default_factory=list)
    lines: dict[str, list[pl.DataFrame]] = field(default_factory=lambda: {"status": [], "notes": []})
    ending: dict = field(default_factory=lambda: {"closes": False, "last": None, "final_kind": None})
    memo: Memo = field(default_factory=Memo)   # per distinct line, across blocks
    tables: ncu_text_rows.Tables = field(init=False)
    _distinct: Distinct | None = field(default=None, init=False)   # the block being read
    _texts: pl.Series | None = field(default=None, init=False)        # `texts` as strings
    _first: int = field(default=1, init=False)                       # its first line number
    _facts: pl.DataFrame | None = field(default=None, init=False)    # its distinct lines' `_facts_of`

    def __post_init__(self):
        # Categories live while some data uses them; the blocks keep codes only.
        self._alive = pl.Series([], dtype=pl.Categorical(self.texts))
        names = kinds(self.syntax)
        self.tables = ncu_text_rows.Tables(self.syntax, self.doc, self.result, self.texts,
                                           {name: i for i, name in enumerate(names)})

    def prepare(self, lines: pl.DataFrame) -> Prepared:
        """`Prepared` of a block read as text (safe in another thread: it only reads the
        grammar)."""
        line_kinds, looked_at = classify(lines["text"], self.syntax)
        looked = lines.filter(looked_at)
        return Prepared(line_kinds, looked.filter(_is_note(looked["text"])))

    def read(self, lines: pl.DataFrame, distinct: Distinct | None, prepared: Prepared | None = None) -> None:
        """Take in one block: `lines` (line_no, text), with its `distinct` lines when they
        repeat, else with what they tell alone when known (`prepare`)."""
        self._distinct = distinct
        self._texts = None
        self._first = lines["line_no"][0]
        if distinct is None:
            prepared = prepared or self.prepare(lines)
            line_kinds = prepared.kinds
        else:
            distinct.attach(self.memo)
            self._facts = facts = distinct.per_text(self._facts_of, "facts")
            distinct.kinds = facts["line_kind"]
            line_kinds = facts["line_kind"].gather(distinct.codes)
        lines = lines.with_columns(line_kind=line_kinds)
        is_row = line_kinds.is_in(code(self.syntax, *ROWS))
        ctx = self._context(lines.filter(~is_row))
        at = (~is_row).cast(pl.UInt32).cum_sum()   # each line's context: row `at` of ctx
        self.rows.append(self.tables.rows(lines, ctx, at, distinct))
        self._keep_heads(ctx)
        if distinct is None:
            self._keep_lines(ctx, prepared.notes)
        else:
            self._keep_coded_lines(lines, facts)
        self._track_ending(lines, ctx, at)
        self.carry = Carry.after(ctx)

    def code_of(self, text: pl.Expr | pl.Series):
        """Strings as codes into `texts` (UInt32): kept across blocks without their bytes."""
        return text.cast(pl.Categorical(self.texts)).to_physical()

    def all_texts(self) -> pl.Series:
        """`texts` as strings, by code (made once after the last block)."""
        if self._texts is None:
            self._texts = self.texts.to_series()
        return self._texts

    def text_of(self, codes: pl.Series) -> pl.Series:
        return self.all_texts().gather(codes)

    # -- context

    def _context(self, lines: pl.DataFrame) -> pl.DataFrame:
        """For the carried context (row 0) and every line of `lines` (the block's lines that
        are not rows): `_CONTEXT`, carried forward from the lines that set or end each part.
        Results start at a process line (`[pid] app@host`) or ncu's `Disconnected` line and
        end at ncu's next progress line; a table's rule and name end at the rule that closes it."""
        line_kinds = pl.col("line_kind")
        kernel, process, status = code(self.syntax, "kernel_line", "process_line", "status_line")
        value = pl.lit(self._field_values(lines))
        closes = self._closes(line_kinds)
        fields = self._fields_in_use(lines)
        marks = {name: self._mark(line_kinds, sets, ends, value, closes if name in _CLOSED else None)
                 for name, (sets, ends) in fields.items()}
        # (The pattern runs on status lines only: null elsewhere, which it skips.)
        status_text = pl.when(line_kinds == status).then(pl.col("text"))
        progress = status_text.str.contains(self.syntax.regex("progress_line"))
        disconnected = status_text.str.contains(self.syntax.regex("disconnected_line"))
        marked = lines.lazy().select(
            "line_no", "line_kind", "text", kernel=line_kinds == kernel, seq=pl.lit(None, pl.Int64),
            in_results=pl.when((line_kinds == process) | disconnected).then(True).when(progress).then(False),
            seq_ok=pl.lit(None, pl.Boolean), **marks)
        first = self.carry.frame().lazy().with_columns(pl.col(*fields).fill_null(_NONE), kernel=pl.lit(False))
        # One query: polars fills the columns in parallel. The in-memory engine: the streaming
        # one (polars' default) costs more on a block's frames while the next block is read.
        return pl.concat([first, marked], how="diagonal_relaxed").with_columns(
            pl.col("in_results", *fields).forward_fill(),
            seq=pl.col("kernel").cum_sum().cast(pl.Int64) + self.carry.seq
        ).with_columns(
            *[context.unmarked(pl.col(name), _NONE).alias(name) for name in fields],
            seq_ok=pl.when("kernel").then("in_results").otherwise("seq_ok").forward_fill()
        ).collect(engine="in-memory")

    def _fields_in_use(self, lines: pl.DataFrame) -> dict[str, tuple]:
        """`_FIELDS`, without the chart table name when no block so far named a table (the
        common case: only `--print-details all` logs do; its column then stays null)."""
        if self.carry.label is None and \
                not (lines["line_kind"] == code(self.syntax, "table_name_line")[0]).any():
            return {name: kinds for name, kinds in _FIELDS.items() if name != "label"}
        return _FIELDS

    def _mark(self, line_kinds: pl.Expr, sets: tuple[str, ...], ends: tuple[str, ...], value: pl.Expr,
              closes: pl.Expr | None) -> pl.Expr:
        """A field's value where a line sets it, `_NONE` where a line ends it (and, with
        `closes`, where a rule closes its table), null elsewhere (then carried forward)."""
        setting = line_kinds.is_in(code(self.syntax, *sets))
        ending = line_kinds.is_in(code(self.syntax, *ends))
        if closes is not None:
            setting, ending = setting & ~closes, ending | closes
        return context.marks(setting, value, ending, pl.lit(_NONE, pl.UInt32))

    def _closes(self, line_kinds: pl.Expr) -> pl.Expr:
        """Whether each of the non-row lines (`line_kind`, `line_no`) is a rule right after a
        row: the rule that closes a table (every other rule opens one or is a title's underline)."""
        after_row = pl.col("line_no") - pl.col("line_no").shift(1, fill_value=self.carry.line_no) > 1
        return line_kinds.is_in(code(self.syntax, *_RULES)) & after_row

    def _field_values(self, lines: pl.DataFrame) -> pl.Series:
        """Per line, what it sets: the code of its pid, gpu or section, or its rule's id."""
        if self._distinct is not None:
            return self._facts["field"].gather(self._distinct.codes.gather(lines["line_no"] - self._first))
        return self._setting_values(lines["line_kind"], lines["text"])

    def _setting_values(self, line_kinds: pl.Series, text: pl.Series) -> pl.Series:
        """`_field_values` of lines of kinds `line_kinds` and texts `text` (once per distinct text)."""
        setting = line_kinds.is_in(code(self.syntax, *[kind for sets, _ in _FIELDS.values()
                                                        for kind in sets]))
        values = pl.repeat(None, line_kinds.len(), dtype=pl.UInt32, eager=True)
        if not setting.any():
            return values
        return values.scatter(setting.arg_true(), by_distinct(text.filter(setting), self._fields_of))

    def _fields_of(self, texts: pl.Series) -> pl.Series:
        """For distinct texts of process, section, chart table name, rule and device lines
        (tried in the order of the grammar's `line`, so each text is read as the kind it was
        classified as): the code of the pid, section, table name or gpu, or the rule's id."""
        found = pl.DataFrame({"text": texts}).select(
            *[self.syntax.extract(pl.col("text"), rule)[self.syntax.groups(rule).index(group)].str.strip_chars()
              .alias(rule) for rule, group in (("process_line", "pid"), ("section_line", "section"),
                                               ("table_name_line", "table_name"), ("device_line", "device"))])
        codes = found.select(self.code_of(pl.col(c)) for c in found.columns)
        rules = self.tables.rule_ids(texts)
        return codes.select(pl.coalesce("process_line", "section_line", "table_name_line", pl.lit(rules),
                                        "device_line")).to_series()

    def _per_line(self, lines: pl.DataFrame, derive: Callable[[pl.Series], pl.Series | pl.DataFrame], key: str):
        """`derive` of the texts of some of the block's lines, once per distinct text (once per
        log under `key` when the blocks repeat their lines)."""
        if self._distinct is None:
            return by_distinct(lines["text"], derive)
        return self._distinct.per_line(self._distinct.codes.gather(lines["line_no"] - self._first), derive, key)

    # -- kernel headers, NVTX items, ncu's own lines

    def _keep_heads(self, ctx: pl.DataFrame) -> None:
        heads = ctx.filter(pl.col("kernel") & pl.col("in_results"))
        if heads.height:
            fields = self._per_line(heads, lambda d: head_fields(d, self.syntax, self.code_of), "head")
            self.heads.append(pl.concat([heads.select("line_no", "seq", "pid", "gpu"), fields],
                                        how="horizontal"))
        items = ctx.filter((pl.col("line_kind") == code(self.syntax, "nvtx_item_line")[0]) & pl.col("seq_ok"))
        if items.height:
            self.nvtx.append(items.select("seq", part=self.code_of(nvtx_part(pl.col("text")))))

    def _keep_lines(self, ctx: pl.DataFrame, notes: pl.DataFrame) -> None:
        """ncu's status lines and the block's `notes` (`[libprotobuf` lines and lines naming an
        Nsight Compute path, among those the grammar looked at), their texts as codes (the
        block's buffers are not kept alive)."""
        # With results, only WARNING and ERROR lines matter (status.report); without,
        # the whole log is read again.
        status = ctx.filter(pl.col("line_kind") == code(self.syntax, "status_line")[0])
        kept = {"status": status.filter(_is_alarm(status["text"])), "notes": notes}
        for name, found in kept.items():
            if found.height:
                self.lines[name].append(found.select("line_no", text=self.code_of(pl.col("text"))))

    def _facts_of(self, texts: pl.Series) -> pl.DataFrame:
        """Of distinct line texts: the kind code (`line_kind`), what the line sets (`field`, as
        `_field_values`), and the text's code when it is a status line kept (`status`) or a
        note (`notes`), as `_keep_lines` keeps them."""
        line_kinds, looked_at = classify(texts, self.syntax)
        kept = {"status": (line_kinds == code(self.syntax, "status_line")[0]) & _is_alarm(texts),
                "notes": looked_at & _is_note(texts)}
        found = {"line_kind": line_kinds, "text": texts, "field": self._setting_values(line_kinds, texts)}
        return pl.DataFrame(found).select(
            "line_kind", "field", **{name: pl.when(pl.lit(keep)).then(self.code_of(pl.col("text")))
                                     for name, keep in kept.items()})

    def _keep_coded_lines(self, lines: pl.DataFrame, facts: pl.DataFrame) -> None:
        """`_keep_lines` of a block read as codes, from the `_facts` of its distinct lines."""
        for name in self.lines:
            if facts[name].null_count() < facts.height:
                found = lines.select("line_no", text=facts[name].gather(self._distinct.codes))
                self.lines[name].append(found.filter(pl.col("text").is_not_null()))

    def kept(self, name: str) -> pl.DataFrame:
        """The kept status lines or notes: line_no, text, kind."""
        if not self.lines[name]:
            return pl.DataFrame(schema={"line_no": pl.Int64, "text": pl.String, "kind": pl.String})
        found = pl.concat(self.lines[name])
        kind = "status_line" if name == "status" else "other"   # notes: whatever their kind, unused
        return found.with_columns(text=self.text_of(found["text"]), kind=pl.lit(kind))

    # -- the end of the log

    def _track_ending(self, lines: pl.DataFrame, ctx: pl.DataFrame, at: pl.Series) -> None:
        """What `check_truncation` needs: whether a rule ever closed a table (a rule right
        after a row, blank and other lines aside), and the last meaningful line (looked for
        in the block's last lines first)."""
        line_kinds, meaningful = lines["line_kind"], self._meaningful
        last = self.ending["last"]
        if line_kinds.len():
            self.ending["final_kind"] = line_kinds[-1]   # the file's last line, whatever it is
        if not self.ending["closes"]:
            kinds = line_kinds.filter(meaningful(line_kinds))
            prev = kinds.shift(1, fill_value=last["line_kind"] if last else None)
            self.ending["closes"] = bool((kinds.is_in(code(self.syntax, *_RULES))
                                          & (prev == code(self.syntax, "table_row_line")[0])).any())
        found = meaningful(line_kinds.tail(_TAIL))
        if not found.any():
            found = meaningful(line_kinds)
            if not found.any():
                return
        index = lines.height - 1 - found.reverse().arg_max()
        self.ending["last"] = {"line_no": lines["line_no"][index], "line_kind": line_kinds[index],
                               **ctx.select("in_results", "seq_ok", "rule").row(at[index], named=True)}

    def _meaningful(self, line_kinds: pl.Series) -> pl.Series:
        return ~line_kinds.is_in(code(self.syntax, "blank_line", "other"))

    def check_truncation(self) -> None:
        """A log cut inside a kernel's results: a table still open at the end of the file (in
        the layouts that close every table with a rule: detail pages; raw pages and old
        summaries simply stop), or a last line cut off (no line break at the end of the file)
        inside the results. The kernels before are kept; the file is `partial`."""
        last = self.ending["last"]
        if not last or not last["in_results"]:
            return
        open_table = self.ending["closes"] and last["line_kind"] == code(self.syntax, "table_row_line")[0] \
            and last["seq_ok"] and last["rule"] is not None
        cut_line = not self.doc.tail(1).endswith(b"\n") \
            and self.ending["final_kind"] not in code(self.syntax, *_RULES)
        if not (open_table or cut_line):
            return
        where = f"line {last['line_no']}"
        message = (f"log ends inside a metrics table ({where}): the last kernel may be incomplete" if open_table
                   else f"log ends in the middle of a line after {where}, inside a kernel's results: the last "
                        "kernel may be incomplete")
        self.result.warn("ncu.truncated", message, line=last["line_no"])
        if self.result.error is None:
            self.result.error = ParseError(f"the log was cut short: {message}; the kernels before are kept",
                                           path=self.doc.display, line=last["line_no"])

    # -- tables

    def kernels(self) -> pl.DataFrame:
        heads = launch_ids(pl.concat(self.heads)) if self.heads else pl.DataFrame()
        self.heads = [heads] if heads.height else []
        return kernel_table(heads, self._regions(heads), self.text_of)

    def compute_capability(self) -> str | None:
        """The compute capability the kernel headers print (`..., Device 0, CC 8.6`), if any."""
        heads = self.heads[0] if self.heads else pl.DataFrame()
        if "cc" not in heads.columns:
            return None
        printed = heads["cc"].drop_nulls()
        return self.text_of(printed.head(1))[0] if printed.len() else None

    def _regions(self, heads: pl.DataFrame) -> pl.DataFrame:
        """`--nvtx` context under a kernel header -> one region path per launch."""
        if not self.nvtx or not heads.height:
            return pl.DataFrame()
        items = pl.concat(self.nvtx).drop_nulls("part").join(
            heads.select("seq", "launch_id"), on="seq", maintain_order="left")
        named = items.select("launch_id", part=self.text_of(items["part"]))
        return named.group_by("launch_id", maintain_order=True).agg(
            pl.col("part").str.join("/").alias("region"))

    def metrics(self, kernels: pl.DataFrame) -> pl.DataFrame:
        heads = self.heads[0] if self.heads else pl.DataFrame()
        return self.tables.metrics(self.rows, heads, kernels, self.all_texts())


# -- kernels ---------------------------------------------------------------------------------

def kernel_fields(heads: pl.DataFrame, syntax: grammar.Grammar) -> pl.DataFrame:
    """The fields of kernel header lines. The trailing fields (`kernel_tail`) are matched at
    the line's end, the name is what precedes them: capture groups never run over names of
    a thousand characters."""
    text, tail = pl.col("text"), pl.col("tail")
    found = heads.with_columns(tail=text.str.extract(f"({syntax.regex('kernel_tail', anchored=False)})$", 1))
    name = text.str.head(text.str.len_chars() - tail.str.len_chars()).str.strip_chars()
    return found.with_columns(name.alias("kernel_name"), *syntax.extract(tail, "kernel_tail")).drop("tail")


def head_fields(texts: pl.Series, syntax: grammar.Grammar,
                code_of: Callable[[pl.Expr], pl.Expr]) -> pl.DataFrame:
    """The kernel table's fields of distinct kernel header texts (texts as codes). Summaries
    repeat one kernel's header before every section: `same` (the header's text) finds the first."""
    found = kernel_fields(pl.DataFrame({"text": texts}), syntax)
    invocations = pl.col("invocations")
    return found.select(
        summary=invocations.is_not_null(),
        same=pl.when(invocations.is_not_null()).then(code_of(pl.col("text").str.strip_chars())),
        name=code_of(pl.col("kernel_name")),
        count=invocations.cast(pl.Int64, strict=False),
        device=code_of(pl.col("device")),
        cc=code_of(pl.col("cc")),
        context=pl.col("context").cast(pl.Int64, strict=False),
        stream=pl.col("stream").cast(pl.Int64, strict=False),
        grid=code_of(pl.coalesce("grid", "grid_size")),
        block=code_of(pl.coalesce("block", "block_size")))


def launch_ids(heads: pl.DataFrame) -> pl.DataFrame:
    """Launch id of every header: its position for launches; in summaries, the position of
    the first header of the same text in the same process and device."""
    first = pl.when("summary").then(pl.col("seq").min().over("pid", "gpu", "same")).otherwise("seq")
    return heads.with_columns(first=first).with_columns(
        launch_id=(pl.col("first").rank("dense") - 1).cast(pl.Int64))


def kernel_table(heads: pl.DataFrame, regions: pl.DataFrame,
                 text_of: Callable[[pl.Series], pl.Series]) -> pl.DataFrame:
    if not heads.height:
        return pl.DataFrame()
    # Launches have a header each; summaries repeat one kernel's: keep its first.
    first = heads if heads["launch_id"].n_unique() == heads.height else \
        heads.filter(pl.col("launch_id").is_first_distinct())
    out = first.select(
        pl.col("line_no").alias("source_line"), "launch_id",
        name=text_of(first["name"]),
        kind=pl.when(pl.col("count").is_not_null()).then(pl.lit("summary")).otherwise(pl.lit("launch")),
        count=pl.col("count").fill_null(1),
        device=text_of(first.select(pl.coalesce("device", "gpu")).to_series()),
        context="context", stream="stream", grid=text_of(first["grid"]), block=text_of(first["block"]))
    if regions.height:
        out = out.join(regions, on="launch_id", how="left", maintain_order="left")
    return out


def nvtx_part(text: pl.Expr) -> pl.Expr:
    """`<0,Gate_nvtx>` is a range (id, name), `<default domain>` a domain (no part)."""
    item = text.str.strip_chars().str.strip_prefix("<").str.strip_suffix(">")
    return pl.when(item.str.contains(r"^\d+,")).then(item.str.replace(r"^\d+,", "")) \
        .when(item == "default domain").then(None).otherwise(item)
