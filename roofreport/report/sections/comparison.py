"""The "Runs compared" section: one row per run (FLOPs, bytes, intensity, time, achieved rate,
% of peak, bound class) from `compare.run_table`, then estimate vs measured from
`compare.estimates`. Incomplete FLOP counts are shown as lower bounds, never as plain numbers.
"""

from __future__ import annotations

import polars as pl

from roofreport.report import fmt
from roofreport.report.context import Paragraph, Section, Span
from roofreport.report.tables import cell, name_cell, table

RUN_COLUMNS = ["Run", "FLOPs#", "DRAM bytes#", "AI (DRAM)#", "Time#", "Achieved#", "% of peak#", "Bound",
               "FLOPs estimate#"]


def runs_section(runs: pl.DataFrame, estimates: pl.DataFrame) -> Section:
    section = Section("runs", "Runs compared")
    if not runs.height:
        section.empty = ("No runs: no file could be read as a profiler log. Profile with e.g. "
                         "`nsys profile --stats=true python train.py` or `ncu --metrics dram__bytes.sum,"
                         "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum python train.py`.")
        return section
    section.blocks.append(Paragraph.of(
        "One row per run. FLOPs and bytes are summed over the run's profiled kernels; time is the "
        "kernel time of the best source (nsys/nvprof traces before ncu's serialized, clock-locked "
        "replays); a FLOP count marked ≥ misses tensor-core work and is a lower bound."))
    section.blocks.append(table(RUN_COLUMNS, [_run_row(r) for r in runs.iter_rows(named=True)],
                                caption="Runs", css="runs"))
    section.blocks += _estimate_notes(runs)
    if estimates.height:
        section.blocks.append(_estimates_table(estimates))
    else:
        section.blocks.append(Paragraph.md(
            "No analytic estimates: put a `torchinfo` summary() printout or an estimates file next to "
            "the logs to compare estimated and measured time."))
    return section


def flops_cell(flops, complete) -> object:
    if flops is None:
        return cell("–")
    if complete is False:
        return cell(f"≥ {fmt.flops(flops)}", css="incomplete",
                    title="FLOPs incomplete: tensor-core work is missing from the counters")
    return cell(fmt.flops(flops))


def _run_row(r: dict) -> list:
    time = cell(fmt.duration(r.get("time_ns")), sub=r.get("time_source") if r.get("time_ns") is not None else None)
    estimate = cell("–")
    if r.get("flops_estimate") is not None:
        source = r.get("flops_estimate_source") or ""
        estimate = cell(fmt.flops(r["flops_estimate"]), sub=source.split(":")[0] or None, title=source or None)
    achieved = fmt.rate(r.get("achieved_flops_per_s"))
    if r.get("flops_complete") is False and r.get("achieved_flops_per_s") is not None:
        achieved = "≥ " + achieved
    return [run_cell(r), flops_cell(r.get("flops"), r.get("flops_complete")),
            fmt.nbytes(r.get("dram_bytes")), fmt.intensity(r.get("ai_dram")), time, achieved,
            fmt.percent(r.get("pct_of_peak")), bound_cell(r.get("bound")), estimate]


def run_cell(r: dict):
    """The run's name, with what it was (GPU · model · batch size) on a second line."""
    what = [r.get("gpu_model") or r.get("gpu"), r.get("model"),
            f"batch {r['batch_size']}" if r.get("batch_size") is not None else None, r.get("experiment")]
    named = name_cell(r["run"], 40)
    return cell(named.text, code=True, title=named.title, sub=" · ".join(str(w) for w in what if w) or None)


def _estimate_notes(runs: pl.DataFrame) -> list:
    """How the FLOPs estimates were made, once per distinct method (the analysis' own words)."""
    sources = runs["flops_estimate_source"].drop_nulls().to_list() if "flops_estimate_source" in runs.columns else []
    methods = list(dict.fromkeys(s.split(":", 1)[1].strip() for s in sources if ":" in s))
    if not methods:
        return []
    return [Paragraph.of("FLOPs estimate for runs whose counts miss tensor-core work, from the run named under "
                         "the number: " + "; ".join(methods) + ".")]


def bound_cell(bound: str | None):
    return cell(bound or "–", css=f"bound-{bound}" if bound else "")


def _estimates_table(estimates: pl.DataFrame):
    rows = [[name_cell(r["run"], 40), fmt.flops(r.get("est_flops")), fmt.nbytes(r.get("est_bytes")),
             fmt.duration(r.get("est_time_ns")), fmt.duration(r.get("measured_time_ns")),
             fmt.ratio(r.get("ratio")), r.get("source") or "–"]
            for r in estimates.iter_rows(named=True)]
    return table(["Run", "Est. FLOPs#", "Est. bytes#", "Est. time#", "Measured time#", "Measured / est.#",
                  "Source"], rows, caption="Estimate vs measured (time = max(bytes / bandwidth, FLOPs / peak))")


def spans_list(names: list[str], limit: int = 6) -> list[Span]:
    """`a`, `b` and `c` (code spans), cut after `limit` names with "and N more"."""
    shown = names[:limit]
    spans: list[Span] = []
    for i, name in enumerate(shown):
        if i:
            spans.append(Span(" and " if i == len(shown) - 1 and len(names) <= limit else ", "))
        spans.append(Span(name, code=True))
    if len(names) > limit:
        spans.append(Span(f" and {len(names) - limit} more"))
    return spans
