"""Analysis frames as the terminal shows them (`summary`, `compare`, `steps`): aligned text
tables, CSV or JSON.

The CLI prints what this module returns; nothing here computes. A table spells numbers as the
report does (`report.fmt`: "12.3 ms", "45.2 %", "2.03×"), chosen by the column's name (`*_ns`
a duration, `share` a fraction, `speedup` a ratio...). CSV and JSON give every value as it is,
in base units (ns, FLOP, FLOP/s, bytes), for scripts: CSV one table at a time (a file per table: `csv_files`), JSON one object holding every
table as a list of rows. Tables fit a terminal's width (`Layout`): names are elided in the middle
keeping what tells them apart, sentences wrapped.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import polars as pl

from roofreport.report import fmt

FORMATS = ("table", "csv", "json")
NAME_WIDTH = 64          # characters of a name shown in a table (CSV and JSON keep it whole)
# Columns of names: elided in the middle to fit (other text is wrapped, never cut).
NAMES = ("kernel", "run", "run_a", "run_b", "name", "pair", "short_name")

# Columns of short labels kept on one line: a wrap would split "conv (via GEMM)".
UNBROKEN = ("category",)

# Headings of the columns that need more than their name with spaces.
_HEADINGS = {
    "kernel_time_ns": "kernel time", "transfer_time_ns": "transfers", "time_ns": "time",
    "avg_ns": "average", "kernel_launches": "launches", "count": "launches",
    "achieved_flops_per_s": "FLOP/s", "arithmetic_intensity": "FLOP/B", "flops": "FLOPs",
    "time_a_ns": "time A", "time_b_ns": "time B", "delta_ns": "B - A", "count_a": "launches A",
    "count_b": "launches B", "share_a": "share A", "share_b": "share B",
    "flops_per_s_a": "FLOP/s A", "flops_per_s_b": "FLOP/s B", "ai_a": "FLOP/B A", "ai_b": "FLOP/B B",
    "speedup": "A/B", "min_ns": "min", "median_ns": "median", "max_ns": "max", "step_ns": "step time",
    "mfu_pct": "MFU", "hfu_pct": "HFU", "compute_pct": "compute", "communication_pct": "comm",
    "memory_pct": "memory", "idle_pct": "idle", "duration_ns": "time", "compute_ns": "compute",
    "communication_ns": "comm", "memory_ns": "memory", "idle_ns": "idle", "model_flops": "model FLOPs",
    "outlier_reason": "outlier", "peak_source": "peak used",
}


def _spelling(column: str) -> Callable[[object], str]:
    """How a column's values are written in a table, from its name."""
    if column.endswith("_ns"):
        return fmt.duration
    if column.startswith("share"):
        return fmt.share
    if column == "speedup":
        return fmt.ratio
    if "flops_per_s" in column:     # (the heading gives the unit: `FLOP/s`)
        return lambda value: fmt.rate(value).removesuffix("FLOP/s").rstrip()
    if column in ("flops", "model_flops"):
        return fmt.flops
    if column.endswith("_pct"):
        return fmt.percent
    if column in ("arithmetic_intensity",) or column.startswith("ai_"):   # (heading: `FLOP/B`)
        return lambda value: fmt.intensity(value).removesuffix("FLOP/B").rstrip()
    if column in ("count", "rank", "runs", "kernels", "kernel_launches", "steps", "outliers", "step") \
            or column.startswith(("count_", "kernels_")):
        return fmt.count
    return _text


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return fmt.MISSING
    return str(value)


# -- fitting a table to the terminal -----------------------------------------------------------

MIN_NAME = 16            # the narrowest a name column is cut to, whatever the terminal's width
_GAP = "  "              # between columns
_WORD_END = "_<>,()[]: /.-"   # where a name's parts meet: an elided part begins or ends there


