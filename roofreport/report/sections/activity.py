"""The sections about activity over a run: regions (NVTX, profiler ranges, phases), GPU
utilization and power over time (nvidia-smi, DCGM, tegrastats) with GPU memory per process,
and CUDA API calls.

Statistics come from `analysis.regions`, `analysis.utilization` and `analysis.api`; long
sample series are drawn from `utilization.utilization_series` / `process_series` with bins sized
so a chart never gets more than `util_chart.MAX_POINTS` points per GPU.
"""

from __future__ import annotations

import polars as pl

from roofreport.analysis import utilization
from roofreport.report import fmt
from roofreport.report.context import Paragraph, Section, chart
from roofreport.report.tables import cell, name_cell, table

REGIONS_PER_RUN = 20
API_PER_RUN = 15
EMPTY_REGIONS = ("No regions: the logs carry no NVTX ranges, profiler ranges or phase names. Annotate the "
                 "code with `torch.cuda.nvtx.range_push(\"forward\")`/`range_pop()` and profile with "
                 "`nsys profile --trace=cuda,nvtx` (nvtx_sum report) or `ncu --nvtx`.")
EMPTY_UTIL = ("No nvidia-smi samples: log them beside the job with `nvidia-smi --query-gpu=timestamp,index,"
              "name,utilization.gpu,utilization.memory,memory.used,power.draw --format=csv -l 1 > smi.csv`.")
EMPTY_API = ("No CUDA API calls: `nsys profile --stats=true` (cuda_api_sum) or `nvprof` summary mode "
             "lists them.")


