"""What one input may cost: the limits every reader works within (issue #27).

Logs are untrusted: a 3 MB gzip can unpack to 3 GB, a damaged log can hold one 400 MB line,
and a reader may need more memory than the machine has. `Limits` says how far a reader goes:

* `unpacked_ratio` and `unpacked_bytes`: a compressed input is read as a stream and refused
  (with the sizes) once it has unpacked to `unpacked_ratio` times its packed size or
  `unpacked_bytes`, whichever is smaller (`compressed.py`). A small file may always unpack to
  `SMALL_UNPACKED` (64 MiB, if `unpacked_bytes` allows): a 200 KB trace that packs 80 to 1 is
  no bomb, and 64 MiB costs nothing to refuse;
* `line_bytes`: a line of a line-oriented text log is kept up to this many bytes; the rest of
  it is dropped, and the line is named in an `input.long-line` warning (`textio.Document`).
  JSON documents are not line-oriented (a one-line trace is normal): they are exempt;
* `max_memory`: the memory (bytes) a worker process reading files may use, where the platform
  allows (Linux/macOS `RLIMIT_DATA`); a file whose reading needs more fails, alone.

The limits are set by the CLI (`--max-unpacked`, `--max-unpacked-ratio`, `--max-line`,
`--max-memory`) or the API (`roofreport.read(..., limits=Limits(...))`); a `roofreport.toml`
beside the logs travels with them, untrusted too, so its `[limits]` table may only lower them
(`lowered`). A reader asks `active()`: the pipeline makes a file's limits active while it reads
the file (`applied`), so no reader's signature carries them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace

from roofreport.errors import UsageError

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40,
          "TIB": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
SMALL_UNPACKED = 64 << 20   # what any compressed file may unpack to (see the module docstring)


@dataclass(frozen=True)
class Limits:
    """See the module docstring. The defaults: 50x or 2 GiB unpacked, 1 MiB lines, no memory
    limit."""

    unpacked_ratio: float = 50.0
    unpacked_bytes: int = 2 << 30
    line_bytes: int = 1 << 20
    max_memory: int | None = None

    def __post_init__(self):
        for item in fields(self):
            value = getattr(self, item.name)
            if value is not None and value <= 0:
                raise UsageError(f"the limit {item.name} must be positive, not {value}")

    def unpacked_cap(self, packed_size: int) -> int:
        """The most bytes a compressed input of `packed_size` bytes may unpack to."""
        return int(min(self.unpacked_bytes, max(packed_size * self.unpacked_ratio, SMALL_UNPACKED)))

    def as_dict(self) -> dict:
        """The limits as plain values (an incremental dataset keeps each file's: `store.py`)."""
        return {item.name: getattr(self, item.name) for item in fields(self)}

    def lowered(self, other: Limits) -> Limits:
        """Each limit the lower of this one's and `other`'s (a roofreport.toml can only lower)."""
        def lower(mine, theirs):
            return theirs if mine is None else mine if theirs is None else min(mine, theirs)
        return replace(self, **{item.name: lower(getattr(self, item.name), getattr(other, item.name))
                                for item in fields(self)})

    @classmethod
    def from_table(cls, table: dict, where: str) -> Limits:
        """A roofreport.toml `[limits]` table (`max_unpacked = "1G"`, `max_unpacked_ratio = 20`,
        `max_line = "256K"`, `max_memory = "4G"`); keys it lacks stay unlimited here, so
        lowering by it changes only what it names."""
        known = {"max_unpacked": "unpacked_bytes", "max_unpacked_ratio": "unpacked_ratio",
                 "max_line": "line_bytes", "max_memory": "max_memory"}
        unknown = sorted(set(table) - set(known))
        if unknown:
            raise UsageError(f"{where}: unknown key(s) in [limits]: {', '.join(unknown)} "
                             f"(known: {', '.join(known)})")
        values = {name: None for name in known.values()}
        for key, name in known.items():
            if key in table:
                value = table[key]
                values[name] = float(value) if name == "unpacked_ratio" else parse_size(value, f"{where}: {key}")
        return _Lowering(**values)


@dataclass(frozen=True)
class _Lowering(Limits):
    """A `[limits]` table: None where it names no limit (nothing to lower)."""

    unpacked_ratio: float | None = None
    unpacked_bytes: int | None = None
    line_bytes: int | None = None
    max_memory: int | None = None


def parse_size(value: str | int | float, what: str = "size") -> int:
    """Bytes of `1048576`, `"512K"`, `"1.5G"`, `"2GiB"` (binary units)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value <= 0:
            raise UsageError(f"{what}: {value} is not a positive size")
        return int(value)
    match = _SIZE.match(str(value))
    unit = match.group(2).upper() if match else None
    if not match or unit not in _UNITS or float(match.group(1)) <= 0:
        raise UsageError(f"{what}: {value!r} is not a size (e.g. 500M, 2G)")
    return int(float(match.group(1)) * _UNITS[unit])


def shown(size: int) -> str:
    """`2147483648` -> `2.0 GiB` (messages)."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} bytes"


_ACTIVE: ContextVar[Limits] = ContextVar("roofreport_limits", default=Limits())


def active() -> Limits:
    """The limits of the file being read (the defaults outside a read)."""
    return _ACTIVE.get()


@contextmanager
def applied(limits: Limits) -> Iterator[Limits]:
    """`limits` active inside the block (a file's read), the previous ones after it."""
    token = _ACTIVE.set(limits)
    try:
        yield limits
    finally:
        _ACTIVE.reset(token)
