"""The findings: the report's answers in plain sentences, before any table or chart.

In order: the conclusion (which GPU is faster for which work, by how much, and why:
`conclusions.experiment_conclusions`, worded by `conclusions.py` beside this module), what bounds each GPU's
runs (the run totals), which runs were cut short, where the kernel time goes, what is
incomplete or suspicious and why (tensor-core work the counters missed, points above a roof,
ncu-only times, failed inputs), and how busy the GPUs were. Every number is read from the
analyses; sentences group runs so that a folder of a hundred runs still gives a page, not a book.
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from roofreport.analysis import share, sweeps, utilization, variants
from roofreport.gpu import NOT_NAMED
from roofreport.model.bound import SHORT_LAUNCH_NS, classed_by_name, thin, words as bound_words
from roofreport.report import fmt
from roofreport.report.context import Paragraph, Span, spans_list
from roofreport.report.naming import RunNames
from roofreport.report.sections.conclusions import conclusion_paragraphs
from roofreport.report.sections.distributed import job_sentences, job_title
from roofreport.report.sections.inputs import display_root, relative

MANY_RUNS = 6           # more runs than this are summed up, not named one by one


def findings(an, files: list) -> list[Paragraph]:
    names = RunNames(an.dataset.tables.get("runs"))
    stats = an.utilization_window if an.utilization_window is not None else an.utilization
    out: list[Paragraph] = []
    out += conclusion(an)
    out += distributed_findings(an.distributed)
    if not an.experiment_conclusions.height:
        out += variant_findings(an.variants)
    out += bound_findings(an.runs)
    out += cut_short_findings(an.runs)
    out += time_findings(labelled(an.leaders, names), labelled(an.top, names))
    out += incomplete_findings(an.incomplete, an.runs)
    out += suspicious_findings(an.kernel_roofline, an.runs)
    out += sweep_check_findings(an.sweep_checks)
    out += sweep_findings(an.pattern_swings)
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


# -- the conclusion: which GPU is faster for which work, by how much, and why ------------------

def conclusion(an) -> list[Paragraph]:
    """Per experiment and pair of GPUs, which is faster, by how much and why
    (`conclusions.experiment_conclusions`); then the workloads run on two GPUs that could not be
    compared, and why (`speedup.speedups`)."""
    out = conclusion_paragraphs(an.experiment_conclusions)
    apart = an.gpu_summary.filter(pl.col("configs") == 0) if an.gpu_summary.height else an.gpu_summary
    if apart.height:
        reasons = an.speedups.filter(~pl.col("comparable")).join(apart.select("model", "experiment"),
                                                                  on=["model", "experiment"], how="semi")
        kinds = reasons["reason_kind"].value_counts(sort=True)
        names = [f"{m} · {e}" if e else m for m, e in apart.select("model", "experiment").iter_rows()]
        example = reasons["reason"][0] if reasons.height else ""
        gpus = sorted(set(reasons["faster"].to_list()) | set(reasons["slower"].to_list()))
        what = f"{len(names)} workload{'s' if len(names) > 1 else ''}"
        spans = [Span(f"Not compared on {fmt.listing(gpus)}: {what} (")] + spans_list(names, 4) + [Span(
            f"), because {kinds['reason_kind'][0] if kinds.height else 'no like basis'}: e.g. {example}.")]
        out.append(Paragraph(spans, level="warning"))
    return out


def distributed_findings(found) -> list[Paragraph]:
    """Per job of several ranks: its straggler, its communication no compute hides and its
    collectives' bandwidth against the link (`distributed.job_sentences`); the runs where one
    process drove several GPUs, once."""
    out = []
    for job in found.jobs.iter_rows(named=True):
        said = job_sentences(job)
        if said:
            out.append(Paragraph.of(f"{job_title(job, short=True)}: " + "; ".join(said) + "."))
    if found.single_process.height:
        out.append(Paragraph.of(_single_process_words(found.single_process)))
    return out


def _single_process_words(single: pl.DataFrame) -> str:
    """The runs where one process drove several GPUs: GPU 0's extra time where the logs give
    each GPU's (a range over several runs), and which log would tell where they do not."""
    count = single.height
    told = single.filter(pl.col("per_device"))
    untold = single.filter(~pl.col("per_device"))
    said = [f"{count} run{'s drive' if count != 1 else ' drives'} several GPUs from one process (DataParallel), "
            "so GPU 0 does more than the others (the loss, the reduction)."]
    excess = told["gpu0_excess_pct"].drop_nulls()
    if excess.len():
        low, high = fmt.percent(excess.min(), 0), fmt.percent(excess.max(), 0)
        which = "" if not untold.height else " in the run whose log gives each GPU's time" if told.height == 1 \
            else f" in the {told.height} runs whose logs give each GPU's time"
        said.append(f"GPU 0's kernels take {low if low == high else f'{low} to {high}'} more time than the median "
                    f"other GPU's{which}.")
    if untold.height:
        whose = ("Their summaries add" if untold.height > 1 else "Its summary adds") if not told.height else \
            (f"The other {untold.height} runs' summaries add" if untold.height > 1 else "The other run's summary adds")
        # (the log that would tell holds parentheses of its own: said after a semicolon, not inside more)
        they = "they" if untold.height > 1 else "it"
        said.append(f"{whose} the GPUs together, so {they} cannot tell per device; {untold['would_tell'][0]} would.")
    return " ".join(said)


