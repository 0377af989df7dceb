"""Damaged logs (issue 7): flipped, deleted and duplicated bytes and lines, NUL runs, binary
junk, a 3 MB line, mixed line ends and encodings, hostile numbers and units.

A hypothesis mutation test damages real corpus files of every family whose parser is in the
tree and checks that only roofreport's own errors and coded warnings come out: never a raw
exception from `spec.parse`, never one from `ingest.parse_file`, tables in their schema, line
numbers inside the file. "Never a hang" is checked by construction, not by a clock: polars'
Rust regexes are linear, so the only super-linear engine a parser may reach is Lark; every call
of `Grammar.parse`/`Grammar.matches` is watched and must get a bounded text (one structural
line, never a whole file or an unbounded damaged line). Python `re` patterns are checked
statically in test_hostile_static.py.
"""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import lark
import polars as pl
import pytest
from hypothesis import given, strategies as st

from roofreport import grammar
from roofreport.errors import LogWarning, ParseError, RoofreportError
from roofreport.families.spec import ParseResult
from roofreport.pipeline.sniff import sniff
from roofreport.tables import schema
from tests.test_robust_truncation import (
    FAMILIES,
    ROBUST_SETTINGS,
    Sample,
    line_count,
    parse_contained,
    parse_raw,
    samples_or_skip,
    whole,
)

# Lark's Earley parser is super-linear: a 25 KB ncu table row takes 15 s to explain, a 64 KB
# quoted CSV field 25 s. Real structural lines stay under ~41 KB (ncu raw CSV headers); damaged
# lines may be megabytes. grammar.MAX_LARK_CHARS is the bound Grammar.parse enforces.
LARK_MAX_CHARS = grammar.MAX_LARK_CHARS
LONG_LINE = 3 * 1024 * 1024


class LarkInputTooLong(RoofreportError):
    """Raised in place of running Lark on unbounded text (it would hang the suite)."""


@contextmanager
def lark_input_watch():
    """Record every text longer than LARK_MAX_CHARS that reaches Lark itself (through
    Grammar.parse or any direct use), and refuse to run it: the test fails with the sizes."""
    too_long: list[tuple[str, int]] = []
    original = lark.Lark.parse

    def watched(self, text, start=None, *args, **kwargs):
        if len(text) > LARK_MAX_CHARS:
            too_long.append((start, len(text)))
            raise LarkInputTooLong(f"Lark asked to parse {len(text)} characters as {start!r}")
        return original(self, text, start, *args, **kwargs)

    with mock.patch.object(lark.Lark, "parse", watched):
        yield too_long


# -- mutations -------------------------------------------------------------------------------

HOSTILE_TOKENS = [b"nan", b"NaN", b"inf", b"-inf", b"1e999", b"-1e999", b"99999999999999999999999999",
                  b"(!) n/a", b"furlong/fortnight", b"<script>alert(1)</script>", b'"', b"", b"-",
                  b"\xb5s", b"\xff\xfe", b"1,2,3", b"0x7fffffff"]


def _spans(data: bytes, sep: bytes) -> list[tuple[int, int]]:
    out, start = [], 0
    while start <= len(data):
        end = data.find(sep, start)
        end = len(data) if end < 0 else end
        out.append((start, end))
        start = end + 1
    return out


class Damaged(bytes):
    """Damaged bytes that print as what was done to them (hypothesis shows drawn values)."""

    what: list[str]

    def __repr__(self) -> str:
        return f"<{len(self)} bytes: {'; '.join(self.what)}>"


@st.composite
def mutated(draw, raw: bytes) -> Damaged:
    data, done = raw, []
    for _ in range(draw(st.integers(1, 3), label="mutations")):
        op = draw(st.sampled_from(sorted(_OPS)), label="op")
        data, what = _OPS[op](draw, data)
        done.append(what)
    out = Damaged(data)
    out.what = done
    return out


def _at(draw, data: bytes) -> int:
    return draw(st.integers(0, len(data)))


