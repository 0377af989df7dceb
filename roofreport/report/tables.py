"""Small helpers that turn rows of values into the context's `Table` (cells as text).

Long names are cut for the page and keep their full text as a tooltip; a table longer than
its limit says how many rows were left out instead of dropping them silently.
"""

from __future__ import annotations

from dataclasses import replace

from roofreport.report.context import Cell, Column, Table


def cell(value, code: bool = False, title: str | None = None, css: str = "", sub: str | None = None,
         span: int = 1, sort: float | None = None) -> Cell:
    if isinstance(value, Cell):
        return value
    return Cell("" if value is None else str(value), code=code, title=title, css=css, sub=sub, span=span,
                sort=sort)


def name_cell(name: str | None, limit: int = 64) -> Cell:
    """A kernel, file or region name in monospace, shortened in the middle when too long."""
    if not name:
        return Cell("–")
    if len(name) <= limit:
        return Cell(name, code=True)
    head = (limit - 1) * 2 // 3
    tail = limit - 1 - head
    return Cell(name[:head] + "…" + name[-tail:], code=True, title=name)


def columns(*specs: str | Column) -> list[Column]:
    """Columns from labels; a label ending in "#" is numeric (right-aligned): "Time#"."""
    out = []
    for spec in specs:
        if isinstance(spec, Column):
            out.append(spec)
        elif spec.endswith("#"):
            out.append(Column(spec[:-1], numeric=True))
        else:
            out.append(Column(spec))
    return out


def table(cols: list[str | Column], rows: list[list], caption: str | None = None,
          limit: int | None = None, what: str = "rows", css: str = "", sortable: bool = False) -> Table:
    shown = rows if limit is None else rows[:limit]
    note = None
    if limit is not None and len(rows) > limit:
        note = f"{len(rows) - limit} more {what} not shown."
    cols = columns(*cols)
    rows = [[_aligned(cell(v), c.numeric) for v, c in zip(row, cols)] for row in shown]
    return Table(columns=cols, rows=rows, caption=caption, note=note, css=css, sortable=sortable)


def _aligned(given: Cell, numeric: bool) -> Cell:
    return replace(given, css=f"{given.css} num".strip()) if numeric else given


def without_empty_columns(given: Table, keep: int = 1) -> Table:
    """`given` without the columns (after the first `keep`) that no row has a value in: a
    column of dashes says nothing. Rows of one cell spanning the table (a group's heading) stay."""
    def empty(row: list[Cell], index: int) -> bool:
        return len(row) == 1 or row[index].text in ("", "–")

    kept = [i for i in range(len(given.columns)) if i < keep or not all(empty(r, i) for r in given.rows)]
    if len(kept) == len(given.columns):
        return given
    rows = [[replace(r[0], span=len(kept))] if len(r) == 1 else [r[i] for i in kept] for r in given.rows]
    return replace(given, columns=[given.columns[i] for i in kept], rows=rows)
