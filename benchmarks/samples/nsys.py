"""Nsight Systems writers for the sample logs: the gputrace CSV and the console stats tables."""

from __future__ import annotations

import random
import statistics

from samples.gpus import Gpu
from samples.timeline import Timeline

# -- Nsight Systems --------------------------------------------------------------------------

NSYS_TRACE_HEADER = ("Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),"
                     "Bytes (MB),Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name")


def nsys_gputrace_csv(timeline: Timeline, gpu: Gpu) -> str:
    """`nsys stats --report cuda_gpu_trace --format csv` (2024.x header with GreenCtx)."""
    rows = [NSYS_TRACE_HEADER]
    device = f"{gpu.name} (0)"
    for e in sorted(timeline.events, key=lambda e: e.start):
        if e.kind == "kernel":
            k = e.kernel
            cells = [e.start, e.dur, e.corr, *k.grid, *k.block, k.regs, f"{k.smem_static / 1e6:.3f}",
                     f"{k.smem_dyn / 1e6:.3f}", "", "", "", ""]
        else:
            mbps = e.nbytes / 1e6 / (e.dur / 1e9)
            cells = [e.start, e.dur, e.corr, "", "", "", "", "", "", "", "", "", f"{e.nbytes / 1e6:.3f}",
                     f"{mbps:.3f}", e.src, e.dst]
        name = f'"{e.name}"' if "," in e.name else e.name
        rows.append(",".join(str(c) for c in [*cells, device, 1, "", 7, name]))
    return "\n".join(rows) + "\n"


def _center(text: str, width: int) -> str:
    left = (width - len(text)) // 2
    return " " * left + text + " " * (width - len(text) - left)


