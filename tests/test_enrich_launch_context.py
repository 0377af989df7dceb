"""A GEMM's category by what launched it (issue 31, item 4): the operator its region names, else
its place between one convolution's transform kernels in a trace, else its name."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.enrich import categories, enrich_kernels
from roofreport.tables import schema
from tests.conftest import corpus_path

DATA = "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(cudnn::winograd_nonfused::WinogradDataParams<float, float>)"
FILTER = "void cudnn::winograd_nonfused::winogradForwardFilter4x4<float, float>(cudnn::winograd_nonfused::WinogradFilterParams<float, float>)"
OUTPUT = "void cudnn::winograd_nonfused::winogradForwardOutput4x4<float, float>(cudnn::winograd_nonfused::WinogradOutputParams<float, float>)"
SGEMM = "volta_sgemm_64x64_nn"
RELU = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar>()"
FC = "volta_sgemm_64x32_sliced1x4_tn"


def _kernels(names: list[str], kind: str = "launch", streams: list[int] | None = None,
             regions: list[str | None] | None = None) -> pl.DataFrame:
    rows = [{"run": "r", "source_file": "trace.csv", "source_line": i, "launch_id": i, "name": name, "kind": kind,
             "count": 1, "duration_ns": 1000.0, "stream": (streams or [7] * len(names))[i - 1],
             "region": (regions or [None] * len(names))[i - 1]} for i, name in enumerate(names, start=1)]
    return enrich_kernels(schema.conform("kernels", pl.DataFrame(rows)), schema.empty("metrics"))


def test_a_gemm_between_a_winograd_convolutions_transforms_is_convolution():
    out = _kernels([DATA, FILTER, SGEMM, OUTPUT, RELU, FC, RELU])
    assert out["category"].to_list() == ["conv", "conv", "conv", "conv", "elementwise", "gemm", "elementwise"]
    assert out["category_by_name"].to_list()[2] == "gemm"            # both readings: "conv (via GEMM)"
    assert out["category_source"].to_list()[2] == categories.BY_NEIGHBOURHOOD
    assert out["category_source"].to_list()[5] == categories.BY_NAME


@pytest.mark.parametrize("names", [
    [SGEMM, OUTPUT],                       # no input transform before it
    [DATA, FILTER, SGEMM, RELU, OUTPUT],   # something else ran between the GEMM and the output transform
    [OUTPUT, SGEMM, DATA],                 # the wrong way round: one convolution's end, the next one's start
])
def test_a_gemm_not_between_one_convolutions_transforms_stays_gemm(names):
    out = _kernels(names)
    assert out.filter(pl.col("name") == SGEMM)["category"].to_list() == ["gemm"]


def test_launch_order_is_per_stream_and_summaries_keep_their_names_reading():
    # The output transform runs on another stream: this stream's GEMM sits between no transforms.
    out = _kernels([DATA, SGEMM, OUTPUT], streams=[7, 7, 8])
    assert out["category"].to_list()[1] == "gemm"
    # A summary (nvprof/nsys totals per kernel) has no order: its rows are read by name alone.
    summary = _kernels([DATA, SGEMM, OUTPUT], kind="summary")
    assert summary["category"].to_list() == ["conv", "gemm", "conv"]


def test_the_launching_operator_wins_over_the_neighbourhood():
    conv_op = "forward/aten::conv2d/aten::convolution/aten::_convolution/aten::cudnn_convolution"
    linear_op = "forward/aten::linear/aten::addmm"
    out = _kernels([SGEMM, DATA, FILTER, SGEMM, OUTPUT], regions=[conv_op, None, None, linear_op, None])
    assert out["category"].to_list() == ["conv", "conv", "conv", "gemm", "conv"]
    assert out["category_source"].to_list()[0] == categories.BY_OPERATOR
    assert out["category_source"].to_list()[3] == categories.BY_OPERATOR


def test_v100_vgg11_winograd_sgemms_are_convolution_and_the_fully_connected_gemms_stay_gemm():
    from roofreport.pipeline.ingest import ingest
    folder = corpus_path("course", "Anoushka21-Cloud-and-MachineLearning", "proj1", "v100", "vgg11")
    kernels = ingest([folder / "tmp_nsys_gputrace.csv"]).tables["kernels"]
    total = kernels["duration_ns"].sum()
    time = dict(kernels.group_by("category").agg(pl.col("duration_ns").sum()).iter_rows())
    assert time["gemm"] <= 0.15 * total                       # was 47 % by name
    assert time["gemm"] == pytest.approx(2.49e6, rel=0.02)     # the classifier's GEMMs (fc6-fc8), fwd and bwd
    via_gemm = kernels.filter((pl.col("category") == "conv") & (pl.col("category_by_name") == "gemm"))
    assert via_gemm.height == 21 and via_gemm["category_source"].unique().to_list() == [categories.BY_NEIGHBOURHOOD]
    assert via_gemm["duration_ns"].sum() == pytest.approx(16.28e6, rel=0.01)
    # ncu's log of the same run lists its kernels in launch order: the same GEMMs are convolution.
    ncu = ingest([folder / "ncu-log-vgg11.txt"]).tables["kernels"]
    assert ncu.filter((pl.col("category") == "conv") & (pl.col("category_by_name") == "gemm")).height == 21
