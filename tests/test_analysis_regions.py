"""Regions: NVTX and profiler ranges from the regions table, NVTX context on kernels, and the
forward/backward/optimizer phases kernel names tell."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.analysis import regions
from roofreport.model import derive
from roofreport.enrich import with_phase_regions
from roofreport.tables import schema


@pytest.mark.parametrize("name, phase", [
    ("void MaxPoolBackward<float, float>(int)", "backward"),
    ("void cudnn::detail::dgrad_engine<float, 128, 6, 8, 3, 3, 5, true>(int)", "backward"),
    ("void cudnn::winograd_nonfused::winogradWgradData4x4<float, float>(x)", "backward"),
    ("void at::native::(anonymous namespace)::max_pool_backward_nchw<float, float>(int)", "backward"),
    ("cunn_ClassNLLCriterion_updateGradInput_kernel", "backward"),
    ("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(x)", "backward"),
    ("void MaxPoolForward<float, float>(int)", "forward"),
    ("void xmma_new::gemm::kernel<xmma_new::implicit_gemm::fprop::Kernel_traits<x>>()", "forward"),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int=512, bool=1, int=1>(x)", "forward"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>()", "optimizer"),
    ("sgd_momentum_update", "optimizer"),
    ("volta_sgemm_64x64_nt", None),
    (None, None),
])
def test_phase_of_kernel_names(name, phase):
    assert regions.phase_of(pl.Series([name], dtype=pl.String)).to_list() == [phase]


def _kernels(rows: list[dict]) -> pl.DataFrame:
    base = {"run": "r", "source_file": "trace.csv", "kind": "launch", "count": 1}
    frame = schema.conform("kernels", pl.DataFrame([{**base, **r} for r in rows], infer_schema_length=None))
    return with_phase_regions(frame.with_columns(pl.col("name").alias("short_name")))


def test_logged_nvtx_regions_and_phases_from_kernel_time():
    kernels = _kernels([
        {"name": "void MaxPoolForward<float, float>(int)", "duration_ns": 10.0, "region": "train/step"},
        {"name": "void MaxPoolBackward<float, float>(int)", "duration_ns": 30.0, "region": "train/step"},
        {"name": "volta_sgemm_64x64_nt", "duration_ns": 40.0},
        {"name": "void MaxPoolBackward<float, float>(int)", "duration_ns": 20.0},
    ])
    # A kernel without a logged region gets its phase as region (ingest does this).
    assert kernels["region"].to_list() == ["train/step", "train/step", None, "backward"]
    files = schema.conform("files", pl.DataFrame({"path": ["trace.csv"], "family": ["nsys"]}))
    out = regions.region_times(derive({"kernels": kernels, "files": files}))
    nvtx = out.filter(pl.col("kind") == "nvtx")
    assert nvtx.select("region", "time_ns", "share", "count", "basis").to_dicts() == [
        {"region": "train/step", "time_ns": 40.0, "share": 0.4, "count": 2, "basis": "kernel time"}]
    phase = out.filter(pl.col("kind") == "phase")
    assert dict(zip(phase["region"], phase["share"])) == {"backward": 0.5, "forward": 0.1}


def test_ranges_of_the_regions_table_share_their_top_level():
    table = schema.conform("regions", pl.DataFrame([
        {"run": "r", "kind": "nvtx", "name": "forward", "path": "step/forward", "duration_ns": 30.0, "count": 10},
        {"run": "r", "kind": "nvtx", "name": "backward", "path": "step/backward", "duration_ns": 60.0, "count": 10},
        {"run": "r", "kind": "nvtx", "name": "step", "path": "step", "duration_ns": 100.0, "count": 10},
        {"run": "r", "kind": "profiler_range", "name": "range 1", "path": None, "duration_ns": 5.0, "count": 1},
    ]))
    out = regions.region_times(derive({"regions": table}))
    got = {(r["kind"], r["region"]): (r["time_ns"], r["share"], r["basis"]) for r in out.to_dicts()}
    assert got[("nvtx", "step/backward")] == (60.0, 0.6, "range")
    assert got[("nvtx", "step")] == (100.0, 1.0, "range")
    assert got[("profiler_range", "range 1")] == (5.0, 1.0, "range")


def test_no_regions_no_rows():
    out = regions.region_times(derive({}))
    assert out.height == 0 and out.columns[:6] == ["run", "kind", "region", "time_ns", "share", "count"]


def test_ncu_nvtx_context_gives_kernel_regions():
    from roofreport.pipeline.ingest import ingest
    from tests.conftest import corpus_path
    tables = ingest([corpus_path("ncu", "text", "mindspore_nvtx_start_end_ranges_metrics.txt")]).tables
    out = regions.region_times(derive(tables))
    # Three kernels inside the `Gate_nvtx` range: 3,420 + 3,230 + 3,200 ns of gpu__time_duration.
    assert out.select("kind", "region", "time_ns", "share", "count").to_dicts() == [
        {"kind": "nvtx", "region": "Gate_nvtx", "time_ns": 9850.0, "share": 1.0, "count": 3}]
