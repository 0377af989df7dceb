"""From what each file gave to the shared tables: runs, the `run` column, enriched kernels.

Reading is per file (`ingest.read_one`); everything here looks across files, and works from
the files' `FileFacts` alone where it can, so an incremental dataset (`store.py`) runs it over
every file of a campaign without reading the unchanged ones again:

* `plan_runs`, `runs_table`: which run each file (or profiler session) belongs to: copies
  first (`duplicates.py`), then the grouping rules of `runs.py`, which resolves each run's GPU
  from its files' facts; runs cut short (`cutshort.py`);
* `with_run`: a file's rows tagged with their run;
* `families`: the GPU family each file ran on (its run's GPU), which decides the kernel
  counters' rules;
* `finish`: one set of files' rows as the shared tables (kernels enriched). The whole dataset is
  one such set; a dataset folder writes one per batch of files, and the batches concatenated
  equal the whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import polars as pl

from roofreport import gpu
from roofreport.gpu import clocks
from roofreport.enrich import enrich_kernels
from roofreport.pipeline import config, cutshort, duplicates, identity, jobscripts, runs as runs_mod
from roofreport.pipeline.dataset import FileOutcome
from roofreport.pipeline.facts import FileFacts
from roofreport.tables import schema

Tables = dict[str, pl.DataFrame]


def plan_runs(found: list[tuple[Path, Path]], facts: list[FileFacts],
              tables: dict[int, Tables] | None = None, settings: gpu.GpuSettings = gpu.NO_SETTINGS,
              anchored: dict[Path, Path] | None = None) -> runs_mod.Plan:
    """The run of every parsed file (by position in `found`). `tables`: the files' rows when
    at hand, else the duplicate check uses the digests kept in the facts. `settings`: what the
    user says of the GPU. `anchored`: the folder each input root's run ids are relative to
    (`anchors`), where a dataset recorded them."""
    files, candidates, scripts = [], [], []
    anchor_of = _anchor_of(found, anchored)
    names = root_names(list(anchor_of.values()))
    relative = relative_namer(anchored)     # (the names the batches are cut by: `relative_names`)
    for index, fact in enumerate(facts):
        if fact.job is not None and not fact.excluded:
            path, root = found[index]
            scripts.append(jobscripts.Script(PurePosixPath(relative(path, root)), names[anchor_of[root]],
                                             fact.job))   # as LogFile.root
        if not fact.parsed:
            continue
        path, root = found[index]
        rel = PurePosixPath(relative(path, root))
        files.append(runs_mod.LogFile(
            index=index, rel=rel, root=names[anchor_of[root]], family=fact.family,
            variant=fact.variant, tool_version=fact.tool_version, hints=fact.hints,
            sessions=fact.sessions, tables=config.run_tables(path, root), gpu=fact.gpu))
        name = identity.read_name(rel.name)
        candidates.append(duplicates.Candidate(
            index=index, path=path, rel=rel, size=fact.size, family=fact.family,
            variant=fact.variant, name_key=name.key, tables=(tables or {}).get(index, {}),
            richness=_richness(fact), job=name.get("job"), process_id=fact.hints.process_id,
            shape=fact.shape, tables_digest=fact.tables_digest, content_hash=fact.content_hash))
    originals = duplicates.find(candidates)
    for file in files:
        file.duplicate_of = originals.get(file.index)
    return runs_mod.plan(files, settings, scripts)


def anchors(roots: list[Path]) -> dict[Path, Path]:
    """The folder each input root's run ids are relative to: the folder whose roofreport.toml
    governs it (`config.governing`), so that giving `logs/v100` or `logs` names a run alike."""
    return {root: config.governing(root) for root in dict.fromkeys(roots)}


def relative_names(found: list[tuple[Path, Path]], anchored: dict[Path, Path] | None = None) -> list[str]:
    """Each file's path below the folder its run ids are relative to (`anchors`; `anchored`:
    where a dataset recorded them), as `plan_runs` names it: the names the logs give, wherever
    they lie on the disk."""
    name = relative_namer(anchored)
    return [name(path, root) for path, root in found]


def relative_namer(anchored: dict[Path, Path] | None = None) -> Callable[[Path, Path], str]:
    """`relative_names` a file at a time: (file, its input root) -> its name, each root's anchor
    looked up once, when a file of it first comes (a walk read as far as needed). (Sliced from
    the path as found, not `Path.relative_to`'s parts: a campaign's 100,000 paths in a tenth of
    the time.)"""
    under: dict[Path, tuple[str, str, Path]] = {}   # root -> (its path as found, below its anchor, anchor)

    def name(path: Path, root: Path) -> str:
        if root not in under:
            anchor = (anchored or {}).get(root) or config.governing(root)    # (as `anchors`)
            given, above = os.fspath(root), str(_relative(root, anchor))
            under[root] = ("" if given == "." else given.rstrip(os.sep) + os.sep,
                           "" if above == "." else above + "/", anchor)
        prefix, above, anchor = under[root]
        text = os.fspath(path)
        if not text.startswith(prefix):
            return str(_relative(path, anchor))
        text = above + text[len(prefix):]
        return text if os.sep == "/" else text.replace(os.sep, "/")

    return name


def _anchor_of(found: list[tuple[Path, Path]], anchored: dict[Path, Path] | None) -> dict[Path, Path]:
    return {**anchors([root for _, root in found]), **(anchored or {})}


def root_names(roots: list[Path]) -> dict[Path, str]:
    """Each input root's name as run ids show it where two inputs give the same id: its
    folder's name, with as many parent folders as tell it from the other roots of that name
    (`v100/vgg13` and `a100/vgg13` given apart are not both `vgg13`)."""
    distinct = list(dict.fromkeys(roots))
    parts = {root: Path(os.path.abspath(root)).parts[1:] or (str(root),) for root in distinct}
    names = {}
    for root in distinct:
        depth = 1
        while True:
            name = "/".join(parts[root][-depth:])
            clash = [other for other in distinct if other != root and "/".join(parts[other][-depth:]) == name]
            if not clash or depth >= len(parts[root]):
                break
            depth += 1
        names[root] = name
    return names


def _relative(path: Path, root: Path) -> PurePosixPath:
    # absolute both: an anchor above the folder given is absolute, the paths found may not be
    try:
        return PurePosixPath(Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix())
    except ValueError:
        return PurePosixPath(path.name)


def _richness(fact: FileFacts) -> int:
    """How much a log says about its run: of two copies, the one that says more is kept."""
    hints = fact.hints
    return sum(value is not None for value in (hints.command, hints.device_name, hints.host, hints.label))


def run_of(plan: runs_mod.Plan, index: int) -> object:
    """What decides the `run` column of a file's rows: its run, or its sessions' runs."""
    sessions = plan.session_runs.get(index)
    return [list(s) for s in sessions] if sessions else plan.file_run.get(index)


def with_run(frame: pl.DataFrame, plan: runs_mod.Plan, index: int) -> pl.DataFrame:
    """The file's rows with their run: the file's run, or for a log of several profiler
    sessions the session whose first line is the last one at or before the row's line."""
    sessions = plan.session_runs.get(index)
    if not sessions:
        run = pl.lit(plan.file_run.get(index), pl.String)   # (none: a file that is no log, estimates)
    else:
        starts = pl.Series([first for first, _ in sessions], dtype=pl.Int64)
        lines = frame["source_line"].fill_null(0).cast(pl.Int64)
        which = (starts.search_sorted(lines, side="right").cast(pl.Int64) - 1).clip(0, len(sessions) - 1)
        run = pl.Series([run for _, run in sessions], dtype=pl.String).gather(which)
    return frame.with_columns(run.alias("run"))


