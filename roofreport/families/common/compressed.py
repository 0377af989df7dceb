"""Compressed inputs read as a stream, never past a cap on their unpacked size (issue #27).

Every reader of compressed files opens them here: gzip (and zlib), bzip2 and xz, told by their
first bytes. `open_unpacked` gives a binary stream of the unpacked bytes; reading past
`limits.active().unpacked_cap(packed size)` raises a `ParseError` that gives both sizes and
the options that raise the cap. A plain file is given as it is. Nothing is unpacked ahead of
the reader: a decompression bomb costs at most the cap.

A stream that ends early (a file cut short) or is damaged raises a `ParseError` saying so. A
streaming reader that keeps what came before the damage (PyTorch's traces) asks for
`keep_damaged=True`: the stream then ends at the damage as if whole, every byte before it given,
and its `damage` says what happened.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from roofreport.errors import ParseError
from roofreport.families.common import limits as limits_mod

# First bytes -> (name, opener of a decompressing stream over a file object).
FORMATS = (
    (b"\x1f\x8b", "gzip", lambda fh: gzip.GzipFile(fileobj=fh, mode="rb")),
    (b"BZh", "bzip2", lambda fh: bz2.BZ2File(fh, mode="rb")),
    (b"\xfd7zXZ\x00", "xz", lambda fh: lzma.LZMAFile(fh, mode="rb")),
)
# What the decompressors raise for a stream that is cut (EOFError) or damaged (gzip's
# BadGzipFile and bz2's "Invalid data stream" are OSErrors).
_DAMAGE = (EOFError, zlib.error, lzma.LZMAError, OSError)


def compression(head: bytes) -> str | None:
    """The compression a file's first bytes name, or None."""
    return next((name for magic, name, _ in FORMATS if head.startswith(magic)), None)


class CappedStream(io.RawIOBase):
    """The unpacked bytes of `inner`, refused once more than `cap` have been read. The limits
    are those active when it was made: a reader may read it from another thread."""

    def __init__(self, inner: BinaryIO, packed: int, kind: str, display: str, keep_damaged: bool = False):
        self.inner, self.packed, self.kind, self.display = inner, packed, kind, display
        self.limits = limits_mod.active()
        self.cap = self.limits.unpacked_cap(packed)
        self.keep_damaged = keep_damaged
        self.unpacked = 0
        self.damage: str | None = None   # why the stream ended early (with keep_damaged)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.damage is not None:
            return 0
        view = memoryview(buffer)
        # One byte more than the cap is asked for, so a stream that stops exactly at it is whole.
        room = self.cap + 1 - self.unpacked
        if room <= 0:
            self._refuse()
        try:
            # (one step of the decompressor at most: a cut or damage met later loses nothing given)
            count = self.inner.readinto1(view[:min(len(view), room)])
        except _DAMAGE as exc:
            self.damage = (f"the {self.kind} stream ends early (the file was cut)" if isinstance(exc, EOFError)
                           else f"the {self.kind} stream is damaged ({exc})")
            if not self.keep_damaged:
                raise ParseError(self.damage, path=self.display) from None
            return 0
        self.unpacked += count
        if self.unpacked > self.cap:
            self._refuse()
        return count

    def _refuse(self) -> None:
        ratio = f"{self.limits.unpacked_ratio:g} x its size"
        why = ("the most any file may unpack to" if self.cap == self.limits.unpacked_bytes else
               f"what any file may unpack to, more than {ratio}" if self.cap == limits_mod.SMALL_UNPACKED else ratio)
        raise ParseError(
            f"this {self.kind} file ({limits_mod.shown(self.packed)}) unpacks to more than "
            f"{limits_mod.shown(self.cap)}, the limit for it ({why}): read no further. A real log this "
            "large can be read with a higher --max-unpacked / --max-unpacked-ratio", path=self.display)

    def close(self) -> None:
        self.inner.close()
        super().close()


class Unpacked(io.BufferedReader):
    """What `open_unpacked` gives for a compressed file: with `keep_damaged`, its `damage`
    says why it ended early (None while whole)."""

    @property
    def damage(self) -> str | None:
        return self.raw.damage


@contextmanager
def open_unpacked(path: Path, display: str | None = None, keep_damaged: bool = False) -> Iterator[BinaryIO]:
    """A buffered binary stream of the file's unpacked bytes (the file itself when it is not
    compressed), capped by the active limits (see the module docstring for `keep_damaged`)."""
    fh = open(path, "rb")
    try:
        kind = compression(fh.read(8))
        fh.seek(0)
        if kind is None:
            yield fh
            return
        opener = next(make for _, name, make in FORMATS if name == kind)
        capped = CappedStream(opener(fh), os.fstat(fh.fileno()).st_size, kind, display or str(path), keep_damaged)
        # (a small buffer: a reader's own pieces are read past it; 1 MiB cost the 54 MB Kineto
        # trace's read ~5 MB more peak memory than the reader's own inflating did)
        with Unpacked(capped, buffer_size=64 << 10) as stream:
            yield stream
    finally:
        fh.close()


def read_unpacked(path: Path, display: str | None = None) -> bytes:
    """All the unpacked bytes of the file (never more than the cap)."""
    with open_unpacked(path, display) as stream:
        return stream.read()
