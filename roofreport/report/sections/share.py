"""The "Where the GPU time goes" section: share of kernel time by category per run (stacked
bars) and each run's top kernels with the rest summed as "other kernels" (share along sweeps:
the comparison section).

The top kernels are shown side by side for runs that differ only in their GPU and parameters
(one table per model and experiment, `naming.RunNames.groups`): one column per run, one row per kernel
that is among the top N of one of them. A run's column holds its own top N and its "other
kernels", so every column adds up to its run's whole GPU time (kernels + copies: the one name of
the total the shares divide by; "kernel time" is the runs table's, kernels alone). Both the HTML
and the PDF (`top_tables_by_run`) keep runs side by side only where what names them fits a
column heading of three lines; longer names are row headings, and runs of one kernel share one
table.

All numbers come from `analysis.share`; this module only orders, groups and draws them.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from roofreport.enrich import categories as cat_rules
from roofreport.pipeline.labels import SEPARATOR
from roofreport.report import fmt
from roofreport.report.context import Column, Heading, Paragraph, Section, Span, chart, spans_list
from roofreport.report.naming import Group, RunNames, kernel_labels
from roofreport.report.tables import cell, name_cell, table

KERNELS_AS_COLUMNS = 4     # runs whose top kernels are the same few share one table, a column per kernel
KERNEL_HEADING_CHARS = 40  # ...whose names fit a column heading of three lines
MIN_RUNS_ALIKE = 3
ALIKE = ("Runs that ran the same few kernels and no other share one table: a row per run, what differs between "
         "them as columns, a column per kernel.")
PRINT_COLUMNS = 10         # runs side by side in a printed top-kernel table, at most
PAGE_WIDTH_PT = 521        # the printed content width (A4 less report.css's 13 mm side margins)
# One name per quantity: "kernel time" is the kernels' alone (the runs table's), "GPU time" the
# time rows of the run's source, kernels and the copies it lists, as the shares here divide by.
GPU_TIME = "GPU time (kernels + copies)"
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
    with_kernels = an.runs.filter(pl.col("kernel_time_ns").is_not_null())["run"].to_list() if an.runs.height else []
    copies_only = sorted(set(share["run"].to_list()) - set(with_kernels), key=names.sort_key)
    share = share.filter(pl.col("run").is_in(with_kernels))
    if not share.height:
        section.empty = EMPTY
        return section
    runs = names.order(share["run"].to_list())
    cats = category_order(share["category"].unique().to_list())
    section.blocks.append(Paragraph.of(
        "Share of each run's GPU time in its steady state by kernel category, from one time source per run (a "
        "trace when there is one). Rules: conv includes winograd, implicit-GEMM and cuDNN's FFT convolutions; fft "
        "is cuFFT; communication is NCCL; softmax/loss is the classifier's last layer; memcpy/memset are "
        "host-device transfers, counted when the log lists them. \"uncategorized\" is what no rule matched."))
    section.blocks += _setup_note(an.runs, an.reasons, copies_only, names)
    section.blocks += _context_note(an.context, runs, names)
    section.blocks += _bar_charts(share, runs, cats, names)
    # The HTML's tables and the PDF's are laid out alike (runs side by side where what names them
    # fits a short column heading, else as row headings); the HTML lists more kernels, by their
    # whole names.
    tables = top_tables_by_run(an.top, an.top_rest, runs, top_n, names, more_in_html=False, printed=False)
    printed = min(top_n, an.settings.top_print)
    if tables:
        paper = top_tables_by_run(an.top_print, an.top_rest_print, runs, printed, names, more_in_html=printed < top_n)
        tables = [replace(b, media="screen") for b in tables] + [replace(b, media="print") for b in paper]
    section.blocks += tables
    return section


def _setup_note(runs: pl.DataFrame, reasons: pl.DataFrame, copies_only: list[str], names: RunNames) -> list:
    """What the bars leave out: the copies before each run's first kernel (setup, once), and
    runs that logged copies but no kernel (e.g. memory-tracking runs)."""
    said = []
    setup = runs.filter(pl.col("setup_time_ns") > 0) if runs.height else runs
    if setup.height:
        shares = reasons.filter(pl.col("run").is_in(setup["run"].to_list()))["setup_share"].drop_nulls()
        many = setup.height > 1
        said.append(Span(
            f"Set apart as setup: the copies before the first kernel (the weights uploaded once) of {setup.height} "
            f"run{'s' if many else ''}, {fmt.value_range(setup['setup_time_ns'].to_list(), fmt.duration)}"
            + (f" ({fmt.value_range(shares.to_list(), fmt.share)} of {'their' if many else 'its'} GPU time)" if shares.len() else "")
            + ". "))
    if copies_only:
        said += [Span(f"{len(copies_only)} run{'s' if len(copies_only) > 1 else ''} logged copies but no kernel "
                      "(memory tracking, a profiled range without kernels) and {} not drawn: ".format(
                          "are" if len(copies_only) > 1 else "is"))] + spans_list(
            [names.label(run) for run in copies_only], 4) + [Span(".")]
    return [Paragraph(said)] if said else []


def _context_note(context: pl.DataFrame, runs: list[str], names: RunNames) -> list:
    """Both readings where what launched kernels and their names disagree (`analysis.share.
    by_launch_context`): the time is counted once, in the launching operator's category."""
    mine = context.filter(pl.col("run").is_in(runs)) if context.height else context
    if not mine.height:
        return []
    spans = []
    for label in dict.fromkeys(mine["label"].to_list()):
        rows = mine.filter(pl.col("label") == label)
        first = rows.row(0, named=True)
        spans.append(Span(
            f"{first['named']} kernels launched for {first['category']} (by their operator, or between one "
            f"convolution's transform kernels) count as {first['category']}, once; the tables show them as \"{label}\": "
            f"{fmt.value_range(rows['share'].to_list(), fmt.share)} of the GPU time of "
            f"{rows.height} run{'s' if rows.height > 1 else ''}. "))
    return [Paragraph(spans)]


