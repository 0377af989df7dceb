"""Utilization over time: one panel per GPU, GPU and memory utilization and DCGM's SM activity
(%) on the left axis, power (W) on the right, the chosen window shaded and its mean drawn as a
dashed line; and GPU memory per process over time, one panel per GPU, a line per process.

Series arrive already aggregated to a few hundred points (the analysis bins long captures:
`analysis.utilization.SERIES_POINTS`), so
a chart never carries millions of points.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from roofreport.report.charts import svg as charts

MAX_PANELS = 8          # GPUs drawn per run
PANELS_PER_CHART = 4
MAX_PROCESSES = 6       # lines per process panel: the largest users of memory


@dataclass(frozen=True)
class GpuSeries:
    title: str
    elapsed_s: list[float]
    util_gpu: list[float | None]
    util_mem: list[float | None]
    power_w: list[float | None]
    window_mean: float | None = None
    sm_active: list[float | None] = field(default_factory=list)


@dataclass(frozen=True)
class ProcessLine:
    label: str               # `pid 41233 python`
    elapsed_s: list[float]
    memory_mib: list[float | None]


@dataclass(frozen=True)
class ProcessPanel:
    title: str
    lines: list[ProcessLine]


def utilization_svg(chart_id: str, series: list[GpuSeries], window: tuple[float, float] | None) -> str:
    fig, axes = charts.figure(7.0, 0.6 + 1.65 * len(series), nrows=len(series), squeeze=False)
    minutes = max((s.elapsed_s[-1] for s in series if s.elapsed_s), default=0) > 600
    scale = 60.0 if minutes else 1.0
    for ax, gpu_series in zip(axes[:, 0], series):
        _panel(ax, gpu_series, scale, window)
    axes[-1, 0].set_xlabel(f"Time since the first sample ({'min' if minutes else 's'})")
    handles, labels = _legend(any(_has(s.util_mem) for s in series), any(_has(s.power_w) for s in series),
                              window is not None, any(_has(s.sm_active) for s in series),
                              util=any(_has(s.util_gpu) for s in series),
                              mean=any(s.window_mean is not None for s in series))
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(handles), frameon=False)
    fig.tight_layout()
    return charts.to_svg(fig, chart_id)


def _has(values) -> bool:
    return any(v is not None for v in values)


def _panel(ax, gpu_series: GpuSeries, scale: float, window) -> None:
    times = [t / scale for t in gpu_series.elapsed_s]
    ax.plot(times, _nan(gpu_series.util_gpu), color=charts.PALETTE[0], linewidth=0.9)
    if _has(gpu_series.util_mem):
        ax.plot(times, _nan(gpu_series.util_mem), color=charts.PALETTE[2], linewidth=0.8, alpha=0.9)
    if _has(gpu_series.sm_active):
        ax.plot(times, _nan(gpu_series.sm_active), color=charts.PALETTE[4], linewidth=0.8, alpha=0.9)
    ax.set_ylim(0, 105)
    logged = _has(gpu_series.util_gpu) or _has(gpu_series.util_mem) or _has(gpu_series.sm_active)
    ax.set_ylabel("Util. (%)" if logged else "Util. (%): not logged")
    ax.set_title(charts.label(gpu_series.title, 80), loc="left", fontsize=8)
    if window is not None:
        end = min(window[1], gpu_series.elapsed_s[-1] if gpu_series.elapsed_s else window[1])
        ax.axvspan(window[0] / scale, end / scale, color="#E69F00", alpha=0.12, linewidth=0)
    if gpu_series.window_mean is not None:
        ax.axhline(gpu_series.window_mean, color=charts.PALETTE[0], linestyle="--", linewidth=0.8)
    if _has(gpu_series.power_w):
        power = ax.twinx()
        power.plot(times, _nan(gpu_series.power_w), color=charts.PALETTE[3], linewidth=0.8, alpha=0.9)
        power.set_ylabel("Power (W)", color=charts.PALETTE[3])
        power.set_ylim(bottom=0)
        power.grid(False)


def _nan(values):
    return [float("nan") if v is None else v for v in values]


def _legend(memory: bool, power: bool, window: bool, sm_active: bool = False, util: bool = True,
            mean: bool = True):
    """Entries for the lines some panel draws (a log of power alone has no utilization line)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles, labels = [], []
    if util:
        handles.append(Line2D([], [], color=charts.PALETTE[0]))
        labels.append("GPU utilization")
    if util and mean:
        handles.append(Line2D([], [], color=charts.PALETTE[0], linestyle="--"))
        labels.append("mean GPU util. (window)" if window else "mean GPU util.")
    if memory:
        handles.append(Line2D([], [], color=charts.PALETTE[2]))
        labels.append("memory utilization")
    if sm_active:
        handles.append(Line2D([], [], color=charts.PALETTE[4]))
        labels.append("SM activity (DCGM)")
    if power:
        handles.append(Line2D([], [], color=charts.PALETTE[3]))
        labels.append("power draw")
    if window:
        handles.append(Patch(color="#E69F00", alpha=0.25))
        labels.append("window")
    return handles, labels


def process_memory_svg(chart_id: str, panels: list[ProcessPanel]) -> str:
    """GPU memory of each process over time, one panel per GPU."""
    fig, axes = charts.figure(7.0, 0.6 + 1.65 * len(panels), nrows=len(panels), squeeze=False)
    last = max((t for p in panels for line in p.lines for t in line.elapsed_s[-1:]), default=0)
    scale = 60.0 if last > 600 else 1.0
    for ax, panel in zip(axes[:, 0], panels):
        for index, line in enumerate(panel.lines):
            ax.plot([t / scale for t in line.elapsed_s], _nan(line.memory_mib), linewidth=0.9,
                    color=charts.PALETTE[index % len(charts.PALETTE)], label=charts.label(line.label, 40))
        ax.set_ylim(bottom=0)
        ax.set_ylabel("Memory (MiB)")
        ax.set_title(charts.label(panel.title, 80), loc="left", fontsize=8)
        ax.legend(loc="best", fontsize=6, framealpha=0.8, ncol=2)
    axes[-1, 0].set_xlabel(f"Time since the first sample ({'min' if scale > 1 else 's'})")
    fig.tight_layout()
    return charts.to_svg(fig, chart_id)
