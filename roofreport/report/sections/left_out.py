"""The "Runs left out" appendix: what the body does not show, so that nothing read is lost.

Two lists: the runs that copy another (`Analysis.duplicates`: a history folder, a `prev_*` copy,
a backup), each with the run it copies and its files; and the runs the body cannot use fully —
no kernels, no kernel time, no GPU named — each with what is missing and why (its logs failed,
or hold only API calls, samples or metrics).
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from roofreport.pipeline import failures
from roofreport.report import fmt
from roofreport.report.context import Column, Heading, Paragraph, Section
from roofreport.report.naming import RunNames
from roofreport.report.sections.inputs import display_root, relative
from roofreport.report.tables import cell, table


def left_out_section(an, names: RunNames) -> Section:
    section = Section("left-out", "Runs left out or incomplete", appendix=True)
    root = display_root([f.path for f in an.files])
    gaps = run_gaps(an, names)
    copies = an.duplicates
    body = an.tables["runs"].height
    section.blocks.append(Paragraph.of(
        f"The body shows {body} run{'s' if body != 1 else ''}. "
        f"{_count(copies.height, 'copy', 'copies')} of other runs {'are' if copies.height != 1 else 'is'} left out "
        f"of it, and {_count(len(gaps), 'run lacks', 'runs lack')} kernels, kernel time or a GPU name, so "
        f"{'they appear' if len(gaps) != 1 else 'it appears'} in fewer sections; both are listed here."))
    if copies.height:
        section.blocks.append(Heading("Copies of other runs"))
        rows = [[cell(names.label(r["run"])), cell(names.label(r["duplicate_of"])),
                 cell("; ".join(relative(p, root) for p in (r["files"] or [])) or "–", code=True)]
                for r in copies.iter_rows(named=True)]
        section.blocks.append(table([Column("Copy", width="32%"), Column("Copy of", width="30%"),
                                     Column("Files", width="38%")], rows, css="copies"))
    if gaps:
        section.blocks.append(Heading("Runs without kernels, kernel time or GPU"))
        by_reason: dict[tuple[str, str], list[str]] = {}
        for run, missing, why in gaps:
            by_reason.setdefault((missing, why), []).append(names.label(run))
        cols = [Column("Missing", width="12%"), Column("Why", width="22%"), Column("Runs", numeric=True, width="6%"),
                Column("Which", width="60%")]
        ordered = sorted(by_reason.items(), key=lambda item: -len(item[1]))
        for media, most in (("screen", None), ("print", _PRINTED_RUNS)):    # the PDF names a few of each
            rows = [[missing, why, fmt.count(len(runs)), _names(runs, most)] for (missing, why), runs in ordered]
            section.blocks.append(replace(table(cols, rows, css="gaps"), media=media))
    return section


_PRINTED_RUNS = 6


def _names(runs: list[str], most: int | None) -> str:
    if most is None or len(runs) <= most:
        return "; ".join(runs)
    return "; ".join(runs[:most]) + f" and {len(runs) - most} more (the HTML report lists them)"


def _count(count: int, one: str, many: str) -> str:
    return f"{fmt.count(count)} {one if count == 1 else many}"


def run_gaps(an, names: RunNames) -> list[tuple[str, str, str]]:
    """(run, what is missing, why) for every body run without kernels, kernel time or GPU."""
    runs = an.tables["runs"]
    if not runs.height:
        return []
    timed = set(an.runs.filter(pl.col("kernel_time_ns").is_not_null())["run"].to_list()) \
        if an.runs.height else set()
    kernels = an.tables.get("kernels")
    with_kernels = set(kernels["run"].drop_nulls().to_list()) \
        if kernels is not None and kernels.height else set()
    held = _tables_held(an)
    status = _file_status(an.files)
    out = []
    failure = [pl.col("failure")] if "failure" in runs.columns else []
    for row in runs.select("run", "gpu_evidence", "device_kind", *failure).iter_rows(named=True):
        missing = []
        if row["run"] not in with_kernels:
            missing.append("kernels")
        elif row["run"] not in timed:
            missing.append("kernel time")
        if not row.get("gpu_evidence") and row.get("device_kind") != "cpu":
            missing.append("GPU name")
        if missing:
            out.append((row["run"], ", ".join(missing), _why(missing, held.get(row["run"], []),
                                                          status.get(row["run"], []), row.get("failure"))))
    return sorted(out, key=lambda gap: names.sort_key(gap[0]))


def _tables_held(an) -> dict[str, list[str]]:
    """run -> the tables (other than kernels) that hold rows of it: what its logs did give."""
    held: dict[str, list[str]] = {}
    for name in ("api_calls", "samples", "metrics", "activities", "regions"):
        frame = an.tables.get(name)
        if frame is None or not frame.height or "run" not in frame.columns:
            continue
        for run in frame["run"].drop_nulls().unique().to_list():
            held.setdefault(run, []).append(name.replace("_", " "))
    return held


def _file_status(files: list) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for file in files:
        for run in (file.run or "").split(", "):
            if run:
                out.setdefault(run, []).append(file.status)
    return out


def _why(missing: list[str], held: list[str], statuses: list[str], failure: str | None = None) -> str:
    """Why a run misses what it misses: its logs' own failure first (`runs.failure`, in the
    few words that group runs: a crash, a refused GPU, out of memory, a time limit), else what
    the files gave."""
    reasons = []
    if failure in failures.SUMMARY and ("kernels" in missing or "kernel time" in missing):
        reasons.append(failures.SUMMARY[failure])
    elif statuses and all(s == "error" for s in statuses):
        reasons.append("its logs could not be read (Inputs: Files that failed)")
    elif "kernels" in missing:
        reasons.append(f"its logs hold {', '.join(held)} only" if held else "its logs list no kernels")
    elif "kernel time" in missing:
        reasons.append("its kernels carry metrics but no duration")
    if "GPU name" in missing:
        reasons.append("no log or folder name says which GPU")
    return "; ".join(reasons)
