"""roofreport's exception tree and its collected, coded warnings.

The library raises only these types; the CLI is the one place that turns them into messages
and exit codes. A ParseError always knows the file, line and column, and can draw the
offending line with a caret under the column.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class RoofreportError(Exception):
    """Base class of every error roofreport raises on purpose."""


class UsageError(RoofreportError):
    """The user asked for something impossible (bad option, output over an input...)."""


class UnknownFormatError(RoofreportError):
    """A file was handed to a parser that cannot read it."""


class RenderError(RoofreportError):
    """The report could not be rendered (template, chart or PDF failure)."""


class ParseError(RoofreportError):
    """A log could not be read at a precise place."""

    def __init__(self, message: str, path: str = "", line: int | None = None,
                 column: int | None = None, text: str | None = None):
        self.message = message
        self.path = path
        self.line = line
        self.column = column
        self.text = text
        super().__init__(self.describe())

    def location(self) -> str:
        parts = [self.path or "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def snippet(self) -> str:
        """The offending line and a caret under the column (empty when unknown)."""
        if self.text is None:
            return ""
        shown = self.text.rstrip("\r\n")
        col = self.column or 1
        # Long lines (C++ kernel names run to thousands of characters) are cut around the column.
        if len(shown) > 120:
            start = max(0, col - 60)
            prefix = "..." if start else ""
            shown = prefix + shown[start:start + 120]
            col = col - start + len(prefix)
        shown = shown.replace("\t", " ")
        return f"    {shown}\n    {' ' * (col - 1)}^"

    def describe(self) -> str:
        head = f"{self.location()}: {self.message}"
        snip = self.snippet()
        return f"{head}\n{snip}" if snip else head


@dataclass(frozen=True)
class LogWarning:
    """A problem that did not stop the parse. `code` is stable and documented (see README)."""

    code: str
    message: str
    line: int | None = None
    path: str = field(default="", compare=False)

    def as_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "line": self.line}


# Codes of warnings that say rows of a file were left out: a row that does not fit its table,
# one cut by the end of the file. Such a file is `partial` (pipeline/ingest.py
# `mark_lost_rows`): a failed input, never "ok" with rows missing, since totals are sums.
ROWS_LOST = frozenset({
    "ncu.unreadable-row", "ncu.short-row", "ncu.bad-id",
    "nsys.bad-row", "nsys.truncated",
    "nvprof.unreadable-row", "nvprof.truncated",
    "smi.bad-row", "dcgm.bad-row", "dcgm.truncated",
    "tegrastats.bad-line", "tegrastats.truncated",
    "rocm.bad-row", "rocm.truncated", "rocm.unknown-lane",
    "pytorch.bad-row",
})
