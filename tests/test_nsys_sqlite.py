"""The nsys SQLite export read directly with sqlite3, across schema versions 2.9 to 3.25.
Values were checked by hand with the sqlite3 shell and against nsys's own reports."""

from __future__ import annotations

import shutil
import sqlite3

import polars as pl
import pytest

from roofreport.families.common.textio import read_head
from roofreport.families.nsys import sqlite as nsys_sqlite
from roofreport.pipeline.sniff import sniff
from tests.conftest import corpus_path


def parse(*parts: str):
    path = corpus_path(*parts)
    variant = nsys_sqlite.sniff_sqlite(read_head(path))
    assert variant is not None, f"{path.name} not sniffed as an nsys SQLite export"
    return nsys_sqlite.parse_sqlite(path, variant)


def rep(name: str):
    return parse("nsys", "rep", name)


def test_2024_export_kernels_memcpy_memset_in_start_order():
    result = rep("flame_torch_rtxa4500.sqlite")
    assert result.error is None and result.tool_version == "2024.6.2.225"
    act = result.tables["activities"]
    assert dict(act.group_by("kind").len().iter_rows()) == {"kernel": 2482, "memcpy": 122, "memset": 81}
    assert act["start_ns"].is_sorted()
    first = act.row(0, named=True)
    assert (first["name"], first["start_ns"], first["duration_ns"], first["bytes"]) == (
        "[CUDA memcpy HtoD]", 1949099896, 3552, 37632)
    assert (first["device"], first["stream"], first["correlation_id"]) == ("NVIDIA RTX A4500 (0)", 7, 142)
    kernels = result.tables["kernels"]
    assert kernels.height == 2482 and kernels["duration_ns"].sum() == 339_300_381
    assert kernels.filter(pl.col("name") == "_5x_cudnn_ampere_scudnn_128x64_relu_medium_nn_v1")["count"].sum() == 20
    assert result.hints.device_name == "NVIDIA RTX A4500"


def test_runtime_calls_carry_the_names_of_nsys_api_summaries():
    result = rep("flame_torch_rtxa4500.sqlite")
    api = result.tables["api_calls"]
    assert api.height == 5142 and set(api["kind"]) == {"trace"}
    launches = api.filter(pl.col("name") == "cudaLaunchKernel")
    assert (launches.height, launches["total_ns"].sum()) == (2162, 226_971_924)
    assert api.filter(pl.col("name") == "cudaStreamIsCapturing_v10000").height == 73


def test_nvtx_ranges_with_domains_and_push_pop_paths():
    result = rep("flame_torch_rtxa4500.sqlite")
    regions = result.tables["regions"]
    assert regions.height == 21 and set(regions["kind"]) == {"nvtx"}
    cublas = regions.row(0, named=True)
    assert (cublas["name"], cublas["path"], cublas["duration_ns"]) == (
        "cuBLAS:cublasCreate_v2", "cuBLAS:cublasCreate_v2", 1_710_548)
    forward = regions.filter(pl.col("name") == "forward")
    assert forward.height == 10 and forward["duration_ns"].sum() == 170_271_546
    # The app never popped its `iterationN` ranges: nsys closed them all at the end of the
    # capture, so every iteration nests in the previous one.
    assert forward["path"][0] == "iteration10/forward"
    assert forward["path"][1] == "iteration10/iteration11/forward"


def test_2022_lean_export_with_old_metadata_table_and_unified_memory():
    result = rep("olcf_hw6_rtx3070_nsys2022_um.sqlite")
    assert result.tool_version == "2022.1.3.3" and result.variant == "sqlite export (schema 2.9.1)"
    act = result.tables["activities"]
    names = dict(act.group_by("name").len().iter_rows())
    assert names == {"inc(int *, unsigned long)": 10_000, "[CUDA Unified Memory memcpy HtoD]": 64,
                     "[CUDA Unified Memory memcpy DtoH]": 64}
    assert result.hints.device_name == "NVIDIA GeForce RTX 3070 Laptop GPU"


