"""Where the time goes, drawn: stacked bars of kernel-time share by category per run, and
share against batch size for sweeps (one panel per GPU).

Categories keep one colour across every chart of the report (`category_colour`).
"""

from __future__ import annotations

from dataclasses import dataclass

from roofreport.report.charts import svg as charts

# Okabe-Ito for the seven most common categories, then Paul Tol "muted" tones; grey = other.
_CATEGORY_COLOURS = {
    "conv": "#0072B2", "gemm": "#E69F00", "attention": "#009E73", "elementwise": "#D55E00",
    "reduction": "#CC79A7", "normalization": "#56B4E9", "pooling": "#F0E442",
    "communication": "#332288", "memcpy": "#882255", "memset": "#999933", "optimizer": "#44AA99",
    "fft": "#117733", "softmax/loss": "#AA4499",
    "other": "#BBBBBB",
}
_EXTRA = ["#DDCC77", "#88CCEE", "#CC6677", "#661100"]
RUNS_PER_CHART = 50
BAR_IN = 0.135          # inches per run (9.7 pt): a 7.5 pt label fits beside each bar


def category_colour(category: str, order: list[str]) -> str:
    if category in _CATEGORY_COLOURS:
        return _CATEGORY_COLOURS[category]
    extra = [c for c in order if c not in _CATEGORY_COLOURS]
    return _EXTRA[extra.index(category) % len(_EXTRA)] if category in extra else "#BBBBBB"


def share_bars_svg(chart_id: str, rows: list[str], bars: list[dict[str, float] | None],
                   categories: list[str]) -> str:
    """Horizontal 100 % bars, one per row (top to bottom), one segment per category; a row
    whose bar is None is a group's heading (bold, no bar)."""
    parts = [("uncategorized" if category == "other" else charts.label(category, 24),
              category_colour(category, categories),
              [100 * (bar or {}).get(category, 0.0) for bar in bars]) for category in categories]
    headings = {index for index, bar in enumerate(bars) if bar is None}
    return stacked_percent_bars(chart_id, rows, parts,
                                "Share of the run's steady-state GPU time: kernels, and transfers when logged (%)",
                                headings)


