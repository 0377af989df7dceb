"""AMD CSV rows that once went missing (issue #34): names a vendor writes unquoted though they
hold commas (rocprof `--stats` and trace CSVs with Kokkos/C++ templates), read whole with the
name anchored by the fields the header names around it; and a row that does not fit is a
warning that makes the file partial. And what rocprof lists as kernels but is none: barrier
packets (activities of their own) and the runtime's blit kernels (copies and fills)."""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl
import pytest

import roofreport
from roofreport.enrich.categories import categorize
from tests.conftest import corpus_path

KOKKOS_FILL = ("void Kokkos::Impl::hip_parallel_launch_local_memory<Kokkos::Impl::ParallelFor<"
               "Kokkos::Impl::ViewFill<Kokkos::View<double***, Kokkos::LayoutLeft, Kokkos::Device<"
               "Kokkos::HIP, Kokkos::HIPSpace>, Kokkos::MemoryTraits<0u> >, Kokkos::LayoutLeft, "
               "Kokkos::HIP, 3, int>, Kokkos::MDRangePolicy<Kokkos::HIP, Kokkos::Rank<3u, "
               "(Kokkos::Iterate)1, (Kokkos::Iterate)1>, Kokkos::IndexType<int> >, Kokkos::HIP>, "
               "256u, 1u>(Kokkos::Impl::ParallelFor<Kokkos::Impl::ViewFill<Kokkos::View<double***, "
               "Kokkos::LayoutLeft, Kokkos::Device<Kokkos::HIP, Kokkos::HIPSpace>, Kokkos::MemoryTraits"
               "<0u> >, Kokkos::LayoutLeft, Kokkos::HIP, 3, int>, Kokkos::MDRangePolicy<Kokkos::HIP, "
               "Kokkos::Rank<3u, (Kokkos::Iterate)1, (Kokkos::Iterate)1>, Kokkos::IndexType<int> >, "
               "Kokkos::HIP> const*) [clone .kd]")
KOKKOS_FOR = ("void Kokkos::Impl::hip_parallel_launch_constant_memory<Kokkos::Impl::ParallelFor<"
              "Kokkos::RangePolicy<Kokkos::HIP>, Kokkos::HIP>>() [clone .kd]")
KOKKOS_REDUCE = ("void Kokkos::Impl::hip_parallel_launch_local_memory<Kokkos::Impl::ParallelReduce<"
                 "Kokkos::Impl::CombinedFunctorReducer<Functor, Kokkos::Sum<double, Kokkos::HostSpace>, "
                 "void>, Kokkos::RangePolicy<Kokkos::HIP>, Kokkos::HIP>, 1024u, 1u>(Kokkos::Impl::"
                 "ParallelReduce<Kokkos::Impl::CombinedFunctorReducer<Functor, Kokkos::Sum<double, "
                 "Kokkos::HostSpace>, void>, Kokkos::RangePolicy<Kokkos::HIP>, Kokkos::HIP> const*) [clone .kd]")
KOKKOS_SCAN = ("void Kokkos::Impl::hip_parallel_launch_local_memory<Kokkos::Impl::ParallelScan<Functor, "
               "Kokkos::RangePolicy<Kokkos::HIP>, Kokkos::HIP>, 1024u, 1u>(Kokkos::Impl::ParallelScan<"
               "Functor, Kokkos::RangePolicy<Kokkos::HIP>, Kokkos::HIP> const*) [clone .kd]")
