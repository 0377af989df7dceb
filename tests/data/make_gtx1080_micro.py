"""Writes tests/data/gtx1080_micro/: 40 micro-benchmark runs on one GeForce GTX 1080 (Pascal),
each a folder with the two logs a Pascal course run leaves, `nvprof --metrics` (FLOPs and DRAM
transactions) and `nvprof --print-gpu-trace` (the kernel times):

* a conv2d sweep, `python conv2d.py --kernel_size K --stride S --size N`: K in 3, 5; S in 1, 2;
  N in 64 .. 4096 (7 sizes): 28 runs;
* a GPP-style kernel built with and without FMA (`./gpp_fma.x N`, `./gpp_nofma.x N`) at 6 input
  sizes: 12 runs.

The numbers are made up, plausible for the card (8.9 TFLOP/s FP32, 320 GB/s); the layout is
nvprof's (copied from the corpus's nvprof files, not their content). Issue #32: the report of
this folder fits in 10 pages, its roofline reads at a glance and its run table is printed once.
Run `python tests/data/make_gtx1080_micro.py` to write the folder again.
"""

from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "gtx1080_micro"
DEVICE = "GeForce GTX 1080"
PEAK_FLOPS, PEAK_BYTES = 8.9e12, 320e9
CHANNELS = 16
METRICS_HEAD = ("Invocations                               Metric Name                        Metric Description"
                "         Min         Max         Avg")
TRACE_HEAD = ("   Start  Duration            Grid Size      Block Size     Regs*    SSMem*    DSMem*      Size  "
              "Throughput  SrcMemType  DstMemType           Device   Context    Stream  Name")
TRACE_FOOT = """
Regs: Number of registers used per CUDA thread. This number includes registers used internally by the CUDA driver and/or tools and can be more than what the compiler shows.
SSMem: Static shared memory allocated per CUDA block.
DSMem: Dynamic shared memory allocated per CUDA block.
SrcMemType: The type of source memory accessed by memory operation/copy
DstMemType: The type of destination accessed by memory operation/copy
"""


def _time_us(flops: float, nbytes: float, efficiency: float) -> float:
    return max(flops / (PEAK_FLOPS * efficiency), nbytes / (PEAK_BYTES * 0.7)) * 1e6 + 4.0


def _duration(us: float) -> str:
    """nvprof's five significant digits: 639.93us, 2.6784ms."""
    if us < 1:
        return f"{us * 1000:#.5g}ns"
    return f"{us / 1000:#.5g}ms" if us >= 1000 else f"{us:#.5g}us"


def _size(megabytes: float) -> str:
    """nvprof's sizes: 252.63KB, 4.0000MB."""
    return f"{megabytes * 1024:#.5g}KB" if megabytes < 1 else f"{megabytes:#.5g}MB"


def _metric_line(invocations: int, name: str, description: str, value: float) -> str:
    number = f"{int(value)}"
    return f"{invocations:>11}{name:>42}{description:>46}{number:>14}{number:>14}{number:>14}"


def _metrics_log(pid: int, command: str, kernel: str, flops: float, nbytes: float, launches: int) -> str:
    per_launch_flops, per_launch_bytes = flops / launches, nbytes / launches
    lines = [f"=={pid}== NVPROF is profiling process {pid}, command: {command}",
             f"=={pid}== Some kernel(s) will be replayed on device 0 in order to collect all events/metrics.",
             f"=={pid}== Profiling application: {command}",
             f"=={pid}== Profiling result:",
             f"=={pid}== Metric result:",
             METRICS_HEAD,
             f'Device "{DEVICE} (0)"',
             f"    Kernel: {kernel}",
             _metric_line(launches, "flop_count_sp", "Floating Point Operations(Single Precision)", per_launch_flops),
             _metric_line(launches, "dram_read_transactions", "Device Memory Read Transactions",
                          per_launch_bytes * 0.7 / 32),
             _metric_line(launches, "dram_write_transactions", "Device Memory Write Transactions",
                          per_launch_bytes * 0.3 / 32)]
    return "\n".join(lines) + "\n"


