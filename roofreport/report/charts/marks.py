"""Data on a chart's marks: `data-` attributes on the SVG groups of chosen matplotlib artists,
for the interactive HTML (`templates/interactive.js` shows them on hover and toggles by them).

A chart gives an artist a gid (`artist.set_gid("pt3")`, matplotlib writes `<g id="pt3">`) and
says which attributes that group gets; after `svg.to_svg` has prefixed every id with the chart
id, `with_marks` writes the attributes into those group tags. The values are text from logs
(kernel and run names) and text the chart formatted from analysis frames: each is escaped as an
attribute value (`&`, `<`, `>`, quotes) and loses the control characters XML forbids (the same
SVG is also an `<img>` data URI in the PDF, where an XML parser reads it). Nothing here is
markup, and nothing reaches a script as code: the script reads attributes.
"""

from __future__ import annotations

import re

_FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def attribute(value: str) -> str:
    """`value` as the inside of a double-quoted XML/HTML attribute."""
    from markupsafe import escape

    return str(escape(_FORBIDDEN.sub("\ufffd", value)))


def with_marks(svg: str, chart_id: str, marks: dict[str, dict[str, str]]) -> str:
    """`svg` with the attributes `marks[gid]` (name -> value; names are the chart's own, never
    from logs) on the group of each artist given that gid."""
    if not marks:
        return svg

    def tag(match: re.Match) -> str:
        attrs = marks.get(match.group(1))
        if attrs is None:
            return match.group(0)
        extra = "".join(f' {name}="{attribute(value)}"' for name, value in attrs.items())
        return f'<g id="{chart_id}-{match.group(1)}"{extra}>'
    return re.sub(rf'<g id="{re.escape(chart_id)}-([A-Za-z0-9_]+)">', tag, svg)
