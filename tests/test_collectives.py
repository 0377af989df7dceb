"""Collectives per rank (analysis/collectives.py): message sizes from Kineto's collective args,
nccl-tests' algorithm and bus bandwidth, and the wait a straggler puts into the other ranks'
kernels, on the demo folder's four-rank DDP job (sample_logs/ddp_4rank/: 102 MB all-reduced
per step, 800 us of transfer once every rank arrived, rank 3 the straggler) and the corpus."""

from __future__ import annotations

import polars as pl
import pytest

import roofreport
from roofreport.analysis import collectives
from roofreport.model import parallel
from tests.conftest import SAMPLE_LOGS, corpus_path

GRADIENT_BYTES = 25_557_032 * 4      # ResNet-50's fp32 gradients


@pytest.fixture(scope="module")
def ddp() -> roofreport.Dataset:
    return roofreport.read(SAMPLE_LOGS / "ddp_4rank", jobs=1)


def test_the_kernel_args_give_the_message_and_the_group(ddp):
    args = ddp.metrics.filter(pl.col("section") == "kineto collective")
    assert set(args["metric"]) == {"Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype"}
    table = collectives.collective_table(ddp.activities, ddp.metrics, ddp.runs)
    assert table["rank"].to_list() == [0, 1, 2, 3]
    assert set(table["collective"]) == {"all-reduce"} and set(table["dtype"]) == {"Float"}
    assert set(table["message_bytes"]) == {GRADIENT_BYTES} and set(table["group_size"]) == {4}
    assert set(table["count"]) == {3} and set(table["bus_factor"]) == {1.5}
    assert set(table["distributed_job"]) == {"ddp_4rank/resnet50_rank-*.pt.trace.json"}


def test_bus_bandwidth_is_nccl_tests_and_a_lower_bound_where_ranks_wait(ddp):
    table = collectives.collective_table(ddp.activities, ddp.metrics, ddp.runs).sort("rank")
    for row in table.iter_rows(named=True):
        algbw = GRADIENT_BYTES * row["count"] / (row["time_ns"] / 1e9)
        assert row["algbw_bytes_per_s"] == pytest.approx(algbw)
        assert row["busbw_bytes_per_s"] == pytest.approx(algbw * 2 * 3 / 4)
        assert row["bandwidth_lower_bound"]
        # the transfer: rank 3's 800 us per call, the last to arrive
        assert row["transfer_ns"] == pytest.approx(3 * 800_000, abs=3)
        assert row["transfer_busbw_bytes_per_s"] == pytest.approx(GRADIENT_BYTES / 800e-6 * 1.5, rel=1e-5)
        assert row["wait_ns"] == pytest.approx(row["time_ns"] - row["transfer_ns"])
    waits = table["wait_ns"].to_list()
    # ranks 0-2 wait about 13 ms a step inside the all-reduce for rank 3; rank 3 not at all
    assert all(wait > 3 * 12e6 for wait in waits[:3]) and waits[3] == pytest.approx(0, abs=3)
    assert table["busbw_bytes_per_s"][0] < 0.1 * table["transfer_busbw_bytes_per_s"][0]


@pytest.mark.parametrize("collective, group, factor", [
    ("all-reduce", 8, 2 * 7 / 8), ("all-gather", 8, 7 / 8), ("reduce-scatter", 4, 3 / 4),
    ("all-to-all", 2, 1 / 2), ("broadcast", 8, 1.0), ("send/recv", 2, 1.0)])
def test_bus_factors_as_nccl_tests(collective, group, factor):
    frame = pl.DataFrame({"collective": [collective], "group": [group]})
    assert frame.select(collectives.bus_factor(pl.col("collective"), pl.col("group")))[0, 0] == pytest.approx(factor)


@pytest.mark.parametrize("name, kind", [
    ("allreduce", "all-reduce"), ("_allgather_base", "all-gather"), ("all_gather_into_tensor", "all-gather"),
    ("reduce_scatter_tensor", "reduce-scatter"), ("all_to_allv", "all-to-all"), ("broadcast", "broadcast"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all-reduce"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "send/recv"),
    ("ncclKernel_ReduceScatter_RING_LL_Sum_bf16", "reduce-scatter"), ("ncclBroadcastKernel_copy_i8", "broadcast"),
    ("ncclKernel_Reduce_RING_LL_Sum_float", "reduce"), ("rcclGenericKernel<1, false>", None)])
def test_collective_kinds_by_name(name, kind):
    assert pl.select(parallel.kind(pl.lit(name)))[0, 0] == kind


def test_all_gather_counts_the_whole_array_and_bf16_two_bytes():
    activities = pl.DataFrame({"run": ["r"] * 2, "source_file": ["f"] * 2, "source_line": [1, 2],
                               "kind": ["kernel"] * 2, "name": ["ncclDevKernel_AllGather_RING_LL", "rcclGenericKernel"],
                               "start_ns": [0.0, 10.0], "duration_ns": [1e6, 1e6], "rank": [0, 0]})
    metrics = pl.DataFrame({"run": ["r"] * 5, "source_file": ["f"] * 5, "launch_id": [1] * 5,
                            "section": ["kineto collective"] * 5,
                            "metric": ["Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype"],
                            "value": [None, 1e6, 8e6, 8.0, None], "value_text": ["_allgather_base", None, None, None, "BFloat16"]})
    runs = pl.DataFrame({"run": ["r"], "rank": [0], "distributed_job": [None], "world_size": [8]},
                        schema_overrides={"distributed_job": pl.String})
    table = collectives.collective_table(activities, metrics, runs)
    gather = table.filter(pl.col("collective") == "all-gather").row(0, named=True)
    assert gather["message_bytes"] == 16e6 and gather["algbw_bytes_per_s"] == pytest.approx(16e9)
    assert gather["busbw_bytes_per_s"] == pytest.approx(16e9 * 7 / 8) and gather["transfer_ns"] is None
    rccl = table.filter(pl.col("collective") == "other").row(0, named=True)
    assert rccl["message_bytes"] is None and rccl["group_size"] == 8 and rccl["time_ns"] == 1e6


def test_old_traces_name_the_collective_by_kernel_and_leave_the_bandwidth_unknown():
    """HTA's traces (PyTorch 1.x): no collective args. The two sampled ranks of a 128-rank job
    are not the whole job: no transfer time either."""
    data = roofreport.read(corpus_path("kineto", "hta-trace_filter"), jobs=1)
    table = collectives.collective_table(data.activities, data.metrics, data.runs)
    assert table.select("rank", "collective", "count", "group_size").rows() == [
        (0, "send/recv", 10, 128), (1, "send/recv", 10, 128)]
    assert table["message_bytes"].null_count() == 2 and table["transfer_ns"].null_count() == 2
    assert table["time_ns"].to_list() == pytest.approx([396_199_000, 379_053_000], abs=1000)
