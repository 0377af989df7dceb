"""What every format module provides and returns.

A format module owns one family of logs (ncu, nsys, nvprof, nvidia-smi). It exposes `SPECS`,
a list of `FormatSpec` (one per file kind it reads: text, CSV, SQLite...), each with a `sniff`
that looks at a bounded head and a `parse` that reads the whole file into shared tables.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module

import polars as pl

from roofreport.errors import LogWarning, ParseError
from roofreport.families.common.textio import Document, Head
from roofreport.tables import schema


@dataclass
class RunHints:
    """What a log's content says about its run (the path says the rest: pipeline/runs.py).

    `label` is a configuration name the job echoed at the top of its log
    (`alexnet_16_0.01_k80_full`), read by the pipeline's name conventions; `process` the
    program the profiler attached to when it gives no command line; `process_id` the profiled
    process (two logs with different ones are two executions); `device_kind` "cpu" when the log
    shows the program ran on the CPU; `rank` and `world_size` this process's place in a
    distributed job (PyTorch traces: one trace per rank); `ranks` how many processes of one job
    a trace of several holds, each its rows' `rank` (`families/common/processes.py`: nsys and
    rocprof traces that followed a launcher's children); `gpu_start_ns` and `gpu_end_ns` the
    first GPU activity's start and the last one's end on a clock the tool's files of one job
    share (rocprof: its host's; nsys SQLite: UTC, from the session's start; else the pipeline
    fills them from the activities): what tells the processes of one job, which ran together,
    from runs one after the other; `compute_capability` and `sm_count`
    the GPU's as the log printed them (ncu's `CC 8.6` on every kernel line)."""

    device_name: str | None = None
    command: str | None = None
    host: str | None = None
    model: str | None = None
    batch_size: int | None = None
    learning_rate: float | None = None
    label: str | None = None
    process: str | None = None
    process_id: int | None = None
    device_kind: str | None = None
    rank: int | None = None
    world_size: int | None = None
    ranks: int | None = None
    gpu_start_ns: float | None = None
    gpu_end_ns: float | None = None
    compute_capability: str | None = None
    sm_count: int | None = None


@dataclass(frozen=True)
class Session:
    """One profiler session of a log that holds several (runs appended to one file): its rows
    are those read from `first_line` on, up to the next session's first line."""

    first_line: int
    hints: RunHints


@dataclass
class ParseResult:
    """The tables read from one file, and what went wrong on the way.

    `error` set with tables filled means a partial read: everything before the failure is kept.
    """

    family: str
    variant: str
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    warnings: list[LogWarning] = field(default_factory=list)
    error: ParseError | None = None
    tool_version: str | None = None
    hints: RunHints = field(default_factory=RunHints)
    # Two or more when the file holds several profiler sessions, each a run of its own.
    sessions: list[Session] = field(default_factory=list)

    def add(self, table: str, frame: pl.DataFrame) -> None:
        """Append rows to a table (columns not in the frame become null)."""
        frame = schema.conform(table, frame)
        if table in self.tables:
            self.tables[table] = pl.concat([self.tables[table], frame], how="vertical")
        else:
            self.tables[table] = frame

    def warn(self, code: str, message: str, line: int | None = None) -> None:
        self.warnings.append(LogWarning(code=code, message=message, line=line))

    def rows(self) -> dict[str, int]:
        return {name: df.height for name, df in self.tables.items() if df.height}

    def shift_lines(self, skipped: int, display: str) -> None:
        """Line numbers of a part read from a longer file made the file's own: `skipped` lines
        came before the part's line 1 (rows, warnings and the lines their messages name, the
        error, sessions). Readers number the lines of what they read; this is done once here."""
        self.tables = {name: frame.with_columns(pl.col("source_line") + skipped)
                       if "source_line" in frame.columns else frame
                       for name, frame in self.tables.items()}
        self.warnings = [LogWarning(w.code, _shifted_refs(w.message, skipped, display),
                                    w.line + skipped if w.line is not None else None, path=w.path)
                         for w in self.warnings]
        if self.error is not None:
            if self.error.line is not None:
                self.error.line += skipped
            self.error.message = _shifted_refs(self.error.message, skipped, display)
            self.error.args = (self.error.describe(),)
        self.sessions = [Session(s.first_line + skipped, s.hints) for s in self.sessions]


# The forms readers name lines in messages: `path:12:3:`, `line 12`, `lines 12-14`.
_LINE_REFS = re.compile(r"\b(lines? )(\d+)(?:-(\d+))?")


def _shifted_refs(message: str, skipped: int, display: str) -> str:
    def moved(number: str) -> str:
        return str(int(number) + skipped)

    message = re.sub(re.escape(display) + r":(\d+)", lambda m: f"{display}:{moved(m[1])}", message)
    return _LINE_REFS.sub(lambda m: m[1] + moved(m[2]) + (f"-{moved(m[3])}" if m[3] else ""), message)


@dataclass(frozen=True)
class FormatSpec:
    """One kind of file a family module can read.

    `sniff(head)` returns a variant string when the file is of this kind, else None; it must
    only look at `head` (bounded) and never raise. `parse(doc, variant)` reads the whole file.
    `binary=True` specs receive the path instead of a decoded document (SQLite exports).
    `reads_json=True` specs read JSON documents: a `.json` file is offered to them only.
    `marks` are literal texts that the first lines of this kind of output hold (a tool's
    banner, a report's title or header): a long text file that no spec claims from its head
    (a batch job's log) is scanned for them, and its part from a marked line on is offered to
    the specs (`pipeline/sniff.py`). A spec without marks is found at a file's head only.
    """

    family: str
    name: str
    sniff: Callable[[Head], str | None]
    parse: Callable[[Document, str], ParseResult]
    binary: bool = False
    reads_json: bool = False
    marks: tuple[str, ...] = ()


class DeferredReader:
    """`module.function`, imported on the first call (a reader only a matching file needs)."""

    __slots__ = ("module", "function", "_target")

    def __init__(self, module: str, function: str):
        self.module, self.function, self._target = module, function, None

    def __call__(self, *args, **kwargs):
        if self._target is None:
            self._target = getattr(import_module(self.module), self.function)
        return self._target(*args, **kwargs)

    def __repr__(self) -> str:
        return f"DeferredReader({self.module}.{self.function})"
