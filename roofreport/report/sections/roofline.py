"""The "Rooflines" section: one log-log chart per GPU with its ceilings (per precision and
memory level, and the instruction-mix ceilings its runs were judged by: `Analysis.chart_ceilings`,
at the clock the caption names), the runs at their totals (the runs table's
`arithmetic_intensity` and `achieved_flops_per_s`, model/totals.py) and their top kernels
(`kernel_roofline`) as points, at most `SERIES_PER_CHART` series to a chart (more: a chart per
group of runs), and a table of what the runs table does not say about the points (the time of
the counted kernels, the roof at each run's intensity); tensor-core kernels whose tensor work went
uncounted are listed beside the chart with their time share (`Analysis.off_chart`), not placed. A GPU
whose runs
counted no FLOPs has no point, but its roofs are known: one table lists their peaks and ridge
points. A GPU the evidence did not name in full is marked assumed, with why.

A GPU with more runs than `SERIES_PER_CHART` draws the runs that differ only in input size
(`Analysis.size_series`, sweeps.py) as one series each, the size as the marker's size (the chart's
`_SizeScale`) and on hover: a sweep of 4 variants × 7 sizes is 4 colours, not 28 charts' worth.
"""

from __future__ import annotations

import polars as pl

from roofreport.report import fmt
from roofreport.report.context import Bullets, Column, Heading, Paragraph, Section, Span, chart, spans_list
from roofreport.report.naming import RunNames, in_order
from roofreport.report.sections.comparison import at_least, run_cell
from roofreport.report.tables import cell, name_cell, table

KERNELS_PER_RUN = 12
OFF_CHART_NAME_CHARS = 64   # a kernel's name beside the chart, shortened in the middle (its full name on hover)
SERIES_PER_CHART = 10      # runs (a colour each) in one chart; more go to further charts by group
RUN_TOTAL = "run total (its counted kernels)"     # what a run's point is, on hover
EMPTY = ("No run has both FLOP and byte counts, so there is nothing to place on a roofline. "
         "Collect them with `ncu --metrics gpu__time_duration.sum,dram__bytes.sum,"
         "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,"
         "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum` (add the d*/h* counters for fp64/fp16), or "
         "nvprof `--metrics flop_count_sp,dram_read_transactions,dram_write_transactions`.")


UNTIMED = ("Roofline of {gpus}: {runs} have FLOP counts but no kernel time logged with them (an nvprof "
           "`--metrics` or ncu run times nothing comparable), so no point can be placed. Time the same runs "
           "with `nvprof` in summary mode or `nsys profile --stats=true`, in the same folder.")


def roofline_section(an, top_n: int, names: RunNames | None = None) -> Section:
    section = Section("rooflines", "Rooflines")
    names = names or RunNames(an.tables["runs"])
    placed = in_order(an.runs.filter(pl.col("flops").is_not_null() & (pl.col("flops") > 0)), names)
    roofs_only = _roofs_only(an.runs, placed)
    if not placed.height:
        # No point to place: the section is left out, its gap said in the overview. A table of the
        # GPUs' roofs alone would repeat the appendix's peaks (Methodology) and the overview's
        # runs per GPU: printed twice, and a section of one short table.
        section.empty = EMPTY
        return section
    timed_gpus = set(placed.filter(pl.col("achieved_flops_per_s").is_not_null())["gpu_model"].to_list())
    untimed_gpus = [g for g in _gpus(placed) if g not in timed_gpus]
    if untimed_gpus:       # FLOPs without time place no point: a gap, not a section of dashes
        count = len({run for run, gpu in placed.select("run", "gpu_model").iter_rows()
                     if gpu in untimed_gpus})
        gpus = ", ".join(names.gpu_of_key(g) if g else "a GPU not named" for g in untimed_gpus)
        gap = UNTIMED.format(runs=f"{count} run{'s' if count != 1 else ''}", gpus=gpus)
        if not timed_gpus:
            section.empty = gap
            return section
        section.gaps.append(gap)
    section.blocks.append(Paragraph.of(
        "Achieved FLOP/s against arithmetic intensity (FLOP per DRAM byte), log-log. Large markers are "
        "runs (their totals: every counted kernel's FLOPs and DRAM bytes), small ones their most "
        "time-consuming kernels; hollow markers place a run's kernels with FLOPs at their L2 and L1 "
        "intensity when the log counted those bytes (hierarchical roofline). Sloped lines are memory "
        "bandwidth ceilings, flat ones compute ceilings; a point under the sloped part is memory-bound, "
        "under the flat part compute-bound, far below both latency-bound."))
    for index, gpu in enumerate(g for g in _gpus(placed) if g in timed_gpus):
        section.blocks += _gpu_blocks(an, placed, gpu, min(top_n, KERNELS_PER_RUN), f"roof{index + 1}", names)
    if roofs_only is not None:
        section.blocks.append(roofs_only)
    return section