def families(plan: runs_mod.Plan, facts: list[FileFacts]) -> dict[str, str]:
    """source_file -> the family of the GPU its run ran on, for every parsed file whose run's
    GPU has one: it decides the kernel counters' rules."""
    out = {}
    for index, fact in enumerate(facts):
        found = plan.gpu_of(index) if fact.parsed else None
        if found is not None and found.family:
            out[fact.display] = found.family
    return out


def concat_parts(parts: dict[str, list[pl.DataFrame]]) -> Tables:
    """Every parsed table of one set of files: its parts (each one file's rows or more,
    conformed, with their runs) one after the other."""
    return {name: concat(name, parts.get(name, [])) for name in schema.PARSED_TABLES}


def finish(tables: Tables, families: dict[str, str]) -> Tables:
    """The parsed tables of one set of files (`concat_parts`) with kernels enriched by each
    file's GPU family."""
    tables = dict(tables)
    kernels = tables["kernels"]
    if kernels.height:
        tables["kernels"] = schema.conform("kernels", enrich_kernels(kernels, tables["metrics"], families,
                                                                     activities=tables.get("activities")))
    return tables


def concat(name: str, parts: list[pl.DataFrame]) -> pl.DataFrame:
    """One file's parts after another (each conformed already), or the empty table."""
    parts = [p for p in parts if p.height]
    if not parts:
        return schema.empty(name)
    return parts[0] if len(parts) == 1 else pl.concat(parts, how="vertical")


