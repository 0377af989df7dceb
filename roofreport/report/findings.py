"""The findings: the report's answers in plain sentences, before any table or chart.

In order: what bounds each GPU's runs, where the kernel time goes, what is incomplete or
suspicious and why (tensor-core work the counters missed, points above a roof, ncu-only times,
failed inputs), and how busy the GPUs were. Every number is read from the analyses; sentences
group runs so that a folder of a hundred runs still gives a page, not a book.
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from roofreport.report import fmt
from roofreport.report.comparison import spans_list
from roofreport.report.context import Paragraph, Span

MANY_RUNS = 6


def findings(an, files: list) -> list[Paragraph]:
    out: list[Paragraph] = []
    out += bound_findings(an.runs, an.roofline)
    out += time_findings(an.share, an.top)
    out += incomplete_findings(an.incomplete, an.runs)
    out += suspicious_findings(an.roofline, an.kernel_roofline, an.runs)
    out += sweep_findings(an.sweeps)
    out += utilization_findings(an.utilization_window if an.utilization_window is not None else an.utilization)
    out += input_findings(files)
    if not out:
        out.append(Paragraph.of("Nothing in these inputs could be analysed; see Inputs below.", level="problem"))
    return out


def _span_range(values: list[float], render) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    lo, hi = min(values), max(values)
    return render(lo) if render(lo) == render(hi) else f"{render(lo)} to {render(hi)}"


def bound_findings(runs: pl.DataFrame, roofline: pl.DataFrame) -> list[Paragraph]:
    out = []
    placed = runs.filter(pl.col("bound").is_not_null())
    for (gpu, bound), group in placed.group_by("gpu_model", "bound", maintain_order=True):
        names = group["run"].to_list()
        ridge = roofline.filter(pl.col("run").is_in(names))["ridge_ai"].drop_nulls()
        spans = [Span(f"On the {gpu or 'unidentified GPU'}, {len(names)} run{'s are' if len(names) > 1 else ' is'} "
                      f"{bound}-bound (")] + spans_list(names) + [Span(")")]
        spans.append(Span(f": arithmetic intensity {_span_range(group['ai_dram'].to_list(), fmt.intensity)}"))
        if ridge.len():
            spans.append(Span(f" against a ridge point of {_span_range(ridge.to_list(), fmt.intensity)}"))
        spans.append(Span(f"; they reach {_span_range(group['pct_of_peak'].to_list(), fmt.percent)} of peak"))
        if (group["flops_complete"] == False).any():  # noqa: E712 - polars comparison
            spans.append(Span(" (on incomplete FLOP counts, see below)"))
        out.append(Paragraph(spans + [Span(".")]))
    unplaced = runs.filter(pl.col("bound").is_null())["run"].to_list()
    if unplaced:
        out.append(Paragraph([Span(f"{len(unplaced)} run{'s' if len(unplaced) > 1 else ''} cannot be placed on a "
                                   "roofline (no FLOP or byte counts, only times): ")] + spans_list(unplaced, 4)
                             + [Span(".")]))
    return out


def time_findings(share: pl.DataFrame, top: pl.DataFrame) -> list[Paragraph]:
    share = share.filter(pl.col("share").is_not_null())
    if not share.height:
        return []
    leaders = share.sort("share", descending=True).group_by("run", maintain_order=True).first()
    runs = share["run"].unique(maintain_order=True).to_list()
    if len(runs) > MANY_RUNS:
        counts = Counter(leaders["category"].to_list())
        parts = ", ".join(f"{c} in {n}" for c, n in counts.most_common())
        return [Paragraph.of(f"Across {len(runs)} runs the largest share of kernel time goes to {parts} "
                             f"(largest-category share {_span_range(leaders['share'].to_list(), fmt.share)}).")]
    out = []
    for run in runs:
        lead = leaders.filter(pl.col("run") == run).row(0, named=True)
        spans = [Span("In "), Span(run, code=True),
                 Span(f", {lead['category']} kernels take {fmt.share(lead['share'])} of the kernel time")]
        first = top.filter(pl.col("run") == run).sort("time_ns", descending=True, nulls_last=True)
        if first.height:
            k = first.row(0, named=True)
            spans += [Span("; the largest single kernel is "), Span(_short(k["short_name"]), code=True),
                      Span(f" ({fmt.share(k['share'])})")]
        out.append(Paragraph(spans + [Span(".")]))
    return out


def _short(name: str | None, limit: int = 60) -> str:
    name = name or "?"
    return name if len(name) <= limit else name[:limit - 1] + "…"


def incomplete_findings(incomplete: pl.DataFrame, runs: pl.DataFrame) -> list[Paragraph]:
    if not incomplete.height:
        return []
    info = runs.select("run", "gpu_model", "model", "batch_size", "flops", "flops_complete")
    rows = incomplete.join(info, on="run", how="left")
    out = []
    for gpu, group in rows.group_by("gpu_model", maintain_order=True):
        out.append(_incomplete_sentence(gpu[0], group, info))
    return out


def _incomplete_sentence(gpu: str | None, group: pl.DataFrame, info: pl.DataFrame) -> Paragraph:
    examples = list(dict.fromkeys(k for k in group["example_kernel"].to_list() if k))
    label = gpu or "unidentified GPU"
    spans = [Span(f"The {label} FLOP counts of {len(group)} run{'s' if group.height > 1 else ''} are incomplete: "
                  f"{group['reason'].drop_nulls().first() or 'tensor-core work is not counted'}")]
    if examples:
        spans += [Span(" (e.g. ")] + spans_list([_short(e) for e in examples], 3) + [Span(")")]
    share = group["tensor_time_share"].drop_nulls()
    if share.len():
        spans.append(Span(f"; those kernels take {_span_range(share.to_list(), fmt.share)} of the kernel time"))
    ratios, better = _ratios_to_complete(group, info)
    if ratios:
        spans.append(Span(f", so the {label} looks {_span_range(ratios, fmt.ratio)} slower than it is; the "
                          f"{' and '.join(better)} count{'s' if len(better) > 1 else ''} of the same "
                          f"model{'s' if group.height > 1 else ''} "
                          f"{'are' if len(better) > 1 else 'is'} the better estimate"))
    else:
        spans.append(Span(", so its FLOP/s are lower bounds"))
    return Paragraph(spans + [Span(".")], level="warning")


def _ratios_to_complete(group: pl.DataFrame, info: pl.DataFrame) -> tuple[list[float], list[str]]:
    """FLOPs of a complete run of the same model (and batch size) on another GPU ÷ this run's FLOPs."""
    complete = info.filter((pl.col("flops_complete") == True) & pl.col("flops").is_not_null()  # noqa: E712
                           & pl.col("model").is_not_null())
    ratios, better = [], []
    for r in group.iter_rows(named=True):
        same = complete.filter((pl.col("model") == r["model"]) & pl.col("batch_size").eq_missing(r["batch_size"])
                               & pl.col("gpu_model").ne_missing(r["gpu_model"]))
        if same.height and r["flops"]:
            ratios.append(same["flops"].max() / r["flops"])
            better += [g for g in same["gpu_model"].to_list() if g and g not in better]
    return ratios, better