def _roofs_only(runs: pl.DataFrame, placed: pl.DataFrame):
    """A table of the GPUs with a ridge point but no run placed: their FP32 and DRAM roofs, ridge
    point and runs (the run totals' `roof_precision` fp32 rows), or None when there is none."""
    if not runs.height:
        return None
    without = runs.filter(pl.col("ridge_ai").is_not_null() & ~pl.col("gpu_model").is_in(placed["gpu_model"].drop_nulls().to_list()))
    if not without.height:
        return None
    rows = []
    for (label,), group in without.group_by(["gpu_label"], maintain_order=True):
        first = group.row(0, named=True)
        assumed = bool(group["gpu_assumed"].fill_null(False).any())
        rows.append([cell(f"{label} (variant assumed)" if assumed else label, title=first.get("gpu_note")),
                     fmt.count(group.height), fmt.rate(first["peak_flops_per_s"]),
                     fmt.bandwidth(first["peak_dram_bytes_per_s"]), fmt.intensity(first["ridge_ai"])])
    return table(["GPU", "Runs#", "FP32 peak#", "DRAM bandwidth#", "Ridge point#"], rows,
                 caption="Roofs of the GPUs whose runs counted no FLOPs (no point to place)", css="roofs")


def _gpus(runs: pl.DataFrame) -> list[str | None]:
    return runs.select(pl.col("gpu_model").unique(maintain_order=True)).to_series().to_list()


def _gpu_blocks(an, placed: pl.DataFrame, gpu: str | None, per_run: int, chart_id: str,
                names: RunNames) -> list:
    """`runs`: the run totals of this GPU's runs; `parts`: their per-precision roofline rows
    (the ceilings they were judged by, their L2/L1 intensities, their notes)."""
    runs = placed.filter(pl.col("gpu_model").eq_missing(gpu))
    parts = an.roofline.filter(pl.col("run").is_in(runs["run"].to_list()))
    spec = an.db.get(gpu) if gpu else None
    label = names.gpu_of_key(gpu, spec) if gpu else "GPU not identified"
    title = f"{label} ({spec.arch})" if spec and spec.arch else label
    blocks: list = [Heading(title)]
    notes = runs.filter(pl.col("gpu_assumed").fill_null(False))["gpu_note"].drop_nulls().unique(maintain_order=True)
    if notes.len():
        blocks.append(Paragraph.of(f"GPU variant assumed: {notes[0]}" + (f" (and {notes.len() - 1} more)" if notes.len() > 1 else ""),
                                   level="warning"))
    if spec is None:
        blocks.append(Paragraph.md(
            "No peaks for these runs: the logs do not name a GPU the database knows. Pass "
            "`--gpu NAME` or `--peaks FILE` to draw ceilings.", level="warning"))
    untimed = runs.filter(pl.col("achieved_flops_per_s").is_null())
    if untimed.height:
        blocks.append(Paragraph([Span("No point for ")] + spans_list(_labels(untimed), 4) + [Span(
            ": FLOPs were counted but no kernel time was logged with them (an nvprof --metrics run, for "
            "example, times nothing).")]))
    if runs.height > untimed.height:
        sized = _sized(an.size_series, runs) if runs.height > SERIES_PER_CHART else {}
        sets = _chart_sets(runs, names, {run: series for run, (series, _, _) in sized.items()})
        for index, (what, members, legend) in enumerate(sets):
            mine = runs.filter(pl.col("run").is_in(members))
            part = f" — {what} ({index + 1} of {len(sets)})" if len(sets) > 1 else ""
            blocks.append(_chart(an, mine, parts.filter(pl.col("run").is_in(members)), spec, title, per_run,
                                 chart_id + (f"-{index + 1}" if len(sets) > 1 else ""), part, legend, sized))
    blocks += _off_chart(an.off_chart.filter(pl.col("run").is_in(runs["run"].to_list())), names)
    blocks += _points_table(runs)
    blocks += _notes(parts, names)
    return blocks


