"""AMD sample logs of the layouts issue #34 left: rocprofv3 counter passes (`pmc_N/` folders of one
application: `amd/mi300x/stream-dgemm`), and the MI250X's stencil code run again on an MI300X
(`amd/mi300x/stencil`: the same work on two GPUs, so the report compares them) with the node's
Empirical Roofline Toolkit database (`roofline.json`: measured ceilings). The rocpd SQLite
database is `rocm_rocpd.py`'s. Every value is invented; the layouts are the tools' own
(sample_logs/README.md names each source)."""

from __future__ import annotations

import json
import random

from samples.gpus import rng_for
from samples.rocm import MI300X, STENCIL, V3_COUNTER_HEADER, Kernel, _steps, rocprof_results, rocprof_stats

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


# -- the stencil of amd/mi250x/stencil on an MI300X, and ERT's measured ceilings -----------------------

# ERT's GPU configuration (`ERT_PRECISION FP64`, `ERT_GPU True`, ...) as `build_database` keeps
# it: the metadata both parts share in `empirical.metadata`, the rest in each part's.
_ERT_META = {"ERT_VERSION": "1.1.0", "ERT_DRIVER": "driver1", "ERT_KERNEL": "kernel1", "ERT_GPU": True,
             "ERT_PRECISION": "FP64", "ERT_FLOPS": [1, 2, 4, 8, 16, 32, 64, 128, 256], "ERT_ALIGN": 64,
             "ERT_CC": "hipcc", "ERT_CFLAGS": "-O3 --offload-arch=gfx942", "ERT_NUM_EXPERIMENTS": 3,
             "ERT_MEMORY_MAX": 1073741824, "ERT_WORKING_SET_MIN": 128, "ERT_TRIALS_MIN": 1,
             "ERT_GPU_BLOCKS": [304, 608, 1216, 2432], "ERT_GPU_THREADS": [256, 512, 1024], "TIMESTAMP_DATA": 1730460113.52}


def ert_roofline_json(rng: random.Random) -> str:
    """ERT 1.1.0's `Results.<config>/roofline.json` (`ert_core.py` `build_database`, `indent=3`):
    the best FP64 rate and the bandwidth of each level its working sets reached (GB/s, GFLOP/s),
    below the datasheet's (81.7 TFLOP/s FP64 vector, 5.3 TB/s)."""
    gflops = 81_700 * rng.uniform(0.88, 0.91)
    levels = [["L1", 5.3e3 * rng.uniform(4.9, 5.2)], ["L2", 5.3e3 * rng.uniform(2.4, 2.6)],
              ["DRAM", 5.3e3 * rng.uniform(0.84, 0.86)]]
    stamp = 1730460401.87
    database = {
        "empirical": {
            "metadata": _ERT_META,
            "gflops": {"data": [["GFLOPs", round(gflops, 2)]], "metadata": {"TIMESTAMP_DB": stamp}},
            "gbytes": {"data": [[name, round(value, 2)] for name, value in levels], "metadata": {"TIMESTAMP_DB": stamp}},
        },
        "spec": {"gflops": {"data": [["GFLOPs", 81700.0]]}, "gbytes": {"data": [["DRAM", 5300.0]]}},
    }
    return json.dumps(database, indent=3) + "\n"


def mi300x_stencil_files(base: str) -> dict[str, str]:
    """`rocprof --timestamp on --stats -i input.txt ./stencil` on an MI300X, the MI250X run's
    command and grid (256^3, 6 steps), and the node's ERT run beside it."""
    rng = rng_for(base)
    launches = _steps(rng, STENCIL, 6, MI300X, 2_204_118_930_557_120)
    return {f"{base}/results.csv": rocprof_results(launches, 77_108),
            f"{base}/results.stats.csv": rocprof_stats(launches),
            f"{base}/roofline.json": ert_roofline_json(rng)}


def files() -> dict[str, str]:
    return {**pmc_pass_files("amd/mi300x/stream-dgemm"), **mi300x_stencil_files("amd/mi300x/stencil")}
