"""Compressed inputs read as a stream, never past a cap on their unpacked size (issue #27).

A family that accepts compressed files (PyTorch's `.json.gz` traces) opens them here: gzip
(and zlib), bzip2 and xz, told by their first bytes. `open_unpacked` gives a binary stream of
the unpacked bytes; reading past `limits.active().unpacked_cap(packed size)` raises a
`ParseError` that gives both sizes and the option that raises the cap. A plain file is given as
it is. Nothing is unpacked ahead of the reader: a decompression bomb costs at most the cap.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
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


def compression(head: bytes) -> str | None:
    """The compression a file's first bytes name, or None."""
    return next((name for magic, name, _ in FORMATS if head.startswith(magic)), None)


class CappedStream(io.RawIOBase):
    """The unpacked bytes of `inner`, refused once more than `cap` have been read."""

    def __init__(self, inner: BinaryIO, cap: int, packed: int, kind: str, display: str):
        self.inner, self.cap, self.packed, self.kind, self.display = inner, cap, packed, kind, display
        self.unpacked = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        view = memoryview(buffer)
        # One byte more than the cap is asked for, so a stream that stops exactly at it is whole.
        room = self.cap + 1 - self.unpacked
        if room <= 0:
            self._refuse()
        count = self.inner.readinto(view[:min(len(view), room)])
        self.unpacked += count
        if self.unpacked > self.cap:
            self._refuse()
        return count

    def _refuse(self) -> None:
        raise ParseError(
            f"this {self.kind} file ({limits_mod.shown(self.packed)}) unpacks to more than "
            f"{limits_mod.shown(self.cap)}, the limit for it (the smaller of "
            f"{limits_mod.active().unpacked_ratio:g} x its size and "
            f"{limits_mod.shown(limits_mod.active().unpacked_bytes)}): not read. A real log this "
            "large can be read with a higher --max-unpacked / --max-unpacked-ratio",
            path=self.display)

    def close(self) -> None:
        self.inner.close()
        super().close()


@contextmanager
def open_unpacked(path: Path, display: str | None = None) -> Iterator[BinaryIO]:
    """A buffered binary stream of the file's unpacked bytes (the file itself when it is not
    compressed), capped by the active limits."""
    fh = open(path, "rb")
    try:
        kind = compression(fh.read(8))
        fh.seek(0)
        if kind is None:
            yield fh
            return
        opener = next(make for _, name, make in FORMATS if name == kind)
        packed = os.fstat(fh.fileno()).st_size
        capped = CappedStream(opener(fh), limits_mod.active().unpacked_cap(packed), packed, kind,
                              display or str(path))
        with io.BufferedReader(capped, buffer_size=1 << 20) as stream:
            yield stream
    finally:
        fh.close()


def read_unpacked(path: Path, display: str | None = None) -> bytes:
    """All the unpacked bytes of the file (never more than the cap)."""
    with open_unpacked(path, display) as stream:
        return stream.read()