# rocprof v1 `--stats` (results.stats.csv): the header quoted, the names not; 7 kernels whose
# rows split into 5 to 35 fields, the last four always Calls, TotalDurationNs, AverageNs, Percentage
V1_STATS_UNQUOTED = f"""\
"Name","Calls","TotalDurationNs","AverageNs","Percentage"
{KOKKOS_FILL},120,482316800,4019306,61.02
{KOKKOS_FOR},40,121458400,3036460,15.37
__amd_rocclr_fillBufferAligned.kd,96,87361920,910020,11.05
{KOKKOS_REDUCE},40,52441200,1311030,6.63
__amd_rocclr_copyBuffer.kd,24,26854080,1118920,3.40
{KOKKOS_SCAN},20,15238400,761920,1.93
Kokkos::Impl::hip_abort_kernel(),4,4620000,1155000,0.58
"""
# rocprofv3 `--stats` (8 columns: the name, then seven numbers)
V3_STATS_UNQUOTED = f"""\
"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"
{KOKKOS_REDUCE},40,52441200,1311030.000000,77.48,1290200,1402310,21003.511
{KOKKOS_FOR},40,15238400,380960.000000,22.52,370120,401330,8121.004
"""
# rocprof v1 counter/trace CSV (header unquoted): the name is the second field of 18
V1_TRACE_UNQUOTED = f"""\
Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,accum_vgpr,sgpr,wave_size,sig,obj,DurationNs
0,{KOKKOS_FOR},1,0,0,4395,4395,77824,256,0,0,12,4,48,64,0x0,0x7600d6e9b580,3036460
1,__amd_rocclr_fillBufferAligned.kd,1,0,1,4395,4395,77824,256,0,0,12,4,48,64,0x0,0x7600d6e9b5c0,910020
2,{KOKKOS_SCAN},1,1,0,4395,4395,1024,1024,0,0,32,0,24,64,0x0,0x7600d6b40b00,761920
"""


