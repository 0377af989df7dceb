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


# -- both readings where categories are shown: "conv (via GEMM)" ----------------------------------

def test_v100_vgg11_shows_its_winograd_gemms_as_conv_via_gemm_counted_once():
    """The category share counts each GEMM once, in the category of what launched it; the kernel
    tables label those GEMMs "conv (via GEMM)", and the fully connected layers' stay "gemm"."""
    from roofreport.analysis import share
    from roofreport.model import derive
    from roofreport.pipeline.ingest import ingest
    folder = corpus_path("course", "Anoushka21-Cloud-and-MachineLearning", "proj1", "v100", "vgg11")
    model = derive(ingest([folder / "tmp_nsys_gputrace.csv"]).tables)
    shares = share.kernel_share(model)
    assert shares["share"].sum() == pytest.approx(1.0)                      # nothing counted twice
    by_category = dict(shares.select("category", "share").iter_rows())
    assert by_category["gemm"] <= 0.15 and "conv (via GEMM)" not in by_category
    context = share.by_launch_context(model)
    assert context.height == 1
    via = context.row(0, named=True)
    assert (via["category"], via["category_by_name"], via["label"], via["named"]) == ("conv", "gemm", "conv (via GEMM)", "GEMM")
    assert via["time_ns"] == pytest.approx(16.28e6, rel=0.01)
    assert via["share"] < by_category["conv"]                                # a part of conv, not beside it
    kernels = share.per_kernel(model)
    labels = dict(kernels.group_by("category_label").agg(pl.col("time_ns").sum()).iter_rows())
    assert labels["conv (via GEMM)"] == pytest.approx(via["time_ns"])
    assert labels["gemm"] == pytest.approx(2.49e6, rel=0.02)                # fc6-fc8, forward and backward
    assert kernels.filter(pl.col("category_label") == "conv (via GEMM)")["category"].unique().to_list() == ["conv"]
    top = share.top_kernels(model, top_n=5)
    assert "category_label" in top.columns and "conv (via GEMM)" in top["category_label"].to_list()


def test_the_share_section_says_both_readings():
    from roofreport.report.naming import RunNames
    from roofreport.report.sections.share import _category, _context_note

    rows = pl.DataFrame({"run": ["r"], "category": ["conv"], "category_by_name": ["gemm"], "label": ["conv (via GEMM)"],
                         "named": ["GEMM"], "count": [21], "time_ns": [16.28e6], "share": [0.36]})
    runs = pl.DataFrame({"run": ["r"]})
    (paragraph,) = _context_note(rows, ["r"], RunNames(runs))
    text = "".join(span.text for span in paragraph.spans)
    assert text.startswith("GEMM kernels launched for conv") and "\"conv (via GEMM)\"" in text and "36" in text
    assert _context_note(rows.clear(), ["r"], RunNames(runs)) == []
    assert _category({"category": "conv", "category_label": "conv (via GEMM)"}) == "conv (via GEMM)"
    assert _category({"category": "gemm", "category_label": None}) == "gemm"


# -- Kineto: the operators a kernel was launched under -------------------------------------------

def test_kineto_kernels_carry_the_operators_open_around_their_launch_and_gemms_follow_them():
    """torch.profiler's resnet18 on an H100: cuDNN's split-K reduction (a GEMM by its name) is
    launched under ConvolutionBackward0/aten::convolution_backward, so it is conv; the fc layer's
    cuBLAS GEMMs, under aten::linear/aten::addmm and AddmmBackward0/aten::mm, stay gemm."""
    from roofreport.pipeline.ingest import ingest
    path = corpus_path("kineto", "h100-resnet18", "kineto_resnet18_b32.json")
    kernels = ingest([path]).tables["kernels"]
    assert kernels["operator"].null_count() == 0          # every kernel was launched under an operator
    gemms = kernels.filter(pl.col("category_by_name") == "gemm")
    assert gemms["category_source"].unique().to_list() == [categories.BY_OPERATOR]
    conv = gemms.filter(pl.col("category") == "conv")
    assert conv.height == 4 and conv["name"].str.contains("cutlass__5x_cudnn").all()
    assert conv["operator"].str.ends_with("ConvolutionBackward0/aten::convolution_backward").all()
    fc = gemms.filter(pl.col("category") == "gemm")
    assert fc.height == 10
    assert set(fc["operator"].to_list()) == {"aten::linear/aten::addmm",
                                             "autograd::engine::evaluate_function: AddmmBackward0/AddmmBackward0/aten::mm"}
    # a convolution's own kernel keeps its name's reading, whatever the operator
    named_conv = kernels.filter(pl.col("category_by_name") == "conv")
    assert named_conv.height and (named_conv["category"] == "conv").all()
    assert named_conv["operator"].str.contains("aten::cudnn_convolution|ConvolutionBackward0").all()


@pytest.mark.parametrize(("operator", "category"), [
    ("aten::conv2d/aten::convolution/aten::_convolution/aten::cudnn_convolution", "conv"),
    ("autograd::engine::evaluate_function: ConvolutionBackward0/ConvolutionBackward0/aten::convolution_backward", "conv"),
    # SDPA's math path runs its products as bmm: attention, the layer they serve
    ("aten::scaled_dot_product_attention/aten::_scaled_dot_product_attention_math/aten::matmul/aten::bmm", "attention"),
    ("autograd::engine::evaluate_function: ScaledDotProductEfficientAttentionBackward0/"
     "aten::_scaled_dot_product_efficient_attention_backward", "attention"),
    ("aten::linear/aten::addmm", "gemm"),
    ("autograd::engine::evaluate_function: MmBackward0/MmBackward0/aten::mm", "gemm"),
    ("aten::matmul/aten::bmm", "gemm"),
    ("aten::copy_", "gemm"),                                  # no layer named: the name's reading
])
def test_a_gemm_takes_the_category_of_the_widest_layer_its_operators_name(operator, category):
    rows = [{"run": "r", "source_file": "trace.json", "source_line": 1, "launch_id": 1, "name": SGEMM, "kind": "launch",
             "count": 1, "duration_ns": 1000.0, "stream": 7, "operator": operator}]
    out = enrich_kernels(schema.conform("kernels", pl.DataFrame(rows)), schema.empty("metrics"))
    assert out["category"].to_list() == [category]
    assert out["category_source"].to_list() == [categories.BY_NAME if operator == "aten::copy_" else categories.BY_OPERATOR]
