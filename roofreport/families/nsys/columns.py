"""The nsys report vocabulary, as data: printed column names -> fields, and the report kinds.

`nsys stats` prints the same column names whether it writes CSV (`--format csv`) or console
tables (`--format column`, `nsys profile --stats=true`), so one mapping serves both parsers.
A report is recognised from the fields its header names (`Instances` + `Name` is a kernel
summary, `Num Calls` + `Name` an API summary...), because titles lie in MPI logs where ranks
interleave; the title or file name only settles headers two reports share (CUDA API and
OS runtime summaries). A new nsys version that renames a column is a new row in `COLUMNS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT = "report default"   # unit of a header that prints none: the report's default unit


@dataclass(frozen=True)
class Column:
    header: str                 # as printed
    field: str                  # what it means, shared by every report
    unit: str | None = None     # unit of the printed numbers (None: count or text)


def _cols(unit: str | None, *pairs: tuple[str, str]) -> list[Column]:
    return [Column(header, field, unit) for header, field in pairs]


COLUMNS: list[Column] = [
    # gputrace / cuda_gpu_trace: `Start(sec),Duration(nsec)` (2020-21), `Start (ns)` (2022+).
    Column("Start(sec)", "start", "s"), Column("Start(ns)", "start", "ns"),
    Column("Start (ns)", "start", "ns"), Column("Projected Start (ns)", "start", "ns"),
    Column("Duration(nsec)", "duration", "ns"), Column("Duration(ns)", "duration", "ns"),
    Column("Duration (ns)", "duration", "ns"), Column("Projected Duration (ns)", "duration", "ns"),
    Column("Orig Start (ns)", "orig_start", "ns"), Column("Orig Duration (ns)", "orig_duration", "ns"),
    *_cols(None, ("CorrId", "correlation_id"), ("CorrID", "correlation_id"),
           ("GrdX", "grid_x"), ("GrdY", "grid_y"), ("GrdZ", "grid_z"),
           ("BlkX", "block_x"), ("BlkY", "block_y"), ("BlkZ", "block_z"), ("Reg/Trd", "registers"),
           ("SrcMemKd", "src_kind"), ("DstMemKd", "dst_kind"), ("Src Kind", "src_kind"),
           ("Dst Kind", "dst_kind"), ("Device", "device"), ("Ctx", "context"),
           ("GreenCtx", "green_context"), ("Strm", "stream"), ("Device ID", "device"),
           ("Context ID", "context"), ("Stream ID", "stream"), ("Name", "name"),
           ("Operation", "name"), ("Kernel Name", "name"), ("API Name", "api_name")),
    Column("StcSMem", "static_smem", "B"), Column("StcSMem (MB)", "static_smem", "MB"),
    Column("DymSMem", "dynamic_smem", "B"), Column("DymSMem (MB)", "dynamic_smem", "MB"),
    Column("Bytes", "bytes", "B"), Column("Bytes (MB)", "bytes", "MB"),
    Column("Thru(MB/s)", "throughput", "MB/s"), Column("Throughput (MBps)", "throughput", "MB/s"),
    Column("Throughput (MB/s)", "throughput", "MB/s"),
    # Summaries (*sum): `Time(%)  Total Time  Instances  Average` (2020-21),
    # `Time (%)  Total Time (ns)  Instances  Avg (ns)  Med (ns)` (2022+).
    Column("Time(%)", "time_pct", "%"), Column("Time (%)", "time_pct", "%"),
    Column("Total Time", "total", DEFAULT), Column("Total Time (ns)", "total", "ns"),
    Column("Total Proj Time (ns)", "total", "ns"), Column("Total Range Time (ns)", "range_total", "ns"),
    *_cols(None, ("Instances", "instances"), ("Kern Inst", "instances"), ("Range Instances", "instances"),
           ("NVTX Inst", "nvtx_instances"), ("Num Calls", "calls"), ("Calls", "calls"),
           ("Count", "operations"), ("Operations", "operations"),
           ("GridXYZ", "grid_xyz"), ("BlockXYZ", "block_xyz"), ("Style", "style"),
           ("Range", "range"), ("NVTX Range", "range"), ("PID", "pid"), ("TID", "tid"),
           ("Pid", "pid"), ("Tid", "tid"), ("T-Pri", "thread_priority"), ("Thread Name", "thread_name"),
           ("Result", "result"), ("NumGPUOps", "gpu_ops"), ("Total GPU Ops", "gpu_ops"),
           ("Lvl", "level"), ("NumChild", "children"), ("RangeId", "range_id"),
           ("ParentId", "parent_id"), ("RangeStack", "range_stack")),
    *_cols(DEFAULT, ("Average", "avg"), ("Minimum", "min"), ("Maximum", "max"), ("StdDev", "stddev"),
           ("Total", "total_size")),
    *_cols("ns", ("Avg (ns)", "avg"), ("Med (ns)", "med"), ("Min (ns)", "min"), ("Max (ns)", "max"),
           ("StdDev (ns)", "stddev"), ("Proj Avg (ns)", "avg"), ("Proj Med (ns)", "med"),
           ("Proj Min (ns)", "min"), ("Proj Max (ns)", "max"), ("Proj StdDev (ns)", "stddev")),
    *_cols("MB", ("Total (MB)", "total_size"), ("Avg (MB)", "avg"), ("Med (MB)", "med"),
           ("Min (MB)", "min"), ("Max (MB)", "max"), ("StdDev (MB)", "stddev")),
]

BY_HEADER: dict[str, Column] = {c.header: c for c in COLUMNS}

# Fields kept as text; every other field is a number.
TEXT_FIELDS = frozenset({"name", "api_name", "range", "style", "device", "src_kind", "dst_kind",
                         "grid_xyz", "block_xyz", "thread_name", "result", "range_stack"})


@dataclass(frozen=True)
class Report:
    """One kind of nsys report: its id before the 2023 renaming, later ids, and the fields a
    header must name to be this report."""

    id: str
    aliases: tuple[str, ...]
    requires: frozenset[str]
    default_unit: str = "ns"   # 2020-21 headers print no unit: times in ns, sizes in KiB


def _report(id: str, aliases: str, requires: str, default_unit: str = "ns") -> Report:
    return Report(id, tuple(aliases.split()), frozenset(requires.split()), default_unit)


# Tried in order; the first whose required fields the header has wins, unless the title or
# file name names a later one that also fits (osrtsum prints cudaapisum's columns).
REPORTS: list[Report] = [
    _report("nvtxkernsum", "nvtx_kern_sum", "range name total instances nvtx_instances"),
    _report("nvtxgpuprojsum", "nvtx_gpu_proj_sum", "range total range_total"),
    _report("nvtxgpuproj", "nvtx_gpu_proj_trace", "name start duration gpu_ops"),
    _report("gputrace", "cuda_gpu_trace", "start duration name device"),
    _report("rulesync", "cuda_memcpy_sync cuda_api_sync cuda_memset_sync", "start duration api_name"),
    _report("apitrace", "cuda_api_trace", "start duration name"),
    _report("nvtxsum", "nvtx_sum nvtx_pushpop_sum nvtx_startend_sum", "total instances range"),
    _report("gpukernsum", "cuda_gpu_kern_sum cuda_gpu_kern_gb_sum", "total instances name"),
    _report("cudaapisum", "cuda_api_sum", "total calls name"),
    _report("osrtsum", "osrt_sum", "total calls name"),
    _report("gpumemtimesum", "cuda_gpu_mem_time_sum", "total operations"),
    _report("gpumemsizesum", "cuda_gpu_mem_size_sum", "total_size operations", default_unit="KiB"),
]

BY_ID: dict[str, Report] = {name: r for r in REPORTS for name in (r.id, *r.aliases)}

# 2020-2022 console titles name no report id; these hint at it (only the first match counts).
CLASSIC_TITLES: list[tuple[str, str]] = [
    (r"Operating System Runtime", "osrtsum"),
    (r"CUDA API", "cudaapisum"),
    (r"CUDA Kernel", "gpukernsum"),
    (r"Memory Operation Statistics \(by time", "gpumemtimesum"),
    (r"Memory Operation Statistics \((?:by size|KiB)", "gpumemsizesum"),
    (r"NVTX", "nvtxsum"),
]


def fields_of(headers: list[str]) -> tuple[list[Column | None], list[str]]:
    """The Column of each printed header (None when unknown) and the unknown headers."""
    cols = [BY_HEADER.get(h.strip()) for h in headers]
    unknown = [h for h, c in zip(headers, cols) if c is None]
    return cols, unknown


def recognise(cols: list[Column | None], hint: str | None = None) -> Report | None:
    """The report a header is, from its fields; `hint` (a report id or alias from a title
    or file name) decides between reports with the same columns."""
    fields = {c.field for c in cols if c is not None}
    fits = [r for r in REPORTS if r.requires <= fields]
    hinted = BY_ID.get(hint) if hint else None
    if hinted in fits:
        return hinted
    return fits[0] if fits else None


def hint_from_title(title: str | None) -> str | None:
    if not title:
        return None
    for pattern, report_id in CLASSIC_TITLES:
        if re.search(pattern, title):
            return report_id
    return None


def hint_from_filename(name: str) -> str | None:
    """`x_gpukernsum.csv`, `x_cuda_gpu_trace_base.csv`, `tmp_nsys_gputrace.csv` -> the report id.
    Longer aliases first, so `cuda_api_sum` is not read as `cuda_api`."""
    stem = name.lower()
    for alias in sorted(BY_ID, key=len, reverse=True):
        if re.search(rf"(?:^|[_\-.]){alias}(?:$|[_\-.])", stem):
            return BY_ID[alias].id
    return None


def known_first_headers() -> set[str]:
    """Headers that can open a report's header line (to find CSV headers among rows fast)."""
    return set(BY_HEADER)
