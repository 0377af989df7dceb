"""Where per-file work runs: in this process, on the local pool of worker processes, or on Dask.

Ingest hands an executor one function and a list of tasks (one per file) and takes the results
as they finish, in any order: `executor.run(fn, tasks)` yields `(position, result)`. The three
executors behave alike, so their tables are the same:

* `InProcess`: one task after the other, here (a few files, or `jobs=1`);
* `LocalPool` (`workers.py`): spawned worker processes on this machine, the default for many
  files;
* `DaskExecutor` (`dask_executor.py`): a Dask distributed cluster, started here or reached at an
  address (the `roofreport[dask]` extra).

A task whose process dies (a segfault in a reader's native code, `os._exit`, the kernel's OOM
killer) does not take the rest down: the pool and Dask executors run it once more, alone, and
if it dies again its result is a `tasks.Crash` the caller records against the file. In process, a
dying task takes the caller with it: that is why many files go to a pool.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from roofreport.errors import UsageError

LOCAL = "local"
DASK = "dask"
DASK_PREFIX = "dask://"
DEFAULT_MAX_WORKERS = 4
# Worker processes pay for themselves when reading in this process would take longer than
# starting them (each imports roofreport and polars: ~0.3 s of CPU): a small file costs
# ~20 ms to read (course logs, 2026-11-28: 17 ms a file for pramitmallick's 186 in one
# process; was 30 ms), a big one ~1 s per 50 MB. adityamwagh-hpml-hw (48 files), now read
# here: CPU 1.7 -> 0.8 s and wall 2.9-5.2 -> 1.6-2.6 s on this loaded 2-core machine.
PARALLEL_MIN_SECONDS = 1.0
SECONDS_PER_FILE = 0.02
BYTES_PER_SECOND = 50e6


class Executor(Protocol):
    """Runs one function over many tasks; see the module docstring."""

    name: str

    def run(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """(position in `tasks`, result or `Crash`) for every task, as each finishes."""

    def close(self) -> None: ...


class InProcess:
    """Each task in this process, in order."""

    name = "in-process"

    def run(self, fn, tasks):
        for position, task in enumerate(tasks):
            yield position, fn(task)

    def close(self) -> None:
        pass


def choose(executor: str | None, jobs: int | None, tasks: int, total_bytes: int = 0,
           isolated: bool = False) -> Executor:
    """The executor for `tasks` files of `total_bytes`: `executor` is None or "local" (the
    local pool, or this process for a few small files, one file, or `jobs=1`), "dask" (the
    cluster at DASK_SCHEDULER_ADDRESS when set, else a local cluster) or "dask://HOST:PORT".
    `isolated`: never this process (a worker's memory is limited: `--max-memory`)."""
    name = (executor or LOCAL).strip()
    if name == LOCAL:
        workers = jobs if jobs is not None else min(os.cpu_count() or 1, DEFAULT_MAX_WORKERS)
        serial = tasks * SECONDS_PER_FILE + total_bytes / BYTES_PER_SECOND
        if not isolated and (workers <= 1 or tasks < 2 or serial < PARALLEL_MIN_SECONDS):
            return InProcess()
        from roofreport.pipeline.workers import LocalPool  # only when used: start-up cost

        return LocalPool(workers)
    if name == DASK or name.startswith(DASK_PREFIX):
        from roofreport.pipeline.dask_executor import DaskExecutor

        address = name[len(DASK_PREFIX):] if name.startswith(DASK_PREFIX) else None
        return DaskExecutor(address=address or None, workers=jobs)
    raise UsageError(f"unknown executor {executor!r}: use 'local', 'dask' or 'dask://HOST:PORT'")


def check(executor: str | None) -> None:
    """Refuse a malformed executor name before anything is read."""
    name = (executor or LOCAL).strip()
    if name not in (LOCAL, DASK) and not (name.startswith(DASK_PREFIX) and len(name) > len(DASK_PREFIX)):
        raise UsageError(f"unknown executor {executor!r}: use 'local', 'dask' or 'dask://HOST:PORT'")