def runs_table(plan: runs_mod.Plan, facts: list[FileFacts]) -> pl.DataFrame:
    """The runs table: the plan's runs, marked where their logs stop before the run did, and
    why the logs of a run without kernels hold none."""
    runs = _mark_failures(cutshort.mark(plan.runs, _cut_short(plan, facts)), _failures(plan, facts))
    return _mark_progress(_mark_clocks(runs, _ncu_clocks(plan, facts)), plan, facts)


PROGRESS_COLUMNS = {"epoch_steps": pl.Int64, "logged_epochs": pl.Int64, "validation_steps": pl.Int64,
                    "step_time_ns": pl.Float64, "data_time_ns": pl.Float64, "progress_source": pl.String}


def _mark_progress(runs: pl.DataFrame, plan: runs_mod.Plan, facts: list[FileFacts]) -> pl.DataFrame:
    """`runs` with what the program's own progress lines say (`progress.py`): the first of its
    files that prints them (a log of one profiler session: a file of several sessions prints
    the progress of all of them, so its runs take none)."""
    found: dict[str, dict] = {}
    for index, fact in enumerate(facts):
        sessions = plan.session_runs.get(index) or []
        if not fact.parsed or not fact.progress or len(sessions) > 1:
            continue
        run = sessions[0][1] if sessions else plan.file_run.get(index)
        if run and run not in found:
            said = fact.progress
            where = f"{PurePosixPath(fact.display).name} line {said['line']}"
            found[run] = {"run": run, "epoch_steps": said["epoch_steps"], "logged_epochs": said["epochs"],
                          "validation_steps": said["validation_steps"],
                          "step_time_ns": said["step_time_s"] * 1e9 if said["step_time_s"] is not None else None,
                          "data_time_ns": said["data_time_s"] * 1e9 if said["data_time_s"] is not None else None,
                          "progress_source": f"“{said['example']}” [{where}]"}
    if not runs.height:
        return runs
    said = pl.DataFrame(list(found.values()), schema={"run": pl.String, **PROGRESS_COLUMNS})
    return runs.drop(list(PROGRESS_COLUMNS), strict=False).join(said, on="run", how="left").select(runs.columns)


def _ncu_clocks(plan: runs_mod.Plan, facts: list[FileFacts]) -> dict[str, clocks.ClockDomain]:
    """run -> the clock ncu ran its kernels at when no frequency is logged (its first ncu log's
    version and echoed command line: `gpu.clocks.ncu_clock_domain`)."""
    found: dict[str, clocks.ClockDomain] = {}
    for index, fact in enumerate(facts):
        if fact.family != "ncu" or not fact.parsed:
            continue
        runs = [run for _, run in plan.session_runs.get(index) or []] or [plan.file_run.get(index)]
        for run in filter(None, runs):
            found.setdefault(run, clocks.ncu_clock_domain(fact.tool_version, fact.command_line))
    return found


