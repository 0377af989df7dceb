"""nvprof: the 2019-style K80 batch-size sweep of alexnet (summaries, metrics, a GPU trace) and a
resnet18 run, in the course's `out.<model>_<batch>_<lr>_k80_<experiment>.<job>` files."""

from __future__ import annotations

import random
from dataclasses import dataclass

from samples.gpus import rng_for

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


# What DataParallel runs on GPU 0 alone (the loss, the optimizer step on the master weights,
# the input batch from the host and the outputs back); the peer copies scatter to GPUs 1-3.
_GPU0_ONLY = ("cunn_SoftMaxForward", "TensorCAddOp", "TensorMulConstantOp", "[CUDA memcpy HtoD]",
              "[CUDA memcpy DtoH]")
_PEERS_ONLY = ("[CUDA memcpy PtoP]",)


def per_gpu_rows(batch: int, rng: random.Random) -> dict[int, list[Row]]:
    """The GPU activities of one alexnet run on 4 K80s, per GPU (`--print-summary-per-gpu`):
    every GPU runs its quarter of the batch's kernels and the broadcasts and reductions; GPU 0
    alone computes the loss, steps the optimizer and takes the batch from the host."""
    iters = IMAGES // batch
    b = batch / 4
    per_gpu: dict[int, list[Row]] = {gpu: [] for gpu in range(4)}
    for a in ALEXNET_K80:
        share = winograd_share(batch) if a.algo == "winograd" else 1 - winograd_share(batch) if a.algo else 1.0
        gpus = [0] if a.name.startswith(_GPU0_ONLY) else [1, 2, 3] if a.name.startswith(_PEERS_ONLY) else range(4)
        for gpu in gpus:
            calls = max(1, int(a.calls * share * iters * rng.uniform(0.998, 1.002)))
            avg = (a.fixed_ms + a.per_sample_ms * b) * rng.uniform(0.97, 1.03) / 1e3
            if a.name.startswith("[CUDA memcpy HtoD]"):
                avg = (0.06 + 0.072 * b * 4 / 1.25) / 1e3 * rng.uniform(0.97, 1.03)
            if a.name.startswith("nccl") and gpu == 0:
                avg *= 1.08   # the root of the broadcast and of the reduction
            lo = avg * rng.uniform(1 - a.spread, 1 - a.spread * 0.6)
            hi = avg * rng.uniform(1 + a.spread * 1.5, 1 + a.spread * 4)
            per_gpu[gpu].append(_row("GPU activities", a.name, calls, avg, lo, hi))
    for rows in per_gpu.values():
        rows.sort(key=lambda r: -r.total_s)
    return per_gpu


def nvprof_per_gpu_text(batch: int = 64) -> str:
    """The batch-64 run again with `--print-summary-per-gpu` (text): after `Profiling result:`,
    one part per GPU, each a blank line, `==PID== Device "Tesla K80 (N)"` and that GPU's table
    (its GPU activities only: no API calls), as nvprof 11.8's summary printer writes it."""
    rng = rng_for(f"k80_sweep/{batch}/per_gpu")
    pid = rng.randrange(10_000, 200_000)
    banner, cmd = _course_banner("alexnet", batch, "pergpu", pid)
    per_gpu = per_gpu_rows(batch, rng)
    gpu_s = sum(r.total_s for r in per_gpu[0]) / (IMAGES // batch)
    out = banner + _epoch_lines(batch, rng, gpu_s) + [
        f"=={pid}== Profiling application: {cmd}", f"=={pid}== Profiling result:"]
    for gpu, rows in per_gpu.items():
        table = nvprof_summary_text(rows, pid)[1:]    # (the `Profiling result:` line is the run's, once)
        out += ["", f'=={pid}== Device "Tesla K80 ({gpu})"'] + table
    out.append(f"=={pid}== Generated result file: /scratch/ta/imagenet/alexnet_{batch}_0.01_k80_pergpu_{pid}.nvvp")
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
    files["k80_sweep/out.alexnet_64_0.01_k80_pergpu.812184"] = nvprof_per_gpu_text(64)
    return files