def suspicious_findings(roofline: pl.DataFrame, kernels: pl.DataFrame, runs: pl.DataFrame) -> list[Paragraph]:
    out = []
    above = roofline.filter(pl.col("above_roof") == True)["run"].unique(maintain_order=True).to_list()  # noqa: E712
    if above:
        out.append(Paragraph([Span("Run totals above their roof (counts or peaks are wrong there): ")]
                             + spans_list(above) + [Span(".")], level="warning"))
    if kernels.height and "above_roof" in kernels.columns:
        bad = kernels.filter(pl.col("above_roof") == True)  # noqa: E712
        if bad.height:
            names = bad["short_name"].drop_nulls().unique(maintain_order=True).to_list()
            out.append(Paragraph([Span(f"{bad.height} kernel measurement{'s' if bad.height > 1 else ''} plot above "
                                       "their roof, which real hardware cannot do: their FLOP or byte counts are "
                                       "suspect (")] + spans_list([_short(n) for n in names], 3) + [Span(").")],
                                 level="warning"))
    ncu_only = runs.filter(pl.col("time_source").fill_null("").str.contains("(?i)ncu"))["run"].to_list()
    if ncu_only:
        out.append(Paragraph([Span("Times of ")] + spans_list(ncu_only, 4) + [Span(
            " come from ncu's serialized, clock-locked replays: achieved FLOP/s are lower than in production. "
            "An nsys or nvprof trace of the same run gives real kernel times.")], level="warning"))
    return out


def sweep_findings(sweeps: pl.DataFrame) -> list[Paragraph]:
    comm = sweeps.filter(pl.col("category") == "communication") if sweeps.height else sweeps
    if not comm.height:
        return []
    out = []
    for (gpu,), group in comm.group_by("gpu", maintain_order=True):
        ordered = group.sort("batch_size")
        lo, hi = ordered.row(0, named=True), ordered.row(-1, named=True)
        out.append(Paragraph.of(
            f"On {gpu}, communication (NCCL) takes {fmt.share(lo['share'])} of kernel time at batch size "
            f"{lo['batch_size']} and {fmt.share(hi['share'])} at {hi['batch_size']} "
            f"({group['model'].n_unique()} model{'s' if group['model'].n_unique() > 1 else ''})."))
    return out


def utilization_findings(stats: pl.DataFrame) -> list[Paragraph]:
    stats = stats.filter(pl.col("util_mean").is_not_null()) if stats.height else stats
    if not stats.height:
        return []
    if stats.height > MANY_RUNS:
        return [Paragraph.of(f"{stats.height} GPUs sampled by nvidia-smi: mean utilization "
                             f"{_span_range(stats['util_mean'].to_list(), fmt.percent)}, idle "
                             f"{_span_range(stats['idle_fraction'].to_list(), fmt.share)} of samples.")]
    out = []
    for r in stats.iter_rows(named=True):
        power = f", drawing {r['power_mean_w']:.0f} W on average" if r.get("power_mean_w") is not None else ""
        level = "warning" if (r.get("util_mean") or 0) < 50 else "info"
        out.append(Paragraph([Span(f"GPU {r['gpu_index']} of "), Span(r["run"], code=True),
                              Span(f" was busy {fmt.percent(r['util_mean'])} of the time on average (idle in "
                                   f"{fmt.share(r.get('idle_fraction'))} of {fmt.count(r.get('samples'))} samples)"
                                   f"{power}.")], level=level))
    return out


def input_findings(files: list) -> list[Paragraph]:
    out = []
    failed = [f for f in files if f.status in ("error", "partial")]
    if failed:
        out.append(Paragraph([Span(f"{len(failed)} file{'s' if len(failed) > 1 else ''} could not be read "
                                   "completely (details under Inputs): ")]
                             + spans_list([f.path.rsplit('/', 1)[-1] for f in failed], 4) + [Span(".")],
                             level="problem"))
    skipped = [f for f in files if f.status == "skipped"]
    if skipped:
        out.append(Paragraph.of(f"{len(skipped)} file{'s' if len(skipped) > 1 else ''} skipped as not profiler "
                                "logs or not readable offline (listed under Inputs with the reason)."))
    return out
