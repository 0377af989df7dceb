"""The ranks frame (model/ranks.py, the model's `ranks`): each rank's time split as Holistic Trace Analysis
splits it, checked against HTA 0.5.0's own numbers (computed once in a scratch environment,
`TraceAnalysis(trace_dir).get_temporal_breakdown()` and `.get_comm_comp_overlap()`, and written
here: HTA is no dependency), and on small timelines whose answer is plain."""

from __future__ import annotations

import polars as pl
import pytest

import roofreport
from roofreport.model import ranks
from tests.conftest import corpus_path

# HTA 0.5.0 on the corpus's Kineto traces: idle, compute and non-compute % of the span, and the
# communication-computation overlap %, per trace (rank).
HTA = {
    # two sampled ranks of a 128-rank job (NCCL send/recv), ProfilerStep#551-552
    ("hta-trace_filter", 0): (53.56, 17.71, 28.74, 11.81),
    ("hta-trace_filter", 1): (54.72, 22.57, 22.72, 20.05),
    # rank 1 of a two-rank job with NCCL all-reduce, ProfilerStep#2-6
    ("hta-df_index_resolver", 1): (46.08, 35.55, 18.37, 0.0),
    # one rank, no steps, no collectives (HTA's overlap: nan)
    ("hta-critical_path_alexnet", 0): (99.49, 0.08, 0.43, None),
}


def _within(ours: float, theirs: float, relative: float = 0.02) -> bool:
    return abs(ours - theirs) <= relative * abs(theirs) + 0.005   # (HTA rounds to 0.01)


@pytest.fixture(scope="module")
def kineto() -> roofreport.Dataset:
    return roofreport.read(corpus_path("kineto"), jobs=1)


def _row(frame: pl.DataFrame, folder: str, rank: int) -> dict:
    return frame.filter(pl.col("run").str.contains(folder) & (pl.col("rank") == rank)).row(0, named=True)


@pytest.mark.parametrize("folder, rank", list(HTA))
def test_the_breakdown_and_overlap_are_htas_in_htas_window(kineto, folder, rank):
    frame = ranks.rank_breakdown(kineto.activities, kineto.runs, kineto.steps, drop_last_step=True)
    row = _row(frame, folder, rank)
    idle, compute, non_compute, overlap = HTA[(folder, rank)]
    assert _within(row["idle_pct"], idle) and _within(row["compute_pct"], compute)
    assert _within(row["non_compute_pct"], non_compute)
    if overlap is None:
        assert row["comm_ns"] == 0 and row["comm_overlap_pct"] is None
    else:
        assert row["comm_overlap_pct"] == pytest.approx(overlap, abs=2.0)
    assert row["idle_ns"] + row["compute_ns"] + row["non_compute_ns"] == pytest.approx(row["span_ns"])


def test_the_two_sampled_ranks_to_the_hundredth_and_of_one_job(kineto):
    frame = ranks.rank_breakdown(kineto.activities, kineto.runs, kineto.steps, drop_last_step=True)
    job = frame.filter(pl.col("distributed_job") == "hta-trace_filter/sampled_rank-*.json.gz").sort("rank")
    assert job["rank"].to_list() == [0, 1] and job["world_size"].to_list() == [128, 128]
    got = job.select(pl.col("idle_pct", "compute_pct", "non_compute_pct", "comm_overlap_pct").round(2)).rows()
    assert got == [(53.56, 17.71, 28.74, 11.81), (54.72, 22.57, 22.72, 20.05)]
    # HTA's span (its kernel_time), in us: 600,058 and 600,674
    assert job["span_ns"].to_list() == pytest.approx([600_058_000, 600_674_000], abs=1000)


def test_by_default_every_step_counts_the_last_one_too(kineto):
    whole = ranks.rank_breakdown(kineto.activities, kineto.runs, kineto.steps)
    hta = ranks.rank_breakdown(kineto.activities, kineto.runs, kineto.steps, drop_last_step=True)
    for rank in (0, 1):
        ours, theirs = _row(whole, "trace_filter", rank), _row(hta, "trace_filter", rank)
        # two steps: HTA reads the first only
        assert ours["span_ns"] > 2 * theirs["span_ns"] * 0.99
        assert ours["steps"] == 2 and ours["step_time_ns"] == pytest.approx(
            {0: 615_120_000, 1: 619_271_500}[rank], rel=1e-6)
    assert _row(whole, "trace_filter", 0)["idle_pct"] == pytest.approx(55.21, abs=0.01)


