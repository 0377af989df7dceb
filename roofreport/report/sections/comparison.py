"""The comparison sections.

* "GPUs compared" (`comparison_section`): the model x GPU pivot (`speedup.gpu_pivot`), the
  speedups and their per-model summary (`speedup.speedups`, `model_summary`), and the sweeps:
  time and throughput along every swept parameter (`sweeps.time_sweeps`) and the kernel-time
  share along batch sizes (`share.sweep_share`). Workloads that cannot be compared are listed
  with the reason, never given a ratio.
* "Runs compared" (`runs_section`): one row per run, the run totals of the runs table, then
  estimate vs measured over the same span (`compare.estimates`).

Every number comes from those frames; incomplete FLOP counts show as lower bounds.
"""

from __future__ import annotations

import polars as pl

from roofreport.analysis import speedup, sweeps as sweeps_mod
from roofreport.report import fmt
from roofreport.report.context import Bullets, Heading, Paragraph, Section, Span, chart, spans_list
from roofreport.report.naming import RunNames
from roofreport.report.tables import cell, table, without_empty_columns

RUN_COLUMNS = ["Run", "FLOPs#", "DRAM bytes#", "AI (DRAM)#", "Kernel time#", "Time from", "Iterations#",
               "Per iteration#", "Achieved#", "% of roof#", "Bound", "FLOPs estimate#"]
NO_ESTIMATES = ("Estimated against measured time: no analytic estimates. Put a `torchinfo` summary() printout or "
                "an estimates file next to the logs to compare them.")


def runs_section(runs: pl.DataFrame, estimates: pl.DataFrame, names: RunNames | None = None) -> Section:
    """One row per run, grouped by model, GPU and experiment (a heading row per group) and named
    within its group by what varies (`bs 16 · lr 0.01`); columns no run has a value in are left out."""
    section = Section("runs", "Runs compared")
    if not runs.height:
        section.empty = ("No runs: no file could be read as a profiler log. Profile with e.g. "
                         "`nsys profile --stats=true python train.py` or `ncu --metrics dram__bytes.sum,"
                         "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum python train.py`.")
        return section
    names = names or RunNames()
    section.blocks.append(Paragraph.of(
        "One row per run, from the run totals of the runs table. FLOPs and DRAM bytes are summed over every "
        "kernel the counters saw (with FLOPs or without); kernel time is that of the run's best source "
        "(nsys/nvprof/PyTorch traces before summaries before ncu's serialized, clock-locked replays), per iteration "
        "where the logs count iterations; achieved FLOP/s divide the FLOPs by the time of the same counted "
        "kernels. A FLOP count marked ≥ misses tensor-core work and is a lower bound; a time \u201ccut short\u201d "
        "covers only the part of the run before the profiler or the batch system stopped it."))
    by_run = {r["run"]: r for r in runs.iter_rows(named=True)}
    rows = []
    for group in names.groups(list(by_run), max_columns=10_000, by_gpu=True):
        if len(group.columns) == 1:          # a group of one run: one row named by its label, no heading
            rows.append(_run_row(by_run[group.columns[0][0]], group.title))
            continue
        rows.append([cell(group.title, css="folder", span=len(RUN_COLUMNS))])
        rows += [_run_row(by_run[run], heading) for run, heading in group.columns]
    section.blocks.append(without_empty_columns(table(RUN_COLUMNS, rows, caption="Runs", css="runs")))
    section.blocks += _estimate_notes(runs)
    if estimates.height:
        section.blocks += _estimates_blocks(estimates)
    else:
        section.gaps.append(NO_ESTIMATES)
    return section


def flops_cell(flops, complete, why: str | None = None) -> object:
    """A run's FLOPs; a lower bound is marked "≥", and `why` (its bound_note) is the tooltip."""
    if flops is None:
        return cell("–")
    if complete is False:
        return cell(f"≥ {fmt.flops(flops)}", css="incomplete",
                    title=why or "FLOPs incomplete: tensor-core work is missing from the counters")
    return cell(fmt.flops(flops))


def achieved_text(achieved: float | None, complete: bool | None) -> str:
    """Achieved FLOP/s; a lower bound ("≥") when the FLOPs are, a dash when there is none."""
    return at_least(fmt.rate(achieved), complete)


def at_least(text: str, complete: bool | None) -> str:
    """A number read from incomplete FLOPs (FLOP/s, % of roof) is a lower bound: "≥ 33.9 %"."""
    return "≥ " + text if complete is False and text != fmt.MISSING else text