def _flip(draw, data):
    if not data:
        return data, "flip (empty)"
    i = draw(st.integers(0, len(data) - 1))
    b = draw(st.integers(0, 255))
    return data[:i] + bytes([b]) + data[i + 1:], f"byte {i} := {b:#04x}"


def _delete(draw, data):
    i = _at(draw, data)
    n = draw(st.integers(1, 256))
    return data[:i] + data[i + n:], f"delete {n} bytes at {i}"


def _duplicate(draw, data):
    i = _at(draw, data)
    n = draw(st.integers(1, 4096))
    j = _at(draw, data)
    return data[:j] + data[i:i + n] + data[j:], f"copy {n} bytes from {i} to {j}"


def _line_op(draw, data, kind):
    spans = _spans(data, b"\n")
    k = draw(st.integers(0, len(spans) - 1))
    a, b = spans[k]
    line = data[a:b + 1]
    if kind == "delete":
        return data[:a] + data[b + 1:], f"delete line {k + 1}"
    if kind == "duplicate":
        j = spans[draw(st.integers(0, len(spans) - 1))][0]
        return data[:j] + line + (b"" if line.endswith(b"\n") else b"\n") + data[j:], \
            f"copy line {k + 1} before byte {j}"
    other = draw(st.integers(0, len(spans) - 1))
    c, d = spans[other]
    if other == k:
        return data, "swap a line with itself"
    (a, b, la), (c, d, lc) = sorted([(a, b, data[a:b]), (c, d, data[c:d])])
    return data[:a] + lc + data[b:c] + la + data[d:], f"swap lines {k + 1} and {other + 1}"


def _nul_run(draw, data):
    i = _at(draw, data)
    n = draw(st.integers(1, 8192))
    return data[:i] + b"\0" * n + data[i:], f"{n} NUL bytes at {i}"


def _junk(draw, data):
    i = _at(draw, data)
    junk = draw(st.binary(min_size=1, max_size=512))
    return data[:i] + junk + data[i:], f"{len(junk)} bytes of junk at {i}"