# -- the folder's own question on one GPU: its build and code variants ------------------------

MAX_VARIANTS = 4


def variant_findings(rows: pl.DataFrame | None) -> list[Paragraph]:
    """Per GPU and variant (`variants.variant_comparisons`): which value is faster, by how much,
    over how many matched pairs, and why (the work changed, or the same work ran nearer its roof)."""
    if rows is None or not rows.height:
        return []
    out = []
    ranked = rows.filter(pl.col("fastest").fill_null(False)) if "fastest" in rows.columns else rows.clear()
    keys = ["gpu", "subject", "variant", "basis"]
    for _, group in ranked.group_by(keys, maintain_order=True):
        out.append(_ranking(group.sort("speedup")))
    rows = rows.join(ranked.select(keys).unique(), on=keys, how="anti")
    for row in rows.sort("speedup", descending=True).head(max(MAX_VARIANTS - len(out), 0)).iter_rows(named=True):
        pairs = f"{row['pairs']} pair{'s' if row['pairs'] > 1 else ''}" + (
            f" matched on {row['matched_on']}" if row["matched_on"] else "")
        where = f"On the {row['gpu']}" if not row["gpu"].startswith(NOT_NAMED) else f"On a {row['gpu']}"
        if row["speedup"] < 1 + variants.SAME:
            text = (f"{where}, {row['slower']} and {row['faster']} take the same time for {row['subject']} "
                    f"({fmt.ratio(row['speedup'])}, {pairs})")
        else:
            spread = f"{fmt.ratio(row['speedup_min'])} to {fmt.ratio(row['speedup_max'])}, " if row["pairs"] > 1 else ""
            text = (f"{where}, {row['faster']} is faster than {row['slower']} for {row['subject']} "
                    f"{fmt.ratio(row['speedup'])} ({spread}{pairs})")
        out.append(Paragraph.of(text + f", on {row['basis']}: {_variant_why(row)}"))
    return out


