"""The "Rooflines" section: one log-log chart per GPU with its ceilings (per precision and
memory level, from `roofline.ceilings`), the runs (`run_roofline`) and their top kernels
(`kernel_roofline`) as points, and a table of the numbers behind the points.
"""

from __future__ import annotations

import polars as pl

from roofreport.analysis import roofline
from roofreport.report import fmt
from roofreport.report.context import Bullets, Heading, Paragraph, Section, Span, chart
from roofreport.report.sections.comparison import bound_cell, flops_cell, spans_list
from roofreport.report.tables import name_cell, table

KERNELS_PER_RUN = 12
EMPTY = ("No run has both FLOP and byte counts, so there is nothing to place on a roofline. "
         "Collect them with `ncu --metrics gpu__time_duration.sum,dram__bytes.sum,"
         "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,"
         "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum` (add the d*/h* counters for fp64/fp16), or "
         "nvprof `--metrics flop_count_sp,dram_read_transactions,dram_write_transactions`.")


def roofline_section(an, top_n: int) -> Section:
    section = Section("rooflines", "Rooflines")
    runs = an.roofline.filter(pl.col("flops").is_not_null() & (pl.col("flops") > 0))
    if not runs.height:
        section.empty = EMPTY
        return section
    section.blocks.append(Paragraph.of(
        "Achieved FLOP/s against arithmetic intensity (FLOP per DRAM byte), log-log. Large markers are "
        "runs, small ones their most time-consuming kernels; hollow markers place a run at its L2 and L1 "
        "intensity when the log counted those bytes (hierarchical roofline). Sloped lines are memory "
        "bandwidth ceilings, flat ones compute ceilings; a point under the sloped part is memory-bound, "
        "under the flat part compute-bound, far below both latency-bound."))
    for i, gpu in enumerate(_gpus(runs)):
        section.blocks += _gpu_blocks(an, runs, gpu, min(top_n, KERNELS_PER_RUN), f"roof{i + 1}")
    return section


def _gpus(runs: pl.DataFrame) -> list[str | None]:
    return runs.select(pl.col("gpu_model").unique(maintain_order=True)).to_series().to_list()


def _gpu_blocks(an, runs: pl.DataFrame, gpu: str | None, per_run: int, chart_id: str) -> list:
    mine = runs.filter(pl.col("gpu_model").eq_missing(gpu))
    spec = an.db.get(gpu) if gpu else None
    title = f"{spec.key} ({spec.arch})" if spec and spec.arch else (gpu or "GPU not identified")
    blocks: list = [Heading(title)]
    if spec is None:
        blocks.append(Paragraph.md(
            "No peaks for these runs: the logs do not name a GPU the database knows. Pass "
            "`--gpu NAME` or `--peaks FILE` to draw ceilings.", level="warning"))
    untimed = mine.filter(pl.col("achieved_flops_per_s").is_null())["run"].unique(maintain_order=True).to_list()
    if untimed:
        blocks.append(Paragraph([Span("No point for ")] + spans_list(untimed, 4) + [Span(
            ": FLOPs were counted but no kernel time was logged with them (an nvprof --metrics run, for "
            "example, times nothing).")]))
    if mine.height > len(untimed):
        blocks.append(_chart(an, mine, spec, title, per_run, chart_id))
    blocks.append(_points_table(mine))
    blocks += _notes(mine)
    return blocks


def _chart(an, mine: pl.DataFrame, spec, title: str, per_run: int, chart_id: str):
    from roofreport.report.charts.roofline import roofline_svg

    ceilings = roofline.ceilings(spec, _measured(mine, an.tables["kernels"])) if spec else []
    kernels = _top_kernel_points(an.kernel_roofline, mine, per_run)
    caption = f"Roofline of {title}"
    if spec is not None:
        caption += f"; ceilings: {_peak_sources(mine, spec)}"
    return chart(chart_id, caption, roofline_svg, ceilings, _run_points(mine) + kernels)


def _notes(runs: pl.DataFrame) -> list:
    """The analysis' notes on points (incomplete FLOPs, above a roof...), each once, with its runs."""
    noted = runs.filter(pl.col("note").is_not_null())
    if not noted.height:
        return []
    items = []
    for (note,), group in noted.group_by(["note"], maintain_order=True):
        names = [f"{r} ({p})" for r, p in group.select("run", "precision").iter_rows()]
        items.append(Paragraph([Span(note[0].upper() + note[1:]), Span(": ")] + spans_list(names, 8)
                               + [Span(".")], level="warning"))
    return [Bullets(items)]


