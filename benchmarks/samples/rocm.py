"""AMD ROCm writers for the sample logs: rocprof (v1), rocprofv3 and rocprof-compute CSVs, and
rocm-smi / amd-smi CSV series.

Every value is invented; the layouts are the tools' own, as their sources and documentation
write them (sample_logs/README.md names each): rocprof's `tblextr.py` turns each dispatch's
properties into columns (`Index,KernelName,gpu-id,...,wave_size,sig,obj`, the counters in the
order asked, then `DispatchNs,BeginNs,EndNs,CompleteNs` and, with `--stats`, `DurationNs`);
rocprofiler-sdk's `generateCSV.cpp` writes rocprofv3's quoted headers; rocprof-compute's
`pmc_perf.csv` repeats a dispatch's `wave_size_N,obj_N` after each counter pass. Counters follow
from one small model per kernel (FLOPs of each kind, bytes read and written), and durations
from an efficiency against the GPU's datasheet peaks, so no point lands above a roof and the
counters give back the model's FLOPs and bytes by AMD's formulas.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from samples.gpus import rng_for

LANES = 64          # work-items per wavefront on CDNA
MOPS_UNIT = 512     # SQ_INSTS_VALU_MFMA_MOPS_* count matrix ops in units of 512


@dataclass(frozen=True)
class AmdGpu:
    name: str                 # marketing name (rocminfo, rocm-smi --showproductname)
    gfx: str
    cus: int
    sclk_mhz: int
    peaks: dict               # FLOP/s per kind (valu_f64, valu_f32, mfma_f64, mfma_bf16...)
    hbm: float                # byte/s
    vram_mib: int
    idle_w: float
    tdp_w: float


MI250X = AmdGpu("AMD Instinct MI250X", "gfx90a", 110, 1700,
                {"valu_f64": 23.9e12, "valu_f32": 23.9e12, "mfma_f64": 47.9e12, "mfma_bf16": 191.5e12},
                1638.4e9, 65520, 88.0, 500.0)
MI300X = AmdGpu("AMD Instinct MI300X", "gfx942", 304, 2100,
                {"valu_f64": 81.7e12, "valu_f32": 81.7e12, "mfma_f64": 163.4e12, "mfma_bf16": 1307.4e12},
                5.3e12, 196592, 140.0, 750.0)
MI210 = AmdGpu("AMD Instinct MI210", "gfx90a", 104, 1700,
               {"valu_f64": 22.6e12, "valu_f32": 22.6e12, "mfma_f64": 45.3e12, "mfma_bf16": 181.0e12},
               1638.4e9, 65520, 42.0, 300.0)


@dataclass(frozen=True)
class Kernel:
    """One launch: its name, shape, work (FLOPs per kind), bytes, and how well it runs."""

    name: str
    grid: int                 # work-items (HSA grid size)
    block: int
    flops: dict = field(default_factory=dict)   # valu_f64/valu_f32 (FMA-heavy), mfma_f64/mfma_bf16
    read: float = 0.0
    write: float = 0.0
    efficiency: float = 0.6   # of the roof it is bound by
    vgpr: int = 32
    accum_vgpr: int = 0
    sgpr: int = 24
    lds: int = 0

    def ns(self, gpu: AmdGpu) -> int:
        compute = sum(f / gpu.peaks[kind] for kind, f in self.flops.items())
        memory = (self.read + self.write) / gpu.hbm
        return max(2_000, round(max(compute, memory) / self.efficiency * 1e9))

    def counters(self) -> dict[str, float]:
        """The counters AMD's formulas read back into this kernel's FLOPs and bytes: VALU work as
        FMAs (2 FLOPs each) with a few adds, multiplies and transcendentals, matrix work in MOPS,
        reads in 64-byte and writes in 64-byte requests."""
        out = {}
        for precision in ("F64", "F32"):
            flops = self.flops.get(f"valu_{precision.lower()}", 0.0)
            adds = round(flops * 0.02 / LANES)
            muls = round(flops * 0.01 / LANES)
            trans = round(flops * 0.002 / LANES)
            fma = round((flops / LANES - adds - muls - trans) / 2)
            out.update({f"SQ_INSTS_VALU_ADD_{precision}": adds, f"SQ_INSTS_VALU_MUL_{precision}": muls,
                        f"SQ_INSTS_VALU_TRANS_{precision}": trans, f"SQ_INSTS_VALU_FMA_{precision}": max(fma, 0)})
        for kind in ("F64", "BF16"):
            out[f"SQ_INSTS_VALU_MFMA_MOPS_{kind}"] = round(self.flops.get(f"mfma_{kind.lower()}", 0.0) / MOPS_UNIT)
        out["SQ_WAVES"] = math.ceil(self.grid / LANES)
        out["read_64b"] = round(self.read / 64)
        out["write_64b"] = round(self.write / 64)
        return out

    def workgroups(self) -> int:
        return math.ceil(self.grid / self.block)


def _steps(rng: random.Random, kernels: list[Kernel], steps: int, gpu: AmdGpu, start_ns: int,
           gap_ns: tuple[int, int] = (4_000, 30_000)) -> list[tuple[Kernel, int, int]]:
    """(kernel, begin ns, end ns) for `steps` repetitions of `kernels`, back to back with launch gaps."""
    out, now = [], start_ns
    for _ in range(steps):
        for kernel in kernels:
            now += rng.randint(*gap_ns)
            length = round(kernel.ns(gpu) * rng.uniform(0.97, 1.04))
            out.append((kernel, now, now + length))
            now += length
    return out


# -- MI250X: a stencil code with rocprof (v1) ------------------------------------------------

N3 = 256 ** 3
STENCIL = [
    Kernel("void pack_halo<double>(double const*, double*, int, int) [clone .kd]", 6 * 256 * 256, 256,
           read=6 * 256 * 256 * 8 * 4, write=6 * 256 * 256 * 8, efficiency=0.35, vgpr=16),
    Kernel("void stencil_27pt<double>(double const*, double*, int, int, int) [clone .kd]", N3, 256,
           {"valu_f64": 54.0 * N3}, read=N3 * 8 * 1.3, write=N3 * 8, efficiency=0.78, vgpr=64, lds=12288),
    Kernel("void unpack_halo<double>(double const*, double*, int, int) [clone .kd]", 6 * 256 * 256, 256,
           read=6 * 256 * 256 * 8, write=6 * 256 * 256 * 8 * 4, efficiency=0.33, vgpr=16),
    Kernel("void dot_reduce<double, 256>(double const*, double const*, double*, int) [clone .kd]", N3, 256,
           {"valu_f64": 2.0 * N3}, read=2 * N3 * 8, write=4096, efficiency=0.82, vgpr=24, lds=2048),
    Kernel("Cijk_Ailk_Bljk_DB_MT128x128x16_MI16x16x4x1_SN_1LDSB0_GRVW2_K1_MIWT4_4_WG32_8_1 [clone .kd]",
           64 * 256 * 16, 256, {"mfma_f64": 2.0 * 2048 ** 3, "valu_f64": 2.0 * 2048 ** 2},
           read=3 * 2048 * 2048 * 8 * 1.6, write=2048 * 2048 * 8, efficiency=0.71, vgpr=128, accum_vgpr=128,
           sgpr=96, lds=32768),
]
# The counters of `rocprof -i input.txt` (pmc lines), in the order the file asks them.
V1_COUNTERS = ["SQ_WAVES", "SQ_INSTS_VALU_ADD_F64", "SQ_INSTS_VALU_MUL_F64", "SQ_INSTS_VALU_FMA_F64",
               "SQ_INSTS_VALU_TRANS_F64", "SQ_INSTS_VALU_MFMA_MOPS_F64", "FETCH_SIZE", "WRITE_SIZE",
               "SQ_INSTS_VALU_ADD_F32", "SQ_INSTS_VALU_MUL_F32", "SQ_INSTS_VALU_FMA_F32", "SQ_INSTS_VALU_TRANS_F32"]
V1_HEADER = ("Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,accum_vgpr,sgpr,"
             "wave_size,sig,obj," + ",".join(V1_COUNTERS) + ",DispatchNs,BeginNs,EndNs,CompleteNs,DurationNs")


def rocprof_results(launches: list[tuple[Kernel, int, int]], pid: int) -> str:
    """rocprof --timestamp on --stats -i input.txt: results.csv (counters and times per dispatch)."""
    out = [V1_HEADER]
    objects = {}
    for index, (kernel, begin, end) in enumerate(launches):
        obj = objects.setdefault(kernel.name, 0x7f2a3a720ec0 + 0x40 * len(objects))
        counters = kernel.counters()
        values = []
        for name in V1_COUNTERS:
            if name == "FETCH_SIZE":
                values.append(f"{counters['read_64b'] * 64 / 1024:.6f}")
            elif name == "WRITE_SIZE":
                values.append(f"{counters['write_64b'] * 64 / 1024:.6f}")
            else:
                values.append(str(counters[name]))
        out.append(f'{index},"{kernel.name}",0,0,{index},{pid},{pid},{kernel.grid},{kernel.block},{kernel.lds},0,'
                   f'{kernel.vgpr},{kernel.accum_vgpr},{kernel.sgpr},64,"0x0","0x{obj:x}",' + ",".join(values)
                   + f",{begin - 6_200},{begin},{end},{end + 2_900},{end - begin}")
    return "\n".join(out) + "\n"


def rocprof_stats(launches: list[tuple[Kernel, int, int]]) -> str:
    """results.stats.csv: `"Name","Calls","TotalDurationNs","AverageNs","Percentage"`, longest first."""
    totals: dict[str, list[int]] = {}
    for kernel, begin, end in launches:
        totals.setdefault(kernel.name, []).append(end - begin)
    grand = sum(sum(v) for v in totals.values())
    out = ['"Name","Calls","TotalDurationNs","AverageNs","Percentage"']
    for name, times in sorted(totals.items(), key=lambda item: -sum(item[1])):
        out.append(f'"{name}",{len(times)},{sum(times)},{sum(times) // len(times)},{100 * sum(times) / grand:.12g}')
    return "\n".join(out) + "\n"


ROCM_SMI_HEADER = ("device,Temperature (Sensor edge) (C),Temperature (Sensor junction) (C),"
                   "Temperature (Sensor memory) (C),Average Graphics Package Power (W),GPU use (%),"
                   "GPU Memory Allocated (VRAM%),GPU Memory Read/Write Activity (%),Memory Activity,"
                   "Avg. Memory Bandwidth,Card Series,Card Model,Card Vendor,Card SKU")


def rocm_smi_loop(gpu: AmdGpu, busy: list[float], rng: random.Random) -> str:
    """`while true; do rocm-smi --showtemp --showpower --showuse --showmemuse --showproductname --csv;
    sleep 2; done`: the header before every sample; card0 runs the job, card1 (the second GCD of
    the same MI250X) idles and reports its power as the primary die's."""
    out = []
    edge = 38.0
    for util in busy:
        out.append(ROCM_SMI_HEADER)
        edge += (34 + util * 0.22 - edge) * 0.2
        power = gpu.idle_w + util / 100 * (gpu.tdp_w * 0.72 - gpu.idle_w) * rng.uniform(0.95, 1.04)
        alloc = 0 if util == 0 and not out[:-1] else 41
        mem_util = round(util * 0.55 * rng.uniform(0.9, 1.1))
        for card, (u, w, a, m) in enumerate(((round(util), f"{power:.1f}", alloc, mem_util),
                                             (0, "N/A (Secondary die)", 0, 0))):
            temp = edge if card == 0 else 35.0 + rng.uniform(0, 0.5)
            out.append(f"card{card},{temp:.1f},{temp + 6 + u * 0.12:.1f},{temp + 9:.1f},{w},{u},{a},{m},N/A,"
                       f"{round(m * 13.2)},AMD Instinct MI250X,0x7408,Advanced Micro Devices Inc. [AMD/ATI],D65209")
    return "\n".join(out) + "\n"


