"""The roofline figure of one GPU: log-log ceilings with labels, runs and top kernels as points.

Ceilings come from `model.roofline.ceilings` (label, kind, value, level); points from the
roofline frames, turned into `RoofPoint`s by the report builder. Colour = run (legend below
the axes so it never covers a point), size = run total vs kernel, marker = precision, a red
ring = a point above its roof (a counting error, not a fast kernel), a "≥" = a lower bound (its
FLOPs miss tensor-core work: the true point lies higher and to the right, never a plain point).
A series of runs that differ only in input size (`Analysis.size_series`) is one colour, each run's
total drawn with an area growing with the log of its size (`_SizeScale`), the smallest and the
largest size keyed in the legend with their markers.

Each point's group carries its data (`marks.with_marks`): the run, what the point is, its
intensity, FLOP/s and time as the frames give them, formatted by `fmt` like the tables; the
rings and lines that belong to a run carry the run only. The interactive HTML shows them on
hover and hides a run's marks when its box is unticked; the static PDF draws the same SVG.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from roofreport.report import fmt
from roofreport.report.charts import svg as charts
from roofreport.report.charts.marks import with_marks

PRECISION_MARKERS = {"fp32": "o", "fp64": "s", "fp16": "^", "tensor": "D", "tensor_fp16": "D",
                     "tensor_tf32": "D", "tensor_bf16": "D", "tensor_fp64": "D", "tensor_fp32": "D"}
_MEMORY_STYLES = ["-", "--", ":", "-."]


@dataclass(frozen=True)
class RoofPoint:
    group: str            # the run: one colour per run
    label: str            # what the point is: a kernel's short name, "run total"
    ai: float             # FLOP/byte
    perf: float           # FLOP/s
    precision: str
    kernel: bool = False  # a kernel (small marker) or a run total (large)
    above_roof: bool = False
    level: str = "dram"   # the memory level of `ai`: "l2"/"l1" points are drawn hollow
    lower_bound: bool = False   # FLOPs miss tensor-core work: drawn as "≥", never as a plain point
    time_ns: float | None = None   # the time the FLOP/s are over
    size: float | None = None      # the run's input size where `group` is a series of sizes
    size_label: str | None = None  # how it reads: "size 64" (the hover's "input")


def roofline_svg(chart_id: str, ceilings: list, points: list[RoofPoint]) -> str:
    compute = _merged([c for c in ceilings if c.kind == "compute" and c.value])
    memory = _merged([c for c in ceilings if c.kind == "memory" and c.value])
    points = [p for p in points if _positive(p.ai) and _positive(p.perf)]
    fig, ax = charts.figure(7.0, 4.3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.minorticks_off()     # decades are gridded; minor ticks only cost drawing time
    xlim, ylim = _limits(compute, memory, points)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    _draw_memory(ax, memory, compute, xlim)
    _draw_compute(ax, compute, memory, xlim, ylim)
    marks: dict[str, dict[str, str]] = {}
    handles, labels = _draw_points(ax, points, marks, _SizeScale.of(points))
    ax.set_xlabel("Arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("Performance (FLOP/s)")
    ax.xaxis.set_major_formatter(charts.plain_ticks())
    ax.yaxis.set_major_formatter(charts.si_ticks())
    widest = max((len(text) for text in labels), default=0)      # long run labels: fewer columns
    charts.legend_below(ax, handles, labels, max_cols=3 if widest <= 30 else 2 if widest <= 46 else 1)
    return with_marks(charts.to_svg(fig, chart_id), chart_id, marks)


def _mark(marks: dict, artist, point: RoofPoint, colours: dict, data: bool = True) -> None:
    """Give `artist` a gid and the marks of `point` (`data`: the hover text too, else the run only)."""
    gid = f"pt{len(marks)}"
    artist.set_gid(gid)
    marks[gid] = {"data-run": point.group}
    if data:
        marks[gid].update({"class": "point", "data-colour": colours[point.group],
                           "data-series": str(list(colours).index(point.group)), "data-name": point.label,
                           "data-ai": _at_least(fmt.intensity(point.ai), point),
                           "data-perf": _at_least(fmt.rate(point.perf), point),
                           "data-time": fmt.duration(point.time_ns), "tabindex": "0"})
        if point.size_label:
            marks[gid]["data-input"] = point.size_label


def _at_least(text: str, point: RoofPoint) -> str:
    """A lower bound's intensity and FLOP/s on hover: "≥ 1.2 FLOP/B"."""
    return f"≥ {text}" if point.lower_bound and text != fmt.MISSING else text