def _run_row(row: dict, name: str) -> list:
    timed = row.get("kernel_time_ns") is not None
    source = (row.get("time_source") or "–") + (", cut short" if row.get("cut_short") else "") if timed else "–"
    time = cell(fmt.duration(row.get("kernel_time_ns")), title=row.get("cut_short_reason"))
    iterations = cell(fmt.count(row.get("iterations")), title=row.get("iterations_source"))
    per_iteration = cell(fmt.duration(row.get("time_per_iteration_ns")))
    estimate = cell("–")
    if row.get("flops_estimate") is not None:
        made_from = row.get("flops_estimate_source") or ""
        estimate = cell(fmt.flops(row["flops_estimate"]), sub=made_from.split(":")[0] or None, title=made_from or None)
    achieved = achieved_text(row.get("achieved_flops_per_s"), row.get("flops_complete"))
    return [cell(name, title=row.get("label") or row["run"]),
            flops_cell(row.get("flops"), row.get("flops_complete"), row.get("bound_note")),
            fmt.nbytes(row.get("dram_bytes")), at_least(fmt.intensity(row.get("arithmetic_intensity")),
                                                         row.get("flops_complete")), time,
            cell(source, title=row.get("cut_short_reason")), iterations, per_iteration, achieved, at_least(fmt.percent(row.get("pct_of_roof")), row.get("flops_complete")),
            bound_cell(row.get("bound"), row.get("bound_note")), estimate]


def iterations_text(count) -> str | None:
    """"1 iteration", "4,556 iterations"."""
    if not count:
        return None
    return f"{fmt.count(count)} iteration{'' if count == 1 else 's'}"


def run_cell(row: dict):
    """The run's label, whole (its id, where its logs are, as the tooltip)."""
    return cell(row.get("label") or row["run"], title=row["run"])


def _estimate_notes(runs: pl.DataFrame) -> list:
    """How the FLOPs estimates were made, once per distinct method (the analysis' own words)."""
    sources = runs["flops_estimate_source"].drop_nulls().to_list() if "flops_estimate_source" in runs.columns else []
    methods = list(dict.fromkeys(s.split(":", 1)[1].strip() for s in sources if ":" in s))
    if not methods:
        return []
    return [Paragraph.of("FLOPs estimate for runs whose counts miss tensor-core work, from the run named under "
                         "the number: " + "; ".join(methods) + ".")]


def bound_cell(bound: str | None, note: str | None = None):
    return cell(bound or "–", css=f"bound-{bound}" if bound else "", title=note or None)


def _estimates_blocks(estimates: pl.DataFrame) -> list:
    """Estimate against measured time over the same span; estimates with no such measurement
    are listed with the reason instead of a ratio."""
    blocks: list = []
    same = estimates.filter(pl.col("comparable"))
    if same.height:
        rows = [[run_cell(r), fmt.flops(r.get("est_flops")), fmt.nbytes(r.get("est_bytes")),
                 cell(fmt.duration(r.get("est_time_ns")),
                      sub=f"one {r['span']}" if r["span"] != "run" else "whole run"),
                 cell(fmt.duration(r.get("measured_time_ns")), sub=r.get("measured_span")),
                 fmt.ratio(r.get("ratio")), r.get("source") or "–"] for r in same.iter_rows(named=True)]
        blocks.append(table(["Run", "Est. FLOPs#", "Est. bytes#", "Est. time#", "Measured time#", "Measured / est.#",
                             "Source"], rows,
                            caption="Estimate vs measured, over the same span (time = max(bytes / bandwidth, "
                                    "FLOPs / peak))"))
    apart = estimates.filter(~pl.col("comparable"))
    if apart.height:
        names = "label" if "label" in apart.columns else "run"
        items = [Paragraph(spans_list(group[names].to_list(), 4) + [Span(f": {why}.")])
                 for (why,), group in apart.group_by(["not_comparable"], maintain_order=True)]
        blocks.append(Paragraph.of(f"Not comparable ({apart.height} estimate{'s' if apart.height > 1 else ''}; "
                                   "no ratio is given where estimate and measurement cover different work):"))
        blocks.append(Bullets(items))
    return blocks


# -- GPUs compared ---------------------------------------------------------------------------

GPU_EMPTY = ("No workload ran on two GPUs: a comparison needs the same model with the same parameters "
             "profiled on each GPU (runs are matched by model, experiment and parameters, never by folder).")
SWEEP_PANELS = 12        # panels (model, GPU, configuration) in one kernel-share sweep chart
TRANSFERS = ("memcpy", "memset")


def comparison_section(an) -> Section:
    """The model x GPU pivot, the speedups and the sweeps (module docstring)."""
    section = Section("comparison", "GPUs compared")
    if an.pivot.height:
        section.blocks.append(Paragraph.of(
            "The same work on each GPU: runs matched by model, experiment and parameters. Times are GPU kernel "
            "time (summed over the run's GPUs), compared per iteration when both logs count iterations, else "
            "over the whole run when neither run was cut short; otherwise the pair is not compared. A speedup "
            "is the slower GPU's time over the faster one's."))
        section.blocks += _time_table(an.pivot, an.speedups)
        section.blocks += _work_table(an.pivot)
        section.blocks += _not_compared(an.speedups)
    section.blocks += time_sweep_blocks(an.time_sweeps)
    section.blocks += share_sweep_blocks(an.sweeps)
    if not section.blocks:
        section.empty = _gpu_empty(an.baseline)
    return section


