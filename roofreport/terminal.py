"""Analysis frames as the terminal shows them (`summary`, `compare`): aligned text tables, CSV or JSON.

The CLI prints what this module returns; nothing here computes. A table spells numbers as the
report does (`report.fmt`: "12.3 ms", "45.2 %", "2.03×"), chosen by the column's name (`*_ns`
a duration, `share` a fraction, `speedup` a ratio...), and cuts long names to keep rows on one
line. CSV and JSON give every value as it is, in base units (ns, FLOP, FLOP/s, bytes), for
scripts: CSV one table at a time (`# name` lines separate several), JSON one object holding
every table as a list of rows.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Mapping

import polars as pl

from roofreport.report import fmt

FORMATS = ("table", "csv", "json")
NAME_WIDTH = 64          # characters of a name shown in a table (CSV and JSON keep it whole)
SENTENCES = ("reason", "note")   # columns of sentences: wrapped, never cut

# Headings of the columns that need more than their name with spaces.
_HEADINGS = {
    "kernel_time_ns": "kernel time", "transfer_time_ns": "transfers", "time_ns": "time",
    "avg_ns": "average", "kernel_launches": "launches", "count": "launches",
    "achieved_flops_per_s": "FLOP/s", "arithmetic_intensity": "FLOP/B", "flops": "FLOPs",
    "time_a_ns": "time A", "time_b_ns": "time B", "delta_ns": "B - A", "count_a": "launches A",
    "count_b": "launches B", "share_a": "share A", "share_b": "share B",
    "flops_per_s_a": "FLOP/s A", "flops_per_s_b": "FLOP/s B", "ai_a": "FLOP/B A", "ai_b": "FLOP/B B",
    "speedup": "A/B",
}


def _spelling(column: str) -> Callable[[object], str]:
    """How a column's values are written in a table, from its name."""
    if column.endswith("_ns"):
        return fmt.duration
    if column.startswith("share"):
        return fmt.share
    if column == "speedup":
        return fmt.ratio
    if "flops_per_s" in column:
        return fmt.rate
    if column == "flops":
        return fmt.flops
    if column in ("arithmetic_intensity",) or column.startswith("ai_"):
        return fmt.intensity
    if column in ("count", "rank", "runs", "kernels", "kernel_launches") or column.startswith(("count_", "kernels_")):
        return fmt.count
    return _text


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return fmt.MISSING
    text = str(value)
    if len(text) <= NAME_WIDTH:
        return text
    # Cut in the middle: a kernel's name starts with its library and ends with what tells
    # variants apart (template arguments, the launch configuration).
    head = (NAME_WIDTH - 1) * 3 // 5
    return text[:head] + "…" + text[len(text) - (NAME_WIDTH - 1 - head):]


def table(frame: pl.DataFrame, title: str = "") -> str:
    """`frame` as an aligned text table (numbers right-aligned), with `title` above it. Sentences
    (`reason`, `note`) are wrapped over several lines, never cut: a cut can drop the word that
    says the opposite ("no run of B has its workload")."""
    columns = frame.columns
    heads = [_HEADINGS.get(c, c.replace("_", " ")) for c in columns]
    cells = [[_wrapped(v) if c in SENTENCES else [_spelling(c)(v)] for c, v in zip(columns, row)]
             for row in frame.iter_rows()]
    right = [frame.schema[c].is_numeric() for c in columns]
    widths = [max([len(h)] + [len(part) for r in cells for part in r[i]]) for i, h in enumerate(heads)]

    def line(values: list[str]) -> str:
        parts = [v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right)]
        return "  ".join(parts).rstrip()

    out = [title] if title else []
    out += [line(heads), line(["-" * w for w in widths])]
    for row in cells:
        height = max(len(parts) for parts in row)
        out += [line([parts[index] if index < len(parts) else "" for parts in row]) for index in range(height)]
    if not cells:
        out.append("(none)")
    return "\n".join(out)