def mi250x_files() -> dict[str, str]:
    rng = rng_for("amd/mi250x/stencil")
    launches = _steps(rng, STENCIL, 6, MI250X, 1_411_987_252_036_982)
    busy = [0.0, 0.0, 12.0] + [rng.uniform(94, 99) for _ in range(40)] + [3.0, 0.0]
    base = "amd/mi250x/stencil"
    return {f"{base}/results.csv": rocprof_results(launches, 41_342),
            f"{base}/results.stats.csv": rocprof_stats(launches),
            f"{base}/rocm-smi.csv": rocm_smi_loop(MI250X, busy, rng)}


# -- MI300X: one decoder layer of llama3-8b fine-tuning, with rocprofv3 ------------------------

TOKENS, HIDDEN, FFN, KV = 8192, 4096, 14336, 1024
_BF16 = 2


def _gemm(name: str, m: int, n: int, k: int, efficiency: float) -> Kernel:
    return Kernel(name, math.ceil(m / 256) * math.ceil(n / 256) * 256, 256, {"mfma_bf16": 2.0 * m * n * k},
                  read=(m * k + k * n) * _BF16 * 1.15, write=m * n * _BF16, efficiency=efficiency,
                  vgpr=256, accum_vgpr=256, sgpr=102, lds=65536)