def console_table(headers: list[str], rows: list[list[str]], name_col: str) -> list[str]:
    """nsys's column tables: centred titles, dash rules, numbers right- and names left-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    def line(cells):
        parts = [c.ljust(w) if h == name_col else c.rjust(w) for c, w, h in zip(cells, widths, headers)]
        return (" " + "  ".join(parts)).rstrip()
    title = (" " + "  ".join(_center(h, w) for h, w in zip(headers, widths))).rstrip()
    rule = " " + "  ".join("-" * w for w in widths)
    return [title, rule, *(line(r) for r in rows)]


def _stats(values: list[int]) -> tuple[int, float, float, int, int, float]:
    total = sum(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return total, total / len(values), statistics.median(values), min(values), max(values), std


def _summary_rows(groups: dict[str, list[int]], grand: int) -> list[list[str]]:
    rows = []
    for name, values in sorted(groups.items(), key=lambda kv: (-sum(kv[1]), kv[0])):
        total, avg, med, lo, hi, std = _stats(values)
        shown = name if len(name) <= 100 else name[:99] + "\u2026"
        rows.append([f"{100 * total / grand:.1f}", f"{total:,}", f"{len(values):,}", f"{avg:,.1f}", f"{med:,.1f}",
                     f"{lo:,}", f"{hi:,}", f"{std:,.1f}", shown])
    return rows


def _group(items) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for name, value in items:
        groups.setdefault(name, []).append(value)
    return groups


def nsys_stats_text(timeline: Timeline, report: str, preamble: list[str], rng: random.Random) -> str:
    """`nsys profile --stats=true` console output, 2024 style (`[n/8] Executing '...' stats report`)."""
    out = list(preamble)
    out += [f"Generating '/tmp/nsys-report-{rng.randrange(16**4):04x}.qdstrm'",
            f"[1/8] [========================100%] {report}.nsys-rep",
            f"[2/8] [========================100%] {report}.sqlite",
            "[3/8] Executing 'nvtx_sum' stats report", ""]
    nvtx = _group((name, end - start) for name, start, end in timeline.ranges)
    grand = sum(sum(v) for v in nvtx.values())
    rows = [r[:8] + ["PushPop", r[8]] for r in _summary_rows(nvtx, grand)]
    out += console_table(["Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
                          "StdDev (ns)", "Style", "Range"], rows, "Range")
    out += ["", "[4/8] Executing 'osrt_sum' stats report", ""]
    out += _osrt_table(timeline, rng)
    out += ["", "[5/8] Executing 'cuda_api_sum' stats report", ""]
    api = _group([(e.api, e.api_dur) for e in timeline.events] + [(n, d) for n, _, d in timeline.syncs]
                 + _api_extras(timeline, rng))
    out += _named_table(api, "Num Calls", "Name")
    out += ["", "[6/8] Executing 'cuda_gpu_kern_sum' stats report", ""]
    out += _named_table(_group((e.name, e.dur) for e in timeline.events if e.kind == "kernel"), "Instances", "Name")
    out += ["", "[7/8] Executing 'cuda_gpu_mem_time_sum' stats report", ""]
    mem = [e for e in timeline.events if e.kind != "kernel"]
    out += _named_table(_group((e.name, e.dur) for e in mem), "Count", "Operation")
    out += ["", "[8/8] Executing 'cuda_gpu_mem_size_sum' stats report", ""]
    out += _size_table(_group((e.name, e.nbytes) for e in mem))
    out += ["", "Generated:", f"    /home/ta/imagenet/{report}.nsys-rep", f"    /home/ta/imagenet/{report}.sqlite"]
    return "\n".join(out) + "\n"


def _named_table(groups: dict[str, list[int]], count_title: str, name_title: str) -> list[str]:
    grand = sum(sum(v) for v in groups.values())
    headers = ["Time (%)", "Total Time (ns)", count_title, "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
               "StdDev (ns)", name_title]
    return console_table(headers, _summary_rows(groups, grand), name_title)


def _size_table(groups: dict[str, list[int]]) -> list[str]:
    rows = []
    for name, values in sorted(groups.items(), key=lambda kv: (-sum(kv[1]), kv[0])):
        mb = [v / 1e6 for v in values]
        std = statistics.stdev(mb) if len(mb) > 1 else 0.0
        rows.append([f"{sum(mb):,.3f}", f"{len(mb):,}", f"{sum(mb) / len(mb):,.3f}", f"{statistics.median(mb):,.3f}",
                     f"{min(mb):,.3f}", f"{max(mb):,.3f}", f"{std:,.3f}", name])
    return console_table(["Total (MB)", "Count", "Avg (MB)", "Med (MB)", "Min (MB)", "Max (MB)", "StdDev (MB)",
                          "Operation"], rows, "Operation")


def _api_extras(timeline: Timeline, rng: random.Random) -> list[tuple[str, int]]:
    """Calls around the launches: events cuDNN records, capture checks, the allocator."""
    kernels = [e for e in timeline.events if e.kind == "kernel"]
    extras = [("cudaEventRecord", int(rng.uniform(1500, 4200))) for e in kernels if e.api == "cuLaunchKernel"]
    extras += [("cudaStreamIsCapturing_v10000", int(rng.uniform(600, 1900))) for _ in range(len(kernels) // 9)]
    extras += [("cudaMalloc", int(rng.uniform(90_000, 420_000))) for _ in range(3)]
    extras += [("cudaStreamWaitEvent", int(rng.uniform(1200, 2600))) for _ in range(8)]
    return extras


def _osrt_table(timeline: Timeline, rng: random.Random) -> list[str]:
    span = max(e.start + e.dur for e in timeline.events) - min(e.start for e in timeline.events)
    calls = {"poll": (41, 0.62), "pthread_cond_timedwait": (22, 0.55), "ioctl": (612, 0.018),
             "read": (188, 0.011), "sem_timedwait": (6, 0.22), "mmap64": (74, 0.0012), "futex": (35, 0.004)}
    groups = {}
    for name, (count, share) in calls.items():
        total = span * share * 4          # several worker threads wait at once
        groups[name] = [max(1000, int(total / count * rng.lognormvariate(0, 0.9))) for _ in range(count)]
    return _named_table(groups, "Num Calls", "Name")