def table(frame: pl.DataFrame, title: str = "", width: int | None = None, wide: bool = False,
          below: Mapping[str, str] | None = None, split: bool = True) -> str:
    """`frame` as an aligned text table (numbers right-aligned), with `title` above it.

    To fit `width` characters a line (the terminal's; None: names to NAME_WIDTH each), names
    (`NAMES`: kernels, runs) are elided in the middle, keeping what tells a column's names apart
    (template arguments, tile and launch shapes: `elide_all`), and other text is wrapped over
    several lines, never cut: a cut can drop the word that says the opposite ("no run of B has
    its workload"). `wide`: names whole. `below`: {column: other column} shows the other's text
    wrapped under the column's in the same cell (a run's label under its id).

    A table whose numbers alone overflow `width` (`compare`'s kernels, `steps`) is split into
    panels one under the other, each repeating the leading key columns (`KEYS`: run, step,
    kernel) so that every row is still told by its name (`_panels`); `split` False (a panel)
    or `wide`: one table, however wide."""
    below = dict(below or {})
    hidden = set(below.values())
    columns = [c for c in frame.columns if c not in hidden]
    heads = [_HEADINGS.get(c, c.replace("_", " ")) for c in columns]
    texts = [[_spelling(c)(v) for v in frame[c]] for c in columns]
    right = [frame.schema[c].is_numeric() for c in columns]
    names = [c in NAMES for c in columns]
    wrapped = [not r and not name and _spelling(c) is _text and c not in UNBROKEN
               for c, r, name in zip(columns, right, names)]
    natural = [max([len(h)] + [len(t) for t in col]) for h, col in zip(heads, texts)]
    for index, column in enumerate(columns):     # text shown under a column widens it too
        if column in below:
            natural[index] = max([natural[index]] + [len(_text(v)) + 2 for v in frame[below[column]]])
    # the narrowest: text its longest word (up to MIN_NAME: a longer one is broken), names MIN_NAME
    shortest = [max(len(h), min(max([len(w) for t in col for w in t.split()], default=0), MIN_NAME)
                    if wrap else min(size, MIN_NAME)) for h, col, wrap, size in zip(heads, texts, wrapped, natural)]
    elastic = [name or wrap for name, wrap in zip(names, wrapped)]
    widths = _fitted(natural, shortest, elastic, width, wide, names)
    if split and width is not None and not wide and _span(widths) > width:
        panels = _panels(columns, _panel_widths(natural, shortest, elastic), width)
        if len(panels) > 1:
            return _paneled(frame, panels, title, width, below)
    cells = []
    for column, col_texts, is_name, wrap, size in zip(columns, texts, names, wrapped, widths):
        if wrap:
            cells.append([_wrapped(t, size) for t in col_texts])
        else:
            shown = elide_all(col_texts, size) if is_name and not wide else col_texts
            cells.append([[t] for t in shown])
        if column in below:
            extra = [["  " + part for part in _wrapped(_text(v), size - 2)] for v in frame[below[column]]]
            cells[-1] = [lines + more for lines, more in zip(cells[-1], extra)]
    widths = [max([len(h)] + [len(part) for lines in col for part in lines]) for h, col in zip(heads, cells)]

    def line(values: list[str]) -> str:
        parts = [v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right)]
        return _GAP.join(parts).rstrip()

    out = (_wrapped(title, width) if width else [title]) if title else []
    out += [line(heads), line(["-" * w for w in widths])]
    for index in range(frame.height):
        row = [col[index] for col in cells]
        height = max(len(lines) for lines in row)
        out += [line([lines[at] if at < len(lines) else "" for lines in row]) for at in range(height)]
    if not frame.height:
        out.append("(none)")
    return "\n".join(out)


# Leading columns that tell a row: repeated in each panel of a table split to fit (`_panels`).
KEYS = (*NAMES, "step", "category", "what", "side")
PANEL_NAME = 32          # the room a name is counted at when columns are shared out among panels


def _span(widths: list[int]) -> int:
    """The characters of a line holding columns `widths` wide."""
    return sum(widths) + len(_GAP) * (len(widths) - 1)


def _panel_widths(natural: list[int], shortest: list[int], elastic: list[bool]) -> list[int]:
    """The width each column is counted at when panels are made: its own, names and text at
    most PANEL_NAME (a name cut narrower than that rarely says which kernel it is)."""
    return [max(least, min(size, PANEL_NAME)) if stretch else size
            for size, least, stretch in zip(natural, shortest, elastic)]


