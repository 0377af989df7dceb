"""The sections about activity over a run: regions (NVTX, profiler ranges, phases), GPU
utilization and power over time (nvidia-smi, DCGM, tegrastats) with GPU memory per process,
and CUDA API calls.

Statistics come from `analysis.regions`, `analysis.utilization` and `analysis.api_calls`; long
sample series are drawn as the analysis binned them (`utilization.chart_series` /
`chart_process_series`: at most `utilization.SERIES_POINTS` points per GPU).
"""

from __future__ import annotations

import polars as pl

from roofreport.analysis import utilization
from roofreport.report import fmt
from roofreport.report.context import Column, Paragraph, Section, chart
from roofreport.report.naming import RunNames
from roofreport.report.tables import cell, name_cell, table

REGIONS_PER_RUN = 20
# The order a run's ranges are listed in: what the user marked (steps, their own annotations,
# NVTX, profiler ranges) before the framework's operators, which a PyTorch trace holds by the
# hundred; operators only at the top level (their nested calls are parts of them).
RANGE_KIND_ORDER = ("step", "annotation", "gpu_annotation", "nvtx", "profiler_range", "operator")
PHASE_KNOWN = 0.5       # a run's phases are shown when its kernel names tell the phase of this much time
API_COLUMNS = 6         # API calls shown side by side: those with the most time over all runs
EMPTY_REGIONS = ("No regions: the logs carry no NVTX ranges, profiler ranges or phase names. Annotate the "
                 "code with `torch.cuda.nvtx.range_push(\"forward\")`/`range_pop()` and profile with "
                 "`nsys profile --trace=cuda,nvtx` (nvtx_sum report) or `ncu --nvtx`.")
EMPTY_UTIL = ("No nvidia-smi samples: log them beside the job with `nvidia-smi --query-gpu=timestamp,index,"
              "name,utilization.gpu,utilization.memory,memory.used,power.draw --format=csv -l 1 > smi.csv`.")
EMPTY_API = ("No CUDA API calls: `nsys profile --stats=true` (cuda_api_sum) or `nvprof` summary mode "
             "lists them.")
NO_PHASES = ("Forward, backward and optimizer time: kernel names tell the phase of less than half the kernel "
             "time of {runs}. NVTX ranges around the phases (`torch.cuda.nvtx.range_push(\"backward\")`, "
             "profiled with `nsys profile --trace=cuda,nvtx`) would tell.")
SNAPSHOT_ONLY = ("GPU utilization over time: {runs} one nvidia-smi reading each (a snapshot). A series "
                 "(`nvidia-smi --query-gpu=timestamp,utilization.gpu,power.draw --format=csv -l 1`) would tell "
                 "how busy the GPU was.")


