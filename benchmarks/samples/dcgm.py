"""DCGM writers for the sample logs: `dcgmi dmon` and a dcgm-exporter scrape loop.

Every value is invented; the layouts are the tools' own: dcgmi's columns are as wide as the
fields' widths + 8 (DCGM 2.4+, left-aligned, the header pair again after 15 samples and then
every 14); dcgm-exporter prints `# HELP`/`# TYPE` and one line per GPU for each metric.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from samples.gpus import rng_for


@dataclass(frozen=True)
class Phase:
    """A stretch of the job: how long, and how busy the GPU was (utilization %, SM activity)."""

    seconds: int
    util: float
    sm_active: float
    tensor: float
    dram: float


# A data-parallel fine-tune on 2 GPUs: start-up, training with an evaluation pause, the end.
H100_PHASES = (Phase(5, 0, 0.0, 0.0, 0.0), Phase(30, 98, 0.71, 0.38, 0.44),
               Phase(8, 35, 0.18, 0.05, 0.12), Phase(24, 99, 0.73, 0.39, 0.45), Phase(3, 0, 0.0, 0.0, 0.0))


def _load(phases: tuple[Phase, ...], rng: random.Random) -> list[tuple[float, float, float, float]]:
    """(util %, SM active, tensor active, DRAM active) per second."""
    out = []
    for phase in phases:
        for _ in range(phase.seconds):
            if not phase.util:
                out.append((0.0, 0.0, 0.0, 0.0))
                continue
            jitter = rng.uniform(0.93, 1.04)
            out.append((min(100.0, round(phase.util * rng.uniform(0.97, 1.01))),
                        min(1.0, phase.sm_active * jitter), min(1.0, phase.tensor * jitter),
                        min(1.0, phase.dram * rng.uniform(0.9, 1.08))))
    return out


# -- dcgmi dmon ---------------------------------------------------------------------------------

# (short name, unit, width) of `dcgmi dmon -l`, in the order of the `-e` list below.
DMON_FIELDS = (("POWER", " W", 10), ("TMPTR", " C", 5), ("GPUTL", "", 10), ("MCUTL", "", 10),
               ("FBUSD", "", 10), ("SMCLK", "", 5), ("MMCLK", "", 5), ("SMACT", "", 5),
               ("SMOCC", "", 5), ("TENSO", "", 5), ("DRAMA", "", 5))
DMON_COMMAND = "dcgmi dmon -e 155,150,203,204,252,100,101,1002,1003,1004,1005 -d 1000"


def _dmon_cell(text: str, width: int) -> str:
    return text[:width + 6].ljust(width + 8)


def _dmon_header() -> list[str]:
    return ["#Entity".ljust(10) + "".join(_dmon_cell(name, w) for name, _, w in DMON_FIELDS),
            "ID".ljust(10) + "".join(_dmon_cell(unit, w) for _, unit, w in DMON_FIELDS)]


def dcgmi_dmon() -> str:
    """`dcgmi dmon -e ...` on a 2 x H100 SXM node (DCGM 3.3), stopped with Ctrl-C."""
    rng = rng_for("h100/dcgmi")
    loads = [_load(H100_PHASES, rng), _load(H100_PHASES, rng)]
    out = [f"[mlops@dgx-h100-02 ~]$ {DMON_COMMAND}", *_dmon_header()]
    temps, fb = [33.0, 35.0], [0, 0]
    printed = 0
    for second in range(len(loads[0])):
        for gpu in (0, 1):
            util, smact, tenso, drama = loads[gpu][second]
            temps[gpu] += (31 + util * 0.33 + gpu * 2 - temps[gpu]) * 0.09
            held = 3 <= second < len(loads[0]) - 2       # the job's memory, from load to exit
            fb[gpu] = min(71_235 + gpu * 512, fb[gpu] + 9_000) if held else 0
            power = 71.0 + util * 5.6 * rng.uniform(0.95, 1.04) + gpu * 3.1
            profiling = [f"{v:.3f}" for v in (smact, smact * 0.52, tenso, drama)]
            if second == 0:
                profiling = ["N/A"] * 4   # profiling fields have no value before their first period
            cells = [f"{power:.3f}", str(round(temps[gpu])), str(round(util)), str(round(util * 0.41)),
                     str(fb[gpu]), str(1980 if util else 345), str(2619 if util else 1593), *profiling]
            out.append(f"GPU {gpu}".ljust(10) + "".join(_dmon_cell(c, w) for c, (_, _, w) in zip(cells, DMON_FIELDS)))
        printed += 1
        # dcgmi reprints the header after its 15th sample, then after every 14th
        if printed == 15 or (printed > 15 and (printed - 15) % 14 == 0):
            out.extend(_dmon_header())
    out += ["", "", "dmon was stopped do to receiving a signal"]
    return "\n".join(out) + "\n"


# -- dcgm-exporter -------------------------------------------------------------------------------

# The exporter run with a trimmed collectors file (`-f counters.csv`): help texts as in its
# default-counters.csv.
EXPORTER_METRICS = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
)
EXPORTER_GPUS = ("GPU-3f1d9c7a-52be-4e0b-a6f1-0c2b8e9d4a61", "GPU-8a0e6b24-17cd-4f93-b2e5-6d4c1a7f0b38")


def dcgm_exporter_scrapes() -> str:
    """`date -u`, `curl -s localhost:9400/metrics` every 15 s (dcgm-exporter 3.1)."""
    rng = rng_for("h100/exporter")
    phases = (Phase(5, 0, 0, 0, 0), Phase(90, 97, 0.68, 0.36, 0.41), Phase(10, 0, 0, 0, 0))
    loads = [_load(phases, rng), _load(phases, rng)]
    out = ["[mlops@dgx-h100-02 ~]$ while true; do date -u +%FT%TZ; curl -s localhost:9400/metrics; sleep 15; done"]
    start = datetime(2024, 3, 14, 9, 12, 30)
    for second in range(0, len(loads[0]), 15):
        out.append((start + timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%SZ"))
        values = []
        for gpu in (0, 1):
            util, _, tenso, _ = loads[gpu][second]
            power = 72.0 + util * 5.5 * rng.uniform(0.95, 1.04)
            values.append({
                "DCGM_FI_DEV_SM_CLOCK": 1980 if util else 345,
                "DCGM_FI_DEV_MEMORY_TEMP": 9223372036854775794,   # DCGM's blank: no HBM sensor read
                "DCGM_FI_DEV_GPU_TEMP": 36 + round(util * 0.3), "DCGM_FI_DEV_POWER_USAGE": f"{power:.3f}",
                "DCGM_FI_DEV_GPU_UTIL": round(util), "DCGM_FI_DEV_MEM_COPY_UTIL": round(util * 0.39),
                "DCGM_FI_DEV_FB_USED": 70_911 if util else 0,
                "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": f"{tenso:.6f}"})
        for name, kind, text in EXPORTER_METRICS:
            out += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
            for gpu, uuid in enumerate(EXPORTER_GPUS):
                labels = (f'gpu="{gpu}",UUID="{uuid}",device="nvidia{gpu}",'
                          f'modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-02"')
                out.append(f"{name}{{{labels}}} {values[gpu][name]}")
    return "\n".join(out) + "\n"



def dcgm_files() -> dict[str, str]:
    return {"h100/dcgmi/dcgmi-dmon.log": dcgmi_dmon(),
            "h100/exporter/dcgm-exporter-scrapes.prom": dcgm_exporter_scrapes()}
