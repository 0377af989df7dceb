"""Kernel categories and time shares: the rule list, the choice of one time source per run, and
the 2019 NYU course sweeps (K80/P40 x AlexNet/ResNet-18/VGG-16 x batch size, nvprof summaries)."""

from __future__ import annotations

import io

import polars as pl
import pytest

from roofreport.analysis import share
from roofreport.model import derive
from roofreport.enrich import categories
from roofreport.errors import UsageError
from roofreport.pipeline.ingest import ingest
from roofreport.tables import schema
from tests.conftest import corpus_path


@pytest.mark.parametrize("name, category", [
    ("[CUDA memcpy HtoD]", "memcpy"), ("[CUDA memcpy Device-to-Device]", "memcpy"), ("[CUDA memset]", "memset"),
    ("ncclBroadcastKernel_copy_i8(ncclColl)", "communication"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "communication"),
    ("maxwell_scudnn_winograd_128x128_ldg1_ldg4_tile228n_nt", "conv"),
    ("void cudnn::winograd_nonfused::winogradForwardData9x9_5x5<float, float>(cudnn::winograd_nonfused::WinogradDataParams<float, float>)", "conv"),
    ("void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, true, true>(int, int)", "conv"),
    ("void xmma_new::gemm::kernel<xmma_new::implicit_gemm::fprop::Kernel_traits<xmma_new::Ampere_hmma_tf32_traits<unsigned int, float>>>()", "conv"),
    ("void fft2d_r2c_32x32<float, unsigned int=1, bool=0>(float2*, float const *)", "conv"),
    ("void DSE::vector_fft<int=0, int=1, int=128, int=8, int=8, int=1, float, float, float2>(float2*, float2, int, int3, float2*)", "conv"),
    ("volta_sgemm_64x64_nt", "gemm"), ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_32x6_tn_align4>(T1::Params)", "gemm"),
    ("nvjet_hsh_64x8_64x16_2x1_v_bz_TNT", "gemm"),
    ("void splitKreduce_kernel<float, float, float, float>(cublasSplitKParams<float>)", "gemm"),
    ("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4>>", "attention"),
    ("void at::native::batch_norm_collect_statistics_kernel<InvStd, float, float, float, int>()", "normalization"),
    # cuDNN's batch norm is normalization, though its namespace is the convolutions' own
    ("void cudnn::detail::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>(cudnnTensorStruct, float const*)",
     "normalization"),
    ("void cudnn::detail::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float, float, float, "
     "cudnnTensorStruct, float const*, cudnn::detail::bnBwPersistentState*)", "normalization"),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int=512, bool=1, int=1>(cudnnTensorStruct)", "normalization"),
    ("void cudnn::detail::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, true, false, true>(int)", "conv"),
    ("void cudnn::gemm::computeBOffsetsKernel(cudnn::gemm::ComputeBOffsetsParams)", "conv"),
    ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true>(float*)", "softmax/loss"),
    ("void MaxPoolForward<float, float>(int, float const *)", "pooling"),
    ("void at::native::(anonymous namespace)::atomic_adaptive_average_gradinput<float>(float*)", "pooling"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float>>>()", "reduction"),
    ("void calc_bias_diff<int=2, float, float, int=128, int=0>(cudnnTensorStruct)", "reduction"),
    ("void kernelPointwiseApply2<TensorCAddOp<float>, float, float, unsigned int, int=1, int=1>(OffsetInfo<TensorCAddOp<float>, float, unsigned int>)", "elementwise"),
    ("_ZN2at6native18elementwise_kernelILi512ELi1EZNS0_15gpu_kernel_implIZZZNS0_15add_kernel_cuda", "elementwise"),
    ("void nchwToNhwcKernel<float, float, float, true, false, (cudnnKernelDataType_t)2>(int)", "elementwise"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>()", "optimizer"),
    ("some_kernel_nobody_knows", "other"),
])
def test_shipped_rules(name, category):
    assert categories.categorize(pl.Series([name])).to_list() == [category]


def test_rules_are_ordered_and_user_rules_come_first(tmp_path):
    names = pl.Series(["my_fused_thing", "volta_sgemm_64x64_nt", None])
    assert categories.categorize(names).to_list() == ["other", "gemm", None]
    path = tmp_path / "rules.tsv"
    path.write_text("category\tpattern\nfused\t^my_fused\ngemm_ours\tsgemm_64x64\n", encoding="utf-8")
    rules = categories.load_rules(path) + categories.CATEGORIES
    assert categories.categorize(names, rules).to_list() == ["fused", "gemm_ours", None]
    toml = tmp_path / "rules.toml"
    toml.write_text('[[rule]]\ncategory = "fused"\npattern = "(?i)MY_FUSED"\n', encoding="utf-8")
    assert categories.load_rules(toml) == [("fused", "(?i)MY_FUSED")]


def test_bad_rules_are_usage_errors(tmp_path):
    path = tmp_path / "rules.tsv"
    path.write_text("category\tpattern\nx\t(unclosed\n", encoding="utf-8")
    with pytest.raises(UsageError, match="bad pattern"):
        categories.load_rules(path)


# -- one time source per run -----------------------------------------------------------------

def _tables(rows: list[dict], families: dict[str, str], activities: list[dict] | None = None) -> dict:
    base = {"run": "r", "kind": "launch", "count": 1}
    kernels = schema.conform("kernels", pl.DataFrame([{**base, **r} for r in rows], infer_schema_length=None))
    kernels = kernels.with_columns(categories.categorize(kernels["name"]).alias("category"),
                                   pl.col("name").alias("short_name"))
    acts = schema.conform("activities", pl.DataFrame([{"run": "r", **a} for a in activities or []],
                                                     infer_schema_length=None))
    files = schema.conform("files", pl.DataFrame({"path": list(families), "family": list(families.values())}))
    return {"kernels": kernels, "activities": acts, "files": files}


def test_trace_rows_win_over_ncu_and_transfers_are_added_from_activities():
    t = _tables([
        {"source_file": "ncu.txt", "name": "volta_sgemm_64x64_nt", "duration_ns": 900.0},
        {"source_file": "trace.csv", "name": "volta_sgemm_64x64_nt", "duration_ns": 60.0},
        {"source_file": "trace.csv", "name": "ncclBroadcastKernel_copy_i8(ncclColl)", "duration_ns": 20.0},
    ], {"ncu.txt": "ncu", "trace.csv": "nsys"},
        [{"source_file": "trace.csv", "kind": "memcpy", "name": "[CUDA memcpy HtoD]", "duration_ns": 20.0},
         {"source_file": "trace.csv", "kind": "kernel", "name": "volta_sgemm_64x64_nt", "duration_ns": 60.0}])
    out = share.kernel_share(derive(t))
    assert dict(zip(out["category"], out["share"])) == {"gemm": 0.6, "communication": 0.2, "memcpy": 0.2}
    assert set(out["time_source"]) == {"nsys trace"}
    assert share.uncategorized_share(derive(t))["share"].to_list() == [0.0]


def test_repeated_jobs_of_one_run_are_not_summed():
    t = _tables([
        {"source_file": "out.a.1", "kind": "summary", "count": 10, "name": "volta_sgemm_64x64_nt", "duration_ns": 50.0},
        {"source_file": "out.a.1", "kind": "summary", "count": 10, "name": "mystery", "duration_ns": 50.0},
        {"source_file": "out.a.2", "kind": "summary", "count": 10, "name": "volta_sgemm_64x64_nt", "duration_ns": 10.0},
    ], {"out.a.1": "nvprof", "out.a.2": "nvprof"})
    out = share.kernel_share(derive(t))
    assert out["time_ns"].sum() == 100.0
    assert out["time_source"][0] == "nvprof summary (1 of 2 files)"
    assert share.uncategorized_share(derive(t))["share"].to_list() == [0.5]
    top = share.top_kernels(derive(t), top_n=1)
    assert top.to_dicts() == [{"run": "r", "short_name": "mystery", "category": "other", "category_label": "other",
                               "count": 10, "time_ns": 50.0, "share": 0.5}]


# -- the 2019 course sweeps ------------------------------------------------------------------

@pytest.fixture(scope="module")
def course2019():
    root = corpus_path("course", "pramitmallick-examples", "imagenet", "final")
    return root, ingest([root]).tables


def _nvprof_time_pct(path) -> pl.DataFrame:
    """The file's own GPU activities table (an independent oracle: plain CSV reading)."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"Type","Time(%)"'))
    body = [lines[start]] + [line for line in lines[start + 2:] if line.startswith('"GPU activities"')]
    return pl.read_csv(io.StringIO("\n".join(body)))


def test_shares_equal_nvprofs_own_time_percentages(course2019):
    root, tables = course2019
    own = _nvprof_time_pct(root / "out.alexnet_64_0.01_p40_full.775844")
    ours = share.pattern_share(derive(tables), {"nccl": "ncclBroadcast", "winograd": "(?i)winograd"}).filter(
        pl.col("run") == "out.alexnet_64_0.01_p40_full.775844")
    got = dict(zip(ours["label"], ours["share"]))
    assert got["nccl"] == pytest.approx(own.filter(pl.col("Name").str.contains("ncclBroadcast"))["Time(%)"].sum() / 100, abs=1e-6)
    assert got["winograd"] == pytest.approx(own.filter(pl.col("Name").str.contains("(?i)winograd"))["Time(%)"].sum() / 100, abs=1e-6)
    assert got["nccl"] == pytest.approx(0.23296919, abs=1e-6)      # the first row of that file


def test_category_share_table_per_gpu_model_and_batch_size(course2019):
    _, tables = course2019
    sweep = share.sweep_share(derive(tables))
    full = sweep.filter(pl.col("config") == "full")
    # GPU x model x batch size: both GPUs (one label each), three models, batch 4..64.
    assert sorted(full["gpu"].unique().to_list()) == ["K80", "P40"]
    assert sorted(full["model"].unique().to_list()) == ["alexnet", "resnet18", "vgg16"]
    assert sorted(full.filter(pl.col("model") == "alexnet")["x"].unique().to_list()) == [4, 8, 16, 32, 64]
    comm = full.filter((pl.col("category") == "communication") & (pl.col("model") == "alexnet")
                       & (pl.col("gpu") == "P40"))
    # One line per series, sorted on x: each point once, in batch-size order.
    assert comm["x"].to_list() == [4, 8, 16, 32, 64] and comm["runs"].to_list() == [1] * 5
    # NCCL's share of GPU time (broadcast + reduce) shrinks as the batch grows: 54 % at 4, 31 % at 64.
    shares = comm["share"].to_list()
    assert shares == sorted(shares, reverse=True)
    assert shares[0] == pytest.approx(0.54375, abs=1e-4) and shares[-1] == pytest.approx(0.30689, abs=1e-4)
    conv = full.filter(pl.col("category") == "conv")
    assert conv["share"].min() > 0
    # Every category of a series is at every point (zero-filled), so no line leaves one out.
    per_point = full.group_by("series", "x").agg(pl.col("category").n_unique().alias("n"))
    per_series = full.group_by("series").agg(pl.col("category").n_unique().alias("n"))
    assert per_point.join(per_series, on="series").filter(pl.col("n") != pl.col("n_right")).height == 0


def test_winograd_share_against_batch_size(course2019):
    _, tables = course2019
    sweep = share.sweep_pattern_share(derive(tables), {"winograd": "(?i)winograd", "ncclBroadcast": "ncclBroadcast"})
    p40 = sweep.filter((pl.col("gpu") == "P40") & (pl.col("model") == "alexnet")
                       & (pl.col("config") == "full") & (pl.col("label") == "winograd"))
    assert p40["x"].to_list() == [4, 8, 16, 32, 64]
    assert p40["share"].to_list()[-1] > 5 * p40["share"].to_list()[0]     # 2.6 % -> 17 %


def test_uncategorized_share_stays_below_ten_percent(course2019):
    _, tables = course2019
    unc = share.uncategorized_share(derive(tables))
    assert unc.height >= 50
    assert unc["share"].max() < 0.10
