"""Generate `sample_logs/`, roofreport's own demo folder, deterministically.

The story is a course TA's "ImageNet analysis": resnet18 (mixed precision, AMP) and vgg11 (FP32,
which cuDNN runs as TF32 on the A100) trained at batch size 64 on an A100-SXM4-40GB and a
Tesla V100-SXM2-16GB, plus a 2019-style nvprof batch-size sweep of alexnet on four Tesla K80s.
Every number is invented, but follows from one small model: layer shapes give FLOPs and bytes,
a per-kernel efficiency against the named GPU's peaks gives durations (so nothing lands above
a roof), and the layouts follow the real tools' output as documented in the corpus field guides
(`../shared/corpus/FORMATS-*.md`). No corpus file or block of one is copied.

    python benchmarks/make_sample_logs.py            # (re)write sample_logs/
    python benchmarks/make_sample_logs.py --check    # exit 1 when a committed file differs
    python benchmarks/make_sample_logs.py --out DIR  # write elsewhere

The pieces are reusable to build larger inputs: `resnet18_iteration`/`vgg11_iteration` give one
training step's `Kernel`s for a GPU, `simulate(..., iterations=N)` a trace of N steps, and the
writers (`ncu_text`, `ncu_csv`, `nsys_gputrace_csv`, `nsys_stats_text`, `smi_query_csv`,
`smi_dmon`, `nvprof_summary_csv`, `nvprof_summary_text`, `nvprof_trace_csv`, ...) turn them into
the tools' layouts.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "sample_logs"
BATCH = 64


def rng_for(name: str) -> random.Random:
    """One independent, stable random stream per output file."""
    return random.Random(zlib.crc32(name.encode()))


# -- hardware --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Gpu:
    """Peaks at boost clock (datasheet, reference/gpu_specs.tsv) and the tools' spellings."""

    token: str
    name: str                 # as nvidia-smi / nsys print it
    cc: str
    boost_mhz: float
    base_mhz: float           # ncu locks clocks here (--clock-control base)
    fp32: float               # FLOP/s
    fp16: float               # CUDA-core half
    tensor_fp16: float
    tensor_tf32: float
    dram: float               # byte/s
    l2: float                 # byte/s (approximate, at boost)
    l1: float
    mem_mib: int
    idle_w: float
    tdp_w: float
    pcie: float               # pinned host-to-device byte/s


A100 = Gpu("a100", "NVIDIA A100-SXM4-40GB", "8.0", 1410, 1095, 19.5e12, 78e12, 312e12, 156e12,
           1555e9, 5.0e12, 19.5e12, 40960, 56.0, 400.0, 22e9)
V100 = Gpu("v100", "Tesla V100-SXM2-16GB", "7.0", 1530, 1312, 15.7e12, 31.4e12, 125e12, 0.0,
           900e9, 2.2e12, 15.7e12, 16160, 39.0, 300.0, 11.5e9)


# -- kernels ---------------------------------------------------------------------------------

@dataclass
class Kernel:
    """One launch: how the tools name it, what it computes and moves, and how long it ran."""

    name: str                       # demangled as 2022+ tools print it
    old: str                        # as ncu 2020 printed it
    func: str                       # the function name of ncu's progress line
    phase: str                      # forward / backward / optimizer
    layer: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    regs: int = 32
    smem_static: int = 0
    smem_dyn: int = 0
    fadd: int = 0
    fmul: int = 0
    ffma: int = 0
    hadd: int = 0
    hmul: int = 0
    hfma: int = 0
    tensor_flops: int = 0
    tensor_path: str | None = None  # "fp16" or "tf32"
    dram: int = 0
    l2: int = 0
    l1: int = 0
    eff: float = 0.6                # fraction of the compute peak reached
    effm: float = 0.8               # fraction of the DRAM bandwidth reached
    overhead_ns: float = 2200.0
    api: str = "cudaLaunchKernel"
    ncu_ns: float = 0.0
    nsys_ns: float = 0.0
    clock_hz: float = 0.0

    @property
    def flops32(self) -> int:
        return self.fadd + self.fmul + 2 * self.ffma

    @property
    def flops16(self) -> int:
        return self.hadd + self.hmul + 2 * self.hfma


def _sectors(nbytes: float) -> int:
    """Byte counts as the hardware sees them: whole 32-byte sectors."""
    return int(max(1, round(nbytes / 32))) * 32


def durations(k: Kernel, gpu: Gpu, clock_ratio: float) -> float:
    """Kernel time (ns) at a clock `clock_ratio` × boost: the slowest of its compute and memory
    demands at the kernel's efficiency, plus launch overhead; memory clocks are never locked."""
    tensor_peak = gpu.tensor_fp16 if k.tensor_path == "fp16" else gpu.tensor_tf32
    terms = [
        k.flops32 / (k.eff * gpu.fp32 * clock_ratio),
        k.flops16 / (k.eff * gpu.fp16 * clock_ratio),
        k.tensor_flops / (k.eff * tensor_peak * clock_ratio) if k.tensor_flops else 0.0,
        k.dram / (k.effm * gpu.dram),
        k.l2 / (0.7 * gpu.l2 * clock_ratio),
        k.l1 / (0.6 * gpu.l1 * clock_ratio),
    ]
    return max(terms) * 1e9 + k.overhead_ns


def time_kernels(kernels: list[Kernel], gpu: Gpu, rng: random.Random) -> None:
    """Fill `nsys_ns` (boost clock, warm launch) and `ncu_ns`/`clock_hz` (locked base clock,
    caches flushed: a little slower again)."""
    ratio = gpu.base_mhz / gpu.boost_mhz
    for k in kernels:
        k.nsys_ns = durations(k, gpu, 1.0) * rng.uniform(0.985, 1.02)
        k.ncu_ns = durations(k, gpu, ratio) * rng.uniform(1.02, 1.08) + 600
        k.clock_hz = gpu.base_mhz * 1e6 * rng.uniform(0.996, 1.003)
        check_roof(k, gpu)


def check_roof(k: Kernel, gpu: Gpu) -> None:
    """The generator's own guard: no demo kernel may sit above a roof of its GPU, whichever
    clock the reader scales the roof to (even ncu's locked base clock with a trace's time)."""
    base = k.clock_hz / (gpu.boost_mhz * 1e6)
    for ns, ratio in ((k.nsys_ns, base), (k.ncu_ns, base)):
        s = ns * 1e-9
        tensor_peak = gpu.tensor_fp16 if k.tensor_path == "fp16" else gpu.tensor_tf32
        assert k.flops32 / s <= gpu.fp32 * ratio, k.name
        assert k.flops16 / s <= gpu.fp16 * ratio, k.name
        assert not k.tensor_flops or k.tensor_flops / s <= tensor_peak * ratio, k.name
        assert k.dram / s <= gpu.dram, k.name


# -- kernel names ----------------------------------------------------------------------------
# Each family returns (new-style name, old-style name, function name). "New" is how ncu
# 2022+ and nsys 2023+ demangle ((int)4, <unnamed>, [lambda() (instance 1)], const T *);
# "old" is ncu 2020's spelling (4, (anonymous namespace), {lambda()#1}, T const*).

def _ctype(dt: str) -> str:
    return {"half": "c10::Half", "float": "float"}[dt]


def _old(new: str, params_old: str | None = None) -> str:
    """ncu 2020 spelling of a new-style name (parameter list given when it differs)."""
    s = new.replace("<unnamed>", "(anonymous namespace)")
    for n in range(1, 20):
        s = s.replace(f"[lambda() (instance {n})]", f"{{lambda()#{n}}}")
        for t in ("float", "c10::Half", "float, float", "float, bool", "int"):
            s = s.replace(f"[lambda({t}) (instance {n})]", f"{{lambda({t})#{n}}}")
    s = s.replace("operator ()()", "operator()()").replace("char *", "char*")
    s = s.replace("TensorIteratorBase &", "TensorIteratorBase&").replace("TensorIterator &", "TensorIterator&")
    for n in ("1", "2", "3", "4", "10", "128", "512"):
        s = s.replace(f"(int){n}", n)
    s = s.replace("(bool)1", "true").replace("(bool)0", "false").replace(">>", "> >")
    if params_old is not None:
        cut = s.rindex(">(") + 1 if ">(" in s else s.index("(")
        s = s[:cut] + params_old
    return s


def n_relu(dt: str) -> tuple[str, str, str]:
    lam = (f"at::native::<unnamed>::launch_clamp_scalar(at::TensorIteratorBase &, c10::Scalar, c10::Scalar, "
           f"at::native::detail::ClampLimits)::[lambda() (instance 1)]::operator ()() const::"
           f"[lambda() (instance {8 if dt == 'half' else 7})]::operator ()() const::[lambda({_ctype(dt)}) (instance 1)]")
    new = f"void at::native::vectorized_elementwise_kernel<(int)4, {lam}, at::detail::Array<char *, (int)2>>(int, T2, T3)"
    old_lam = _old(lam)
    return new, _old(new, f"(int, {old_lam}, at::detail::Array<char*, 2>)"), "vectorized_elementwise_kernel"


def n_add(dt: str) -> tuple[str, str, str]:
    new = (f"void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_add<{_ctype(dt)}>, "
           f"at::detail::Array<char *, (int)3>>(int, T2, T3)")
    return new, _old(new, f"(int, at::native::CUDAFunctor_add<{_ctype(dt)}>, at::detail::Array<char*, 3>)"), \
        "vectorized_elementwise_kernel"


def n_relu_bwd(dt: str) -> tuple[str, str, str]:
    c = _ctype(dt)
    lam = f"at::native::<unnamed>::threshold_kernel_impl<{c}>(at::TensorIteratorBase &, T1, T1)::[lambda({c}, {c}) (instance 1)]"
    new = f"void at::native::vectorized_elementwise_kernel<(int)4, {lam}, at::detail::Array<char *, (int)3>>(int, T2, T3)"
    old_lam = _old(lam).replace("T1, T1", f"{c}, {c}")
    return new, _old(new, f"(int, {old_lam}, at::detail::Array<char*, 3>)"), "vectorized_elementwise_kernel"


def n_cast() -> tuple[str, str, str]:
    new = ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::"
           "[lambda() (instance 3)]::operator ()() const::[lambda() (instance 12)]::operator ()() const::"
           "[lambda(float) (instance 1)], at::detail::Array<char *, (int)2>, TrivialOffsetCalculator<(int)1, unsigned int>, "
           "TrivialOffsetCalculator<(int)1, unsigned int>, at::native::memory::LoadWithCast<(int)1>, "
           "at::native::memory::StoreWithCast<(int)1>>(int, T1, T2, T3, T4, T5, T6)")
    return new, _old(new), "unrolled_elementwise_kernel"


def n_bias_copy() -> tuple[str, str, str]:
    lam = ("at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 3)]::operator ()() const::"
           "[lambda() (instance 7)]::operator ()() const::[lambda(float) (instance 1)]")
    new = (f"void at::native::elementwise_kernel<(int)128, (int)2, void at::native::gpu_kernel_impl_nocast<{lam}>"
           f"(at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)")
    old = (f"void at::native::elementwise_kernel<128, 2, void at::native::gpu_kernel_impl<{_old(lam)}>"
           f"(at::TensorIteratorBase&, {_old(lam)} const&)::{{lambda(int)#1}}>(int, void at::native::gpu_kernel_impl<"
           f"{_old(lam)}>(at::TensorIteratorBase&, {_old(lam)} const&)::{{lambda(int)#1}})")
    return new, old, "elementwise_kernel"


def n_bn(direction: str) -> tuple[str, str, str]:
    if direction == "fwd":
        new = ("void cudnn::bn_fw_tr_1C11_singleread<__half, (int)512, (bool)1, (int)1, (int)2, (int)0>(cudnnTensorStruct, "
               "const __half *, cudnnTensorStruct, __half *, const float *, const float *, float, float, float *, float *, "
               "float *, float *, float, float, cudnn::reduced_divisor, int, cudnn::reduced_divisor, "
               "cudnn::bnFwPersistentState *, int, float, float, float, int, float, float, cudnnStatus_t *, bool)")
        return new, _old(new), "bn_fw_tr_1C11_singleread"
    new = ("void cudnn::bn_bw_1C11_singleread<__half, (int)512, (bool)1, (int)1, (int)2, (int)0>(float, float, float, "
           "float, cudnnTensorStruct, const __half *, cudnnTensorStruct, const __half *, cudnnTensorStruct, __half *, "
           "const float *, float *, float *, const float *, const float *, float, cudnn::reduced_divisor, int, "
           "cudnn::reduced_divisor, cudnn::bnBwPersistentState *, int, float, float, float, int, float, "
           "cudnnStatus_t *, bool)")
    return new, _old(new), "bn_bw_1C11_singleread"


