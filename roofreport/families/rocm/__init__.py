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

Warning codes: `rocm.bad-row` (a row that does not fit its header: file:line:column, left out),
`rocm.truncated` (the file ends inside its last row, left out).
"""

from __future__ import annotations

from roofreport.families.common.textio import Head
from roofreport.families.spec import DeferredReader, FormatSpec

FAMILY = "rocm"


def sniff(head: Head) -> str | None:
    if head.binary or "," not in head.text:
        return None
    from roofreport.families.rocm import header

    found = header.find(head.lines, head.path)
    return found.variant if found else None


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="rocm-csv", sniff=sniff,
               parse=DeferredReader("roofreport.families.rocm.read", "parse")),
]