def _elementwise(name: str, elements: int, flops_per: float, tensors: int) -> Kernel:
    return Kernel(name, elements // 4, 256, {"valu_f32": flops_per * elements},
                  read=(tensors - 1) * elements * _BF16, write=elements * _BF16, efficiency=0.74, vgpr=20)


_TILE = "MT256x256x64_MI16x16x16x1_SN_1LDSB1_GRVW8_K1_MIWT4_4_WG32_8_1"
LAYER = [
    _elementwise("void rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)",
                 TOKENS * HIDDEN, 4.0, 2),
    _gemm(f"Cijk_Alik_Bljk_BBS_BH_{_TILE}", TOKENS, HIDDEN + 2 * KV, HIDDEN, 0.58),
    _elementwise("void rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)",
                 TOKENS * (HIDDEN + KV), 6.0, 2),
    Kernel("void ck_tile::kentry<256, 2, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<bf16_t> > >(Kargs)",
           2 * 32 * 16 * 256, 256, {"mfma_bf16": 2.0 * 2 * 4096 * 4096 * HIDDEN, "valu_f32": 3.0 * 2 * 32 * 4096 * 4096 / 2},
           read=3 * TOKENS * HIDDEN * _BF16, write=TOKENS * HIDDEN * _BF16, efficiency=0.36, vgpr=256, accum_vgpr=128,
           sgpr=88, lds=65536),
    _gemm(f"Cijk_Alik_Bljk_BBS_BH_{_TILE}", TOKENS, HIDDEN, HIDDEN, 0.52),
    _elementwise("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)",
                 TOKENS * HIDDEN, 1.0, 3),
    _elementwise("void rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)",
                 TOKENS * HIDDEN, 4.0, 2),
    _gemm(f"Cijk_Alik_Bljk_BBS_BH_{_TILE}", TOKENS, 2 * FFN, HIDDEN, 0.61),
    _elementwise("void act_and_mul_kernel<c10::BFloat16, &silu_kernel<c10::BFloat16> >(c10::BFloat16*, c10::BFloat16 const*, int)",
                 TOKENS * FFN, 7.0, 3),
    _gemm(f"Cijk_Alik_Bljk_BBS_BH_{_TILE}", TOKENS, HIDDEN, FFN, 0.57),
    _elementwise("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)",
                 TOKENS * HIDDEN, 1.0, 3),
]
V3_KERNEL_HEADER = ('"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name",'
                    '"Correlation_Id","Start_Timestamp","End_Timestamp","Private_Segment_Size","Group_Segment_Size",'
                    '"Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"')
