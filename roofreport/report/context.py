"""The report's data: plain dataclasses the templates render, built before any HTML exists.

A report is a title, findings and a list of sections; a section is a list of blocks
(paragraphs, tables, charts, notes). A block's `media` keeps it to one output: "screen" blocks
are the HTML's only (the full list of inputs), "print" blocks the PDF's only (their summary).
The HTML file carries both, the other hidden by CSS (a browser prints the print blocks); the
PDF's page leaves the screen blocks out (`for_page`): WeasyPrint would parse and style them for
nothing. A chart of one output only is drawn when a page that shows it renders (`for_page`),
so a build that writes only the PDF never draws the HTML's own charts. Every string here is raw text (kernel names and log
messages included): the templates escape it. A chart's SVG (from `charts.py`; matplotlib's SVG
writer escapes its text) reaches the page only as a base64 `data:` URI of an <img>, so nothing in
it is ever parsed as part of the HTML, except in the interactive HTML: there an `interactive` chart's
SVG is inline (its marks carry escaped `data-` attributes, `charts/marks.py`) and a `sortable`
table sorts by its cells' `sort` values (`templates/interactive.js`); the PDF stays static.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field, replace
from typing import Callable


@dataclass(frozen=True)
class Span:
    """A piece of a sentence; `code` spans (kernel names, commands) render in monospace."""

    text: str
    code: bool = False
    strong: bool = False           # a lead word that a reader scans for (an experiment's name)


def spans_list(names: list[str], limit: int = 6) -> list[Span]:
    """`a`, `b` and `c` (code spans), cut after `limit` names with "and N more"."""
    shown = names[:limit]
    spans: list[Span] = []
    for index, name in enumerate(shown):
        if index:
            spans.append(Span(" and " if index == len(shown) - 1 and len(names) <= limit else ", "))
        spans.append(Span(name, code=True))
    if len(names) > limit:
        spans.append(Span(f" and {len(names) - limit} more"))
    return spans


def ticks(text: str) -> list[Span]:
    """Author-written text with `backticks` around commands -> spans (never used on log text)."""
    parts = text.split("`")
    return [Span(p, code=bool(i % 2)) for i, p in enumerate(parts) if p]


@dataclass
class Paragraph:
    """A sentence or two; `level` is "info", "warning" or "problem" (styled accordingly)."""

    spans: list[Span]
    level: str = "info"
    media: str = ""                  # "", "screen" (HTML only) or "print" (PDF only)
    kind: str = field(default="paragraph", init=False)

    @classmethod
    def of(cls, *parts: str | Span, level: str = "info") -> Paragraph:
        return cls([p if isinstance(p, Span) else Span(p) for p in parts], level=level)

    @classmethod
    def md(cls, text: str, level: str = "info") -> Paragraph:
        """From author-written text where `backticks` mark code."""
        return cls(ticks(text), level=level)

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.spans)


@dataclass
class Heading:
    text: str
    media: str = ""
    kind: str = field(default="heading", init=False)


@dataclass(frozen=True)
class Cell:
    """One table cell. `title` carries the full text when `text` is shortened (a tooltip)."""

    text: str
    code: bool = False
    title: str | None = None
    css: str = ""
    sub: str | None = None           # a second, smaller line (e.g. where a time came from)
    span: int = 1                    # columns the cell spans (a group's heading row spans all)
    sort: float | None = None        # the value a sortable table sorts this cell by (else its text)


@dataclass(frozen=True)
class Column:
    label: str
    numeric: bool = False
    help: str | None = None
    width: str | None = None         # e.g. "30%": a table whose columns all say lays out fixed (fast)


@dataclass
class Table:
    columns: list[Column]
    rows: list[list[Cell]]
    caption: str | None = None
    note: str | None = None          # e.g. "12 more rows not shown"
    css: str = ""
    media: str = ""
    sortable: bool = False           # the interactive HTML sorts it by a click on a heading
    kind: str = field(default="table", init=False)

    @property
    def fixed(self) -> bool:
        """Column widths given: the browser and WeasyPrint need not measure every cell first."""
        return bool(self.columns) and all(c.width for c in self.columns)


@dataclass
class Chart:
    """A figure: `svg` is a standalone SVG document from charts.py; the rest is text. A chart of
    one output only (`media`) may be deferred: `svg` None and `draw` the call that draws it, run
    by `drawn()` when a page that shows it renders."""

    id: str
    svg: str | None
    caption: str
    media: str = ""
    interactive: bool = False        # inline in the interactive HTML: hover and toggles by its marks
    draw: Callable[[], str] | None = field(default=None, repr=False, compare=False)
    kind: str = field(default="chart", init=False)

    def drawn(self) -> Chart | Paragraph:
        """The chart with its SVG (drawn now if it was deferred, once), or the note that says why
        it could not be drawn."""
        if self.svg is not None or self.draw is None:
            return self
        done = _drawn(self.id, self.caption, self.draw, interactive=self.interactive)
        done.media = self.media
        if isinstance(done, Chart):
            self.svg, self.draw = done.svg, None
        return done

    @property
    def data_uri(self) -> str:
        return "data:image/svg+xml;base64," + base64.b64encode(self.svg.encode("utf-8")).decode("ascii")

    @property
    def size_pt(self) -> tuple[float, float]:
        """The figure's natural width and height in points (from the SVG's own attributes)."""
        head = self.svg[:400]
        width = head.split('width="', 1)[1].split("pt", 1)[0] if 'width="' in head else "504"
        height = head.split('height="', 1)[1].split("pt", 1)[0] if 'height="' in head else "288"
        return float(width), float(height)


@dataclass
class Bullets:
    items: list[Paragraph]
    media: str = ""
    kind: str = field(default="bullets", init=False)


Block = Paragraph | Heading | Table | Chart | Bullets


def chart(chart_id: str, caption: str, draw, *args, interactive: bool = False, media: str = "") -> Chart | Paragraph:
    """`draw(chart_id, *args)` as a Chart; if matplotlib fails on data no rule foresaw, the report
    keeps its place with the reason instead of losing every other section. A chart of one
    output only (`media` "screen" or "print") is drawn when a page that shows it renders
    (`for_page`), with the same note if it cannot be."""
    if media:
        return Chart(chart_id, None, caption, media=media, interactive=interactive,
                     draw=lambda: draw(chart_id, *args))
    return _drawn(chart_id, caption, lambda: draw(chart_id, *args), interactive=interactive)


def _drawn(chart_id: str, caption: str, draw: Callable[[], str], interactive: bool = False) -> Chart | Paragraph:
    try:
        return Chart(chart_id, draw(), caption, interactive=interactive)
    except (ValueError, TypeError, OverflowError, ZeroDivisionError, IndexError, KeyError,
            RuntimeError, MemoryError) as exc:
        return Paragraph([Span(f"{caption}: the chart could not be drawn ({type(exc).__name__}: {exc}).")],
                         level="problem")


@dataclass
class Section:
    """One numbered part of the report. `empty` says which log would fill it when it has no data."""

    id: str
    title: str
    blocks: list[Block] = field(default_factory=list)
    empty: str | None = None
    appendix: bool = False
    gaps: list[str] = field(default_factory=list)   # what the logs leave open although the section has data

    @property
    def empty_spans(self) -> list[Span]:
        return ticks(self.empty) if self.empty else []

    @property
    def charts(self) -> list[Chart]:
        """The section's charts, drawn (a deferred one is drawn now)."""
        drawn = [b.drawn() for b in self.blocks if isinstance(b, Chart)]
        return [b for b in drawn if isinstance(b, Chart)]


@dataclass
class Report:
    title: str
    subtitle: str
    version: str
    findings: list[Paragraph]
    sections: list[Section]

    def section(self, section_id: str) -> Section:
        return next(s for s in self.sections if s.id == section_id)


def for_page(report: Report, interactive: bool) -> Report:
    """The report as one page shows it: the PDF's static page (`interactive` false) without the
    HTML's screen-only blocks (hidden there by CSS anyway), the HTML file with every block; each
    deferred chart it shows drawn (or the note saying why it could not be)."""
    def shown(blocks: list[Block]) -> list[Block]:
        kept = [b for b in blocks if interactive or b.media != "screen"]
        return [b.drawn() if isinstance(b, Chart) else b for b in kept]

    return replace(report, sections=[replace(s, blocks=shown(s.blocks)) for s in report.sections])
