"""The GPUs of the sample logs (peaks at boost clock from the datasheets, as
`reference/gpu_specs.tsv` gives them; the tools' spellings), and a stable random stream per file."""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass

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