def _peak_sources(runs: pl.DataFrame, spec) -> str:
    parts = [p.strip() for s in runs["peak_source"].drop_nulls().to_list() for p in s.split(";")]
    parts = list(dict.fromkeys(p for p in parts if p))
    return "; ".join(parts) if parts else spec.source


_LEVELS = {"dram": "peak_dram_bytes_per_s", "l2": "peak_l2_bytes_per_s", "l1": "peak_l1_bytes_per_s"}


def _measured(runs: pl.DataFrame, kernels: pl.DataFrame) -> dict:
    """The ceilings the analysis judged these runs against (medians), in `ceilings()` terms, so
    the chart draws the same roofs the table's % of roof used (measured or clock-scaled peaks),
    and the SM clock the logs ran at (scales the datasheet peaks no row used, e.g. tensor)."""
    out = {}
    clocks = kernels.filter(pl.col("run").is_in(runs["run"].to_list()))["sm_clock_hz"].drop_nulls()
    # Runs timed by a trace ran at boost clock: their roofs are unscaled, as in the analysis.
    if clocks.len() and not roofline.trace_timed(runs["time_source"].to_list()):
        out["sm_clock_hz"] = clocks.median()
    for precision in ("fp64", "fp32", "fp16"):
        values = runs.filter(pl.col("precision") == precision)["peak_flops_per_s"].drop_nulls()
        if values.len():
            out[precision] = values.median()
    for level, col in _LEVELS.items():
        if col in runs.columns and runs[col].drop_nulls().len():
            out[level] = runs[col].drop_nulls().median()
    return out


def _run_points(runs: pl.DataFrame) -> list:
    """Each run at its DRAM intensity, and at its L2/L1 intensities when the log had those bytes."""
    from roofreport.report.charts.roofline import RoofPoint

    points = []
    for r in runs.iter_rows(named=True):
        for level in ("dram", "l2", "l1"):
            if r.get(f"ai_{level}") is not None:
                points.append(RoofPoint(group=r["run"], label=r["run"], ai=r[f"ai_{level}"],
                                        perf=r["achieved_flops_per_s"], precision=r["precision"],
                                        above_roof=bool(r.get("above_roof")) and level == "dram", level=level))
    return points


def _top_kernel_points(kernels: pl.DataFrame, runs: pl.DataFrame, per_run: int) -> list:
    from roofreport.report.charts.roofline import RoofPoint

    if not kernels.height:
        return []
    keys = runs.select("run", "precision")
    top = (kernels.join(keys, on=["run", "precision"], how="semi")
           .filter(pl.col("ai_dram").is_not_null() & pl.col("achieved_flops_per_s").is_not_null())
           .sort("time_ns", descending=True, nulls_last=True)
           .group_by("run", "precision", maintain_order=True).head(per_run))
    return [RoofPoint(group=r["run"], label=r.get("short_name") or "", ai=r["ai_dram"], perf=r["achieved_flops_per_s"],
                      precision=r["precision"], kernel=True, above_roof=bool(r.get("above_roof")))
            for r in top.iter_rows(named=True)]


def _points_table(runs: pl.DataFrame):
    rows = []
    for r in runs.iter_rows(named=True):
        row = [name_cell(r["run"], 36), r["precision"], flops_cell(r["flops"], r.get("flops_complete")),
               fmt.nbytes(r.get("dram_bytes")), fmt.intensity(r.get("ai_dram")), _levels(r),
               fmt.duration(r.get("time_ns")), fmt.rate(r.get("achieved_flops_per_s")),
               fmt.rate(r.get("attainable_flops_per_s")), fmt.percent(r.get("pct_of_roof")), bound_cell(r.get("bound"))]
        rows.append(row)
    cols = ["Run", "Precision", "FLOPs#", "DRAM bytes#", "AI (DRAM)#", "AI (L2 / L1)#", "Time#", "Achieved#",
            "Roof at this AI#", "% of roof#", "Bound"]
    if runs.select(pl.col("ai_l2").is_null().all() & pl.col("ai_l1").is_null().all()).item():
        cols.pop(5)
        rows = [row[:5] + row[6:] for row in rows]
    return table(cols, rows, css="roofline")


def _levels(r: dict) -> str:
    l2, l1 = r.get("ai_l2"), r.get("ai_l1")
    if l2 is None and l1 is None:
        return "–"
    return f"{fmt.number(l2)} / {fmt.number(l1)}"