def stacked_percent_bars(chart_id: str, runs: list[str], parts: list[tuple[str, str, list[float]]],
                         xlabel: str, headings: set[int] = frozenset()) -> str:
    """Horizontal bars from 0 to 100 %, one per run (top to bottom in `runs` order), stacked
    from `parts`: (legend label, colour, the width of its segment in each run's bar). Rows in
    `headings` are group headings: their label in bold, no bar."""
    from matplotlib.patches import Patch

    height = 0.8 + BAR_IN * len(runs) + 0.2 * ((len(parts) + 5) // 6)
    fig, ax = charts.figure(7.0, height)
    rows_y = list(range(len(runs)))[::-1]
    left = [0.0] * len(runs)
    handles, labels = [], []
    for label, colour, widths in parts:
        ax.add_patch(_segments(left, rows_y, widths, colour))
        left = [a + b for a, b in zip(left, widths)]
        handles.append(Patch(facecolor=colour, edgecolor="white", linewidth=0.4))
        labels.append(label)
    # A group's heading is written across the bars' area, above its runs, so the runs' labels
    # (what varies in the group) stay short and the bars wide.
    ax.set_yticks(rows_y, ["" if index in headings else charts.label(r, 80) for index, r in enumerate(runs)])
    for index in headings:
        ax.text(0.5, rows_y[index], charts.label(runs[index], 110), fontweight="bold", fontsize=7,
                ha="left", va="center", color=charts.INK)
    ax.tick_params(axis="y", length=0)
    ax.set_xlim(0, 100)
    ax.set_ylim(-0.6, len(runs) - 0.4)
    ax.set_xlabel(xlabel)
    ax.grid(axis="y", visible=False)
    charts.fit_left_labels(fig, ax)
    _legend_above(ax, handles, labels)
    return charts.to_svg(fig, chart_id)


def _segments(left: list[float], rows_y: list[int], widths: list[float], colour: str, height: float = 0.72):
    """One category's segments of every bar as a single compound path: one SVG element per
    category instead of one per run (a PDF renderer draws each element on its own)."""
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path

    rectangles = [Path([(x0, y0 - height / 2), (x0 + w, y0 - height / 2), (x0 + w, y0 + height / 2),
                        (x0, y0 + height / 2), (x0, y0 - height / 2)], closed=True)
                  for x0, y0, w in zip(left, rows_y, widths) if w > 0]
    path = Path.make_compound_path(*rectangles) if rectangles else Path([(0, 0)])
    return PathPatch(path, facecolor=colour, edgecolor="white", linewidth=0.4)


def _legend_above(ax, handles, labels) -> None:
    """Above the bars: the distance stays the same whatever the number of runs."""
    rows = -(-len(handles) // 7)
    ncol = -(-len(handles) // rows)          # balanced rows: 8 entries -> 4 + 4, not 7 + 1
    handles, labels = charts.row_major(handles, labels, ncol)
    ax.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=ncol,
              frameon=False, handlelength=1.2, columnspacing=1.0, borderaxespad=0.3)


@dataclass(frozen=True)
class SweepLine:
    gpu: str
    model: str
    label: str                # a category, or a kernel-name pattern's label
    batch_sizes: list[int]
    shares: list[float]       # 0..1
    colour: str
    dashed: bool = False      # kernel-name patterns dashed, categories solid


def sweep_svg(chart_id: str, lines: list[SweepLine]) -> str:
    """Share (%) against batch size: a grid of panels (rows = models, columns = GPUs)."""
    gpus = list(dict.fromkeys(l.gpu for l in lines))
    models = list(dict.fromkeys(l.model for l in lines))
    fig, axes = charts.figure(7.0, 0.9 + 1.45 * len(models), nrows=len(models), ncols=len(gpus),
                              sharex=True, sharey=True, squeeze=False)
    for row, model in enumerate(models):
        for col, gpu in enumerate(gpus):
            _sweep_panel(axes[row][col], [l for l in lines if l.gpu == gpu and l.model == model])
            axes[row][col].set_title(charts.label(f"{gpu} · {model}", 50), fontsize=8)
        axes[row][0].set_ylabel("Share of GPU time (%)")
    for col in range(len(gpus)):
        axes[-1][col].set_xlabel("Batch size")
    axes[0][0].set_ylim(bottom=0)
    handles, labels = _sweep_legend(lines)
    fig.tight_layout()
    ncol = min(4, len(handles))
    handles, labels = charts.row_major(handles, labels, ncol)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol,
               frameon=False, handlelength=2.4)
    return charts.to_svg(fig, chart_id)


def _sweep_panel(ax, lines: list[SweepLine]) -> None:
    for line in lines:
        ax.plot(line.batch_sizes, [100 * s for s in line.shares], color=line.colour, marker="o",
                markersize=3.5, linewidth=1.3, linestyle="--" if line.dashed else "-")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(_int_ticks())
    ax.xaxis.set_minor_formatter(_blank_ticks())


def _sweep_legend(lines: list[SweepLine]):
    from matplotlib.lines import Line2D

    seen = {}
    for line in lines:
        seen.setdefault(line.label, line)
    handles = [Line2D([], [], color=l.colour, marker="o", markersize=3.5, linestyle="--" if l.dashed else "-")
               for l in seen.values()]
    return handles, [charts.label(label, 40) for label in seen]


def _int_ticks():
    from matplotlib.ticker import FuncFormatter
    return FuncFormatter(lambda v, _pos: f"{v:g}")


def _blank_ticks():
    from matplotlib.ticker import NullFormatter
    return NullFormatter()
