"""What a printed page shows, measured: the helpers of tests/test_layout.py (issue #32).

Two readings of one WeasyPrint layout:

* the PDF through pdfplumber: every character's box and printed size (a chart's SVG text is drawn
  as PDF text, so its size is the size on paper, after the figure was scaled onto the page), and
  how far down each page the content reaches;
* WeasyPrint's layout tree (`document.pages[i]._page_box`): which table rows and which headings
  landed on which page. Borderless tables and headings leave nothing pdfplumber can tell apart,
  the boxes do.

The page geometry comes from the report's own CSS `@page` rule (A4, its margins), read here
once so the checks follow the stylesheet.
"""

from __future__ import annotations

import io
import re
from collections import defaultdict
from dataclasses import dataclass, field

from roofreport.resources import template_dir

MM = 72 / 25.4
A4 = (595.28, 841.89)


def page_margins() -> tuple[float, float, float, float]:
    """(top, right, bottom, left) of the report's `@page` margin, in points."""
    css = (template_dir() / "report.css").read_text(encoding="utf-8")
    found = re.search(r"@page\s*\{[^@]*?margin:\s*([\d.]+)mm\s+([\d.]+)mm\s+([\d.]+)mm\s+([\d.]+)mm", css)
    assert found, "report.css has no @page margin in mm"
    top, right, bottom, left = (float(value) * MM for value in found.groups())
    return top, right, bottom, left


@dataclass
class PageText:
    """One PDF page: its characters (text, box, printed size) and how full its body is."""

    number: int
    chars: list[dict]
    fill: float                  # fraction of the body height down to the lowest mark on it


def pdf_pages(pdf: bytes) -> list[PageText]:
    """Each page's characters and fill; the running header and footer (in the margins) do not
    count towards the fill."""
    import pdfplumber

    top, _, bottom, _ = page_margins()
    pages = []
    with pdfplumber.open(io.BytesIO(pdf)) as document:
        for index, page in enumerate(document.pages):
            body_top, body_bottom = top, page.height - bottom
            marks = [mark for kind in ("chars", "rects", "lines", "curves", "images")
                     for mark in getattr(page, kind)
                     if mark["top"] >= body_top - 1 and mark["bottom"] <= body_bottom + 1]
            lowest = max((mark["bottom"] for mark in marks), default=body_top)
            chars = [{"text": c["text"], "x0": c["x0"], "x1": c["x1"], "top": c["top"], "size": c["size"],
                      "upright": upright(c)} for c in page.chars]
            pages.append(PageText(index + 1, chars, (lowest - body_top) / (body_bottom - body_top)))
    return pages


def outside_content_box(page: PageText, width: float = A4[0], slack: float = 0.5) -> list[dict]:
    """The characters left or right of the content box (page width minus the side margins)."""
    _, right, _, left = page_margins()
    return [c for c in page.chars if c["x0"] < left - slack or c["x1"] > width - right + slack]


def upright(char) -> bool:
    """A character set level (pdfminer's `size` is its printed size only then; a rotated axis
    label's chars are measured from the SVG instead, `chart_text`)."""
    return char["upright"] and abs(char["matrix"][1]) < 1e-6 and abs(char["matrix"][2]) < 1e-6


def words(chars: list[dict], limit: int = 60) -> str:
    return "".join(c["text"] for c in chars)[:limit]


# -- the layout tree --------------------------------------------------------------------------------

@dataclass
class TableOnPages:
    """A table of the page: its caption (or first heading) and its body rows per page."""

    name: str
    rows_per_page: dict[int, int] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(self.rows_per_page.values())


@dataclass
class Layout:
    tables: list[TableOnPages]
    headings_at_foot: list[tuple[int, str]]       # (page, heading text) with nothing after it


def _text(box) -> str:
    if hasattr(box, "text"):
        return box.text
    return "".join(_text(child) for child in getattr(box, "children", []))


def _walk(box, visit, ancestors=()):
    visit(box, ancestors)
    for child in getattr(box, "children", []):
        _walk(child, visit, (*ancestors, box))


