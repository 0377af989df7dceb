"""The "Runs left out" appendix: what the body does not show, so that nothing read is lost.

Two lists: the runs that copy another (`Analysis.duplicates`: a history folder, a `prev_*` copy,
a backup), each with the run it copies and its files; and the runs the body cannot use fully —
no kernels, no kernel time, no GPU named (`Analysis.gaps`) — each with what is missing and why
(its logs failed, or hold only API calls, samples or metrics), in words.
"""

from __future__ import annotations

from dataclasses import replace

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
        section.blocks.append(replace(table([Column("Copy", width="32%"), Column("Copy of", width="30%"),
                                             Column("Files", width="38%")], rows, css="copies"), media="screen"))
        section.blocks.append(replace(_copies_by_run(copies, names, root), media="print"))
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


def _copies_by_run(copies, names: RunNames, root: str):
    """The PDF's copies: a row per run copied, its copies' files beside it. A copy's label is
    the run's with "(copy N)" added: printed beside the run's, it said the run's name twice."""
    files: dict[str, list[str]] = {}
    for copy in copies.iter_rows(named=True):
        files.setdefault(copy["duplicate_of"], []).extend(relative(p, root) for p in (copy["files"] or []))
    rows = [[cell(names.label(run)), cell(fmt.count(sum(1 for r in copies["duplicate_of"] if r == run))),
             cell("; ".join(files[run]) or "–", code=True)] for run in names.order(files)]
    return table([Column("Run copied", width="44%"), Column("Copies", numeric=True, width="6%"),
                  Column("Files of its copies", width="50%")], rows, css="copies")


def _names(runs: list[str], most: int | None) -> str:
    if most is None or len(runs) <= most:
        return "; ".join(runs)
    return "; ".join(runs[:most]) + f" and {len(runs) - most} more (the HTML report lists them)"


def _count(count: int, one: str, many: str) -> str:
    return f"{fmt.count(count)} {one if count == 1 else many}"


def run_gaps(an, names: RunNames) -> list[tuple[str, str, str]]:
    """(run, what is missing, why) for every body run without kernels, kernel time or GPU
    (`Analysis.gaps`), in the report's order of runs."""
    out = [(row["run"], row["missing"], _why(row["missing"].split(", "), row["held"], row["logs_failed"],
                                             row["failure"]))
           for row in an.gaps.iter_rows(named=True)]
    return sorted(out, key=lambda gap: names.sort_key(gap[0]))


def _why(missing: list[str], held: list[str], logs_failed: bool, failure: str | None = None) -> str:
    """Why a run misses what it misses: its logs' own failure first (`runs.failure`, in the
    few words that group runs: a crash, a refused GPU, out of memory, a time limit), else what
    the files gave."""
    reasons = []
    if failure in failures.SUMMARY and ("kernels" in missing or "kernel time" in missing):
        reasons.append(failures.SUMMARY[failure])
    elif logs_failed:
        reasons.append("its logs could not be read (Inputs: Files that failed)")
    elif "kernels" in missing:
        reasons.append(f"its logs hold {', '.join(held)} only" if held else "its logs list no kernels")
    elif "kernel time" in missing:
        reasons.append("its kernels carry metrics but no duration")
    if "GPU name" in missing:
        reasons.append("no log or folder name says which GPU")
    return "; ".join(reasons)
