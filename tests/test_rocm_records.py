"""rocprofv2's records printed on stdout, as its cli plugin writes them (rocprofiler
`plugin/cli/cli.cpp`: `Key(Value), ` fields, a dispatch's kernel name quoted, counters after
`Correlation_ID` as `std::to_string` prints a double), by two MPI ranks into one job log among the
program's output; tracer records with `Start_Timestamp`; a version with other keys. No such log
is in the corpus (FORMATS-rocm.md §6): the text is written here, true to the plugin's source."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from roofreport.families import rocm
from roofreport.families.common.textio import read_head
from tests.conftest import parse_path


def dispatch(number: int, pid: int, name: str, begin: int, end: int, counters: dict[str, float]) -> str:
    fields = [f"Dispatch_ID({number})", "GPU_ID(4)", "Queue_ID(1)", f"Queue_Index({number - 1})",
              f"Process_ID({pid})", f"Thread_ID({pid})", "Grid_Size(1048576)", "Workgroup_Size(256)", "LDS(0)",
              "Scratch_Size(0)", "Arch_VGPR(24)", "Accumulative_VGPR(0)", "SGPR(32)", "Wave_Size(64)",
              f'Kernel_Name("{name}")', f"Begin_Timestamp({begin})", f"End_Timestamp({end})",
              f"Correlation_ID({number})"]
    fields += [f"{counter}({value:.6f})" for counter, value in counters.items()]
    return ", ".join(fields)


STENCIL = "void stencil<double>(double const*, double*, int)"
GEMM = "Cijk_Ailk_Bljk_DB_MT64x64x16_MI16x16x4x1"
COUNTERS = {"SQ_WAVES": 16384, "SQ_INSTS_VALU_FMA_F64": 1048576, "GRBM_COUNT": 20417}
JOB_LOG = "\n".join([
    "srun: job 812345 queued and waiting for resources",
    "rank 0 of 2 on frontier00123, GCD 0",
    "rank 1 of 2 on frontier00123, GCD 1",
    "ROCProfilerV2: Collecting the following counters:",
    "- SQ_WAVES", "- SQ_INSTS_VALU_FMA_F64", "- GRBM_COUNT",
    "Enabling Counter Collection",
    dispatch(1, 51201, STENCIL, 2849505830440739, 2849505830468419, COUNTERS),
    dispatch(1, 51202, STENCIL, 2849505830441000, 2849505830469300, COUNTERS),
    "iteration 1: residual 3.2e-04",
    dispatch(2, 51201, GEMM, 2849505830470000, 2849505830520000, {**COUNTERS, "SQ_INSTS_VALU_FMA_F64": 0}),
    dispatch(2, 51202, GEMM, 2849505830471000, 2849505830522000, {**COUNTERS, "SQ_INSTS_VALU_FMA_F64": 0}),
    # rank 1's line cut by rank 0's output (both write to one stdout)
    "Dispatch_ID(3), GPU_ID(4), Queue_ID(1), Queue_Index(2), Process_ID(51202), Thread_ID(51iteration 2: residual 1.1e-04",
    "done in 0.42 s",
]) + "\n"

TRACER_LOG = "\n".join([
    "Domain(HIP_API_DOMAIN), Function(hipMalloc), Start_Timestamp(2849505830000000), "
    "End_Timestamp(2849505830010000), Correlation_ID(1)",
    "Domain(HIP_API_DOMAIN), Function(hipLaunchKernel), Kernel_Name(void stencil<double>(double const*, double*, int)), "
    "Start_Timestamp(2849505830430000), End_Timestamp(2849505830436000), Correlation_ID(2)",
    "Domain(HIP_OPS_DOMAIN), Operation_Name(KernelExecution), Kernel_Name(void stencil<double>(double const*, double*, int)), "
    "Start_Timestamp(2849505830440739), End_Timestamp(2849505830468419), Correlation_ID(2)",
    "Domain(HIP_OPS_DOMAIN), Operation_Name(CopyDeviceToHost), Start_Timestamp(2849505830470000), "
    "End_Timestamp(2849505830490000), Correlation_ID(3)",
    "Domain(ROCTX_DOMAIN), Timestamp(2849505830420000), ROCTX_ID(0), ROCTX_Message(solve)",
]) + "\n"


@pytest.fixture
def job(tmp_path: Path):
    path = tmp_path / "slurm-812345.out"
    path.write_text(JOB_LOG)
    return parse_path(path, "rocm")


def test_records_of_two_ranks_among_program_output(job):
    assert job.variant == "rocprofv2 records (counters)"
    # the cut line makes the file partial (issue #34: no row lost under "ok")
    assert job.error is not None and job.error.line == 14
    assert "left out (1 rocm.bad-row warning; the first at line 14)" in job.error.describe()
    kernels = job.tables["kernels"]
    records = [line for line in JOB_LOG.splitlines() if line.startswith("Dispatch_ID(")]
    assert kernels.height == len(records) - 1 == 4       # the cut line is warned, not read
    assert kernels["source_line"].to_list() == [9, 10, 12, 13]
    assert kernels["name"].to_list() == [STENCIL, STENCIL, GEMM, GEMM]
    assert kernels["duration_ns"].to_list() == [27680, 28300, 50000, 51000]
    assert kernels["device"].to_list() == ["4"] * 4
    assert kernels["grid"][0] == "(4096, 1, 1)" and kernels["block"][0] == "(256, 1, 1)"
    # the ranks kept apart: each dispatch's process
    metrics = job.tables["metrics"]
    pids = metrics.filter(pl.col("metric") == "pid").sort("launch_id")["value"].to_list()
    assert pids == [51201, 51202, 51201, 51202]
    # ... and each dispatch's rank: the processes in the order of their ids (both on agent 4)
    assert kernels["rank"].to_list() == [0, 1, 0, 1] and job.hints.ranks == 2


def test_keys_that_are_no_field_are_counters(job):
    metrics = job.tables["metrics"].filter(pl.col("section") == "counters")
    assert set(metrics["metric"]) == set(COUNTERS)
    fma = metrics.filter(pl.col("metric") == "SQ_INSTS_VALU_FMA_F64").sort("launch_id")["value"].to_list()
    assert fma == [1048576, 1048576, 0, 0]
    resources = job.tables["metrics"].filter(pl.col("section") == "dispatch")
    assert {"lds", "arch_vgpr", "accum_vgpr", "sgpr", "wave_size"} <= set(resources["metric"])


def test_a_cut_record_is_a_warning_with_its_line(job):
    bad = [w for w in job.warnings if w.code == "rocm.bad-row"]
    assert len(bad) == 1 and bad[0].line == 14 and "slurm-812345.out:14" in bad[0].message


def test_tracer_records_with_start_timestamp(tmp_path: Path):
    path = tmp_path / "rocprofv2.out"
    path.write_text(TRACER_LOG)
    result = parse_path(path, "rocm")
    assert result.variant == "rocprofv2 records"
    api = result.tables["api_calls"]
    assert api["name"].to_list() == ["hipMalloc", "hipLaunchKernel"]
    assert api["total_ns"].to_list() == [10000, 6000]
    activities = result.tables["activities"]
    assert activities.select("kind", "duration_ns").rows() == [("kernel", 27680), ("memcpy", 20000)]
    # the unquoted kernel name, parentheses and commas included, read whole
    assert result.tables["kernels"]["name"].to_list() == ["void stencil<double>(double const*, double*, int)"]
    assert [w.code for w in result.warnings] == ["rocm.roctx-marks"]


def test_keys_are_read_not_assumed(tmp_path: Path):
    """Another version's keys, in another order, one unknown to the vocabulary (a counter)."""
    text = ('Dispatch_ID(7), Kernel_Name("saxpy(float, float*, float*)"), GPU_ID(1), Process_ID(9), '
            "Start_Timestamp(1000), End_Timestamp(4000), Grid_Size(1024), Workgroup_Size(64), FetchSize(2.000000)\n")
    path = tmp_path / "out.log"
    path.write_text(text)
    result = parse_path(path, "rocm")
    kernels = result.tables["kernels"]
    assert kernels.select("name", "duration_ns", "grid").rows() == [("saxpy(float, float*, float*)", 3000, "(16, 1, 1)")]
    fetched = result.tables["metrics"].filter(pl.col("metric") == "FetchSize")
    assert fetched["value"].to_list() == [2048.0]   # kilobytes, held in bytes


def test_sniffing_leaves_other_text_alone(tmp_path: Path):
    prose = tmp_path / "notes.txt"
    prose.write_text("Domain(example), see Dispatch_ID(1) in the docs\nnothing else\n")
    assert rocm.sniff_records(read_head(prose)) is None