@dataclass(frozen=True)
class _Line:
    label: str
    value: float


def _merged(ceilings) -> list[_Line]:
    """Ceilings of (nearly) equal value drawn once, labels joined: "FP16 tensor / BF16 tensor"."""
    lines: list[_Line] = []
    for ceiling in sorted(ceilings, key=lambda c: -c.value):
        if lines and abs(lines[-1].value - ceiling.value) <= 0.01 * ceiling.value:
            lines[-1] = _Line(f"{lines[-1].label} / {ceiling.label}", lines[-1].value)
        else:
            lines.append(_Line(ceiling.label, ceiling.value))
    return lines


def _positive(value) -> bool:
    return value is not None and math.isfinite(value) and value > 0


def _limits(compute, memory, points) -> tuple[tuple[float, float], tuple[float, float]]:
    top = compute[0].value if compute else max((p.perf for p in points), default=1e12)
    ridges = [c.value / m.value for c in compute for m in memory]
    xs = [p.ai for p in points] + ridges
    x_lo, x_hi = charts.nice_log_limits(xs or [0.1, 100], pad=3.0)
    x_lo, x_hi = min(x_lo, 0.01), max(x_hi, 100.0)
    ys = [p.perf for p in points] + [top] + [m.value * x_lo for m in memory]
    y_lo, _ = charts.nice_log_limits(ys, pad=2.0)
    y_lo = max(y_lo, top / 1e7)
    return (x_lo, x_hi), (y_lo, 10 ** math.ceil(math.log10(top * 2.5)))


def _draw_memory(ax, memory, compute, xlim) -> None:
    top = compute[0].value if compute else None
    for index, ceiling in enumerate(memory):
        x_end = top / ceiling.value if top else xlim[1]
        xs = [xlim[0], min(x_end, xlim[1])]
        ys = [ceiling.value * x for x in xs]
        ax.plot(xs, ys, color=charts.INK, linestyle=_MEMORY_STYLES[index % 4], linewidth=1.1, zorder=2)
        _slanted_label(ax, xs, ys, f"{ceiling.label} {_bw(ceiling.value)}", index)


def _slanted_label(ax, xs, ys, text, index) -> None:
    """Write `text` along a bandwidth line, a little above it, near its left end."""
    ylim = ax.get_ylim()
    # Walk right from the left edge until the label's anchor is inside the axes.
    frac = 0.08 + 0.1 * index
    label_x = 10 ** (math.log10(xs[0]) + frac * (math.log10(xs[1]) - math.log10(xs[0])))
    label_y = ys[0] * label_x / xs[0]
    while label_y < ylim[0] * 1.5 and label_x < xs[1]:
        label_x *= 1.5
        label_y = ys[0] * label_x / xs[0]
    p0 = ax.transData.transform((xs[0], ys[0]))
    p1 = ax.transData.transform((xs[1], ys[1]))
    angle = math.degrees(math.atan2(p1[1] - p0[1], p1[0] - p0[0]))
    ax.annotate(charts.label(text, 60), (label_x, label_y), xytext=(0, 3), textcoords="offset points",
                rotation=angle, rotation_mode="anchor", fontsize=7, color=charts.INK,
                ha="left", va="bottom", zorder=3, bbox=charts.LABEL_BOX)


def _draw_compute(ax, compute, memory, xlim, ylim) -> None:
    """Flat ceilings from the fastest memory line to the right edge, labelled outside the axes
    (right margin) so no label crosses a line or a point; close labels are pushed apart."""
    fastest_bw = memory[0].value if memory else None
    for index, ceiling in enumerate(compute):
        x_start = ceiling.value / fastest_bw if fastest_bw else xlim[0]
        ax.plot([max(x_start, xlim[0]), xlim[1]], [ceiling.value] * 2, color=charts.INK,
                linewidth=1.1 if index == 0 else 0.8, linestyle="-" if index == 0 else "--", zorder=2)
    levels = _spread([math.log10(c.value) for c in compute], ylim, gap_fraction=0.036)
    for ceiling, level in zip(compute, levels):
        ax.annotate(charts.label(f"{ceiling.label} {_rate(ceiling.value)}", 60),
                    xy=(1.0, ceiling.value), xycoords=("axes fraction", "data"),
                    xytext=(1.015, 10 ** level), textcoords=("axes fraction", "data"),
                    ha="left", va="center", fontsize=6.8, color=charts.INK, annotation_clip=False,
                    arrowprops={"arrowstyle": "-", "color": charts.MUTED, "linewidth": 0.5,
                                "shrinkA": 0, "shrinkB": 0})