def _read(tmp_path: Path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    data = roofreport.read_file(str(path))
    return data, data.files[0]


def _field_counts(text: str) -> list[int]:
    return [line.count(",") + 1 for line in text.splitlines()[1:]]


def test_v1_stats_with_unquoted_template_names_reads_every_kernel_whole(tmp_path):
    assert max(_field_counts(V1_STATS_UNQUOTED)) >= 35 and min(_field_counts(V1_STATS_UNQUOTED)) == 5
    data, read = _read(tmp_path, "results.stats.csv", V1_STATS_UNQUOTED)
    assert (read.status, read.warnings) == ("ok", [])
    kernels = data.kernels.sort("source_line")
    assert kernels["name"].to_list() == [KOKKOS_FILL, KOKKOS_FOR, "__amd_rocclr_fillBufferAligned.kd",
                                         KOKKOS_REDUCE, "__amd_rocclr_copyBuffer.kd", KOKKOS_SCAN,
                                         "Kokkos::Impl::hip_abort_kernel()"]
    assert kernels["count"].to_list() == [120, 40, 96, 40, 24, 20, 4]
    assert kernels["duration_ns"].sum() == 482316800 + 121458400 + 87361920 + 52441200 + 26854080 \
        + 15238400 + 4620000
    assert kernels["source_line"].to_list() == list(range(2, 9))


def test_v3_stats_with_unquoted_names_anchor_on_the_seven_numbers(tmp_path):
    data, read = _read(tmp_path, "app_kernel_stats.csv", V3_STATS_UNQUOTED)
    assert (read.status, read.warnings) == ("ok", [])
    kernels = data.kernels.sort("source_line")
    assert kernels.select("name", "count", "duration_ns").rows() == [
        (KOKKOS_REDUCE, 40, 52441200.0), (KOKKOS_FOR, 40, 15238400.0)]


def test_trace_with_unquoted_names_anchors_the_name_by_the_count_of_fields_around_it(tmp_path):
    data, read = _read(tmp_path, "results.csv", V1_TRACE_UNQUOTED)
    assert (read.status, read.warnings) == ("ok", [])
    kernels = data.kernels.sort("source_line")
    assert kernels["name"].to_list() == [KOKKOS_FOR, "__amd_rocclr_fillBufferAligned.kd", KOKKOS_SCAN]
    assert kernels["duration_ns"].to_list() == [3036460.0, 910020.0, 761920.0]
    queues = data.metrics.filter(pl.col("metric") == "sgpr").sort("source_line")["value"].to_list()
    assert queues == [48.0, 48.0, 24.0]   # the fields after the name are where they belong


def test_a_row_that_fits_no_anchoring_is_warned_and_makes_the_file_partial(tmp_path):
    # a row with a field too few (no name can explain that) among anchored ones
    text = V1_STATS_UNQUOTED.replace("Kokkos::Impl::hip_abort_kernel(),4,4620000,1155000,0.58",
                                     "Kokkos::Impl::hip_abort_kernel(),4,4620000")
    data, read = _read(tmp_path, "results.stats.csv", text)
    assert read.status == "partial" and data.kernels.height == 6
    (warning,) = read.warnings
    assert (warning.code, warning.line) == ("rocm.bad-row", 8)
    assert "results.stats.csv:8" in read.error


# -- not kernels: barrier packets, and the runtime's blit kernels --------------------------------

@pytest.mark.corpus
def test_barrier_packet_is_no_kernel_and_out_of_kernel_time():
    path = corpus_path("rocm", "rocprof", "stejpet__llama.cpp__results_q4.stats.csv")
    rows = list(csv.reader(path.read_text().splitlines()))[1:]
    data = roofreport.read(path)
    assert "<barrier packet>" not in data.kernels["name"].to_list()
    barrier = data.activities.filter(pl.col("kind") == "barrier")
    assert barrier.select("name", "duration_ns", "source_line").rows() == [("<barrier packet>", 1421345213.0, 2)]
    runs = roofreport.analyze(data).runs
    others = sum(int(row[2]) for row in rows if row[0] != "<barrier packet>")
    assert runs["kernel_time_ns"].to_list() == [float(others)]
    assert runs["kernel_launches"].to_list() == [sum(int(row[1]) for row in rows) - 256]


@pytest.mark.corpus
def test_blit_kernels_are_copies_and_fills_out_of_kernel_time():
    trace = corpus_path("rocm", "rocprofv3", "huizhg__gpu-perf-mi250x__results_prof_rocblas_4096_kernel_trace.csv")
    data = roofreport.read(trace)
    blits = data.kernels.filter(pl.col("name").str.starts_with("__amd_rocclr_"))
    assert blits.select("name", "category").rows() == [("__amd_rocclr_fillBufferAligned", "memset")]
    runs = roofreport.analyze(data).runs
    # durations sum to 79,035,819 ns (FORMATS-rocm.md 2.1), of which the fill's 27,680 are no kernel
    assert runs.select("kernel_time_ns", "transfer_time_ns").rows() == [(79035819.0 - 27680.0, 27680.0)]
    assert runs["kernel_launches"].to_list() == [62]


@pytest.mark.corpus
def test_blits_of_a_rocprof_v1_counter_file_are_copies_and_fills():
    data = roofreport.read(corpus_path("rocm", "rocprof", "cklxx__fleet-mi300x__results_rocprof_v1_fetch_size_d16_shared.csv"))
    by_name = dict(data.kernels.group_by("category").agg(pl.col("name").unique().sort()).rows())
    assert by_name["memcpy"] == ["__amd_rocclr_copyBuffer.kd"]
    assert by_name["memset"] == ["__amd_rocclr_fillBufferAligned.kd"]
    assert "elementwise" not in by_name


def test_every_runtime_blit_is_a_copy_or_a_fill():
    names = ["__amd_rocclr_copyBuffer", "__amd_rocclr_copyBufferRect.kd", "__amd_rocclr_copyImage",
             "__amd_rocclr_fillBufferAligned", "__amd_rocclr_fillBufferAligned2D.kd", "__amd_rocclr_initHeap",
             "__amd_rocclr_fillImage", "__amd_rocclr_streamOpsWrite"]
    assert categorize(pl.Series(names)).to_list() == ["memcpy"] * 3 + ["memset"] * 5


def test_barrier_packets_of_a_trace_are_activities_not_kernels(tmp_path):
    text = ('"Index","KernelName","gpu-id","queue-id","queue-index","pid","tid","grd","wgr","lds","scr",'
            '"arch_vgpr","accum_vgpr","sgpr","wave_size","sig","obj","DispatchNs","BeginNs","EndNs","CompleteNs","DurationNs"\n'
            '0,"hip_scatter(double*) [clone .kd]",8,0,15,57,57,4096,256,0,0,16,0,32,64,"0x0","0x7fe7",100,200,1200,1300,1000\n'
            '1,"<barrier packet>",8,0,16,57,57,0,0,0,0,0,0,0,64,"0x0","0x0",1300,1400,1900,1950,500\n'
            '2,"hip_gather(double*) [clone .kd]",8,0,17,57,57,4096,256,0,0,16,0,32,64,"0x0","0x7fe8",1950,2000,2800,2900,800\n')
    data, read = _read(tmp_path, "results.csv", text)
    assert read.status == "ok"
    assert data.kernels["name"].to_list() == ["hip_scatter(double*) [clone .kd]", "hip_gather(double*) [clone .kd]"]
    assert data.activities.select("kind", "source_line").rows() == [("kernel", 2), ("barrier", 3), ("kernel", 4)]
    assert roofreport.analyze(data).runs["kernel_time_ns"].to_list() == [1800.0]


# -- long names ----------------------------------------------------------------------------------

def _gunrock_name(length: int) -> str:
    """A rocprim/gunrock template name as rocprof prints it: nested templates with commas,
    parentheses, lambdas, an anonymous namespace and ` [clone .kd]`, `length` characters."""
    head = "void rocprim::detail::block_reduce_kernel<rocprim::default_config, 256u, "
    tail = ">(int*, (anonymous namespace)::functor_t<float, 2> const, unsigned long) [clone .kd]"
    part = ("gunrock::operators::advance::execute<(gunrock::operators::load_balance_t)2, "
            "gunrock::graph::graph_t<(gunrock::memory_space_t)1, int, int, float>>(...)::"
            "{lambda(int const&, int const&, int const&, float const&)#1}, ")
    body = (part * (length // len(part) + 1))[:length - len(head) - len(tail)]
    return head + body + tail


@pytest.mark.parametrize("length", [5_600, 7_000, 10_240])
def test_a_long_quoted_name_reads_whole_in_stats_and_trace(tmp_path, length):
    name = _gunrock_name(length)
    assert len(name) == length and name.count(",") > 100
    stats = ('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n'
             f'"{name}",19,1900000,100000,33.9\n'
             '"__amd_rocclr_fillBufferAligned.kd",37,3700000,100000,66.1\n')
    data, read = _read(tmp_path, "results.stats.csv", stats)
    assert (read.status, read.warnings) == ("ok", [])
    assert data.kernels.select("name", "count").rows() == [(name, 19), ("__amd_rocclr_fillBufferAligned.kd", 37)]
    # the same name in a rocprofv3 trace that takes the line-by-line path (its last row cut)
    header = ('"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name",'
              '"Correlation_Id","Start_Timestamp","End_Timestamp","LDS_Block_Size","Scratch_Size","VGPR_Count",'
              '"Accum_VGPR_Count","SGPR_Count","Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z",'
              '"Grid_Size_X","Grid_Size_Y","Grid_Size_Z"\n')
    trace = (header
             + f'"KERNEL_DISPATCH","Agent 4",1,0,130048,3,20,"{name}",3,2849505830440739,2849505830468419,'
               '0,0,12,4,32,256,1,1,28160,1,1\n'
             + f'"KERNEL_DISPATCH","Agent 4",1,0,130048,4,20,"{name}",4,2849505830470000,2849505830490000,'
               '0,0,12,4,32,256,1,1,28160,1,1\n'
             + '"KERNEL_DISPATCH","Agent 4",1,0,130048,5,21,"cut')
    data, read = _read(tmp_path, "app_kernel_trace.csv", trace)
    assert data.kernels["name"].to_list() == [name, name]
    assert [w.code for w in read.warnings] == ["rocm.truncated"] and read.status == "partial"
