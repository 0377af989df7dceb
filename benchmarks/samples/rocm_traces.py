"""AMD writers for the sample logs' non-CSV layouts, and a full rocprof (v1) run of one application.

* `amd/mi210/cg/`: a conjugate-gradient solver (CSR SpMV, dot products, AXPBYs, one small DGEMM)
  on an MI210, profiled twice into one folder, as happens when `rocprof` runs again with its
  default output name: `rocprof --sys-trace --stats` (its Chrome trace `results.json`, written as
  rocprofiler's `tblextr.py`/`sqlitedb.py` write it: `{ "traceEvents":[{}`, a `process_name` per
  lane, roctx ranges, HIP API calls, copies, kernels whose `args` repeat the `results.csv`
  columns as strings, barrier packets, the rocminfo capture flattened into `otherData`; and its
  `results.stats.csv` / `results.copy_stats.csv`), then `rocprof -i pmc.txt`, whose `results.csv`
  (counters, no timestamps) replaced the first run's;
* `amd/mi250x/cg-mpi/slurm-7730121.out`: the same solver on two GCDs of an MI250X, two MPI ranks,
  profiled by `rocprofv2 --pmc` without an output folder: its cli plugin prints a
  `Dispatch_ID(..), GPU_ID(..), ..., Kernel_Name("..."), ..., <counter>(<value>)` line per
  dispatch (rocprofiler `plugin/cli/cli.cpp`) into the job's stdout, the ranks' lines interleaved
  with the program's own output.

Counters follow from each kernel's FLOPs and bytes, durations from an efficiency against the
datasheet peaks: no kernel sits above a roof.
"""

from __future__ import annotations

import json

from samples.gpus import rng_for

SPMV = "void spmv_csr<double>(int, int const*, int const*, double const*, double const*, double*)"
AXPBY = "void axpby<double>(int, double, double const*, double, double*)"
DOT = "void dot_reduce<double, 256>(double const*, double const*, double*, int)"
HALO = "void pack_halo<double>(double const*, double*, int const*, int)"
GEMM = "Cijk_Ailk_Bljk_DB_MT64x64x16_MI16x16x4x1_SN_1LDSB0_GRVW2_ISA90a"
FILL = "__amd_rocclr_fillBufferAligned"
CLONE = " [clone .kd]"      # rocprof v1 names: ` [clone .kd]` on C++ symbols, `.kd` on extern "C" ones
COUNTERS = ("SQ_INSTS_VALU_ADD_F64", "SQ_INSTS_VALU_MUL_F64", "SQ_INSTS_VALU_FMA_F64", "SQ_INSTS_VALU_ADD_F32",
            "SQ_INSTS_VALU_MUL_F32", "SQ_INSTS_VALU_FMA_F32", "SQ_INSTS_VALU_MFMA_MOPS_F64", "FETCH_SIZE", "WRITE_SIZE")


def _counters(add=0, mul=0, fma=0, mops=0, fetch_kib=0.0, write_kib=0.0) -> dict:
    """Wave instructions per kind (64 work-items each), MOPS in units of 512, bytes in KiB."""
    return {"SQ_INSTS_VALU_ADD_F64": add, "SQ_INSTS_VALU_MUL_F64": mul, "SQ_INSTS_VALU_FMA_F64": fma,
            "SQ_INSTS_VALU_ADD_F32": 0, "SQ_INSTS_VALU_MUL_F32": 0, "SQ_INSTS_VALU_FMA_F32": 0,
            "SQ_INSTS_VALU_MFMA_MOPS_F64": mops, "FETCH_SIZE": fetch_kib, "WRITE_SIZE": write_kib}