def rows_per_run(runs: int, few: int) -> int:
    """Table rows per run: all `few` for a handful of runs, fewer when a folder holds dozens."""
    return few if runs <= 6 else max(5, few // 3)


def _runs_text(count: int) -> str:
    return f"{count} run{'s' if count != 1 else ''}"


def regions_section(regions: pl.DataFrame, names: RunNames | None = None) -> Section:
    """Logged ranges per run (NVTX, profiler ranges), then the phases where kernel names tell
    them for most of a run's time; runs whose names tell little are counted, not printed as 0 %."""
    section = Section("regions", "Regions and phases")
    names = names or RunNames()
    if not regions.height:
        section.empty = EMPTY_REGIONS
        return section
    ranges = regions.filter(pl.col("kind") != "phase")
    phases = regions.filter(pl.col("kind") == "phase")
    if ranges.height:
        section.blocks.append(Paragraph.of(
            "NVTX and profiler ranges as logged: wall time of the range and its share of the run's top-level "
            "ranges of that kind, or, for ranges attached to kernels, the kernel time inside them."))
        section.blocks.append(_ranges_table(ranges, names))
    known, unknown = _phase_runs(phases, names)
    if known:
        section.blocks.append(_phases_table(phases, known, names))
    if unknown:
        section.gaps.append(NO_PHASES.format(runs=_runs_text(len(unknown))))
    if not section.blocks:                 # only phases, and names tell too little: one gap, not two
        section.empty = section.gaps.pop() if section.gaps else EMPTY_REGIONS
    return section


def _ranges_table(ranges: pl.DataFrame, names: RunNames):
    runs = names.order(ranges["run"].to_list())
    limit = rows_per_run(len(runs), REGIONS_PER_RUN)
    rows = []
    listed = _listed_ranges(ranges)
    hidden = ranges.height - listed.height      # nested operator calls: parts of the ones listed
    ranges = listed
    for run in runs:
        mine = ranges.filter(pl.col("run") == run)
        hidden += max(0, mine.height - limit)
        for index, row in enumerate(mine.head(limit).iter_rows(named=True)):
            rows.append([cell(names.label(run)) if index == 0 else "", cell(row["kind"], sub=row.get("basis")),
                         name_cell(row["region"], 160), fmt.duration(row.get("time_ns")), fmt.share(row.get("share")),
                         fmt.count(row.get("count"))])
    out = table(["Run", "Kind", "Region", "Time#", "Share#", "Count#"], rows, css="regions")
    if hidden:
        out.note = (f"{hidden} more ranges not shown (at most {limit} per run; nested operator calls are "
                    "parts of the top-level ones): the regions table of roofreport parse lists every one.")
    return out


def _listed_ranges(ranges: pl.DataFrame) -> pl.DataFrame:
    """The ranges a run's rows are drawn from, in `RANGE_KIND_ORDER` then longest first; nested
    operators and operators' self time are left to the tables (`roofreport parse`)."""
    known = pl.col("kind").is_in(RANGE_KIND_ORDER)
    rank = pl.col("kind").replace_strict(RANGE_KIND_ORDER, list(range(len(RANGE_KIND_ORDER))),
                                         default=len(RANGE_KIND_ORDER))
    nested_operator = (pl.col("kind") == "operator") & pl.col("region").str.contains("/")
    kept = ranges.filter(~nested_operator & (known | ~pl.col("kind").str.starts_with("operator")))
    return kept.with_columns(rank.alias("_rank")).sort(
        ["_rank", "time_ns", "region"], descending=[False, True, False], nulls_last=True).drop("_rank")


def _phase_runs(phases: pl.DataFrame, names: RunNames) -> tuple[list[str], list[str]]:
    """Runs whose kernel names tell the phase of at least PHASE_KNOWN of their kernel time, and the others."""
    if not phases.height:
        return [], []
    told = dict(phases.group_by("run").agg(pl.col("share").sum()).iter_rows())
    runs = names.order(told)
    return [r for r in runs if (told[r] or 0) >= PHASE_KNOWN], [r for r in runs if (told[r] or 0) < PHASE_KNOWN]


def _phases_table(phases: pl.DataFrame, runs: list[str], names: RunNames):
    from roofreport.analysis.regions import PHASE_NAMES

    order = [p for p in reversed(PHASE_NAMES)]          # forward, backward, optimizer
    shares = {(r["run"], r["region"]): r["share"] for r in phases.iter_rows(named=True) if r["share"]}
    return table([Column("Runs", width="46%")] + [Column(p, numeric=True, width="18%") for p in order],
                 grouped_rows(names, runs, order, shares),
                 caption="Phases where kernel names tell them (share of the run's kernel time, lowest to highest "
                         "over a row's runs; the rest has no phase in its name)", css="phases")


def grouped_rows(names: RunNames, runs: list[str], keys: list[str], shares: dict) -> list[list]:
    """One row per group of runs that differ only in their parameters (model, experiment, GPU):
    its title and, per key, the lowest to highest share of its runs ("–" where none has one)."""
    rows = []
    for group in names.groups(runs, max_columns=10_000, by_gpu=True):
        members = [run for run, _ in group.columns]
        title = group.title + (f" ({len(members)} runs)" if len(members) > 1 else "")
        rows.append([cell(title)] + [_share_range([shares[(run, k)] for run in members if (run, k) in shares])
                                     for k in keys])
    return rows


def utilization_section(stats: pl.DataFrame, window_stats: pl.DataFrame | None, samples: pl.DataFrame,
                        window: tuple[float, float] | None,
                        processes: pl.DataFrame, names: RunNames, binned: pl.DataFrame,
                        process_binned: pl.DataFrame) -> Section:
    """GPU utilization and power per run and GPU (`stats`, and `window_stats` over `window`),
    drawn from `binned` (`utilization.chart_series`), and the processes' memory (`processes`,
    drawn from `process_binned`: `utilization.chart_process_series`); `samples`: whether any
    was logged."""
    section = Section("utilization", "GPU utilization and power")
    if not samples.height or not (stats.height or processes.height):
        section.empty = EMPTY_UTIL
        return section
    snapshots = stats.filter(utilization.snapshot()) if stats.height else stats
    series = stats.filter(~utilization.snapshot()) if stats.height else stats
    if series.height:
        section.blocks.append(Paragraph.of(
            "GPU utilization (nvidia-smi's utilization.gpu, DCGM's GPUTL, tegrastats' GR3D) is the share of "
            "time at least one kernel was running, not how busy the SMs were: a one-thread kernel reads "
            f"100 %. Idle = samples below {utilization.IDLE_PCT:g} %."
            + (" DCGM's SM activity (SMACT) is the share of SM cycles with a warp resident, over all SMs: "
               "what the kernels kept busy." if series["sm_active_mean"].drop_nulls().len() else "")))
        section.blocks.append(_stats_table(series, "Whole series", names))
        if window_stats is not None:
            start, end = window
            label = f"Window {start:g} s to {'the end' if end == float('inf') else f'{end:g} s'}"
            window_series = (window_stats.filter(~utilization.snapshot()) if window_stats.height
                             else window_stats)
            section.blocks.append(_stats_table(window_series, label, names))
        means = {(r["run"], r["gpu_index"]): r["util_mean"]
                 for r in (window_stats if window_stats is not None else series).iter_rows(named=True)}
        section.blocks += _charts(binned, series, means, window, names)
    if snapshots.height:
        section.blocks.append(_snapshots_table(snapshots, names))
        if not series.height:
            count = snapshots["run"].n_unique()
            runs = _runs_text(count) + (" have" if count != 1 else " has")
            section.gaps.append(SNAPSHOT_ONLY.format(runs=runs))
    if processes.height:
        section.blocks += _process_blocks(process_binned, processes, names)
    return section


def _gpu_text(names: RunNames, row: dict) -> str:
    index = row.get("gpu_index")
    return f"{names.gpu(row['run'])}" + (f" #{index}" if index is not None else "")


def _stats_table(stats: pl.DataFrame, caption: str, names: RunNames):
    sm_active = stats["sm_active_mean"].drop_nulls().len() > 0
    rows = [[cell(names.label(r["run"])), _gpu_text(names, r), fmt.count(r.get("samples")),
             fmt.seconds(r.get("duration_s")),
             fmt.percent(r.get("util_mean")), fmt.percent(r.get("util_median")), fmt.percent(r.get("util_p95")),
             fmt.share(r.get("idle_fraction")), fmt.percent(r.get("mem_util_mean")),
             *([fmt.percent(r.get("sm_active_mean"))] if sm_active else []),
             _watts(r.get("power_mean_w")), _watts(r.get("power_max_w"))]
            for r in _ordered(stats, names)]
    return table(["Run", "GPU", "Samples#", "Duration#", "Util. mean#", "Median#", "p95#", "Idle#",
                  "Mem. util.#", *(["SM active#"] if sm_active else []), "Power mean#", "Power max#"],
                 rows, caption=caption, css="util")


def _snapshots_table(snapshots: pl.DataFrame, names: RunNames):
    rows = [[cell(names.label(r["run"])), _gpu_text(names, r), fmt.percent(r.get("util_mean")),
             fmt.percent(r.get("mem_util_mean")), _watts(r.get("power_mean_w"))]
            for r in _ordered(snapshots, names)]
    return table(["Run", "GPU", "Utilization#", "Mem. util.#", "Power#"], rows, css="util",
                 caption="One reading per GPU (an nvidia-smi snapshot): the GPU at that instant, "
                         "not over the run")


def _ordered(stats: pl.DataFrame, names: RunNames) -> list[dict]:
    rows = list(stats.iter_rows(named=True))
    return sorted(rows, key=lambda r: (names.sort_key(r["run"]), r.get("gpu_index") is None,
                                       r.get("gpu_index") or 0))


def _process_blocks(binned: pl.DataFrame, processes: pl.DataFrame, names: RunNames) -> list:
    """The processes' GPU memory: a table (largest users first) and its series per GPU."""
    from roofreport.report.charts.utilization import MAX_PROCESSES

    rows = [[cell(names.label(r["run"])), _gpu_text(names, r),
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
    return blocks + _process_charts(binned, processes, names)


def _mib(value) -> str:
    return "–" if value is None else f"{value:,.0f} MiB"


def _process_charts(binned: pl.DataFrame, processes: pl.DataFrame, names: RunNames) -> list:
    """One panel per run and GPU whose processes were seen over some time, a line per process
    (at most MAX_PROCESSES, the largest users first), as the analysis binned them."""
    from roofreport.report.charts.utilization import (
        MAX_PROCESSES,
        PANELS_PER_CHART,
        ProcessLine,
        ProcessPanel,
        process_memory_svg,
    )

    panels, panel_runs = [], []
    for (run, gpu), mine in processes.group_by("run", "gpu_index", maintain_order=True):
        series = binned.filter((pl.col("run") == run) & pl.col("gpu_index").eq_missing(gpu))
        if not series.height:      # its processes seen at one instant: no line to draw
            continue
        lines = []
        for row in mine.head(MAX_PROCESSES).iter_rows(named=True):
            points = series.filter(pl.col("gpu_index").eq_missing(gpu) & (pl.col("pid") == row["pid"]))
            lines.append(ProcessLine(f"pid {row['pid']} {row.get('process_name') or ''}".strip(),
                                     points["t_s"].to_list(), points["process_mem_mib"].to_list()))
        panels.append(ProcessPanel(_panel_title(names, run, gpu), lines))
        panel_runs.append(run)
    blocks = []
    for start in range(0, len(panels), PANELS_PER_CHART):
        chunk = panels[start:start + PANELS_PER_CHART]
        runs = list(dict.fromkeys(names.label(r) for r in panel_runs[start:start + PANELS_PER_CHART]))
        blocks.append(chart(f"procmem{start // PANELS_PER_CHART + 1}",
                            "GPU memory per process over time: " + "; ".join(runs), process_memory_svg, chunk))
    return blocks


def _panel_title(names: RunNames, run: str, gpu) -> str:
    return f"{names.label(run)} · GPU #{gpu}" if gpu is not None else names.label(run)


def _watts(watts) -> str:
    return "–" if watts is None else f"{watts:.0f} W"


def _run_series(frame: pl.DataFrame, run: str, means: dict, names: RunNames) -> list:
    """One GpuSeries per GPU of a run (at most MAX_PANELS), from its binned series."""
    from roofreport.report.charts.utilization import MAX_PANELS, GpuSeries

    series = []
    for gpu in frame["gpu_index"].unique(maintain_order=True).to_list()[:MAX_PANELS]:
        mine = frame.filter(pl.col("gpu_index").eq_missing(gpu))
        if mine.height < 2:        # one reading of this GPU: no line to draw
            continue
        series.append(GpuSeries(_panel_title(names, run, gpu), mine["t_s"].to_list(),
                                mine["util_gpu_pct"].to_list(),
                                mine["util_mem_pct"].to_list(), mine["power_w"].to_list(),
                                means.get((run, gpu)), mine["sm_active_pct"].to_list()))
    return series


def _charts(binned: pl.DataFrame, stats: pl.DataFrame, means: dict, window, names: RunNames) -> list:
    """The time series of every run and GPU, PANELS_PER_CHART panels per figure."""
    from roofreport.report.charts.utilization import PANELS_PER_CHART, utilization_svg

    series, series_runs = [], []
    for run in names.order(stats["run"].to_list()):   # runs with a series of GPU samples
        mine = _run_series(binned.filter(pl.col("run") == run), run, means, names)
        series += mine
        series_runs += [run] * len(mine)
    blocks: list = []
    for start in range(0, len(series), PANELS_PER_CHART):
        chunk = series[start:start + PANELS_PER_CHART]
        chart_id = f"util{start // PANELS_PER_CHART + 1}"
        runs = list(dict.fromkeys(names.label(r) for r in series_runs[start:start + PANELS_PER_CHART]))
        caption = "GPU utilization and power over time: " + "; ".join(runs)
        blocks.append(chart(chart_id, caption, utilization_svg, chunk, window))
    return blocks


def api_section(api: pl.DataFrame, names: RunNames | None = None) -> Section:
    """The calls with the most host time over all runs side by side, one row per group of runs
    that differ only in their parameters (a group of several runs shows the range of its runs)."""
    section = Section("api", "CUDA API calls")
    names = names or RunNames()
    if not api.height:
        section.empty = EMPTY_API
        return section
    weight = api.group_by("name").agg(pl.col("share").sum().alias("total_share"), pl.col("total_ns").sum())
    calls = weight.sort(["total_share", "total_ns", "name"], descending=[True, True, False])["name"] \
        .head(API_COLUMNS).to_list()
    section.blocks.append(Paragraph.of(
        "Host-side CUDA runtime/driver calls: the share of each run's API time in the calls that take the most "
        "of it across runs (a row of several runs gives their lowest to highest share). Long cudaMemcpy or "
        "cudaDeviceSynchronize times usually mean the host waited for the GPU; long cudaMalloc/cudaFree times "
        "mean allocation churn; a long first call (cuDeviceGetAttribute, cudaGetDeviceProperties) is the CUDA "
        "context starting."))
    shares: dict[tuple[str, str], float] = {}
    for call in api.filter(pl.col("name").is_in(calls)).iter_rows(named=True):
        shares.setdefault((call["run"], call["name"]), call["share"])
    largest = api.sort("total_ns", descending=True, nulls_last=True).group_by("run", maintain_order=True) \
        .first()
    lead = dict(largest.select("run", "name").iter_rows())
    runs = api["run"].unique().to_list()
    rows = grouped_rows(names, runs, calls, shares)
    for row, group in zip(rows, names.groups(runs, max_columns=10_000, by_gpu=True)):
        others = sorted({lead[run] for run, _ in group.columns} - set(calls))
        row.append(cell(", ".join(others) or "–", code=bool(others)))
    # the runs' names on one line where they can (a group's label and its run count), the call
    # columns as narrow as their "12.3–45.6 %" allows
    call_width = (100 - 34 - 10) / len(calls)
    cols = ([Column("Runs", width="34%")]
            + [Column(c, numeric=True, width=f"{call_width:.1f}%") for c in calls]
            + [Column("Largest other call", width="10%")])
    section.blocks.append(table(cols, rows, css="api", caption="Share of each run's CUDA API time"))
    return section


def _share_range(values: list[float]) -> str:
    if not values:
        return "–"
    low, high = fmt.share(min(values)), fmt.share(max(values))
    if low == high:
        return low
    return f"{low.removesuffix(' %').replace('< ', '<')}–{high}"     # "12.3–45.6 %", "<0.1–5.0 %"
