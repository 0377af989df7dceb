"""The findings: the report's answers in plain sentences, before any table or chart.

In order: the conclusion (which GPU is faster for which model, by how much, and whether it is
memory- or compute-bound: `speedup.model_summary` and `gpu_pivot`), what bounds each GPU's
runs (the run totals), which runs were cut short, where the kernel time goes, what is
incomplete or suspicious and why (tensor-core work the counters missed, points above a roof,
ncu-only times, failed inputs), and how busy the GPUs were. Every number is read from the
analyses; sentences group runs so that a folder of a hundred runs still gives a page, not a book.
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from roofreport.analysis import utilization
from roofreport.gpu import NOT_NAMED
from roofreport.report import fmt
from roofreport.report.context import Paragraph, Span
from roofreport.report.naming import RunNames
from roofreport.report.sections.comparison import spans_list
from roofreport.report.sections.inputs import display_root, relative

MANY_RUNS = 6
SWEEP_FINDINGS = 2      # kernel families per GPU whose share moves most with batch size
LOW_UTIL_PCT = 70.0     # a GPU busy less than this on average is called out


def findings(an, files: list) -> list[Paragraph]:
    names = RunNames(an.dataset.tables.get("runs"))
    stats = an.utilization_window if an.utilization_window is not None else an.utilization
    out: list[Paragraph] = []
    out += conclusion(an.gpu_summary, an.pivot)
    out += bound_findings(an.runs)
    out += cut_short_findings(an.runs)
    out += time_findings(labelled(an.share, names), labelled(an.top, names))
    out += incomplete_findings(an.incomplete, an.runs, an.roofline)
    out += suspicious_findings(an.kernel_roofline, an.runs)
    out += sweep_findings(an.pattern_sweeps)
    out += utilization_findings(labelled(stats, names))
    out += input_findings(files)
    if not out:
        out.append(Paragraph.of("Nothing in these inputs could be analysed; see Inputs below.", level="problem"))
    return out


def labelled(frame: pl.DataFrame, names: RunNames) -> pl.DataFrame:
    """`frame` with its `run` column holding each run's label, for sentences that name runs one
    by one (labels are unique within a dataset: grouping by them still holds)."""
    if not frame.height or "run" not in frame.columns:
        return frame
    return frame.with_columns(pl.col("run").map_elements(names.label, return_dtype=pl.String))


def _span_range(values: list[float], render) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    lo, hi = min(values), max(values)
    return render(lo) if render(lo) == render(hi) else f"{render(lo)} to {render(hi)}"


# -- the conclusion: which GPU is faster for which model, and what bounds it ------------------

MANY_MODELS = 6


def conclusion(summary: pl.DataFrame, pivot: pl.DataFrame) -> list[Paragraph]:
    """Which GPU is faster for which model and by how much (`speedup.model_summary`), then
    whether each model is memory- or compute-bound on each GPU (`speedup.gpu_pivot`)."""
    out = []
    compared = summary.filter(pl.col("configs") > 0)
    if compared.height:
        if compared.height > MANY_MODELS:
            sentences = [_speedup_overview(compared)]
        else:
            pairs = compared.with_columns(pl.min_horizontal("faster", "slower").alias("first_gpu"),
                                          pl.max_horizontal("faster", "slower").alias("second_gpu"))
            sentences = [_faster_for(group) for _, group
                         in pairs.group_by("first_gpu", "second_gpu", "faster", maintain_order=True)]
        out.append(Paragraph.of("Conclusion: " + " ".join(sentences)))
        out += _bound_conclusion(pivot)
    return out


def _faster_for(group: pl.DataFrame) -> str:
    """"The P40 is faster than the K80 for alexnet (3.7×: geometric mean of 12 configurations,
    2.1× to 6.3×) and vgg16 (...), per iteration."""
    first = group.row(0, named=True)
    models = []
    for row in group.iter_rows(named=True):
        detail = (f": geometric mean of {row['configs']} configurations, {fmt.ratio(row['speedup_min'])} to "
                  f"{fmt.ratio(row['speedup_max'])}" if row["configs"] > 1 else "")
        if row["faster_in"] < row["configs"]:
            detail += f"; faster in {row['faster_in']} of them"
        models.append(f"{row['model']} ({fmt.ratio(row['speedup'])}{detail})")
    bases = group["basis"].unique().to_list()
    basis = f", compared on {bases[0]}" if len(bases) == 1 else ""
    return f"The {first['faster']} is faster than the {first['slower']} for {_and(models)}{basis}."


def _speedup_overview(compared: pl.DataFrame) -> str:
    """Many models: per pair of GPUs, for how many models each is faster, and the median speedup."""
    parts = []
    for (faster, slower), group in compared.group_by("faster", "slower", maintain_order=True):
        parts.append(f"the {faster} is faster than the {slower} for {group.height} model"
                     f"{'s' if group.height > 1 else ''} ({_span_range(group['speedup'].to_list(), fmt.ratio)})")
    return "; ".join(parts) + " (per model: GPUs compared)."


def _bound_conclusion(pivot: pl.DataFrame) -> list[Paragraph]:
    """Per GPU: which compared models are memory- and which compute-bound, at what intensity."""
    counted = pivot.filter(pl.col("flops").is_not_null())
    if not counted.height:
        return [Paragraph.of("Whether they are memory- or compute-bound the logs cannot tell: they hold no FLOP "
                             "and DRAM-byte counts (ncu --metrics or nvprof --metrics flop_count_sp,"
                             "dram_read_transactions,dram_write_transactions give them).")]
    by_gpu = counted.sort("gpu", "model").group_by(["gpu"], maintain_order=True)
    parts = [_bound_on(gpu, group) for (gpu,), group in by_gpu]
    return [Paragraph.of("Bound: " + "; ".join(parts) + ".")]


def _bound_on(gpu: str, group: pl.DataFrame) -> str:
    """"on the V100, vgg11 (13.4 FLOP/B) and vgg13 (15.6 FLOP/B) are memory-bound, vgg19 (17.6
    FLOP/B) compute-bound, against a ridge point of 17.4 FLOP/B"."""
    known = group.filter(pl.col("bound").is_not_null())
    said = []
    for (bound,), runs in known.group_by(["bound"], maintain_order=True):
        models = [f"{m} ({fmt.intensity(ai)})" for m, ai in runs.select("model", "arithmetic_intensity").iter_rows()]
        said.append(f"{_and(models)} {'are' if len(models) > 1 else 'is'} {bound}-bound")
    text = f"on the {gpu}, " + ", ".join(said)
    if said:
        text += f" against a ridge point of {_span_range(known['ridge_ai'].to_list(), fmt.intensity)}"
    unknown = group.filter(pl.col("bound").is_null())
    if unknown.height:
        why = (unknown["bound_note"].drop_nulls().first() or "a quantity is missing").split(":")[0]
        models = unknown["model"].to_list()
        verb = "are" if len(models) > 1 else "is"
        text += ("; " if said else "") + f"{_and(models)} {verb} of unknown bound ({why})"
    return text


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


