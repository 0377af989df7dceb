"""The lines of an Nsight Compute text log, for `ncu_text.py`: read a block of whole lines at
a time, and each line's kind.

Kinds come from the grammar's `line` rules (`grammars/ncu.lark`), tried in their order. Table
rows, most of a big log, are told cheaply: a line shaped like a row is one when it holds none
of the starts and literals the rules tried before the rows need. Every other line goes through
`Grammar.classify_lines`, once per distinct text. A block whose lines repeat (a big log printing
the same kernels' tables over and over) is worked per distinct line (`Distinct`).
"""

from __future__ import annotations

import codecs
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

import polars as pl

from roofreport import grammar
from roofreport.textio import Document, split_lines

BLOCK_BYTES = 31 << 20   # under glibc's 32 MiB mmap threshold: a block's bytes reuse the last one's memory
ROWS = ("table_row_line", "raw_row_line")

# A line shaped like a table row (`    name  unit  value`, two spaces on the raw page) is one
# when no line rule tried before the rows matches it. Those rules need, at a row's indent, one
# of the starts below (sections, NVTX titles, advice, column titles, the per-gpu `Device` line)
# or anywhere `==` (status tags) or `, ` (the `, Context`/`, Device`/`, Block Size` fields
# that end a kernel header). Lines naming an Nsight Compute path (`sight`) are read for the
# version, so they go through the grammar too. tests/test_ncu_text_fast.py checks both agree.
_ROW_SHAPE = {"table_row_line": r"^    [^\s-]", "raw_row_line": r"^  [^\s-]"}
_NOT_ROW_STARTS = ("    Section: ", "    NVTX ", "    OPT", "    INF", "    WRN", "    ERR",
                   "    Metric Name", "  Device ", "  Metric Name")
_NOT_ROW_LITERALS = "==|, |sight"   # a regex: polars finds literal alternatives fastest
_PREFIX = 12  # characters of a line that decide its shape (held inline by polars)


@lru_cache(maxsize=4)
def kinds(g: grammar.Grammar) -> tuple[str, ...]:
    """Line kinds in the grammar's order, then "other": a line's kind code is its index."""
    return (*g.alternatives("line"), "other")


def code(g: grammar.Grammar, *names: str) -> list[int]:
    return [kinds(g).index(name) for name in names]


# -- reading ---------------------------------------------------------------------------------

def read_blocks(doc: Document, size: int | None = None) -> Iterator[pl.DataFrame]:
    """The document's lines (`line_no`, `text`), about `size` bytes of whole lines at a time.
    A block is read where the last one ended (a line cut by the block's end is read again at
    the start of the next, so no bytes are copied to glue blocks); `BLOCK_BYTES` by default."""
    for lines, _ in read_blocks_ahead(doc, size, lambda text: None):
        yield lines


def read_blocks_ahead(doc: Document, size: int | None = None,
                      prepare: Callable[[pl.Series], object] = lambda text: None) -> Iterator[tuple]:
    """(lines, `prepare(text)`) of each block of `read_blocks`: the next block is read, split
    and prepared in a thread while the caller works on this one."""
    size = size or BLOCK_BYTES
    source = doc.source()
    with (open(source, "rb") if isinstance(source, Path) else source) as fh, \
            ThreadPoolExecutor(max_workers=1) as reader:
        first, ahead = 1, reader.submit(_read_block, fh, 0, size, prepare)
        while True:
            lines, prepared, pos, size = ahead.result()
            if lines is None:
                return
            ahead = reader.submit(_read_block, fh, pos, size, prepare)
            yield lines.with_columns(pl.col("line_no") + (first - 1)), prepared
            first += lines.height


