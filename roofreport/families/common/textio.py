"""Reading log files: encodings (UTF-8 with/without BOM, UTF-16 from PowerShell), line ends
(CRLF, CR), a bounded head for sniffing, and the whole file as a polars frame of lines.

Everything downstream sees UTF-8 text with `\n` line ends; line numbers are 1-based and count
every line break the file had (a lone CR counts as a break, as editors show it).

Damage is repaired here, once, and reported as coded warnings on the Document: NUL runs (two
jobs writing one log, unflushed blocks after a crash) are removed, and bytes that are not UTF-8
(a log re-saved by a Windows spreadsheet, a latin-1 tail appended) are read as Windows-1252.
Only regular files are opened: a FIFO or device in a log folder must not block or stream.
"""

from __future__ import annotations

import codecs
import io
import mmap
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import polars as pl

from roofreport.errors import LogWarning
from roofreport.families.common import limits

HEAD_BYTES = 64 * 1024

_BOMS = (
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def detect_encoding(head: bytes) -> str:
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    sample = head[:4096]
    if len(sample) >= 64:
        # UTF-16 without BOM: every other byte NUL (ASCII text).
        odd_nul = sample[1::2].count(0) / max(1, len(sample[1::2]))
        even_nul = sample[0::2].count(0) / max(1, len(sample[0::2]))
        if odd_nul > 0.9 and even_nul < 0.1:
            return "utf-16-le"
        if even_nul > 0.9 and odd_nul < 0.1:
            return "utf-16-be"
    return "utf-8"


def to_utf8(raw: bytes, encoding: str) -> bytes:
    """Normalised UTF-8 bytes: BOM removed, CRLF/CR -> LF. Undecodable bytes become U+FFFD."""
    if encoding == "utf-8-sig":
        raw = raw[3:]
    elif encoding.startswith("utf-16"):
        bom = 2 if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else 0
        body = raw[bom:]
        if len(body) % 2:
            body = body[:-1]  # a file cut mid-character
        raw = body.decode(encoding, errors="replace").encode("utf-8")
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return raw


def is_binary(head: bytes, encoding: str) -> bool:
    """A file whose head is mostly not text: control bytes, or bytes that are not UTF-8.
    Text with a few NUL runs (two jobs overwriting one log) still counts as text."""
    if encoding.startswith("utf-16") or not head:
        return False
    sample = head[:8192].replace(b"\0", b"")
    if not sample:
        return True
    control = sum(1 for b in sample if b < 0x20 and b not in (9, 10, 12, 13, 27))
    undecodable = sample.decode("utf-8", errors="replace").count("\ufffd")
    return (control + undecodable) / len(sample) > 0.10


@dataclass
class Head:
    """A bounded peek at a file, decoded, for sniffing."""

    path: Path
    raw: bytes
    encoding: str
    text: str
    size: int
    truncated: bool

    @property
    def lines(self) -> list[str]:
        lines = self.text.split("\n")
        if self.truncated and lines:
            lines = lines[:-1]  # the last line may be cut by the head limit
        return lines

    @property
    def binary(self) -> bool:
        return is_binary(self.raw, self.encoding)


def _regular_file(path: Path) -> os.stat_result:
    """The file's stat; OSError for anything but a regular file (a FIFO would block forever)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"not a regular file: {path}")
    return st


def read_head(path: Path, limit: int = HEAD_BYTES, offset: int = 0) -> Head:
    """The first `limit` bytes of the file, or of its part from byte `offset` on (a line
    start: where a log inside a longer file begins, `scan_marks`)."""
    size = _regular_file(path).st_size
    with open(path, "rb") as fh:
        fh.seek(offset)
        raw = fh.read(limit)
    encoding = detect_encoding(raw) if not offset else "utf-8"
    # NUL runs are removed as Document.open removes them, so sniffing sees the same lines.
    text = to_utf8(raw, encoding).replace(b"\0", b"").decode("utf-8", errors="replace")
    return Head(path=path, raw=raw, encoding=encoding, text=text, size=size,
                truncated=size > offset + limit)


# -- a log inside a longer text file ---------------------------------------------------------

# How far into a text file the scan for a profiler's output goes (`scan_marks`): the first
# 64 MiB, and the last 16 MiB of a longer file (a program prints its profile when it ends).
# The scan reads 1 MiB at a time (~0.1 s per 32 MiB), never the file whole.
SCAN_BYTES = 64 << 20
SCAN_TAIL_BYTES = 16 << 20
_SCAN_CHUNK = 1 << 20


def scan_marks(path: Path, marks: tuple[str, ...], size: int) -> Iterator[tuple[int, str]]:
    """(byte offset of the line's start, the mark) for each line holding one of `marks`
    (literal texts), in order, in the file's first `SCAN_BYTES` and last `SCAN_TAIL_BYTES`
    bytes, read a chunk at a time. The scan stops at a chunk that is not text (a binary file
    has no log lines)."""
    if not marks:
        return
    found = re.compile(b"|".join(re.escape(mark.encode()) for mark in marks))
    overlap = max(len(mark.encode()) for mark in marks)
    regions = [(0, min(size, SCAN_BYTES))]
    if size > SCAN_BYTES:
        regions.append((max(SCAN_BYTES, size - SCAN_TAIL_BYTES), size))
    with open(path, "rb") as fh:
        for begin, end in regions:
            for start in range(begin, end, _SCAN_CHUNK):
                fh.seek(start)
                chunk = fh.read(min(_SCAN_CHUNK, end - start) + overlap)
                if is_binary(chunk, "utf-8"):
                    return
                # polars' Aho-Corasick tells which chunks hold a mark (~300 MB/s); re finds where.
                if not pl.Series([chunk.decode("utf-8", errors="replace")]).str.contains_any(list(marks)).item():
                    continue
                for hit in found.finditer(chunk):
                    if hit.start() < _SCAN_CHUNK:   # (the overlap is the next chunk's)
                        yield _line_start(fh, start + hit.start()), hit.group().decode()


def _line_start(fh: BinaryIO, offset: int) -> int:
    """The offset of the start of the line holding byte `offset` (after the LF or CR before
    it), looked for backwards a block at a time."""
    while offset > 0:
        begin = max(0, offset - 4096)
        fh.seek(begin)
        block = fh.read(offset - begin)
        breaks = max(block.rfind(b"\n"), block.rfind(b"\r"))
        if breaks >= 0:
            return begin + breaks + 1
        offset = begin
    return 0


def count_lines_before(path: Path, offset: int) -> int:
    """Line breaks in the file's first `offset` bytes, counted as `Document` counts them (CRLF,
    LF and a lone CR each end a line), a chunk at a time."""
    count, last = 0, b""
    with open(path, "rb") as fh:
        left = offset
        while left > 0 and (chunk := fh.read(min(16 << 20, left))):
            left -= len(chunk)
            count += chunk.count(b"\n") + chunk.count(b"\r") - chunk.count(b"\r\n")
            count -= last == b"\r" and chunk.startswith(b"\n")   # a CRLF cut by the chunks
            last = chunk[-1:]
    return count


@dataclass
class Document:
    """A whole log, normalised to UTF-8 with LF line ends.

    A file that needs no normalising (UTF-8 without BOM, no CR, NUL or U+001F, valid UTF-8) is
    not kept in memory: `data` reads it on first use, and `lines()` and `source()` let polars
    read the file itself, so a big log is not held twice (bytes and lines) while it is parsed."""

    path: Path
    display: str
    encoding: str
    _data: bytes | None = field(default=None, repr=False)
    _lines: pl.DataFrame | None = field(default=None, repr=False)
    warnings: list[LogWarning] = field(default_factory=list)   # damage repaired on reading

    @classmethod
    def open(cls, path: Path, display: str | None = None, start: int = 0) -> Document:
        """The file as a Document, its bytes checked first (`_as_is`: 0.02-0.04 s of CPU for
        200 MB). Checking them in a thread while the file is parsed, and parsing again when
        they need repair, was measured to earn under 3 % of a big file's parse: not kept.

        With `start`, the file's part from that byte on (a line start: a log inside a longer
        text file, UTF-8), held in memory; its line 1 is the file's line after the skipped ones."""
        _regular_file(path)
        line_limit = limits.active().line_bytes
        with open(path, "rb") as fh:
            fh.seek(start)
            encoding = detect_encoding(fh.read(HEAD_BYTES)) if not start else "utf-8"
            fh.seek(start)
            if encoding == "utf-8" and not start and _as_is(fh, line_limit=line_limit):
                return cls(path=path, display=display or str(path), encoding=encoding)
            fh.seek(start)
            # Only a file that needs repair (or holds a line past the limit) is held in memory
            # (whole: the warnings name lines), its long lines cut as it is read.
            raw, cut = cut_long_lines(fh, line_limit) if encoding.startswith("utf-8") else (fh.read(), [])
        data, warnings = repair(to_utf8(raw, encoding))
        return cls(path=path, display=display or str(path), encoding=encoding, _data=data,
                   warnings=cut + warnings)

    @classmethod
    def from_text(cls, text: str, display: str = "<text>") -> Document:
        data, warnings = repair(to_utf8(text.encode("utf-8"), "utf-8"))
        return cls(path=Path(display), display=display, encoding="utf-8", _data=data,
                   warnings=warnings)

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = self.path.read_bytes()   # a file read as it is (see the class)
        return self._data

    def head(self, limit: int) -> bytes:
        """The first `limit` bytes of `data`, without reading the whole file."""
        if self._data is not None:
            return self._data[:limit]
        with open(self.path, "rb") as fh:
            return fh.read(limit)

    def tail(self, limit: int) -> bytes:
        """The last `limit` bytes of `data` (all when shorter), without reading the whole file."""
        if self._data is not None:
            return self._data[max(0, len(self._data) - limit):]
        with open(self.path, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - limit))
            return fh.read()

    def line_count(self) -> int:
        """Lines of `data`: its line breaks, plus one for a last line without a break (and 1
        for an empty document). A file read as it is is counted in chunks, not held."""
        if self._data is not None:
            return self._data.count(b"\n") + (not self._data.endswith(b"\n"))
        count, last = 0, b""
        with open(self.path, "rb") as fh:
            while chunk := fh.read(16 << 20):
                count, last = count + chunk.count(b"\n"), chunk[-1:]
        return count + (last != b"\n")

    def size(self) -> int:
        """Bytes of `data` (the file's size when it is read as it is)."""
        return len(self._data) if self._data is not None else self.path.stat().st_size

    def byte_ranges(self, spans: list[tuple[int, int]]) -> list[bytes]:
        """The bytes [start, end) of `data` for each span, read through a map of the file when
        it is not held: a few scattered lines or a big piece cost no read of the whole."""
        if self._data is not None:
            return [self._data[start:end] for start, end in spans]
        if not spans:
            return []
        with open(self.path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return [mapped[start:end] for start, end in spans]

    def source(self) -> Path | io.BytesIO:
        """What `pl.read_csv` reads `data` from: the file itself when it is read as it is."""
        return self.path if self._data is None else io.BytesIO(self._data)

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    def lines(self) -> pl.DataFrame:
        """Columns `line_no` (1-based, Int64) and `text` (String, "" for blank lines)."""
        if self._lines is None:
            source = self._data if self._data is not None else self.path
            small = _small_lines(source)
            self._lines = small if small is not None else split_lines(source)
        return self._lines

    def scan_lines(self) -> pl.LazyFrame:
        """`lines()` as a lazy frame read from the file (or the normalised bytes): a streaming
        query over it keeps only the lines and columns it selects, never the whole text."""
        return scan_split_lines(self._data if self._data is not None else self.path)


def _as_is(fh: BinaryIO, chunk: int = 1 << 20, line_limit: int = 1 << 20) -> bool:
    """The file's bytes need no normalising (repair, line ends, the line splitter's separator)
    and hold no line longer than `line_limit`, checked chunk by chunk into one buffer: a big
    log is neither held nor copied whole. A chunk small enough to stay in a core's L2 cache
    through its four scans (three bytes, ASCII) makes the check 40 % cheaper than 8 MB chunks
    read from memory four times (0.12 -> 0.07 s at 400 MB). A chunk no longer than the line
    limit holds no whole line past it: only the bytes since the last line break are counted
    (two more scans that stop at the chunk's first and last break)."""
    try:  # a small file gets a small buffer: zeroing 8 MB costs more than reading a small log
        chunk = min(chunk, line_limit, os.fstat(fh.fileno()).st_size + 1)
    except OSError:  # not a file (io.UnsupportedOperation)
        chunk = min(chunk, line_limit)
    buffer = bytearray(chunk)
    decoder = codecs.getincrementaldecoder("utf-8")()
    line = 0   # bytes of the line the last chunk ended in
    while size := fh.readinto(buffer):
        data = buffer if size == chunk else memoryview(buffer)[:size].tobytes()
        if b"\r" in data or b"\0" in data or b"\x1f" in data:
            return False
        first = data.find(b"\n")
        if line + (size if first < 0 else first) > line_limit:
            return False
        line = line + size if first < 0 else size - data.rfind(b"\n") - 1
        if data.isascii() and not decoder.getstate()[0]:
            continue  # ASCII after a complete character: valid UTF-8, nothing to decode
        try:
            decoder.decode(data)
        except UnicodeDecodeError:
            return False
    try:
        decoder.decode(b"", final=True)  # a character cut by the end of the file
    except UnicodeDecodeError:
        return False
    return True


# -- lines past the limit -------------------------------------------------------------------

_CUT_WARNINGS = 20


def cut_long_lines(fh: BinaryIO, limit: int) -> tuple[bytes, list[LogWarning]]:
    """The rest of the file with every line longer than `limit` bytes cut to its first `limit`
    bytes (at a UTF-8 character's start), read a chunk at a time, and a warning naming each
    such line. A chunk holds no whole line past the limit (it is no longer than the limit):
    only the bytes around its first and last line break (LF or CR) are looked at."""
    out, cuts = bytearray(), []
    chunk_size = min(1 << 20, limit)
    line_no, since, cutting, last = 1, 0, False, b""
    while chunk := fh.read(chunk_size):
        first = _first_break(chunk)
        head = len(chunk) if first < 0 else first
        keep = max(0, min(head, limit - since))
        if keep < head:
            keep, cutting = _char_start(chunk, keep), True
        out += chunk[:keep]
        since += head
        if first >= 0:
            if cutting:
                cuts.append((line_no, since))
                cutting = False
            tail = max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1
            out += chunk[first:]
            line_no += _breaks(chunk[:tail]) - (last == b"\r" and chunk.startswith(b"\n"))
            since = len(chunk) - tail
        last = chunk[-1:]
    if cutting:
        cuts.append((line_no, since))
    return bytes(out), _cut_warnings(cuts, limit)


def _first_break(chunk: bytes) -> int:
    found = [at for at in (chunk.find(b"\n"), chunk.find(b"\r")) if at >= 0]
    return min(found) if found else -1


def _breaks(data: bytes) -> int:
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def _char_start(data: bytes, at: int) -> int:
    """`at`, moved back to the start of the UTF-8 character it falls in."""
    while 0 < at < len(data) and data[at] & 0xC0 == 0x80:
        at -= 1
    return at


def _cut_warnings(cuts: list[tuple[int, int]], limit: int) -> list[LogWarning]:
    warnings = [LogWarning("input.long-line", f"line {line_no} is {length:,} bytes long: only its first "
                           f"{limit:,} bytes are read (the line limit, --max-line)", line=line_no)
                for line_no, length in cuts[:_CUT_WARNINGS]]
    if len(cuts) > _CUT_WARNINGS:
        warnings.append(LogWarning("input.long-line", f"{len(cuts) - _CUT_WARNINGS} more lines past "
                                   f"{limit:,} bytes were cut"))
    return warnings


# -- damage ----------------------------------------------------------------------------------

def repair(data: bytes) -> tuple[bytes, list[LogWarning]]:
    """Normalised UTF-8 bytes with NUL runs removed and non-UTF-8 bytes read as Windows-1252,
    and a warning for each repair naming the first line it touched."""
    warnings = []
    if b"\0" in data:
        warnings.append(_nul_warning(data))
        data = data.replace(b"\0", b"")
    bad_at = _first_invalid_utf8(data)
    if bad_at is not None:
        line = data.count(b"\n", 0, bad_at) + 1
        data = data.decode("utf-8", errors=_CP1252_FALLBACK).encode("utf-8")
        warnings.append(LogWarning(
            "input.not-utf8", f"bytes that are not UTF-8 (first on line {line}) were read as "
            "Windows-1252: the log was re-encoded or mixes encodings", line=line))
    return data, warnings


def _nul_warning(data: bytes) -> LogWarning:
    first, last = data.find(b"\0"), data.rfind(b"\0")
    line, last_line = data.count(b"\n", 0, first) + 1, data.count(b"\n", 0, last) + 1
    where = f"line {line}" if line == last_line else f"lines {line}-{last_line}"
    return LogWarning("input.nul-bytes", f"{data.count(0)} NUL bytes removed ({where}): two jobs "
                      "wrote this log at once or it was not flushed; text there may be damaged",
                      line=line)


def _first_invalid_utf8(data: bytes, chunk: int = 16 << 20) -> int | None:
    """Offset of the first byte that is not UTF-8, checked in chunks (no whole-file string)."""
    if data.isascii():
        return None
    decoder = codecs.getincrementaldecoder("utf-8")()
    for start in range(0, len(data), chunk):
        try:
            decoder.decode(data[start:start + chunk], final=start + chunk >= len(data))
        except UnicodeDecodeError as exc:
            return start + exc.start
    return None


def _cp1252_fallback(exc: UnicodeDecodeError) -> tuple[str, int]:
    bad = exc.object[exc.start:exc.end]
    return bad.decode("cp1252", errors="replace"), exc.end


_CP1252_FALLBACK = "roofreport-cp1252"
codecs.register_error(_CP1252_FALLBACK, _cp1252_fallback)


# One column, no quoting: polars' CSV reader as a line splitter (`split_lines`, `scan_split_lines`).
_LINE_READER = dict(has_header=False, separator="\x1f", quote_char=None, new_columns=["text"],
                    infer_schema=False, truncate_ragged_lines=True, encoding="utf8-lossy",
                    empty_string_is_null=False)


def _line_source(data: bytes | Path) -> Path | io.BytesIO | None:
    """What the line splitter reads (None for an empty input)."""
    if isinstance(data, Path):
        return data if data.stat().st_size else None
    if not data:
        return None
    # The reader's field separator must not occur in the text.
    return io.BytesIO(data.replace(b"\x1f", b" ") if b"\x1f" in data else data)


# Up to this size a log's lines are split by Python (`_small_lines`): polars' CSV reader costs a
# fixed ~0.8 ms a file, Python's split ~0.15 ms on a course log of 5-50 KB.
_SMALL_BYTES = 64 * 1024


def _small_lines(source: bytes | Path) -> pl.DataFrame | None:
    """`split_lines` of a small input by Python's `str.split`, or None (then `split_lines`): only
    valid UTF-8 without CR or a leading BOM, where the two split alike (polars' reader would drop
    a CR before a line break and a BOM at the start); U+001F read as a space, as there.
    tests/test_small_lines.py compares them."""
    if isinstance(source, Path):
        try:
            if source.stat().st_size > _SMALL_BYTES:
                return None
            source = source.read_bytes()
        except OSError:
            return None
    if not source or len(source) > _SMALL_BYTES or b"\r" in source or source.startswith(codecs.BOM_UTF8):
        return None
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError:
        return None
    parts = text.replace("\x1f", " ").split("\n")
    if parts[-1] == "":
        parts.pop()
    return pl.DataFrame({"line_no": pl.int_range(1, len(parts) + 1, dtype=pl.Int64, eager=True),
                         "text": pl.Series(parts, dtype=pl.String)})


def split_lines(data: bytes | Path) -> pl.DataFrame:
    """Split UTF-8 bytes (or a file of them holding no U+001F) into lines with polars' CSV
    reader (one column, no quoting): the fastest line splitter at hand, and the baseline the
    benchmark compares against."""
    source = _line_source(data)
    if source is None:
        return pl.DataFrame(schema={"line_no": pl.Int64, "text": pl.String})
    frame = pl.read_csv(source, **_LINE_READER)
    # Blank lines are read as "" (not null), so no second copy of the text column is made.
    text = pl.col("text")
    return frame.select(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("line_no"),
                        pl.when(text.null_count() > 0).then(text.fill_null("")).otherwise(text))


def scan_split_lines(data: bytes | Path) -> pl.LazyFrame:
    """`split_lines` as a lazy frame (the same lines, numbers and text) for streaming queries."""
    source = _line_source(data)
    if source is None:
        return pl.LazyFrame(schema={"line_no": pl.Int64, "text": pl.String})
    return pl.scan_csv(source, **_LINE_READER).with_row_index("line_no", offset=1).select(
        pl.col("line_no").cast(pl.Int64), pl.col("text").fill_null(""))