def _panels(columns: list[str], widths: list[int], width: int) -> list[list[str]]:
    """`columns` shared out among panels of at most `width` characters (counting `widths`),
    in order, each starting with the leading key columns; one panel where there is no key
    column, or nothing but keys (nothing to repeat, or nothing to share out)."""
    keys = 0
    while keys < len(columns) and columns[keys] in KEYS:
        keys += 1
    if keys in (0, len(columns)):
        return [columns]
    base = _span(widths[:keys])
    panels: list[list[str]] = [[]]
    used = base
    for column, size in zip(columns[keys:], widths[keys:]):
        if panels[-1] and used + len(_GAP) + size > width:
            panels.append([])
            used = base
        panels[-1].append(column)
        used += len(_GAP) + size
    return [columns[:keys] + panel for panel in panels]


def _paneled(frame: pl.DataFrame, panels: list[list[str]], title: str, width: int,
             below: Mapping[str, str] | None) -> str:
    """`frame` as one table per panel of columns, one under the other: the title over the
    first, "(continued)" over the next; the text shown under a column (`below`) in the first."""
    below = dict(below or {})
    out = []
    for number, panel in enumerate(panels):
        under = {column: other for column, other in below.items() if column in panel} if number == 0 else {}
        heading = title if number == 0 else (f"{title} (continued)" if title else "(continued)")
        out.append(table(frame.select(panel + list(under.values())), heading, width, split=False, below=under))
    return "\n\n".join(out)


def _fitted(natural: list[int], shortest: list[int], elastic: list[bool], width: int | None, wide: bool,
            names: list[bool]) -> list[int]:
    """Each column's width: as wide as its widest cell; the elastic ones (names, text) narrowed
    to fit `width` (None: names to NAME_WIDTH each), none under its `shortest`. The narrower keep
    their width; the wide ones share what is left. `wide`: names keep theirs."""
    if wide:
        elastic = [stretch and not name for stretch, name in zip(elastic, names)]
    if width is None:
        return [min(size, NAME_WIDTH) if stretch else size for size, stretch in zip(natural, elastic)]
    fixed = sum(size for size, stretch in zip(natural, elastic) if not stretch) + len(_GAP) * (len(natural) - 1)
    room = width - fixed
    out = list(natural)
    order = sorted((index for index, stretch in enumerate(elastic) if stretch), key=lambda index: natural[index])
    for position, index in enumerate(order):
        share = room // (len(order) - position)
        out[index] = max(min(natural[index], share), shortest[index])
        room -= out[index]
    return out


def _wrapped(text: str, width: int = NAME_WIDTH) -> list[str]:
    """A sentence as lines of at most `width` characters, every word kept (one longer than the
    line broken over two: every character kept)."""
    import textwrap

    return textwrap.wrap(text, max(width, 1), break_on_hyphens=False) or [""]


def elide_all(names: list[str], width: int) -> list[str]:
    """`names` (one column's) each cut to `width` characters, keeping the part that tells it
    from the others: the characters after the longest beginning it shares with another name
    and before the longest ending it shares (`..._128x128_32x3_nn_align4` against
    `..._64x64_32x6_nn_align4`), from the start of the word they lie in."""
    distinct = sorted(set(names))
    backwards = sorted(name[::-1] for name in distinct)
    spans = {name: _distinguishing(name, distinct, backwards) for name in distinct if len(name) > width}
    return [elide(name, width, *spans[name]) if name in spans else name for name in names]


def _distinguishing(name: str, forwards: list[str], backwards: list[str]) -> tuple[int, int]:
    """(start, end) of what tells `name` from the nearest of the other names (`forwards`
    sorted, `backwards` their reversals sorted): after the longest beginning it shares, before
    the longest ending it shares, widened to whole words."""
    start = _longest_shared(name, forwards)
    end = len(name) - _longest_shared(name[::-1], backwards)
    if end <= start:     # one name the other and more: what follows the shared beginning
        end = min(len(name), start + 1)
    while start > 0 and name[start - 1] not in _WORD_END:    # from the start of its word
        start -= 1
    while end < len(name) and name[end] not in _WORD_END:    # to the end of its word
        end += 1
    return start, end


