"""Kernels of the invented workload: FLOPs and bytes from layer shapes, durations from a
per-kernel efficiency against the GPU's peaks (nothing lands above a roof), and the kernel names
the real libraries (cuDNN, cuBLAS, PyTorch) give them on each GPU and precision."""

from __future__ import annotations

import random
from dataclasses import dataclass

from samples.gpus import A100, Gpu

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


def sectors(nbytes: float) -> int:
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