# -- what bounds each run ---------------------------------------------------------------------

def bound_findings(runs: pl.DataFrame) -> list[Paragraph]:
    """Per GPU and bound class, the runs with their intensity against the ridge point (the run
    totals of the runs table); then the runs no class can be given."""
    out = []
    placed = runs.filter(pl.col("bound").is_not_null())
    for (gpu, bound), group in placed.group_by("gpu_label", "bound", maintain_order=True):
        names = _names(group)
        spans = [Span(f"On the {gpu or 'unidentified GPU'}, {len(names)} run{'s are' if len(names) > 1 else ' is'} "
                      f"{bound}-bound (")] + spans_list(names) + [Span(")")]
        intensity = _span_range(group["arithmetic_intensity"].to_list(), fmt.intensity)
        spans.append(Span(f": arithmetic intensity {intensity}"))
        if group["ridge_ai"].drop_nulls().len():
            spans.append(Span(f" against a ridge point of {_span_range(group['ridge_ai'].to_list(), fmt.intensity)}"))
        if group["pct_of_roof"].drop_nulls().len():
            spans.append(Span(f"; {'they reach' if len(names) > 1 else 'it reaches'} "
                              f"{_span_range(group['pct_of_roof'].to_list(), fmt.percent)} of the roof at that "
                              "intensity"))
        out.append(Paragraph(spans + [Span(".")]))
    unplaced = runs.filter(pl.col("bound").is_null())
    incomplete = _names(unplaced.filter(pl.col("flops_complete") == False))  # noqa: E712
    if incomplete:
        many = len(incomplete) > 1
        out.append(Paragraph([Span("No bound class for ")] + spans_list(incomplete, 4) + [Span(
            f": {'their FLOP counts are' if many else 'its FLOP count is'} incomplete, so the true "
            f"point{'s lie' if many else ' lies'} higher than the measured one{'s' if many else ''} (see below).")]))
    no_counts = _names(unplaced.filter(pl.col("flops").is_null() & pl.col("kernel_time_ns").is_not_null()))
    if no_counts:
        out.append(Paragraph([Span(f"{len(no_counts)} run{'s' if len(no_counts) > 1 else ''} cannot be placed on a "
                                   "roofline (no FLOP counts in their logs, only times): ")]
                             + spans_list(no_counts, 4) + [Span(".")]))
    return out


