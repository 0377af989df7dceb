"""rocprofv3's counter passes (issue #34): `pmc_1/`, `pmc_2/`... folders of one application, each a
run of the program counting some counters, are one run whose dispatches are joined across the
passes on the kernel name and its occurrence number, so that FLOPs counted in one pass and bytes
in another meet. `sample_logs/amd/mi300x/stream-dgemm/` holds two passes (the layout of
`kyle-256/HipKittens`' `pmc_1..pmc_5/<host>/<pid>_counter_collection.csv`); its second pass
begins with a fill blit the first did not run, so its `Dispatch_Id`s are one off the first's."""

from __future__ import annotations

import csv
from pathlib import PurePosixPath

import polars as pl
import pytest

import roofreport
from roofreport.families.rocm.passes import counter_pass
from tests.conftest import SAMPLE_LOGS

APP = SAMPLE_LOGS / "amd" / "mi300x" / "stream-dgemm"
BLIT = "__amd_rocclr_"


@pytest.fixture(scope="module")
def data():
    return roofreport.read(APP.parent, jobs=1)


def _counted() -> tuple[float, float, float]:
    """(FP64 + matrix FLOPs, FP32 FLOPs, DRAM bytes) of the application's kernels, from the pass
    files themselves (Python's csv; AMD's formulas: 64 lanes x (ADD + MUL + TRANS + 2 FMA),
    512 x MOPS, FETCH_SIZE + WRITE_SIZE in KiB), the blit left out as the replays' own."""
    fp64 = fp32 = kib = 0.0
    weights = {"ADD": 1, "MUL": 1, "TRANS": 1, "FMA": 2}
    for path in sorted(APP.rglob("*_counter_collection.csv")):
        with path.open(newline="") as handle:
            for row in csv.DictReader(handle):
                if row["Kernel_Name"].startswith(BLIT):
                    continue
                name, value = row["Counter_Name"], float(row["Counter_Value"])
                if name in ("FETCH_SIZE", "WRITE_SIZE"):
                    kib += value
                elif name == "SQ_INSTS_VALU_MFMA_MOPS_F64":
                    fp64 += 512 * value
                else:
                    op, precision = name.removeprefix("SQ_INSTS_VALU_").split("_")
                    if precision == "F64":
                        fp64 += 64 * weights[op] * value
                    else:
                        fp32 += 64 * weights[op] * value
    return fp64, fp32, kib * 1024


def test_a_file_in_a_pass_folder_names_its_application_and_pass():
    assert counter_pass("case/pmc_2/node-7/2628719_counter_collection.csv") == (PurePosixPath("case"), 2)
    assert counter_pass("a/b/pmc_12/2628719_counter_collection.csv") == (PurePosixPath("a/b"), 12)
    assert counter_pass("pmc_1/host/1_counter_collection.csv") == (PurePosixPath("."), 1)
    assert counter_pass("runs/pmc_perf.csv") is None        # rocprof-compute's file, no pass folder
    assert counter_pass("case/host/1_counter_collection.csv") is None


def test_the_passes_of_one_application_are_one_run(data):
    files = data["files"].filter(pl.col("path").str.contains("stream-dgemm"))
    assert files.height == 2 and set(files["run"].to_list()) == {"amd/mi300x/stream-dgemm"}
    run = data.runs.filter(pl.col("run") == "amd/mi300x/stream-dgemm").row(0, named=True)
    assert run["gpu_model"] == "Instinct MI300X"
    assert run["experiment"] is None or "pmc" not in str(run["experiment"])


def test_flops_of_one_pass_and_bytes_of_another_meet_per_dispatch(data):
    fp64, fp32, dram = _counted()
    run = data.runs.filter(pl.col("run") == "amd/mi300x/stream-dgemm").row(0, named=True)
    # every FLOP of both passes and every byte of the second, over the same 6 dispatches
    assert run["flops"] == pytest.approx(fp64 + fp32, rel=1e-9)
    assert run["dram_bytes"] == pytest.approx(dram, rel=1e-9)
    assert run["arithmetic_intensity"] == pytest.approx((fp64 + fp32) / dram, rel=1e-9)
    assert run["flops_complete"] is True and run["bound"] == "compute"
    assert run["counted_kernels"] == 6


def test_the_join_is_by_kernel_and_occurrence_not_dispatch_id(data):
    """The second pass's dispatch 2 is the first's dispatch 1 (the blit came first): joined by
    Dispatch_Id, the copy kernel would take the triad's bytes."""
    from roofreport.model import counted

    rows = counted.counter_rows(data.tables).filter(pl.col("run") == "amd/mi300x/stream-dgemm").sort("launch_id")
    assert rows["source_file"].str.contains("pmc_1").all() and rows.height == 6
    copy = rows.filter(pl.col("short_name") == "copy_kernel")
    triad = rows.filter(pl.col("short_name") == "triad_kernel")
    n = 1 << 24
    # copy: 8 B read + 8 B written per element; triad: 16 read + 8 written, and 2 FP64 FLOPs
    assert copy["dram_bytes"].to_list() == [16 * n, 16 * n]
    assert triad["dram_bytes"].to_list() == [24 * n, 24 * n]
    assert triad["flops_fp64"].to_list() == [pytest.approx(2 * n, rel=1e-3)] * 2
    assert copy["flops_fp32"].to_list() == [0.0, 0.0]      # counted in the second pass, zero