def _labels(runs: pl.DataFrame, legend: dict[str, str] | None = None) -> list[str]:
    """Each run's name on the chart: `legend`'s (what varies within its group) or its label."""
    legend = legend or {}
    return [legend.get(run) or label or run for run, label in runs.select("run", "label").iter_rows()]


def _sized(series: pl.DataFrame, runs: pl.DataFrame) -> dict[str, tuple[str, float, str]]:
    """run -> (its series, its input size, how the size reads) for this GPU's runs in a series of
    input sizes (`Analysis.size_series`) with two of its runs here at least."""
    mine = series.filter(pl.col("run").is_in(runs["run"].to_list()))
    mine = mine.filter(pl.len().over("series") > 1)
    return {r["run"]: (r["series"], r["size"], f"{r['size_param']} {fmt.count(r['size'])}")
            for r in mine.iter_rows(named=True)}


def _chart_sets(runs: pl.DataFrame, names: RunNames,
                sized: dict[str, str] | None = None) -> list[tuple[str, list[str], dict[str, str]]]:
    """The runs of one GPU in charts of at most `SERIES_PER_CHART` series (a colour each and a
    legend line that reads at a glance): the runs of a series of input sizes (`sized`: run -> its
    series) one series, the others one each, whole groups of runs that share model and experiment
    (`RunNames.groups`) packed in order, each chart's (title, runs, run -> legend name). A chart of
    one group names its runs by what varies in it (its title says what they share)."""
    members = runs["run"].to_list()
    sized = sized or {}
    if len(members) <= SERIES_PER_CHART:
        return [("", members, {})]
    by_lead: dict[str, dict[str, list[str]]] = {}     # the series of one program (or model) together
    for run in names.order(r for r in members if r in sized):
        by_lead.setdefault(sized[run].split(" · ")[0], {}).setdefault(sized[run], []).append(run)
    units = []
    for lead, series in by_lead.items():
        chunks = list(series.items())
        for start in range(0, len(chunks), SERIES_PER_CHART):
            chunk = chunks[start:start + SERIES_PER_CHART]
            units.append((lead, [run for _, runs_of in chunk for run in runs_of],
                          {run: name for name, runs_of in chunk for run in runs_of}, len(chunk)))
    rest = [r for r in members if r not in sized]
    units += [(g.title, [run for run, _ in g.columns],
               dict(g.columns) if len(g.columns) > 1 else {}, len(g.columns))
              for g in (names.groups(rest, SERIES_PER_CHART, by_gpu=True) if rest else [])]
    packed: list[tuple[list, list[str], int]] = []
    for unit in units:
        if packed and packed[-1][2] + unit[3] <= SERIES_PER_CHART:
            packed[-1] = (packed[-1][0] + [unit], packed[-1][1] + unit[1], packed[-1][2] + unit[3])
        else:
            packed.append(([unit], list(unit[1]), unit[3]))
    sets, start = [], 1
    for groups, runs_of_set, _ in packed:
        one = len(groups) == 1 and len(groups[0][1]) > 1 and not set(groups[0][1]) & set(sized)
        legend = {run: series for unit in groups for run, series in unit[2].items() if run in sized}
        legend.update(groups[0][2] if one else {})
        titles = list(dict.fromkeys(unit[0] for unit in groups))
        # a chart of many small groups says which runs it holds, not every group's name
        what = "; ".join(titles) if len(titles) <= 2 else f"runs {start}–{start + len(runs_of_set) - 1} of {len(members)}"
        sets.append((what, runs_of_set, legend))
        start += len(runs_of_set)
    return sets


def _chart(an, runs: pl.DataFrame, parts: pl.DataFrame, spec, title: str, per_run: int, chart_id: str,
           part: str = "", legend: dict[str, str] | None = None, sized: dict | None = None):
    from roofreport.report.charts.roofline import roofline_svg

    ceilings = an.chart_ceilings.get(spec.key if spec else None, []) if spec else []
    kernels = _top_kernel_points(an.kernel_roofline, parts, runs, per_run, legend, sized)
    caption = f"Roofline of {title}{part}"
    if spec is not None:
        gpu_label = title.rsplit(" (", 1)[0]
        caption += f"; ceilings: {_peak_sources(parts, spec).replace(spec.key, gpu_label)}" + _clock_words(runs)
    if sized and set(runs["run"].to_list()) & set(sized):
        caption += ". Runs that differ only in input size share a colour; their marker grows with the size"
    return chart(chart_id, caption, roofline_svg, ceilings, _run_points(runs, parts, legend, sized) + kernels,
                 interactive=True)


