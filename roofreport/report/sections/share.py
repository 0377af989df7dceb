"""The "Kernel time" section: share of kernel time by category per run (stacked bars), the
uncategorized share, the top kernels of each run, and share against batch size for sweeps.

All numbers come from `analysis.share`; this module only orders, groups and draws them.
"""

from __future__ import annotations

import polars as pl

from roofreport.enrich import categories as cat_rules
from roofreport.report import fmt
from roofreport.report.context import Heading, Paragraph, Section, chart
from roofreport.report.tables import cell, name_cell, table

SWEEP_CATEGORIES = 3
EMPTY = ("No kernel times: a kernel-share breakdown needs a kernel summary or trace, e.g. "
         "`nsys profile --stats=true python train.py` (cuda_gpu_kern_sum), "
         "`nsys stats --report cuda_gpu_trace --format csv report.nsys-rep`, or `nvprof python train.py`.")


def category_order(present: list[str]) -> list[str]:
    """Categories in rule order (the report's fixed colour order), then unknown ones, `other` last."""
    ordered = list(dict.fromkeys([*cat_rules.NAMES, *(name for name, _ in cat_rules.CATEGORIES)]))
    ordered += [c for c in present if c not in ordered]
    ordered = [c for c in ordered if c != "other"] + ["other"]
    return [c for c in ordered if c in present]


def share_section(an, top_n: int) -> Section:
    section = Section("share", "Where the GPU time goes")
    share = an.share.filter(pl.col("time_ns").is_not_null())
    if not share.height:
        section.empty = EMPTY
        return section
    runs = share["run"].unique(maintain_order=True).to_list()
    cats = category_order(share["category"].unique().to_list())
    section.blocks.append(Paragraph.of(
        "Share of each run's GPU time by kernel category, from one time source per run (a trace when there "
        "is one). Rules: conv includes winograd, implicit-GEMM and FFT convolutions; communication is NCCL; "
        "memcpy/memset are host-device transfers, counted when the log lists them. \"other\" is what no "
        "rule matched (the uncategorized share)."))
    section.blocks += _bar_charts(share, runs, cats)
    section.blocks.append(_summary_table(share, an.uncategorized, runs))
    section.blocks += sweep_blocks(an.sweeps, an.pattern_sweeps, cats)
    section.blocks += _top_tables(an.top, runs, top_n)
    return section


def _bar_charts(share: pl.DataFrame, runs: list[str], cats: list[str]) -> list:
    from roofreport.report.charts.share import RUNS_PER_CHART, share_bars_svg

    values = {(r["run"], r["category"]): r["share"] or 0.0 for r in share.iter_rows(named=True)}
    blocks = []
    for start in range(0, len(runs), RUNS_PER_CHART):
        chunk = runs[start:start + RUNS_PER_CHART]
        chart_id = f"share{start // RUNS_PER_CHART + 1}"
        part = f" (runs {start + 1}–{start + len(chunk)} of {len(runs)})" if len(runs) > RUNS_PER_CHART else ""
        blocks.append(chart(chart_id, f"GPU time by kernel category{part}", share_bars_svg, chunk, cats, values))
    return blocks


TRANSFERS = ("memcpy", "memset")


def _summary_table(share: pl.DataFrame, uncategorized: pl.DataFrame, runs: list[str]):
    other = {r["run"]: r["share"] for r in uncategorized.iter_rows(named=True)}
    rows = []
    for run in runs:
        mine = share.filter(pl.col("run") == run).sort("time_ns", descending=True)
        compute = mine.filter(~pl.col("category").is_in(TRANSFERS))
        source = mine["time_source"][0] if "time_source" in mine.columns else None
        rows.append([name_cell(run, 48), cell(fmt.duration(mine["time_ns"].sum()), sub=source),
                     fmt.share(mine.filter(pl.col("category").is_in(TRANSFERS))["share"].sum()),
                     _lead(compute), cell(fmt.share(other.get(run, 0.0)),
                                          css="warn" if (other.get(run) or 0) > 0.25 else "")])
    return table(["Run", "GPU time#", "Transfers#", "Largest kernel category", "Uncategorized#"], rows,
                 caption="GPU time per run")


def _lead(frame: pl.DataFrame) -> str:
    if not frame.height:
        return "–"
    top = frame.row(0, named=True)
    return f"{top['category']} ({fmt.share(top['share'])})"


