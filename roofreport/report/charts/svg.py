"""Charts as inline SVG: matplotlib (Agg) figures turned into deterministic, escaped markup.

Imported only when a report is rendered (matplotlib costs half a second to import).
Every chart function takes plain data (its module's dataclasses, lists, floats) and returns a
standalone SVG document (the page embeds it as a data: URI image): no XML prologue, ids prefixed
with the chart id, a fixed hash salt and no date (the same data gives the same bytes). Text stays
text (`svg.fonttype` none, DejaVu Sans as matplotlib measured it, then Arial/Helvetica): half the
size and a third of the rendering time of glyph paths. Text from logs goes through `label()`,
which stops matplotlib from reading `$...$` as mathtext; matplotlib's SVG writer escapes `<`,
`>` and `&` itself.
"""

from __future__ import annotations

import io
import math
import re

from roofreport.report import fmt

# Okabe & Ito (2008), the colour-blind-safe palette, without black (kept for ceilings) and
# with yellow last (weak on white paper).
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
INK, GRID, MUTED = "#222222", "#d9d9d9", "#777777"
LABEL_BOX = {"facecolor": "white", "edgecolor": "none", "pad": 0.6, "alpha": 0.85}

_mpl = None


def _pyplot():
    """matplotlib.pyplot with the Agg backend and the report's style (imported once, lazily)."""
    global _mpl
    if _mpl is None:
        import matplotlib
        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
        matplotlib.rcParams.update({
            "svg.hashsalt": "roofreport", "svg.fonttype": "none", "font.family": "sans-serif",
            "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
            "font.size": 8.5, "axes.titlesize": 9.5, "axes.labelsize": 8.5, "legend.fontsize": 7.5,
            "xtick.labelsize": 7.5, "ytick.labelsize": 7.5, "axes.edgecolor": INK,
            "axes.labelcolor": INK, "text.color": INK, "xtick.color": INK, "ytick.color": INK,
            "axes.grid": True, "grid.color": GRID, "grid.linewidth": 0.5,
            "axes.prop_cycle": matplotlib.cycler(color=PALETTE), "path.simplify": True,
            "text.usetex": False, "axes.unicode_minus": False, "figure.dpi": 100,
        })
        _mpl = plt
    return _mpl


def figure(width_in: float = 7.0, height_in: float = 3.6, **subplots):
    return _pyplot().subplots(figsize=(width_in, height_in), **subplots)