def _read_block(fh, pos: int, size: int, prepare: Callable[[pl.Series], object]) -> tuple:
    """(lines of the block at `pos`, `prepare` of their text, where the next block starts,
    the block size to go on with: doubled while one line is longer than a block)."""
    while True:
        fh.seek(pos)
        data = fh.read(size)
        if not data:
            return None, None, pos, size
        end = len(data) if len(data) < size else data.rfind(b"\n") + 1
        if end:
            break
        size *= 2
    lines = lines_of(data, at_start=pos == 0)
    if end < len(data):
        lines = lines.head(lines.height - 1)
    return lines, prepare(lines["text"]), pos + end, size


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

def classify(text: pl.Series, g: grammar.Grammar) -> tuple[pl.Series, pl.Series]:
    """(kind code of every line, whether the grammar classified it). Rows are told by the
    first characters (once per distinct start) and the absence of the literals of earlier
    rules; every other line goes through `Grammar.classify_lines`, once per distinct text."""
    start = pl.Categories.random()
    t = pl.col("t")
    shape = pl.DataFrame({"t": text}).select(
        start=t.str.slice(0, _PREFIX).cast(pl.Categorical(start)),
        special=t.str.contains(_NOT_ROW_LITERALS))
    by_start = _row_kind(start.to_series(), g).gather(shape["start"].to_physical())
    fast = pl.select(pl.when(pl.lit(shape["special"])).then(None).otherwise(by_start)).to_series()
    looked_at = fast.is_null()
    names = kinds(g)

    def by_grammar(distinct: pl.Series) -> pl.Series:
        found = g.classify_lines(distinct, "line")
        return found.replace_strict(list(names), list(range(len(names))), return_dtype=pl.UInt8)

    return fast.scatter(looked_at.arg_true(), by_distinct(text.filter(looked_at), by_grammar)), looked_at


def _row_kind(starts: pl.Series, g: grammar.Grammar) -> pl.Series:
    """For the first characters of lines: the row kind they make (null: ask the grammar)."""
    s = pl.col("s")
    kind = pl.lit(None, pl.UInt8)
    for name in reversed(ROWS):
        kind = pl.when(s.str.contains(_ROW_SHAPE[name])).then(pl.lit(code(g, name)[0], pl.UInt8)).otherwise(kind)
    maybe_other = pl.any_horizontal([s.str.starts_with(p[:_PREFIX]) for p in _NOT_ROW_STARTS])
    return pl.DataFrame({"s": starts}).select(pl.when(maybe_other).then(None).otherwise(kind)).to_series()


def by_distinct(values: pl.Series, derive: Callable[[pl.Series], pl.Series | pl.DataFrame]):
    """`derive` (one value or row per input string, in order) computed once per distinct
    string of `values` and gathered back to every row (categories of their own, freed after)."""
    cats = pl.Categories.random()
    coded = values.cast(pl.Categorical(cats))
    return derive(cats.to_series())[coded.to_physical()]


@dataclass
class Distinct:
    """A block's distinct lines (`texts`) and each line's index among them (`codes`), when
    its lines repeat enough that working per distinct line pays (a big log printing the same
    kernels' tables over and over)."""

    codes: pl.Series
    texts: pl.Series

    SAMPLE = 4096
    MOST = 0.25   # at most this share of a sample's lines distinct

    @classmethod
    def of(cls, text: pl.Series) -> "Distinct | None":
        sample = text.gather_every(max(1, text.len() // cls.SAMPLE))
        if sample.n_unique() > cls.MOST * sample.len():
            return None
        cats = pl.Categories.random()
        coded = text.cast(pl.Categorical(cats))
        return cls(coded.to_physical(), cats.to_series())

    def per_line(self, codes: pl.Series, derive: Callable[[pl.Series], pl.DataFrame]) -> pl.DataFrame:
        """`derive` (one row per text) computed once per distinct line among `codes`."""
        seen = pl.repeat(False, self.texts.len(), eager=True).scatter(codes, True)
        present = seen.arg_true()
        at = pl.repeat(None, self.texts.len(), dtype=pl.UInt32, eager=True).scatter(
            present, pl.int_range(present.len(), dtype=pl.UInt32, eager=True))
        return derive(self.texts.gather(present))[at.gather(codes)]
