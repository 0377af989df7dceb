"""The SM clock each run's roofs are at (issue 31, item 1), best evidence first:

1. the frequency the log records (ncu's SM Frequency: the kernels' `sm_clock_hz`), when the
   time is ncu's own;
2. else, for ncu's time, the clock ncu locked to (`runs.clock_domain`, from its version and
   command line: `gpu/clocks.py`): the GPU table's base clock when "base", its boost clock when
   "boost"; "unlocked" (`--clock-control none`) reads as a trace;
3. for a trace's time (nsys, nvprof, PyTorch: never locked) or an unlocked ncu, the SM clock
   nvidia-smi sampled while busy in the run's own folder (`gpu.clocks.sampled_sm_clock`);
4. else the boost clock (the datasheet's peaks), said so.

`RunClock` holds what each of these says for one run; `roofline.at_run_clock` picks by the
time source and sets the `sm_clock_hz` the datasheet peaks are scaled to, with the words every
answer prints (`runs.roof_clock`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

import polars as pl

from roofreport import gpu
from roofreport.gpu import clocks


@dataclass(frozen=True)
class RunClock:
    """What the evidence says of one run's clock, apart from the kernels' own logged frequency."""

    domain: str | None = None          # ncu's: base, boost, unlocked (runs.clock_domain)
    domain_source: str | None = None
    locked_hz: float | None = None      # the clock of that domain in the GPU table
    sampled: clocks.SampledClock | None = None
    boost_hz: float | None = None


def run_clocks(tables, gpus: dict[str, gpu.GpuSpec]) -> dict[str, RunClock]:
    """run -> its RunClock, for every run with a GPU spec."""
    runs = tables.get("runs")
    if runs is None or not runs.height:
        return {}
    columns = [c for c in ("run", "clock_domain", "clock_source") if c in runs.columns]
    domains = {row["run"]: row for row in runs.select(columns).iter_rows(named=True)}
    sampled = _sampled_by_run(tables)
    out = {}
    for run, spec in gpus.items():
        row = domains.get(run, {})
        domain = row.get("clock_domain")
        mhz = spec.base_clock_mhz if domain == clocks.BASE else spec.boost_clock_mhz if domain == clocks.BOOST else None
        out[run] = RunClock(domain, row.get("clock_source"), mhz * 1e6 if mhz else None, sampled.get(run),
                            spec.boost_clock_mhz * 1e6 if spec.boost_clock_mhz else None)
    return out


def _folder(path: str | None) -> str:
    return str(PurePath(path).parent) if path else ""


def _sampled_by_run(tables) -> dict[str, clocks.SampledClock]:
    """run -> the SM clock nvidia-smi sampled while busy: its own samples, else those of the
    folder its kernel logs are in."""
    samples, kernels = tables.get("samples"), tables.get("kernels")
    if samples is None or not samples.height or "sm_clock_mhz" not in samples.columns \
            or samples["sm_clock_mhz"].is_null().all():
        return {}
    gpu_rows = samples.filter(pl.col("pid").is_null()) if "pid" in samples.columns else samples
    gpu_rows = gpu_rows.with_columns(pl.col("source_file").map_elements(_folder, return_dtype=pl.String).alias("__folder"))
    out: dict[str, clocks.SampledClock] = {}
    by_run = {run: clocks.sampled_sm_clock(group) for (run,), group in gpu_rows.group_by(["run"]) if run}
    by_folder = {folder: clocks.sampled_sm_clock(group) for (folder,), group in gpu_rows.group_by(["__folder"])}
    if kernels is None or not kernels.height:
        return {run: found for run, found in by_run.items() if found}
    for run, path in kernels.select("run", "source_file").unique().iter_rows():
        found = by_run.get(run) or by_folder.get(_folder(path))
        if found and run not in out:
            out[run] = found
    return out