def _spread(levels: list[float], ylim, gap_fraction: float) -> list[float]:
    """Label positions (log10) as close to `levels` (sorted descending) as a minimum gap allows."""
    gap = (math.log10(ylim[1]) - math.log10(ylim[0])) * gap_fraction
    placed: list[float] = []
    for level in levels:
        placed.append(min(level, placed[-1] - gap) if placed else level)
    low = math.log10(ylim[0]) + gap / 2
    if placed and placed[-1] < low:    # pushed off the bottom: shift the whole stack up
        shift = low - placed[-1]
        placed = [p + shift for p in placed]
    return placed


_LEVEL_SIZE = {"l2": 46, "l1": 24}
RUN_SIZE, KERNEL_SIZE = 64, 14          # marker areas (points²) of a run's total and of a kernel
# Hollow markers are filled with clear white, not "none": matplotlib then writes one marker
# definition per shape, as for the legend's markers (an unfilled collection is drawn path by path).
CLEAR = (1.0, 1.0, 1.0, 0.0)
# One colour per run, ten at most in a chart (sections/roofline.py): Okabe & Ito's seven, then
# three of Paul Tol's muted scheme that stay apart from them.
SERIES_COLOURS = [*charts.PALETTE, "#882255", "#44AA99", "#999933"]
LOWER_BOUND_MARKER = r"$\geq$"


@dataclass(frozen=True)
class _SizeScale:
    """A run total's marker area from its input size: RUN_SIZE × 0.4 at the chart's smallest size
    to × 2 at its largest, even in log(size) (sizes of a sweep double or grow tenfold)."""
    low: float | None = None
    high: float | None = None

    @classmethod
    def of(cls, points: list[RoofPoint]) -> "_SizeScale":
        sizes = [p.size for p in points if _positive(p.size) and not p.kernel]
        return cls(min(sizes), max(sizes)) if sizes else cls()

    def area(self, point: RoofPoint) -> float:
        if point.kernel:
            return KERNEL_SIZE
        if not _positive(point.size) or self.low is None:
            return RUN_SIZE
        span = math.log(self.high / self.low)
        share = math.log(point.size / self.low) / span if span > 0 else 0.5
        return RUN_SIZE * (0.4 + 1.6 * share)


def _draw_points(ax, points: list[RoofPoint], marks: dict, scale: _SizeScale = _SizeScale()):
    groups = list(dict.fromkeys(p.group for p in points))
    colours = {g: SERIES_COLOURS[i % len(SERIES_COLOURS)] for i, g in enumerate(groups)}
    _draw_levels(ax, [p for p in points if p.level != "dram"], points, colours, marks)
    for point in sorted((p for p in points if p.level == "dram"), key=lambda p: not p.kernel):  # runs on top
        size = scale.area(point)
        if point.lower_bound:   # no ring: a lower bound's place is not known, so neither is its roof
            dot = ax.scatter([point.ai], [point.perf], s=size * (4 if point.kernel else 2.5),
                             marker=LOWER_BOUND_MARKER, color=colours[point.group], linewidths=0,
                             zorder=4 if point.kernel else 5)
        else:
            if point.above_roof:
                ring = ax.scatter([point.ai], [point.perf], s=size * 3, marker="o", facecolors=CLEAR,
                                  edgecolors="#D55E00", linewidths=1.0, zorder=6)
                _mark(marks, ring, point, colours, data=False)
            dot = ax.scatter([point.ai], [point.perf], s=size, marker=PRECISION_MARKERS.get(point.precision, "o"),
                             color=colours[point.group], alpha=0.55 if point.kernel else 0.95,
                             edgecolors="white" if point.kernel else charts.INK,
                             linewidths=0.4 if point.kernel else 0.7,
                             zorder=4 if point.kernel else 5)
        _mark(marks, dot, point, colours)
    return _legend(points, groups, colours, scale)


def _draw_levels(ax, levels: list[RoofPoint], points: list[RoofPoint], colours: dict, marks: dict) -> None:
    """Hierarchical roofline: the same run at its L2 and L1 intensity (same FLOP/s), hollow,
    joined to its DRAM point by a thin line."""
    dram = {(p.group, p.precision, p.size): p for p in points if p.level == "dram" and not p.kernel}
    for point in levels:
        marker = PRECISION_MARKERS.get(point.precision, "o")
        hollow = ax.scatter([point.ai], [point.perf], s=_LEVEL_SIZE.get(point.level, 30), marker=marker,
                            facecolors=CLEAR, edgecolors=colours[point.group], linewidths=1.0, zorder=5)
        _mark(marks, hollow, point, colours)
        anchor = dram.get((point.group, point.precision, point.size))
        if anchor is not None:
            line, = ax.plot([anchor.ai, point.ai], [anchor.perf, point.perf], color=colours[point.group],
                            linewidth=0.6, alpha=0.6, zorder=3)
            _mark(marks, line, point, colours, data=False)


