"""Per-file work on Dask distributed (the `roofreport[dask]` extra).

`DaskExecutor(address=None)` starts a `LocalCluster` of single-threaded worker processes on
this machine (polars is already multi-threaded inside each); with an address
(`tcp://HOST:PORT`, or DASK_SCHEDULER_ADDRESS in the environment, Dask's own convention) it
uses the cluster already running there. The workers must see the logs at the paths given
(a shared filesystem) and have roofreport installed; each file is read on a worker and its
tables come back to this process, which groups runs and writes the tables as the local pool's
run does, so both give the same tables.

A task whose worker dies is retried once, alone on the cluster once every other task is done
(the tasks waiting on a dying worker fail with it, and alone a death is the task's own); if
it dies again the file is recorded as failed (`tasks.Crash`) and the rest goes on. On the
local cluster the scheduler gives up on a task at its first worker death (`allowed-failures`
0), so "once" means once; a cluster of someone else's keeps its own setting (Dask's default
reschedules a task three times before it reports `KilledWorker`). A local cluster left with no
worker at all (a nanny whose restart of a dead worker failed: seen on a loaded machine, where the
read then waited for ever) is started anew, and the tasks still pending are submitted to it.

Ctrl-C is the caller's, as on the local pool (`workers.py`): the local cluster's workers ignore
SIGINT from their start (`dask_setup`), and a caller that stops before every file is read
cancels its tasks before it closes the client and the cluster.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from roofreport.errors import UsageError
from roofreport.pipeline.tasks import Crash
from roofreport.pipeline.workers import ignore_interrupts, interrupts_held, main_hidden

ADDRESS_ENV = "DASK_SCHEDULER_ADDRESS"
_CONNECT_TIMEOUT = "20s"
_STALL_CHECK_S = 30   # no task done for this long: is the local cluster left without a worker?
_WAIT_S = 0.5         # one wait for a task to finish (a Ctrl-C is taken between two)


def _modules():
    try:
        import dask
        import distributed
    except ImportError:
        raise UsageError("the dask executor needs Dask distributed: "
                         "pip install 'roofreport[dask]'") from None
    return dask, distributed


class DaskExecutor:
    """See the module docstring."""

    name = "dask"

    def __init__(self, address: str | None = None, workers: int | None = None):
        dask, distributed = _modules()
        address = address or os.environ.get(ADDRESS_ENV) or dask.config.get("scheduler-address", None)
        self._cluster = None
        self._workers = workers
        self._futures: list = []
        try:
            if address:
                self.name = f"dask at {address}"
                self.client = distributed.Client(address, timeout=_CONNECT_TIMEOUT)
            else:
                self._start_local()
        except (OSError, TimeoutError) as exc:
            self.close()
            raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        except BaseException:   # Ctrl-C while the cluster starts: nobody else would close it
            self.close()
            raise

    def _start_local(self) -> None:
        dask, distributed = _modules()
        with interrupts_held():   # (a Ctrl-C now: once it can be closed)
            self._cluster = _local_cluster(dask, distributed, self._workers)
        self.client = distributed.Client(self._cluster)

    def _completed(self, futures: list, resubmit: Callable[[Any], Any]):
        """`futures` as they complete. A local cluster left with no worker (a nanny that could
        not restart its dead worker: seen on a loaded machine, where the read then waited for
        ever) is closed and started anew, and the tasks still pending are submitted to it
        (`resubmit(old future) -> new future`)."""
        distributed = _modules()[1]
        pending, last_done = list(futures), time.monotonic()
        while pending:
            # (short waits with a Ctrl-C held, as Dask's other blocking calls: interrupted
            # inside, Dask's own machinery was left half done and a restarted worker outlived
            # the command; between two waits it is taken at once)
            with interrupts_held():
                try:
                    done, not_done = distributed.wait(pending, timeout=_WAIT_S, return_when="FIRST_COMPLETED")
                except TimeoutError:   # (dask's is the builtin's)
                    done, not_done = set(), pending
            pending = list(not_done)
            yield from done
            if done:
                last_done = time.monotonic()
            elif (time.monotonic() - last_done > _STALL_CHECK_S and self._cluster is not None
                  and not self.client.scheduler_info().get("workers")):
                self._futures = pending
                self.close()
                self._start_local()
                pending = [resubmit(future) for future in pending]
                self._futures = pending
                last_done = time.monotonic()

    def run(self, fn: Callable[[Any], Any], tasks: Sequence[Any]):
        # Dask's blocking client calls (`result`, `release`) are run with a Ctrl-C held off
        # until they return: interrupted inside, Dask logs a traceback of its own (a callback
        # that cancels a future not made yet). The waits between them take it at once.
        run_id = uuid.uuid4().hex[:12]
        positions = {}
        futures = self._futures = []
        with interrupts_held():
            for position, task in enumerate(tasks):
                future = self.client.submit(fn, task, key=f"roofreport-read-{run_id}-{position}", pure=False)
                positions[future.key] = position
                futures.append(future)

        def again(future, prefix="read"):
            position = positions.pop(future.key)
            renewed = self.client.submit(fn, tasks[position], key=f"roofreport-{prefix}-{run_id}-{position}",
                                         pure=False)
            positions[renewed.key] = position
            return renewed

        suspects = []
        for future in self._completed(futures, again):
            with interrupts_held():
                outcome = future.result() if future.status == "finished" else None
                future.release()
            if outcome is None:   # its worker died (a task queued on a dying worker fails with it)
                suspects.append(positions[future.key])
            else:
                yield positions[future.key], outcome
        # Each suspect once more, alone on the cluster: a death now is its own.
        for position in sorted(suspects):
            with interrupts_held():
                retry = self.client.submit(fn, tasks[position], key=f"roofreport-retry-{run_id}-{position}",
                                           pure=False)
            positions[retry.key] = position
            self._futures.append(retry)
            for retry in self._completed([retry], lambda future: again(future, "retry")):
                pass
            with interrupts_held():
                outcome = retry.result() if retry.status == "finished" else Crash(_failure(retry))
                retry.release()
            yield position, outcome
        self._futures = []

    def close(self) -> None:
        """Close the client (and the cluster started here). When the caller stopped before its
        run's end (Ctrl-C, an error), its tasks are cancelled first and the local cluster's
        workers killed: closing would wait for the files they are reading."""
        stopped_early = any(not future.done() for future in self._futures)
        # (a run abandoned: the comms its killed workers leave closed are no news, and Dask logs
        # them with a traceback, at INFO, on this process's stderr)
        dask_log = logging.getLogger("distributed")
        level = dask_log.level
        if stopped_early:
            dask_log.setLevel(logging.CRITICAL)
        try:
            self._close(stopped_early)
        finally:
            dask_log.setLevel(level)

    def _close(self, stopped_early: bool) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            if stopped_early:
                client.cancel([future for future in self._futures if not future.done()], force=True)
            client.close()
        self._futures = []
        if self._cluster is not None:
            if stopped_early:
                _kill_workers(self._cluster)
            self._cluster.close()
            self._cluster = None


def _kill_workers(cluster) -> None:
    """Kill the worker processes of a local cluster (their nannies, in this process, stay to
    close as usual)."""
    for nanny in list(cluster.workers.values()):
        pid = getattr(getattr(nanny, "process", None), "pid", None)
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))


def _local_cluster(dask, distributed, workers: int | None):
    count = workers or min(os.cpu_count() or 1, 4)
    config = {"distributed.scheduler.allowed-failures": 0,
              # the nanny restarts a dead worker: its "Restarting worker" warnings are the
              # failures this executor reports itself
              "distributed.logging.distributed": "error"}
    with dask.config.set(config), main_hidden():
        return distributed.LocalCluster(n_workers=count, threads_per_worker=1, processes=True,
                                        dashboard_address=None, silence_logs=logging.ERROR,
                                        preload=[__name__])   # `dask_setup` in every worker


def dask_setup(worker) -> None:
    """What a worker of the local cluster does first (Dask runs it as the worker starts, and as
    the nanny restarts one): leave SIGINT to the caller."""
    ignore_interrupts()


def _failure(future) -> str:
    try:
        error = future.exception(timeout=5)
    except Exception as exc:  # noqa: BLE001 - whatever Dask says, it is this file's failure
        error = exc
    name = type(error).__name__
    if name == "KilledWorker":
        return ("its Dask worker died while reading it, twice (a crash in a reader, or the "
                "worker ran out of memory)")
    return f"the Dask worker could not run it ({name}: {str(error)[:300]})"
