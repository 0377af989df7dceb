"""nvidia-smi logs -> the `samples` table: every output kind, drivers 384-591.

* `--query-gpu=... --format=csv[,noheader][,nounits]` series (`query.py`), with repeated
  headers, date lines and prompts between blocks, multi-GPU sweeps with or without `index`;
  and the per-process `--query-compute-apps` / `--query-accounted-apps` series, one row per
  process (`pid`, `process_name`, `process_mem_mib`; the GPU-wide columns null);
* `dmon` (`monitor.py`; `pmon` is recognised and reported, not sampled);
* the boxed table, alone, repeated in a loop under ctime lines, or painted by `watch`
  (`table.py`, `watch.py`), and `-q` reports (`report.py`);
* CSV files written by wrappers whose every column is a known quantity (`wrapper.py`).

The syntax is `grammars/smi.lark`; `lines.py` classifies and contextualises the lines once,
each reader turns its sections into raw rows, and `samples.py` numbers GPUs, dates samples and
computes elapsed time for all of them. One file may mix kinds (a table, then a query loop).

Warning codes: `smi.bad-row` (a row that does not fit its header: file:line:column and the
line), `smi.bad-value` (a cell that is not a number in its unit: null), `smi.bad-header`,
`smi.no-header` (noheader output: the numbers' meaning is not in the file, only times and ids
are read), `smi.no-measurement`, `smi.gpu-by-position`, `smi.gpu-unknown`, `smi.gpu-changed`,
`smi.truncated-name`, `smi.truncated-table`, `smi.truncated` (file ends mid-row),
`smi.time-backwards`, `smi.multiline-cell`, `smi.nul-bytes`, `smi.pmon-not-sampled`,
`smi.failed` (nvidia-smi's failure message beside samples; alone it is the file's error).

Every file not claimed by another family is sniffed here, so the readers are imported only when
a file is parsed (sniffing needs `sniff.py`, or `wrapper.py` for a CSV header).
"""

from __future__ import annotations

from roofreport.families.common.textio import Head
from roofreport.families.spec import DeferredReader, FormatSpec

FAMILY = "nvidia-smi"


def sniff_text(head: Head) -> str | None:
    from roofreport.families.smi import sniff as smi_sniff

    return smi_sniff.sniff(head)


def sniff_wrapper(head: Head) -> str | None:
    from roofreport.families.smi import wrapper as smi_wrapper

    return smi_wrapper.sniff(head)


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="smi-text", sniff=sniff_text,
               parse=DeferredReader("roofreport.families.smi.read", "parse_text"),
               marks=("NVIDIA-SMI ", "NVSMI LOG", "# gpu ", "timestamp, ")),
    FormatSpec(family=FAMILY, name="smi-wrapper-csv", sniff=sniff_wrapper,
               parse=DeferredReader("roofreport.families.smi.read", "parse_wrapper")),
]
BINARY_SPECS: list[FormatSpec] = []