def _gpu_empty(baseline) -> str:
    """Why "GPUs compared" is empty: no workload ran on two GPUs; where the baseline's runs ran
    on other GPUs than these logs', those are compared in "Against the baseline", and saying
    that no workload ran on two GPUs would deny it."""
    pairs = baseline.pairs if baseline is not None else None
    across = [] if pairs is None or not pairs.height else [
        (first, second) for first, second in pairs.select("gpu_a", "gpu_b").iter_rows()
        if first and second and first != second]
    if not across:
        return GPU_EMPTY
    gpus = " and ".join(dict.fromkeys(across[0]))
    return ("No workload ran on two GPUs within these logs; against the baseline, the runs on "
            f"{gpus} are compared (Against the baseline).")


# How the time table says what a pair was compared on, in its own column (or its caption when
# every row shares it): a word or two, not a line under every cell.
_BASIS_WORDS = {speedup.PER_ITERATION: "per iteration", speedup.WHOLE_RUN: "whole run",
                speedup.ELAPSED: "elapsed per batch"}


def _basis_words(basis: str) -> str:
    for full, words in _BASIS_WORDS.items():
        if basis.startswith(full):
            return words + basis[len(full):]        # " per GPU" where the sums were divided
    return basis


def _time_table(pivot: pl.DataFrame, pairs: pl.DataFrame) -> list:
    """Model x configuration rows, a column per GPU: the time each GPU's side was compared on
    (the pair's own times: per iteration, per GPU, elapsed per batch or of the whole run), and
    that basis once per row, or once in the caption where every row shares it."""
    gpus = sorted(pivot["gpu"].unique().to_list())
    compared = pairs.filter(pl.col("comparable"))
    keys = compared.select("model", "config").unique(maintain_order=True)
    if not keys.height:
        return []
    cells = {(r["model"], r["config"], r["gpu"]): r for r in pivot.iter_rows(named=True)}
    bases = compared["basis"].unique().to_list()
    rows = []
    for model, config in keys.sort("model", "config").iter_rows():
        mine = compared.filter((pl.col("model") == model) & (pl.col("config") == config))
        times: dict[str, float] = {}
        for pair in mine.iter_rows(named=True):
            times.setdefault(pair["faster"], pair["faster_time_ns"])
            times.setdefault(pair["slower"], pair["slower_time_ns"])
        row = [cell(model), cell(config or "–")]
        row += [_time_cell(cells.get((model, config, gpu)), times.get(gpu)) for gpu in gpus]
        row.append(cell("; ".join(f"{r['faster']} {fmt.ratio(r['speedup'])} vs {r['slower']}"
                                  for r in mine.iter_rows(named=True))))
        if len(bases) > 1:
            row.append(cell(", ".join(dict.fromkeys(_basis_words(b) for b in mine["basis"].to_list()))))
        rows.append(row)
    kernel = not any(b.startswith(speedup.ELAPSED) for b in bases)
    what = ("GPU kernel time" if kernel else "Time") + " of the same work on each GPU"
    caption = f"{what}: {bases[0]}" if len(bases) == 1 else f"{what}, compared as the last column says"
    cols = ["Model", "Configuration", *[f"{gpu}#" for gpu in gpus], "Faster"]
    cols += ["Compared on"] if len(bases) > 1 else []
    return [table(cols, rows, caption=caption, css="pivot")]


def _time_cell(entry: dict | None, value: float | None):
    """A GPU's side of the row's comparison (`value`, from the pair), the runs it is the median of."""
    if entry is None or value is None:
        return cell("–")
    runs = entry["runs"] or 1
    return cell(fmt.duration(value), sub=f"median of {runs} runs" if runs > 1 else None,
                title=entry.get("cut_short_reason"))


def _work_table(pivot: pl.DataFrame) -> list:
    """FLOPs, intensity and achieved FLOP/s where the logs counted them."""
    counted = pivot.filter(pl.col("flops").is_not_null())
    if not counted.height:
        return []
    rows = [[cell(r["model"]), cell(r["config"] or "–"), cell(r["gpu"]),
             flops_cell(r["flops"], r["flops_complete"], r["bound_note"]),
             at_least(fmt.intensity(r["arithmetic_intensity"]), r["flops_complete"]), fmt.intensity(r["ridge_ai"]),
             achieved_text(r["achieved_flops_per_s"], r["flops_complete"]),
             bound_cell(r["bound"], r["bound_note"])] for r in counted.iter_rows(named=True)]
    return [table(["Model", "Configuration", "GPU", "FLOPs#", "AI (DRAM)#", "Ridge point#", "Achieved#", "Bound"],
                  rows, caption="Work, arithmetic intensity and achieved FLOP/s of the same work on each GPU")]