def _ranking(group: pl.DataFrame) -> Paragraph:
    """One sentence for a variant of three or more values: the fastest, and each other value's
    time against it, nearest first ("q3_3c.o takes 87× its time"), with why where the logs tell."""
    first = group.row(0, named=True)
    where = f"On the {first['gpu']}" if not first["gpu"].startswith(NOT_NAMED) else f"On a {first['gpu']}"
    pairs = set(group["pairs"].to_list())
    matched = (f"{pairs.pop()} pair{'s' if group['pairs'][0] > 1 else ''} each" if len(pairs) == 1
               else f"{min(group['pairs'])} to {max(group['pairs'])} pairs")
    matched += f", matched on {first['matched_on']}" if first["matched_on"] else ""
    others = []
    for index, row in enumerate(group.iter_rows(named=True)):
        why = _work_changed(row)
        others.append(f"{row['slower']} {fmt.ratio(row['speedup'])}{' its time' if not index else ''}"
                      + (f" ({why})" if why else ""))
    kind = "programs" if first["variant"] == "program" else f"values of {first['variant'].replace('_', ' ')}"
    text = (f"{where}, {first['faster']} is the fastest of {group.height + 1} {kind} for {first['subject']}, on "
            f"{first['basis']} ({matched}); the others take longer: {fmt.listing(others)}.")
    if group["flops_ratio"].is_null().all() and group["dram_ratio"].is_null().all():
        text += " The logs count no FLOPs or bytes to tell why."
    return Paragraph.of(text)


def _work_changed(row: dict) -> str:
    """"it does 4.0× the FLOPs and moves 2.0× the DRAM bytes", where the work changed."""
    said = []
    if row["flops_ratio"] is not None and abs(row["flops_ratio"] - 1) > variants.SAME:
        said.append(f"does {fmt.ratio(row['flops_ratio'])} the FLOPs")
    if row["dram_ratio"] is not None and abs(row["dram_ratio"] - 1) > variants.SAME:
        said.append(f"moves {fmt.ratio(row['dram_ratio'])} the DRAM bytes")
    return ("it " + " and ".join(said)) if said else ""


def _variant_why(row: dict) -> str:
    """The work changed (FLOP and DRAM byte ratios), or the same work ran nearer its roof."""
    flops, dram = row["flops_ratio"], row["dram_ratio"]
    said = []
    if flops is not None and abs(flops - 1) > variants.SAME:
        said.append(f"{row['slower']} does {fmt.ratio(flops)} the FLOPs")
    if dram is not None and abs(dram - 1) > variants.SAME:
        said.append(f"{'and ' if said else row['slower'] + ' moves '}{fmt.ratio(dram)} the DRAM bytes"
                    if said else f"{row['slower']} moves {fmt.ratio(dram)} the DRAM bytes")
    fast, slow = row["faster_pct_of_roof"], row["slower_pct_of_roof"]
    roof = (f"{row['faster']} reaches {fmt.percent(fast, 0)} of its roof, {row['slower']} {fmt.percent(slow, 0)}"
            if fast is not None and slow is not None else "")
    if not said:
        same = ("the same FLOPs and DRAM bytes" if flops is not None and dram is not None else
                "the logs count no FLOPs or bytes to tell why")
        return (f"{same}{'; ' + roof if roof else ''}.") if row["speedup"] >= 1 + variants.SAME else \
            (f"{same}, the same time: the logs show no difference between the two.")
    return "; ".join([" ".join(said)] + ([roof] if roof else [])) + "."


# -- what bounds each run ---------------------------------------------------------------------

