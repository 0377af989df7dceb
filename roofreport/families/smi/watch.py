"""`watch nvidia-smi` captures: a terminal's byte stream (VT100 cursor moves, CR-only line
ends, screen updates that rewrite only the changed characters) -> the table each refresh showed.

A tiny screen model replays the stream (cursor addressing, autowrap, clears) and takes a
snapshot at each refresh (watch redraws from the top line). Table lines wider than the
terminal wrapped onto the next row; they are joined back so every snapshot's lines are the
table nvidia-smi printed, ready for the ordinary line classification. This is a per-token
Python loop, fine for the terminal captures it serves (kilobytes to a few megabytes).
"""

from __future__ import annotations

import re

import polars as pl

_TOKEN = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z@`])|\x1b[()][0-9A-Za-z]|\x1b.|\n|\x08|[^\x1b\n\x08]+")
_DEFAULT_COLUMNS = 80


def is_watch_capture(text: str) -> bool:
    return "\x1b[" in text and "nvidia-smi" in text and "Every " in text


class Screen:
    """Rows of characters, a cursor, and autowrap (DECAWM)."""

    def __init__(self, columns: int):
        self.columns = columns
        self.rows: list[list[str]] = []
        self.row = self.col = 0
        self.autowrap = True
        self.dirty = False

    def put(self, text: str) -> None:
        for ch in text:
            if self.col >= self.columns:
                if not self.autowrap:
                    self.col = self.columns - 1
                else:
                    self.row, self.col = self.row + 1, 0
            self._cells(self.row)[self.col] = ch
            self.col += 1
        self.dirty = True

    def move(self, row: int | None = None, col: int | None = None) -> None:
        self.row = max(0, row if row is not None else self.row)
        self.col = min(max(0, col if col is not None else self.col), self.columns)

    def clear(self, mode: int) -> None:
        if mode in (2, 3):
            self.rows = []
        elif mode == 0:
            del self.rows[self.row + 1:]
            self._erase_line(0)

    def _erase_line(self, mode: int) -> None:
        cells = self._cells(self.row)
        span = range(self.col, self.columns) if mode == 0 else \
            range(0, self.col + 1) if mode == 1 else range(self.columns)
        for index in span:
            cells[index] = " "

    def _cells(self, row: int) -> list[str]:
        while len(self.rows) <= row:
            self.rows.append([" "] * self.columns)
        return self.rows[row]

    def text_rows(self) -> list[str]:
        return ["".join(r).rstrip() for r in self.rows]


def screens(text: str) -> pl.DataFrame:
    """The logical lines of every refresh: `text`, `line_no` (their order, as if the screens
    had been printed one after the other) and `physical_line` (the input line where that
    refresh began: updates after the first screen carry no line break at all)."""
    screen = Screen(_columns(text))
    out_line: list[int] = []
    out_text: list[str] = []
    line_no = start_line = 1

    def snapshot():
        for row in unwrap(screen.text_rows(), screen.columns):
            out_line.append(start_line)
            out_text.append(row)
        screen.dirty = False

    for match in _TOKEN.finditer(text):
        token, params, final = match.group(0), match.group(1), match.group(2)
        if token == "\n":
            line_no += 1
            screen.move(screen.row + 1, 0)
        elif token == "\x08":
            screen.move(col=screen.col - 1)
        elif final:
            # A refresh starts when the cursor goes back up to the title row.
            if final in "Hf" and _args(params, 2)[0] == 1 and screen.row > 0 and screen.dirty:
                snapshot()
                start_line = line_no
            _escape(screen, params, final)
        elif not token.startswith("\x1b"):
            screen.put(token)
    if screen.dirty:
        snapshot()
    return pl.DataFrame({"line_no": range(1, len(out_text) + 1), "text": out_text,
                         "physical_line": out_line},
                        schema={"line_no": pl.Int64, "text": pl.String, "physical_line": pl.Int64})


def _escape(screen: Screen, params: str, final: str) -> None:
    """The few control sequences `watch` (ncurses) uses to paint a screen."""
    if params.startswith("?"):
        if params[1:] == "7":
            screen.autowrap = final == "h"
        return
    args = _args(params, 2)
    moves = {
        "H": lambda: screen.move(args[0] - 1, args[1] - 1),
        "f": lambda: screen.move(args[0] - 1, args[1] - 1),
        "d": lambda: screen.move(row=args[0] - 1), "G": lambda: screen.move(col=args[0] - 1),
        "`": lambda: screen.move(col=args[0] - 1),
        "A": lambda: screen.move(row=screen.row - args[0]),
        "B": lambda: screen.move(row=screen.row + args[0]),
        "C": lambda: screen.move(col=screen.col + args[0]),
        "D": lambda: screen.move(col=screen.col - args[0]),
        "J": lambda: screen.clear(_args(params, 1, default=0)[0]),
        "K": lambda: screen._erase_line(_args(params, 1, default=0)[0]),
    }
    action = moves.get(final)
    if action:
        action()


def _args(params: str, count: int, default: int = 1) -> list[int]:
    values = [int(p) if p.isdigit() else default for p in params.split(";")] if params else []
    return (values + [default] * count)[:max(count, len(values))]


def _columns(text: str) -> int:
    """The terminal width: the right-most column the stream addresses (watch parks the cursor
    at the bottom-right corner), or 80."""
    cols = [int(c) for c in re.findall(r"\x1b\[\d+;(\d+)H", text)]
    return max(cols) if cols else _DEFAULT_COLUMNS


def unwrap(rows: list[str], columns: int) -> list[str]:
    """Join table lines the terminal wrapped: a box border filling the row (`+-----...`)
    continued by `-----+` says how wide the table is; every box line is that wide."""
    width = _table_width(rows, columns)
    if width <= columns:
        return rows
    per_line = -(-width // columns)
    out, index = [], 0
    while index < len(rows):
        if rows[index].startswith(("|", "+")):
            chunk = rows[index:index + per_line]
            out.append("".join(r.ljust(columns) for r in chunk[:-1]) + chunk[-1])
            index += per_line
        else:
            out.append(rows[index])
            index += 1
    return out


def _table_width(rows: list[str], columns: int) -> int:
    for index, row in enumerate(rows[:-1]):
        if row.startswith("+-") and len(row) == columns and re.fullmatch(r"[-=+]*\+", rows[index + 1]):
            return columns + len(rows[index + 1])
    return max((len(r) for r in rows), default=0)
