"""Where per-file work runs (pipeline/executors.py, workers.py, dask_executor.py): the local
pool and Dask give the tables of a read in this process; a file whose reader kills its process
(`os._exit`, a segmentation fault) is retried once, then recorded as a failed file, and the
rest goes on; progress is reported for every file on both."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

import roofreport
from roofreport.pipeline import executors, ingest
from roofreport.pipeline.tasks import Crash
from roofreport.tables import schema
from tests import crashing
from tests.conftest import SAMPLE_LOGS

CRASHING = ("out.CRASH-EXIT.1", "out.CRASH-SEGV.1")


@pytest.fixture()
def logs_with_crashes(tmp_path: Path) -> Path:
    """The demo logs and two files whose reading kills the process (see tests/crashing.py)."""
    folder = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, folder)
    (folder / "crashes").mkdir()
    for name in CRASHING:
        shutil.copy(SAMPLE_LOGS / "k80_sweep" / "out.alexnet_16_0.01_k80_full.812041", folder / "crashes" / name)
    return folder


def assert_tables_equal(left: roofreport.Dataset, right: roofreport.Dataset, skip=("files",)) -> None:
    for name in schema.TABLES:
        if name not in skip:
            assert_frame_equal(left.tables[name], right.tables[name], check_exact=True)


def crashed_reads(folder: Path, monkeypatch, executor: str | None, **options) -> roofreport.Dataset:
    monkeypatch.setattr(ingest, "read_one", crashing.read_or_crash)
    monkeypatch.setattr(executors, "PARALLEL_MIN_SECONDS", 0.0)   # a pool even for these few files
    seen = []
    data = roofreport.read(folder, executor=executor, progress=lambda done, total, name: seen.append(done),
                           **options)
    assert seen == list(range(1, len(data.files) + 1))
    return data


def check_crashes_recorded(data: roofreport.Dataset, folder: Path) -> None:
    failed = {Path(f.path).name: f for f in data.files if f.status == "error"}
    for name in CRASHING:
        assert "died while reading it, twice" in failed[name].error, failed[name].error
        assert failed[name].run is None and not failed[name].rows
    # everything else was read as without them
    assert_tables_equal(data, roofreport.read(folder, jobs=1, exclude=["crashes/*"]))


def test_the_local_pool_retries_a_task_whose_process_died_then_gives_up():
    pool = executors.choose("local", 2, 1000)
    try:
        results = dict(pool.run(crashing.square_or_crash, list(range(10))))
    finally:
        pool.close()
    assert {n: r for n, r in results.items() if not isinstance(r, Crash)} == \
        {n: n * n for n in range(10) if n not in (3, 5)}
    assert isinstance(results[3], Crash) and isinstance(results[5], Crash)


def test_a_few_small_files_are_read_in_this_process():
    assert isinstance(executors.choose(None, None, 3, 10_000), executors.InProcess)
    assert isinstance(executors.choose("local", 1, 500, 10**9), executors.InProcess)
    assert not isinstance(executors.choose("local", 2, 500, 10**7), executors.InProcess)
    with pytest.raises(roofreport.UsageError, match="unknown executor"):
        roofreport.read(SAMPLE_LOGS, executor="spark")


def test_a_file_that_crashes_its_reader_fails_alone_on_the_local_pool(logs_with_crashes, monkeypatch):
    data = crashed_reads(logs_with_crashes, monkeypatch, "local", jobs=2)
    check_crashes_recorded(data, logs_with_crashes)


# -- Dask --------------------------------------------------------------------------------------

distributed = pytest.importorskip("distributed", reason="Dask distributed is not installed "
                                  "(pip install 'roofreport[dask]')")


@pytest.fixture(scope="module")
def cluster():
    """A Dask cluster of someone else's: two worker processes on this machine."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as running:
        yield running


@pytest.mark.slow
def test_dask_gives_the_tables_of_the_local_run():
    local = roofreport.read(SAMPLE_LOGS, jobs=1)
    on_dask = roofreport.read(SAMPLE_LOGS, executor="dask", jobs=2)
    assert_tables_equal(on_dask, local, skip=())


@pytest.mark.slow
def test_a_file_that_crashes_its_reader_fails_alone_on_dask(logs_with_crashes, monkeypatch):
    data = crashed_reads(logs_with_crashes, monkeypatch, "dask", jobs=2)
    check_crashes_recorded(data, logs_with_crashes)


@pytest.mark.slow
def test_dask_uses_a_running_cluster_by_address_or_by_dasks_variable(cluster, monkeypatch):
    local = roofreport.read(SAMPLE_LOGS / "a100", jobs=1)
    host_port = cluster.scheduler_address.removeprefix("tcp://")
    by_address = roofreport.read(SAMPLE_LOGS / "a100", executor=f"dask://{host_port}")
    assert_tables_equal(by_address, local, skip=())
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
    by_variable = roofreport.read(SAMPLE_LOGS / "a100", executor="dask")
    assert_tables_equal(by_variable, local, skip=())
    prefixes = set(cluster.scheduler.task_prefixes)
    assert "roofreport-read" in prefixes   # the files were read on this cluster


def test_an_unreachable_scheduler_is_a_usage_error(monkeypatch):
    from roofreport.pipeline import dask_executor

    monkeypatch.setattr(dask_executor, "_CONNECT_TIMEOUT", "2s")
    with pytest.raises(roofreport.UsageError, match="cannot reach the Dask scheduler"):
        roofreport.read(SAMPLE_LOGS / "a100", executor="dask://127.0.0.1:9")


@pytest.mark.slow
def test_a_local_cluster_left_without_workers_is_started_anew(monkeypatch):
    """A nanny that cannot restart its dead worker (an error in the restart, seen on a loaded
    machine) leaves the local cluster with no worker, and the read waited for ever: the
    executor starts the cluster anew and the tasks still pending run there. Here the workers
    are killed mid-run while every restart fails."""
    import time

    from distributed.nanny import Nanny

    from roofreport.pipeline import dask_executor

    monkeypatch.setattr(dask_executor, "_STALL_CHECK_S", 2)
    pool = dask_executor.DaskExecutor(workers=1)
    try:
        results = pool.run(crashing.slow_square, list(range(6)))
        first = next(results)

        async def cannot_restart(self, *args, **kwargs):
            raise RuntimeError("the worker did not come back (a test's stand-in)")

        with monkeypatch.context() as patched:
            patched.setattr(Nanny, "instantiate", cannot_restart)
            dask_executor._kill_workers(pool._cluster)
            deadline = time.monotonic() + 30
            while pool.client.scheduler_info()["workers"] and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not pool.client.scheduler_info()["workers"]
        outcomes = dict([first, *results])
    finally:
        pool.close()
    assert outcomes == {n: n * n for n in range(6)}
