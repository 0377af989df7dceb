"""The "Against the baseline" section (`build LOGS --baseline B`): what `roofreport compare B
LOGS` prints, per pair of runs: the totals (kernels, transfers, GPU time), the categories and
the kernels with the biggest change, each with the time in the baseline (A) and in these runs
(B), the delta B - A and the speedup A/B; kernels that appear (B only) or vanish (A only); the
runs that could not be paired, with the reason.

Every number is a cell of `analysis/diff.py`'s frames (`Analysis.baseline`); this module only
picks the rows and formats them. Kernel and category tables sort in the interactive HTML.
"""

from __future__ import annotations

import polars as pl

from roofreport.analysis.diff import Comparison
from roofreport.report import fmt
from roofreport.report.context import Bullets, Heading, Paragraph, Section, Span
from roofreport.report.tables import cell, name_cell, table

KERNELS_SHOWN = 15
KERNEL_NAME_CHARS = 120     # launch-keyed names end in their grid and block: keep them
_TIMES = ["Time A#", "Time B#", "B − A#", "Speedup A/B#"]
_CHANGES = {"added": "appears (B only)", "removed": "vanishes (A only)"}


def baseline_section(comparison: Comparison, top: int = KERNELS_SHOWN) -> Section:
    section = Section("baseline", "Against the baseline")
    section.blocks.append(Paragraph.md(
        "These runs (B) against the baseline's (A), as `roofreport compare` gives them: time from each run's "
        "one time source, B − A (negative: time saved) and the speedup A/B (above 1: B is faster). On one GPU "
        "architecture kernels are matched by name (and launch configuration where a name stands for several); "
        "across architectures those whose names differ are pooled per category (\"gemm kernels\")."))
    for pair in comparison.pairs.iter_rows(named=True):
        section.blocks += _pair_blocks(comparison, pair, top)
    if comparison.unpaired.height:
        section.blocks.append(Heading("Runs not compared"))
        section.blocks.append(Bullets([Paragraph.of(reason, level="warning") for reason in
                                       comparison.unpaired["reason"].to_list()]))
    return section


def _pair_blocks(comparison: Comparison, pair: dict, top: int) -> list:
    name = pair["pair"]
    mine = {frame: getattr(comparison, frame).filter(pl.col("pair") == name)
            for frame in ("totals", "categories", "kernels")}
    blocks: list = [Heading(name), Paragraph([
        Span(f"A: {pair['label_a']} (time from {pair['time_source_a'] or 'no log'}); "
             f"B: {pair['label_b']} (time from {pair['time_source_b'] or 'no log'}); {pair['matching']}.")])]
    if pair["note"]:
        blocks.append(Paragraph.of(pair["note"][0].upper() + pair["note"][1:] + ".", level="warning"))
    totals = [[row["what"], *_times(row)] for row in mine["totals"].iter_rows(named=True)]
    blocks.append(table(["Total", *_TIMES], totals, caption="Totals", css="baseline-totals"))
    blocks.append(table(["Category", "Share A#", "Share B#", *_TIMES],
                        [[row["category"] or "–", cell(fmt.share(row["share_a"]), sort=row["share_a"]),
                          cell(fmt.share(row["share_b"]), sort=row["share_b"]), *_times(row)]
                         for row in mine["categories"].iter_rows(named=True)],
                        caption="Per category, biggest change first", css="baseline-categories", sortable=True))
    blocks += _kernel_blocks(mine["kernels"], top)
    return blocks


def _kernel_blocks(kernels: pl.DataFrame, top: int) -> list:
    rows = [[name_cell(row["kernel"], KERNEL_NAME_CHARS), row["category"] or "–",
             _CHANGES.get(row["change"], row["change"] or "–"), *_times(row)]
            for row in kernels.head(top).iter_rows(named=True)]
    blocks = [table(["Kernel", "Category", "Change", *_TIMES], rows, css="baseline-kernels", sortable=True,
                    caption=f"Kernels, biggest change first ({min(top, kernels.height)} of {kernels.height})")]
    added, removed = (kernels.filter(pl.col("change") == change).height for change in ("added", "removed"))
    if added or removed:
        blocks.append(Paragraph.of(f"Of {kernels.height} kernels (or pools), {added} appear{'s' if added == 1 else ''} "
                                   f"in B only and {removed} vanish{'es' if removed == 1 else ''} (A only)."))
    return blocks


def _times(row: dict) -> list:
    """Time A, time B, B - A and A/B of one row of the frames, with their values to sort by."""
    delta = row["delta_ns"]
    signed = fmt.duration(delta) if delta is None or delta <= 0 else "+" + fmt.duration(delta)
    return [cell(fmt.duration(row["time_a_ns"]), sort=row["time_a_ns"]),
            cell(fmt.duration(row["time_b_ns"]), sort=row["time_b_ns"]),
            cell(signed, sort=delta), cell(fmt.ratio(row["speedup"]), sort=row["speedup"])]
