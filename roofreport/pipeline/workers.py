"""Worker processes for reading many files at once, safe to start from any caller.

Worker processes are spawned (polars' threads and `fork` do not mix). A spawned process normally
re-imports the caller's main script first, so a plain script calling `roofreport.read(...)`
without an `if __name__ == "__main__":` guard would run itself again in every worker and break
the pool. roofreport's workers need nothing of the caller's script: while a worker starts,
`__main__` is replaced by an empty module, so the worker imports only roofreport. The same pool
works from scripts, from notebooks (whose `__main__` has no file) and from the CLI.

`LocalPool` is the executor (`executors.py`) on such a pool: it contains a task whose worker
dies (retried once, alone, then a `tasks.Crash`).

Ctrl-C belongs to the caller. A terminal sends SIGINT to the whole process group, workers
included: a worker that took it would end its file as "could not run it (KeyboardInterrupt)"
(or print a traceback while it starts) and the caller would go on. So a worker starts with
SIGINT blocked (`interrupts_held`) and ignores it from its first line of roofreport
(`ignore_interrupts`); the caller, interrupted, kills the workers still reading
(`LocalPool.close`) rather than wait for their files.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
import types
from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Any

from roofreport.errors import RoofreportError
from roofreport.pipeline.tasks import Crash


@contextmanager
def main_hidden() -> Iterator[None]:
    """`sys.modules["__main__"]` is an empty module inside the block: a process started there
    is told no main module to import (`multiprocessing.spawn.get_preparation_data` reads it)."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


@contextmanager
def interrupts_held() -> Iterator[None]:
    """A Ctrl-C waits for the end of the block, where this process gets it (a KeyboardInterrupt
    then); a process started inside begins with SIGINT blocked (the mask a process starts with
    is its parent's thread's), and so does a thread. For the starts of worker processes, so that
    an interrupt never falls between a worker's start and its pool's record of it (a worker
    nobody would stop). Only in the main thread, where Python takes signals."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield   # (Windows: no process groups to signal)
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        signal.signal(signal.SIGINT, previous)
        if caught:
            signal.raise_signal(signal.SIGINT)   # now, to the handler it was meant for


def ignore_interrupts() -> None:
    """A worker's first act (the pool's initializer): SIGINT is the caller's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})   # (a blocked one is dropped)


class _Process(SpawnProcess):
    def start(self) -> None:
        with main_hidden():
            super().start()


class _Context(SpawnContext):
    Process = _Process


def cap_memory(limit: int | None) -> bool:
    """Limit this worker process's memory to `limit` bytes (`RLIMIT_DATA`: the heap and
    private mappings, not the address space polars reserves), where the platform allows and
    only in a child process (the caller's own process is never limited). A read that needs
    more fails: a `MemoryError`, or the worker dies and the file is reported as failed."""
    if limit is None or multiprocessing.parent_process() is None:
        return False
    try:
        import resource
    except ImportError:   # Windows
        return False
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    soft = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
    # A native allocation past the limit aborts the worker with a message on its stderr (the
    # user's terminal): the file's error says what happened, so the worker's stderr is closed.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    return True