def bound_findings(runs: pl.DataFrame) -> list[Paragraph]:
    """Per GPU and bound class, the runs with their intensity against the ridge point (the run
    totals of the runs table); then the runs no class can be given."""
    out = []
    named = classed_by_name() if "bound_coverage_by_name" in runs.columns else pl.lit(False)
    placed = runs.filter(pl.col("bound").is_not_null()).with_columns(named.alias("__by_name"))
    for (gpu, bound, by_name), group in placed.group_by("gpu_label", "bound", "__by_name", maintain_order=True):
        names = _names(group)
        spans = [Span(f"On the {gpu or 'unidentified GPU'}, {len(names)} run{'s are' if len(names) > 1 else ' is'} "
                      f"{bound_words(bound)} (")] + spans_list(names) + [Span(")")]
        intensity = fmt.value_range(group["arithmetic_intensity"].to_list(), fmt.intensity)
        # (classed by name, the run's intensity and % of roof are its counted window's, not its
        # whole time's: said so, lest they read as the run's)
        whose = f"{'their' if len(names) > 1 else 'its'} counted kernels' " if by_name else ""
        spans.append(Span(f": {whose}arithmetic intensity {intensity}"))
        if group["ridge_ai"].drop_nulls().len():
            spans.append(Span(f" against a ridge point of {fmt.value_range(group['ridge_ai'].to_list(), fmt.intensity)}"))
        if group["pct_of_roof"].drop_nulls().len():
            spans.append(Span(f"; {'they reach' if len(names) > 1 or by_name else 'it reaches'} "
                              f"{fmt.value_range(group['pct_of_roof'].to_list(), fmt.percent)} of the roof at that "
                              "intensity"))
        spans += _population_spans(group)
        out.append(Paragraph(spans + [Span(".")]))
    unplaced = runs.filter(pl.col("bound").is_null())
    out += _thin_findings(unplaced.filter(thin()))
    out += _incomplete_bound_findings(unplaced.filter(pl.col("flops_complete") == False))  # noqa: E712
    # any other reason the model gives (no time, no ridge point, no bytes), in its own words
    rest = unplaced.filter(pl.col("flops").is_not_null() & (pl.col("flops_complete") != False).fill_null(True)  # noqa: E712
                           & ~thin() & ~pl.col("bound_note").fill_null("").str.starts_with("above"))
    for (note,), group in rest.group_by(["bound_note"], maintain_order=True):
        if note:
            out.append(Paragraph([Span("No bound class for ")] + spans_list(_names(group), 4) + [Span(f": {note}.")]))
    no_counts = _names(unplaced.filter(pl.col("flops").is_null() & pl.col("kernel_time_ns").is_not_null()))
    if no_counts:
        out.append(Paragraph([Span(f"{len(no_counts)} run{'s' if len(no_counts) > 1 else ''} cannot be placed on a "
                                   "roofline (no FLOP counts in their logs, only times): ")]
                             + spans_list(no_counts, 4) + [Span(".")]))
    return out


def _incomplete_bound_findings(runs: pl.DataFrame) -> list[Paragraph]:
    """Runs whose FLOPs are incomplete, by the reason their bound note gives: tensor-core work
    the counters missed (the bullet on it follows: `incomplete_findings`), or a precision never
    measured (nvprof's `flop_count_dp` alone: no bullet follows, so the reason is said here)."""
    out = []
    reasons = runs.with_columns(pl.col("bound_note").fill_null("").str.replace(r"^FLOPs incomplete: ", "").alias("why"))
    for (why,), group in reasons.group_by(["why"], maintain_order=True):
        names, many = _names(group), group.height > 1
        if not why or "tensor-core" in why:
            text = (f": {'their FLOP counts are' if many else 'its FLOP count is'} incomplete, so the true "
                    f"point{'s lie' if many else ' lies'} higher than the measured one{'s' if many else ''} (see below).")
        else:
            text = f": {why}."
        out.append(Paragraph([Span("No bound class for ")] + spans_list(names, 4) + [Span(text)]))
    return out


def _thin_findings(runs: pl.DataFrame) -> list[Paragraph]:
    """The runs whose counters cover under half their kernel time (model/bound.py's coverage
    floor): no class, and what is counted."""
    if not runs.height:
        return []
    names, many = _names(runs), runs.height > 1
    covered = fmt.value_range([100 * v for v in runs["bound_coverage"].to_list()], lambda v: f"{v:.0f}%")
    counted = ""
    if not many and runs["counted_kernels"][0] and runs["kernel_launches"][0] \
            and runs["counted_kernels"][0] <= runs["kernel_launches"][0]:
        counted = f" ({fmt.count(runs['counted_kernels'][0])} of {fmt.count(runs['kernel_launches'][0])} launches)"
    mine = "their" if many else "its"
    # what the kernels they name cover (model/bound.py: classed by name from the floor up), where more
    named = runs["bound_coverage_by_name"].to_list() if "bound_coverage_by_name" in runs.columns else []
    by_name = ""
    if named and all(v is not None for v in named) \
            and any(round(100 * n) > round(100 * c) for n, c in zip(named, runs["bound_coverage"].to_list())):
        by_name = f", and the kernels they name {fmt.value_range([100 * v for v in named], _pct)}"
    return [Paragraph([Span("No bound class for ")] + spans_list(names, 4) + [Span(
        f": the counters cover only {covered} of {mine} kernel time{counted}{by_name}, too little to tell "
        "where most of it sits.")])]