def _longest_shared(name: str, ordered: list[str]) -> int:
    """The longest beginning `name` shares with another of `ordered` (sorted, holding it): one
    of its two neighbours in the order shares the longest."""
    at = ordered.index(name)
    neighbours = [ordered[index] for index in (at - 1, at + 1) if 0 <= index < len(ordered)]
    return max((_shared_start(name, other) for other in neighbours), default=0)


def _shared_start(first: str, second: str) -> int:
    size = 0
    for mine, theirs in zip(first, second):
        if mine != theirs:
            break
        size += 1
    return size


def elide(text: str, width: int, start: int = 0, end: int | None = None) -> str:
    """`text` cut to `width` characters ("…" where characters were left out), the characters
    `start:end` kept where they fit: the beginning (a kernel's library), the kept span and the
    end (its launch shape) share the room, the end two fifths of what the span leaves."""
    if len(text) <= width:
        return text
    if width < 3:
        return text[:width]
    end = len(text) if end is None else min(end, len(text))
    if end - start > width - 2:          # a span too long to show whole: the name's beginning
        head = start if start <= width // 4 + 2 else width // 4   # (its library), then the span's
        end = start + width - 2 - head
        tail = 0
    else:
        spare = width - (end - start) - 2    # (two cuts at most: "…" each)
        tail = spare * 2 // 5
        head = spare - tail
    shown = _joined(text, _merged([(0, head), (start, end), (len(text) - tail, len(text))]))
    while len(shown) < width:            # spans that merged left room: the beginning takes it
        head += width - len(shown)
        shown = _joined(text, _merged([(0, head), (start, end), (len(text) - tail, len(text))]))
    return shown