def test_a_ns_trace_matches_hta_once_rounded_as_hta_rounds_it(kineto):
    """HTA rounds a trace of nanosecond times to whole microseconds (start up, end down:
    pytorch/pytorch#122425); roofreport keeps the nanoseconds. Rounded the same way, the H100
    trace gives HTA's 59.93 / 40.03 / 0.03 %."""
    activities = kineto.activities.filter(pl.col("run") == "h100-resnet18")
    end = ((pl.col("start_ns") + pl.col("duration_ns")) / 1000).floor() * 1000
    start = (pl.col("start_ns") / 1000).ceil() * 1000
    rounded = activities.with_columns(start.alias("start_ns"), (end - start).alias("duration_ns"))
    row = ranks.rank_breakdown(rounded, kineto.runs, kineto.steps).row(0, named=True)
    assert (round(row["idle_pct"], 2), round(row["compute_pct"], 2), round(row["non_compute_pct"], 2)) == \
        (59.93, 40.03, 0.03)
    assert row["rank"] is None   # no distributedInfo: one process, no rank


# -- small timelines ---------------------------------------------------------------------------

def _activities(rows: list[tuple]) -> pl.DataFrame:
    """(run, kind, name, start, duration[, rank]) rows."""
    return pl.DataFrame([dict(zip(("run", "kind", "name", "start_ns", "duration_ns", "rank"), (*row, None)[:6]))
                         for row in rows], schema={"run": pl.String, "kind": pl.String, "name": pl.String,
                                                   "start_ns": pl.Float64, "duration_ns": pl.Float64,
                                                   "rank": pl.Int64})


def _runs(*rows: tuple) -> pl.DataFrame:
    return pl.DataFrame([{"run": run, "rank": rank, "distributed_job": job, "world_size": 2}
                         for run, rank, job in rows],
                        schema={"run": pl.String, "rank": pl.Int64, "distributed_job": pl.String,
                                "world_size": pl.Int64})


