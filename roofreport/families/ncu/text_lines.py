"""The lines of an Nsight Compute text log, for `text.py`: read a block of whole lines at
a time, and each line's kind.

Kinds come from the grammar's `line` rules (`grammars/ncu.lark`), tried in their order. Table
rows, most of a big log, are told cheaply: a line shaped like a row is one when it holds none
of the starts and literals the rules tried before the rows need; a row-shaped line holding `, `
is a kernel header when the `kernel_line` regex matches it. Every other line goes through
`Grammar.classify_lines`, once per distinct text. A block whose lines repeat (a big log printing
the same kernels' tables over and over) is read straight into codes of its distinct lines and
worked per distinct line (`Distinct`); what is derived of a distinct line is kept for the
blocks after (`Memo`), so such a log reads each distinct line once.
"""

from __future__ import annotations

import codecs
import io
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import polars as pl

from roofreport import grammar, tuning
from roofreport.families.common.textio import _LINE_READER, Document, split_lines

ROWS = ("table_row_line", "raw_row_line")

# A line shaped like a table row (`    name  unit  value`, two spaces on the raw page) is one
# when no line rule tried before the rows matches it. Those rules need, at a row's indent, one
# of the starts below (sections, NVTX titles, advice, column titles, chart table names and
# descriptions, the per-gpu `Device` line)
# or anywhere `==` (status tags) or `, ` (the `, Context`/`, Device`/`, Block Size` fields
# that end a kernel header). Lines naming an Nsight Compute path (`sight`) are read for the
# version, so they go through the grammar too. So a row-shaped line holding `, ` but neither
# `==` nor `sight` is a kernel header when the grammar's `kernel_line` regex matches it, else
# the row its shape says (a log's headers are distinct: they skip the per-distinct-text pass).
# tests/test_ncu_text_fast.py checks both agree.
_ROW_SHAPE = {"table_row_line": r"^    [^\s-]", "raw_row_line": r"^  [^\s-]"}
_NOT_ROW_STARTS = ("    Section: ", "    NVTX ", "    OPT", "    INF", "    WRN", "    ERR",
                   "    Metric Name", "    Table Name", "    Table Description", "  Device ",
                   "  Metric Name")
_NOT_HEAD_LITERALS = "==|sight"     # regexes: polars finds literal alternatives fastest
_NOT_ROW_LITERALS = "==|, |sight"
_PREFIX = 12  # characters of a line that decide its shape (held inline by polars)
_DISTINCT_SAMPLE = 64    # `by_distinct` looks at this many first strings
_FEW_CATEGORIES = 4096   # fewer: `Categories.to_series` (a Python loop) costs less than a pass


@lru_cache(maxsize=4)
def kinds(syntax: grammar.Grammar) -> tuple[str, ...]:
    """Line kinds in the grammar's order, then "other": a line's kind code is its index."""
    return (*syntax.alternatives("line"), "other")


def code(syntax: grammar.Grammar, *names: str) -> list[int]:
    return [kinds(syntax).index(name) for name in names]


# -- reading ---------------------------------------------------------------------------------

def read_blocks(doc: Document, size: int | None = None, coded: bool = False) -> Iterator[pl.DataFrame]:
    """The document's lines (`line_no`, `text`), about `size` bytes of whole lines at a time.
    A block is read where the last one ended (a line cut by the block's end is read again at
    the start of the next, so no bytes are copied to glue blocks); `tuning.TEXT_BLOCK_BYTES`
    by default."""
    for lines, _, _ in read_blocks_ahead(doc, size, coded):
        yield lines


def read_blocks_ahead(doc: Document, size: int | None = None, coded: bool = False,
                      prepare: Callable[[pl.DataFrame], object] | None = None) -> Iterator[tuple]:
    """(lines, `Distinct` or None, `prepare(lines)` or None) of each block of `read_blocks`:
    the next block is read, split and given to `prepare` (what its lines tell alone) in a
    thread while the caller works on this one, so both cores work. With `coded`, a block
    whose lines repeat is read as codes of its distinct lines (`Distinct.read`) and not
    prepared."""
    size = size or tuning.TEXT_BLOCK_BYTES
    source = doc.source()
    # A file read as it is holds no U+001F (`Document`): its blocks need no look for one.
    clean = isinstance(source, Path)
    with (open(source, "rb") if clean else source) as fh, ThreadPoolExecutor(max_workers=1) as reader:
        ahead = reader.submit(_read_block, fh, 0, size, 1, coded, clean, prepare)
        while True:
            lines, distinct, prepared, pos, read = ahead.result()
            if lines is None:
                return
            ahead = reader.submit(_read_block, fh, pos, max(read, size), lines["line_no"][-1] + 1,
                                  coded, clean, prepare)
            yield lines, distinct, prepared