V3_COUNTER_HEADER = ('"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size",'
                     '"Kernel_Id","Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count",'
                     '"Accum_VGPR_Count","SGPR_Count","Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"')
# `rocprofv3 --pmc ...` in the same run as the traces: one pass (SQ counters and rocprof's derived
# FETCH_SIZE/WRITE_SIZE, kilobytes), a row per dispatch and counter
V3_COUNTERS = ["SQ_INSTS_VALU_ADD_F32", "SQ_INSTS_VALU_MUL_F32", "SQ_INSTS_VALU_FMA_F32",
               "SQ_INSTS_VALU_MFMA_MOPS_BF16", "FETCH_SIZE", "WRITE_SIZE"]
_GPU_AGENT, _PID, _TID = 2, 48_211, 48_211


def _kernel_ids(kernels: list[Kernel]) -> dict[str, int]:
    return {name: 11 + index for index, name in enumerate(dict.fromkeys(k.name for k in kernels))}


def rocprofv3_files(prefix: str) -> dict[str, str]:
    rng = rng_for(prefix)
    ids = _kernel_ids(LAYER)
    start = 2_414_192_765_353_337
    copies = [(start - 9_400_000 + i * 1_150_000, 980_000 + rng.randint(0, 40_000)) for i in range(4)]
    launches = _steps(rng, LAYER, 2, MI300X, start)
    kernel_rows, api, correlation = [V3_KERNEL_HEADER], [], 952
    copy_rows = ['"Kind","Direction","Stream_Id","Source_Agent_Id","Destination_Agent_Id","Correlation_Id",'
                 '"Start_Timestamp","End_Timestamp"']
    for begin, length in copies:
        copy_rows.append(f'"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",1,0,{_GPU_AGENT},{correlation},{begin},{begin + length}')
        api.append(("hipMemcpyAsync", correlation, begin - 7_000, begin + 2_500))
        correlation += 8
    for dispatch, (kernel, begin, end) in enumerate(launches, start=1):
        kernel_rows.append(
            f'"KERNEL_DISPATCH",{_GPU_AGENT},1,1,{_TID},{dispatch},{ids[kernel.name]},"{kernel.name}",{correlation},'
            f'{begin},{end},0,{kernel.lds},{kernel.block},1,1,{kernel.grid},1,1')
        call = "hipExtModuleLaunchKernel" if kernel.name.startswith("Cijk_") else "hipLaunchKernel"
        api.append((call, correlation, begin - 9_000 - rng.randint(0, 3_000), begin - 4_000))
        correlation += 8
    last = launches[-1][2]
    copy_rows.append(f'"MEMORY_COPY","MEMORY_COPY_DEVICE_TO_HOST",1,{_GPU_AGENT},0,{correlation},{last + 9_000},{last + 16_500}')
    api.append(("hipMemcpyAsync", correlation, last - 2_000, last + 17_000))
    api.append(("hipStreamSynchronize", correlation + 8, last + 17_200, last + 17_900))
    files = {f"{prefix}_kernel_trace.csv": "\n".join(kernel_rows) + "\n",
             f"{prefix}_memory_copy_trace.csv": "\n".join(copy_rows) + "\n",
             f"{prefix}_hip_api_trace.csv": _v3_api_trace(api),
             f"{prefix}_kernel_stats.csv": _v3_stats([(k.name, e - b) for k, b, e in launches]),
             f"{prefix}_hip_api_stats.csv": _v3_stats([(name, end - begin) for name, _, begin, end in api]),
             f"{prefix}_counter_collection.csv": _v3_counters(launches, ids),
             f"{prefix}_agent_info.csv": _v3_agents()}
    return files


