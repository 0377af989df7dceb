"""The "Training steps" section (PyTorch traces), first in the body so it shares page 1 with
the findings: the median MFU per run (and HFU where activation checkpointing makes them differ),
where the steps' time goes on the GPU as one stacked bar per run, and the runs that differ only
in torch.compile, batch size or GPU, compared in a sentence each.

Every number comes from `analysis.steps` (`step_summary`, `step_comparisons`); this module only
orders and words them.
"""

from __future__ import annotations

import polars as pl

from roofreport.report import fmt
from roofreport.report.context import Bullets, Column, Heading, Paragraph, Section, chart
from roofreport.report.naming import RunNames
from roofreport.report.tables import cell, table

EMPTY = ("No training steps: a PyTorch profiler trace (`torch.profiler` with `record_shapes=True`, "
         "`prof.step()` each iteration, `export_chrome_trace` or `tensorboard_trace_handler`) gives each "
         "step's FLOPs, MFU and where its time goes.")
_CHANGE = {"compile": "torch.compile", "batch size": "the batch size", "GPU": "the GPU"}


def steps_section(an, names: RunNames) -> Section:
    section = Section("steps", "Training steps")
    summary = an.step_summary
    if not summary.height:
        section.empty = EMPTY
        return section
    runs = names.order(summary["run"].to_list())
    rows = {row["run"]: row for row in summary.iter_rows(named=True)}
    section.blocks.append(Paragraph.of(
        "Per run, the median over its profiler steps (ProfilerStep#N; steps more than 25 % from the "
        "median step time, such as the first, are left out). MFU is the model FLOPs of a step (from the "
        "operators' shapes, by torch.utils.flop_counter's formulas, unless a FlopCounterMode count or "
        "--model-flops gives them) over the step time and the GPU's dense peak at the step's precision; "
        "HFU counts recomputed work too."))
    section.blocks.append(_mfu_table(runs, rows, names))
    bars = [run for run in runs if rows[run]["compute_pct"] is not None]
    if bars:
        from roofreport.report.charts.steps import step_bars_svg

        shares = {names.label(run): rows[run] for run in bars}
        section.blocks.append(chart("steps1", "Where the training steps' time goes on the GPU", step_bars_svg,
                                    [names.label(run) for run in bars], shares))
    comparisons = [_comparison(row, names) for row in an.step_comparisons.iter_rows(named=True)]
    if comparisons:
        section.blocks += [Heading("Runs that differ in one thing"), Bullets(comparisons)]
    section.blocks += _notes(summary)
    return section


def _mfu_table(runs: list[str], rows: dict, names: RunNames):
    show_hfu = any(row["hfu_pct"] is not None and row["mfu_pct"] is not None
                   and abs(row["hfu_pct"] - row["mfu_pct"]) > 0.05 for row in rows.values())
    out = []
    for run in runs:
        row = rows[run]
        kept = f"{row['steps']}" + (f" (+{row['outliers']} left out)" if row["outliers"] else "")
        line = [cell(names.label(run)), fmt.percent(row["mfu_pct"])]
        if show_hfu:
            line.append(fmt.percent(row["hfu_pct"]))
        line += [fmt.rate(row["achieved_flops_per_s"]), cell(row["peak_source"] or _no_peak(row)),
                 fmt.duration(row["step_ns"]), fmt.flops(row["model_flops"]), fmt.count(row["kernel_launches"]),
                 "yes" if row["compiled"] else "no", kept]
        out.append(line)
    # The widths add up to 100 % (they made 107 %: the Steps column ran into the margin).
    cols = [Column("Run", width="20%"), Column("MFU", numeric=True, width="7%")]
    if show_hfu:
        cols.append(Column("HFU", numeric=True, width="7%"))
    cols += [Column("Model FLOP/s", numeric=True, width="10%"), Column("Peak used", width="15%"),
             Column("Step time", numeric=True, width="9%"), Column("FLOPs / step", numeric=True, width="9%"),
             Column("Launches / step", numeric=True, width="10%"), Column("Compiled", width="8%"),
             Column("Steps", numeric=True, width="5%" if show_hfu else "12%")]
    return table(cols, out, caption="MFU per run (medians over its steps)", css="steps")


def _no_peak(row: dict) -> str:
    """Why a run has no MFU, in the order the peak is looked up: FLOPs, a GPU, a precision, the
    GPU's peak at that precision."""
    if row["model_flops"] is None:
        return "– (no FLOPs: the trace has no shapes)"
    if row["device"] is None:
        if not row["kernel_launches"]:   # no kernel ran: the trace is the CPU's alone
            return "– (a CPU trace: no GPU peak)"
        # kernels ran, but the trace has no deviceProperties to name their GPU
        return "– (the trace names no GPU: no peak; name it with --gpu)"
    if row["peak_precision"] is None:    # (--model-flops gives FLOPs, not the types they ran in)
        return "– (the steps' precision is unknown: the trace has no input types, and the peak depends on it)"
    return f"– (no known {row['peak_precision']} peak for this GPU)"


def _comparison(row: dict, names: RunNames) -> Paragraph:
    first, second = names.label(row["run_a"]), names.label(row["run_b"])
    parts = []
    if row["launches_change_pct"] is not None:
        change = row["launches_change_pct"]
        parts.append(f"launches {fmt.percent(abs(change), 0)} {'fewer' if change < 0 else 'more'} kernels per step")
    if row["idle_pct_a"] is not None and row["idle_pct_b"] is not None:
        parts.append(f"GPU idle goes from {fmt.percent(row['idle_pct_a'], 0)} to {fmt.percent(row['idle_pct_b'], 0)}")
    if row["mfu_pct_a"] is not None and row["mfu_pct_b"] is not None:
        parts.append(f"MFU from {fmt.percent(row['mfu_pct_a'])} to {fmt.percent(row['mfu_pct_b'])}")
    parts.append(f"the step time from {fmt.duration(row['step_ns_a'])} to {fmt.duration(row['step_ns_b'])}")
    said = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    return Paragraph.of(f"{second} against {first} (only {_CHANGE[row['differs']]} differs): it {said}.")


def _notes(summary: pl.DataFrame) -> list:
    notes = []
    missing = summary.filter(pl.col("flops_missing_ops").fill_null(0) > 0)
    if missing.height:
        notes.append(Paragraph.of(
            f"{missing.height} run{'s' if missing.height != 1 else ''} call matrix, attention or convolution "
            "operators whose shapes the trace does not give (recorded without record_shapes, or without "
            "concrete inputs): their FLOPs, and so their MFU, are a lower bound or unknown.", level="warning"))
    if summary["causal_attention"].any():
        notes.append(Paragraph.of(
            "Causal attention is counted in full, as FlopCounterMode counts it: the masked half of its "
            "products is not done, so the MFU of those runs is overstated by up to that part."))
    return notes
