"""The unit of per-file work an executor runs (`executors.py`): what to read, what came back.

`ingest.read_one(FileTask) -> FileRead` is the function; `Crash` is what an executor gives
instead of a `FileRead` when the task's process died twice.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from roofreport.families.common.limits import Limits
from roofreport.pipeline.facts import FileFacts


@dataclass(frozen=True)
class FileTask:
    """One file to read. `fingerprint`: also hash its bytes and rows (an incremental dataset
    keeps them instead of the file); `limits`: what reading it may cost."""

    path: str
    display: str
    excluded: str | None = None      # the glob that leaves it out: not read
    fingerprint: bool = False
    limits: Limits = Limits()


@dataclass
class FileRead:
    """What reading one file gave: its facts, and its tables (conformed, `source_file` set)."""

    facts: FileFacts
    tables: dict[str, pl.DataFrame]


@dataclass(frozen=True)
class Crash:
    """A task whose process died twice (or whose result could not be sent back)."""

    message: str
