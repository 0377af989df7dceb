"""Reading log files: encodings (UTF-8 with/without BOM, UTF-16 from PowerShell), line ends
(CRLF, CR), a bounded head for sniffing, and the whole file as a polars frame of lines.

Everything downstream sees UTF-8 text with `\n` line ends; line numbers are 1-based and count
every line break the file had (a lone CR counts as a break, as editors show it).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

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
    """A file whose head is mostly control bytes (not text with a few NUL runs)."""
    if encoding.startswith("utf-16") or not head:
        return False
    sample = head[:8192]
    text_bytes = sum(1 for b in sample if b >= 0x20 or b in (9, 10, 13))
    nul = sample.count(0)
    # NUL runs from two jobs overwriting one log are tolerated when the rest is text.
    return (text_bytes + nul) / len(sample) < 0.85 or (nul > len(sample) * 0.5 and text_bytes < len(sample) * 0.3)


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


def read_head(path: Path, limit: int = HEAD_BYTES) -> Head:
    with open(path, "rb") as fh:
        raw = fh.read(limit)
    size = path.stat().st_size
    encoding = detect_encoding(raw)
    text = to_utf8(raw, encoding).decode("utf-8", errors="replace")
    return Head(path=path, raw=raw, encoding=encoding, text=text, size=size, truncated=size > limit)


@dataclass
class Document:
    """A whole log, normalised to UTF-8 with LF line ends."""

    path: Path
    display: str
    encoding: str
    data: bytes
    _lines: pl.DataFrame | None = field(default=None, repr=False)

    @classmethod
    def open(cls, path: Path, display: str | None = None) -> "Document":
        raw = path.read_bytes()
        encoding = detect_encoding(raw[:HEAD_BYTES])
        return cls(path=path, display=display or str(path), encoding=encoding,
                   data=to_utf8(raw, encoding))

    @classmethod
    def from_text(cls, text: str, display: str = "<text>") -> "Document":
        return cls(path=Path(display), display=display, encoding="utf-8",
                   data=to_utf8(text.encode("utf-8"), "utf-8"))

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    def lines(self) -> pl.DataFrame:
        """Columns `line_no` (1-based, Int64) and `text` (String, "" for blank lines)."""
        if self._lines is None:
            self._lines = split_lines(self.data)
        return self._lines


def split_lines(data: bytes) -> pl.DataFrame:
    """Split UTF-8 bytes into lines with polars' CSV reader (one column, no quoting): the
    fastest line splitter at hand, and the baseline the benchmark compares against."""
    if not data:
        return pl.DataFrame(schema={"line_no": pl.Int64, "text": pl.String})
    if b"\x1f" in data:  # the reader's field separator must not occur in the text
        data = data.replace(b"\x1f", b" ")
    frame = pl.read_csv(
        io.BytesIO(data), has_header=False, separator="\x1f", quote_char=None,
        new_columns=["text"], infer_schema=False, truncate_ragged_lines=True,
        encoding="utf8-lossy",
    )
    return frame.with_row_index("line_no", offset=1).with_columns(
        pl.col("line_no").cast(pl.Int64), pl.col("text").fill_null(""))
