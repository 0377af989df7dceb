"""The "Where the GPU time goes" section: share of kernel time by category per run (stacked
bars) and each run's top kernels with the rest summed as "other kernels" (share along sweeps:
the comparison section).

The top kernels are shown side by side for runs that differ only in their GPU and parameters
(one table per model and experiment, `naming.RunNames.groups`): one column per run, one row per kernel
that is among the top N of one of them. A run's column holds its own top N and its "other
kernels", so every column adds up to its run's whole kernel time.

All numbers come from `analysis.share`; this module only orders, groups and draws them.
"""

from __future__ import annotations

import polars as pl

from roofreport.enrich import categories as cat_rules
from roofreport.report import fmt
from roofreport.report.context import Column, Heading, Paragraph, Section, chart
from roofreport.report.naming import RunNames
from roofreport.report.tables import cell, name_cell, table

COLUMNS_PER_TABLE = 6
KERNEL_NAME_CHARS = 160     # the table is where a kernel's name is given in full: wrap, do not cut
EMPTY = ("No kernel times: a kernel-share breakdown needs a kernel summary or trace, e.g. "
         "`nsys profile --stats=true python train.py` (cuda_gpu_kern_sum), "
         "`nsys stats --report cuda_gpu_trace --format csv report.nsys-rep`, or `nvprof python train.py`.")


def category_order(present: list[str]) -> list[str]:
    """Categories in rule order (the report's fixed colour order), then unknown ones, `other` last."""
    ordered = list(dict.fromkeys([*cat_rules.NAMES, *(name for name, _ in cat_rules.CATEGORIES)]))
    ordered += [c for c in present if c not in ordered]
    ordered = [c for c in ordered if c != "other"] + ["other"]
    return [c for c in ordered if c in present]


def share_section(an, top_n: int, names: RunNames | None = None) -> Section:
    section = Section("share", "Where the GPU time goes")
    names = names or RunNames(an.tables["runs"])
    share = an.share.filter(pl.col("time_ns").is_not_null())
    if not share.height:
        section.empty = EMPTY
        return section
    runs = names.order(share["run"].to_list())
    cats = category_order(share["category"].unique().to_list())
    section.blocks.append(Paragraph.of(
        "Share of each run's GPU time by kernel category, from one time source per run (a trace when there "
        "is one). Rules: conv includes winograd, implicit-GEMM and cuDNN's FFT convolutions; fft is cuFFT; "
        "communication is NCCL; memcpy/memset are host-device transfers, counted when the log lists them. "
        "\"uncategorized\" is what no rule matched."))
    section.blocks += _bar_charts(share, runs, cats, names)
    section.blocks += top_tables(an.top, an.top_rest, runs, top_n, names)
    return section


def _bar_charts(share: pl.DataFrame, runs: list[str], cats: list[str], names: RunNames) -> list:
    from roofreport.report.charts.share import RUNS_PER_CHART, share_bars_svg

    values = {(r["run"], r["category"]): r["share"] or 0.0 for r in share.iter_rows(named=True)}
    charts_needed = -(-len(runs) // RUNS_PER_CHART)
    per_chart = -(-len(runs) // charts_needed)          # even parts: 79 runs -> 40 + 39, not 40 + 39 + 0
    blocks = []
    for start in range(0, len(runs), per_chart):
        chunk = runs[start:start + per_chart]
        chart_id = f"share{start // per_chart + 1}"
        part = f" (runs {start + 1}–{start + len(chunk)} of {len(runs)})" if len(runs) > per_chart else ""
        labelled = {(names.label(run), category): value for (run, category), value in values.items()
                    if run in chunk}
        blocks.append(chart(chart_id, f"GPU time by kernel category{part}", share_bars_svg,
                            [names.label(run) for run in chunk], cats, labelled))
    return blocks


def top_tables(top: pl.DataFrame, rest: pl.DataFrame, runs: list[str], top_n: int, names: RunNames) -> list:
    """One table per group of runs: their top kernels side by side, then the rest and the total."""
    if not top.height:
        return []
    with_top = [run for run in runs if run in set(top["run"].to_list())]
    blocks: list = [Heading(f"Top {top_n} kernels per run"), Paragraph.of(
        f"Each column is one run: its {top_n} kernels with the most GPU time, as a share of the run's kernel "
        "time, and the rest summed as \"other kernels\". A blank cell: that kernel is not among the run's "
        f"top {top_n} (its time is in \"other kernels\"). Runs are grouped by model and experiment; the "
        "columns name what differs (GPU, parameters).")]
    rest_by_run = {r["run"]: r for r in rest.iter_rows(named=True)}
    for group in names.groups(with_top, COLUMNS_PER_TABLE):
        blocks.append(_group_table(group, top, rest_by_run))
    return blocks


def _group_table(group, top: pl.DataFrame, rest_by_run: dict):
    runs = [run for run, _ in group.columns]
    mine = top.filter(pl.col("run").is_in(runs))
    shares = {(r["run"], r["short_name"]): r["share"] for r in mine.iter_rows(named=True)}
    category = {r["short_name"]: r.get("category") for r in mine.iter_rows(named=True)}
    weight: dict[str, float] = {}
    for (_, kernel), value in shares.items():
        weight[kernel] = weight.get(kernel, 0.0) + (value or 0.0)
    kernels = sorted(weight, key=lambda k: (-weight[k], k))
    rows = [[name_cell(k, KERNEL_NAME_CHARS), category.get(k) or "–"]
            + [_share_cell(shares.get((run, k)), present=(run, k) in shares) for run in runs] for k in kernels]
    rows.append([cell("other kernels", css="rest"), cell("", css="rest")]
                + [cell(_rest_text(rest_by_run.get(run)), css="rest num") for run in runs])
    rows.append([cell("GPU time (all kernels)", css="total"), cell("", css="total")]
                + [cell(fmt.duration((rest_by_run.get(run) or {}).get("total_ns")), css="total num")
                   for run in runs])
    run_width = min(11.0, 52.0 / len(runs))
    cols = [Column("Kernel", width=f"{100 - 13 - run_width * len(runs):.0f}%"), Column("Category", width="13%")]
    cols += [Column(heading, numeric=True, width=f"{run_width:.1f}%") for _, heading in group.columns]
    return table(cols, rows, caption=group.title, css="kernels", sortable=True)


def _share_cell(value, present: bool):
    return cell(fmt.share(value), sort=value) if present else cell("")


def _rest_text(rest: dict | None) -> str:
    if not rest:
        return "–"
    return fmt.share(rest["share"]) if rest["kernels"] else "none"