def _names(runs: pl.DataFrame) -> list[str]:
    """The runs' labels (their ids where a label is missing)."""
    if "label" not in runs.columns:
        return runs["run"].to_list()
    return [label or run for run, label in runs.select("run", "label").iter_rows()]


def cut_short_findings(runs: pl.DataFrame) -> list[Paragraph]:
    """Runs whose logs stop before the run did: what stopped them, and what that means for comparisons."""
    short = runs.filter(pl.col("cut_short").fill_null(False))
    if not short.height:
        return []
    said = short["cut_short_reason"].drop_nulls().str.replace(r" \[[^\[\]]*\]$", "").value_counts(sort=True)
    causes = "; ".join(f"“{text}” in {n}" for text, n in said.head(3).iter_rows())
    counted = short.filter(pl.col("iterations").is_not_null()).height
    if short.height == 1:
        said_so = f" (its log says “{said['cut_short_reason'][0]}”)" if said.height else ""
        compared = "" if counted else ", and its logs do not count iterations: it is not compared"
        return [Paragraph.of(f"1 of {runs.height} runs was cut short before the end{said_so}: its totals cover only "
                             f"the part that ran, so it is compared with other runs per iteration only{compared}.",
                             level="warning")]
    text = (f"{short.height} of {runs.height} runs were cut short before the end"
            + (f" (the logs say {causes})" if causes else "") + ": their totals cover only the part that ran. "
            "They are compared per iteration")
    text += (f" where their logs count iterations ({counted} of {short.height} do), and not at all otherwise."
             if counted < short.height else " (their logs count iterations).")
    return [Paragraph.of(text, level="warning")]


TRANSFERS = ("memcpy", "memset")


def time_findings(share: pl.DataFrame, top: pl.DataFrame) -> list[Paragraph]:
    share = share.filter(pl.col("share").is_not_null())
    if not share.height:
        return []
    kernels = share.filter(~pl.col("category").is_in(TRANSFERS))
    leaders = kernels.sort("share", descending=True).group_by("run", maintain_order=True).first()
    moved = share.filter(pl.col("category").is_in(TRANSFERS)).group_by("run").agg(pl.col("share").sum())
    runs = share["run"].unique(maintain_order=True).to_list()
    if len(runs) > MANY_RUNS:
        return [_time_summary(runs, leaders, moved)]
    out = []
    for run in runs:
        spans = [Span("In "), Span(run, code=True), Span(", ")]
        transfer = moved.filter(pl.col("run") == run)["share"].sum()
        if transfer >= 0.2:
            spans.append(Span(f"host-device transfers take {fmt.share(transfer)} of the GPU time; among kernels, "))
        lead = leaders.filter(pl.col("run") == run)
        if lead.height:
            lead_row = lead.row(0, named=True)
            spans.append(Span(f"{lead_row['category']} takes {fmt.share(lead_row['share'])}"))
            spans += _top_kernel_spans(top, run)
        out.append(Paragraph(spans + [Span(".")]))
    return out


def _top_kernel_spans(top: pl.DataFrame, run: str) -> list[Span]:
    first = top.filter((pl.col("run") == run) & ~pl.col("category").is_in(TRANSFERS)).sort(
        "time_ns", descending=True, nulls_last=True)
    if not first.height:
        return []
    largest = first.row(0, named=True)
    return [Span("; the largest single kernel is "), Span(_short(largest["short_name"]), code=True),
            Span(f" ({fmt.share(largest['share'])})")]