def _off_chart(kernels: pl.DataFrame, names: RunNames) -> list:
    """The tensor-core kernels whose tensor work no counter counted: listed with their share of
    their run's kernel time instead of placed (their FLOPs, intensity and FLOP/s are lower bounds)."""
    if not kernels.height:
        return []
    rows = [[cell(names.label(r["run"]), title=r["run"]), name_cell(r["short_name"], OFF_CHART_NAME_CHARS),
             fmt.count(r["launches"]), fmt.duration(r["time_ns"]), fmt.share(r["time_share"]),
             at_least(fmt.intensity(r["ai_dram"]), False), at_least(fmt.rate(r["achieved_flops_per_s"]), False)]
            for r in kernels.iter_rows(named=True)]
    return [Paragraph.of("Tensor-core kernels whose tensor work no counter counted are not placed on the chart: "
                         "their FLOPs, intensity and FLOP/s are lower bounds (≥), orders of magnitude below where "
                         "they ran. They take this share of their run's kernel time:"),
            table([Column("Run", width="22%"), Column("Kernel", width="33%"),
                   *[Column(heading, numeric=True, width="9%") for heading in
                     ("Launches", "Time", "Share of kernel time", "AI (DRAM)", "Achieved")]], rows,
                  caption="Off the chart: tensor-core kernels with uncounted FLOPs", css="kernels off-chart")]


def _clock_words(runs: pl.DataFrame) -> str:
    """The clock the chart's roofs are at (`runs.roof_clock`, model/clocks.py), once when the runs
    share it."""
    if "roof_clock" not in runs.columns:
        return ""
    clocks = runs["roof_clock"].drop_nulls().unique(maintain_order=True).to_list()
    if len(clocks) == 1:
        return f"; at the {clocks[0]}"
    return "; at each run's clock (" + "; ".join(clocks) + ")" if clocks else ""


def _notes(runs: pl.DataFrame, names: RunNames) -> list:
    """The analysis' notes on points (incomplete FLOPs, above a roof...), each once, with its runs."""
    noted = runs.filter(pl.col("note").is_not_null())
    if not noted.height:
        return []
    items = []
    for (note,), group in noted.group_by(["note"], maintain_order=True):
        which = [f"{names.label(r)} ({p})" for r, p in group.select("run", "precision").iter_rows()]
        items.append(Paragraph([Span(note[0].upper() + note[1:]), Span(": ")]
                               + [Span(s.text) for s in spans_list(which, 8)] + [Span(".")], level="warning"))
    return [Bullets(items)]


def _peak_sources(runs: pl.DataFrame, spec) -> str:
    parts = [p.strip() for s in runs["peak_source"].drop_nulls().to_list() for p in s.split(";")]
    parts = list(dict.fromkeys(p for p in parts if p))
    return "; ".join(parts) if parts else spec.source


def _size_of(sized: dict | None, run: str) -> dict:
    """The RoofPoint fields of a run in a series of input sizes (`_sized`), else none."""
    if not sized or run not in sized:
        return {}
    _, size, text = sized[run]
    return {"size": size, "size_label": text}


def _run_points(runs: pl.DataFrame, parts: pl.DataFrame, legend: dict[str, str] | None = None,
                sized: dict | None = None) -> list:
    """Each run at its DRAM intensity (its totals), and its kernels with FLOPs at their L2/L1
    intensities when the log had those bytes."""
    from roofreport.report.charts.roofline import RoofPoint

    label = dict(zip(runs["run"].to_list(), _labels(runs, legend)))
    points = [RoofPoint(group=label[r["run"]], label=RUN_TOTAL, ai=r["arithmetic_intensity"],
                        perf=r["achieved_flops_per_s"], precision=r["roof_precision"] or "fp32",
                        above_roof=(r.get("bound_note") or "").startswith("above"),
                        lower_bound=r.get("flops_complete") is False, time_ns=r["counted_time_ns"],
                        **_size_of(sized, r["run"]))
              for r in runs.iter_rows(named=True) if r["arithmetic_intensity"] is not None]
    for row in parts.iter_rows(named=True):
        for level in ("l2", "l1"):
            if row.get(f"ai_{level}") is not None and row["run"] in label:
                what = f"{RUN_TOTAL} at its {level.upper()} intensity ({row['precision']})"
                points.append(RoofPoint(group=label[row["run"]], label=what, ai=row[f"ai_{level}"],
                                        perf=row["achieved_flops_per_s"], precision=row["precision"], level=level,
                                        time_ns=row["time_ns"], **_size_of(sized, row["run"])))
    return points