def _trace_row(start_ms: float, duration: str, grid: str, block: str, regs: str, size: str, throughput: str,
               src: str, dst: str, name: str) -> str:
    return (f"{start_ms:>7.2f}ms{duration:>11}{grid:>21}{block:>16}{regs:>10}{'0B' if regs != '-' else '-':>10}"
            f"{'0B' if regs != '-' else '-':>10}{size:>11}{throughput:>12}{src:>12}{dst:>12}{DEVICE:>18}"
            f"{'1':>10}{'7':>10}  {name}")


def _trace_log(pid: int, command: str, kernel: str, time_us: float, launches: int, copy_mb: float) -> str:
    rows = [_trace_row(310.0, _duration(copy_mb / 6.1 * 1000), "-", "-", "-", _size(copy_mb), "6.1000GB/s",
                       "Pageable", "Device", "[CUDA memcpy HtoD]")]
    start = 312.0
    for launch in range(launches):
        rows.append(_trace_row(start, _duration(time_us / launches), "(128 128 1)", "(16 16 1)", "32", "-", "-",
                               "-", "-", f"{kernel} [{118 + launch * 3}]"))
        start += time_us / launches / 1000 + 0.02
    rows.append(_trace_row(start + 0.05, _duration(copy_mb / 6.3 * 1000), "-", "-", "-", _size(copy_mb),
                           "6.3000GB/s", "Device", "Pageable", "[CUDA memcpy DtoH]"))
    head = [f"=={pid}== NVPROF is profiling process {pid}, command: {command}",
            f"=={pid}== Profiling application: {command}",
            f"=={pid}== Profiling result:", TRACE_HEAD]
    return "\n".join(head + rows) + "\n" + TRACE_FOOT


def runs() -> list[tuple[str, str, str, float, float, float]]:
    """(folder, command, kernel, FLOPs, DRAM bytes, efficiency) of each run."""
    out = []
    for kernel_size in (3, 5):
        for stride in (1, 2):
            for size in (64, 128, 256, 512, 1024, 2048, 4096):
                side = (size - kernel_size) // stride + 1
                flops = 2.0 * kernel_size ** 2 * CHANNELS * CHANNELS * side * side
                nbytes = 4.0 * CHANNELS * (size * size + side * side) + 4.0 * kernel_size ** 2 * CHANNELS ** 2
                out.append((f"conv2d/k{kernel_size}_s{stride}_n{size}",
                            f"python conv2d.py --kernel_size {kernel_size} --stride {stride} --size {size}",
                            f"void conv2d_direct<int={kernel_size}, int={stride}>(float const *, float const *, "
                            "float*, int, int, int)", flops, nbytes, 0.35 if stride == 1 else 0.22))
    for build, efficiency in (("fma", 0.55), ("nofma", 0.3)):
        for size in (256, 512, 1024, 2048, 4096, 8192):
            flops = 64.0 * size * size
            nbytes = 24.0 * size * size
            out.append((f"gpp/{build}_n{size}", f"./gpp_{build}.x {size}",
                        "gpp_kernel(float2 const *, float2 const *, float*, int)", flops, nbytes, efficiency))
    return out


def write(folder: Path = FOLDER) -> None:
    for index, (name, command, kernel, flops, nbytes, efficiency) in enumerate(runs()):
        run = folder / name
        run.mkdir(parents=True, exist_ok=True)
        pid = 21000 + index * 7
        launches = 10
        (run / "nvprof_metrics.log").write_text(_metrics_log(pid, command, kernel, flops, nbytes, launches))
        time_us = _time_us(flops, nbytes, efficiency)
        copy_mb = max(nbytes / 2 / 2 ** 20, 0.0625)
        (run / "nvprof_gpu_trace.log").write_text(_trace_log(pid + 1, command, kernel, time_us, launches, copy_mb))


if __name__ == "__main__":
    write()