def _time_summary(runs: list[str], leaders: pl.DataFrame, moved: pl.DataFrame) -> Paragraph:
    counts = Counter(leaders["category"].to_list())
    parts = ", ".join(f"{c} in {n}" for c, n in counts.most_common())
    text = (f"Across {len(runs)} runs the kernel category with the most time is {parts} "
            f"(its share: {_span_range(leaders['share'].to_list(), fmt.share)})")
    if moved.height and moved["share"].max() >= 0.05:
        text += f"; host-device transfers take {_span_range(moved['share'].to_list(), fmt.share)} of the GPU time"
    return Paragraph.of(text + ".")


def _short(name: str | None, limit: int = 60) -> str:
    name = name or "?"
    return name if len(name) <= limit else name[:limit - 1] + "…"


def incomplete_findings(incomplete: pl.DataFrame, runs: pl.DataFrame, roofline: pl.DataFrame) -> list[Paragraph]:
    if not incomplete.height:
        return []
    info = runs.select("run", "gpu_model", "gpu_label", "model", "batch_size", "flops", "flops_complete")
    rows = incomplete.join(info, on="run", how="left")
    out = []
    for gpu, group in rows.group_by("gpu_label", maintain_order=True):
        out.append(_incomplete_sentence(gpu[0], group, info, _tensor_kind(roofline, group["run"])))
    return out


def _tensor_kind(roofline: pl.DataFrame, runs: pl.Series) -> str:
    """"TF32 " / "BF16 " / "FP16 " as the analysis judged the tensor work (its ceiling), or ""."""
    sources = roofline.filter(pl.col("run").is_in(runs.to_list()) & (pl.col("precision") == "tensor"))
    kinds = sources["peak_source"].drop_nulls().str.extract(r"Tensor (TF32|BF16|FP16)", 1).drop_nulls()
    return f"{kinds.mode().sort()[0]} " if kinds.len() else ""


def _incomplete_sentence(gpu: str | None, group: pl.DataFrame, info: pl.DataFrame, kind: str) -> Paragraph:
    examples = list(dict.fromkeys(k for k in group["example_kernel"].to_list() if k))
    label = gpu or "unidentified GPU"
    reason = group["reason"].drop_nulls().first() or "tensor-core work is not counted"
    many = group.height > 1
    spans = [Span(f"The {label} FLOP count{'s' if many else ''} of {len(group)} run{'s' if many else ''} "
                  f"miss{'' if many else 'es'} {kind}tensor-core work: {reason}")]
    if examples and not any(e in reason for e in examples):
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
    for row in group.iter_rows(named=True):
        same = complete.filter((pl.col("model") == row["model"]) & pl.col("batch_size").eq_missing(row["batch_size"])
                               & pl.col("gpu_model").ne_missing(row["gpu_model"]))
        if same.height and row["flops"]:
            ratios.append(same["flops"].max() / row["flops"])
            better += [g for g in same["gpu_label"].to_list() if g and g not in better]
    return ratios, better


def suspicious_findings(kernels: pl.DataFrame, runs: pl.DataFrame) -> list[Paragraph]:
    out = []
    above = _names(runs.filter(pl.col("bound_note").fill_null("").str.starts_with("above")))
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
    ncu_only = _names(runs.filter(pl.col("counted_time_source").fill_null("").str.starts_with("ncu")
                                  | pl.col("time_source").fill_null("").str.starts_with("ncu")))
    if ncu_only:
        out.append(Paragraph([Span("Times of ")] + spans_list(ncu_only, 4) + [Span(
            " come from ncu's serialized, clock-locked replays: achieved FLOP/s are lower than in production. "
            "An nsys or nvprof trace of the same run gives real kernel times.")], level="warning"))
    return out


def sweep_findings(pattern_sweeps: pl.DataFrame) -> list[Paragraph]:
    """Per GPU and kernel family (NCCL, winograd...): the sweep where its share moves most."""
    if not pattern_sweeps.height:
        return []
    ends = pattern_sweeps.sort("x_order").group_by("series", "label", maintain_order=True).agg(
        pl.col("gpu", "model", "config", "param").first(), pl.col("x_label").first().alias("first_label"),
        pl.col("share").first().alias("first_share"), pl.col("x_label").last().alias("last_label"),
        pl.col("share").last().alias("last_share"), pl.col("share").max().alias("peak"))
    swings = ends.filter(pl.col("peak") >= 0.05).with_columns(
        (pl.col("last_share") - pl.col("first_share")).abs().alias("swing"))
    biggest = swings.sort("swing", descending=True).group_by("gpu", "label", maintain_order=True).first()
    out = []
    for row in biggest.group_by("gpu", maintain_order=True).head(SWEEP_FINDINGS).iter_rows(named=True):
        what = f"{row['model']}, {row['config']}" if row["config"] else row["model"]
        param = row["param"].replace("_", " ")
        where = "With an unidentified GPU" if row["gpu"].startswith(NOT_NAMED) else f"On the {row['gpu']}"
        out.append(Paragraph.of(
            f"{where}, {row['label']} take {fmt.share(row['first_share'])} of GPU time at {param} "
            f"{row['first_label']} and {fmt.share(row['last_share'])} at {row['last_label']} ({what})."))
    return out


