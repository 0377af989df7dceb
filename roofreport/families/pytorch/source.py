"""The text of a trace file, piece by piece, in bounded memory: a compressed file unpacked as it
is read, up to the one cap on unpacked sizes, and decoded as UTF-8 (UTF-16/32 by JSON's own
rule), with damage repaired as for logs.

A trace is never held whole: the reader (`decode.py`) asks for one piece of about `PIECE`
characters after another. A gzip file (torch writes `.json.gz`) is unpacked by
`common/compressed.py`, as every compressed input is, under the active limits (`--max-unpacked`,
`--max-unpacked-ratio`, a `roofreport.toml`'s `[limits]`): one that unpacks past its cap ends in
an error naming both sizes, after the events read so far (a decompression bomb: 3 MB of gzip
that unpacks to 3 GB of blanks is refused at 50 x 3 MB, never inflated whole). A damaged or cut
stream gives what unpacked before the damage, with a warning. NUL bytes are removed and bytes
that are not UTF-8 read as Windows-1252, each with one warning naming the first line touched
(`textio.repair`'s rules, applied piece by piece).
"""

from __future__ import annotations

import codecs
import contextvars
import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from queue import Full, Queue
from threading import Event, Thread

from roofreport.errors import LogWarning, ParseError
from roofreport.families.common import compressed
from roofreport.families.common import textio  # noqa: F401 (registers the cp1252 fallback)

PIECE = 2 << 20                  # bytes read (or unpacked) per piece
_CP1252_FALLBACK = "roofreport-cp1252"   # the error handler `textio` registers


def _ahead(pieces: Iterator[bytes], depth: int = 1) -> Iterator[bytes]:
    """`pieces`, produced in a thread up to `depth` ahead of their use: zlib inflates without
    the GIL, so the next piece unpacks while the JSON of this one is decoded (on two cores a
    gzip trace reads ~10 % faster). An exception in the thread is raised here, in order."""
    queue: Queue = Queue(maxsize=depth)
    stop = Event()
    done = object()

    def offer(item) -> bool:
        """Queue `item` unless the reader has stopped (False then)."""
        while not stop.is_set():
            try:
                queue.put(item, timeout=0.1)
                return True
            except Full:
                continue
        return False

    def produce() -> None:
        try:
            for piece in pieces:
                if not offer(piece):
                    return
            offer(done)
        except BaseException as exc:   # (handed to the reader, raised there)
            offer(exc)

    # (in a copy of this context: what the pieces' reader asks of the active limits is the same)
    worker = Thread(target=contextvars.copy_context().run, args=(produce,), name="roofreport-inflate",
                    daemon=True)
    worker.start()
    try:
        while True:
            item = queue.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()


class TextSource:
    """The text of `path`, in pieces (`pieces()`); `warnings` collects the repairs made and
    the damage met. Raises ParseError when the file cannot be read or unpacks past its cap."""

    def __init__(self, path: Path, display: str, counting: bool = False):
        self.path, self.display = path, display
        self.counting = counting   # read again only to count lines: no warnings
        self.warnings: list[LogWarning] = []
        self.chars = 0             # characters of text given so far
        self._nul_warned = False

    def pieces(self) -> Iterator[str]:
        with ExitStack() as opened:
            try:
                stream = opened.enter_context(compressed.open_unpacked(self.path, self.display, keep_damaged=True))
            except OSError as exc:
                raise ParseError(f"cannot read: {exc.strerror or exc}", path=self.display) from None
            packed = isinstance(stream, compressed.Unpacked)
            raw = self._read(stream)
            # (a compressed file unpacks in a thread ahead; a count of lines has no time to win)
            yield from self._decoded(_ahead(raw) if packed and not self.counting else raw)
            if packed and stream.damage and not self.counting:
                self.warnings.append(LogWarning("pytorch.truncated", f"{stream.damage}: the trace is read up "
                                                "to where it stops"))

    def _read(self, stream) -> Iterator[bytes]:
        while True:
            try:
                data = stream.read(PIECE)
            except OSError as exc:
                raise ParseError(f"cannot read: {exc.strerror or exc}", path=self.display) from None
            if not data:
                return
            yield data

    def _decoded(self, raw: Iterator[bytes]) -> Iterator[str]:
        """UTF-8 text (or UTF-16/32 told by the first bytes), NULs removed, bad bytes repaired."""
        decoder, utf8 = None, True
        for data in raw:
            if decoder is None:
                encoding = json.detect_encoding(data[:4])
                utf8 = encoding == "utf-8"
                if data.startswith(b"\xef\xbb\xbf"):
                    data = data[3:]
                decoder = codecs.getincrementaldecoder(encoding)("strict" if utf8 else "replace")
            if utf8 and b"\0" in data:
                self._warn_nul(data)
                data = data.replace(b"\0", b"")
            yield self._decode(decoder, data)
        tail = self._decode(decoder, b"", final=True) if decoder is not None else ""
        if tail:
            yield tail

    def _decode(self, decoder, data: bytes, final: bool = False) -> str:
        if decoder.errors == "strict":
            state = decoder.getstate()
            try:
                text = decoder.decode(data, final)
            except UnicodeDecodeError as exc:
                if not self.counting:
                    line = self.line_at(self.chars) + data.count(b"\n", 0, max(exc.start, 0))
                    self.warnings.append(LogWarning(
                        "input.not-utf8", f"bytes that are not UTF-8 (first on line {line}) were read as "
                        "Windows-1252: the log was re-encoded or mixes encodings", line=line))
                decoder.errors = _CP1252_FALLBACK
                decoder.setstate(state)
                text = decoder.decode(data, final)
        else:
            text = decoder.decode(data, final)
        self.chars += len(text)
        return text

    def line_at(self, offset: int) -> int:
        """The line of the text's character `offset`, counted by reading the file again up to
        it: only an error or a repair needs a line, so a read that meets none counts none."""
        again, line, passed = TextSource(self.path, self.display, counting=True), 1, 0
        for piece in again.pieces():
            if passed + len(piece) >= offset:
                return line + piece.count("\n", 0, offset - passed)
            line += piece.count("\n")
            passed += len(piece)
        return line

    def _warn_nul(self, data: bytes) -> None:
        if self._nul_warned or self.counting:
            return
        self._nul_warned = True
        line = self.line_at(self.chars) + data.count(b"\n", 0, data.find(b"\0"))
        self.warnings.append(LogWarning(
            "input.nul-bytes", f"NUL bytes removed (first on line {line}): two jobs wrote this "
            "trace at once or it was not flushed; text there may be damaged", line=line))
