"""The ROCm CSV vocabulary, as data: printed column names -> fields, and the kinds of file.

Every ROCm profiler writes CSV, and each release renames some columns (`gpu-id` in rocprof,
`GPU_ID` in rocprofv2 and rocprof-compute, `Agent_Id` in rocprofv3; `BeginNs` / `Start_Timestamp`;
`arch_vgpr` / `Arch_VGPR` / `Arch_VGPR_Count`), so a file is recognised by the fields its header
names, never by a column's position, and a new spelling is a new row in `COLUMNS`. Columns of
a dispatch table that are no field are its hardware counters (`SQ_WAVES`, `FETCH_SIZE`,
`TCC_HIT[0]`, `TCC_EA_RDREQ_sum`), read into `metrics`. rocprof-compute repeats a dispatch's
fields after each counter pass (`wave_size_1`, `obj_1`, `Correlation_ID_3`): such copies are
neither fields nor counters.

Sources of the spellings: rocprofiler's `rpl_run.sh`/`tblextr.py` (v1: the dispatch properties
`gpu-id(..), grd(..), wgr(..), lds(..), scr(..), arch_vgpr(..), ...` become columns) and its
file plugin (v2); rocprofiler-sdk's `generateCSV.cpp` and documentation samples (v3, ROCm
6.2-7.x); rocprof-compute's test workloads and `file_io.py` (pmc_perf, timestamps,
pmc_kernel_top). sample_logs/README.md names the files written from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

# Units of the printed numbers (None: a count, an id or text).
NS, BYTE = "ns", "byte"


@dataclass(frozen=True)
class RocmColumn:
    header: str
    field: str
    unit: str | None = None


def _cols(field: str, unit: str | None, *headers: str) -> list[RocmColumn]:
    return [RocmColumn(header, field, unit) for header in headers]


COLUMNS: list[RocmColumn] = [
    # which dispatch, kernel, GPU, queue, process
    *_cols("dispatch", None, "Index", "Dispatch_ID", "Dispatch_Id"),
    *_cols("name", None, "KernelName", "Kernel_Name", "Kernel-Name", "Name"),
    *_cols("agent", None, "gpu-id", "GPU_ID", "Agent_Id", "Agent_ID"),
    *_cols("queue", None, "queue-id", "Queue_ID", "Queue_Id"),
    *_cols("queue_index", None, "queue-index", "Queue_Index"),
    *_cols("pid", None, "pid", "PID", "Process_Id", "Process_ID"),
    *_cols("tid", None, "tid", "TID", "Thread_Id", "Thread_ID"),
    *_cols("kernel_id", None, "Kernel_Id", "Kernel_ID"),
    *_cols("correlation_id", None, "Correlation_ID", "Correlation_Id"),
    *_cols("stream", None, "Stream_Id", "Stream_ID"),
    *_cols("xcc", None, "XCC_Index"),
    *_cols("kind", None, "Kind"),
    # launch shape: HSA sizes are in work-items (a grid of 1024 x 256 is 1024 work-items)
    *_cols("grid_size", None, "grd", "Grid_Size"),
    *_cols("grid_x", None, "Grid_Size_X"), *_cols("grid_y", None, "Grid_Size_Y"),
    *_cols("grid_z", None, "Grid_Size_Z"),
    *_cols("block_size", None, "wgr", "Workgroup_Size"),
    *_cols("block_x", None, "Workgroup_Size_X"), *_cols("block_y", None, "Workgroup_Size_Y"),
    *_cols("block_z", None, "Workgroup_Size_Z"),
    # a dispatch's resources (into `metrics`, section "dispatch")
    *_cols("lds", BYTE, "lds", "LDS_Per_Workgroup", "LDS_Block_Size", "Group_Segment_Size", "LDS"),
    *_cols("scratch", BYTE, "scr", "Scratch_Per_Workitem", "Scratch_Size", "Private_Segment_Size"),
    *_cols("arch_vgpr", None, "vgpr", "arch_vgpr", "Arch_VGPR", "VGPR_Count", "Arch_VGPR_Count"),
    *_cols("accum_vgpr", None, "accum_vgpr", "Accum_VGPR", "Accum_VGPR_Count", "Accumulative_VGPR"),
    *_cols("sgpr", None, "sgpr", "SGPR", "SGPR_Count"),
    *_cols("wave_size", None, "wave_size", "Wave_Size"),
    *_cols("fbar", None, "fbar"),
    *_cols("handle", None, "sig", "obj"),
    # times, ns since boot (rocprof's DispatchNs/BeginNs/EndNs/CompleteNs; the others' timestamps)
    *_cols("dispatch_time", NS, "DispatchNs"),
    *_cols("start", NS, "BeginNs", "Start_Timestamp", "Begin_Timestamp"),
    *_cols("end", NS, "EndNs", "End_Timestamp", "Stop_Timestamp"),
    *_cols("complete_time", NS, "CompleteNs"),
    *_cols("duration", NS, "DurationNs"),
    # rocprofv3 counter collection, one row per dispatch and counter
    *_cols("counter_name", None, "Counter_Name"),
    *_cols("counter_value", None, "Counter_Value"),
    # API and copy traces
    *_cols("domain", None, "Domain"),
    *_cols("function", None, "Function", "Operation", "Operation_Name"),
    *_cols("direction", None, "Direction"),
    *_cols("src_agent", None, "Source_Agent_Id"),
    *_cols("dst_agent", None, "Destination_Agent_Id"),
    # statistics: rocprof `*.stats.csv`, rocprofv3 `*_stats.csv`, rocprof-compute pmc_kernel_top
    *_cols("calls", None, "Calls", "Count"),
    *_cols("total", NS, "TotalDurationNs"),
    *_cols("avg", NS, "AverageNs"),
    *_cols("min", NS, "MinNs"),
    *_cols("max", NS, "MaxNs"),
    *_cols("stddev", NS, "StdDev"),
    *_cols("percent", None, "Percentage", "Pct"),
    # rocprof-compute pmc_kernel_top: `Sum(ns)`, `Mean(us)`... (grammars/rocm.lark `timed_column`)
    *[RocmColumn(f"{stat}({unit})", field, unit) for stat, field in (("Sum", "total"), ("Mean", "avg"),
                                                                 ("Median", "med"))
      for unit in ("ns", "us", "ms", "s")],
]

BY_HEADER: dict[str, RocmColumn] = {c.header: c for c in COLUMNS}

# Fields kept as text; every other field is a number.
TEXT_FIELDS = frozenset({"name", "kind", "domain", "function", "direction", "handle", "agent",
                         "src_agent", "dst_agent", "counter_name"})
# Fields of a dispatch that go to `metrics` (section "dispatch"), as named there.
RESOURCES = ("lds", "scratch", "arch_vgpr", "accum_vgpr", "sgpr", "wave_size", "fbar")

# rocprof-compute repeats a dispatch's fields after each counter pass: `wave_size_1`, `obj_2`.
_PASS_COPY = re.compile(r"^(?P<field>.+)_\d+$")
# Counter columns: hardware counters (`SQ_WAVES`, `TCC_HIT[3]`, `TCC_EA_RDREQ_sum`) and the
# tools' derived metrics (`FETCH_SIZE`, `FetchSize`, `VALUUtilization`, `MfmaFlops`).
_COUNTER = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(?:\[\d+\])?$")


@dataclass(frozen=True)
class RocmReport:
    """One kind of ROCm CSV: `requires` the fields its header must name; `what` says it."""

    id: str
    requires: frozenset[str]
    what: str


def _report(id: str, requires: str, what: str) -> RocmReport:
    return RocmReport(id, frozenset(requires.split()), what)


# Tried in order; the first whose fields the header has wins.
REPORTS: list[RocmReport] = [
    _report("counters", "dispatch name counter_name counter_value", "counter collection (one row per counter)"),
    _report("dispatches", "dispatch name agent", "dispatches (one row per kernel launch)"),
    _report("stats", "name calls total", "statistics (one row per name)"),
    _report("trace", "domain function start end", "API or operation trace"),
    _report("copies", "kind direction start end", "memory copy trace"),
]

# Info files: one row per agent, workload or device; every cell is kept in `metrics`.
INFO_REPORTS: dict[str, tuple[frozenset[str], str]] = {
    "sysinfo": (frozenset({"gpu_arch"}), "rocprof-compute workload system info"),
    "agent_info": (frozenset({"Agent_Type", "Node_Id"}), "rocprofv3 agent info"),
    "roofline": (frozenset({"HBMBw", "FP32Flops"}), "rocprof-compute measured roofline ceilings"),
}

# File names that say which tool wrote a file and what it holds. rocprofv3: `<pid>_<report>.csv`
# (or `<name>_<report>.csv` with `-o`); rocprofv2: `<report>_<pid>.csv`; rocprof: `results.csv`
# and `results.<kind>_stats.csv` (any `-o` name); rocprof-compute: fixed names in a workload
# folder.
V3_REPORTS = ("kernel_trace", "kernel_stats", "counter_collection", "counter_collection_stats",
              "memory_copy_trace", "memory_copy_stats", "hip_api_trace", "hip_api_stats",
              "hsa_api_trace", "hsa_api_stats", "marker_api_trace", "marker_api_stats",
              "rccl_api_trace", "rccl_api_stats", "scratch_memory_trace", "memory_allocation_trace",
              "agent_info", "domain_stats")
V2_REPORTS = ("results", "hip_api_trace", "hsa_api_trace", "hcc_ops_trace", "async_copy_trace",
              "roctx_trace")
COMPUTE_FILES = re.compile(r"^(?:pmc_perf(?:_\d+)?|pmc_kernel_top|pmc_dispatch_info|timestamps|sysinfo|"
                           r"roofline|SQ_[A-Z0-9_]+)$")
_V3_NAME = re.compile(r"(?:^|_)(" + "|".join(sorted(V3_REPORTS, key=len, reverse=True)) + r")$")
_V2_NAME = re.compile(r"^(" + "|".join(V2_REPORTS) + r")_\d+$")
_V1_STATS = re.compile(r"\.(|hip_|hsa_|copy_|ops_)stats$")


def _tells() -> frozenset[str]:
    """Column names of which every recognised header holds one: the spellings of a field every
    kind of table requires, and the names info files require (the SMI tools add their own)."""
    required = {f for report in REPORTS for f in report.requires} & {"dispatch", "total", "domain", "direction"}
    names = {c.header for c in COLUMNS if c.field in required}
    return frozenset(names | {n for needs, _ in INFO_REPORTS.values() for n in needs})


TELLS = _tells()


def fields_of(headers: list[str]) -> dict[str, RocmColumn]:
    """Printed header -> RocmColumn for the headers that are fields."""
    return {h: BY_HEADER[h] for h in headers if h in BY_HEADER}


def is_pass_copy(header: str) -> bool:
    """A rocprof-compute copy of a dispatch field after a counter pass (`wave_size_3`)."""
    found = _PASS_COPY.match(header)
    return bool(found) and found["field"] in BY_HEADER


def counter_columns(headers: list[str]) -> list[str]:
    """The counter columns of a dispatch table: neither fields nor pass copies (a counter two
    passes collected, once)."""
    return list(dict.fromkeys(h for h in headers if h not in BY_HEADER and not is_pass_copy(h) and _COUNTER.match(h)))


def recognise(headers: list[str]) -> RocmReport | None:
    fields = {c.field for c in fields_of(headers).values()}
    return next((r for r in REPORTS if r.requires <= fields), None)


def recognise_info(headers: list[str]) -> str | None:
    names = set(headers)
    return next((kind for kind, (needs, _) in INFO_REPORTS.items() if needs <= names), None)


def report_name(path: PurePath) -> str | None:
    """The report a file's name says (`kernel_trace`, `results`, `hip_api_stats`, `pmc_perf`),
    or None when the name says nothing."""
    stem = path.name[:-4] if path.name.lower().endswith(".csv") else path.name
    if COMPUTE_FILES.match(stem):
        return stem
    for pattern in (_V3_NAME, _V2_NAME):
        found = pattern.search(stem)
        if found:
            return found.group(1)
    stats = _V1_STATS.search(stem)
    if stats:
        return f"{stats.group(1)}stats" if stats.group(1) else "kernel_stats"
    return None


def stats_kind(report: str | None, names: list[str]) -> str:
    """What a statistics file counts: "kernel" (kernels, copies) or "api" (calls), by its file
    name, else by its names (HIP/HSA API functions are `hip*`, `hsa_*`)."""
    if report:
        if re.search(r"(?:hip|hsa|marker|rccl)_(?:api_)?stats$", report):
            return "api"
        if report in ("kernel_stats", "pmc_kernel_top", "copy_stats", "memory_copy_stats", "ops_stats"):
            return "kernel"
    api = sum(bool(re.match(r"(?:hip|hsa_|__hip|roctx)", n or "")) for n in names)
    return "api" if names and api * 2 > len(names) else "kernel"


def tool_of(headers: list[str], report: str | None) -> str:
    """Which tool wrote a file: rocprof (v1), rocprofv2, rocprofv3 or rocprof-compute."""
    names = set(headers)
    if report and COMPUTE_FILES.match(report):
        return "rocprof-compute"
    if names & {"KernelName", "gpu-id", "TotalDurationNs"} and not names & {"MinNs", "Kind", "Agent_Id"}:
        return "rocprof"
    if names & {"Kind", "Agent_Id", "Dispatch_Id", "Correlation_Id", "Process_Id", "Counter_Name", "MinNs",
                "Node_Id"}:
        return "rocprofv3"
    if names & {"Dispatch_ID", "Correlation_ID", "Stop_Timestamp"}:
        return "rocprofv2"
    return "rocprof"
