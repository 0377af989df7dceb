"""The "Kernel time" section: share of kernel time by category per run (stacked bars), the
uncategorized share and the top kernels of each run (share along sweeps: the comparison section).

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