def _v3_api_trace(api: list[tuple[str, int, int, int]]) -> str:
    out = ['"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"']
    for name, correlation, begin, end in sorted(api, key=lambda row: row[2]):
        out.append(f'"HIP_RUNTIME_API","{name}",{_PID},{_TID},{correlation},{begin},{end}')
    return "\n".join(out) + "\n"


def _v3_stats(times: list[tuple[str, int]]) -> str:
    """`--stats`: `"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"`."""
    grouped: dict[str, list[int]] = {}
    for name, ns in times:
        grouped.setdefault(name, []).append(ns)
    grand = sum(sum(v) for v in grouped.values())
    out = ['"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"']
    for name, values in sorted(grouped.items(), key=lambda item: -sum(item[1])):
        mean = sum(values) / len(values)
        sd = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        out.append(f'"{name}",{len(values)},{sum(values)},{mean:.6f},{100 * sum(values) / grand:.2f},'
                   f'{min(values)},{max(values)},{sd:.8e}')
    return "\n".join(out) + "\n"


def _v3_counters(launches: list[tuple[Kernel, int, int]], ids: dict[str, int]) -> str:
    """The same dispatches as the kernel trace, a row per counter."""
    out = [V3_COUNTER_HEADER]
    for dispatch, (kernel, begin, end) in enumerate(launches, start=1):
        counters = kernel.counters()
        counters.update(FETCH_SIZE=counters["read_64b"] * 64 / 1024, WRITE_SIZE=counters["write_64b"] * 64 / 1024)
        for name in V3_COUNTERS:
            out.append(f'{dispatch},{dispatch},"Agent {_GPU_AGENT}",1,{_PID},{_TID},{kernel.grid},'
                       f'{ids[kernel.name]},"{kernel.name}",{kernel.block},{kernel.lds},0,{kernel.vgpr},'
                       f'{kernel.accum_vgpr},{kernel.sgpr},"{name}",{counters[name]:.6f},{begin},{end}')
    return "\n".join(out) + "\n"


_AGENT_COLUMNS = ("Node_Id,Logical_Node_Id,Agent_Type,Cpu_Cores_Count,Simd_Count,Cpu_Core_Id_Base,Simd_Id_Base,"
                  "Max_Waves_Per_Simd,Lds_Size_In_Kb,Gds_Size_In_Kb,Num_Gws,Wave_Front_Size,Num_Xcc,Cu_Count,"
                  "Array_Count,Num_Shader_Banks,Simd_Arrays_Per_Engine,Cu_Per_Simd_Array,Simd_Per_Cu,"
                  "Max_Slots_Scratch_Cu,Gfx_Target_Version,Vendor_Id,Device_Id,Location_Id,Domain,Drm_Render_Minor,"
                  "Num_Sdma_Engines,Num_Sdma_Xgmi_Engines,Num_Sdma_Queues_Per_Engine,Num_Cp_Queues,"
                  "Max_Engine_Clk_Ccompute,Max_Engine_Clk_Fcompute,Sdma_Fw_Version,Fw_Version,Capability,Cu_Per_Engine,"
                  "Max_Waves_Per_Cu,Family_Id,Workgroup_Max_Size,Grid_Max_Size,Local_Mem_Size,Hive_Id,Gpu_Id,"
                  "Workgroup_Max_Dim_X,Workgroup_Max_Dim_Y,Workgroup_Max_Dim_Z,Grid_Max_Dim_X,Grid_Max_Dim_Y,"
                  "Grid_Max_Dim_Z,Name,Vendor_Name,Product_Name,Model_Name").split(",")


