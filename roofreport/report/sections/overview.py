"""The "Overview": what was profiled (runs per GPU, the models, the tools, what the logs hold),
how each GPU was found where the logs did not name it in full (assumed variants, names cut or
unknown, evidence that disagreed: the runs' `gpu_note`), and "What these logs cannot tell": for
each question the body leaves open, which log would answer it (the sections with nothing to
show are left out of the body and named here).
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from roofreport.report import fmt
from roofreport.report.context import Bullets, Column, Heading, Paragraph, Section
from roofreport.report.naming import NO_GPU, RunNames, natural
from roofreport.report.tables import cell, table

MODELS_SHOWN = 6


def overview_section(an, names: RunNames, gaps: list[tuple[str, str]]) -> Section:
    """`gaps`: (section title, which log would fill it) for every question left open."""
    section = Section("overview", "Overview")
    runs = an.tables["runs"]
    files = an.files
    read = sum(1 for f in files if f.status != "skipped")
    copies = an.duplicates.height
    text = (f"{_n(runs.height, 'run')} from {_n(read, 'log file')} ({_n(len(files) - read, 'other file')} "
            "skipped or excluded: Appendix, Inputs)")
    if copies:
        text += f"; {_n(copies, 'copy', 'copies')} of other runs left out (Appendix, Runs left out)"
    section.blocks.append(Paragraph.of(text + "."))
    if runs.height:
        section.blocks.append(_gpu_table(an, runs, names))
        found = _how_found(runs)
        if found is not None:
            section.blocks += [Heading("How the GPUs were found"), found]
    if gaps:
        section.blocks.append(Heading("What these logs cannot tell"))
        section.blocks.append(Bullets([Paragraph.md(f"{title}: {text}") for title, text in gaps]))
    return section


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{fmt.count(count)} {one if count == 1 else (many or one + 's')}"


_FOUND_FROM = {"user": "--gpu or roofreport.toml", "log": "the logs' device name", "cc": "compute capability",
               "path": "folder or file name", None: "nothing"}


def _how_found(runs: pl.DataFrame):
    """The runs whose GPU is assumed, unknown or noted, grouped by GPU and why (the resolver's
    `gpu_note`); None when every GPU was named in full and nothing disagreed."""
    noted = runs.filter(pl.col("gpu_note").is_not_null() & (pl.col("device_kind").fill_null("") != "cpu"))
    if not noted.height:
        return None
    rows = []
    groups = noted.group_by("gpu_label", "gpu_evidence", "gpu_assumed", "gpu_note", maintain_order=True).len()
    for row in groups.sort("gpu_label", "len", descending=[False, True]).iter_rows(named=True):
        gpu = f"{row['gpu_label']} (variant assumed)" if row["gpu_assumed"] else row["gpu_label"]
        rows.append([cell(gpu), _FOUND_FROM.get(row["gpu_evidence"], row["gpu_evidence"]), fmt.count(row["len"]),
                     cell(row["gpu_note"][0].upper() + row["gpu_note"][1:])])
    cols = [Column("GPU", width="18%"), Column("Found from", width="14%"), Column("Runs", numeric=True, width="6%"),
            Column("Why", width="62%")]
    return table(cols, rows, css="gpu-found")


def _gpu_table(an, runs: pl.DataFrame, names: RunNames):
    """One row per GPU: its runs, their models, the tools, and how many runs have each kind of data."""
    has = {
        "kernel times": (set(an.runs.filter(pl.col("kernel_time_ns").is_not_null())["run"].to_list())
                         if an.runs.height else set()),
        "FLOP counts": (set(an.runs.filter(pl.col("flops").is_not_null())["run"].to_list())
                        if an.runs.height else set()),
        "utilization": set(an.utilization["run"].to_list()) if an.utilization.height else set(),
        "API calls": set(an.api["run"].to_list()) if an.api.height else set(),
    }
    by_gpu: dict[str, list[dict]] = {}
    for row in runs.iter_rows(named=True):
        by_gpu.setdefault(row.get("gpu_label") or NO_GPU, []).append(row)
    rows = []
    for gpu in sorted(by_gpu, key=lambda g: (g.startswith(NO_GPU), natural(g))):
        mine = by_gpu[gpu]
        models = Counter(r.get("model") or r.get("program") or r.get("experiment") for r in mine)
        models.pop(None, None)
        shown = sorted(models, key=natural)
        model_text = ", ".join(shown[:MODELS_SHOWN]) + (f" and {len(shown) - MODELS_SHOWN} more"
                                                        if len(shown) > MODELS_SHOWN else "")
        tools = sorted({r.get("tool") for r in mine if r.get("tool")})
        ids = {r["run"] for r in mine}
        assumed = any(r.get("gpu_assumed") for r in mine)
        rows.append([cell(f"{gpu} (variant assumed)" if assumed else gpu), fmt.count(len(mine)), model_text or "–",
                     ", ".join(tools) or "–"]
                    + [fmt.count(len(ids & has[k])) for k in has])
    cols = [Column("GPU", width="16%"), Column("Runs", numeric=True, width="6%"), Column("Models", width="26%"),
            Column("Tools", width="12%")] + [Column(f"With {k}", numeric=True, width="10%") for k in has]
    return table(cols, rows, caption="What was profiled", css="overview")
