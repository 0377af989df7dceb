"""The "Kernel time" section: share of kernel time by category per run (stacked bars), the
uncategorized share, the top kernels of each run, and share against batch size for sweeps.

All numbers come from `analysis.share`; this module only orders, groups and draws them.
"""

from __future__ import annotations

import polars as pl

from roofreport.analysis import categories as cat_rules
from roofreport.report import fmt
from roofreport.report.context import Chart, Heading, Paragraph, Section
from roofreport.report.tables import cell, name_cell, table

SWEEP_CATEGORIES = 4
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
    section = Section("share", "Where the kernel time goes")
    share = an.share.filter(pl.col("time_ns").is_not_null())
    if not share.height:
        section.empty = EMPTY
        return section
    runs = share["run"].unique(maintain_order=True).to_list()
    cats = category_order(share["category"].unique().to_list())
    section.blocks.append(Paragraph.of(
        "Share of each run's GPU kernel time by kernel category (rules: conv includes winograd, "
        "implicit-GEMM and FFT convolutions; communication is NCCL; memcpy/memset when the log has them). "
        "\"other\" is what no rule matched."))
    section.blocks += _bar_charts(share, runs, cats)
    section.blocks.append(_summary_table(share, an.uncategorized, runs))
    section.blocks += sweep_blocks(an.sweeps, cats)
    section.blocks += _top_tables(an.top, runs, top_n)
    return section


def _bar_charts(share: pl.DataFrame, runs: list[str], cats: list[str]) -> list:
    from roofreport.report.share_charts import RUNS_PER_CHART, share_bars_svg

    values = {(r["run"], r["category"]): r["share"] or 0.0 for r in share.iter_rows(named=True)}
    blocks = []
    for start in range(0, len(runs), RUNS_PER_CHART):
        chunk = runs[start:start + RUNS_PER_CHART]
        chart_id = f"share{start // RUNS_PER_CHART + 1}"
        part = f" (runs {start + 1}–{start + len(chunk)} of {len(runs)})" if len(runs) > RUNS_PER_CHART else ""
        blocks.append(Chart(chart_id, share_bars_svg(chart_id, chunk, cats, values),
                            f"Kernel time by category{part}"))
    return blocks


def _summary_table(share: pl.DataFrame, uncategorized: pl.DataFrame, runs: list[str]):
    other = {r["run"]: r["share"] for r in uncategorized.iter_rows(named=True)}
    rows = []
    for run in runs:
        mine = share.filter(pl.col("run") == run).sort("time_ns", descending=True)
        top = mine.row(0, named=True)
        rows.append([name_cell(run, 48), fmt.duration(mine["time_ns"].sum()),
                     f"{top['category']} ({fmt.share(top['share'])})",
                     cell(fmt.share(other.get(run, 0.0)), css="warn" if (other.get(run) or 0) > 0.25 else "")])
    return table(["Run", "Kernel time#", "Largest category", "Uncategorized#"], rows,
                 caption="Kernel time per run")


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


def sweep_blocks(sweeps: pl.DataFrame, cats: list[str]) -> list:
    """Share against batch size, one chart per experiment, one panel per GPU."""
    if not sweeps.height or sweeps["batch_size"].n_unique() < 2:
        return []
    from roofreport.report.share_charts import SweepLine, sweep_svg

    blocks: list = [Heading("Share against batch size")]
    chosen = _sweep_categories(sweeps)
    for i, experiment in enumerate(sweeps["experiment"].unique(maintain_order=True).to_list()):
        part = sweeps.filter(pl.col("experiment").eq_missing(experiment) & pl.col("category").is_in(chosen))
        lines = []
        for key, group in part.sort("batch_size").group_by("gpu", "model", "category", maintain_order=True):
            if group.height >= 2:
                lines.append(SweepLine(str(key[0]), str(key[1]), str(key[2]),
                                       group["batch_size"].to_list(), group["share"].to_list()))
        if not lines:
            continue
        title = f"Kernel-time share vs batch size — experiment {experiment}" if experiment else \
            "Kernel-time share vs batch size"
        blocks.append(Chart(f"sweep{i + 1}", sweep_svg(f"sweep{i + 1}", title, lines, cats), title))
    return blocks if len(blocks) > 1 else []


def _sweep_categories(sweeps: pl.DataFrame) -> list[str]:
    """Communication (NCCL) whenever present, then the categories with the largest mean share."""
    means = (sweeps.group_by("category").agg(pl.col("share").mean().alias("m"), pl.col("share").max().alias("x"))
             .filter(pl.col("x") > 0.02).sort("m", descending=True))
    chosen = [c for c in means["category"].to_list() if c != "other"][:SWEEP_CATEGORIES]
    if "communication" in means["category"].to_list() and "communication" not in chosen:
        chosen = chosen[:SWEEP_CATEGORIES - 1] + ["communication"]
    return chosen
