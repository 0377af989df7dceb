"""nvidia-smi writers for the sample logs: `--query-gpu` CSV series, `dmon` output and a
`--query-compute-apps` series."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from samples.gpus import Gpu, rng_for

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


# -- nvidia-smi --query-compute-apps ------------------------------------------------------------

def smi_compute_apps(start: datetime, gpu_uuid: str) -> str:
    """`nvidia-smi --query-compute-apps=timestamp,gpu_uuid,pid,process_name,used_gpu_memory
    --format=csv -l 5` beside the A100 resnet18 run: the training process, and a notebook
    kernel someone left holding memory on the same GPU until it was shut down."""
    rng = rng_for("a100/resnet18/compute-apps")
    out = ["timestamp, gpu_uuid, pid, process_name, used_gpu_memory [MiB]"]
    when = start + timedelta(milliseconds=rng.randrange(1000))
    for tick in range(38):
        rows = []
        if tick < 22:
            rows.append((40_871, "/usr/bin/python3", 1_203))
        if 1 <= tick < 37:
            used = min(6_135, 421 + tick * 1_900) if tick < 4 else 6_135 + rng.choice((0, 0, 2, 8))
            rows.append((41_233, "/opt/conda/bin/python", used))
        for pid, name, used in sorted(rows):
            stamp = f"{when:%Y/%m/%d %H:%M:%S}.{when.microsecond // 1000:03d}"
            out.append(f"{stamp}, {gpu_uuid}, {pid}, {name}, {used} MiB")
        when += timedelta(milliseconds=5_000 + rng.choice((3, 4, 6)))
    return "\n".join(out) + "\n"


def compute_apps_file() -> dict[str, str]:
    """Beside the A100 resnet18 run (its query series starts 2024-03-12 14:02:41)."""
    return {"a100/resnet18/nvidia-smi-compute-apps.csv": smi_compute_apps(
        datetime(2024, 3, 12, 14, 2, 41), "GPU-5a1c2f0e-8d3b-4c7a-9e61-2b4f7d0c9a13")}