def _not_compared(pairs: pl.DataFrame) -> list:
    """The workloads without a comparable pair, grouped by why."""
    apart = pairs.filter(~pl.col("comparable"))
    if not apart.height:
        return []
    items = []
    for (kind,), group in apart.group_by(["reason_kind"], maintain_order=True):
        names = [f"{m} · {c}" if c else m for m, c in group.select("model", "config").iter_rows()]
        example = group["reason"][0]
        items.append(Paragraph([Span(f"{len(names)} workload{'s' if len(names) > 1 else ''} ({kind}): ")]
                               + spans_list(names, 4) + [Span(f"; e.g. {example}.")]))
    return [Paragraph.of("Not compared, no ratio given:"), Bullets(items)]


def time_sweep_blocks(sweeps: pl.DataFrame) -> list:
    """Time and samples per second along each swept parameter, one chart per parameter and
    configuration of the other parameters, one line per model and GPU."""
    if not sweeps.height:
        return []
    from roofreport.report.charts.sweep import SweepSeries, time_sweep_svg

    blocks: list = [Heading("Sweeps: time and throughput")]
    groups = sweeps.group_by("param", "config", maintain_order=True)
    for index, ((param, config), group) in enumerate(groups):
        words = group["x"].is_null().any()
        ticks = group.sort("x_order")["x_label"].unique(maintain_order=True).to_list() if words else None
        series = [SweepSeries(s["model"][0], s["gpu"][0], (s["x_order"] if words else s["x"]).to_list(),
                              s["time_ns"].to_list(), s["samples_per_s"].to_list())
                  for _, s in group.sort("x_order").group_by("series", maintain_order=True)]
        basis = group["basis"][0]
        label = "Time per iteration" if basis == speedup.PER_ITERATION else "Kernel time of the run"
        title = f"{param.replace('_', ' ')} sweep" + (f" — {config}" if config else "")
        throughput = (f" and samples per second ({sweeps_mod.THROUGHPUT_BASIS})"
                      if group["samples_per_s"].is_not_null().any() else "")
        blocks.append(chart(f"tsweep{index + 1}", f"{title}: {basis}{throughput}", time_sweep_svg,
                            param, ticks, label, series))
    return blocks


def share_sweep_blocks(sweeps: pl.DataFrame) -> list:
    """Every kernel category's share of GPU time along batch-size sweeps: small multiples, a
    panel per model, GPU and configuration, a line per category."""
    if not sweeps.height:
        return []
    from roofreport.report.charts.share import category_colour
    from roofreport.report.charts.sweep import SharePanel, share_sweep_svg
    from roofreport.report.sections.share import category_order

    cats = category_order(sweeps["category"].unique().to_list())
    colours = {c: category_colour(c, cats) for c in cats}
    panels = []
    for _, series in sweeps.sort("model", "config", "gpu", "x_order").group_by("series", maintain_order=True):
        if not series.filter(~pl.col("category").is_in(TRANSFERS))["share"].sum():
            continue    # logs of transfers only ("No kernels were profiled"): nothing to follow
        first = series.row(0, named=True)
        swept = series["x"].unique(maintain_order=True).to_list()
        shares = {c: g["share"].to_list() for (c,), g in series.group_by(["category"], maintain_order=True)}
        title = " · ".join(t for t in (first["model"], first["gpu"]) if t)
        title += f"\n{first['config']}" if first["config"] else ""
        panels.append(SharePanel(title, swept, {c: shares[c] for c in cats if c in shares}))
    if not panels:
        return []
    # The PDF leaves these out: "Where the GPU time goes" draws the same shares, a bar per run
    # grouped by model, GPU and experiment; the HTML keeps both views.
    blocks: list = [Heading("Sweeps: where the time goes", media="screen"), Paragraph.of(
        "Share of each run's GPU time by kernel category along the batch size: one panel per model, GPU and "
        "configuration, one line per category (every category of the series), runs of one point averaged.")]
    blocks[-1].media = "screen"
    for index in range(0, len(panels), SWEEP_PANELS):
        part = panels[index:index + SWEEP_PANELS]
        more = f" ({index + 1}–{index + len(part)} of {len(panels)})" if len(panels) > SWEEP_PANELS else ""
        blocks.append(chart(f"ssweep{index // SWEEP_PANELS + 1}", f"Kernel-time share vs batch size{more}",
                            share_sweep_svg, part, colours, "batch_size", media="screen"))   # drawn for the HTML only
    return blocks