def pool(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` spawned processes that never import the caller's main module."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=_Context(), initializer=ignore_interrupts)


class LocalPool:
    """Spawned worker processes on this machine. A few tasks are in flight at a time (two per
    worker), so a worker's death loses only those: they run again, one by one, in a pool of
    their own, which tells the task that kills its process from the ones that died with it."""

    name = "local pool"

    def __init__(self, workers: int):
        self.workers = workers
        self._pool = None
        self._finished = True   # every task of the last `run` has its outcome

    def run(self, fn, tasks):
        self._finished = False
        queue = deque(range(len(tasks)))
        suspects: list[int] = []
        idle_breaks = 0
        while queue:
            waiting = len(queue)
            lost = yield from self._run_until_broken(fn, tasks, queue)
            suspects += lost
            idle_breaks = idle_breaks + 1 if not lost and len(queue) == waiting else 0
            if idle_breaks > 3:   # the workers die before they run anything
                raise RoofreportError("roofreport's worker processes die as they start; try --jobs 1")
        for position in suspects:
            yield position, self._run_alone(fn, tasks[position])
        self._finished = True

    def _run_until_broken(self, fn, tasks, queue: deque) -> Iterator[tuple[int, Any]]:
        """Run queued tasks until done or until the pool breaks; return the tasks lost."""
        pool = self._open(self.workers)
        inflight: dict[Future, int] = {}
        window = 2 * self.workers
        while queue or inflight:
            broken = False
            while queue and len(inflight) < window and not broken:
                try:
                    with interrupts_held():   # (a submit may start a worker)
                        inflight[pool.submit(fn, tasks[queue[0]])] = queue[0]
                        queue.popleft()
                except BrokenProcessPool:   # a worker died since the last look: that task never ran
                    broken = True
            done, _ = wait(inflight, return_when=FIRST_COMPLETED) if inflight else (set(), set())
            lost = []
            for future in done:
                position = inflight.pop(future)
                outcome = _outcome(future)
                if outcome is _BROKEN:
                    lost.append(position)
                else:
                    yield position, outcome
            if lost or broken:
                self._discard()
                # Tasks that finished before the break keep their result; the rest are lost.
                for future, position in inflight.items():
                    outcome = _BROKEN if future.cancelled() else _outcome(future)
                    if outcome is _BROKEN:
                        lost.append(position)
                    else:
                        yield position, outcome
                return lost
        return []

    def _run_alone(self, fn, task) -> Any:
        pool = self._open(1)
        with interrupts_held():
            future = pool.submit(fn, task)
        outcome = _outcome(future, wait_for_it=True)
        if outcome is _BROKEN:
            self._discard()
            return Crash("its worker process died while reading it, twice (a crash in a reader, "
                         "or the machine ran out of memory)")
        return outcome

    def _open(self, workers: int):
        if self._pool is not None and self._pool_workers != workers:
            self._discard()
        if self._pool is None:
            self._pool, self._pool_workers = pool(workers), workers
        return self._pool

    def _discard(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def close(self) -> None:
        """Shut the pool down. When the caller stopped before every task was done (Ctrl-C, an
        error), the workers are killed first: closing never waits for files nobody will use,
        nor for workers still starting."""
        if self._pool is not None and not self._finished:
            # (the pool's own table of its processes: ProcessPoolExecutor offers no other way)
            for process in list((getattr(self._pool, "_processes", None) or {}).values()):
                process.kill()
        self._discard()


def reap_children(within_s: float = 1.0) -> None:
    """Before an interrupted command exits: end every process this one started, and wait for
    each (reap it), so none is left behind, not even as a zombie. The pools have killed their
    workers by now (`LocalPool.close`, the Dask executor's close); what may remain is
    multiprocessing's resource tracker, which ends only once it sees this process gone. Left
    to end after us, an orphan is reaped by the machine's init process, which in a container
    or a sandbox may take seconds: measured here, the tracker stayed a zombie 1-2 s after the
    command, while 2 s is the promise. So its pipe is closed now (it ends when it reads the
    end of it, and cleans what it tracks), and it is waited for up to `within_s`, then killed.
    Other children still alive (a Dask nanny that has not yet stopped) are killed too."""
    deadline = time.monotonic() + within_s
    from multiprocessing import resource_tracker

    tracker = resource_tracker._resource_tracker   # (the module's own singleton)
    pid, fd = getattr(tracker, "_pid", None), getattr(tracker, "_fd", None)
    if pid is not None and fd is not None:
        tracker._fd = tracker._pid = None
        try:
            os.close(fd)
        except OSError:
            pass
        _wait_or_kill(pid, deadline)
    for child in multiprocessing.active_children():   # (joins the ones already ended)
        child.kill()
        child.join(max(0.0, deadline - time.monotonic()) + 0.2)


def _wait_or_kill(pid: int, deadline: float) -> None:
    """Reap process `pid`, a child of this one, killing it if it has not ended by `deadline`."""
    try:
        while time.monotonic() < deadline:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
            time.sleep(0.01)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ChildProcessError, ProcessLookupError):   # already reaped, or not ours
        pass


_BROKEN = object()


def _outcome(future: Future, wait_for_it: bool = False) -> Any:
    """The future's result, `_BROKEN` when its process died, a `Crash` for any other failure
    (the function itself never raises: ingest contains every reader's exception)."""
    if wait_for_it:
        wait([future])
    error = future.exception()
    if error is None:
        return future.result()
    if isinstance(error, BrokenProcessPool):
        return _BROKEN
    return Crash(f"the worker could not run it ({type(error).__name__}: {error})")