def _long_line(draw, data):
    """A line past Lark's bound (the named catalogue below adds a full 3 MB one)."""
    i = _at(draw, data)
    unit = draw(st.sampled_from([b"x", b"ab  ", b"-", b"- ", b"1,", b'"a",', b"  (1, 1, 1)x"]))
    size = 4 * LARK_MAX_CHARS
    return data[:i] + unit * (size // len(unit)) + data[i:], \
        f"{size // 1024} KB line of {unit!r} at {i} (no newline)"


def _line_ends(draw, data):
    spans = _spans(data, b"\n")
    k = draw(st.integers(0, len(spans) - 1))
    end = spans[k][1]
    if end >= len(data):
        return data, "line end at EOF"
    new = draw(st.sampled_from([b"\r\n", b"\r", b"\n\r", b"\r\r\n"]))
    return data[:end] + new + data[end + 1:], f"line {k + 1} ends with {new!r}"


def _token(draw, data):
    spans = [s for s in _spans(data, b" ") if s[1] > s[0]]
    if not spans:
        return data, "no token"
    a, b = spans[draw(st.integers(0, len(spans) - 1))]
    new = draw(st.sampled_from(HOSTILE_TOKENS))
    return data[:a] + new + data[b:], f"token at {a} := {new!r}"


def _utf16(draw, data):
    return b"\xff\xfe" + data.decode("utf-8", "replace").encode("utf-16-le"), "re-encoded UTF-16LE"


_OPS = {
    "flip": _flip, "delete": _delete, "duplicate": _duplicate,
    "delete line": lambda d, x: _line_op(d, x, "delete"),
    "duplicate line": lambda d, x: _line_op(d, x, "duplicate"),
    "swap lines": lambda d, x: _line_op(d, x, "swap"),
    "nul run": _nul_run, "junk": _junk, "long line": _long_line, "line ends": _line_ends,
    "token": _token, "utf16": _utf16,
}


# -- what may come out -----------------------------------------------------------------------

def check_result_shape(result: ParseResult, n_lines: int, where: str, display: str | None) -> None:
    """Coded warnings, a ParseError naming the file, tables in their schema, lines in range."""
    for w in result.warnings:
        assert isinstance(w, LogWarning), f"{where}: warning {w!r} is not a LogWarning"
        assert "." in w.code and w.code == w.code.strip(), f"{where}: warning code {w.code!r}"
        assert w.line is None or 1 <= w.line <= n_lines + 1, \
            f"{where}: warning {w.code} at line {w.line} of a {n_lines}-line file"
    if result.error is not None:
        assert isinstance(result.error, ParseError), f"{where}: error {result.error!r}"
        if display is not None:
            assert result.error.describe().startswith(display), \
                f"{where}: error does not name the file: {result.error.describe()[:200]}"
    for table, frame in result.tables.items():
        assert table in schema.PARSED_TABLES, f"{where}: unknown table {table!r}"
        assert frame.schema == pl.Schema(schema.TABLES[table]), f"{where}: {table} schema"
        lines = frame["source_line"]
        assert lines.null_count() == 0, f"{where}: {table} rows without source_line"
        if frame.height:
            assert 1 <= lines.min() and lines.max() <= n_lines + 1, \
                f"{where}: {table} source_line {lines.min()}..{lines.max()} of {n_lines} lines"


def bad_floats(result: ParseResult) -> list[str]:
    """Float cells holding NaN or ±inf: unknown must be null, and a number that overflowed
    must be reported, not summed into a report."""
    out = []
    for table, frame in result.tables.items():
        for col, dtype in frame.schema.items():
            if dtype == pl.Float64 and frame.height:
                bad = frame.filter(pl.col(col).is_nan() | pl.col(col).is_infinite())
                out += [f"{table}.{col}={v} (line {ln})"
                        for v, ln in zip(bad[col].head(3), bad["source_line"].head(3))]
    return out


def parse_damaged(sample: Sample, data: bytes, where: str):
    """Both ways, with Lark watched. Returns (sniffed variant or None, direct, contained)."""
    with tempfile.TemporaryDirectory() as tmp, lark_input_watch() as too_long:
        path = Path(tmp) / sample.path.name
        path.write_bytes(data)
        sn = sniff(path, display=where)
        as_sniffed = Sample(sample.path, sample.spec_name, sn.variant) \
            if sn.spec is not None and sn.spec.name == sample.spec_name else sample
        direct = parse_raw(as_sniffed, path, where)
        contained = parse_contained(as_sniffed, path, where)
    assert not too_long, f"{where}: Lark was handed unbounded input (rule, characters): " \
                         f"{too_long[:3]} - super-linear: a long damaged line hangs the parse"
    return direct, contained


# -- the mutation property -------------------------------------------------------------------

@pytest.mark.corpus
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_damaged_logs_give_only_roofreport_errors_and_warnings(family):
    samples = samples_or_skip(family)

    @ROBUST_SETTINGS
    @given(data=st.data())
    def damage(data):
        sample = data.draw(st.sampled_from(samples), label="file")
        raw = sample.path.read_bytes()
        damaged = data.draw(mutated(raw), label="damage")
        where = f"{sample.rel} with {'; '.join(damaged.what)}"
        direct, contained = parse_damaged(sample, damaged, where)
        n_lines = line_count(damaged, damaged)
        if isinstance(direct, ParseResult):
            check_result_shape(direct, n_lines, where, None)
        check_result_shape(contained, n_lines, where, where)

    damage()


# -- a catalogue of named damages ------------------------------------------------------------

def _row_lines(result: ParseResult) -> list[int]:
    return sorted({ln for f in result.tables.values() for ln in f["source_line"].to_list()})


def _replace_line(raw: bytes, line_no: int, new: bytes) -> bytes:
    lines = raw.split(b"\n")
    lines[line_no - 1] = new
    return b"\n".join(lines)


def _middle_row_line(sample: Sample) -> int:
    lines = _row_lines(whole(sample))
    if not lines:
        pytest.skip(f"{sample.rel}: no rows to damage")
    return lines[len(lines) // 2]


def _kept_except(result: ParseResult, full: ParseResult, damaged_line: int, where: str) -> None:
    """Every row of the whole file not from the damaged line is still there, unchanged."""
    from tests.test_robust_truncation import rows_by_line
    for table in full.tables:
        want = [r for ln, r in rows_by_line(full, table) if ln != damaged_line]
        got = set(r for ln, r in rows_by_line(result, table))
        lost = [r for r in want if r not in got]
        assert not lost, f"{where}: {len(lost)} {table} rows away from the damage were lost, " \
                         f"e.g. {repr(lost[0])[:300]}"


def _rows_at(result: ParseResult, line_no: int) -> set[tuple[str, int]]:
    """(table, row index) stand-ins for the rows a line gave: their count per table."""
    return {(t, i) for t, f in result.tables.items()
            for i in range(f.filter(pl.col("source_line") == line_no).height)}


def _names_line(result: ParseResult, line_no: int) -> bool:
    lines = {w.line for w in result.warnings}
    if result.error is not None:
        lines.add(result.error.line)
    return line_no in lines


SAME_LENGTH_DAMAGES = {
    # Damage inside one line (no line break added or removed): line numbers stay put.
    "nul run": lambda text: text[:len(text) // 2] + b"\0" * 4096 + text[len(text) // 2:],
    "binary junk": lambda text: text[:len(text) // 2] + bytes(range(1, 10)) + b"\xff\xfe\x80\x00" * 64
    + text[len(text) // 2:],
    "3 MB line": lambda text: text + b" " + b"ab  " * (LONG_LINE // 4),
    "latin-1 byte": lambda text: text.replace(b" ", b" \xb5", 1),
}


def _damage_cases():
    return [(family, name) for family in sorted(FAMILIES) for name in SAME_LENGTH_DAMAGES]


@pytest.mark.corpus
@pytest.mark.parametrize(("family", "damage"), _damage_cases())
def test_damage_in_one_line_is_reported_there_and_the_rest_kept(family, damage):
    failures = []
    for sample in samples_or_skip(family)[:3]:
        line_no = _middle_row_line(sample)
        raw = sample.path.read_bytes()
        if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            continue  # byte surgery on UTF-16 text is another test's business
        text = raw.split(b"\n")[line_no - 1]
        damaged = _replace_line(raw, line_no, SAME_LENGTH_DAMAGES[damage](text))
        where = f"{sample.rel} with {damage} in line {line_no}"
        direct, contained = parse_damaged(sample, damaged, where)
        full = whole(sample)
        try:
            _kept_except(contained, full, line_no, where)
            lost_here = _rows_at(full, line_no) - _rows_at(contained, line_no)
            assert not lost_here or _names_line(contained, line_no), \
                f"{where}: the rows of line {line_no} were dropped without a warning or error " \
                f"naming that line ({len(lost_here)} rows)"
            check_result_shape(contained, line_count(damaged, damaged), where, where)
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)


NUMBER_DAMAGES = [b"1e999", b"nan", b"inf", b"99999999999999999999999999999999999999"]


@pytest.mark.corpus
@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("number", NUMBER_DAMAGES, ids=lambda b: b.decode())
def test_overflowing_and_nan_numbers_become_null_with_a_warning(family, number):
    """A number that reads nan/inf or overflows a float is never summed into the report: the
    cell is null (unknown), not NaN or infinity."""
    import re
    failures = []
    for sample in samples_or_skip(family)[:3]:
        line_no = _middle_row_line(sample)
        raw = sample.path.read_bytes()
        if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            continue
        text = raw.split(b"\n")[line_no - 1]
        found = list(re.finditer(rb"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", text))
        if not found:
            continue
        m = found[-1]  # the value column of most layouts is the last number
        damaged = _replace_line(raw, line_no, text[:m.start()] + number + text[m.end():])
        where = f"{sample.rel} line {line_no}: {m.group().decode()} -> {number.decode()}"
        _, result = parse_damaged(sample, damaged, where)
        bad = bad_floats(result)
        if bad:
            failures.append(f"{where}: NaN/inf kept in {bad}")
    assert not failures, "\n".join(failures)