def n_maxpool(direction: str, layout: str, dt: str) -> tuple[str, str, str]:
    c = _ctype(dt)
    if direction == "fwd":
        fn = f"max_pool_forward_{layout}"
        params = ("(int, const T1 *, long, long, long, int, int, int, int, int, int, int, int, int, int, T1 *, long *)"
                  if layout == "nchw" else
                  "(const T1 *, int, long, long, long, int, int, int, int, int, int, int, int, int, int, int, int, T1 *, long *)")
        old_params = ("(int, float const*, int, int, int, int, int, int, int, int, int, int, int, int, int, int, float*, long*)")
    else:
        fn = f"max_pool_backward_{layout}"
        params = ("(const T1 *, const long *, int, long, long, long, int, int, int, int, int, int, int, int, int, int, T1 *)"
                  if layout == "nchw" else
                  "(const T1 *, const long *, int, long, long, long, int, int, int, int, int, int, int, int, int, int, "
                  "int, int, int, int, T1 *)")
        old_params = "(int, float const*, long const*, int, int, int, int, int, int, int, int, int, int, int, int, int, int, float*)"
    new = f"void at::native::<unnamed>::{fn}<{c}, float>{params}"
    return new, _old(new, old_params), fn


def n_avgpool(direction: str) -> tuple[str, str, str]:
    if direction == "fwd":
        new = "void at::native::<unnamed>::adaptive_average_pool<float>(const T1 *, T1 *, int, int, int, int, long, long, long)"
        return new, _old(new, "(float*, float*, int, int, int, int, long, long, long)"), "adaptive_average_pool"
    new = "void at::native::<unnamed>::atomic_adaptive_average_gradinput<float>(T1 *, const T1 *, int, int, int, int)"
    return new, _old(new, "(float*, float*, int, int, int, int)"), "atomic_adaptive_average_gradinput"


def n_mean(direction: str) -> tuple[str, str, str]:
    if direction == "fwd":
        new = ("void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<c10::Half, "
               "at::native::MeanOps<float, float, float, float>, unsigned int, c10::Half, (int)4>>(T3)")
        return new, _old(new), "reduce_kernel"
    new = ("void at::native::unrolled_elementwise_kernel<at::native::BinaryFunctor<c10::Half, c10::Half, c10::Half, "
           "at::native::binary_internal::DivFunctor<float>>, at::detail::Array<char *, (int)3>, OffsetCalculator<(int)2, "
           "unsigned int, (bool)0>, OffsetCalculator<(int)1, unsigned int, (bool)0>, at::native::memory::LoadWithoutCast, "
           "at::native::memory::StoreWithoutCast>(int, T1, T2, T3, T4, T5, T6)")
    return new, _old(new), "unrolled_elementwise_kernel"


def n_sum_reduce() -> tuple[str, str, str]:
    new = ("void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
           "at::native::sum_functor<float, float, float>::operator ()(at::TensorIterator &)::[lambda(float, float) "
           "(instance 1)]>, unsigned int, float, (int)4>>(T3)")
    old = _old(new, "(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
                    "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)")
    return new, old.replace("[lambda(float, float) (instance 1)]", "{lambda(float, float)#1}"), "reduce_kernel"


def n_softmax(direction: str, dt: str) -> tuple[str, str, str]:
    c = _ctype(dt)
    if direction == "fwd":
        new = (f"void <unnamed>::softmax_warp_forward<{c}, float, float, (int)10, (bool)1, (bool)0>"
               f"(T2 *, const T1 *, int, int, int, const bool *, int, bool)")
        return new, _old(new, "(float*, float const*, int, int, int)"), "softmax_warp_forward"
    new = (f"void <unnamed>::softmax_warp_backward<float, {c}, float, (int)10, (bool)1, (bool)0>"
           f"(T2 *, const T1 *, const T1 *, int, int, int, const bool *)")
    return new, _old(new, "(float*, float const*, float const*, int, int, int)"), "softmax_warp_backward"


def n_nll(direction: str) -> tuple[str, str, str]:
    if direction == "fwd":
        new = ("void at::native::<unnamed>::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>"
               "(T1 *, T1 *, const T1 *, const T3 *, const T1 *, bool, long, long, long, long)")
        return new, _old(new, "(float*, float*, float*, long*, float*, bool, int, int, int, long)"), \
            "nll_loss_forward_reduce_cuda_kernel_2d"
    new = ("void at::native::<unnamed>::nll_loss_backward_reduce_cuda_kernel_2d<float, long>"
           "(T1 *, const T1 *, const T2 *, const T1 *, const T1 *, bool, int, int, long, long)")
    return new, _old(new, "(float*, float*, long*, float*, float*, bool, int, int, int, long)"), \
        "nll_loss_backward_reduce_cuda_kernel_2d"


def n_dropout(direction: str) -> tuple[str, str, str]:
    if direction == "fwd":
        new = ("void at::native::<unnamed>::fused_dropout_kernel_vec<float, float, unsigned int, (int)1, (int)4, bool>"
               "(at::cuda::detail::TensorInfo<T1, T3>, at::cuda::detail::TensorInfo<T1, T3>, "
               "at::cuda::detail::TensorInfo<T6, T3>, T3, T2, at::PhiloxCudaState)")
        old = _old(new, "(at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<float, "
                        "unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, "
                        "at::PhiloxCudaState)")
        return new, old, "fused_dropout_kernel_vec"
    lam = ("at::native::<unnamed>::masked_scale_kernel<bool, float, float>(at::Tensor &, const at::Tensor &, "
           "const at::Tensor &, T3)::[lambda(float, bool) (instance 1)]")
    new = f"void at::native::vectorized_elementwise_kernel<(int)4, {lam}, at::detail::Array<char *, (int)3>>(int, T2, T3)"
    old_lam = ("at::native::(anonymous namespace)::masked_scale_kernel<bool, float, float>(at::Tensor&, at::Tensor, "
               "at::Tensor, float)::{lambda(float, bool)#1}")
    return new, _old(new, f"(int, {old_lam}, at::detail::Array<char*, 3>)"), "vectorized_elementwise_kernel"


def n_foreach(op: str) -> tuple[str, str, str]:
    """SGD with momentum (foreach) and AMP's unscale / scale update."""
    if op == "unscale":
        tail = ("TensorListMetadata<(int)1>, at::native::<unnamed>::UnaryOpFunctor<float, (int)1, (int)1, (int)0>, "
                "at::native::_amp_foreach_non_finite_check_and_unscale_cuda_(c10::ArrayRef<at::Tensor>, at::Tensor &, "
                "const at::Tensor &)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 2)]::operator ()() "
                "const::[lambda(float) (instance 1)]>(T1, T2, T3...)")
    elif op == "update_scale":
        new = "at::native::amp_update_scale_cuda_kernel(float *, int *, const float *, double, double, int)"
        return new, _old(new, "(float*, int*, float const*, double, double, int)"), "amp_update_scale_cuda_kernel"
    elif op == "mul":
        tail = ("TensorListMetadata<(int)1>, at::native::<unnamed>::BinaryOpScalarFunctor<float, (int)1, (int)1, (int)0>, "
                "std::multiplies<float>, float>(T1, T2, T3...)")
    else:
        tail = ("TensorListMetadata<(int)2>, at::native::<unnamed>::BinaryOpListAlphaFunctor<float, (int)2, (int)2, (int)0>, "
                "std::plus<float>, float>(T1, T2, T3...)")
    new = f"void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::{tail}"
    return new, _old(new), "multi_tensor_apply_kernel"


def _implicit_sgemm(threads: int) -> tuple[str, str, str]:
    """cuDNN's FP32 direct convolution, picked for 3-channel first layers."""
    new = (f"void implicit_convolve_sgemm<float, float, (int){threads}, (int)5, (int)5, (int)3, (int)3, (int)3, (int)1, "
           "(bool)0, (bool)1, (bool)1>(int, int, int, const T1 *, int, T1 *, const T1 *, kernel_conv_params, "
           "unsigned long long, int, float, float, int, const T1 *, const T1 *, bool, int, int)")
    old = (f"void implicit_convolve_sgemm<float, float, {threads}, 5, 5, 3, 3, 3, 1, false, true, true>(int, int, int, "
           "float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, "
           "float const*, float const*, bool, int, int)")
    return new, old, "implicit_convolve_sgemm"


def _same(name: str) -> tuple[str, str, str]:
    """SASS-level library kernels have no signature: every tool prints them alike."""
    return name, name, name


def n_conv(gpu: Gpu, prec: str, direction: str, cin: int, hw: int) -> tuple[str, str, str]:
    """cuDNN's choice for one convolution, by GPU, precision, direction and shape."""
    first = cin == 3 and direction == "fprop"
    if gpu is A100:
        return _conv_a100_half(direction, first, hw) if prec == "half" else _conv_a100_tf32(direction, first)
    if prec == "half":  # V100 tensor cores, HMMA.884
        if cin == 3:
            return _same("volta_fp16_s884cudnn_fp16_256x64_ldg8_relu_f2f_exp_medium_nhwc_tn_v1")
        return _same({"fprop": "volta_fp16_s884cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1",
                      "dgrad": "volta_fp16_s884cudnn_fp16_256x64_ldg8_dgrad_f2f_exp_small_nhwc_tt_v1",
                      "wgrad": "volta_fp16_s884cudnn_fp16_128x128_ldg8_wgrad_idx_exp_interior_nhwc_nt_v1"}[direction])
    return _conv_v100_fp32(direction, first, hw)


def _conv_a100_half(direction: str, first: bool, hw: int) -> tuple[str, str, str]:
    if first:
        return _same("sm80_xmma_fprop_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize64x32x64_stage5_"
                     "warpsize2x1x2_g1_tensor16x8x16_kernel")
    tile = {"fprop": "128x128x32_stage4_warpsize2x2x1", "dgrad": "64x128x32_stage5_warpsize2x2x1",
            "wgrad": "128x128x32_stage3_warpsize2x2x1"}[direction]
    if hw <= 7:
        tile = tile.replace("128x128", "64x64").replace("64x128", "64x64")
    return _same(f"sm80_xmma_{direction}_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize{tile}_g1_"
                 f"tensor16x8x16_kernel")


def _conv_a100_tf32(direction: str, first: bool) -> tuple[str, str, str]:
    """TF32 on tensor cores: cuDNN's default for FP32 convolutions on Ampere."""
    if first:
        return _implicit_sgemm(1024)
    tile = {"fprop": "128x128x16_stage4", "dgrad": "128x64x16_stage4", "wgrad": "128x128x16_stage4"}[direction]
    return _same(f"sm80_xmma_{direction}_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize{tile}_warpsize2x2x1_"
                 f"g1_tensor16x8x8_kernel")


def _conv_v100_fp32(direction: str, first: bool, hw: int) -> tuple[str, str, str]:
    if first:
        return _implicit_sgemm(128)
    if direction == "fprop":
        return _same("volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1" if hw >= 56 else
                     "volta_scudnn_128x128_relu_interior_nn_v1" if hw >= 28 else "volta_scudnn_128x64_relu_interior_nn_v1")
    if direction == "dgrad":
        return _same("volta_scudnn_128x128_stridedB_interior_nn_v1" if hw >= 28 else
                     "volta_scudnn_128x64_stridedB_interior_nn_v1")
    return _same("volta_scudnn_128x128_stridedB_splitK_interior_nn_v1" if hw < 56 else
                 "volta_scudnn_128x64_stridedB_splitK_xregs_large_nn_v1")


def n_winograd_wgrad(part: str) -> tuple[str, str, str]:
    params = {"Data": "WinogradDataParams", "Delta": "WinogradDeltaParams", "Output": "WinogradWgradOutputParams"}[part]
    name = (f"void cudnn::winograd_nonfused::winogradWgrad{part}4x4<float, float>"
            f"(cudnn::winograd_nonfused::{params}<float, float>)")
    return name, name, f"winogradWgrad{part}4x4"


def n_gemm(gpu: Gpu, prec: str, op: str) -> tuple[str, str, str]:
    if prec == "half":
        name = (f"ampere_fp16_s16816gemm_fp16_64x64_ldg8_f2f_stages_64x5_{op}" if gpu is A100
                else f"volta_fp16_s884gemm_fp16_128x64_ldg8_f2f_{op}")
    else:
        tile = {"tn": "128x64", "nn": "128x32", "nt": "64x64"}[op]
        name = f"{'ampere' if gpu is A100 else 'volta'}_sgemm_{tile}_{op}"
    return name, name, name


# -- model programs --------------------------------------------------------------------------

