"""Short kernel names: the same kernel gets the same short name whatever the tool's spelling."""

from __future__ import annotations

import pytest

from roofreport.enrich.names import short_name


@pytest.mark.parametrize("name, short", [
    ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
     "clamp_min_scalar_kernel_impl(at::TensorIterator&, c10::Scalar)::{lambda()#1}::operator()() "
     "const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::detail::Array<char*, 2>)",
     "at::native::vectorized_elementwise_kernel"),
    # old (gcc) and new (ncu 2023+) spellings of anonymous namespaces meet
    ("void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float const*)",
     "at::native::max_pool_forward_nchw"),
    ("void at::native::<unnamed>::max_pool_forward_nchw<float, float>(int, const float *)",
     "at::native::max_pool_forward_nchw"),
    ("void <unnamed>::softmax_warp_forward<float, float, float, 10, false>(float *)", "softmax_warp_forward"),
    ("volta_scudnn_128x64_relu_small_nn_v1", "volta_scudnn_128x64_relu_small_nn_v1"),
    ("ncclBroadcastKernel_copy_i8(ncclColl)", "ncclBroadcastKernel_copy_i8"),
    ("grouping(subgroup*) [105]", "grouping"),                       # nvprof trace correlation id
    ("[CUDA memcpy HtoD]", "[CUDA memcpy HtoD]"),
    ("_ZN2at6native18elementwise_kernelILi512ELi1EZNS0_15gpu_kernel_impl", "at::native::elementwise_kernel"),
    ("_Z15fft2d_c2r_32x32IfLb0", "fft2d_c2r_32x32"),
    # a mangled name in an anonymous namespace (nvprof's and nsys's SQLite keep mangled names) meets
    # ncu's demangled one, so counted launches of it align with a trace and class it by name
    ("_ZN2at6native12_GLOBAL__N_124fused_dropout_kernel_vecIffjLi1ELi4EbEEvNS_4cuda6detail10TensorInfoIKT_T1_EE",
     "at::native::fused_dropout_kernel_vec"),
    ("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool>("
     "at::cuda::detail::TensorInfo<float const, unsigned int>)", "at::native::fused_dropout_kernel_vec"),
    ("_ZN4vllm20_GLOBAL__N__8c1b2f0d6kernelIfEEvPT_", "vllm::kernel"),           # nvcc's anonymous namespace
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>(T1::Params)", "cutlass::Kernel2"),
])
def test_short_name(name, short):
    assert short_name(name) == short
