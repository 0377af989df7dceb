"""AMD sample logs of the layouts issue #34 left: rocprofv3 counter passes (`pmc_N/` folders of one
application), a rocpd SQLite database (ROCm 7's default rocprofv3 output) and rocprof-compute's
ERT `roofline.json`. Every value is invented; the layouts are the tools' own (sample_logs/README.md
names each source)."""

from __future__ import annotations

import json
import random

from samples.gpus import rng_for
from samples.rocm import MI300X, V3_COUNTER_HEADER, Kernel, _steps

# -- rocprofv3 -i input.txt with two `pmc:` lines: one process per pass --------------------------

_N = 1 << 24
STREAM_APP = [
    Kernel("void copy_kernel<double>(double const*, double*, int)", _N, 256, read=8 * _N, write=8 * _N,
           efficiency=0.8, vgpr=12),
    Kernel("void triad_kernel<double>(double const*, double const*, double*, double, int)", _N, 256,
           {"valu_f64": 2.0 * _N}, read=16 * _N, write=8 * _N, efficiency=0.82, vgpr=16),
    Kernel("Cijk_Ailk_Bljk_DB_MT256x128x16_MI16x16x4x1_SN_1LDSB0_GRVW2_K1_MIWT4_4_WG32_8_1", 32 * 32 * 256, 256,
           {"mfma_f64": 2.0 * 4096 ** 3, "valu_f64": 2.0 * 4096 ** 2}, read=3 * 4096 * 4096 * 8 * 1.5,
           write=4096 * 4096 * 8, efficiency=0.64, vgpr=128, accum_vgpr=128, sgpr=96, lds=32768),
]
# input.txt: `pmc: SQ_INSTS_VALU_ADD_F64 SQ_INSTS_VALU_MUL_F64 SQ_INSTS_VALU_FMA_F64 SQ_INSTS_VALU_TRANS_F64
# SQ_INSTS_VALU_MFMA_MOPS_F64` then `pmc: SQ_INSTS_VALU_ADD_F32 ... FETCH_SIZE WRITE_SIZE`: FP64 and
# matrix FLOPs in the first pass, FP32 FLOPs and the bytes in the second
PASSES = [["SQ_INSTS_VALU_ADD_F64", "SQ_INSTS_VALU_MUL_F64", "SQ_INSTS_VALU_FMA_F64", "SQ_INSTS_VALU_TRANS_F64",
           "SQ_INSTS_VALU_MFMA_MOPS_F64"],
          ["SQ_INSTS_VALU_ADD_F32", "SQ_INSTS_VALU_MUL_F32", "SQ_INSTS_VALU_FMA_F32", "SQ_INSTS_VALU_TRANS_F32",
           "FETCH_SIZE", "WRITE_SIZE"]]
_BLIT = Kernel("__amd_rocclr_fillBufferAligned", 4096, 256, write=32768, efficiency=0.2, vgpr=8)
HOST = "gpu-node-3"


def pmc_pass_files(base: str) -> dict[str, str]:
    """`rocprofv3 -i input.txt -d <base> --output-format csv -- ./stream_dgemm`: `pmc_1/<host>/<pid>_...`,
    `pmc_2/<host>/<pid>_...`; the second pass's process starts with a fill blit the first did not
    run (a dispatch more: its `Dispatch_Id`s are shifted), so the passes join on kernel and occurrence."""
    rng = rng_for(base)
    files, start = {}, 3_118_472_003_551_208
    for number, counters in enumerate(PASSES, start=1):
        pid = 1_733_402 + 61 * number
        launches = _steps(rng, STREAM_APP, 2, MI300X, start)
        if number == 2:
            launches = [(_BLIT, start - 40_000, start - 31_500)] + launches
        ids = {kernel.name: 9 + index for index, kernel in enumerate([_BLIT, *STREAM_APP])}
        out = [V3_COUNTER_HEADER]
        for dispatch, (kernel, begin, end) in enumerate(launches, start=1):
            values = kernel.counters()
            values.update(FETCH_SIZE=values["read_64b"] * 64 / 1024, WRITE_SIZE=values["write_64b"] * 64 / 1024)
            for name in counters:
                value = values.get(name, 0.0)
                cell = f"{value:.6f}" if value else "0.00000000e+00"
                out.append(f'{dispatch},{dispatch},"Agent 2",1,{pid},{pid},{kernel.grid},{ids[kernel.name]},'
                           f'"{kernel.name}",{kernel.block},{kernel.lds},0,{kernel.vgpr},{kernel.accum_vgpr},'
                           f'{kernel.sgpr},"{name}",{cell},{begin},{end}')
        files[f"{base}/pmc_{number}/{HOST}/{pid}_counter_collection.csv"] = "\n".join(out) + "\n"
        start += 2_600_000_000 + rng.randint(0, 90_000_000)
    return files


def files() -> dict[str, str]:
    return {**pmc_pass_files("amd/mi300x/stream-dgemm")}