def _top_tables(top: pl.DataFrame, runs: list[str], top_n: int) -> list:
    blocks: list = []
    if not top.height:
        return blocks
    blocks.append(Heading(f"Top {top_n} kernels per run"))
    for run in runs:
        mine = top.filter(pl.col("run") == run).sort("time_ns", descending=True, nulls_last=True)
        if not mine.height:
            continue
        rows = [[name_cell(r["short_name"], 72), r.get("category") or "–", fmt.count(r.get("count")),
                 fmt.duration(r.get("time_ns")), fmt.share(r.get("share"))] for r in mine.iter_rows(named=True)]
        blocks.append(table(["Kernel", "Category", "Launches#", "Time#", "Share#"], rows, caption=run,
                            css="kernels"))
    return blocks


PATTERN_COLOURS = ["#332288", "#117733", "#AA4499", "#88CCEE"]


def sweep_blocks(sweeps: pl.DataFrame, pattern_sweeps: pl.DataFrame, cats: list[str]) -> list:
    """Share against batch size, one chart per experiment: the largest categories (solid) and the
    kernel families of `analyses.SWEEP_PATTERNS` that take time (dashed)."""
    frames = _sweep_frames(sweeps, pattern_sweeps, cats)
    if not frames.height:
        return []
    from roofreport.report.charts.share import sweep_svg

    blocks: list = [Heading("Share against batch size"), Paragraph.of(
        "Runs that differ only in batch size, per GPU and model. Solid lines are kernel categories, dashed "
        "lines kernel families picked by name (they overlap categories: winograd kernels are part of conv).")]
    for i, experiment in enumerate(frames["experiment"].unique(maintain_order=True).to_list()):
        lines = _sweep_lines(frames.filter(pl.col("experiment").eq_missing(experiment)))
        if lines:
            title = "Kernel-time share vs batch size" + (f" — experiment “{experiment}”" if experiment else "")
            blocks.append(chart(f"sweep{i + 1}", title, sweep_svg, lines))
    return blocks if len(blocks) > 2 else []


def _sweep_frames(sweeps: pl.DataFrame, patterns: pl.DataFrame, cats: list[str]) -> pl.DataFrame:
    """gpu, model, experiment, batch_size, label, share, colour, dashed: the lines worth drawing."""
    from roofreport.report.charts.share import category_colour

    cols = ["gpu", "model", "experiment", "batch_size", "label", "share"]
    parts = []
    if sweeps.height:
        chosen = _sweep_categories(sweeps)
        part = sweeps.filter(pl.col("category").is_in(chosen)).rename({"category": "label"}).select(cols)
        parts.append(part.with_columns(
            pl.col("label").replace_strict({c: category_colour(c, cats) for c in chosen}).alias("colour"),
            pl.lit(False).alias("dashed")))
    if patterns.height:
        shown = patterns.group_by("label").agg(pl.col("share").max()).filter(pl.col("share") > 0.01)["label"]
        labels = patterns["label"].unique(maintain_order=True).to_list()
        part = patterns.filter(pl.col("label").is_in(shown.to_list())).select(cols)
        parts.append(part.with_columns(
            pl.col("label").replace_strict({l: PATTERN_COLOURS[i % 4] for i, l in enumerate(labels)}).alias("colour"),
            pl.lit(True).alias("dashed")))
    parts = [p.with_columns(pl.col("gpu", "model", "experiment").cast(pl.String)) for p in parts if p.height]
    if not parts:
        return pl.DataFrame()
    lines = pl.concat(parts)
    if "NCCL kernels" in lines["label"].to_list():   # the same time as the communication category
        lines = lines.filter(pl.col("label") != "communication")
    return lines


def _sweep_lines(frame: pl.DataFrame) -> list:
    from roofreport.report.charts.share import SweepLine

    lines = []
    for key, group in frame.sort("batch_size").group_by("gpu", "model", "label", maintain_order=True):
        if group.height >= 2:
            lines.append(SweepLine(str(key[0]), str(key[1]), str(key[2]), group["batch_size"].to_list(),
                                   group["share"].to_list(), group["colour"][0], bool(group["dashed"][0])))
    return lines


def _sweep_categories(sweeps: pl.DataFrame) -> list[str]:
    """The categories with the largest mean share across the sweep (not "other")."""
    means = (sweeps.group_by("category").agg(pl.col("share").mean().alias("m"), pl.col("share").max().alias("x"))
             .filter((pl.col("x") > 0.02) & (pl.col("category") != "other"))
             .sort(["m", "category"], descending=[True, False]))
    return means["category"].to_list()[:SWEEP_CATEGORIES]
