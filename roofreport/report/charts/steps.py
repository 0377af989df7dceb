"""Where a training step's time goes, drawn: one 100 % bar per run, split into compute,
communication, memory copies and the GPU's idle time by cause (`analysis.steps.step_summary`).
Busy parts take the kernel categories' colours; idle parts are greys and a pale orange, so the
idle share reads as one block.
"""

from __future__ import annotations

from roofreport.report.charts import svg as charts

# (summary column, legend label, colour)
PARTS = [
    ("compute_pct", "compute", "#0072B2"),
    ("communication_pct", "communication (NCCL)", "#332288"),
    ("memory_pct", "memcpy / memset", "#882255"),
    ("idle_launch_pct", "idle: waiting for launches", "#E69F00"),
    ("idle_sync_pct", "idle: synchronisation", "#999999"),
    ("idle_dataloader_pct", "idle: data loader", "#CC79A7"),
    ("idle_other_pct", "idle: other", "#DDDDDD"),
]
BAR_IN = 0.22


def step_bars_svg(chart_id: str, runs: list[str], shares: dict[str, dict[str, float]]) -> str:
    """Horizontal bars, one per run (top to bottom in `runs` order); `shares[run][column]` in %."""
    from matplotlib.patches import Patch

    fig, ax = charts.figure(7.0, 1.0 + BAR_IN * len(runs))
    rows_y = list(range(len(runs)))[::-1]
    left = [0.0] * len(runs)
    handles, labels = [], []
    for column, text, colour in PARTS:
        widths = [shares.get(run, {}).get(column) or 0.0 for run in runs]
        if not any(widths):
            continue
        ax.barh(rows_y, widths, left=left, height=0.7, color=colour, edgecolor="white", linewidth=0.4)
        left = [a + b for a, b in zip(left, widths)]
        handles.append(Patch(facecolor=colour, edgecolor="white", linewidth=0.4))
        labels.append(text)
    ax.set_yticks(rows_y, [charts.label(run, 60) for run in runs])
    ax.tick_params(axis="y", length=0)
    ax.set_xlim(0, 100)
    ax.set_ylim(-0.6, len(runs) - 0.4)
    ax.set_xlabel("Share of the training steps' wall time, outliers left out (%)")
    ax.grid(axis="y", visible=False)
    charts.fit_left_labels(fig, ax)
    ncol = min(4, len(handles)) or 1
    ax.legend(*charts.row_major(handles, labels, ncol), loc="lower center", bbox_to_anchor=(0.5, 1.0),
              ncol=ncol, frameon=False, handlelength=1.2, columnspacing=1.0, borderaxespad=0.3)
    return charts.to_svg(fig, chart_id)