def _pct(value: float) -> str:
    return f"{value:.0f}%"


def _population_spans(group: pl.DataFrame) -> list[Span]:
    """Where the runs' counted time sits (model/bound.py: the share that gave the class) and how
    much of their kernel time the counters cover, where not all."""
    if "compute_time_share" not in group.columns or not group["compute_time_share"].drop_nulls().len():
        return []
    bound = group["bound"][0]
    side = "memory" if bound == "memory" else "compute"
    mine = "their" if group.height > 1 else "its"
    by_name = "__by_name" in group.columns and group["__by_name"][0]
    if by_name:
        out = _by_name_spans(group, side, mine)
    else:
        shares = [100 * (1 - v if side == "memory" else v) for v in group["compute_time_share"].drop_nulls().to_list()]
        out = [Span(f"; {fmt.value_range(shares, _pct)} of {mine} counted time in {side}-side kernels")]
    if bound == "latency":
        out.append(Span(f", mostly in launches under {SHORT_LAUNCH_NS / 1000:.0f} µs or under one wave"))
    if by_name:
        return out
    covered = [100 * v for v in group["bound_coverage"].drop_nulls().to_list() if v < 0.995]
    if covered:
        out.append(Span(f" (the counters cover {fmt.value_range(covered, lambda v: f'{v:.0f}%')} of {mine} kernel time)"))
    return out


def _by_name_spans(group: pl.DataFrame, side: str, mine: str) -> list[Span]:
    """Runs classed by kernel name (model/bound.py): what the counters cover, what the kernels
    they name cover, and the share of that on the side that gave the class."""
    def pct(column: str) -> str:
        return fmt.value_range([100 * v for v in group[column].drop_nulls().to_list()], _pct)
    return [Span(f"; classed by kernel name: the counters cover {pct('bound_coverage')} of {mine} kernel time, "
                 f"and the kernels they name take {pct('bound_coverage_by_name')} of it, "
                 f"{pct(f'{side}_time_share_by_name')} of that in {side}-side kernels")]


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
        compared = ("so it is compared with other runs per iteration only" if counted else
                    "and its logs count no iterations, so it is not compared")
        return [Paragraph.of(f"1 of {runs.height} runs was cut short before the end{said_so}: its totals cover only "
                             f"the part that ran, {compared}.", level="warning")]
    text = (f"{short.height} of {runs.height} runs were cut short before the end"
            + (f" (the logs say {causes})" if causes else "") + ": their totals cover only the part that ran.")
    if not counted:
        text += " Their logs count no iterations, so they are not compared."
    elif counted < short.height:
        text += (f" They are compared per iteration where their logs count iterations ({counted} of {short.height} "
                 "do), and not at all otherwise.")
    else:
        text += " They are compared per iteration (their logs count iterations)."
    return [Paragraph.of(text, level="warning")]


def time_findings(leaders: pl.DataFrame, top: pl.DataFrame) -> list[Paragraph]:
    """Where each run's steady-state time goes (`share.leading_categories`): run by run for a
    few runs, else how often each category leads."""
    if not leaders.height:
        return []
    if leaders.height > MANY_RUNS:
        return [_time_summary(leaders)]
    out = []
    for row in leaders.iter_rows(named=True):
        spans = [Span("In "), Span(row["run"], code=True), Span(", ")]
        if row["transfers_large"]:
            spans.append(Span(f"host-device transfers take {fmt.share(row['transfer_share'])} of the steady-state "
                              "GPU time; among kernels, "))
        spans.append(Span(f"{row['category']} takes {fmt.share(row['share'])}"))
        spans += _top_kernel_spans(top, row["run"])
        out.append(Paragraph(spans + [Span(".")]))
    return out