def _solver_kernels(rows: int, nonzeros: int, spmv_ns: int) -> dict:
    """name -> (duration ns, grid work-items, workgroup, LDS, arch VGPRs, accum VGPRs, SGPRs, counters)."""
    return {
        SPMV: (spmv_ns, rows * 64, 256, 0, 32, 0, 40,
               _counters(fma=nonzeros // 64, fetch_kib=(nonzeros * 12 + rows * 12) / 1024, write_kib=rows * 8 / 1024)),
        AXPBY: (spmv_ns * 7 // 100, rows, 256, 0, 12, 0, 24,
                _counters(mul=rows // 64, fma=rows // 64, fetch_kib=rows * 16 / 1024, write_kib=rows * 8 / 1024)),
        DOT: (spmv_ns * 5 // 100, rows, 256, 2048, 24, 0, 24,
              _counters(add=rows // 64 // 32, fma=rows // 64, fetch_kib=rows * 16 / 1024, write_kib=0.0625)),
        HALO: (spmv_ns * 6 // 100, 8192, 256, 0, 16, 0, 24, _counters(fetch_kib=128.0, write_kib=64.0)),
        GEMM: (14_200, 64 * 256, 256, 16384, 128, 64, 80,
               _counters(mops=2 * 512 ** 3 // 512, fetch_kib=3 * 2 * 1024 * 1.4, write_kib=2 * 1024)),
        FILL: (6_100, 28_160, 256, 0, 12, 4, 32, _counters(write_kib=rows * 8 / 1024)),
    }


# -- amd/mi210/cg: rocprof v1 --sys-trace --stats, then a counter pass ---------------------------

_LANES = [(0, "Markers and Ranges"), (2, "CPU HIP API"), (1, "COPY"), (6, "GPU0"), (518, "GPU Barriers0"),
          (7, "GPU1"), (518 + 1, "GPU Barriers1")]
_GPU_NODE = 1          # HSA node 1: the CPU is node 0
_PID = 40317


def _v1_name(name: str) -> str:
    return f"{name}.kd" if name.startswith("__amd") or name.startswith("Cijk") else name + CLONE


def mi210_cg_files() -> dict[str, str]:
    rng = rng_for("amd/mi210/cg")
    kernels = _solver_kernels(1 << 20, 27 << 20, 281_000)
    order = [FILL, FILL, GEMM] + [SPMV, DOT, AXPBY, AXPBY, DOT, AXPBY] * 5
    clock = 2_849_505_830_000_000
    calls, copies, ranges, dispatches = [], [], [], []
    for offset, duration in ((0, 41_000), (60_000, 38_000), (110_000, 36_000)):
        calls.append(("hipMalloc", clock + offset, clock + offset + duration))
    clock += 200_000
    for size_ns in (2_310_000, 360_000):
        calls.append(("hipMemcpy", clock, clock + size_ns + 90_000))
        copies.append(("CopyHostToDevice", clock + 40_000, clock + 40_000 + size_ns))
        clock += size_ns + 190_000
    iteration_start = None
    for index, name in enumerate(order):
        if name == SPMV:
            if iteration_start is not None:
                ranges.append(("cg_iteration", iteration_start, clock))
            iteration_start = clock
        base = kernels[name][0]
        calls.append(("hipMemsetAsync" if name == FILL else "hipLaunchKernel", clock, clock + 5_000 + rng.randrange(3_000)))
        begin = clock + 9_000 + rng.randrange(2_000)
        end = begin + base + rng.randrange(-base // 50, base // 50)
        dispatches.append((index, name, clock + 6_000, begin, end, end + 2_800))
        clock = end + 1_500
        if name == DOT:    # the dot product's result goes back to the host
            calls.append(("hipMemcpy", clock, clock + 24_000))
            copies.append(("CopyDeviceToHost", clock + 9_000, clock + 15_000))
            clock += 26_000
    ranges.append(("cg_iteration", iteration_start, clock))
    ranges.insert(0, ("cg_solve", ranges[0][1], clock))
    calls.append(("hipMemcpy", clock + 5_000, clock + 405_000))
    copies.append(("CopyDeviceToHost", clock + 35_000, clock + 385_000))
    base_dir = "amd/mi210/cg"
    return {f"{base_dir}/results.json": _v1_trace(kernels, calls, copies, ranges, dispatches),
            f"{base_dir}/results.stats.csv": _v1_stats([(_v1_name(n), end - begin) for _, n, _, begin, end, _ in dispatches]),
            f"{base_dir}/results.copy_stats.csv": _v1_stats([(n, end - begin) for n, begin, end in copies]),
            f"{base_dir}/results.csv": _v1_counters(kernels, order, rng)}


def _event(lane: int, name: str, tid: int, begin: int, end: int, args: dict) -> str:
    """One `X` event as tblextr.py writes it: `ts`/`dur` microsecond strings, every argument a string."""
    return "," + json.dumps({"ph": "X", "name": name, "pid": lane, "tid": tid, "ts": str(begin // 1000),
                             "dur": str((end - begin) // 1000), "args": args}, separators=(",", ":"))


def _v1_trace(kernels: dict, calls: list, copies: list, ranges: list, dispatches: list) -> str:
    out = ['{ "traceEvents":[{}']
    out += ["," + json.dumps({"args": {"name": name}, "ph": "M", "pid": lane, "name": "process_name", "sort_index": index},
                             separators=(",", ":")) for index, (lane, name) in enumerate(_LANES)]
    for name, begin, end in ranges:
        out.append(_event(0, name, _PID, begin, end, {"BeginNs": str(begin), "EndNs": str(end), "pid": str(_PID),
                                                      "tid": str(_PID), "Name": name}))
    for name, begin, end in calls:
        out.append(_event(2, name, _PID, begin, end, {"BeginNs": str(begin), "EndNs": str(end), "pid": str(_PID),
                                                      "tid": str(_PID), "Name": name, "args": "",
                                                      "DurationNs": str(end - begin)}))
    for name, begin, end in copies:
        out.append(_event(1, name, 0, begin, end, {"BeginNs": str(begin), "EndNs": str(end), "pid": str(_PID),
                                                   "tid": "0", "Name": name, "DurationNs": str(end - begin)}))
    names = list(kernels)
    for queue_index, (index, name, dispatched, begin, end, complete) in enumerate(dispatches):
        _, grid, group, lds, vgpr, agpr, sgpr, _ = kernels[name]
        args = {"KernelName": _v1_name(name), "gpu-id": str(_GPU_NODE), "queue-id": "0", "queue-index": str(queue_index),
                "pid": str(_PID), "tid": str(_PID), "grd": str(grid), "wgr": str(group), "lds": str(lds), "scr": "0",
                "arch_vgpr": str(vgpr), "accum_vgpr": str(agpr), "sgpr": str(sgpr), "wave_size": "64", "sig": "0x0",
                "obj": f"0x7f3c1a2b{names.index(name) * 64:04x}", "DispatchNs": str(dispatched), "BeginNs": str(begin),
                "EndNs": str(end), "CompleteNs": str(complete), "DurationNs": str(end - begin)}
        out.append(_event(6 + _GPU_NODE, _v1_name(name), 0, begin, end, args))
    for _, name, _, _, end, _ in dispatches:
        if name == DOT:   # the barrier packet the host's read of a dot product waits on
            out.append(_event(518 + _GPU_NODE, "<barrier packet>", 0, end + 200, end + 1_300,
                              {"BeginNs": str(end + 200), "EndNs": str(end + 1_300), "pid": str(_PID), "tid": "0",
                               "Name": "<barrier packet>"}))
    other = {"CMD": "rocminfo", "HSASystemAttributes.RuntimeVersion": "1.14",
             "Agent1.Name": "AMDEPYC7763", "Agent1.MarketingName": "AMDEPYC776364-CoreProcessor",
             "Agent1.DeviceType": "CPU", "Agent1.Node": "0", "Agent1.ComputeUnit": "128",
             "Agent2.Name": "gfx90a", "Agent2.Uuid": "GPU-3d1a8c06e27b5f11", "Agent2.MarketingName": "AMDInstinctMI210",
             "Agent2.VendorName": "AMD", "Agent2.DeviceType": "GPU", "Agent2.Node": "1", "Agent2.ComputeUnit": "104",
             "Agent2.MaxClockFreq.(MHz)": "1700", "Agent2.CacheInfo.L2": "8192(0x2000)KB", "Agent2.SIMDsperCU": "4",
             "Agent2.MemoryProperties.WavefrontSize": "64(0x40)"}
    pairs = ",\n".join(f'    "{key}": "{value}"' for key, value in sorted(other.items()))
    return "\n".join(out) + '\n],\n"otherData": {\n' + pairs + "\n  }\n}"


def _v1_stats(rows: list[tuple[str, int]]) -> str:
    """rocprof's `--stats` summary: calls and total ns per name, largest first."""
    totals: dict[str, list[int]] = {}
    for name, duration in rows:
        entry = totals.setdefault(name, [0, 0])
        entry[0] += 1
        entry[1] += duration
    whole = sum(total for _, total in totals.values())
    out = ['"Name","Calls","TotalDurationNs","AverageNs","Percentage"']
    for name, (calls, total) in sorted(totals.items(), key=lambda item: -item[1][1]):
        out.append(f'"{name}",{calls},{total},{total // calls},{total * 100.0 / whole!r}')
    return "\n".join(out) + "\n"


def _v1_counters(kernels: dict, order: list[str], rng) -> str:
    """`rocprof -i pmc.txt` (no `--timestamp`): the counters after `obj`, no time columns."""
    header = "Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,accum_vgpr,sgpr,wave_size,sig,obj,"
    out = [header + ",".join(COUNTERS)]
    names = list(kernels)
    for index, name in enumerate(order):
        _, grid, group, lds, vgpr, agpr, sgpr, counted = kernels[name]
        cells = []
        for counter in COUNTERS:
            value = counted[counter]
            if counter in ("FETCH_SIZE", "WRITE_SIZE"):
                jitter = 1 + rng.randrange(-20, 20) / 10_000 if value > 1 else 1.0
                cells.append(f"{value * jitter:.10f}")
            else:
                cells.append(str(int(value)))
        out.append(f'{index},"{_v1_name(name)}",{_GPU_NODE},0,{index},40388,40388,{grid},{group},{lds},0,{vgpr},{agpr},'
                   f'{sgpr},64,0x0,0x7f3c1a2b{names.index(name) * 64:04x},' + ",".join(cells))
    return "\n".join(out) + "\n"


# -- amd/mi250x/cg-mpi: rocprofv2's records on stdout, two ranks ---------------------------------

def mi250x_cg_mpi_files() -> dict[str, str]:
    rng = rng_for("amd/mi250x/cg-mpi")
    kernels = _solver_kernels(1 << 19, 27 << 19, 151_000)
    order = [HALO, SPMV, DOT, AXPBY, AXPBY, DOT, AXPBY] * 2
    counters = [c for c in COUNTERS if c != "SQ_INSTS_VALU_MFMA_MOPS_F64"] + ["GRBM_GUI_ACTIVE"]
    lines = ["srun: job 7730121 queued and waiting for resources", "srun: job 7730121 has been allocated resources",
             "ROCProfilerV2: Collecting the following counters:", *[f"- {c}" for c in counters],
             "Enabling Counter Collection", "cg-mpi: 2 ranks, 1048576 rows, 28311552 nonzeros, tol 1e-08"]
    records = []
    for rank, (pid, gpu, clock) in enumerate(((51201, 4, 3_112_740_100_000_000), (51202, 5, 3_112_740_100_004_300))):
        for number, name in enumerate(order, start=1):
            base = kernels[name][0]
            begin = clock + 12_000 + rng.randrange(4_000)
            end = begin + base + rng.randrange(-base // 40, base // 40)
            records.append((begin, _v2_record(number, pid, gpu, name, begin, end, kernels[name], counters, rng)))
            clock = end
    for index, (_, line) in enumerate(sorted(records)):
        lines.append(line)
        if index % 14 == 13:
            lines.append(f"iteration {index // 14 + 1}: residual {3.1e-4 / 4 ** (index // 14):.3e}")
    lines += ["cg-mpi: converged after 2 iterations (residual 7.7e-06)", "solve time 0.0041 s"]
    return {"amd/mi250x/cg-mpi/slurm-7730121.out": "\n".join(lines) + "\n"}


def _v2_record(number: int, pid: int, gpu: int, name: str, begin: int, end: int, kernel: tuple, counters: list[str],
               rng) -> str:
    """One dispatch as cli.cpp prints it (LDS rounded up to 512-byte blocks, counters as
    `std::to_string` prints a double)."""
    _, grid, group, lds, vgpr, agpr, sgpr, counted = kernel
    fields = [f"Dispatch_ID({number})", f"GPU_ID({gpu})", "Queue_ID(1)", f"Queue_Index({number - 1})",
              f"Process_ID({pid})", f"Thread_ID({pid})", f"Grid_Size({grid})", f"Workgroup_Size({group})",
              f"LDS({(lds + 511) // 512 * 512})", "Scratch_Size(0)", f"Arch_VGPR({vgpr})", f"Accumulative_VGPR({agpr})",
              f"SGPR({sgpr})", "Wave_Size(64)", f'Kernel_Name("{name}")', f"Begin_Timestamp({begin})",
              f"End_Timestamp({end})", f"Correlation_ID({number})"]
    for counter in counters:
        if counter == "GRBM_GUI_ACTIVE":
            value = (end - begin) * 1.7   # GPU-busy cycles at 1700 MHz
        else:
            value = counted[counter]
            if counter in ("FETCH_SIZE", "WRITE_SIZE") and value > 1:
                value *= 1 + rng.randrange(-15, 15) / 10_000
        fields.append(f"{counter}({value:.6f})")
    return ", ".join(fields)