def _read_block(fh, pos: int, size: int, first: int, coded: bool, clean: bool,
                prepare: Callable[[pl.DataFrame], object] | None = None) -> tuple:
    """(lines of the block at `pos`, numbered from `first`, their `Distinct` (None: not
    coded), `prepare` of the lines when not coded (else None), where the next block starts,
    the block size to go on with: doubled while one line is longer than a block). `clean`:
    the bytes hold no U+001F."""
    while True:
        fh.seek(pos)
        data = fh.read(size)
        if not data:
            return None, None, None, pos, size
        end = len(data) if len(data) < size else data.rfind(b"\n") + 1
        if end:
            break
        size *= 2
    cut = end < len(data)   # the last line, cut by the block's end, is read again in the next
    # A later block starting with a BOM is split by `lines_of` (see there), never coded.
    coded = coded and (pos == 0 or not data.startswith(codecs.BOM_UTF8))
    distinct = Distinct.read(data, cut, clean) if coded else None
    if distinct is not None:
        return distinct.lines(first), distinct, None, pos + end, size
    lines = lines_of(data, at_start=pos == 0)
    if cut:
        lines = lines.head(lines.height - 1)
    lines = lines.with_columns(pl.col("line_no") + (first - 1))
    return lines, None, None if prepare is None else prepare(lines), pos + end, size


def lines_of(data: bytes, at_start: bool) -> pl.DataFrame:
    """The lines `textio.split_lines` makes of `data`, the start of a document or a part of
    it. split_lines (polars' CSV reader) drops a BOM that starts its input: only the start of
    the document may lose one, so a later block starting with a BOM (a line beginning with
    U+FEFF) is split by polars' line reader, U+001F read as a space as split_lines does."""
    if at_start or not data.startswith(codecs.BOM_UTF8):
        return split_lines(data)
    text = pl.read_lines(data.replace(b"\x1f", b" "), name="text")["text"]
    return pl.DataFrame({"line_no": pl.int_range(1, text.len() + 1, dtype=pl.Int64, eager=True), "text": text})


# -- kinds -----------------------------------------------------------------------------------

def classify(text: pl.Series, syntax: grammar.Grammar) -> tuple[pl.Series, pl.Series]:
    """(kind code of every line, whether the grammar's line rules classified it: the lines
    told by their shape hold no note). Rows are told by the first characters (once per
    distinct start) and the absence of the literals of earlier rules, kernel headers among
    them by `_heads`; every other line goes through `Grammar.classify_lines`, once per
    distinct text."""
    start = pl.Categories.random()
    line_text = pl.col("text")
    shape = pl.DataFrame({"text": text}).select(
        start=line_text.str.slice(0, _PREFIX).cast(pl.Categorical(start)),
        special=line_text.str.contains(_NOT_ROW_LITERALS))
    by_start = _row_kind(start.to_series(), syntax).gather(shape["start"].to_physical())
    fast = pl.select(pl.when(pl.lit(shape["special"])).then(None).otherwise(by_start)).to_series()
    fast = _heads(text, shape["special"] & by_start.is_not_null(), by_start, fast, syntax)
    looked_at = fast.is_null()
    names = kinds(syntax)

    def by_grammar(distinct: pl.Series) -> pl.Series:
        found = syntax.classify_lines(distinct, "line")
        return found.replace_strict(list(names), list(range(len(names))), return_dtype=pl.UInt8)

    return fast.scatter(looked_at.arg_true(), by_distinct(text.filter(looked_at), by_grammar)), looked_at


def _heads(text: pl.Series, row_shaped: pl.Series, by_start: pl.Series, fast: pl.Series,
           syntax: grammar.Grammar) -> pl.Series:
    """`fast` with the kinds of the `row_shaped` lines holding `, ` (and neither `==` nor
    `sight`): `kernel_line` where its regex matches, else the row kind of their start."""
    if not row_shaped.any():
        return fast
    at = row_shaped.arg_true()
    line_text = pl.col("text")
    found = pl.DataFrame({"text": text.gather(at), "row": by_start.gather(at)}).select(
        pl.when(~line_text.str.contains(_NOT_HEAD_LITERALS))
        .then(pl.when(line_text.str.contains(syntax.regex("kernel_line"))).then(pl.lit(code(syntax, "kernel_line")[0], pl.UInt8))
              .otherwise("row"))).to_series()
    return fast.scatter(at, found)