def label(text: str | None, limit: int = 48) -> str:
    """Log text made safe for a matplotlib label: no mathtext, shortened with an ellipsis."""
    text = "" if text is None else str(text)
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return text.replace("\\", "\\\\").replace("$", r"\$")


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def marker(index: int) -> str:
    return MARKERS[(index // len(PALETTE)) % len(MARKERS)]


_XML_HEAD = re.compile(r"^.*?(?=<svg)", re.S)   # the XML declaration and DOCTYPE
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|xlink:href="#|href="#)([^")]+)')
_GROUP = re.compile(r"<g\b[^>]*>|</g>")
# A group matplotlib writes around each artist, named by the artist's kind and a count
# ("line2d_7", "matplotlib.axis_2", "xtick_3") or not at all, and nothing else: it changes no
# drawing. A chart's own gids ("pt3", charts/marks.py) have no "_<count>" and stay; so does the
# legend's group, which tells the legend's marks from the plot's (tests/layout.py).
_BARE_GROUP = re.compile(r'<g(?: id="(?!legend_)[A-Za-z][A-Za-z0-9.]*_\d+")?>')
# ...and such a group with nothing in it (matplotlib writes one for each tick of length 0).
_EMPTY_BARE_GROUP = re.compile(r'\s*<g(?: id="(?!legend_)[A-Za-z][A-Za-z0-9.]*_\d+")?/>')
_NO_ROTATION = re.compile(r' transform="rotate\(-0 [-+0-9.e]+ [-+0-9.e]+\)"')


def without_bare_groups(svg: str) -> str:
    """`svg` without matplotlib's groups that only wrap (an id of its own counting, or no
    attribute) or hold nothing, and without its text's rotations by 0: the same drawing in half
    the elements (a tick is four groups around a line, a mark and a label), each of which
    WeasyPrint's SVG renderer visits, saves and restores while it draws the PDF."""
    svg = _EMPTY_BARE_GROUP.sub("", svg)
    out, start, dropped = [], 0, []
    for match in _GROUP.finditer(svg):
        tag = match.group(0)
        if tag.endswith("/>"):
            continue
        drop = dropped.pop() if tag == "</g>" else _BARE_GROUP.fullmatch(tag) is not None
        if tag != "</g>":
            dropped.append(drop)
        if drop:
            out.append(svg[start:match.start()])
            start = match.end()
    out.append(svg[start:])
    return _NO_ROTATION.sub("", "".join(out))


def to_svg(fig, chart_id: str) -> str:
    """The figure as a standalone SVG document without XML prologue, DOCTYPE (nothing to fetch),
    metadata or wrapping groups (`without_bare_groups`); every id gets the `chart_id` prefix
    (unique across the report)."""
    plt = _pyplot()
    buf = io.StringIO()
    try:
        fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight", pad_inches=0.05)
    finally:
        plt.close(fig)
    svg = without_bare_groups(_METADATA.sub("", _XML_HEAD.sub("", buf.getvalue(), count=1)))
    svg = _ID.sub(lambda m: f'id="{chart_id}-{m.group(1)}"', svg)
    svg = _REF.sub(lambda m: f"{m.group(1)}{chart_id}-{m.group(2)}", svg)
    return svg.strip()


def fit_left_labels(fig, ax, right: float = 0.98) -> None:
    """Make room on the left for the y tick labels inside the figure's own width, so that the
    page does not shrink the whole chart (and its text) to fit labels wider than planned."""
    renderer = fig.canvas.get_renderer()
    widest = max((t.get_window_extent(renderer).width for t in ax.get_yticklabels()), default=0.0)
    left = (widest + 10) / (fig.get_figwidth() * fig.dpi)
    fig.subplots_adjust(left=min(max(left, 0.08), 0.6), right=right)


def row_major(handles: list, labels: list, ncol: int) -> tuple[list, list]:
    """Reorder entries so a multi-column legend reads left to right (matplotlib fills columns)."""
    rows = -(-len(handles) // ncol)
    order = [r * ncol + c for c in range(ncol) for r in range(rows) if r * ncol + c < len(handles)]
    return [handles[i] for i in order], [labels[i] for i in order]


def legend_below(ax, handles, labels, max_cols: int = 4) -> None:
    """A legend under the axes, outside the plotting area, so it never covers a point."""
    if not handles:
        return
    ncol = min(max_cols, len(handles))
    handles, labels = row_major(handles, labels, ncol)
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=ncol,
              frameon=False, handlelength=1.6, columnspacing=1.2, borderaxespad=0.0)


def nice_log_limits(values: list[float], pad: float = 2.0) -> tuple[float, float]:
    """Decade-aligned limits around positive `values`, with `pad` × room each side."""
    positive = [v for v in values if v and v > 0 and math.isfinite(v)]
    if not positive:
        return 1.0, 10.0
    lo, hi = min(positive) / pad, max(positive) * pad
    return 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))


def si_ticks(unit: str = ""):
    """Tick labels with decimal prefixes and no trailing zeros: 100 G, 1 T, 10 T."""
    from matplotlib.ticker import FuncFormatter

    def format_tick(value, _pos):
        if value <= 0:
            return "0" if value == 0 else ""
        text = fmt.si(value, unit, 3)
        number, _, rest = text.partition(" ")
        if "." in number:
            number = number.rstrip("0").rstrip(".")
        return f"{number} {rest}".strip()
    return FuncFormatter(format_tick)


def plain_ticks():
    """Log-axis tick labels as plain numbers (0.01, 0.1, 1, 10, 1000): matplotlib's 10^n labels
    set the exponent at 70 % of the tick size, under 6 pt once a figure is printed."""
    from matplotlib.ticker import FuncFormatter

    def format_tick(value, _pos):
        return f"{value:g}" if value > 0 else ""
    return FuncFormatter(format_tick)
