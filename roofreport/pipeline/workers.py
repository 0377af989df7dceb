"""Worker processes for reading many files at once, safe to start from any caller.

Worker processes are spawned (polars' threads and `fork` do not mix). A spawned process normally
re-imports the caller's main script first, so a plain script calling `roofreport.read(...)`
without an `if __name__ == "__main__":` guard would run itself again in every worker and break
the pool. roofreport's workers need nothing of the caller's script: while a worker starts,
`__main__` is replaced by an empty module, so the worker imports only roofreport. The same pool
works from scripts, from notebooks (whose `__main__` has no file) and from the CLI.
"""

from __future__ import annotations

import sys
import types
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Iterator


@contextmanager
def _main_hidden() -> Iterator[None]:
    """`sys.modules["__main__"]` is an empty module inside the block: a process started there
    is told no main module to import (`multiprocessing.spawn.get_preparation_data` reads it)."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


class _Process(SpawnProcess):
    def start(self) -> None:
        with _main_hidden():
            super().start()


class _Context(SpawnContext):
    Process = _Process


def pool(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` spawned processes that never import the caller's main module."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=_Context())