def _v3_agents() -> str:
    """`<pid>_agent_info.csv`: the host CPU (node 0) and the GPU (node 2; node 1 is the second socket)."""
    cpu = [0, 0, "CPU", 96, 0, 0, 0, 0, 0, 0, 0, 0, 1, 96, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3700, 0, 0,
           0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "AMD EPYC 9654 96-Core Processor", "CPU",
           "AMD EPYC 9654 96-Core Processor", ""]
    gpu = [2, 2, "GPU", 0, 1216, 0, 2147487744, 8, 64, 0, 64, 64, 8, 304, 4, 4, 1, 10, 4, 32, 90402, 4098, 29857,
           50432, 0, 128, 2, 14, 8, 24, 2100, 2100, 21, 153, 746325120, 38, 32, 0, 1024, 4294967295, 206141652992,
           0, 47541, 1024, 1024, 1024, 4294967295, 4294967295, 4294967295, MI300X.gfx, "AMD", MI300X.name, "aqua_vanjaram"]
    rows = ['"' + '","'.join(_AGENT_COLUMNS) + '"']
    for agent in (cpu, gpu):
        rows.append(",".join(f'"{v}"' if isinstance(v, str) else str(v) for v in agent))
    return "\n".join(rows) + "\n"


def amd_smi_metric(gpu: AmdGpu, busy: list[float], start_s: int, rng: random.Random) -> str:
    """`amd-smi metric --usage --power --clock --temperature --mem-usage --csv -w 1`: `timestamp`
    (epoch s) and `gpu` first, then the leaf names of the nested output, bare numbers."""
    header = ("timestamp,gpu,gfx_activity,umc_activity,mm_activity,vcn_activity,jpeg_activity,socket_power,"
              "gfx_voltage,soc_voltage,mem_voltage,power_management,throttle_status,gfx_0_clk,gfx_0_min_clk,"
              "gfx_0_max_clk,gfx_0_clk_locked,gfx_0_deep_sleep,mem_0_clk,mem_0_min_clk,mem_0_max_clk,"
              "mem_0_clk_locked,mem_0_deep_sleep,edge,hotspot,mem,total_vram,used_vram,free_vram")
    out, hotspot = [header], 44.0
    for second, util in enumerate(busy):
        hotspot += (41 + util * 0.31 - hotspot) * 0.18
        power = gpu.idle_w + util / 100 * (gpu.tdp_w * 0.86 - gpu.idle_w) * rng.uniform(0.95, 1.03)
        used = 0 if second < 2 else 152_400 + (8 if second % 7 == 0 else 0)
        sclk = gpu.sclk_mhz - (rng.choice((0, 0, 35, 70)) if util > 50 else gpu.sclk_mhz - 132)
        out.append(f'{start_s + second},0,{round(util)},{round(util * 0.47)},0,"[0, 0, 0, 0]","[0, 0, 0, 0, 0, 0, 0, 0]",'
                   f"{round(power)},N/A,N/A,N/A,ENABLED,UNTHROTTLED,{sclk},500,{gpu.sclk_mhz},DISABLED,"
                   f"{'DISABLED' if util else 'ENABLED'},1300,900,1300,DISABLED,DISABLED,N/A,{round(hotspot)},"
                   f"{round(hotspot - 5)},{gpu.vram_mib},{used},{gpu.vram_mib - used}")
    return "\n".join(out) + "\n"


def mi300x_files() -> dict[str, str]:
    rng = rng_for("amd/mi300x/llama3-8b")
    base = "amd/mi300x/llama3-8b"
    files = {f"{base}/{name}": text for name, text in rocprofv3_files("48211").items()}
    busy = [0.0, 0.0, 18.0] + [rng.uniform(91, 100) for _ in range(36)] + [0.0, 0.0]
    files[f"{base}/amd-smi-metric.csv"] = amd_smi_metric(MI300X, busy, 1_730_462_400, rng)
    return files


# -- MI210: a rocprof-compute (omniperf) workload folder ---------------------------------------