def _row_kind(starts: pl.Series, syntax: grammar.Grammar) -> pl.Series:
    """For the first characters of lines: the row kind they make (null: ask the grammar)."""
    start = pl.col("start")
    kind = pl.lit(None, pl.UInt8)
    for name in reversed(ROWS):
        kind = pl.when(start.str.contains(_ROW_SHAPE[name])).then(pl.lit(code(syntax, name)[0], pl.UInt8)).otherwise(kind)
    maybe_other = pl.any_horizontal([start.str.starts_with(p[:_PREFIX]) for p in _NOT_ROW_STARTS])
    return pl.DataFrame({"start": starts}).select(
        pl.when(maybe_other).then(None).otherwise(kind)).to_series()


def by_distinct(values: pl.Series, derive: Callable[[pl.Series], pl.Series | pl.DataFrame]):
    """`derive` (one value or row per input string, in order) computed once per distinct
    string of `values` and gathered back to every row (categories of their own, freed after);
    straight on `values` when its first strings are all distinct (a detail page's kernel
    headers: hashing them would cost more than it saves)."""
    if values.len() > _DISTINCT_SAMPLE and values.head(_DISTINCT_SAMPLE).n_unique() == _DISTINCT_SAMPLE:
        return derive(values)
    coded = values.cast(pl.Categorical(pl.Categories.random()))
    return derive(category_strings(coded))[coded.to_physical()]


def category_strings(coded: pl.Series, cats: pl.Categories | None = None) -> pl.Series:
    """The strings of a Categorical series' own categories (`cats`, when known), by code:
    `Categories.to_series` without its Python loop over the categories when there are many
    (a block has thousands of distinct headers); with few, that loop costs less."""
    if cats is not None and coded.len() and coded.to_physical().max() < _FEW_CATEGORIES:
        return cats.to_series()
    present = coded.unique().drop_nulls()
    if not present.len():
        return pl.Series(coded.name, [], dtype=pl.String)
    return pl.repeat(None, present.to_physical().max() + 1, dtype=pl.String, eager=True).scatter(
        present.to_physical(), present.cast(pl.String)).rename(coded.name)


