"""Where a training step's time goes, drawn: one 100 % bar per run, split into compute,
communication, memory copies and the GPU's idle time by cause (`analysis.steps.step_summary`).
Busy parts take the kernel categories' colours; idle parts are greys and a pale orange, so the
idle share reads as one block.
"""

from __future__ import annotations

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


def step_bars_svg(chart_id: str, runs: list[str], shares: dict[str, dict[str, float]]) -> str:
    """Horizontal bars, one per run (top to bottom in `runs` order); `shares[run][column]` in %."""
    from roofreport.report.charts.share import stacked_percent_bars

    parts = [(text, colour, [shares.get(run, {}).get(column) or 0.0 for run in runs])
             for column, text, colour in PARTS]
    return stacked_percent_bars(chart_id, runs, [part for part in parts if any(part[2])],
                                "Share of the training steps' wall time, outliers left out (%)")
