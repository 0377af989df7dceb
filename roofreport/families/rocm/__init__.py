"""AMD ROCm profilers and GPU monitors: which files are theirs, and the reader.

Every ROCm tool writes CSV, so one spec reads them all, recognised by the column names of their
header line (`columns.py`, `header.py`; the syntax is `grammars/rocm.lark`):

* rocprof (v1) `results.csv` (a row per dispatch: `KernelName`, `gpu-id`, `grd`, `wgr`, ...,
  `BeginNs`/`EndNs`/`DurationNs`, then the counters asked for) and its `*.stats.csv`;
* rocprofv2 `results_<pid>.csv` (dispatches and counters), `hip_api_trace_<pid>.csv`,
  `hcc_ops_trace_<pid>.csv`, `async_copy_trace_<pid>.csv`;
* rocprofv3 `<pid>_kernel_trace.csv`, `_counter_collection.csv`, `_kernel_stats.csv`,
  `_memory_copy_trace.csv`, `_hip_api_trace.csv`, `_*_stats.csv`, `_agent_info.csv`;
* rocprof-compute / omniperf workload folders: `pmc_perf.csv`, `timestamps.csv`, `SQ_*.csv`,
  `pmc_kernel_top.csv`, `roofline.csv`, `sysinfo.csv`;
* `rocm-smi --csv` and `amd-smi metric|monitor --csv` series (`smi.py`).

Beside the CSVs, rocprofv3's rocpd SQLite database (`<pid>_results.db`, ROCm 7's default:
`rocpd.py`), the Empirical Roofline Toolkit's `roofline.json` (measured ceilings: `ert.py`),
rocprofv2's records printed on stdout (`Dispatch_ID(1), GPU_ID(4), ...` lines
among a program's output: `records.py`), and rocprof (v1)'s Chrome-trace JSON (`results.json`: `trace_json.py`), recognised
by the empty first event tblextr.py writes or its lanes' names (`GPU0`, `COPY`, `CPU HIP API`).

Warning codes: `rocm.bad-row` (a row that does not fit its header: file:line:column, left out),
`rocm.truncated` (the file ends inside its last row, left out).
"""

from __future__ import annotations

import re

from roofreport.families.common.textio import Head
from roofreport.families.spec import DeferredReader, FormatSpec

FAMILY = "rocm"


def sniff(head: Head) -> str | None:
    if head.binary or "," not in head.text:
        return None
    from roofreport.families.rocm import header

    found = header.find(head.lines, head.path)
    return found.variant if found else None


# What a ROCm CSV's header line holds and a batch job's other output hardly does
# (`FormatSpec.marks`: a log printed after a job's own output is found there, as `rocm-smi
# --csv` in a job's loop is): the spellings of a dispatch's GPU, a counter's name, a total and a
# trace's start (every table's header names one: `tests/test_rocm.py` holds them to
# `columns.REPORTS`), the info files' own names, and the SMI tools' device column as their
# headers spell it. (Written out, not built from `columns`: the registry imports no reader.)
MARKS = ("gpu-id", "GPU_ID", "Agent_Id", "Agent_ID", "Counter_Name", "TotalDurationNs", "Sum(ns)", "Sum(us)",
         "Sum(ms)", "Sum(s)", "BeginNs", "Start_Timestamp", "Begin_Timestamp", "gpu_arch", "Agent_Type", "HBMBw", "device,", "gpu,")

# rocprof v1's `results.json`: `{ "traceEvents":[{}` (tblextr.py's empty first event), or its
# lanes' `process_name` records. Kineto's traces have neither (its sniff runs first and claims
# only its own categories and keys: tests/test_rocm_json.py holds the two apart).
_V1_TRACE_START = re.compile(r'^\{\s*"traceEvents"\s*:\s*\[\s*\{\s*\}')
_V1_LANE = re.compile(r'"args"\s*:\s*\{\s*"name"\s*:\s*"(?:GPU\d+|GPU Barriers\d+|COPY|CPU HIP API|CPU HSA API|'
                      r'Markers and Ranges)"\s*\}\s*,\s*"ph"\s*:\s*"M"')


def sniff_trace_json(head: Head) -> str | None:
    if head.binary:
        return None
    text = head.text.lstrip("\ufeff \t\r\n")
    if not text.startswith("{") or '"traceEvents"' not in text:
        return None
    return "rocprof results json" if _V1_TRACE_START.match(text) or _V1_LANE.search(text) else None


def sniff_records(head: Head) -> str | None:
    """rocprofv2's records printed on stdout (`records.py`): a head line that reads as one."""
    if head.binary or ("Dispatch_ID(" not in head.text and "Domain(" not in head.text):
        return None
    from roofreport.families.rocm import record_line as records

    lines = [line for line in head.lines if line.startswith(records.RECORD_STARTS)]
    if not any(records.looks_like_record(line) for line in lines[:50]):
        return None
    return records.variant_of(lines)


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="rocm-rocpd", sniff=DeferredReader("roofreport.families.rocm.rocpd", "sniff"),
               parse=DeferredReader("roofreport.families.rocm.rocpd", "parse"), binary=True),
    FormatSpec(family=FAMILY, name="rocm-records", sniff=sniff_records,
               parse=DeferredReader("roofreport.families.rocm.records", "parse"),
               marks=("Dispatch_ID(", "Domain(HIP_API_DOMAIN)", "Domain(HSA_API_DOMAIN)")),
    FormatSpec(family=FAMILY, name="ert-roofline-json", sniff=DeferredReader("roofreport.families.rocm.ert", "sniff"),
               parse=DeferredReader("roofreport.families.rocm.ert", "parse"), reads_json=True),
    FormatSpec(family=FAMILY, name="rocm-trace-json", sniff=sniff_trace_json,
               parse=DeferredReader("roofreport.families.rocm.trace_json", "parse"), reads_json=True),
    FormatSpec(family=FAMILY, name="rocm-csv", sniff=sniff,
               parse=DeferredReader("roofreport.families.rocm.read", "parse"), marks=MARKS),
]