DGEMM_APP = [
    Kernel("vecCopy(double*, double*, double*, int, int) (.kd)", 1_048_576, 256, read=8 * 1_048_576,
           write=8 * 1_048_576, efficiency=0.62, vgpr=8),
    Kernel("daxpy_kernel(int, double, double const*, double*) (.kd)", 4_194_304, 256, {"valu_f64": 2.0 * 4_194_304},
           read=16 * 4_194_304, write=8 * 4_194_304, efficiency=0.8, vgpr=12),
    Kernel("Cijk_Ailk_Bljk_DB_MT128x128x16_MI16x16x4x1_SN_1LDSB0_GRVW2_K1_MIWT4_4_WG32_8_1 (.kd)", 16 * 16 * 256, 256,
           {"mfma_f64": 2.0 * 2048 ** 3, "valu_f64": 2.0 * 2048 ** 2}, read=3 * 2048 * 2048 * 8 * 1.6,
           write=2048 * 2048 * 8, efficiency=0.69, vgpr=128, accum_vgpr=128, sgpr=96, lds=32768),
]
_DISPATCH = ("Dispatch_ID,Kernel_Name,GPU_ID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,Scratch_Per_Workitem,"
             "Arch_VGPR,Accum_VGPR,SGPR,wave_size,obj")
# The counter passes of pmc_perf.csv: each after `wave_size_N,obj_N` (a subset of rocprof-compute's
# MI200 passes, per-channel columns included for TCC_HIT).
_PASSES = [
    ["SQ_WAVES", "SQ_INSTS_VALU", "SQ_INSTS_VALU_ADD_F64", "SQ_INSTS_VALU_MUL_F64", "SQ_INSTS_VALU_FMA_F64",
     "SQ_INSTS_VALU_TRANS_F64"],
    ["SQ_INSTS_VALU_ADD_F32", "SQ_INSTS_VALU_MUL_F32", "SQ_INSTS_VALU_FMA_F32", "SQ_INSTS_VALU_TRANS_F32",
     "SQ_INSTS_MFMA", "SQ_INSTS_VALU_MFMA_F64", "SQ_INSTS_VALU_MFMA_MOPS_F64", "SQ_INSTS_VALU_MFMA_MOPS_BF16"],
    ["TCC_EA_RDREQ_sum", "TCC_EA_RDREQ_32B_sum", "TCC_EA_WRREQ_sum", "TCC_EA_WRREQ_64B_sum"]
    + [f"TCC_HIT[{i}]" for i in range(16)],
]