def _shape(point: RoofPoint) -> str:
    return LOWER_BOUND_MARKER if point.lower_bound else PRECISION_MARKERS.get(point.precision, "o")


def _area(point: RoofPoint, scale: _SizeScale) -> float:
    """The marker area `_draw_points` gives `point` (points²)."""
    if point.level != "dram":
        return _LEVEL_SIZE.get(point.level, 30)
    size = scale.area(point)
    return size * (4 if point.kernel else 2.5) if point.lower_bound else size


def _key(point: RoofPoint, scale: _SizeScale, **style):
    """A legend entry drawn with `point`'s marker: its shape at its size."""
    from matplotlib.lines import Line2D

    return Line2D([], [], marker=_shape(point), linestyle="", markersize=math.sqrt(_area(point, scale)), **style)


def _legend(points, groups, colours, scale: _SizeScale = _SizeScale()):
    """Legend entries drawn with the plot's own markers, shapes and sizes: a run's entry is the
    marker of its total (else of its first point), a key entry that of a point it names."""
    from matplotlib.lines import Line2D

    def first(wanted) -> RoofPoint | None:
        return next((p for p in points if wanted(p)), None)

    handles = []
    for group in groups:
        point = first(lambda p, g=group: p.group == g and p.level == "dram" and not p.kernel) or \
            first(lambda p, g=group: p.group == g)
        filled = {"markeredgewidth": 0} if point.lower_bound else \
            {"markeredgecolor": charts.INK if not point.kernel else "white", "markeredgewidth": 0.7}
        handles.append(_key(point, scale, color=colours[group], **filled))
    labels = [charts.label(g, 64) for g in groups]
    hollow = {"markerfacecolor": "none", "markeredgecolor": charts.MUTED, "markeredgewidth": 1.0}
    for level, text in (("l2", "hollow: the run at its L2 intensity"), ("l1", "small hollow: at its L1 intensity")):
        point = first(lambda p, lv=level: p.level == lv)
        if point is not None:
            handles.append(_key(point, scale, **hollow))
            labels.append(text)
    sized = sorted((p for p in points if p.size_label and p.level == "dram" and not p.kernel and not p.lower_bound),
                   key=lambda p: p.size)
    if len({p.size for p in sized}) > 1:     # the size key: the smallest and the largest input, as drawn
        for point, text in ((sized[0], "smallest"), (sized[-1], "largest")):
            handles.append(_key(point, scale, color=charts.MUTED, markeredgecolor=charts.INK, markeredgewidth=0.7))
            labels.append(f"{text} input: {point.size_label}")
    point = first(lambda p: p.kernel and p.level == "dram" and not p.lower_bound)
    if point is not None:
        handles.append(_key(point, scale, color=charts.MUTED, markeredgecolor="white", markeredgewidth=0.4))
        labels.append("small: top kernels of the run")
    shown = {p.precision for p in points if not p.lower_bound}
    for precision in sorted(shown):
        if len(shown) > 1:       # the largest point of the precision: a run's total where there is one
            point = first(lambda p, pr=precision: p.precision == pr and p.level == "dram" and not p.kernel
                          and not p.lower_bound) or first(lambda p, pr=precision: p.precision == pr and not p.lower_bound)
            handles.append(_key(point, scale, color=charts.MUTED, markeredgecolor=charts.INK, markeredgewidth=0.7))
            labels.append(precision)
    point = first(lambda p: p.lower_bound and p.level == "dram" and not p.kernel) or first(lambda p: p.lower_bound)
    if point is not None:
        handles.append(_key(point, scale, color=charts.MUTED, markeredgewidth=0))
        labels.append("≥: FLOPs miss tensor-core work, the true point is higher")
    point = first(lambda p: p.above_roof and not p.lower_bound and p.level == "dram")
    if point is not None:
        size = scale.area(point)
        handles.append(Line2D([], [], marker="o", linestyle="", markerfacecolor="none", markeredgecolor="#D55E00",
                              markeredgewidth=1.0, markersize=math.sqrt(size * 3)))
        labels.append("above its roof: counts suspect")
    return handles, labels


def _rate(value: float) -> str:
    return fmt.rate(value)


def _bw(value: float) -> str:
    return fmt.bandwidth(value)