def _mark_clocks(runs: pl.DataFrame, found: dict[str, clocks.ClockDomain]) -> pl.DataFrame:
    """`runs` with `clock_domain` and `clock_source` (null for runs without an ncu log)."""
    if not runs.height:
        return runs
    said = pl.DataFrame({"run": list(found), "clock_domain": [c.domain for c in found.values()],
                         "clock_source": [c.source for c in found.values()]},
                        schema={"run": pl.String, "clock_domain": pl.String, "clock_source": pl.String})
    return runs.drop("clock_domain", "clock_source", strict=False).join(said, on="run", how="left") \
        .select(runs.columns)


def _failures(plan: runs_mod.Plan, facts: list[FileFacts]) -> dict[str, tuple[str, str]]:
    """run -> (failure, reason) for the runs none of whose files holds a kernel row: the first
    failure its files' facts record (`failures.py`)."""
    with_kernels, found = set(), {}
    for index, fact in enumerate(facts):
        runs = [run for _, run in plan.session_runs.get(index) or []] or [plan.file_run.get(index)]
        for run in filter(None, runs):
            if fact.failure:
                found.setdefault(run, (fact.failure, fact.failure_reason))
            elif fact.rows.get("kernels"):   # (a log of copies alone has its failure, when it says one)
                with_kernels.add(run)
    return {run: said for run, said in found.items() if run not in with_kernels}


def _mark_failures(runs: pl.DataFrame, found: dict[str, tuple[str, str]]) -> pl.DataFrame:
    """`runs` with `failure` and `failure_reason` (null where its logs hold kernels or say nothing)."""
    if not runs.height:
        return runs
    said = pl.DataFrame({"run": list(found), "failure": [f for f, _ in found.values()],
                         "failure_reason": [r for _, r in found.values()]},
                        schema={"run": pl.String, "failure": pl.String, "failure_reason": pl.String})
    return runs.drop("failure", "failure_reason", strict=False).join(said, on="run", how="left").select(runs.columns)


def _cut_short(plan: runs_mod.Plan, facts: list[FileFacts]) -> dict[str, str]:
    """run -> why its logs stop before the run did (the first such warning: cutshort.py)."""
    found: dict[str, str] = {}
    for index, fact in enumerate(facts):
        if not fact.parsed:
            continue
        for warning in fact.warnings:
            if not cutshort.is_cut_short(warning.code, fact.family):
                continue
            sessions = plan.session_runs.get(index)
            run = cutshort.run_at_line(sessions, warning.line) if sessions else plan.file_run.get(index)
            if run:
                found.setdefault(run, cutshort.reason(warning.code, warning.message, fact.display, warning.line))
    return found


def outcomes(facts: list[FileFacts], plan: runs_mod.Plan) -> list[FileOutcome]:
    out = []
    for index, fact in enumerate(facts):
        found = plan.gpu_of(index) if fact.parsed else None
        out.append(outcome(fact, plan.label_of(index) if fact.parsed else None, found.family if found else None))
    return out


def outcome(fact: FileFacts, run: str | None, gpu_family: str | None = None) -> FileOutcome:
    """The file's outcome (`run`: its run(s) as the `files` table shows them; `gpu_family`: the
    family of its (first) run's GPU)."""
    return FileOutcome(
        path=fact.display, family=fact.family, variant=fact.variant, status=fact.status,
        rows=dict(fact.rows), warnings=list(fact.warnings),
        error=fact.error if fact.parsed or fact.error else fact.skip_reason,
        tool_version=fact.tool_version, run=run, encoding=fact.encoding, size_bytes=fact.size,
        excluded=fact.excluded, gpu_family=gpu_family, failure=fact.failure, failure_reason=fact.failure_reason)


def files_table(outcomes: list[FileOutcome]) -> pl.DataFrame:
    if not outcomes:
        return schema.empty("files")
    return schema.conform("files", pl.DataFrame([{
        "path": o.path, "family": o.family, "variant": o.variant, "status": o.status,
        "run": o.run, "gpu_family": o.gpu_family, "tool_version": o.tool_version, "encoding": o.encoding,
        "size_bytes": o.size_bytes, "rows": json.dumps(o.rows, sort_keys=True),
        "warnings": len(o.warnings), "error": o.error, "failure": o.failure, "failure_reason": o.failure_reason,
    } for o in outcomes], infer_schema_length=None))