def test_a_timeline_split_by_hand():
    # 0-100 gemm, 50-150 all-reduce, 200-220 memcpy, 300-400 rcclGenericKernel beside 350-380 gemm
    acts = _activities([
        ("r0", "kernel", "volta_sgemm_128x64_nn", 0, 100),
        ("r0", "kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 50, 100),
        ("r0", "memcpy", "Memcpy HtoD (Pageable -> Device)", 200, 20),
        ("r0", "kernel", "rcclGenericKernel<1, false>", 300, 100),
        ("r0", "kernel", "volta_sgemm_128x64_nn", 350, 30),
    ])
    row = ranks.rank_breakdown(acts, _runs(("r0", 3, "job"))).row(0, named=True)
    assert (row["rank"], row["distributed_job"], row["world_size"]) == (3, "job", 2)
    assert (row["span_ns"], row["busy_ns"], row["idle_ns"]) == (400, 270, 130)
    assert (row["compute_ns"], row["comm_ns"], row["memory_ns"]) == (130, 200, 20)
    assert row["non_compute_ns"] == 400 - 130 - 130
    # all-reduce 50-100 under the first gemm, rccl 350-380 under the second
    assert (row["comm_overlap_ns"], row["exposed_comm_ns"]) == (80, 120)
    assert row["comm_overlap_pct"] == pytest.approx(40.0)
    assert row["steps"] is None


def test_each_rank_of_a_run_apart_and_the_rows_rank_before_the_runs():
    acts = _activities([("job", "kernel", "gemm", 0, 10, 0), ("job", "kernel", "gemm", 0, 30, 1),
                        ("solo", "kernel", "gemm", 5, 5)])
    frame = ranks.rank_breakdown(acts, _runs(("job", None, None), ("solo", 7, None)))
    assert frame.select("run", "rank", "span_ns").rows() == [("job", 0, 10), ("job", 1, 30), ("solo", 7, 5)]


def test_step_times_median_and_spread_per_rank():
    acts = _activities([("r", "kernel", "gemm", 0, 10)])
    steps = pl.DataFrame({"run": ["r"] * 3, "step": [1, 2, 3], "rank": [None] * 3,
                          "start_ns": [0.0, 100.0, 210.0], "duration_ns": [100.0, 110.0, 90.0]},
                         schema_overrides={"rank": pl.Int64})
    row = ranks.rank_breakdown(acts, _runs(("r", 0, None)), steps).row(0, named=True)
    assert (row["steps"], row["step_time_ns"], row["step_time_spread_pct"]) == (3, 100.0, 20.0)


def test_no_gpu_activity_no_rows():
    assert ranks.rank_breakdown(_activities([]), _runs()).columns == list(ranks.RANK_COLUMNS)


# `nvprof --print-gpu-trace --csv` of one process driving two K80s (DataParallel), in the
# layout of the corpus's and tests/data/wild's CSV traces (the Device cell names each row's GPU).
_TWO_GPU_TRACE = """\
==154471== NVPROF is profiling process 154471, command: python main.py -a alexnet -b 32 --epochs 1 --lr 0.01 /data
==154471== Profiling application: python main.py -a alexnet -b 32 --epochs 1 --lr 0.01 /data
==154471== Profiling result:
"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread","Static SMem","Dynamic SMem","Size","Throughput","SrcMemType","DstMemType","Device","Context","Stream","Name","Correlation_ID"
s,ms,,,,,,,,KB,B,MB,GB/s,,,,,,,
0.000000,1.000000,,,,,,,,,,19.267584,19.267584,"Pinned","Device","Tesla K80 (0)","1","7","[CUDA memcpy HtoD]",1016
0.001000,2.000000,64,1,1,256,1,1,72,16.500000,0,,,,,"Tesla K80 (0)","1","7","ncclBroadcastKernel_copy_i8(ncclColl)",1020
0.001000,2.000000,64,1,1,256,1,1,72,16.500000,0,,,,,"Tesla K80 (1)","2","20","ncclBroadcastKernel_copy_i8(ncclColl)",1021
0.003000,4.000000,64,1,1,256,1,1,72,16.500000,0,,,,,"Tesla K80 (0)","1","7","void cudnn::detail::implicit_convolve_sgemm<float, float, int=1024, int=5, int=5, int=3, int=3, int=3, int=1, bool=1, bool=0, bool=1>(int, int, int, float const *, int, float*, float*, kernel_conv_params, int, float, float, int, float, float, int, int)",1030
0.003500,3.000000,64,1,1,256,1,1,72,16.500000,0,,,,,"Tesla K80 (1)","2","20","void cudnn::detail::implicit_convolve_sgemm<float, float, int=1024, int=5, int=5, int=3, int=3, int=3, int=1, bool=1, bool=0, bool=1>(int, int, int, float const *, int, float*, float*, kernel_conv_params, int, float, float, int, float, float, int, int)",1031
0.007000,1.000000,64,1,1,256,1,1,72,16.500000,0,,,,,"Tesla K80 (0)","1","7","ncclReduceKernel_sum_f32(ncclColl)",1040
0.007000,1.000000,64,1,1,256,1,1,72,16.500000,0,,,,,"Tesla K80 (1)","2","20","ncclReduceKernel_sum_f32(ncclColl)",1041
0.008000,0.500000,1,1,1,128,1,1,32,0,0,,,,,"Tesla K80 (0)","1","7","void cunn_ClassNLLCriterion_updateOutput_kernel<float, float>(float*, float*, float*, long*, float*, int, int, int, int, long)",1050
"""


def test_one_process_driving_two_gpus_is_split_per_gpu_not_merged_into_one_timeline(tmp_path):
    path = tmp_path / "out.alexnet_32_0.01_k80_trace.154471"
    path.write_text(_TWO_GPU_TRACE)
    an = roofreport.analyze(roofreport.read(path, jobs=1))
    frame = an.distributed.ranks.sort("device")
    assert frame.select("rank", "device").rows() == [(None, "Tesla K80 (0)"), (None, "Tesla K80 (1)")]
    gpu0, gpu1 = frame.rows(named=True)
    # GPU 0: busy from 0 to 8.5 ms without a gap: copy 0-1, broadcast 1-3, conv 3-7, reduce 7-8, loss 8-8.5
    assert (gpu0["span_ns"], gpu0["busy_ns"], gpu0["idle_ns"]) == pytest.approx((8.5e6, 8.5e6, 0.0))
    assert (gpu0["compute_ns"], gpu0["comm_ns"], gpu0["memory_ns"]) == pytest.approx((4.5e6, 3e6, 1e6))
    # GPU 1: broadcast 1-3, conv 3.5-6.5, reduce 7-8: 6 ms busy of a 7 ms span, idle 3-3.5 and 6.5-7.
    # Merged with GPU 0's timeline, as one rank, it would have counted no idle time at all.
    assert (gpu1["span_ns"], gpu1["busy_ns"], gpu1["idle_ns"]) == pytest.approx((7e6, 6e6, 1e6))
    assert (gpu1["compute_ns"], gpu1["comm_ns"], gpu1["memory_ns"]) == pytest.approx((3e6, 3e6, 0.0))
    # the same devices give the run its GPU count and GPU 0's extra work: (2+4+1+0.5) / (2+3+1) ms
    assert an.tables["runs"]["devices"].to_list() == [2]
    assert an.distributed.single_process["gpu0_excess_pct"].to_list() == pytest.approx([25.0])
    # the report's DataParallel part gives each GPU's shares (GPU 1 idle 1 of its 7 ms: 14.3 %)
    from roofreport.report.assemble import assemble

    section = next(s for s in assemble(an).sections if s.id == "distributed")
    per_gpu = next(b for b in section.blocks if type(b).__name__ == "Table" and (b.caption or "").startswith("Per GPU"))
    cells = [[c if isinstance(c, str) else getattr(c, "text", str(c)) for c in row] for row in per_gpu.rows]
    assert [row[0] for row in cells] == ["Tesla K80 (0)", "Tesla K80 (1)"]
    assert [row[5] for row in cells] == ["0.0 %", "14.3 %"]


# `nsys stats --report cuda_gpu_trace --format csv` of one process on two GPUs, in the corpus's
# layout (nsys/csv/flame_torch_rtxa4500_cuda_gpu_trace_base_greenctx.csv: its header, a Device
# cell per row); the times are this test's own.
_NSYS_TWO_GPUS = """\
Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),Bytes (MB),Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name
1000000,500000,11,,,,,,,,,,4.194,8388.608,Pageable,Device,NVIDIA RTX A4500 (0),1,,7,[CUDA memcpy Host-to-Device]
1500000,2000000,12,336,1,1,256,1,1,40,0.000,0.000,,,,,NVIDIA RTX A4500 (0),1,,7,distribution_elementwise_grid_stride_kernel
1500000,1000000,13,336,1,1,256,1,1,40,0.000,0.000,,,,,NVIDIA RTX A4500 (1),2,,13,distribution_elementwise_grid_stride_kernel
4000000,1000000,14,50,1,1,256,1,1,16,0.000,0.000,,,,,NVIDIA RTX A4500 (1),2,,13,computeOffsetsKernel
"""


def test_an_nsys_gpu_trace_of_two_gpus_in_one_process_is_split_per_gpu(tmp_path):
    path = tmp_path / "two_gpus_cuda_gpu_trace.csv"
    path.write_text(_NSYS_TWO_GPUS)
    an = roofreport.analyze(roofreport.read(path, jobs=1))
    assert an.tables["runs"]["devices"].to_list() == [2]
    frame = an.distributed.ranks.sort("device")
    # GPU 0: copy 1-1.5 ms, kernel 1.5-3.5 ms: busy all its 2.5 ms span. GPU 1: kernels 1.5-2.5 and
    # 4-5 ms: 2 ms busy of a 3.5 ms span (together they would have shown 3.5 of 4 ms busy).
    assert frame.select("device", "span_ns", "busy_ns", "idle_ns", "compute_ns", "memory_ns").rows() == [
        ("NVIDIA RTX A4500 (0)", 2.5e6, 2.5e6, 0.0, 2e6, 0.5e6),
        ("NVIDIA RTX A4500 (1)", 3.5e6, 2e6, 1.5e6, 2e6, 0.0)]
