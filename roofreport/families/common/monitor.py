"""What the readers of GPU monitors' logs (DCGM, nvidia-smi, tegrastats) share, written once: a
log cut inside its last line, and the monitor's own failure message in place of samples.

Both take the file's lines classified by its grammar (`line_no`, `text`, `kind`): the kinds
`failure_line`, `blank_line` and `command_line` are spelt the same in every monitor grammar.
"""

from __future__ import annotations

from collections.abc import Collection

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common.textio import Document
from roofreport.families.spec import ParseResult

CUT_LINE = "the file ends in the middle of this line (no final line break): "


def drop_truncated(frame: pl.DataFrame, doc: Document, result: ParseResult, *, code: str,
                   may_end: Collection[str], consequence: str) -> pl.DataFrame:
    """`frame` without its last line when the file stops inside it (a copy cut short, a
    killed `tee` or monitor): that line may still look whole, so it is reported as warning
    `code` at file:line:column, `CUT_LINE` + `consequence`, and not read. A last line of a
    kind in `may_end` (a blank line, an echoed command) is kept: nothing is lost with it."""
    if not frame.height or doc.tail(1) in (b"\n", b""):
        return frame
    line_no, text, kind = frame.row(-1)
    if kind in may_end:
        return frame
    err = ParseError(CUT_LINE + consequence, path=doc.display, line=line_no,
                     column=len(text) + 1, text=text)
    result.warn(code, err.describe(), line=line_no)
    return frame.head(-1)


def failures(frame: pl.DataFrame, doc: Document, result: ParseResult, *, tool: str, code: str,
             nothing_sampled: str, unless_warned: bool = False) -> None:
    """The monitor's own failure message (the first `failure_line`, "`tool` reported: ...") is
    the file's error when nothing was sampled, and warning `code` when samples were taken
    before or after it. Without one, a file with no samples gets the error `nothing_sampled`
    (not when `unless_warned` and warnings already say what went wrong)."""
    found = frame.filter(pl.col("kind") == "failure_line").select("line_no", "text")
    if found.height:
        line_no, text = found.row(0)
        message = f"{tool} reported: {text.strip()}"
        if "samples" in result.tables:
            result.warn(code, message, line=line_no)
        else:
            result.error = ParseError(message, path=doc.display, line=line_no)
    elif "samples" not in result.tables and not (unless_warned and result.warnings):
        result.error = ParseError(nothing_sampled, path=doc.display)