def _wrapped(value: object, width: int = NAME_WIDTH) -> list[str]:
    """A sentence as lines of at most `width` characters, every word kept."""
    import textwrap

    text = _text_whole(value)
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]


def _text_whole(value: object) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return fmt.MISSING
    return str(value)


def render(frames: Mapping[str, pl.DataFrame], format: str = "table",  # noqa: A002 - the CLI's word
           titles: Mapping[str, str] | None = None) -> str:
    """Several frames in one format: tables (with titles) one after another, CSV blocks each
    under a `# name` line (one frame: the bare CSV), or one JSON object {name: [rows]}."""
    if format == "json":
        rows = {name: _json_rows(frame) for name, frame in frames.items()}
        return json.dumps(rows, indent=2, ensure_ascii=False)
    if format == "csv":
        blocks = [(name, frame.write_csv()) for name, frame in frames.items()]
        if len(blocks) == 1:
            return blocks[0][1].rstrip("\n")
        return "\n".join(f"# {name}\n{text}" for name, text in blocks).rstrip("\n")
    titles = titles or {}
    return "\n\n".join(table(frame, titles.get(name, name)) for name, frame in frames.items())


def summary(frames: Mapping[str, pl.DataFrame], format: str = "table",  # noqa: A002
            only: str | None = None, top: int = 10) -> str:
    """`roofreport summary`'s frames (`analysis/summary.py`); `only`: that frame alone."""
    if format == "table":   # the label names the GPU and the model; FLOP/s says more than FLOPs
        frames = {**frames, "runs": frames["runs"].drop("gpu", "model", "flops")}
    titles = {"runs": "Runs", "categories": "Kernel categories (share of each run's GPU time)",
              "kernels": f"Top {top} kernels per run"}
    return render({only: frames[only]} if only else frames, format, titles)


_KERNEL_COLUMNS = ["kernel", "change", "count_a", "count_b", "time_a_ns", "time_b_ns", "delta_ns", "speedup",
                   "flops_per_s_a", "flops_per_s_b", "ai_a", "ai_b"]


def comparison(frames: Mapping[str, pl.DataFrame], format: str = "table",  # noqa: A002
               only: str | None = None) -> str:
    """`roofreport compare`'s frames (`analysis/diff.py`). A table shows each pair of runs in
    turn: which runs, then its totals, categories and kernels (without the columns no row fills)."""
    if only or format != "table":
        return render({only: frames[only]} if only else frames, format)
    blocks = []
    for pair in frames["pairs"].iter_rows(named=True):
        mine = {name: frames[name].filter(pl.col("pair") == pair["pair"]).drop("pair")
                for name in ("totals", "categories", "kernels")}
        kernels = mine["kernels"].select(_KERNEL_COLUMNS)
        kernels = kernels.select([c for c in kernels.columns if kernels[c].null_count() < kernels.height])
        blocks.append("\n".join([
            f"A: {pair['label_a']}  ({pair['run_a']}; time from {pair['time_source_a'] or 'no log'})",
            f"B: {pair['label_b']}  ({pair['run_b']}; time from {pair['time_source_b'] or 'no log'})",
            pair["matching"] + (f"; {pair['note']}" if pair["note"] else "")]))
        blocks.append(render({"totals": mine["totals"], "categories": mine["categories"], "kernels": kernels},
                             titles={"totals": "Totals", "categories": "Categories",
                                     "kernels": f"Kernels, biggest change first ({kernels.height} shown)"}))
    if frames["unpaired"].height:
        blocks.append(table(frames["unpaired"].select("side", "label", "reason"), "Runs not compared"))
    return "\n\n".join(blocks)


def _json_rows(frame: pl.DataFrame) -> list[dict]:
    """Rows as dicts; NaN and infinities (JSON has neither) become null."""
    buffer = io.StringIO()
    frame.write_json(buffer)
    return json.loads(buffer.getvalue())