def rows_per_run(runs: int, few: int) -> int:
    """Table rows per run: all `few` for a handful of runs, fewer when a folder holds dozens."""
    return few if runs <= 6 else max(5, few // 3)


def regions_section(regions: pl.DataFrame) -> Section:
    section = Section("regions", "Regions and phases")
    if not regions.height:
        section.empty = EMPTY_REGIONS
        return section
    section.blocks.append(Paragraph.of(
        "NVTX and profiler ranges as logged (share of the run's top-level ranges of that kind), and "
        "forward/backward/optimizer phases where kernel names tell (share of the run's kernel time)."))
    runs = regions["run"].unique(maintain_order=True).to_list()
    limit = rows_per_run(len(runs), REGIONS_PER_RUN)
    rows, hidden = [], 0
    for run in runs:
        mine = regions.filter(pl.col("run") == run).sort("time_ns", descending=True, nulls_last=True)
        hidden += max(0, mine.height - limit)
        for i, r in enumerate(mine.head(limit).iter_rows(named=True)):
            rows.append([name_cell(run, 40) if i == 0 else "", cell(r["kind"], sub=r.get("basis")),
                         name_cell(r["region"], 70), fmt.duration(r.get("time_ns")), fmt.share(r.get("share")),
                         fmt.count(r.get("count"))])
    regions_table = table(["Run", "Kind", "Region", "Time#", "Share#", "Count#"], rows, css="regions")
    if hidden:
        regions_table.note = f"{hidden} more regions not shown (at most {limit} per run)."
    section.blocks.append(regions_table)
    return section


def utilization_section(stats: pl.DataFrame, window_stats: pl.DataFrame | None, samples: pl.DataFrame,
                        window: tuple[float, float] | None,
                        processes: pl.DataFrame | None = None) -> Section:
    section = Section("utilization", "GPU utilization and power")
    processes = processes if processes is not None else utilization.process_memory(None)
    if not samples.height or not (stats.height or processes.height):
        section.empty = EMPTY_UTIL
        return section
    if stats.height:
        section.blocks.append(Paragraph.of(
            "GPU utilization (nvidia-smi's utilization.gpu, DCGM's GPUTL, tegrastats' GR3D) is the share of "
            "time at least one kernel was running, not how busy the SMs were: a one-thread kernel reads "
            f"100 %. Idle = samples below {utilization.IDLE_PCT:g} %."
            + (" DCGM's SM activity (SMACT) is the share of SM cycles with a warp resident, over all SMs: "
               "what the kernels kept busy." if stats["sm_active_mean"].drop_nulls().len() else "")))
        section.blocks.append(_stats_table(stats, "Whole series"))
        if window_stats is not None:
            start, end = window
            label = f"Window {start:g} s to {'the end' if end == float('inf') else f'{end:g} s'}"
            section.blocks.append(_stats_table(window_stats, label))
        means = {(r["run"], r["gpu_index"]): r["util_mean"]
                 for r in (window_stats if window_stats is not None else stats).iter_rows(named=True)}
        section.blocks += _charts(samples, stats, means, window)
    if processes.height:
        section.blocks += _process_blocks(samples, processes)
    return section


def _stats_table(stats: pl.DataFrame, caption: str):
    sm_active = stats["sm_active_mean"].drop_nulls().len() > 0
    rows = [[name_cell(r["run"], 40), f"{r['gpu_index'] if r['gpu_index'] is not None else '–'} "
             f"{r.get('gpu_name') or ''}".strip(), fmt.count(r.get("samples")), fmt.seconds(r.get("duration_s")),
             fmt.percent(r.get("util_mean")), fmt.percent(r.get("util_median")), fmt.percent(r.get("util_p95")),
             fmt.share(r.get("idle_fraction")), fmt.percent(r.get("mem_util_mean")),
             *([fmt.percent(r.get("sm_active_mean"))] if sm_active else []),
             _watts(r.get("power_mean_w")), _watts(r.get("power_max_w"))] for r in stats.iter_rows(named=True)]
    return table(["Run", "GPU", "Samples#", "Duration#", "Util. mean#", "Median#", "p95#", "Idle#",
                  "Mem. util.#", *(["SM active#"] if sm_active else []), "Power mean#", "Power max#"],
                 rows, caption=caption, css="util")


def _process_blocks(samples: pl.DataFrame, processes: pl.DataFrame) -> list:
    """The processes' GPU memory: a table (largest users first) and its series per GPU."""
    from roofreport.report.charts.utilization import MAX_PROCESSES

    rows = [[name_cell(r["run"], 40), "–" if r["gpu_index"] is None else str(r["gpu_index"]),
             str(r["pid"]), name_cell(r.get("process_name") or "", 40), fmt.count(r.get("samples")),
             f"{fmt.seconds(r.get('first_s'))} – {fmt.seconds(r.get('last_s'))}",
             _mib(r.get("mem_mean_mib")), _mib(r.get("mem_max_mib"))]
            for r in processes.iter_rows(named=True)]
    blocks: list = [Paragraph.of(
        "GPU memory each process held, from nvidia-smi's per-process queries (--query-compute-apps: used "
        "memory at each reading; --query-accounted-apps: the most it ever held). At most "
        f"{MAX_PROCESSES} processes are drawn per GPU, the largest first."),
        table(["Run", "GPU", "PID#", "Process", "Samples#", "Seen", "Mean#", "Max#"], rows,
              caption="GPU memory per process", css="util", limit=30, what="processes")]
    return blocks + _process_charts(samples, processes)


def _mib(value) -> str:
    return "–" if value is None else f"{value:,.0f} MiB"


def _process_charts(samples: pl.DataFrame, processes: pl.DataFrame) -> list:
    from roofreport.report.charts.utilization import (MAX_POINTS, MAX_PROCESSES, PANELS_PER_CHART,
                                                      ProcessLine, ProcessPanel, process_memory_svg)

    panels = []
    for (run, gpu), mine in processes.group_by("run", "gpu_index", maintain_order=True):
        duration = (mine["last_s"].max() or 0.0) - (mine["first_s"].min() or 0.0)
        if not duration:
            continue
        series = utilization.process_series(samples.filter(pl.col("run") == run),
                                            bin_s=max(duration / MAX_POINTS, 1e-3))
        lines = []
        for r in mine.head(MAX_PROCESSES).iter_rows(named=True):
            points = series.filter(pl.col("gpu_index").eq_missing(gpu) & (pl.col("pid") == r["pid"]))
            lines.append(ProcessLine(f"pid {r['pid']} {r.get('process_name') or ''}".strip(),
                                     points["t_s"].to_list(), points["process_mem_mib"].to_list()))
        panels.append(ProcessPanel(f"{run} · GPU {gpu if gpu is not None else '?'}", lines))
    blocks = []
    for start in range(0, len(panels), PANELS_PER_CHART):
        chunk = panels[start:start + PANELS_PER_CHART]
        runs = list(dict.fromkeys(p.title.split(" · ")[0] for p in chunk))
        blocks.append(chart(f"procmem{start // PANELS_PER_CHART + 1}",
                            "GPU memory per process over time: " + ", ".join(runs), process_memory_svg, chunk))
    return blocks


def _watts(w) -> str:
    return "–" if w is None else f"{w:.0f} W"


def _run_series(samples: pl.DataFrame, run: str, stats: pl.DataFrame, means: dict) -> list:
    """One GpuSeries per GPU of a run (at most MAX_PANELS), binned to at most MAX_POINTS points."""
    from roofreport.report.charts.utilization import MAX_PANELS, MAX_POINTS, GpuSeries

    duration = stats.filter(pl.col("run") == run)["duration_s"].max()
    if not duration:
        return []
    frame = utilization.utilization_series(samples, bin_s=max(duration / MAX_POINTS, 1e-3))
    names = dict(stats.filter(pl.col("run") == run).select("gpu_index", "gpu_name").iter_rows())
    series = []
    for gpu in frame["gpu_index"].unique(maintain_order=True).to_list()[:MAX_PANELS]:
        mine = frame.filter(pl.col("gpu_index").eq_missing(gpu))
        title = f"{run} · GPU {gpu if gpu is not None else '?'} {names.get(gpu) or ''}".strip()
        series.append(GpuSeries(title, mine["t_s"].to_list(), mine["util_gpu_pct"].to_list(),
                                mine["util_mem_pct"].to_list(), mine["power_w"].to_list(),
                                means.get((run, gpu)), mine["sm_active_pct"].to_list()))
    return series


def _charts(samples: pl.DataFrame, stats: pl.DataFrame, means: dict, window) -> list:
    """The time series of every run and GPU, PANELS_PER_CHART panels per figure."""
    from roofreport.report.charts.utilization import PANELS_PER_CHART, utilization_svg

    series, untimed = [], []
    for run in stats["run"].unique(maintain_order=True).to_list():   # runs with GPU samples
        mine = _run_series(samples.filter(pl.col("run") == run), run, stats, means)
        series += mine
        if not mine:
            untimed.append(run)
    blocks: list = []
    for start in range(0, len(series), PANELS_PER_CHART):
        chunk = series[start:start + PANELS_PER_CHART]
        chart_id = f"util{start // PANELS_PER_CHART + 1}"
        runs = list(dict.fromkeys(s.title.split(" · ")[0] for s in chunk))
        caption = "GPU utilization and power over time: " + ", ".join(runs)
        blocks.append(chart(chart_id, caption, utilization_svg, chunk, window))
    if untimed:
        blocks.append(Paragraph.of(f"No time series for {', '.join(untimed)}: their samples carry no time."))
    return blocks


def api_section(api: pl.DataFrame) -> Section:
    section = Section("api", "CUDA API calls")
    if not api.height:
        section.empty = EMPTY_API
        return section
    section.blocks.append(Paragraph.of(
        "Host-side CUDA runtime/driver calls by total time. Long cudaMemcpy or cudaDeviceSynchronize "
        "times usually mean the host waited for the GPU; long cudaMalloc/cudaFree times mean allocation "
        "churn."))
    runs = api["run"].unique(maintain_order=True).to_list()
    limit = rows_per_run(len(runs), API_PER_RUN)
    for run in runs:
        mine = api.filter(pl.col("run") == run).sort("total_ns", descending=True, nulls_last=True)
        rows = [[name_cell(r["name"], 60), fmt.count(r.get("calls")), fmt.duration(r.get("total_ns")),
                 fmt.share(r.get("share"))] for r in mine.iter_rows(named=True)]
        section.blocks.append(table(["API call", "Calls#", "Total time#", "Share#"], rows, caption=run, css="api",
                                    limit=limit, what="calls"))
    return section
