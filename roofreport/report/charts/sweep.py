"""Sweeps drawn: time and throughput along a parameter (`time_sweep_svg`: one line per series,
a model on a GPU; the time on the left, the samples per second on the right), and each kernel
category's share of GPU time along it (`share_sweep_svg`: small multiples, one panel per model,
GPU and configuration, one line per category). Points are in the order of the swept value.

A numeric parameter is drawn on its own scale (doubling batch sizes on a log2 axis); a word
(an optimizer) by rank, its names as ticks. Colour = model (time) or category (share), marker
and dash = GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofreport.report import fmt
from roofreport.report.charts import svg as charts

_GPU_STYLES = [("o", "-"), ("s", "--"), ("^", ":"), ("D", "-."), ("v", (0, (3, 1, 1, 1)))]


@dataclass(frozen=True)
class SweepSeries:
    model: str
    gpu: str
    swept: list[float]                # the swept values, or ranks for words
    time_ns: list[float]
    samples_per_s: list[float | None]


def time_sweep_svg(chart_id: str, param: str, ticks: list[str] | None, time_label: str,
                   series: list[SweepSeries]) -> str:
    """`ticks`: names of the ranks 1..n for a parameter of words, None for numbers."""
    throughput = any(v for s in series for v in s.samples_per_s)
    fig, axes = charts.figure(7.0, 1.9, ncols=2 if throughput else 1, squeeze=False)
    models = list(dict.fromkeys(s.model for s in series))
    gpus = list(dict.fromkeys(s.gpu for s in series))
    handles, labels = [], []
    for one in series:
        marker, dash = _GPU_STYLES[gpus.index(one.gpu) % len(_GPU_STYLES)]
        style = {"color": charts.colour(models.index(one.model)), "marker": marker, "linestyle": dash,
                 "markersize": 3.5, "linewidth": 1.3}
        (line,) = axes[0][0].plot(one.swept, one.time_ns, **style)
        if throughput:
            points = [(x, v) for x, v in zip(one.swept, one.samples_per_s) if v]
            axes[0][1].plot([p[0] for p in points], [p[1] for p in points], **style)
        handles.append(line)
        labels.append(charts.label(f"{one.model} · {one.gpu}", 64))
    _time_axis(axes[0][0], series, time_label)
    if throughput:
        axes[0][1].set_ylabel("Samples per second")
        axes[0][1].yaxis.set_major_formatter(charts.si_ticks())
        axes[0][1].set_ylim(bottom=0)
    for ax in axes[0]:
        _x_axis(ax, param, ticks, [x for s in series for x in s.swept])
    fig.tight_layout()
    widest = max((len(text) for text in labels), default=0)     # each entry on one line
    ncol = min(4 if widest <= 28 else 3 if widest <= 38 else 2 if widest <= 60 else 1, len(handles))
    handles, labels = charts.row_major(handles, labels, ncol)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol, frameon=False,
               handlelength=2.4)
    return charts.to_svg(fig, chart_id)


def _time_axis(ax, series: list[SweepSeries], label: str) -> None:
    values = [v for s in series for v in s.time_ns if v]
    if values and max(values) / min(values) > 20:
        ax.set_yscale("log")
    ax.set_ylabel(label)
    from matplotlib.ticker import FuncFormatter
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt.duration(v) if v > 0 else "0"))


def _x_axis(ax, param: str, ticks: list[str] | None, xs: list[float]) -> None:
    from matplotlib.ticker import FuncFormatter, NullFormatter

    if param:
        ax.set_xlabel(charts.label(param.replace("_", " "), 40))
    if ticks is not None:
        ax.set_xticks(range(1, len(ticks) + 1), [charts.label(t, 14) for t in ticks])
        ax.set_xlim(0.5, len(ticks) + 0.5)
        return
    positive = [x for x in xs if x and x > 0]
    whole = all(float(x).is_integer() for x in xs)
    if positive and len(positive) == len(xs) and max(positive) / min(positive) >= (2 if whole else 4):
        ax.set_xscale("log", base=2 if whole else 10)
        ax.xaxis.set_minor_formatter(NullFormatter())
    if whole and len(set(xs)) <= 8:
        ax.set_xticks(sorted(set(xs)))   # the swept values themselves: 4 8 16 32 64, or 32 64
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))


def _wrapped(title: str, width: int) -> list[str]:
    """A panel title's lines, each at most `width` characters, broken between its " · " parts
    (a part longer than a line is cut): no name is lost to a cut at the panel's edge."""
    lines: list[str] = []
    for given in title.split("\n"):
        line = ""
        for part in given.split(" · "):
            joined = f"{line} · {part}" if line else part
            if len(joined) <= width or not line:
                line = joined
            else:
                lines.append(line)
                line = part
        lines.append(charts.label(line, width))
    return lines


@dataclass(frozen=True)
class SharePanel:
    title: str                              # "alexnet · K80 · full"
    swept: list[float]                      # batch sizes (or other swept values), sorted
    shares: dict[str, list[float]]          # category -> share (0..1) at each swept value


def share_sweep_svg(chart_id: str, panels: list[SharePanel], colours: dict[str, str], param: str) -> str:
    """Small multiples, three a row: each category's share of GPU time along the sweep, one line
    per category, the same colours as every other chart of the report."""
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = charts.figure(7.0, 0.4 + 1.6 * rows, nrows=rows, ncols=cols, squeeze=False, sharey=True)
    for index, panel in enumerate(panels):
        ax = axes[index // cols][index % cols]
        for category, shares in panel.shares.items():
            ax.plot(panel.swept, [100 * s for s in shares], color=colours[category], marker="o",
                    markersize=2.5, linewidth=1.1)
        ax.set_title("\n".join(_wrapped(panel.title, 40)), fontsize=7)
        _x_axis(ax, param if index // cols == rows - 1 else "", None, panel.swept)
        if index % cols == 0:
            ax.set_ylabel("Share of GPU time (%)", fontsize=7)
    for spare in range(len(panels), rows * cols):
        axes[spare // cols][spare % cols].set_visible(False)
    axes[0][0].set_ylim(0, 100)
    fig.tight_layout(h_pad=0.6, w_pad=0.4)
    from matplotlib.lines import Line2D

    used = list(dict.fromkeys(c for p in panels for c in p.shares))
    handles = [Line2D([], [], color=colours[c], marker="o", markersize=3) for c in used]
    ncol = min(6, len(handles))
    handles, labels = charts.row_major(handles, [charts.label(c, 24) for c in used], ncol)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol, frameon=False,
               handlelength=1.8)
    return charts.to_svg(fig, chart_id)