@dataclass
class Distinct:
    """A block's distinct lines (`texts`) and each line's index among them (`codes`), when
    its lines repeat enough that working per distinct line pays (a big log printing the same
    kernels' tables over and over). With a `Memo` attached, what is derived of a line is kept
    for the lines of later blocks with the same text."""

    codes: pl.Series
    texts: pl.Series
    memo: Memo | None = None
    ids: pl.Series | None = None   # each distinct text's id in `memo`
    kinds: pl.Series | None = None  # each distinct text's line kind code, once known

    SAMPLE = 32, 8 << 10   # pieces of a block's bytes, their size: the lines sampled
    MOST = 0.25   # at most this share of a sample's lines distinct

    @classmethod
    def read(cls, data: bytes, cut: bool = False, clean: bool = False) -> Distinct | None:
        """The lines of `data` (a block's bytes, split as `textio.split_lines` splits them;
        without the last when `cut`) as codes of their distinct texts, or None when a sample
        of them does not repeat enough. `clean`: `data` is known to hold no U+001F."""
        if not cls._repeats(data):
            return None
        cats = pl.Categories.random()
        source = io.BytesIO(data.replace(b"\x1f", b" ") if not clean and b"\x1f" in data else data)
        lines = pl.read_csv(source, **_LINE_READER, schema={"text": pl.Categorical(cats)})["text"]
        codes = lines.to_physical()   # (`lines` keeps the categories alive until `texts` is made)
        if codes.null_count():  # blank lines ("" in split_lines)
            blank = pl.Series([""], dtype=pl.Categorical(cats))
            codes = codes.fill_null(blank.to_physical()[0])
            lines = pl.concat([lines, blank])
        texts = category_strings(lines, cats)
        del lines
        if cut:
            codes, last = codes.head(codes.len() - 1), codes[-1]
            if not (codes == last).any():   # the cut line's text stands for another: nothing is derived of it
                texts = texts.scatter(last, texts[codes[0]])
        return cls(codes, texts)

    @classmethod
    def _repeats(cls, data: bytes) -> bool:
        """Whether few of the lines in pieces spread over `data` are distinct."""
        pieces, size = cls.SAMPLE
        if len(data) <= pieces * size:
            sample = data.split(b"\n")
        else:
            step = (len(data) - size) // (pieces - 1)
            sample = [line for at in range(0, pieces * step, step)
                      for line in data[at:at + size].split(b"\n")[1:-1]]
        return len(set(sample)) <= cls.MOST * len(sample)

    def lines(self, first: int = 1) -> pl.DataFrame:
        """line_no (from `first`), text: the lines as `textio.split_lines` gives them."""
        return pl.DataFrame({"line_no": pl.int_range(first, first + self.codes.len(), dtype=pl.Int64, eager=True),
                             "text": self.texts.gather(self.codes)})

    def attach(self, memo: Memo) -> None:
        self.memo, self.ids = memo, memo.ids(self.texts)

    def per_line(self, codes: pl.Series, derive: Callable[[pl.Series], pl.DataFrame],
                 key: object = None) -> pl.DataFrame:
        """`derive` (one row per text) computed once per distinct line among `codes` (once
        per log for a `key` when a memo is attached)."""
        found, at = self.found(codes, derive, key)
        return found[at]

    def found(self, codes: pl.Series, derive: Callable[[pl.Series], pl.DataFrame],
              key: object = None) -> tuple[pl.DataFrame, pl.Series]:
        """(`derive` of the distinct lines among `codes`, each code's row in it)."""
        seen = pl.repeat(False, self.texts.len(), eager=True).scatter(codes, True)
        present = seen.arg_true()
        at = pl.repeat(None, self.texts.len(), dtype=pl.UInt32, eager=True).scatter(
            present, pl.int_range(present.len(), dtype=pl.UInt32, eager=True))
        texts = self.texts.gather(present)
        if key is None or self.memo is None:
            return derive(texts), at.gather(codes)
        return self.memo.derive(key, self.ids.gather(present), texts, derive), at.gather(codes)

    def per_text(self, derive: Callable[[pl.Series], pl.DataFrame], key: object) -> pl.DataFrame:
        """`derive` of every distinct text, in order (once per log with a memo attached)."""
        if self.memo is None:
            return derive(self.texts)
        return self.memo.derive(key, self.ids, self.texts, derive)


class Memo:
    """What was derived of distinct lines, by `key` and line text, kept across a log's blocks:
    a log repeating its lines block after block reads each distinct line once. The texts are
    held as categories of their own; past `MOST` of them the memo starts afresh (memory)."""

    MOST = 1 << 20

    def __init__(self):
        self._fresh()

    def _fresh(self) -> None:
        self._cats = pl.Categories.random()
        self._alive = pl.Series([], dtype=pl.Categorical(self._cats))   # keeps the texts
        self._known = 0
        self._slots: dict[object, pl.Series] = {}    # key -> row in `_found` per text id
        self._found: dict[object, pl.DataFrame | pl.Series] = {}

    def ids(self, texts: pl.Series) -> pl.Series:
        """Ids of distinct texts (UInt32), given on first sight."""
        if self._known and self._known + texts.len() > self.MOST:
            self._fresh()
        ids = texts.cast(pl.Categorical(self._cats)).to_physical()
        self._known = max(self._known, ids.max() + 1 if ids.len() else 0)
        return ids

    def derive(self, key: object, ids: pl.Series, texts: pl.Series,
               derive: Callable[[pl.Series], pl.DataFrame]) -> pl.DataFrame:
        """`derive` of `texts` (whose ids are `ids`), computed only for texts not seen before."""
        slots = self._slots.get(key, pl.Series(dtype=pl.UInt32))
        if slots.len() < self._known:
            slots = slots.extend_constant(None, self._known - slots.len())
        at = slots.gather(ids)
        new = at.is_null()
        if new.any() or key not in self._found:
            found = derive(texts.filter(new))
            done = len(self._found[key]) if key in self._found else 0
            slots = slots.scatter(ids.filter(new), pl.int_range(done, done + len(found), dtype=pl.UInt32,
                                                                 eager=True))
            self._found[key] = found if not done else pl.concat([self._found[key], found], how="vertical")
            at = slots.gather(ids)
        self._slots[key] = slots
        return self._found[key][at]