@dataclass
class Builder:
    """Accumulates one training iteration's launches for one GPU and precision."""

    gpu: Gpu
    prec: str                       # "half" (AMP) or "float"
    batch: int
    kernels: list[Kernel] = field(default_factory=list)
    phase: str = "forward"
    layer: str = ""

    @property
    def dt(self) -> int:
        return 2 if self.prec == "half" else 4

    def add(self, names: tuple[str, str, str], grid, block, **kw) -> Kernel:
        new, old, func = names
        k = Kernel(new, old, func, self.phase, self.layer, tuple(grid), tuple(block), **kw)
        k.dram, k.l2, k.l1 = _sectors(k.dram), _sectors(k.l2), _sectors(k.l1)
        self.kernels.append(k)
        return k

    # elementwise and friends: bytes dominate
    def elementwise(self, names, elems: int, reads: int, writes: int, esize: int | None = None,
                    hadd: int = 0, fadd: int = 0, fmul: int = 0, ffma: int = 0, grid=None, block=None) -> Kernel:
        esize = esize or self.dt
        nbytes = elems * esize * (reads + writes)
        grid = grid or (max(1, math.ceil(elems / 512)), 1, 1)
        return self.add(names, grid, block or (128, 1, 1), regs=24,
                        hadd=hadd, fadd=fadd, fmul=fmul, ffma=ffma,
                        dram=nbytes, l2=nbytes * 1.06, l1=nbytes * 1.12, effm=0.82, overhead_ns=2100)

    def conv(self, direction: str, cin: int, cout: int, k: int, stride: int, hin: int) -> Kernel:
        hout = hin // stride
        m = self.batch * hout * hout
        macs = m * cout * cin * k * k
        act_in = self.batch * cin * hin * hin * self.dt
        act_out = self.batch * cout * hout * hout * self.dt
        weights = cout * cin * k * k * self.dt
        names = n_conv(self.gpu, self.prec, direction, cin, hout)
        tensor = self.prec == "half" or (self.gpu is A100 and not (cin == 3 and direction == "fprop"))
        winograd = names[2].startswith("volta_scudnn_winograd")
        # L2 traffic of an implicit GEMM: each operand re-read once per tile of the other side.
        l2 = act_in * max(1, cout // 128) + weights * max(1, m // 128) + act_out
        dram = (act_in + act_out + weights) * 1.25
        small = hout <= 14
        kw = dict(regs=168 if tensor else 128, smem_dyn=65536 if tensor else 0,
                  smem_static=0 if tensor else 17408, dram=dram, l2=max(l2, dram * 1.6),
                  l1=max(l2, dram * 1.6) * (1.18 if tensor else 2.1), effm=0.75, overhead_ns=3500)
        grid = (max(1, math.ceil(m / 128)), max(1, math.ceil(cout / 128)), 1)
        if tensor:
            path = "fp16" if self.prec == "half" else "tf32"
            out_elems = m * cout
            return self.add(names, grid, (128, 1, 1), tensor_flops=2 * macs, tensor_path=path,
                            fadd=out_elems, fmul=out_elems, eff=0.3 if small else 0.45, **kw)
        counted = 2 * macs * (0.46 if winograd else 1.0)
        ffma = int(counted / 2 * 0.985)
        return self.add(names, grid, (256, 1, 1), ffma=ffma, fadd=int(counted * 0.01),
                        fmul=int(counted * 0.005), eff=0.62 if winograd else 0.66, **kw)

    def bn(self, direction: str, c: int, hw: int) -> Kernel:
        elems = self.batch * c * hw * hw
        if direction == "fwd":
            return self.elementwise(n_bn("fwd"), elems, reads=1, writes=1, fadd=elems, ffma=2 * elems, fmul=elems)
        return self.elementwise(n_bn("bwd"), elems, reads=2, writes=1, fadd=2 * elems, ffma=3 * elems, fmul=elems)

    def gemm(self, op: str, m: int, n: int, kk: int) -> Kernel:
        macs = m * n * kk
        nbytes = (m * kk + kk * n + m * n) * self.dt
        names = n_gemm(self.gpu, self.prec, op)
        grid = (max(1, math.ceil(m / 64)), max(1, math.ceil(n / 64)), 1)
        if self.prec == "half":
            return self.add(names, grid, (128, 1, 1), regs=232, smem_dyn=81920, tensor_flops=2 * macs,
                            tensor_path="fp16", fadd=m * n, fmul=m * n, dram=nbytes * 1.1, l2=nbytes * 3,
                            l1=nbytes * 3.4, eff=0.35, overhead_ns=3000)
        return self.add(names, grid, (256, 1, 1), regs=122, smem_static=16384, ffma=macs, fmul=m * n,
                        dram=nbytes * 1.1, l2=nbytes * 4, l1=nbytes * 9, eff=0.66, overhead_ns=3000)


def resnet18_iteration(gpu: Gpu, batch: int = BATCH) -> list[Kernel]:
    """One AMP (fp16) training step of torchvision's resnet18 at 224x224, channels_last."""
    b = Builder(gpu, "half", batch)
    b.layer = "input"
    b.elementwise(n_cast(), batch * 3 * 224 * 224, reads=1, writes=1, esize=3)
    blocks = [("layer1.0", 64, 64, 1, 56), ("layer1.1", 64, 64, 1, 56), ("layer2.0", 64, 128, 2, 56),
              ("layer2.1", 128, 128, 1, 28), ("layer3.0", 128, 256, 2, 28), ("layer3.1", 256, 256, 1, 14),
              ("layer4.0", 256, 512, 2, 14), ("layer4.1", 512, 512, 1, 7)]
    b.layer = "conv1"
    _resnet_conv(b, 3, 64, 7, 2, 224)
    b.bn("fwd", 64, 112)
    b.elementwise(n_relu("half"), batch * 64 * 112 * 112, reads=1, writes=1)
    b.elementwise(n_maxpool("fwd", "nhwc", "half"), batch * 64 * 56 * 56, reads=4, writes=5)
    for name, cin, cout, stride, hin in blocks:
        b.layer = name
        _resnet_block_fwd(b, cin, cout, stride, hin)
    b.layer = "fc"
    b.elementwise(n_mean("fwd"), batch * 512 * 49, reads=1, writes=0)
    b.gemm("tn", 1000, batch, 512)
    _loss(b, "half")
    b.gemm("nn", 512, batch, 1000)
    b.gemm("nt", 512, 1000, batch)
    b.elementwise(n_sum_reduce(), batch * 1000, reads=1, writes=0, esize=4, fadd=batch * 1000)
    b.elementwise(n_mean("bwd"), batch * 512 * 49, reads=1, writes=1)
    for name, cin, cout, stride, hin in reversed(blocks):
        b.layer = name
        _resnet_block_bwd(b, cin, cout, stride, hin)
    b.layer = "conv1"
    b.elementwise(n_maxpool("bwd", "nhwc", "half"), batch * 64 * 112 * 112, reads=2, writes=1)
    b.elementwise(n_relu_bwd("half"), batch * 64 * 112 * 112, reads=2, writes=1)
    b.bn("bwd", 64, 112)
    b.conv("wgrad", 3, 64, 7, 2, 224)
    _optimizer(b, params=11_689_512, amp=True)
    return b.kernels


def _loss(b: Builder, dt: str) -> None:
    """log_softmax + nll_loss forward, then their backward (autocast runs both in float)."""
    n = b.batch * 1000
    warps = ((b.batch + 3) // 4, 1, 1), (32, 4, 1)
    b.elementwise(n_softmax("fwd", dt), n, reads=1, writes=2, fadd=3 * n, fmul=n, grid=warps[0], block=warps[1])
    b.elementwise(n_nll("fwd"), b.batch, reads=1, writes=1, esize=4, fadd=b.batch, grid=(1, 1, 1), block=(32, 1, 1))
    b.phase = "backward"
    b.elementwise(n_nll("bwd"), n, reads=1, writes=1, esize=4, grid=(1, 1, 1), block=(32, 1, 1))
    b.elementwise(n_softmax("bwd", dt), n, reads=2, writes=1, fadd=2 * n, fmul=2 * n, grid=warps[0], block=warps[1])


def _resnet_conv(b: Builder, cin, cout, k, stride, hin) -> None:
    # Autocast also casts each weight to half before its convolution; those tiny copies are
    # left out to keep the demo traces small.
    b.conv("fprop", cin, cout, k, stride, hin)


def _resnet_block_fwd(b: Builder, cin, cout, stride, hin) -> None:
    hout = hin // stride
    n = b.batch * cout * hout * hout
    _resnet_conv(b, cin, cout, 3, stride, hin)
    b.bn("fwd", cout, hout)
    b.elementwise(n_relu("half"), n, reads=1, writes=1)
    _resnet_conv(b, cout, cout, 3, 1, hout)
    b.bn("fwd", cout, hout)
    if stride != 1:
        _resnet_conv(b, cin, cout, 1, stride, hin)
        b.bn("fwd", cout, hout)
    b.elementwise(n_add("half"), n, reads=2, writes=1, hadd=n // 2)
    b.elementwise(n_relu("half"), n, reads=1, writes=1)


def _resnet_block_bwd(b: Builder, cin, cout, stride, hin) -> None:
    hout = hin // stride
    n = b.batch * cout * hout * hout
    b.elementwise(n_relu_bwd("half"), n, reads=2, writes=1)
    if stride != 1:
        b.bn("bwd", cout, hout)
        b.conv("dgrad", cin, cout, 1, stride, hin)
        b.conv("wgrad", cin, cout, 1, stride, hin)
    b.bn("bwd", cout, hout)
    b.conv("dgrad", cout, cout, 3, 1, hout)
    b.conv("wgrad", cout, cout, 3, 1, hout)
    b.elementwise(n_relu_bwd("half"), n, reads=2, writes=1)
    b.bn("bwd", cout, hout)
    b.conv("dgrad", cin, cout, 3, stride, hin)
    b.conv("wgrad", cin, cout, 3, stride, hin)
    b.elementwise(n_add("half"), b.batch * cin * hin * hin, reads=2, writes=1, hadd=b.batch * cin * hin * hin // 2)


def _optimizer(b: Builder, params: int, amp: bool) -> None:
    """SGD with momentum and weight decay, foreach implementation (one launch per op here)."""
    b.phase, b.layer = "optimizer", "sgd"
    if amp:
        b.elementwise(n_foreach("unscale"), params, reads=1, writes=1, esize=4, fmul=params)
    b.elementwise(n_foreach("add"), params, reads=2, writes=1, esize=4, ffma=params)        # grad += wd * p
    b.elementwise(n_foreach("mul"), params, reads=1, writes=1, esize=4, fmul=params)        # buf *= momentum
    b.elementwise(n_foreach("add"), params, reads=2, writes=1, esize=4, fadd=params)        # buf += grad
    b.elementwise(n_foreach("add"), params, reads=2, writes=1, esize=4, ffma=params)        # p -= lr * buf
    if amp:
        k = b.elementwise(n_foreach("update_scale"), 1, reads=1, writes=1, esize=4, fmul=2)
        k.grid = (1, 1, 1)


VGG11 = [(3, 64, 224, True), (64, 128, 112, True), (128, 256, 56, False), (256, 256, 56, True),
         (256, 512, 28, False), (512, 512, 28, True), (512, 512, 14, False), (512, 512, 14, True)]


CLASSIFIER = [(25088, 4096), (4096, 4096), (4096, 1000)]


def vgg11_iteration(gpu: Gpu, batch: int = BATCH) -> list[Kernel]:
    """One FP32 training step of torchvision's vgg11 (TF32 convolutions on the A100)."""
    b = Builder(gpu, "float", batch)
    for i, (cin, cout, hw, pool) in enumerate(VGG11):
        b.layer = f"features.conv{i + 1}"
        b.conv("fprop", cin, cout, 3, 1, hw)
        b.elementwise(n_relu("float"), batch * cout * hw * hw, reads=1, writes=1)
        if pool:
            b.elementwise(n_maxpool("fwd", "nchw", "float"), batch * cout * (hw // 2) ** 2, reads=4, writes=3)
    b.layer = "avgpool"
    b.elementwise(n_avgpool("fwd"), batch * 512 * 49, reads=1, writes=1, fadd=batch * 512 * 49)
    _classifier_fwd(b)
    b.layer = "loss"
    _loss(b, "float")
    _classifier_bwd(b)
    b.layer = "avgpool"
    b.elementwise(n_avgpool("bwd"), batch * 512 * 49, reads=1, writes=1, fadd=batch * 512 * 49)
    for i, (cin, cout, hw, pool) in reversed(list(enumerate(VGG11))):
        b.layer = f"features.conv{i + 1}"
        _vgg_conv_bwd(b, cin, cout, hw, pool)
    _optimizer(b, params=132_863_336, amp=False)
    return b.kernels


def _classifier_fwd(b: Builder) -> None:
    """addmm: the bias is copied into the output, then cuBLAS accumulates onto it."""
    for i, (fin, fout) in enumerate(CLASSIFIER):
        b.layer = f"classifier.fc{i + 1}"
        b.elementwise(n_bias_copy(), b.batch * fout, reads=0, writes=1)
        b.gemm("tn", fout, b.batch, fin)
        if fout == 4096:
            b.elementwise(n_relu("float"), b.batch * fout, reads=1, writes=1)
            b.elementwise(n_dropout("fwd"), b.batch * fout, reads=1, writes=2, fmul=b.batch * fout)


def _classifier_bwd(b: Builder) -> None:
    for i, (fin, fout) in reversed(list(enumerate(CLASSIFIER))):
        b.layer = f"classifier.fc{i + 1}"
        if fout == 4096:
            b.elementwise(n_dropout("bwd"), b.batch * fout, reads=2, writes=1, fmul=b.batch * fout)
            b.elementwise(n_relu_bwd("float"), b.batch * fout, reads=2, writes=1)
        b.gemm("nn", fin, b.batch, fout)
        b.gemm("nt", fin, fout, b.batch)
        b.elementwise(n_sum_reduce(), b.batch * fout, reads=1, writes=0, fadd=b.batch * fout)


def _vgg_conv_bwd(b: Builder, cin: int, cout: int, hw: int, pool: bool) -> None:
    elems = b.batch * cout * hw * hw
    if pool:
        b.elementwise(n_maxpool("bwd", "nchw", "float"), elems, reads=2, writes=1)
    b.elementwise(n_relu_bwd("float"), elems, reads=2, writes=1)
    if cin != 3:
        b.conv("dgrad", cin, cout, 3, 1, hw)
    if b.gpu is V100 and hw >= 56:
        _winograd_wgrad(b, cin, cout, hw)
    else:
        b.conv("wgrad", cin, cout, 3, 1, hw)
    b.elementwise(n_sum_reduce(), elems, reads=1, writes=0, fadd=elems)


def _winograd_wgrad(b: Builder, cin: int, cout: int, hw: int) -> None:
    """cuDNN's non-fused Winograd weight gradient: transform data and deltas, batched GEMM, output."""
    tiles = b.batch * (hw // 4) ** 2 * 36
    b.elementwise(n_winograd_wgrad("Data"), tiles * cin, reads=1, writes=1, fadd=tiles * cin * 4, fmul=tiles * cin)
    b.elementwise(n_winograd_wgrad("Delta"), tiles * cout, reads=1, writes=1, fadd=tiles * cout * 4)
    b.gemm("nt", cout, cin * 36, b.batch * (hw // 4) ** 2)
    b.elementwise(n_winograd_wgrad("Output"), cout * cin * 36, reads=1, writes=1, fadd=cout * cin * 40)


# -- timeline --------------------------------------------------------------------------------

@dataclass
class Event:
    """One row of a GPU trace (kernel, memcpy or memset) and the API call that issued it."""

    kind: str
    name: str
    start: int
    dur: int
    corr: int
    api: str
    api_start: int
    api_dur: int
    nbytes: int = 0
    src: str = ""
    dst: str = ""
    kernel: Kernel | None = None
    iteration: int = 0


@dataclass
class Timeline:
    events: list[Event]
    ranges: list[tuple[str, int, int]]          # NVTX push/pop: (name, start, end), CPU time
    syncs: list[tuple[str, int, int]]           # blocking API calls: (name, start, duration)


def simulate(kernels: list[Kernel], gpu: Gpu, iterations: int, rng: random.Random,
             t0: int, data_wait_ns: float, launch_ns: float) -> Timeline:
    """Replay `iterations` training steps: the CPU issues launches every `launch_ns`; the GPU
    runs them in order on one stream, idling when the CPU (or the data loader) is behind."""
    tl = Timeline([], [], [])
    state = {"cpu": t0, "gpu": t0, "corr": 1200 + rng.randrange(400)}
    for it in range(iterations):
        state["cpu"] += int(data_wait_ns * rng.uniform(0.85, 1.15))
        for nbytes in (BATCH * 3 * 224 * 224 * 4, BATCH * 8):       # images, labels
            _copy(tl, state, rng, it, "[CUDA memcpy Host-to-Device]", nbytes, "Pinned", "Device", gpu.pcie)
        phase, range_start = None, state["cpu"]
        for k in kernels:
            if k.phase != phase:
                if phase is not None:
                    tl.ranges.append((phase, range_start, _device_sync(tl, state, rng)))
                phase, range_start = k.phase, state["cpu"]
                if phase == "backward" and k.name.startswith("void at::native::<unnamed>::nll") and \
                        kernels[0].layer == "input":   # cuDNN's persistent BN kernels reset their semaphores
                    _memset(tl, state, rng, it, 8192)
            _launch(tl, state, rng, it, k, launch_ns)
            if "unscale" in k.name:   # GradScaler.step() reads found_inf back: the CPU waits
                _copy(tl, state, rng, it, "[CUDA memcpy Device-to-Host]", 4, "Device", "Pageable", gpu.pcie, sync=True)
        tl.ranges.append((phase, range_start, _device_sync(tl, state, rng)))
        _copy(tl, state, rng, it, "[CUDA memcpy Device-to-Host]", 4, "Device", "Pageable", gpu.pcie, sync=True)
        state["cpu"] += int(rng.uniform(40_000, 90_000))             # logging, meters, next()
    return tl


def _device_sync(tl: Timeline, state: dict, rng: random.Random) -> int:
    """The profiling script's `torch.cuda.synchronize()` before each `range_pop()`, so the NVTX
    ranges measure the GPU work of their phase."""
    cpu = state["cpu"]
    end = max(cpu, state["gpu"]) + int(rng.uniform(3000, 6000))
    tl.syncs.append(("cudaDeviceSynchronize", cpu, end - cpu))
    state["cpu"] = end + int(rng.uniform(1500, 3000))
    return state["cpu"]


def _memset(tl: Timeline, state: dict, rng: random.Random, it: int, nbytes: int) -> None:
    state["corr"] += 1
    cpu = state["cpu"]
    start = max(cpu + int(rng.uniform(2500, 4000)), state["gpu"] + int(rng.uniform(900, 1500)))
    dur = int(rng.uniform(1000, 1400))
    tl.events.append(Event("memset", "[CUDA memset]", start, dur, state["corr"], "cudaMemsetAsync", cpu,
                           int(rng.uniform(3000, 5500)), nbytes, "Device", "", iteration=it))
    state["gpu"] = start + dur
    state["cpu"] = cpu + int(rng.uniform(6000, 9000))


def _launch(tl: Timeline, state: dict, rng: random.Random, it: int, k: Kernel, launch_ns: float) -> None:
    state["corr"] += 1
    state["cpu"] += int(launch_ns * rng.uniform(0.7, 1.5))
    start = max(state["cpu"] + int(rng.uniform(2500, 4500)), state["gpu"] + int(rng.uniform(900, 1900)))
    dur = int(k.nsys_ns * rng.uniform(0.99, 1.012))
    tl.events.append(Event("kernel", k.name, start, dur, state["corr"], k.api, state["cpu"],
                           int(rng.uniform(3200, 7800)), kernel=k, iteration=it))
    state["gpu"] = start + dur


def _copy(tl: Timeline, state: dict, rng: random.Random, it: int, name: str, nbytes: int, src: str, dst: str,
          rate: float, sync: bool = False) -> None:
    """A cudaMemcpyAsync; with `sync` the CPU then waits for it (`.item()`), as a
    cudaStreamSynchronize the API summary shows."""
    state["corr"] += 1
    cpu = state["cpu"]
    start = max(cpu + int(rng.uniform(2500, 4000)), state["gpu"] + int(rng.uniform(900, 1500)))
    dur = int(nbytes / rate * 1e9 * rng.uniform(0.97, 1.05)) + int(rng.uniform(1000, 1500))
    tl.events.append(Event("memcpy", name, start, dur, state["corr"], "cudaMemcpyAsync", cpu,
                           int(rng.uniform(5500, 11000)), nbytes, src, dst, iteration=it))
    state["gpu"] = start + dur
    if sync:
        wait = start + dur - cpu + int(rng.uniform(2000, 4000))
        tl.syncs.append(("cudaStreamSynchronize", cpu + 8000, wait))
        state["cpu"] = cpu + 8000 + wait
    else:
        state["cpu"] = cpu + int(rng.uniform(9000, 16000))


# -- number formatting -----------------------------------------------------------------------

def auto_bytes(n: float, table: bool) -> tuple[str, str]:
    for unit, f in (("Gbyte", 1e9), ("Mbyte", 1e6), ("Kbyte", 1e3)):
        if n >= f:
            return unit, f"{n / f:.2f}"
    return "byte", f"{int(n)}"


def auto_time(ns: float, table: bool) -> tuple[str, str]:
    for (old, new), f in ((("msecond", "ms"), 1e6), (("usecond", "us"), 1e3)):
        if ns >= f:
            return (new if table else old), f"{ns / f:.2f}"
    return ("ns" if table else "nsecond"), f"{ns:.2f}"


def sep(n: int, thousands: bool = True) -> str:
    return f"{n:,}" if thousands else str(n)


# -- Nsight Compute --------------------------------------------------------------------------

@dataclass(frozen=True)
class NcuStyle:
    """What differs between the ncu builds the demo imitates."""

    layout: str            # "wide" (2019-2022.x), "table" (2023+), "csv" (details page, Era B)
    old_names: bool
    thousands: bool
    op_prefix: str         # "smsp__" or "sm__"
    tensor_inst: bool      # sm__inst_executed_pipe_tensor.sum requested
    ops_paths: tuple[str, ...]  # sm__ops_path_tensor_src_<p>_dst_fp32.sum requested (GA100+)
    date: datetime | None  # kernel header date stamps (wide layout)
    fp64: bool = True      # the d{add,mul,fma} counters requested
    sectors: bool = True   # dram__sectors.sum requested


def ncu_metrics(k: Kernel, gpu: Gpu, style: NcuStyle) -> list[tuple[str, str, str]]:
    """(metric, unit, value) rows for one kernel, sorted by name as ncu prints them."""
    table = style.layout != "wide"
    rows = [("dram__bytes.sum", *auto_bytes(k.dram, table))]
    if style.sectors:
        rows.append(("dram__sectors.sum", "sector", sep(k.dram // 32, style.thousands)))
    rows += [("gpu__time_duration.sum", *auto_time(k.ncu_ns, table)),
            ("l1tex__t_bytes.sum", *auto_bytes(k.l1, table)),
            ("lts__t_bytes.sum", *auto_bytes(k.l2, table)),
            ("sm__cycles_elapsed.avg.per_second", "Ghz" if table else "cycle/nsecond", f"{k.clock_hz / 1e9:.2f}")]
    if style.tensor_inst:
        per_inst = 512 if gpu is V100 else (4096 if k.tensor_path == "fp16" else 2048)
        rows.append(("sm__inst_executed_pipe_tensor.sum", "inst", sep(k.tensor_flops // per_inst, style.thousands)))
    for path in style.ops_paths:
        value = k.tensor_flops if k.tensor_path == path else 0
        rows.append((f"sm__ops_path_tensor_src_{path}_dst_fp32.sum", "", sep(value, style.thousands)))
    ops = dict(dadd=0, dfma=0, dmul=0) if style.fp64 else {}
    ops.update(fadd=k.fadd, ffma=k.ffma, fmul=k.fmul, hadd=k.hadd, hfma=k.hfma, hmul=k.hmul)
    for op, value in ops.items():
        rows.append((f"{style.op_prefix}sass_thread_inst_executed_op_{op}_pred_on.sum", "inst",
                     sep(value, style.thousands)))
    return rows


def _progress_name(func: str) -> str:
    return func if len(func) <= 32 else func[:29] + "..."


def ncu_prelude(kernels: list[Kernel], pid: int, app: str, program: list[str], passes: int,
                rng: random.Random, progress: bool = True) -> list[str]:
    """`==PROF==` status lines with the program's own output interleaved, as a terminal shows it
    (with `--csv`, ncu prints no per-kernel progress lines)."""
    lines = [f"==PROF== Connected to process {pid} ({app})", program[0]]
    chatter = list(program[1:])
    for i, k in enumerate(kernels if progress else []):
        lines.append(f'==PROF== Profiling "{_progress_name(k.func)}" - {i}: 0%....50%....100% - {passes} passes')
        if chatter and rng.random() < 0.15:
            lines.append(chatter.pop(0))
    lines.extend(chatter)
    lines.append(f"==PROF== Disconnected from process {pid}")
    return lines


def _kernel_header(k: Kernel, gpu: Gpu, style: NcuStyle, when: datetime | None) -> str:
    name = k.old if style.old_names else k.name
    if style.layout == "wide":
        return f"  {name}, {when:%Y-%b-%d %H:%M:%S}, Context 1, Stream 7"
    grid, block = (", ".join(map(str, d)) for d in (k.grid, k.block))
    return f"  {name} ({grid})x({block}), Context 1, Stream 7, Device 0, CC {gpu.cc}"


def ncu_text(kernels: list[Kernel], gpu: Gpu, style: NcuStyle, prelude: list[str], process: str) -> str:
    """An `ncu --metrics ...` text log (wide 2019-2022 or table 2023+ layout)."""
    out = list(prelude) + [process]
    when = style.date
    for k in kernels:
        out.append(_kernel_header(k, gpu, style, when))
        out.append("    Section: Command line profiler metrics")
        out.extend(_metric_table(ncu_metrics(k, gpu, style), style.layout))
        out.append("")
        if when is not None:
            when += timedelta(seconds=1 + int(k.ncu_ns * 4 // 1e9))
    return "\n".join(out) + "\n"


def _metric_table(rows: list[tuple[str, str, str]], layout: str) -> list[str]:
    if layout == "wide":
        rule = "    " + "-" * 70 + " " + "-" * 15 + " " + "-" * 30
        body = [f"    {m:<70} {u:>15} {v:>30}" for m, u, v in rows]
        return [rule, *body, rule]
    w1 = max(len("Metric Name"), *(len(m) for m, _, _ in rows))
    w2 = max(len("Metric Unit"), *(len(u) for _, u, _ in rows))
    w3 = max(len("Metric Value"), *(len(v) for _, _, v in rows))
    rule = f"    {'-' * w1} {'-' * w2} {'-' * w3}"
    title = f"    {'Metric Name':<{w1}} {'Metric Unit':<{w2}} {'Metric Value':<{w3}}"
    return [rule, title, rule, *(f"    {m:<{w1}} {u:>{w2}} {v:>{w3}}" for m, u, v in rows), rule]


NCU_CSV_HEADER = ['"ID"', '"Process ID"', '"Process Name"', '"Host Name"', '"Kernel Name"', '"Context"', '"Stream"',
                  '"Block Size"', '"Grid Size"', '"Device"', '"CC"', '"Section Name"', '"Metric Name"',
                  '"Metric Unit"', '"Metric Value"']


def ncu_csv(kernels: list[Kernel], gpu: Gpu, style: NcuStyle, prelude: list[str], pid: int, process: str) -> str:
    """The `--csv` details page, Era B (15 columns: identity with Block/Grid Size, Device, CC)."""
    out = list(prelude) + [",".join(NCU_CSV_HEADER)]
    for i, k in enumerate(kernels):
        ident = [str(i), str(pid), process, "127.0.0.1", k.name, "1", "7",
                 "(" + ", ".join(map(str, k.block)) + ")", "(" + ", ".join(map(str, k.grid)) + ")", "0", gpu.cc,
                 "Command line profiler metrics"]
        for metric, unit, value in ncu_metrics(k, gpu, style):
            out.append(",".join(_csv_quote(x) for x in [*ident, metric, unit, value]))
    return "\n".join(out) + "\n"


def _csv_quote(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


# -- Nsight Systems --------------------------------------------------------------------------

NSYS_TRACE_HEADER = ("Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),"
                     "Bytes (MB),Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name")


def nsys_gputrace_csv(timeline: Timeline, gpu: Gpu) -> str:
    """`nsys stats --report cuda_gpu_trace --format csv` (2024.x header with GreenCtx)."""
    rows = [NSYS_TRACE_HEADER]
    device = f"{gpu.name} (0)"
    for e in sorted(timeline.events, key=lambda e: e.start):
        if e.kind == "kernel":
            k = e.kernel
            cells = [e.start, e.dur, e.corr, *k.grid, *k.block, k.regs, f"{k.smem_static / 1e6:.3f}",
                     f"{k.smem_dyn / 1e6:.3f}", "", "", "", ""]
        else:
            mbps = e.nbytes / 1e6 / (e.dur / 1e9)
            cells = [e.start, e.dur, e.corr, "", "", "", "", "", "", "", "", "", f"{e.nbytes / 1e6:.3f}",
                     f"{mbps:.3f}", e.src, e.dst]
        name = f'"{e.name}"' if "," in e.name else e.name
        rows.append(",".join(str(c) for c in [*cells, device, 1, "", 7, name]))
    return "\n".join(rows) + "\n"


def _center(text: str, width: int) -> str:
    left = (width - len(text)) // 2
    return " " * left + text + " " * (width - len(text) - left)


def console_table(headers: list[str], rows: list[list[str]], name_col: str) -> list[str]:
    """nsys's column tables: centred titles, dash rules, numbers right- and names left-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    def line(cells):
        parts = [c.ljust(w) if h == name_col else c.rjust(w) for c, w, h in zip(cells, widths, headers)]
        return (" " + "  ".join(parts)).rstrip()
    title = (" " + "  ".join(_center(h, w) for h, w in zip(headers, widths))).rstrip()
    rule = " " + "  ".join("-" * w for w in widths)
    return [title, rule, *(line(r) for r in rows)]


def _stats(values: list[int]) -> tuple[int, float, float, int, int, float]:
    total = sum(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return total, total / len(values), statistics.median(values), min(values), max(values), std


def _summary_rows(groups: dict[str, list[int]], grand: int) -> list[list[str]]:
    rows = []
    for name, values in sorted(groups.items(), key=lambda kv: (-sum(kv[1]), kv[0])):
        total, avg, med, lo, hi, std = _stats(values)
        shown = name if len(name) <= 100 else name[:99] + "\u2026"
        rows.append([f"{100 * total / grand:.1f}", f"{total:,}", f"{len(values):,}", f"{avg:,.1f}", f"{med:,.1f}",
                     f"{lo:,}", f"{hi:,}", f"{std:,.1f}", shown])
    return rows


def _group(items) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for name, value in items:
        groups.setdefault(name, []).append(value)
    return groups


def nsys_stats_text(timeline: Timeline, report: str, preamble: list[str], rng: random.Random) -> str:
    """`nsys profile --stats=true` console output, 2024 style (`[n/8] Executing '...' stats report`)."""
    out = list(preamble)
    out += [f"Generating '/tmp/nsys-report-{rng.randrange(16**4):04x}.qdstrm'",
            f"[1/8] [========================100%] {report}.nsys-rep",
            f"[2/8] [========================100%] {report}.sqlite",
            "[3/8] Executing 'nvtx_sum' stats report", ""]
    nvtx = _group((name, end - start) for name, start, end in timeline.ranges)
    grand = sum(sum(v) for v in nvtx.values())
    rows = [r[:8] + ["PushPop", r[8]] for r in _summary_rows(nvtx, grand)]
    out += console_table(["Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
                          "StdDev (ns)", "Style", "Range"], rows, "Range")
    out += ["", "[4/8] Executing 'osrt_sum' stats report", ""]
    out += _osrt_table(timeline, rng)
    out += ["", "[5/8] Executing 'cuda_api_sum' stats report", ""]
    api = _group([(e.api, e.api_dur) for e in timeline.events] + [(n, d) for n, _, d in timeline.syncs]
                 + _api_extras(timeline, rng))
    out += _named_table(api, "Num Calls", "Name")
    out += ["", "[6/8] Executing 'cuda_gpu_kern_sum' stats report", ""]
    out += _named_table(_group((e.name, e.dur) for e in timeline.events if e.kind == "kernel"), "Instances", "Name")
    out += ["", "[7/8] Executing 'cuda_gpu_mem_time_sum' stats report", ""]
    mem = [e for e in timeline.events if e.kind != "kernel"]
    out += _named_table(_group((e.name, e.dur) for e in mem), "Count", "Operation")
    out += ["", "[8/8] Executing 'cuda_gpu_mem_size_sum' stats report", ""]
    out += _size_table(_group((e.name, e.nbytes) for e in mem))
    out += ["", "Generated:", f"    /home/ta/imagenet/{report}.nsys-rep", f"    /home/ta/imagenet/{report}.sqlite"]
    return "\n".join(out) + "\n"


def _named_table(groups: dict[str, list[int]], count_title: str, name_title: str) -> list[str]:
    grand = sum(sum(v) for v in groups.values())
    headers = ["Time (%)", "Total Time (ns)", count_title, "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
               "StdDev (ns)", name_title]
    return console_table(headers, _summary_rows(groups, grand), name_title)


def _size_table(groups: dict[str, list[int]]) -> list[str]:
    rows = []
    for name, values in sorted(groups.items(), key=lambda kv: (-sum(kv[1]), kv[0])):
        mb = [v / 1e6 for v in values]
        std = statistics.stdev(mb) if len(mb) > 1 else 0.0
        rows.append([f"{sum(mb):,.3f}", f"{len(mb):,}", f"{sum(mb) / len(mb):,.3f}", f"{statistics.median(mb):,.3f}",
                     f"{min(mb):,.3f}", f"{max(mb):,.3f}", f"{std:,.3f}", name])
    return console_table(["Total (MB)", "Count", "Avg (MB)", "Med (MB)", "Min (MB)", "Max (MB)", "StdDev (MB)",
                          "Operation"], rows, "Operation")


def _api_extras(timeline: Timeline, rng: random.Random) -> list[tuple[str, int]]:
    """Calls around the launches: events cuDNN records, capture checks, the allocator."""
    kernels = [e for e in timeline.events if e.kind == "kernel"]
    extras = [("cudaEventRecord", int(rng.uniform(1500, 4200))) for e in kernels if e.api == "cuLaunchKernel"]
    extras += [("cudaStreamIsCapturing_v10000", int(rng.uniform(600, 1900))) for _ in range(len(kernels) // 9)]
    extras += [("cudaMalloc", int(rng.uniform(90_000, 420_000))) for _ in range(3)]
    extras += [("cudaStreamWaitEvent", int(rng.uniform(1200, 2600))) for _ in range(8)]
    return extras


def _osrt_table(timeline: Timeline, rng: random.Random) -> list[str]:
    span = max(e.start + e.dur for e in timeline.events) - min(e.start for e in timeline.events)
    calls = {"poll": (41, 0.62), "pthread_cond_timedwait": (22, 0.55), "ioctl": (612, 0.018),
             "read": (188, 0.011), "sem_timedwait": (6, 0.22), "mmap64": (74, 0.0012), "futex": (35, 0.004)}
    groups = {}
    for name, (count, share) in calls.items():
        total = span * share * 4          # several worker threads wait at once
        groups[name] = [max(1000, int(total / count * rng.lognormvariate(0, 0.9))) for _ in range(count)]
    return _named_table(groups, "Num Calls", "Name")


# -- nvidia-smi ------------------------------------------------------------------------------

SMI_HEADER = ("timestamp, index, name, utilization.gpu [%], utilization.memory [%], memory.used [MiB], "
              "memory.total [MiB], power.draw [W]")


@dataclass(frozen=True)
class Load:
    """What the GPU looked like while training (for the monitor logs)."""

    util: float          # mean utilization.gpu during training, %
    util_sd: float
    mem_util: float
    mem_mib: int
    power: float         # mean W during training
    warmup_s: int = 14
    train_s: int = 180
    tail_s: int = 6
    dip_every: int = 0   # a validation / checkpoint pause every N seconds


def smi_series(gpu: Gpu, load: Load, rng: random.Random) -> list[tuple[float, float, float, float]]:
    """(util.gpu, util.mem, mem.used, power) per second: idle, ramp, training, tail."""
    rows = []
    for t in range(load.warmup_s + load.train_s + load.tail_s):
        if t < load.warmup_s:           # dataset scan, model to GPU, cuDNN autotune
            frac = max(0.0, (t - load.warmup_s + 4) / 4)
            util = frac * load.util * rng.uniform(0.3, 0.8)
            mem = 0 if t < 3 else int(min(load.mem_mib, 420 + t * load.mem_mib / load.warmup_s * 0.6))
            power = gpu.idle_w * rng.uniform(0.99, 1.04) + util / 100 * (load.power - gpu.idle_w)
        elif t < load.warmup_s + load.train_s:
            util = min(100, max(0, rng.gauss(load.util, load.util_sd)))
            if load.dip_every and (t - load.warmup_s) % load.dip_every in (0, 1):
                util *= rng.uniform(0.05, 0.3)
            mem = load.mem_mib + rng.choice((0, 0, 0, 2, 4))
            power = gpu.idle_w + (util / load.util) * (load.power - gpu.idle_w) * rng.uniform(0.93, 1.06)
        else:
            util, mem = 0.0, load.mem_mib if t == load.warmup_s + load.train_s else 0
            power = gpu.idle_w * rng.uniform(1.0, 1.25)
        mem_util = util / max(load.util, 1) * load.mem_util * rng.uniform(0.9, 1.08)
        rows.append((round(util), round(min(mem_util, 100)), mem, min(power, gpu.tdp_w * 0.995)))
    return rows


def smi_query_csv(gpu: Gpu, load: Load, start: datetime, rng: random.Random) -> str:
    """`nvidia-smi --query-gpu=timestamp,index,name,... --format=csv -l 1` for one GPU."""
    out = [SMI_HEADER]
    when = start + timedelta(milliseconds=rng.randrange(1000))
    for util, mem_util, mem, power in smi_series(gpu, load, rng):
        out.append(f"{when:%Y/%m/%d %H:%M:%S}.{when.microsecond // 1000:03d}, 0, {gpu.name}, {util} %, "
                   f"{mem_util} %, {mem} MiB, {gpu.mem_mib} MiB, {power:.2f} W")
        when += timedelta(milliseconds=1000 + rng.choice((1, 1, 2, 2, 3)))
    return "\n".join(out) + "\n"


def smi_dmon(gpu: Gpu, load: Load, prompt: str, rng: random.Random) -> str:
    """`nvidia-smi dmon` (default columns, 2018-2022 drivers): the two header lines are printed
    again after every 44 samples; the capture ends with the shell prompt coming back."""
    head = ["# gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk",
            "# Idx     W     C     C     %     %     %     %   MHz   MHz"]
    out = [f"{prompt}timeout 3m nvidia-smi dmon"]
    gtemp, mtemp = 41.0, 43.0
    for i, (util, mem_util, _, power) in enumerate(smi_series(gpu, load, rng)[:180]):
        if i % 44 == 0:
            out.extend(head)
        gtemp += (38 + util * 0.27 - gtemp) * 0.08
        mtemp += (40 + util * 0.3 - mtemp) * 0.07
        pclk = gpu.boost_mhz if util > 5 or i > 3 else 135
        if util > 90 and rng.random() < 0.15:
            pclk -= rng.choice((8, 15, 23))
        cells = [0, round(power), round(gtemp), round(mtemp), util, mem_util, 0, 0, 877, int(pclk)]
        out.append(f"{cells[0]:>5}" + "".join(f"{c:>6}" for c in cells[1:]))
    return "\n".join(out) + "\n" + prompt


# -- the A100/V100 runs ----------------------------------------------------------------------

@dataclass(frozen=True)
class RunPlan:
    gpu: Gpu
    model: str
    ncu_style: NcuStyle
    ncu_window: tuple[str, str, int]  # (first layer and phase profiled, launch count)
    ncu_file: str
    iterations: int                 # training steps in the nsys capture
    load: Load
    data_wait_ns: float
    launch_ns: float
    day: datetime


def _day(s: str) -> datetime:
    return datetime.strptime(s, "%Y-%m-%d %H:%M:%S")


RUNS = [
    RunPlan(A100, "resnet18", NcuStyle("csv", False, True, "smsp__", True, ("fp16",), None, fp64=False,
                                       sectors=False),
            ("layer4.1", "forward", 21), "ncu-details.csv", 2,
            Load(util=67, util_sd=9, mem_util=38, mem_mib=6143, power=231, dip_every=47),
            data_wait_ns=9.5e6, launch_ns=16_000, day=_day("2024-03-12 14:02:41")),
    RunPlan(A100, "vgg11", NcuStyle("wide", False, True, "smsp__", False, (), _day("2024-03-12 16:31:07")),
            ("features.conv8", "forward", 26), "ncu-log-vgg11.txt", 1,
            Load(util=95, util_sd=3, mem_util=41, mem_mib=12617, power=352, dip_every=61),
            data_wait_ns=2.5e6, launch_ns=11_000, day=_day("2024-03-12 16:05:22")),
    RunPlan(V100, "resnet18", NcuStyle("table", False, False, "sm__", True, (), None),
            ("layer4.1", "forward", 32), "ncu-log-resnet18.txt", 1,
            Load(util=92, util_sd=4, mem_util=55, mem_mib=5871, power=231, dip_every=53),
            data_wait_ns=3.0e6, launch_ns=14_000, day=_day("2024-03-13 09:47:10")),
    RunPlan(V100, "vgg11", NcuStyle("wide", True, True, "smsp__", True, (), _day("2024-03-13 11:12:54")),
            ("features.conv3", "forward", 26), "ncu-log-vgg11.txt", 1,
            Load(util=98, util_sd=1.2, mem_util=47, mem_mib=11983, power=271),
            data_wait_ns=1.5e6, launch_ns=11_000, day=_day("2024-03-13 10:40:02")),
]

PROGRAM_OUTPUT = {
    "resnet18": ["=> creating model 'resnet18'", "=> using AMP (torch.cuda.amp), channels_last",
                 "Epoch: [0][ 1/20]\tTime  0.412 ( 0.874)\tData  0.301 ( 0.590)\tLoss 6.9412e+00 (6.9263e+00)"],
    "vgg11": ["=> creating model 'vgg11'",
              "Epoch: [0][ 1/20]\tTime  1.305 ( 2.118)\tData  0.012 ( 0.804)\tLoss 6.9075e+00 (6.9081e+00)"],
}


def _window(kernels: list[Kernel], first_layer: str, phase: str, count: int) -> list[Kernel]:
    """What `--launch-skip N --launch-count M` profiled of one iteration."""
    start = next(i for i, k in enumerate(kernels) if k.layer == first_layer and k.phase == phase)
    return kernels[start:start + count]


def run_files(plan: RunPlan) -> dict[str, str]:
    """All files of one A100/V100 run folder."""
    folder = f"{plan.gpu.token}/{plan.model}"
    rng = rng_for(folder)
    build = resnet18_iteration if plan.model == "resnet18" else vgg11_iteration
    kernels = build(plan.gpu)
    for k in kernels:    # cuDNN launches through the driver API
        if k.name.startswith(("sm80_xmma", "volta_fp16_s884cudnn", "volta_scudnn", "void implicit_convolve",
                              "void cudnn::")):
            k.api = "cuLaunchKernel"
    time_kernels(kernels, plan.gpu, rng)
    files = {f"{folder}/{plan.ncu_file}": _ncu_file(plan, kernels, rng)}
    t0 = int(rng.uniform(18e9, 26e9))
    timeline = simulate(kernels, plan.gpu, plan.iterations, rng, t0, plan.data_wait_ns, plan.launch_ns)
    files[f"{folder}/report_cuda_gpu_trace.csv"] = nsys_gputrace_csv(timeline, plan.gpu)
    if plan.gpu is A100 and plan.model == "resnet18":
        files[f"{folder}/nsys-profile-stats.txt"] = nsys_stats_text(timeline, "resnet18_a100", [
            "$ nsys profile --stats=true --trace=cuda,nvtx,osrt --capture-range=cudaProfilerApi "
            "-o resnet18_a100 python main.py -a resnet18 -b 64 --amp --channels-last --prof 2 /data/imagenet-mini",
            *PROGRAM_OUTPUT["resnet18"][:2], "Collecting data..."], rng)
    files[f"{folder}/nvidia-smi-query.csv"] = smi_query_csv(plan.gpu, plan.load, plan.day, rng)
    return files


def _ncu_file(plan: RunPlan, kernels: list[Kernel], rng: random.Random) -> str:
    profiled = _window(kernels, *plan.ncu_window)
    pid = rng.randrange(20_000, 90_000)
    prelude = ncu_prelude(profiled, pid, "/opt/conda/bin/python3.10", PROGRAM_OUTPUT[plan.model],
                          5 if plan.ncu_style.ops_paths else 4, rng, progress=plan.ncu_style.layout != "csv")
    if plan.ncu_style.layout == "csv":
        return ncu_csv(profiled, plan.gpu, plan.ncu_style, prelude, pid, "python3.10")
    return ncu_text(profiled, plan.gpu, plan.ncu_style, prelude, f"[{pid}] python3.10@127.0.0.1")


# -- nvprof: the 2019 K80 batch-size sweep ---------------------------------------------------

@dataclass(frozen=True)
class Activity:
    """One row of nvprof's summary: per-iteration launches on each of the 4 GPUs and the time
    of one launch as a function of the per-GPU batch b (ms = fixed + per_sample * b)."""

    name: str
    calls: float
    fixed_ms: float
    per_sample_ms: float
    spread: float = 0.25
    algo: str = ""          # "winograd" or "gemm": cuDNN picks by batch size


ALEXNET_K80 = [
    Activity("ncclBroadcastKernel_copy_i8(ncclColl)", 16, 1.7, 0.0, 0.9),
    Activity("ncclReduceKernel_sum_f32(ncclColl)", 16, 0.8, 0.0, 0.8),
    Activity("void cudnn::winograd::winograd3x3Kernel<float, float, int=1, int=4, int=8, bool=0>"
             "(cudnn::maxwell::winograd::KernelParams)", 6, 0.06, 0.115, 0.3, "winograd"),
    Activity("void cudnn::winograd::generateWinogradTilesKernel<int=1, float, float>"
             "(cudnn::winograd::GenerateWinogradTilesParams<float, float>)", 6, 0.012, 0.004, 0.3, "winograd"),
    Activity("void cudnn::winograd_nonfused::winogradWgradData4x4<float, float>"
             "(cudnn::winograd_nonfused::WinogradDataParams<float, float>)", 3, 0.01, 0.011, 0.3, "winograd"),
    Activity("void cudnn::winograd_nonfused::winogradWgradDelta4x4<float, float>"
             "(cudnn::winograd_nonfused::WinogradDeltaParams<float, float>)", 3, 0.01, 0.009, 0.3, "winograd"),
    Activity("void cudnn::winograd_nonfused::winogradWgradOutput4x4<float, float>"
             "(cudnn::winograd_nonfused::WinogradWgradOutputParams<float, float>)", 3, 0.02, 0.002, 0.3, "winograd"),
    Activity("void cudnn::detail::implicit_convolve_sgemm<float, float, int=512, int=6, int=8, int=3, int=3, int=5, "
             "int=1, bool=1, bool=0, bool=1>(int, int, int, float const *, int, float*, cudnn::detail::"
             "implicit_convolve_sgemm<float, float, int=512, int=6, int=8, int=3, int=3, int=5, int=1, bool=1, bool=0, "
             "bool=1>*, kernel_conv_params, int, float, float, int, float, float, int, int)", 6, 0.05, 0.19, 0.3, "gemm"),
    Activity("void cudnn::detail::implicit_convolve_sgemm<float, float, int=1024, int=5, int=5, int=3, int=3, int=3, "
             "int=1, bool=1, bool=0, bool=1>(int, int, int, float const *, int, float*, cudnn::detail::"
             "implicit_convolve_sgemm<float, float, int=1024, int=5, int=5, int=3, int=3, int=3, int=1, bool=1, bool=0, "
             "bool=1>*, kernel_conv_params, int, float, float, int, float, float, int, int)", 1, 0.06, 0.21),
    Activity("void fft2d_r2c_32x32<float, bool=0, unsigned int=1, bool=0>(float2*, float const *, int, int, int, int, "
             "int, int, int, int, int, cudnn::reduced_divisor, bool, int2, int, int)", 2, 0.03, 0.062),
    Activity("void fft2d_c2r_32x32<float, bool=0, bool=0, unsigned int=0, bool=0, bool=0>(float*, float2 const *, int, "
             "int, int, int, int, int, int, int, int, float, float, cudnn::reduced_divisor, bool, float*, float*, int2, "
             "int, int)", 1, 0.02, 0.055),
    Activity("void fermiPlusCgemmLDS128_batched<bool=1, bool=0, bool=0, bool=0, int=4, int=4, int=4, int=3, int=3, "
             "bool=1, bool=0>(float2* const *, float2* const *, float2* const *, float2*, float2 const *, float2 const *, "
             "int, int, int, int, int, int, __int64, __int64, __int64, float2 const *, float2 const *, float2, float2, "
             "int)", 2, 0.04, 0.16),
    Activity("void cudnn::detail::wgrad_alg0_engine<float, int=128, int=6, int=7, int=3, int=3, int=5, bool=1, int=512>"
             "(int, int, int, float const *, int, float*, float const *, kernel_grad_params, int, float, int, int, int, "
             "int)", 3, 0.04, 0.17, 0.3, "gemm"),
    Activity("void cudnn::detail::dgrad_engine<float, int=128, int=6, int=7, int=3, int=3, int=5, bool=1>(int, int, "
             "int, float const *, int, float const *, int, float*, kernel_grad_params, int, int, float, int, int, int)",
             3, 0.04, 0.16, 0.3, "gemm"),
    Activity("sgemm_sm35_ldg_tn_64x16x64x16x16", 3, 0.42, 0.022),   # classifier: weight reads dominate
    Activity("sgemm_sm35_ldg_nn_128x8x64x16x16", 3, 0.36, 0.019),
    Activity("sgemm_sm_heavy_ldg_nt", 3, 0.40, 0.021),
    Activity("void kernelPointwiseApply1<ThresholdUpdateOutputIP<float>, float, unsigned int, int=1>(OffsetInfo<"
             "ThresholdUpdateOutputIP<float>, float, unsigned int>, float, float)", 7, 0.004, 0.0072),
    Activity("void kernelPointwiseApply3<ThresholdUpdateGradInput<float>, float, float, float, unsigned int, int=1, "
             "int=1, int=1>(OffsetInfo<ThresholdUpdateGradInput<float>, float, unsigned int>, OffsetInfo<float, float, "
             "int=1>, OffsetInfo<float, float, int=1>, float, float)", 7, 0.006, 0.0105),
    Activity("void MaxPoolForward<float, float>(int, float const *, int, int, int, int, int, int, int, int, int, int, "
             "int, int, int, int, float*, long*)", 3, 0.005, 0.011),
    Activity("void MaxPoolBackward<float, float>(int, float const *, long const *, int, int, int, int, int, int, int, "
             "int, int, int, int, int, int, int, float*)", 3, 0.01, 0.03),
    Activity("void kernelPointwiseApply2<TensorCAddOp<float>, float, float, unsigned int, int=1, int=1>(OffsetInfo<"
             "TensorCAddOp<float>, float, unsigned int>, OffsetInfo<float, float, int=1>, float, float)", 32, 0.035, 0.0),
    Activity("void kernelPointwiseApply2<TensorMulConstantOp<float>, float, float, unsigned int, int=1, int=1>("
             "OffsetInfo<TensorMulConstantOp<float>, float, unsigned int>, OffsetInfo<float, float, int=1>, float, "
             "float)", 16, 0.03, 0.0),
    Activity("void add_tensor_kernel_v3<int=2, float, float, int=128, int=1, int=1, int=4, int=2>(cudnnTensorStruct, "
             "float*, cudnnTensorStruct, float const *, float, float)", 5, 0.004, 0.0042),
    Activity("void calc_bias_diff<int=2, float, float, int=128, int=0>(cudnnTensorStruct, float const *, "
             "cudnnTensorStruct, float*, float, float, int)", 5, 0.006, 0.0051),
    Activity("void fused_dropout_kernel<float, float, unsigned int, int=1>(TensorInfo<float, unsigned int>, "
             "TensorInfo<float, unsigned int>, TensorInfo<unsigned char, unsigned int>, unsigned int, float, "
             "std::pair<unsigned long, unsigned long>)", 2, 0.005, 0.0018),
    Activity("void adaptiveaveragepool<float>(float*, float*, int, int, int, int, long, long, long)", 1, 0.004, 0.006),
    Activity("void cunn_SoftMaxForward<int=2, float, float, LogSoftMaxForwardEpilogue>(float*, float*, int)",
             1, 0.006, 0.0004),
    Activity("[CUDA memcpy HtoD]", 1.25, 0.06, 0.072, 0.5),
    Activity("[CUDA memcpy DtoH]", 1, 0.004, 0.0, 0.3),
    Activity("[CUDA memcpy PtoP]", 0.75, 0.03, 0.0, 0.6),
    Activity("[CUDA memset]", 2.5, 0.0025, 0.0, 0.5),
]

ALEXNET_API = [  # (name, calls per iteration, ms per call)
    ("cudaLaunchKernel", None, 0.0151), ("cudaMemcpyAsync", None, 0.9), ("cudaEventDestroy", 40, 0.41),
    ("cudaGetDevice", 1210, 0.00082), ("cudaSetDevice", 120, 0.0009), ("cudaEventRecord", 48, 0.0041),
    ("cudaStreamWaitEvent", 36, 0.0036), ("cudaEventCreateWithFlags", 40, 0.0012), ("cudaMemsetAsync", 2.5, 0.0068),
    ("cudaStreamSynchronize", 4, 0.011), ("cudaFuncGetAttributes", 9, 0.0019), ("cudaMalloc", 0.05, 0.52),
    ("cudaFree", 0.01, 0.61), ("cudaHostAlloc", 0.002, 21.4), ("cudaDeviceEnablePeerAccess", 0.0015, 0.48),
    ("cudaGetDeviceProperties", 0.003, 0.31), ("cuDeviceGetAttribute", 0.25, 0.00051),
    ("cudaDeviceCanAccessPeer", 0.004, 0.021), ("cuDeviceTotalMem", 0.001, 0.66), ("cuDeviceGetName", 0.001, 0.083),
    ("cudaGetDeviceCount", 0.006, 0.00041), ("cuInit", 0.0001, 0.0012), ("cuDriverGetVersion", 0.0001, 0.0009),
]

IMAGES = 12_800   # one epoch of the course's small ImageNet subset


def winograd_share(batch: int) -> float:
    """Fraction of conv3-5 launches for which cuDNN picks Winograd: more as the batch grows."""
    return {16: 0.2, 32: 0.45, 64: 0.75, 128: 0.95}.get(batch, min(0.95, batch / 135))


@dataclass
class Row:
    kind: str               # "GPU activities" / "API calls"
    name: str
    calls: int
    total_s: float
    avg_s: float
    min_s: float
    max_s: float


def _row(kind: str, name: str, calls: int, avg: float, lo: float, hi: float) -> Row:
    """A summary row, times in whole nanoseconds as nvprof keeps them; one call has min = avg = max."""
    avg, lo, hi = (round(x * 1e9) / 1e9 for x in (avg, lo, hi))
    if calls == 1:
        lo = hi = avg
    return Row(kind, name, calls, round(calls * avg * 1e9) / 1e9, avg, lo, hi)


def nvprof_rows(batch: int, rng: random.Random, iterations: int | None = None) -> list[Row]:
    """The summary rows of one run of the sweep (4 GPUs, DataParallel, per-GPU batch = batch/4)."""
    iters = iterations or IMAGES // batch
    b = batch / 4
    gpu_rows = []
    for a in ALEXNET_K80:
        share = winograd_share(batch) if a.algo == "winograd" else 1 - winograd_share(batch) if a.algo else 1.0
        per_iter = a.calls * (1 if a.name.startswith("[") else 4) * share
        calls = max(1, int(per_iter * iters * rng.uniform(0.995, 1.005)))
        avg = (a.fixed_ms + a.per_sample_ms * b) * rng.uniform(0.97, 1.03) / 1e3
        if a.name.startswith("[CUDA memcpy HtoD]"):
            avg = (0.06 + 0.072 * b * 4 / 1.25) / 1e3 * rng.uniform(0.97, 1.03)
        lo = avg * rng.uniform(1 - a.spread, 1 - a.spread * 0.6)
        hi = avg * rng.uniform(1 + a.spread * 1.5, 1 + a.spread * 4)
        gpu_rows.append(_row("GPU activities", a.name, calls, avg, lo, hi))
    launches = sum(r.calls for r in gpu_rows if not r.name.startswith("["))
    copies = sum(r.calls for r in gpu_rows if r.name.startswith("[CUDA memcpy"))
    api_rows = []
    for name, per_iter, ms in ALEXNET_API:
        calls = launches if name == "cudaLaunchKernel" else copies if name == "cudaMemcpyAsync" else \
            max(1, int(per_iter * iters))
        avg = ms * rng.uniform(0.95, 1.05) / 1e3
        if name == "cudaMemcpyAsync":   # loss.item() waits for the step to finish
            avg *= 1 + batch / 48
        api_rows.append(_row("API calls", name, calls, avg, avg * rng.uniform(0.02, 0.4), avg * rng.uniform(3, 60)))
    gpu_rows.sort(key=lambda r: -r.total_s)
    api_rows.sort(key=lambda r: -r.total_s)
    return gpu_rows + api_rows


def _unit(values: list[float]) -> tuple[str, float]:
    biggest = max(values)
    return ("s", 1.0) if biggest >= 1 else ("ms", 1e3) if biggest >= 1e-3 else ("us", 1e6)


def nvprof_summary_csv(rows: list[Row]) -> list[str]:
    """`--print-summary --csv`: a units row whose unit is chosen per column by its largest value."""
    cols = [("total_s", "Time"), ("avg_s", "Avg"), ("min_s", "Min"), ("max_s", "Max")]
    units = {attr: _unit([getattr(r, attr) for r in rows]) for attr, _ in cols}
    out = ['"Type","Time(%)","Time","Calls","Avg","Min","Max","Name"',
           f",%,{units['total_s'][0]},,{units['avg_s'][0]},{units['min_s'][0]},{units['max_s'][0]},"]
    for kind in ("GPU activities", "API calls"):
        group = [r for r in rows if r.kind == kind]
        total = sum(r.total_s for r in group)
        for r in group:
            cells = [f"{getattr(r, a) * units[a][1]:.6f}" for a, _ in cols]
            out.append(f'"{kind}",{100 * r.total_s / total:.6f},{cells[0]},{r.calls},{cells[1]},{cells[2]},'
                       f'{cells[3]},"{r.name}"')
    return out


def nvprof_time(seconds: float) -> str:
    """nvprof's text cells: 6 significant digits in s, 5 in ms/us, whole ns."""
    for unit, f, digits in (("s", 1.0, 6), ("ms", 1e3, 5), ("us", 1e6, 5)):
        v = seconds * f
        if v >= 1:
            decimals = max(0, digits - len(str(int(v))))
            return f"{v:.{decimals}f}{unit}"
    return f"{round(seconds * 1e9)}ns"


def nvprof_summary_text(rows: list[Row], pid: int) -> list[str]:
    """The `==PID== Profiling result:` table with the Type column (CUDA 9+)."""
    out = [f"=={pid}== Profiling result:",
           "            Type  Time(%)      Time     Calls       Avg       Min       Max  Name"]
    for kind in ("GPU activities", "API calls"):
        group = [r for r in rows if r.kind == kind]
        total = sum(r.total_s for r in group)
        for i, r in enumerate(group):
            label = f"{kind}:" if i == 0 else ""
            out.append(f"{label:>16}  {100 * r.total_s / total:6.2f}%  {nvprof_time(r.total_s):>8}  {r.calls:>8}  "
                       f"{nvprof_time(r.avg_s):>8}  {nvprof_time(r.min_s):>8}  {nvprof_time(r.max_s):>8}  {r.name}")
    return out


def _course_banner(model: str, batch: int, experiment: str, pid: int) -> list[str]:
    cmd = f"python main.py -a {model} -b {batch} --epochs 1 --lr 0.01 --workers 8 /scratch/ta/imagenet-small"
    return [f"{model}_{batch}_0.01_k80_{experiment}",
            f"=={pid}== NVPROF is profiling process {pid}, command: {cmd}",
            f"=> creating model '{model}'"], cmd


def _epoch_lines(batch: int, rng: random.Random, step: float) -> list[str]:
    n = IMAGES // batch
    lines = []
    for i in range(0, n, max(1, n // 3)):
        t = step * rng.uniform(0.95, 1.1)
        lines.append(f"Epoch: [0][{i:>3}/{n}]\tTime {t:6.3f} ({step * 1.4:6.3f})\tData {t * 0.05:6.3f} "
                     f"({t * 0.4:6.3f})\tLoss {6.91 - i * 0.0009:.4e} ({6.91 - i * 0.0004:.4e})\t"
                     f"Acc@1   0.000 (  0.098)\tAcc@5   0.000 (  0.488)")
    return lines


def nvprof_full_csv(batch: int) -> str:
    rng = rng_for(f"k80_sweep/{batch}")
    pid = rng.randrange(10_000, 200_000)
    banner, cmd = _course_banner("alexnet", batch, "full", pid)
    rows = nvprof_rows(batch, rng)
    gpu_s = sum(r.total_s for r in rows if r.kind == "GPU activities") / 4 / (IMAGES // batch)
    out = banner + _epoch_lines(batch, rng, gpu_s) + [
        f"=={pid}== Profiling application: {cmd}", f"=={pid}== Profiling result:"]
    out += nvprof_summary_csv(rows)
    out.append(f"=={pid}== Generated result file: /scratch/ta/imagenet/alexnet_{batch}_0.01_k80_full_{pid}.nvvp")
    return "\n".join(out) + "\n"


RESNET18_K80 = [  # (name, calls per iteration on each GPU, ms per launch at per-GPU batch 16)
    ("ncclBroadcastKernel_copy_i8(ncclColl)", 62, 0.27),
    ("ncclReduceKernel_sum_f32(ncclColl)", 62, 0.19),
    ("void cudnn::winograd::winograd3x3Kernel<float, float, int=1, int=4, int=8, bool=0>(cudnn::maxwell::winograd::"
     "KernelParams)", 16, 2.61),
    ("void cudnn::detail::bn_fw_tr_1C11_kernel_new<float, float, int=512, bool=1, int=1>(cudnnTensorStruct, float "
     "const *, cudnnTensorStruct, float*, float const *, float const *, float, float, float*, float*, float*, float*, "
     "float, float)", 20, 0.71),
    ("void cudnn::detail::bn_bw_1C11_kernel_new<float, float, float2, int=512, bool=1, int=1>(float, float, float, "
     "float, cudnnTensorStruct, float const *, cudnnTensorStruct, float const *, cudnnTensorStruct, float*, float "
     "const *, float*, float*, float const *, float const *, float)", 20, 1.22),
    ("void cudnn::detail::wgrad_alg0_engine<float, int=512, int=6, int=5, int=3, int=3, int=3, bool=1, int=512>(int, "
     "int, int, float const *, int, float*, float const *, kernel_grad_params, int, float, int, int, int, int)",
     16, 2.05),
    ("void cudnn::detail::dgrad_engine<float, int=512, int=6, int=5, int=3, int=3, int=3, bool=1>(int, int, int, "
     "float const *, int, float const *, int, float*, kernel_grad_params, int, int, float, int, int, int)", 15, 2.23),
    ("void cudnn::detail::implicit_convolve_sgemm<float, float, int=128, int=5, int=5, int=3, int=3, int=3, int=1, "
     "bool=1, bool=0, bool=1>(int, int, int, float const *, int, float*, cudnn::detail::implicit_convolve_sgemm<float, "
     "float, int=128, int=5, int=5, int=3, int=3, int=3, int=1, bool=1, bool=0, bool=1>*, kernel_conv_params, int, "
     "float, float, int, float, float, int, int)", 4, 1.48),
    ("void kernelPointwiseApply1<ThresholdUpdateOutputIP<float>, float, unsigned int, int=1>(OffsetInfo<"
     "ThresholdUpdateOutputIP<float>, float, unsigned int>, float, float)", 17, 0.38),
    ("void kernelPointwiseApply3<ThresholdUpdateGradInput<float>, float, float, float, unsigned int, int=1, int=1, "
     "int=1>(OffsetInfo<ThresholdUpdateGradInput<float>, float, unsigned int>, OffsetInfo<float, float, int=1>, "
     "OffsetInfo<float, float, int=1>, float, float)", 17, 0.55),
    ("void kernelPointwiseApply3<TensorCAddOp<float>, float, float, float, unsigned int, int=1, int=1, int=1>("
     "OffsetInfo<TensorCAddOp<float>, float, unsigned int>, OffsetInfo<float, float, int=1>, OffsetInfo<float, float, "
     "int=1>, float)", 8, 0.49),
    ("void MaxPoolForward<float, float>(int, float const *, int, int, int, int, int, int, int, int, int, int, int, int, "
     "int, int, float*, long*)", 1, 0.92),
    ("void MaxPoolBackward<float, float>(int, float const *, long const *, int, int, int, int, int, int, int, int, int, "
     "int, int, int, int, int, float*)", 1, 2.41),
    ("sgemm_sm35_ldg_tn_64x16x64x16x16", 1, 0.11),
    ("sgemm_sm35_ldg_nn_128x8x64x16x16", 1, 0.09),
    ("[CUDA memcpy HtoD]", 0.5, 6.9),
    ("[CUDA memcpy PtoP]", 0.75, 0.41),
    ("[CUDA memset]", 3, 0.0031),
    ("[CUDA memcpy DtoH]", 0.25, 0.0042),
]


def nvprof_resnet18_text() -> str:
    """One K80 run summarised without `--csv`: the text table with the Type column."""
    rng = rng_for("k80_sweep/resnet18_text")
    pid = rng.randrange(10_000, 200_000)
    banner, cmd = _course_banner("resnet18", 64, "full", pid)
    iters = IMAGES // 64 // 4    # this student stopped after a quarter epoch (--timeout 600)
    rows = []
    for name, per_iter, ms in RESNET18_K80:
        calls = int(per_iter * (1 if name.startswith("[") else 4) * iters * rng.uniform(0.998, 1.002))
        avg = ms * rng.uniform(0.97, 1.03) / 1e3
        rows.append(_row("GPU activities", name, calls, avg, avg * rng.uniform(0.5, 0.9), avg * rng.uniform(1.4, 3.0)))
    launches = sum(r.calls for r in rows if not r.name.startswith("["))
    for name, per_iter, ms in ALEXNET_API[:12]:
        calls = launches if name == "cudaLaunchKernel" else int((per_iter or 3) * iters * 2.6)
        avg = ms * rng.uniform(0.9, 1.1) / 1e3 * (9 if name == "cudaMemcpyAsync" else 1)
        rows.append(_row("API calls", name, calls, avg, avg * rng.uniform(0.02, 0.3), avg * rng.uniform(4, 40)))
    rows.sort(key=lambda r: (r.kind != "GPU activities", -r.total_s))
    out = banner + [f"=={pid}== Execution timeout, stopping the application...",
                    f"=={pid}== Profiling application: {cmd}"] + nvprof_summary_text(rows, pid)
    return "\n".join(out) + "\n"


METRICS = [("dram_read_transactions", "Device Memory Read Transactions"),
           ("dram_write_transactions", "Device Memory Write Transactions"),
           ("flop_count_sp", "Floating Point Operations(Single Precision)")]


def nvprof_metrics_csv(batch: int) -> str:
    """`--kernels ... --metrics dram_read_transactions,dram_write_transactions,flop_count_sp --csv`
    on the 4 K80s: every kernel listed once per device."""
    rng = rng_for("k80_sweep/metrics")
    pid = rng.randrange(10_000, 200_000)
    banner, cmd = _course_banner("alexnet", batch, "conv", pid)
    b = batch // 4
    convs = [a for a in ALEXNET_K80 if "winograd3x3" in a.name or "convolve" in a.name or "sgemm_sm" in a.name][:6]
    out = banner + [f"=={pid}== Some kernel(s) will be replayed on device {d} in order to collect all events/metrics."
                    for d in (0, 2, 1, 3)]
    out += [f"=={pid}== Profiling application: {cmd}", f"=={pid}== Profiling result:", f"=={pid}== Metric result:",
            '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"']
    for device in range(4):
        for a in convs:
            ms = a.fixed_ms + a.per_sample_ms * b
            flops = ms * 1e-3 * 4.37e12 * (0.55 if "winograd3x3" in a.name else 0.45)
            nbytes = ms * 1e-3 * 240e9 * 0.35
            invocations = max(1, int(a.calls * (IMAGES // batch) // 40 * rng.uniform(0.9, 1.1)))
            values = {"dram_read_transactions": nbytes * 0.7 / 32, "dram_write_transactions": nbytes * 0.3 / 32,
                      "flop_count_sp": flops}
            for metric, description in METRICS:
                avg = values[metric] * rng.uniform(0.97, 1.03)
                lo, hi = int(avg * rng.uniform(0.35, 0.8)), int(avg * rng.uniform(1.1, 1.9))
                out.append(f'"Tesla K80 ({device})","{a.name}",{invocations},"{metric}","{description}",'
                           f"{lo},{hi},{int(avg)}")
    return "\n".join(out) + "\n"


# One training step of alexnet on a single K80 (per-GPU batch = batch), as launched: keys pick
# entries of ALEXNET_K80 by substring.
ALEXNET_STEP = (
    ["int=1024", "add_tensor", "OutputIP", "MaxPoolForward",                            # conv1
     "fft2d_r2c", "fft2d_r2c", "fermiPlus", "fft2d_c2r", "add_tensor", "OutputIP", "MaxPoolForward"]
    + ["generateWinograd", "winograd3x3", "add_tensor", "OutputIP"] * 3 + ["MaxPoolForward", "adaptiveaverage"]
    + ["fused_dropout", "sgemm_sm35_ldg_tn", "TensorCAdd", "OutputIP"] * 2 + ["sgemm_sm35_ldg_tn", "TensorCAdd",
                                                                           "cunn_SoftMax"]
    + ["sgemm_sm35_ldg_nn", "sgemm_sm_heavy", "UpdateGradInput"] * 3
    + ["MaxPoolBackward"] + ["UpdateGradInput", "calc_bias", "dgrad_engine", "WgradData", "WgradDelta",
                             "WgradOutput"] * 3
    + ["MaxPoolBackward", "UpdateGradInput", "calc_bias", "dgrad_engine", "wgrad_alg0"]
    + ["MaxPoolBackward", "UpdateGradInput", "calc_bias", "wgrad_alg0"]
    + ["MulConstant", "TensorCAdd", "TensorCAdd"] * 16)                                 # SGD, per parameter

NVPROF_TRACE_HEADER = ('"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z",'
                       '"Registers Per Thread","Static SMem","Dynamic SMem","Size","Throughput","SrcMemType",'
                       '"DstMemType","Device","Context","Stream","Name","Correlation_ID"')


def nvprof_trace_csv(batch: int, iterations: int) -> str:
    """`nvprof --print-gpu-trace --csv` of a few steps on one K80 (units row: s, ms, KB, B, MB, GB/s)."""
    rng = rng_for("k80_sweep/trace")
    pid = rng.randrange(10_000, 200_000)
    banner, cmd = _course_banner("alexnet", batch, "trace", pid)
    by_key = {key: next(a for a in ALEXNET_K80 if key in a.name) for key in set(ALEXNET_STEP)}
    t, corr, rows = 0.0, 1000 + rng.randrange(500), []
    for _ in range(iterations):
        for nbytes in (batch * 3 * 224 * 224 * 4, batch * 8):
            corr += 1
            dur = nbytes / 9.6e9 * rng.uniform(0.97, 1.04) + 2.2e-6
            rows.append(_trace_copy(t, dur, nbytes, corr))
            t += dur + rng.uniform(4e-6, 9e-6)
        for key in ALEXNET_STEP:
            a = by_key[key]
            corr += 3
            dur = (a.fixed_ms + a.per_sample_ms * batch) / 1e3 * rng.uniform(0.96, 1.05)
            rows.append(_trace_kernel(t, dur, a.name, corr, rng))
            t += dur + rng.uniform(3e-6, 12e-6)
        t += rng.uniform(0.02, 0.04)                  # the data loader, between steps
    out = banner + [f"=={pid}== Profiling application: {cmd}", f"=={pid}== Profiling result:",
                    NVPROF_TRACE_HEADER, "s,ms,,,,,,,,KB,B,MB,GB/s,,,,,,,"] + rows
    return "\n".join(out) + "\n"


def _trace_copy(t: float, dur: float, nbytes: int, corr: int) -> str:
    return (f'{t:.6f},{dur * 1e3:.6f},,,,,,,,,,{nbytes / 1e6:.6f},{nbytes / dur / 1e9:.6f},"Pinned","Device",'
            f'"Tesla K80 (0)","1","7","[CUDA memcpy HtoD]",{corr}')


def _trace_kernel(t: float, dur: float, name: str, corr: int, rng: random.Random) -> str:
    grid = rng.choice((64, 128, 196, 256, 512, 1024, 2048))
    block, regs = (256, rng.choice((32, 64, 72, 128))) if "gemm" in name or "cudnn" in name else (512, 16)
    smem = f"{rng.choice((4.0, 8.25, 16.5)):.6f}" if "gemm" in name or "cudnn" in name else "0.000000"
    return f'{t:.6f},{dur * 1e3:.6f},{grid},1,1,{block},1,1,{regs},{smem},0,,,,,"Tesla K80 (0)","1","7","{name}",{corr}'


def sweep_files() -> dict[str, str]:
    files = {}
    for i, batch in enumerate((16, 32, 64, 128)):
        files[f"k80_sweep/out.alexnet_{batch}_0.01_k80_full.{812041 + 17 * i}"] = nvprof_full_csv(batch)
    files["k80_sweep/out.resnet18_64_0.01_k80_full.812133"] = nvprof_resnet18_text()
    files["k80_sweep/out.alexnet_64_0.01_k80_conv.812150"] = nvprof_metrics_csv(64)
    files["k80_sweep/out.alexnet_32_0.01_k80_trace.812167"] = nvprof_trace_csv(32, 1)
    return files


# -- the folder ------------------------------------------------------------------------------

def dmon_file() -> dict[str, str]:
    rng = rng_for("v100/dmon")
    load = Load(util=96, util_sd=1.5, mem_util=61, mem_mib=5871, power=258, warmup_s=5, train_s=172, tail_s=3)
    return {"v100/dmon/gpu_utilization_v100.txt": smi_dmon(V100, load, "[ta@gpu-v100-07 ~]$ ", rng)}


TOML = """\
# roofreport.toml: what the paths do not say. The A100/V100 runs all trained at batch size 64
# (main.py -b 64); the folders only name the GPU and the model.

[[run]]
match = "a100/*/*"
batch_size = 64

[[run]]
match = "v100/resnet18/*"
batch_size = 64

[[run]]
match = "v100/vgg11/*"
batch_size = 64
"""


def all_files() -> dict[str, str]:
    files: dict[str, str] = {}
    for plan in RUNS:
        files.update(run_files(plan))
    files.update(dmon_file())
    files.update(sweep_files())
    files["roofreport.toml"] = TOML
    return dict(sorted(files.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for rel, text in all_files().items():
        path = args.out / rel
        data = text.encode("utf-8")
        if args.check:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for rel in stale:
        print(f"out of date: {rel}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
