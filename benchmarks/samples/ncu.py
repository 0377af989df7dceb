"""Nsight Compute text and CSV (details page) writers for the sample logs."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from samples.formatting import auto_bytes, auto_time, sep
from samples.gpus import V100, Gpu
from samples.kernels import Kernel

# -- Nsight Compute --------------------------------------------------------------------------

@dataclass(frozen=True)
class NcuStyle:
    """What differs between the ncu builds the demo imitates."""

    layout: str            # "wide" (2019-2022.x), "table" (2023+), "csv" (details page, Era B)
    old_names: bool
    thousands: bool
    op_prefix: str         # "smsp__" or "sm__"
    tensor_inst: bool      # sm__inst_executed_pipe_tensor.sum requested
    ops_paths: tuple[str, ...]  # sm__ops_path_tensor_src_<p>_dst_fp32.sum requested (GA100+)
    date: datetime | None  # kernel header date stamps (wide layout)
    fp64: bool = True      # the d{add,mul,fma} counters requested
    sectors: bool = True   # dram__sectors.sum requested


def ncu_metrics(k: Kernel, gpu: Gpu, style: NcuStyle) -> list[tuple[str, str, str]]:
    """(metric, unit, value) rows for one kernel, sorted by name as ncu prints them."""
    table = style.layout != "wide"
    rows = [("dram__bytes.sum", *auto_bytes(k.dram, table))]
    if style.sectors:
        rows.append(("dram__sectors.sum", "sector", sep(k.dram // 32, style.thousands)))
    rows += [("gpu__time_duration.sum", *auto_time(k.ncu_ns, table)),
            ("l1tex__t_bytes.sum", *auto_bytes(k.l1, table)),
            ("lts__t_bytes.sum", *auto_bytes(k.l2, table)),
            ("sm__cycles_elapsed.avg.per_second", "Ghz" if table else "cycle/nsecond", f"{k.clock_hz / 1e9:.2f}")]
    if style.tensor_inst:
        per_inst = 512 if gpu is V100 else (4096 if k.tensor_path == "fp16" else 2048)
        rows.append(("sm__inst_executed_pipe_tensor.sum", "inst", sep(k.tensor_flops // per_inst, style.thousands)))
    for path in style.ops_paths:
        value = k.tensor_flops if k.tensor_path == path else 0
        rows.append((f"sm__ops_path_tensor_src_{path}_dst_fp32.sum", "", sep(value, style.thousands)))
    ops = dict(dadd=0, dfma=0, dmul=0) if style.fp64 else {}
    ops.update(fadd=k.fadd, ffma=k.ffma, fmul=k.fmul, hadd=k.hadd, hfma=k.hfma, hmul=k.hmul)
    for op, value in ops.items():
        rows.append((f"{style.op_prefix}sass_thread_inst_executed_op_{op}_pred_on.sum", "inst",
                     sep(value, style.thousands)))
    return rows


def _progress_name(func: str) -> str:
    return func if len(func) <= 32 else func[:29] + "..."


def ncu_prelude(kernels: list[Kernel], pid: int, app: str, program: list[str], passes: int,
                rng: random.Random, progress: bool = True) -> list[str]:
    """`==PROF==` status lines with the program's own output interleaved, as a terminal shows it
    (with `--csv`, ncu prints no per-kernel progress lines)."""
    lines = [f"==PROF== Connected to process {pid} ({app})", program[0]]
    chatter = list(program[1:])
    for i, k in enumerate(kernels if progress else []):
        lines.append(f'==PROF== Profiling "{_progress_name(k.func)}" - {i}: 0%....50%....100% - {passes} passes')
        if chatter and rng.random() < 0.15:
            lines.append(chatter.pop(0))
    lines.extend(chatter)
    lines.append(f"==PROF== Disconnected from process {pid}")
    return lines


def _kernel_header(k: Kernel, gpu: Gpu, style: NcuStyle, when: datetime | None) -> str:
    name = k.old if style.old_names else k.name
    if style.layout == "wide":
        return f"  {name}, {when:%Y-%b-%d %H:%M:%S}, Context 1, Stream 7"
    grid, block = (", ".join(map(str, d)) for d in (k.grid, k.block))
    return f"  {name} ({grid})x({block}), Context 1, Stream 7, Device 0, CC {gpu.cc}"


def ncu_text(kernels: list[Kernel], gpu: Gpu, style: NcuStyle, prelude: list[str], process: str) -> str:
    """An `ncu --metrics ...` text log (wide 2019-2022 or table 2023+ layout)."""
    out = list(prelude) + [process]
    when = style.date
    for k in kernels:
        out.append(_kernel_header(k, gpu, style, when))
        out.append("    Section: Command line profiler metrics")
        out.extend(_metric_table(ncu_metrics(k, gpu, style), style.layout))
        out.append("")
        if when is not None:
            when += timedelta(seconds=1 + int(k.ncu_ns * 4 // 1e9))
    return "\n".join(out) + "\n"


def _metric_table(rows: list[tuple[str, str, str]], layout: str) -> list[str]:
    if layout == "wide":
        rule = "    " + "-" * 70 + " " + "-" * 15 + " " + "-" * 30
        body = [f"    {m:<70} {u:>15} {v:>30}" for m, u, v in rows]
        return [rule, *body, rule]
    w1 = max(len("Metric Name"), *(len(m) for m, _, _ in rows))
    w2 = max(len("Metric Unit"), *(len(u) for _, u, _ in rows))
    w3 = max(len("Metric Value"), *(len(v) for _, _, v in rows))
    rule = f"    {'-' * w1} {'-' * w2} {'-' * w3}"
    title = f"    {'Metric Name':<{w1}} {'Metric Unit':<{w2}} {'Metric Value':<{w3}}"
    return [rule, title, rule, *(f"    {m:<{w1}} {u:>{w2}} {v:>{w3}}" for m, u, v in rows), rule]


NCU_CSV_HEADER = ['"ID"', '"Process ID"', '"Process Name"', '"Host Name"', '"Kernel Name"', '"Context"', '"Stream"',
                  '"Block Size"', '"Grid Size"', '"Device"', '"CC"', '"Section Name"', '"Metric Name"',
                  '"Metric Unit"', '"Metric Value"']


def ncu_csv(kernels: list[Kernel], gpu: Gpu, style: NcuStyle, prelude: list[str], pid: int, process: str) -> str:
    """The `--csv` details page, Era B (15 columns: identity with Block/Grid Size, Device, CC)."""
    out = list(prelude) + [",".join(NCU_CSV_HEADER)]
    for i, k in enumerate(kernels):
        ident = [str(i), str(pid), process, "127.0.0.1", k.name, "1", "7",
                 "(" + ", ".join(map(str, k.block)) + ")", "(" + ", ".join(map(str, k.grid)) + ")", "0", gpu.cc,
                 "Command line profiler metrics"]
        for metric, unit, value in ncu_metrics(k, gpu, style):
            out.append(",".join(_csv_quote(x) for x in [*ident, metric, unit, value]))
    return "\n".join(out) + "\n"


def _csv_quote(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'
