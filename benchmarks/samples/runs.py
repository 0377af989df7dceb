"""The A100/V100 runs of the sample folder: per GPU and model, which files each run holds
(ncu, nsys, nvidia-smi) and the program output around them."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime

from samples.gpus import A100, V100, Gpu, rng_for
from samples.kernels import Kernel, time_kernels
from samples.ncu import NcuStyle, ncu_csv, ncu_prelude, ncu_text
from samples.nsys import nsys_gputrace_csv, nsys_stats_text
from samples.programs import resnet18_iteration, vgg11_iteration
from samples.smi import Load, smi_query_csv
from samples.timeline import simulate

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