def layout(document) -> Layout:
    """Which table rows and headings each page of a rendered WeasyPrint `document` holds."""
    tables: dict[int, TableOnPages] = {}
    feet: list[tuple[int, str]] = []
    for number, page in enumerate(document.pages, start=1):
        rows: dict[int, int] = defaultdict(int)
        order: list[tuple[str, object]] = []      # the page's block-level content, in order

        def visit(box, ancestors, rows=rows, order=order, number=number):
            tag = getattr(box, "element_tag", None)
            kind = type(box).__name__
            if kind == "TableRowBox" and tag == "tr":
                group = ancestors[-1] if ancestors else None
                if getattr(group, "is_header", False) or getattr(group, "element_tag", "") == "thead":
                    return
                table = next((a for a in reversed(ancestors) if type(a).__name__ == "TableBox"), None)
                if table is None:
                    return
                key = id(table.element)
                if key not in tables:
                    caption = table.element.find("caption")
                    if caption is None:           # the static page's caption: the head's title row
                        caption = table.element.find("thead/tr[@class='title']/th")
                    tables[key] = TableOnPages(
                        "".join(caption.itertext()).strip() if caption is not None else f"table on p{number}")
                rows[key] += 1
                order.append(("row", table.element))
            elif tag in ("h2", "h3") and kind.startswith("Block"):
                order.append(("heading", _text(box).strip()))
            elif tag in ("p", "li", "figure", "caption") and kind.startswith("Block"):
                order.append((tag, box.element))

        _walk(page._page_box, visit)
        for key, count in rows.items():
            tables[key].rows_per_page[number] = count
        if number < len(document.pages) and order and order[-1][0] == "heading":
            feet.append((number, order[-1][1]))
    return Layout(list(tables.values()), feet)


# -- charts ------------------------------------------------------------------------------------------

_FIGURE = re.compile(r'<figure class="chart[^"]*" id="([^"]+)">\s*(?:<img class="chart" src="data:image/svg'
                     r'\+xml;base64,([^"]+)"|<div class="plot">(<svg.*?</svg>))', re.S)


def chart_svgs(html: str) -> list[tuple[str, str]]:
    """(figure id, SVG document) of every chart of a page, static (<img> data URI) or inline."""
    import base64

    return [(found.group(1), base64.b64decode(found.group(2)).decode("utf-8") if found.group(2) else found.group(3))
            for found in _FIGURE.finditer(html)]


def printed_scale(svg: str) -> float:
    """How much the PDF shrinks the figure: report.css prints it at its natural size (1 px of
    the <img> per SVG point), at most the content width wide and 215 mm high."""
    _, right, _, left = page_margins()
    width = float(re.search(r'width="([\d.]+)pt"', svg).group(1))
    height = float(re.search(r'height="([\d.]+)pt"', svg).group(1))
    return min(1.0, (A4[0] - left - right) / width, 215 * MM / height)


def chart_text(svg: str) -> float:
    """The smallest font size of the chart's text as printed, in points (matplotlib's SVG user
    unit is the point)."""
    sizes = [float(size) for size in re.findall(r"font-size: ?([\d.]+)px", svg)]
    return min(sizes, default=99.0) * printed_scale(svg)


def marker_ids(svg: str) -> tuple[set[str], set[str]]:
    """(the marker shapes the plot draws, those its legend draws), each as its path: matplotlib
    defines a marker path per shape, size and style and places it with <use>, so two uses of
    one shape and size share a path even where their colours differ."""
    paths = {name: " ".join(d.split()) for name, d in re.findall(r'<path id="([^"]+)" d="([^"]+)"', svg)}
    uses = re.compile(r'<use xlink:href="#([^"]+)"')
    start = svg.find('-legend_1"')
    plot, legend = (svg, "") if start < 0 else (svg[:start], svg[start:])
    return ({paths.get(name, name) for name in uses.findall(plot)},
            {paths.get(name, name) for name in uses.findall(legend)})


def series(svg: str) -> set[str]:
    """The runs a roofline plots (the data-run of its marks)."""
    return set(re.findall(r'data-run="([^"]*)"', svg))