def _bar_charts(share: pl.DataFrame, runs: list[str], cats: list[str], names: RunNames) -> list:
    """Stacked bars, one per run. Where runs come in groups (a model on a GPU in one experiment,
    its batch sizes), each group has a heading row and its runs are named by what varies in it."""
    from roofreport.report.charts.share import RUNS_PER_CHART, share_bars_svg

    values = {(r["run"], r["category"]): r["share"] or 0.0 for r in share.iter_rows(named=True)}
    groups = names.groups(runs, max_columns=10_000, by_gpu=True)
    if len(groups) * 2 <= len(runs):
        chunks = _chunks([[(g.title, None)] + [(h, run) for run, h in g.columns] if len(g.columns) > 1
                          else _alone(names, g.columns[0][0]) for g in groups], RUNS_PER_CHART)
    else:
        chunks = _chunks([[(names.label(run), run)] for run in runs], RUNS_PER_CHART)
    blocks = []
    for index, rows in enumerate(chunks):
        part = f" ({index + 1} of {len(chunks)})" if len(chunks) > 1 else ""
        bars = [{c: values.get((run, c), 0.0) for c in cats} if run else None for _, run in rows]
        blocks.append(chart(f"share{index + 1}", f"GPU time by kernel category{part}", share_bars_svg,
                            [text for text, _ in rows], bars, cats))
    return blocks


def _alone(names: RunNames, run: str) -> list[tuple]:
    """The rows of a group of one run: its model, GPU and experiment as the heading, the rest
    of its label beside its bar."""
    title, rest = names.split_label(run)
    return [(title, None), (rest, run)] if rest else [(title, run)]