def _top_kernel_points(kernels: pl.DataFrame, parts: pl.DataFrame, runs: pl.DataFrame, per_run: int,
                       legend: dict[str, str] | None = None, sized: dict | None = None) -> list:
    from roofreport.report.charts.roofline import RoofPoint

    if not kernels.height:
        return []
    label = dict(zip(runs["run"].to_list(), _labels(runs, legend)))
    keys = parts.select("run", "precision")
    # tensor kernels whose tensor work went uncounted are listed beside the chart (`_off_chart`), not
    # placed orders of magnitude below where they ran
    top = (kernels.join(keys, on=["run", "precision"], how="semi")
           .filter(pl.col("ai_dram").is_not_null() & pl.col("achieved_flops_per_s").is_not_null()
                   & ~((pl.col("flops_complete") == False) & (pl.col("precision") == "tensor")))  # noqa: E712
           .sort("time_ns", descending=True, nulls_last=True)
           .group_by("run", "precision", maintain_order=True).head(per_run))
    return [RoofPoint(group=label.get(r["run"], r["run"]), label=r.get("short_name") or "", ai=r["ai_dram"],
                      perf=r["achieved_flops_per_s"], precision=r["precision"], kernel=True,
                      above_roof=bool(r.get("above_roof")), lower_bound=r.get("flops_complete") is False,
                      time_ns=r["time_ns"], **_size_of(sized, r["run"]))
            for r in top.iter_rows(named=True)]


def _counted_time_cell(row: dict):
    """The time of the kernels the counters saw; where that is not all of the run's kernel time,
    the run's (the "Kernel time" of Runs compared) under it, so the two numbers have two names."""
    counted, whole = row.get("counted_time_ns"), row.get("kernel_time_ns")
    sub = None
    if counted and whole and abs(counted - whole) > 0.005 * whole:
        sub = f"of {fmt.duration(whole)} kernel time"
    return cell(fmt.duration(counted), sub=sub, title=row.get("counted_time_source"))


def _points_table(runs: pl.DataFrame) -> list:
    """One row per run, only what the runs table ("Runs compared") does not say: the time of the
    kernels the counters saw and the roof at the run's intensity, and the roof and ridge point
    it was judged by where they differ between runs (said once above the table where they do
    not). Its FLOPs, bytes, intensity, achieved FLOP/s, % of roof and bound are the runs table's."""
    rows, roofs = [], []
    for row in runs.iter_rows(named=True):
        attainable = row.get("attainable_flops_per_s") if row.get("arithmetic_intensity") else None
        roof = (row.get("ceiling") or row["roof_precision"] or "–", fmt.intensity(row.get("ridge_ai")))
        roofs.append(roof)
        rows.append([run_cell(row), *roof, _counted_time_cell(row),
                     at_least(fmt.rate(attainable), row.get("flops_complete"))])
    cols = ["Run", "Roof", "Ridge point#", "Time of counted kernels#", "Roof at this AI#"]
    said = []
    if len(set(roofs)) == 1:       # one roof for every run: a sentence, not two constant columns
        rows = [row[:1] + row[3:] for row in rows]
        cols = cols[:1] + cols[3:]
        said = [Paragraph.of(f"Every run here is judged by the {roofs[0][0]} ceiling (ridge point {roofs[0][1]}).")]
    if all(row[-2].sub is None for row in rows) and len(set(roofs)) == 1:
        # the counters saw every kernel: the runs table's kernel time is the points' time too,
        # and a table of the roof at each intensity alone would be the runs table again
        return said + [Paragraph.of("Each point's FLOPs, DRAM bytes, intensity, achieved FLOP/s over its kernel time, "
                                    "% of roof and bound are in the runs table (Runs compared).")]
    return said + [Paragraph.of("Each run's FLOPs, DRAM bytes, intensity, achieved FLOP/s, % of roof and bound are "
                                "in the runs table (Runs compared); here, the time those FLOP/s are over and the "
                                "roof at the run's intensity."),
                   table(cols, rows, css="roofline")]
