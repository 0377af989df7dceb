"""A per-file task that kills its own process on chosen files, for the executors' tests.

Executors run a task function by reference in other processes (spawned workers, Dask
workers), so the function must live in an importable module: this one. A file whose name holds
`CRASH-EXIT` ends its process with `os._exit`, one holding `CRASH-SEGV` with a segmentation
fault (a read of address 0, as a crash in a reader's native code would); every other file is
read by the real task, as is any excluded file.
"""

from __future__ import annotations

import ctypes
import os

from roofreport.pipeline import ingest

_READ_ONE = ingest.read_one   # the real task, even where a test put this module's in its place


def read_or_crash(task):
    name = os.path.basename(task.path) if task.excluded is None else ""
    if "CRASH-EXIT" in name:
        os._exit(3)
    if "CRASH-SEGV" in name:
        ctypes.string_at(0)
    return _READ_ONE(task)


def square_or_crash(number: int) -> int:
    """number², except 3 (`os._exit`) and 5 (a segmentation fault)."""
    if number == 3:
        os._exit(3)
    if number == 5:
        ctypes.string_at(0)
    return number * number


def slow_square(number: int) -> int:
    """number², a second later (a task still running when a test takes the workers away)."""
    import time

    time.sleep(1.0)
    return number * number