def _top_kernel_spans(top: pl.DataFrame, run: str) -> list[Span]:
    first = top.filter((pl.col("run") == run) & ~pl.col("category").is_in(share.TRANSFERS)).sort(
        "time_ns", descending=True, nulls_last=True)
    if not first.height:
        return []
    largest = first.row(0, named=True)
    return [Span("; the largest single kernel is "), Span(_short(largest["short_name"]), code=True),
            Span(f" ({fmt.share(largest['share'])})")]


def _time_summary(leaders: pl.DataFrame) -> Paragraph:
    counts = Counter(leaders["category"].to_list())
    parts = ", ".join(f"{c} in {n}" for c, n in counts.most_common())
    text = (f"Across {leaders.height} runs the kernel category with the most time is {parts} "
            f"(its share: {fmt.value_range(leaders['share'].to_list(), fmt.share)})")
    if leaders["transfers_notable"].any():
        text += (f"; host-device transfers take {fmt.value_range(leaders['transfer_share'].to_list(), fmt.share)} of "
                 "the steady-state GPU time")
    return Paragraph.of(text + ".")


def _short(name: str | None, limit: int = 60) -> str:
    name = name or "?"
    return name if len(name) <= limit else name[:limit - 1] + "…"


def incomplete_findings(incomplete: pl.DataFrame, runs: pl.DataFrame) -> list[Paragraph]:
    """Per GPU, the runs whose FLOP counts miss tensor-core work (`compare.incomplete_flops`):
    their FLOP/s and intensities are lower bounds; their times are measured as they are."""
    if not incomplete.height:
        return []
    rows = incomplete.join(runs.select("run", "gpu_label"), on="run", how="left")
    return [_incomplete_sentence(gpu, group) for (gpu,), group in rows.group_by(["gpu_label"], maintain_order=True)]


def _incomplete_sentence(gpu: str | None, group: pl.DataFrame) -> Paragraph:
    examples = list(dict.fromkeys(k for k in group["example_kernel"].to_list() if k))
    label = gpu or "unidentified GPU"
    reason = group["reason"].drop_nulls().first() or "tensor-core work is not counted"
    kind = group["tensor_kind"].drop_nulls().first()
    many = group.height > 1
    spans = [Span(f"The {label} FLOP count{'s' if many else ''} of {len(group)} run{'s' if many else ''} "
                  f"miss{'' if many else 'es'} {kind + ' ' if kind else ''}tensor-core work: {reason}")]
    if examples and not any(e in reason for e in examples):
        spans += [Span(" (e.g. ")] + spans_list([_short(e) for e in examples], 3) + [Span(")")]
    share = group["tensor_time_share"].drop_nulls()
    if share.len():
        spans.append(Span(f"; those kernels take {fmt.value_range(share.to_list(), fmt.share)} of the counted kernels' time"))
    spans.append(Span(f". {'Their' if many else 'Its'} FLOP/s and arithmetic intensity are lower bounds (≥ on the "
                      "roofline); the times are measured and compare as they are"))
    return Paragraph(spans + [Span(".")], level="warning")


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