def utilization_findings(stats: pl.DataFrame) -> list[Paragraph]:
    """GPUs busy less than LOW_UTIL_PCT on average one by one; the others in one sentence. A GPU
    read once (a snapshot) says nothing of how busy it was over the run: it is only counted."""
    stats = stats.filter(pl.col("util_mean").is_not_null()) if stats.height else stats
    if not stats.height:
        return []
    snapshots = stats.filter(utilization.snapshot())
    stats = stats.filter(~utilization.snapshot())
    if not stats.height:
        count = snapshots["run"].n_unique()
        return [Paragraph.of(f"{count} run{'s have' if count > 1 else ' has'} one nvidia-smi reading per GPU (a snapshot), "
                             "not a series: how busy the GPU was over the run is not known.")]
    low = stats.filter(pl.col("util_mean") < LOW_UTIL_PCT)
    busy = stats.filter(pl.col("util_mean") >= LOW_UTIL_PCT)
    out = []
    for row in low.head(MANY_RUNS).iter_rows(named=True):
        power = f", drawing {row['power_mean_w']:.0f} W on average" if row.get("power_mean_w") is not None else ""
        out.append(Paragraph([Span(f"GPU {row['gpu_index']} of "), Span(row["run"]), Span(
            f" was busy only {fmt.percent(row['util_mean'])} of the time (idle in {fmt.share(row.get('idle_fraction'))} "
            f"of {fmt.count(row.get('samples'))} samples){power}: it waited for the host (data loading, "
            "synchronisation) rather than computing.")], level="warning"))
    if low.height > MANY_RUNS:
        out.append(Paragraph.of(f"{low.height - MANY_RUNS} more GPUs were busy less than {LOW_UTIL_PCT:.0f} % "
                                "of the time (see GPU utilization).", level="warning"))
    if busy.height:
        who = "The other" if low.height else "All"
        out.append(Paragraph.of(
            f"{who} {busy.height} GPU{'s' if busy.height > 1 else ''} sampled "
            f"{'were' if busy.height > 1 else 'was'} busy {_span_range(busy['util_mean'].to_list(), fmt.percent)} "
            f"of the time on average" + (f", drawing {_span_range(busy['power_mean_w'].to_list(), _watts)}"
                                         if busy["power_mean_w"].drop_nulls().len() else "") + "."))
    return out


def _watts(watts: float) -> str:
    return f"{watts:.0f} W"


def input_findings(files: list) -> list[Paragraph]:
    out = []
    failed = [f for f in files if f.status in ("error", "partial")]
    root = display_root([f.path for f in files])
    if failed:
        out.append(Paragraph([Span(f"{len(failed)} file{'s' if len(failed) > 1 else ''} could not be read "
                                   "completely (details under Inputs): ")]
                             + spans_list([relative(f.path, root) for f in failed], 4) + [Span(".")],
                             level="problem"))
    skipped = [f for f in files if f.status == "skipped"]
    if files and len(skipped) == len(files):
        out.append(Paragraph.md(
            f"{'The only file found is not' if len(files) == 1 else f'None of the {len(files)} files is'} "
            "a profiler log roofreport can read, so there is nothing to "
            "analyse. It reads Nsight Compute, Nsight Systems, nvprof and nvidia-smi output (text, CSV, "
            "nsys SQLite); binary `.ncu-rep`/`.nsys-rep` reports must be exported first (see Inputs).",
            level="problem"))
    elif skipped:
        out.append(Paragraph.of(f"{len(skipped)} file{'s' if len(skipped) > 1 else ''} skipped as not profiler "
                                "logs or not readable offline (listed under Inputs with the reason)."))
    return out
