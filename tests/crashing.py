"""A per-file task that kills its own process on chosen files, for the executors' tests.

Executors run a task function by reference in other processes (spawned workers, Dask
workers), so the function must live in an importable module: this one. A file whose name holds
`CRASH-EXIT` ends its process with `os._exit`, one holding `CRASH-SEGV` with a segmentation
fault (a read of address 0, as a crash in a reader's native code would); every other file is
read by the real task.
"""

from __future__ import annotations

import ctypes
import os

from roofreport.pipeline import ingest


def read_or_crash(task):
    name = os.path.basename(task.path)
    if "CRASH-EXIT" in name:
        os._exit(3)
    if "CRASH-SEGV" in name:
        ctypes.string_at(0)
    return ingest.read_one(task)