def _joined(text: str, pieces: list[tuple[int, int]]) -> str:
    """The pieces of `text` with "…" for each run of characters left out between them."""
    parts, position = [], 0
    for low, high in pieces:
        if low > position:
            parts.append("…")
        parts.append(text[low:high])
        position = high
    if position < len(text):
        parts.append("…")
    return "".join(parts)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans of characters, overlapping or touching ones joined (no "…" between them)."""
    out: list[tuple[int, int]] = []
    for low, high in sorted(span for span in spans if span[1] > span[0]):
        if out and low <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return out


@dataclass(frozen=True)
class Layout:
    """How tables are laid out: `width`, the characters of a line (the terminal's; None: names
    cut to NAME_WIDTH each), and `wide`, names whole whatever the width."""

    width: int | None = None
    wide: bool = False


NARROW = Layout()


def render(frames: Mapping[str, pl.DataFrame], format: str = "table",  # noqa: A002 - the CLI's word
           titles: Mapping[str, str] | None = None, layout: Layout = NARROW) -> str:
    """Several frames in one format: tables (with titles) one after another, one CSV (a single
    frame: `csv_files` gives several, one file each), or one JSON object {name: [rows]}."""
    if format == "json":
        rows = {name: _json_rows(frame) for name, frame in frames.items()}
        return json.dumps(rows, indent=2, ensure_ascii=False)
    if format == "csv":
        if len(frames) != 1:   # several CSVs in one stream is no CSV a tool reads
            raise ValueError(f"one CSV holds one table, not {len(frames)}: {', '.join(frames)}")
        return next(iter(frames.values())).write_csv().rstrip("\n")
    titles = titles or {}
    return "\n\n".join(table(frame, titles.get(name, name), layout.width, layout.wide)
                        for name, frame in frames.items())


def csv_files(frames: Mapping[str, pl.DataFrame]) -> dict[str, str]:
    """Each frame as the text of its own CSV file, `NAME.csv`."""
    return {f"{name}.csv": frame.write_csv() for name, frame in frames.items()}


def summary(frames: Mapping[str, pl.DataFrame], format: str = "table",  # noqa: A002
            only: str | None = None, top: int = 10, layout: Layout = NARROW) -> str:
    """`roofreport summary`'s frames (`analysis/summary.py`); `only`: that frame alone. A table
    lists the top kernels run by run (`_kernel_tables`)."""
    if format != "table":
        return render({only: frames[only]} if only else frames, format)
    # the label names the GPU and the model; FLOP/s says more than FLOPs
    runs, reasons = _bound_reasons(frames["runs"].drop("gpu", "model", "flops"))
    # a distributed job's columns only where some run is one: a dash in every row says nothing
    runs = runs.drop([c for c in ("rank", "parallelism") if c in runs.columns and runs[c].null_count() == runs.height])
    frames = {**frames, "runs": runs}
    titles = {"runs": "Runs", "categories": "Kernel categories (share of each run's GPU time)"}
    shown = [only] if only else list(frames)
    blocks = [table(frames[name], titles[name], layout.width, layout.wide, below={"run": "label"} if name == "runs" else None)
              + "".join("\n" + "\n".join(_wrapped(line, layout.width) if layout.width else [line])
                        for line in (reasons if name == "runs" else []))
              for name in shown if name != "kernels"]
    if "kernels" in shown:
        blocks.append(_kernel_tables(frames["kernels"], frames["runs"], top, layout))
    return "\n\n".join(blocks)


def _bound_reasons(runs: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """The runs table without `bound_note`, a run without a bound class marked `– [n]`, and the
    lines below the table: each reason the model gives (`bound_note`, in the words page 1 says
    it: "No bound class for …: no GPU identified, so no ridge point") once, numbered in the order
    the runs first give it."""
    if "bound_note" not in runs.columns:
        return runs, []
    unclassed = [note if bound is None else None for bound, note in zip(runs["bound"], runs["bound_note"])]
    reasons = list(dict.fromkeys(note for note in unclassed if note))
    marks = [bound if note is None else f"{fmt.MISSING} [{reasons.index(note) + 1}]"
             for bound, note in zip(runs["bound"], unclassed)]
    notes = [f"[{number}] {reason}" for number, reason in enumerate(reasons, 1)]
    heading = ["No bound class where marked, because:"] if notes else []
    return runs.drop("bound_note").with_columns(pl.Series("bound", marks, pl.String)), heading + notes


def _kernel_tables(kernels: pl.DataFrame, runs: pl.DataFrame, top: int, layout: Layout) -> str:
    """The top kernels as one table per run under its id and label, so that the kernel's name
    has the line's room: without the run and rank columns (the order is the rank), nor the
    columns no row of the run fills (the median of an nvprof summary's kernels); the average
    only where some kernel has no median (several summary rows of one kernel, nvprof's)."""
    labels = dict(runs.select("run", "label").iter_rows()) if runs.height else {}
    out = [f"Top {top} kernels per run"]
    for (run,), mine in kernels.group_by(["run"], maintain_order=True):
        # the category as the report's tables show it: both readings ("conv (via GEMM)")
        shown = mine.drop("run", "rank")
        if "category_label" in shown.columns:
            shown = shown.with_columns(pl.col("category_label").alias("category")).drop("category_label")
        shown = shown.select([c for c in shown.columns if shown[c].null_count() < shown.height])
        if "median_ns" in shown.columns and not shown["median_ns"].null_count():
            shown = shown.drop("avg_ns")
        heading = f"{run}" + (f" ({labels[run]})" if labels.get(run) else "")
        lines = _wrapped(heading, layout.width) if layout.width else [heading]
        out.append("\n".join(lines) + "\n" + table(shown, "", layout.width, layout.wide))
    if len(out) == 1:
        out.append("(none)")
    return "\n\n".join(out)


_KERNEL_COLUMNS = ["kernel", "change", "count_a", "count_b", "time_a_ns", "time_b_ns", "delta_ns", "speedup",
                   "flops_per_s_a", "flops_per_s_b", "ai_a", "ai_b"]


def comparison(frames: Mapping[str, pl.DataFrame], format: str = "table",  # noqa: A002
               only: str | None = None, layout: Layout = NARROW) -> str:
    """`roofreport compare`'s frames (`analysis/diff.py`). A table shows each pair of runs in
    turn: which runs, then its totals, categories and kernels (without the columns no row fills)."""
    if only or format != "table":
        return render({only: frames[only]} if only else frames, format, layout=layout)
    blocks = []
    for pair in frames["pairs"].iter_rows(named=True):
        mine = {name: frames[name].filter(pl.col("pair") == pair["pair"]).drop("pair")
                for name in ("totals", "categories", "kernels")}
        kernels = mine["kernels"].select(_KERNEL_COLUMNS)
        kernels = kernels.select([c for c in kernels.columns if kernels[c].null_count() < kernels.height])
        lines = [f"A: {pair['label_a']}  ({pair['run_a']}; time from {pair['time_source_a'] or 'no log'})",
                 f"B: {pair['label_b']}  ({pair['run_b']}; time from {pair['time_source_b'] or 'no log'})",
                 pair["matching"] + (f"; {pair['note']}" if pair["note"] else "")]
        blocks.append("\n".join(part for text in lines for part in _wrapped(text, layout.width or len(text))))
        blocks.append(render({"totals": mine["totals"], "categories": mine["categories"], "kernels": kernels},
                             titles={"totals": "Totals", "categories": "Categories",
                                     "kernels": f"Kernels, biggest change first ({kernels.height} shown)"},
                             layout=layout))
    if frames["unpaired"].height:
        blocks.append(table(frames["unpaired"].select("side", "label", "reason"), "Runs not compared",
                            layout.width, layout.wide))
    return "\n\n".join(blocks)


# `roofreport steps`: per run the medians over its steps, then every step (analysis/steps.py).
STEP_RUN_COLUMNS = ["run", "label", "steps", "outliers", "step_ns", "mfu_pct", "hfu_pct", "achieved_flops_per_s",
                    "peak_source", "precision", "compute_pct", "communication_pct", "memory_pct", "idle_pct",
                    "kernel_launches"]
STEP_COLUMNS = ["run", "step", "name", "duration_ns", "compute_ns", "communication_ns", "memory_ns", "idle_ns",
                "kernel_launches", "model_flops", "mfu_pct", "outlier_reason"]
STEP_TABLES = ("runs", "steps")


def step_frames(summary: pl.DataFrame, steps: pl.DataFrame, labels: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The frames `roofreport steps` prints: `runs` (`steps.step_summary` with each run's label
    from `labels`: run, label) and `steps` (every step, in order)."""
    if not summary.height:
        return {"runs": pl.DataFrame(schema={c: pl.String for c in STEP_RUN_COLUMNS}),
                "steps": pl.DataFrame(schema={c: pl.String for c in STEP_COLUMNS})}
    runs = summary.join(labels.select("run", "label"), on="run", how="left")
    return {"runs": runs.select([c for c in STEP_RUN_COLUMNS if c in runs.columns]).sort("run"),
            "steps": steps.select([c for c in STEP_COLUMNS if c in steps.columns]).sort("run", "step", nulls_last=True)}


def step_tables(frames: Mapping[str, pl.DataFrame], format: str = "table",  # noqa: A002
                only: str | None = None, layout: Layout = NARROW) -> str:
    """`roofreport steps`' frames (`step_frames`); `only`: that frame alone."""
    titles = {"runs": "Training steps per run (medians over the steps; outliers left out)",
              "steps": "Every step (time on the GPU: compute, communication, memory copies, idle)"}
    if format != "table":
        return render({only: frames[only]} if only else frames, format)
    runs = frames["runs"]     # a table leaves out what another column says: the precision (in
    same = runs.height and ((runs["hfu_pct"] - runs["mfu_pct"]).abs().fill_null(0) <= 0.05).all()
    frames = {**frames, "runs": runs.drop("precision", "outliers", *(["hfu_pct"] if same else []))}
    # the peak used), the outliers (the steps table names them), HFU where it is the MFU
    return "\n\n".join(table(frames[name], titles[name], layout.width, layout.wide,
                              below={"run": "label"} if name == "runs" else None)
                        for name in ([only] if only else frames))


def _json_rows(frame: pl.DataFrame) -> list[dict]:
    """Rows as dicts; NaN and infinities (JSON has neither) become null."""
    buffer = io.StringIO()
    frame.write_json(buffer)
    return json.loads(buffer.getvalue())