def _compute_counters(kernel: Kernel) -> dict[str, float]:
    base = kernel.counters()
    mfma_ops = base["SQ_INSTS_VALU_MFMA_MOPS_F64"] * MOPS_UNIT
    mfma_insts = round(mfma_ops / (2 * 16 * 16 * 4))   # v_mfma_f64_16x16x4f64: 2048 FLOPs per instruction
    out = {**base, "SQ_INSTS_VALU": sum(v for k, v in base.items() if k.startswith("SQ_INSTS_VALU_")) + mfma_insts,
           "SQ_INSTS_MFMA": mfma_insts, "SQ_INSTS_VALU_MFMA_F64": mfma_insts,
           "TCC_EA_RDREQ_sum": base["read_64b"], "TCC_EA_RDREQ_32B_sum": 0, "TCC_EA_WRREQ_sum": base["write_64b"],
           "TCC_EA_WRREQ_64B_sum": base["write_64b"]}
    hits = round(base["read_64b"] * 0.3)
    out.update({f"TCC_HIT[{i}]": hits // 16 + (1 if i < hits % 16 else 0) for i in range(16)})
    return out


def rocprof_compute_files(base: str) -> dict[str, str]:
    rng = rng_for(base)
    launches = _steps(rng, DGEMM_APP, 2, MI210, 1_411_987_252_036_982, gap_ns=(12_000, 40_000))
    names = _DISPATCH.split(",")
    for number, counters in enumerate(_PASSES, start=1):
        names += [f"wave_size_{number}", f"obj_{number}", *counters]
    perf, stamps = [",".join(names + ["Start_Timestamp", "End_Timestamp"])], []
    stamps.append("Dispatch_ID,Kernel_Name,GPU_ID,queue-id,queue-index,pid,tid,Grid_Size,Workgroup_Size,"
                  "LDS_Per_Workgroup,Scratch_Per_Workitem,Arch_VGPR,Accum_VGPR,SGPR,wave_size,sig,obj,DispatchNs,"
                  "Start_Timestamp,End_Timestamp,CompleteNs")
    for dispatch, (kernel, begin, end) in enumerate(launches):
        obj = f"0x7f2a3a72{0x0ec0 + 0x40 * DGEMM_APP.index(kernel):04x}"
        fields = [dispatch, f'"{kernel.name}"', 2, kernel.grid, kernel.block, kernel.lds, 0, kernel.vgpr,
                  kernel.accum_vgpr, kernel.sgpr, 64, obj]
        counters = _compute_counters(kernel)
        for counter_names in _PASSES:
            fields += [64, obj, *[counters[n] for n in counter_names]]
        perf.append(",".join(str(f) for f in fields + [begin, end]))
        stamps.append(f'{dispatch},"{kernel.name}",2,0,{dispatch},4134249,4134249,{kernel.grid},{kernel.block},'
                      f"{kernel.lds},0,{kernel.vgpr},{kernel.accum_vgpr},{kernel.sgpr},64,0x0,{obj},{begin - 24_963},"
                      f"{begin},{end},{end + 11_935}")
    top = ["Kernel_Name,Count,Sum(ns),Mean(ns),Median(ns),Pct"]
    totals: dict[str, list[int]] = {}
    for kernel, begin, end in launches:
        totals.setdefault(kernel.name, []).append(end - begin)
    grand = sum(sum(v) for v in totals.values())
    for name, values in sorted(totals.items(), key=lambda item: -sum(item[1])):
        ordered = sorted(values)
        median = (ordered[(len(ordered) - 1) // 2] + ordered[len(ordered) // 2]) / 2
        top.append(f'"{name}",{len(values)},{float(sum(values))},{sum(values) / len(values)},{median},'
                   f"{100 * sum(values) / grand}")
    return {f"{base}/pmc_perf.csv": "\n".join(perf) + "\n",
            f"{base}/timestamps.csv": "\n".join(stamps) + "\n",
            f"{base}/pmc_kernel_top.csv": "\n".join(top) + "\n",
            f"{base}/roofline.csv": _roofline_csv(rng),
            f"{base}/sysinfo.csv": _sysinfo()}


def _roofline_csv(rng: random.Random) -> str:
    """rocprof-compute's microbenchmark ceilings (GB/s, GFLOP/s) with their low/high spread."""
    names = ["HBMBw", "L2Bw", "L1Bw", "LDSBw", "FP32Flops", "FP64Flops", "MFMABF16Flops", "MFMAF16Flops",
             "MFMAF32Flops", "MFMAF64Flops", "MFMAI8Ops"]
    values = [1352.6, 4906.3, 9013.8, 17284.9, 20411.7, 19872.4, 163305.2, 158440.9, 39881.6, 39954.3, 160112.8]
    header = ["device"]
    for name in names:
        header += [name, f"{name}Low", f"{name}High"]
    row = ["0"]
    for value in values:
        spread = value * rng.uniform(0.0002, 0.002)
        row += [f"{value:.7g}", f"{value - spread:.7g}", f"{value + spread:.7g}"]
    return ",".join(header) + "\n" + ",".join(row) + "\n"


def _sysinfo() -> str:
    header = ("workload_name,command,ip_blocks,timestamp,version,hostname,cpu_model,sbios,linux_distro,"
              "linux_kernel_version,amd_gpu_kernel_version,cpu_memory,gpu_memory,rocm_version,vbios,"
              "compute_partition,memory_partition,gpu_series,gpu_model,gpu_arch,gpu_l1,gpu_l2,cu_per_gpu,"
              "simd_per_cu,se_per_gpu,wave_size,workgroup_max_size,chip_id,max_waves_per_cu,max_sclk,max_mclk,"
              "cur_sclk,cur_mclk,total_l2_chan,lds_banks_per_cu,sqc_per_gpu,pipes_per_gpu,hbm_bw,num_xcd")
    row = ('dgemm,./dgemm_bench -m 2048 -n 2048 -k 2048 -i 2,SQ|LDS|SQC|TA|TD|TCP|TCC|SPI|CPC|CPF|roofline,'
           'Tue 05 Nov 2024 10:14:52 AM  (CST),3.0.0,gpu-node-17,AMD EPYC 7763 64-Core Processor,'
           'American Megatrends International LLC.M12,Ubuntu 22.04.4 LTS,5.15.0-119-generic,6.8.5,'
           '527834112,67108864,6.2.2-55,113-D67301-063,NA,NA,MI200,MI210,gfx90a,16,8192,104,4,8,64,1024,29711,32,'
           '1700,1600,1700,1600,32,32,56,4,1638.4,1')
    return header + "\n" + row + "\n"


def rocm_files() -> dict[str, str | bytes]:
    from samples.rocm_layouts import files as more_files
    from samples.rocm_rocpd import files as rocpd_files
    from samples.rocm_traces import mi210_cg_files, mi250x_cg_mpi_files

    return {**mi250x_files(), **mi300x_files(), **rocprof_compute_files("amd/mi210/workloads/dgemm/MI210"),
            **mi210_cg_files(), **mi250x_cg_mpi_files(), **more_files(),
            **rocpd_files()}
