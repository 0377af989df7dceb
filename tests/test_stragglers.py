"""Stragglers (analysis/stragglers.py): the slowest rank against the median, per step and
overall, and why, on the demo folder's four-rank DDP job (sample_logs/ddp_4rank/: rank 3's
kernels 30 % slower, the others waiting for it in the all-reduce) and on small step tables."""

from __future__ import annotations

import polars as pl
import pytest

import roofreport
from roofreport.analysis import stragglers
from tests.conftest import SAMPLE_LOGS


@pytest.fixture(scope="module")
def ddp() -> roofreport.Dataset:
    return roofreport.read(SAMPLE_LOGS / "ddp_4rank", jobs=1)


def test_rank_3_is_the_straggler_of_every_step_by_its_compute(ddp):
    frame = stragglers.stragglers(ddp.steps, ddp.runs)
    assert frame["step"].to_list() == [3, 4, 5, None]
    assert set(frame["distributed_job"]) == {"ddp_4rank/resnet50_rank-*.pt.trace.json"}
    assert set(frame["slowest_rank"]) == {3} and set(frame["ranks"]) == {4}
    assert set(frame["cause"]) == {"more compute"}
    overall = frame.filter(pl.col("step").is_null()).row(0, named=True)
    assert (overall["steps"], overall["slowest_run"]) == (3, "ddp_4rank/resnet50_rank-3.pt.trace.json")
    # its kernels take 30 % longer; copies and idle time, the same on every rank, dilute it
    assert overall["slower_pct"] == pytest.approx(27.9, abs=0.1)
    assert overall["compute_excess_ns"] == pytest.approx(10.9e6, rel=0.01)
    # the others wait about 11 ms a step for it inside the all-reduce
    assert overall["others_wait_ns"] == pytest.approx(11.09e6, rel=0.01)
    assert overall["communication_excess_ns"] < 0


def test_waiting_is_taken_out_of_a_ranks_own_time(ddp):
    rows = stragglers.rank_steps(ddp.steps, ddp.runs).filter(pl.col("step") == 4).sort("rank")
    # every rank's step lasts as long as rank 3's; without the wait, ranks 0-2 are ~39 ms
    assert rows["duration_ns"].to_list() == pytest.approx([50.05e6] * 4, rel=0.002)
    assert rows["wait_ns"][3] == 0 and all(wait > 10e6 for wait in rows["wait_ns"][:3])
    assert rows["own_ns"].to_list()[:3] == pytest.approx([39e6] * 3, rel=0.02)


def _steps(rows: list[tuple]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(run, rank, step, compute, communication, memory, idle) -> the steps and runs tables."""
    steps = pl.DataFrame([{"run": run, "rank": rank, "step": step, "compute_ns": compute,
                           "communication_ns": comm, "memory_ns": memory, "idle_ns": idle,
                           "duration_ns": compute + comm + memory + idle}
                          for run, rank, step, compute, comm, memory, idle in rows],
                         schema_overrides={"step": pl.Int64, "rank": pl.Int64})
    runs = steps.select("run", "rank").unique().with_columns(pl.lit("job").alias("distributed_job"))
    return steps, runs


def test_a_rank_idle_before_the_collective_is_idle_not_compute():
    steps, runs = _steps([("a", 0, 1, 80.0, 30.0, 0.0, 10.0), ("b", 1, 1, 80.0, 28.0, 0.0, 12.0),
                          ("c", 2, 1, 80.0, 10.0, 0.0, 30.0)])
    row = stragglers.stragglers(steps, runs).row(0, named=True)
    assert (row["step"], row["slowest_rank"], row["cause"]) == (1, 2, "idle before collectives")
    assert row["slowest_ns"] == 120.0 and row["median_ns"] == 102.0
    assert row["others_wait_ns"] == 19.0


def test_a_trace_without_steps_is_one_overall_row_and_one_rank_is_no_job():
    steps, runs = _steps([("a", 0, None, 50.0, 5.0, 0.0, 0.0), ("b", 1, None, 40.0, 15.0, 0.0, 0.0)])
    frame = stragglers.stragglers(steps, runs)
    assert frame.select("step", "steps", "slowest_rank", "cause").rows() == [(None, 1, 0, "more compute")]
    alone, alone_runs = _steps([("a", 0, 1, 50.0, 5.0, 0.0, 0.0)])
    assert stragglers.stragglers(alone, alone_runs).height == 0
    assert stragglers.stragglers(steps, runs.drop("distributed_job")).columns == list(stragglers.STRAGGLER_COLUMNS)