def _chunks(groups: list[list[tuple]], most: int) -> list[list[tuple]]:
    """Rows of whole groups in charts of at most `most` rows, about even (a group longer than a
    chart is cut)."""
    total = sum(len(g) for g in groups)
    per_chart = -(-total // -(-total // most))
    chunks: list[list[tuple]] = [[]]
    for group in groups:
        for start in range(0, len(group), most):
            part = group[start:start + most]
            if chunks[-1] and len(chunks[-1]) + len(part) > max(per_chart, most - 4):
                chunks.append([])
            chunks[-1] += part
    return chunks


def top_tables_by_run(top: pl.DataFrame, rest: pl.DataFrame, runs: list[str], top_n: int,
                      names: RunNames, more_in_html: bool = True, printed: bool = True) -> list:
    """The top kernels, a table per model and experiment: its runs side by side where what
    varies between them is short enough for a column heading of at most three lines; otherwise
    each run's kernels under a row naming it, then its rest and its total (a long name is a row
    heading, never a column heading: a 15-line heading helps no one). `printed`: the PDF's,
    kernels by their printed labels (`naming.kernel_labels`); else the HTML's, by whole names."""
    if not top.height:
        return []
    with_top = [run for run in runs if run in set(top["run"].to_list())]
    rest_by_run = {r["run"]: r for r in rest.iter_rows(named=True)}
    alike, with_top = _same_kernels_tables(with_top, top, rest_by_run, names)
    blocks: list = [Heading(f"Top {top_n} kernels per run"), Paragraph.of(
        f"Each run's {top_n} kernels with the most GPU time, as a share of its {GPU_TIME}; the rest is "
        "\"other kernels\". A table per model and experiment: its runs side by side (a blank cell: not among "
        "the run's top kernels), or one under the other where their names are long."
        + (" " + ALIKE if alike else "")
        + (" The HTML report lists more kernels per run." if more_in_html else ""))]
    blocks += alike
    counts = dict(top.group_by("run").len().iter_rows())
    alone = [run for run in with_top if counts.get(run) == 1 and not (rest_by_run.get(run) or {}).get("kernels")]
    apart = set(alone) if len(alone) > 1 else set()
    if apart:
        blocks.append(_one_kernel_table(alone, top, rest_by_run, names, printed))
    for group in names.groups([run for run in with_top if run not in apart], max_columns=PRINT_COLUMNS):
        # long headings (the GPU among what varies): a table per GPU may name its runs shortly
        parts = [group] if _columns_that_fit(group) else \
            names.groups([run for run, _ in group.columns], PRINT_COLUMNS, by_gpu=True)
        for part in parts:
            blocks += _print_tables(part, top, rest_by_run, names, printed)
    return blocks


def _print_tables(group, top: pl.DataFrame, rest_by_run: dict, names: RunNames, printed: bool = True) -> list:
    """A group's top kernels: side by side when its headings fit (`_columns_that_fit`), else a
    run under the other. A table of part of the group says in its caption what its own columns
    share (`RunNames.together`)."""
    width = _columns_that_fit(group)
    if width:         # short headings (bs 16, A100-SXM4-40GB): the runs side by side
        size = -(-len(group.columns) // -(-len(group.columns) // width))
        chunks = [group.columns[start:start + size] for start in range(0, len(group.columns), size)]
        return [_group_table(names.together([run for run, _ in chunk]) if len(chunk) > 1 else Group(group.title, chunk),
                             top, rest_by_run, printed) for chunk in chunks]
    rows: list[list] = []
    mine_all = top.filter(pl.col("run").is_in([run for run, _ in group.columns]))["short_name"].to_list()
    labels = kernel_labels(mine_all) if printed else {name: name for name in mine_all}
    for run, heading in group.columns:
        if len(group.columns) > 1:
            rows.append([cell(heading, css="folder", span=3)])
        mine = top.filter(pl.col("run") == run).sort("share", descending=True, nulls_last=True)
        rows += [[name_cell(labels[r["short_name"]], KERNEL_NAME_CHARS), _category(r),
                  cell(fmt.share(r["share"]), css="num")] for r in mine.iter_rows(named=True)]
        rows += _rest_and_total(rest_by_run.get(run))
    cols = [Column("Kernel", width="70%"), Column("Category", width="14%"), Column("Share", numeric=True, width="16%")]
    return [table(cols, rows, caption=group.title, css="kernels by-run")]


def _same_kernels_tables(runs: list[str], top: pl.DataFrame, rest_by_run: dict,
                         names: RunNames) -> tuple[list, list[str]]:
    """Runs that ran the same few kernels and no other (a build variant × an input size of one
    micro-benchmark): one table, a row per run named by what differs between them (its program,
    arguments, parameters as columns), a column per kernel. Returns the tables and the runs left
    for the other layouts."""
    kernels: dict[str, list[dict]] = {}
    for row in top.iter_rows(named=True):
        kernels.setdefault(row["run"], []).append(row)
    alike: dict[tuple, list[str]] = {}
    for run in runs:
        key = tuple(sorted({row["short_name"] or "–" for row in kernels.get(run, [])}))
        whole = run in rest_by_run and not rest_by_run[run].get("kernels")     # its top is all it ran
        if whole and 0 < len(key) <= KERNELS_AS_COLUMNS and all(len(name) <= KERNEL_HEADING_CHARS for name in key):
            alike.setdefault(key, []).append(run)
    tables, done = [], set()
    for members in alike.values():
        if len(members) >= MIN_RUNS_ALIKE:
            tables.append(_kernels_as_columns(names.order(members), kernels, rest_by_run, names))
            done.update(members)
    return tables, [run for run in runs if run not in done]


def _kernels_as_columns(runs: list[str], kernels: dict[str, list[dict]], rest_by_run: dict,
                        names: RunNames):
    """A row per run: what names it (the facets that differ between the runs; the label parts
    they share make the caption), each kernel's share of its GPU time, and the GPU time."""
    facets = [dict(names.facets(run)) for run in runs]
    headings = list(dict.fromkeys(heading for run_facets in facets for heading in run_facets))
    differ = [h for h in headings if len({f.get(h) for f in facets}) > 1]
    labels = [names.label(run).split(SEPARATOR) for run in runs]
    shared = [part for part in labels[0] if all(part in other for other in labels[1:])]
    share = {(row["run"], row["short_name"] or "–"): row for run in runs for row in kernels.get(run, [])}
    weight: dict[str, float] = {}
    for (_, name), row in share.items():
        weight[name] = weight.get(name, 0.0) + (row["share"] or 0.0)
    order = sorted(weight, key=lambda name: (-weight[name], name))
    rows = []
    for run, run_facets in zip(runs, facets):
        rest = rest_by_run.get(run) or {}
        cells = [cell(run_facets.get(h, "–"), title=names.label(run)) for h in differ]
        cells += [_share_cell((share.get((run, name)) or {}).get("share"), present=(run, name) in share)
                  for name in order]
        cells.append(cell(fmt.duration(rest.get("total_ns")), sort=rest.get("total_ns")))
        rows.append(cells)
    cols = [Column(h) for h in differ] + [Column(name, numeric=True) for name in order]
    cols.append(Column(GPU_TIME, numeric=True))
    caption = f"{len(runs)} runs of the same kernels" + (f": {SEPARATOR.join(shared)}" if shared else "")
    return table(cols, rows, caption=caption, css="kernels alike", sortable=True)


def _one_kernel_table(alone: list[str], top: pl.DataFrame, rest_by_run: dict, names: RunNames,
                      printed: bool = True):
    """Runs of one kernel each (micro-benchmarks): a row per run, its kernel beside it, not a
    table per run of one kernel, its rest ("none") and its total."""
    kernel = {r["run"]: r for r in top.filter(pl.col("run").is_in(alone)).iter_rows(named=True)}
    labels = kernel_labels([row["short_name"] for row in kernel.values()]) if printed else \
        {row["short_name"]: row["short_name"] for row in kernel.values()}
    rows = [[cell(names.label(run)), name_cell(labels[kernel[run]["short_name"]], KERNEL_NAME_CHARS),
             _category(kernel[run]), cell(fmt.share(kernel[run]["share"]), css="num"),
             cell(fmt.duration((rest_by_run.get(run) or {}).get("total_ns")), css="num")] for run in alone]
    cols = [Column("Run", width="34%"), Column("Kernel (the run's only one)", width="38%"),
            Column("Category", width="10%"), Column("Share", numeric=True, width="8%"),
            Column(GPU_TIME, numeric=True, width="10%")]
    return table(cols, rows, caption="Runs of one kernel", css="kernels alone")


def _columns_that_fit(group) -> int:
    """How many of the group's runs a printed table holds side by side with every heading in at
    most three lines (`_group_table`'s run columns share 62 % of the width, each at most 11 %;
    about 4.3 pt a character at 7 pt); 0 where fewer than two (one run alone: its own table)."""
    longest = max(len(heading) for _, heading in group.columns)
    for count in range(min(len(group.columns), PRINT_COLUMNS), 0, -1):
        chars_per_line = min(11.0, 62.0 / count) / 100 * PAGE_WIDTH_PT / 4.3
        if longest * 1.15 <= 3 * chars_per_line:      # words wrap whole: some room lost
            return count if count >= 2 or len(group.columns) == 1 else 0
    return 0


def _rest_and_total(rest: dict | None) -> list[list]:
    return [[cell("other kernels", css="rest"), cell("", css="rest"), cell(_rest_text(rest), css="rest num")],
            [cell(GPU_TIME, css="total"), cell("", css="total"),
             cell(fmt.duration((rest or {}).get("total_ns")), css="total num")]]


def _group_table(group, top: pl.DataFrame, rest_by_run: dict, printed: bool = False):
    """The group's runs side by side, a row per kernel; `printed`: kernels by their printed
    labels (`naming.kernel_labels`), the HTML's by their whole names."""
    runs = [run for run, _ in group.columns]
    mine = top.filter(pl.col("run").is_in(runs))
    shares = {(r["run"], r["short_name"]): r["share"] for r in mine.iter_rows(named=True)}
    category = {r["short_name"]: _category(r) for r in mine.iter_rows(named=True)}
    weight: dict[str, float] = {}
    for (_, kernel), value in shares.items():
        weight[kernel] = weight.get(kernel, 0.0) + (value or 0.0)
    kernels = sorted(weight, key=lambda k: (-weight[k], k))
    labels = kernel_labels(kernels) if printed else {k: k for k in kernels}
    rows = [[name_cell(labels[k], KERNEL_NAME_CHARS), category.get(k) or "–"]
            + [_share_cell(shares.get((run, k)), present=(run, k) in shares) for run in runs] for k in kernels]
    rows.append([cell("other kernels", css="rest"), cell("", css="rest")]
                + [cell(_rest_text(rest_by_run.get(run)), css="rest num") for run in runs])
    rows.append([cell(GPU_TIME, css="total"), cell("", css="total")]
                + [cell(fmt.duration((rest_by_run.get(run) or {}).get("total_ns")), css="total num")
                   for run in runs])
    run_width = int(min(11.0, 62.0 / len(runs)) * 10) / 10      # rounded down: the widths add up to 100 % at most
    # the kernel column takes what is left, rounded down (rounded up, the table ran into the margin)
    # "communication", the longest category, takes 10 % at 6.5 pt: the kernel's name the rest
    cols = [Column("Kernel", width=f"{int(100 - 11 - run_width * len(runs))}%"), Column("Category", width="11%")]
    cols += [Column(heading, numeric=True, width=f"{run_width:.1f}%") for _, heading in group.columns]
    return table(cols, rows, caption=group.title, css="kernels", sortable=True)


def _category(row: dict) -> str:
    """A kernel's category as analysis labels it (both readings: "conv (via GEMM)")."""
    return row.get("category_label") or row.get("category") or "–"


def _share_cell(value, present: bool):
    return cell(fmt.share(value), sort=value) if present else cell("")


def _rest_text(rest: dict | None) -> str:
    if not rest:
        return "–"
    return fmt.share(rest["share"]) if rest["kernels"] else "none"