def test_old_schema_with_mpi_domain_ranges():
    result = rep("pipit_saxpy_mpi_a100_old_schema.sqlite")
    assert result.tables["kernels"]["name"].to_list() == ["saxpy(double *, double *, double *, double, int)"] * 5
    regions = result.tables["regions"]
    assert regions.filter(pl.col("name") == "MPI:MPI_Send").height == 10
    assert regions["name"][0] == "MPI:MPI_Init" and regions["duration_ns"][0] == 645_678_983
    assert result.hints.device_name == "NVIDIA A100-SXM4-40GB"


def test_newest_schema_without_gpu_names():
    result = rep("nsysai_h100_2gpu_1s_nsys2026.2.sqlite")
    assert result.tool_version == "2026.2.1.210" and result.hints.device_name is None
    kernels = result.tables["kernels"]
    assert dict(kernels.group_by("device").len().iter_rows()) == {"0": 1721, "1": 1721}
    assert result.tables["regions"].height == 16_782


def test_export_without_gpu_activity_is_read_with_a_warning():
    result = rep("uvmtorch_rtxa5000_nsys2025.3_nokernels.sqlite")
    assert result.error is None and "activities" not in result.tables
    assert result.tables["api_calls"].height == 2
    assert [w.code for w in result.warnings] == ["nsys.no-gpu-activity"]


def test_export_with_nothing_is_an_error_not_a_crash():
    result = parse("derived", "nsys", "darknet_jetson_xavier_nsys2021.1_report2.sqlite")
    assert not result.rows()
    assert "holds no CUDA kernels" in result.error.message


def test_kernel_time_agrees_with_the_console_report_of_the_same_run():
    """../shared/corpus/FORMATS-nsys_nvprof.md §4: the cs336 console report was printed from this export."""
    kernels = rep("cs336_pytorch_lm2.7B_nsys2024.6.sqlite").tables["kernels"]
    sgemm = kernels.filter(pl.col("name") == "ampere_sgemm_128x64_tn")
    assert (sgemm.height, sgemm["duration_ns"].sum()) == (900, 2_991_054_425)


def test_a_view_posing_as_a_cupti_table_is_never_queried(tmp_path):
    path = tmp_path / "crafted.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
        CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
        INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2099.1');
        CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS SELECT 1 AS start, 2 AS "end";
    """)
    con.close()
    found = sniff(path)
    assert found.family == "nsys"
    result = nsys_sqlite.parse_sqlite(path, found.variant)
    assert "kernels" not in result.tables and result.tool_version == "2099.1"


@pytest.mark.parametrize("fraction", [3, 100])
def test_a_truncated_export_is_reported_not_raised(tmp_path, fraction):
    source = corpus_path("nsys", "rep", "olcf_hw6_rtx3070_nsys2022_um.sqlite")
    path = tmp_path / "cut.sqlite"
    with source.open("rb") as src, path.open("wb") as dst:
        dst.write(src.read(source.stat().st_size // fraction))
    found = sniff(path)
    assert (found.family, found.variant) == ("nsys", "sqlite export (unreadable)")
    result = nsys_sqlite.parse_sqlite(path, found.variant)
    assert not result.rows()
    assert result.error.describe().startswith(f"{path}: cannot read the SQLite export: ")


def test_nvprof_exports_are_not_taken(tmp_path):
    path = tmp_path / "nvprof_like.sqlite"
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE StringTable (_id_ INTEGER, value TEXT);"
                      "CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (start INTEGER);")
    con.close()
    assert nsys_sqlite.sniff_sqlite(read_head(path)) is None


def test_reading_leaves_no_file_beside_the_export(tmp_path):
    copy = tmp_path / "pipit.sqlite"
    shutil.copyfile(corpus_path("nsys", "rep", "pipit_saxpy_mpi_a100_old_schema.sqlite"), copy)
    before = sorted(p.name for p in tmp_path.iterdir())
    nsys_sqlite.parse_sqlite(copy, "sqlite export")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("name", ["cs336_pytorch_lm2.7B_nvtx_nsys2024.6.sqlite"])
def test_nvtx_export_of_a_pytorch_run(name):
    result = rep(name)
    regions = result.tables["regions"]
    assert regions.height == 516 and regions["path"].null_count() == 0
    assert result.tables["kernels"].height == 7328
