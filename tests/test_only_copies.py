"""`categories.only_copies` (ingest's "this file measured no kernel" check, issue #35's per-file
cost) agrees with `categorize` on every name the readers give: copies and fills of every
vendor, kernels whose names mention copying, and nulls."""

from __future__ import annotations

import itertools

import polars as pl

from roofreport.enrich.categories import COPIES, categorize, only_copies

# As the readers write them (nvprof, nsys, rocprof v1/v2/v3, AMD's blit kernels), and kernels
# that copy or fill but are no copy activity.
NAMES = [
    "[CUDA memcpy HtoD]", "[CUDA memcpy DtoH]", "[CUDA memset]", "CUDA memcpy Host-to-Device",
    "[CUDA Unified Memory memcpy HtoD]", "Unified Memory memcpy DtoH", "[CUDA memcpy PtoP]",
    "memset", "MEMORY_COPY_HOST_TO_DEVICE", "CopyHostToDevice", "CopyDeviceToDevice", "FillBuffer",
    "__amd_rocclr_copyBuffer", "__amd_rocclr_fillBufferAligned", "__amd_rocclr_initHeap",
    "volta_sgemm_128x64_nn", "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
    "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 4, 64, 64>",
    "copy_kernel", "memcpy_kernel_custom", "ncclKernel_AllReduce_RING_LL_Sum_float", "Kernel_0",
    "cudnn::detail::implicit_convolve_sgemm", "MemcpyAsync", "",
]


def _by_categorize(names: list[str | None]) -> bool:
    return set(categorize(pl.Series(names, dtype=pl.String))) <= COPIES | {None}


def test_only_copies_agrees_with_categorize_name_by_name_and_in_mixtures():
    for name in NAMES:
        assert only_copies(pl.Series([name])) == _by_categorize([name]), name
    copies = [n for n in NAMES if _by_categorize([n])]
    kernels = [n for n in NAMES if not _by_categorize([n])]
    assert len(copies) >= 10 and len(kernels) >= 8   # (both sides exercised)
    for pair in itertools.product(copies[:4], kernels[:4]):
        assert only_copies(pl.Series(list(pair))) is False
    assert only_copies(pl.Series(copies + [None])) is True
    assert only_copies(pl.Series([None, None], dtype=pl.String)) is True
    assert only_copies(pl.Series([], dtype=pl.String)) is True