def sweep_check_findings(checks: pl.DataFrame | None) -> list[Paragraph]:
    """Sweeps split by hidden GPU, left out as mixing GPUs or as a parameter that changes no
    kernel (`sweeps.sweep_checks`): one sentence per swept parameter and configuration."""
    if checks is None or not checks.height:
        return []
    out = []
    for (param, model, gpu, config), group in checks.group_by("param", "model", "gpu", "config", maintain_order=True):
        kinds = set(group["kind"].to_list())
        what = f"{model} ({config})" if config else model
        where = f"on a {gpu}" if gpu.startswith(NOT_NAMED) else f"on the {gpu}"
        name = param.replace("_", " ")
        apart = group.filter(pl.col("ratio").is_not_null())
        spans: list[Span] = []
        same = sweeps.NO_CHANGE in kinds
        if apart.height:
            row = apart.row(0, named=True)
            verdict = ("is not drawn" if sweeps.MIXED in kinds else "mixes GPUs" if same else "is split by GPU")
            tail = (", and which point ran on which is not known." if sweeps.MIXED in kinds else "." if same
                    else "; each group is a series of its own.")
            spans += [Span(f"The {name} sweep of {what} {where} {verdict}: its runs' identical kernels differ "
                           f"{fmt.ratio(row['ratio'])} in average time between {row['groups']} groups of runs (e.g. "),
                      Span(_short(row["example_kernel"]), code=True),
                      Span(f"), likely two GPU models behind one name{tail}")]
        if same and spans:
            spans.append(Span(f" The {name} changes no kernel (the same kernels, as many launches per iteration), "
                              "so no curve is drawn for it."))
        elif same:
            spans.append(Span(f"The {name} changes no kernel of {what} {where} (the same kernels, as many launches "
                              "per iteration): its times differ by noise only, so no curve is drawn for it."))
        out.append(Paragraph(spans, level="warning" if apart.height else "info"))
    return out


def sweep_findings(swings: pl.DataFrame) -> list[Paragraph]:
    """Per GPU and kernel family (NCCL, winograd...): the sweep where its share moves most
    (`share.pattern_swings`)."""
    out = []
    for row in swings.iter_rows(named=True):
        what = f"{row['model']}, {row['config']}" if row["config"] else row["model"]
        param = row["param"].replace("_", " ")
        # "On a GPU not named (Maxwell-class kernels)": the class its kernels tell, one per sweep
        where = f"On a {row['gpu']}" if row["gpu"].startswith(NOT_NAMED) else f"On the {row['gpu']}"
        out.append(Paragraph.of(
            f"{where}, {row['label']} take {fmt.share(row['first_share'])} of GPU time at {param} "
            f"{row['first_label']} and {fmt.share(row['last_share'])} at {row['last_label']} ({what})."))
    return out


def utilization_findings(stats: pl.DataFrame) -> list[Paragraph]:
    """GPUs busy less than `utilization.LOW_UTIL_PCT` on average (`low_util`) one by one; the
    others in one sentence. A GPU
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
    low = stats.filter(pl.col("low_util"))
    busy = stats.filter(~pl.col("low_util"))
    out = []
    for row in low.head(MANY_RUNS).iter_rows(named=True):
        power = f", drawing {row['power_mean_w']:.0f} W on average" if row.get("power_mean_w") is not None else ""
        out.append(Paragraph([Span(f"GPU {row['gpu_index']} of "), Span(row["run"]), Span(
            f" was busy only {fmt.percent(row['util_mean'])} of the time (idle in {fmt.share(row.get('idle_fraction'))} "
            f"of {fmt.count(row.get('samples'))} samples){power}: it waited for the host (data loading, "
            "synchronisation) rather than computing.")], level="warning"))
    if low.height > MANY_RUNS:
        out.append(Paragraph.of(f"{low.height - MANY_RUNS} more GPUs were busy less than {utilization.LOW_UTIL_PCT:.0f} % "
                                "of the time (see GPU utilization).", level="warning"))
    if busy.height:
        who = "The other" if low.height else "All"
        out.append(Paragraph.of(
            f"{who} {busy.height} GPU{'s' if busy.height > 1 else ''} sampled "
            f"{'were' if busy.height > 1 else 'was'} busy {fmt.value_range(busy['util_mean'].to_list(), fmt.percent)} "
            f"of the time on average" + (f", drawing {fmt.value_range(busy['power_mean_w'].to_list(), _watts)}"
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
