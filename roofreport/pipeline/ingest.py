"""The pipeline from paths to the shared tables: discover → sniff → parse → runs → tables.

`ingest(paths)` never raises for a bad input file: each file's outcome (ok, partial, error,
skipped, with warnings) is recorded and the rest goes on. Many files are parsed in worker
processes so both cores work; one big file is parsed in-process (polars is already parallel).
"""

from __future__ import annotations

import json
import os
import traceback
from contextlib import nullcontext
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Callable

import polars as pl

from roofreport.enrich import enrich_kernels
from roofreport.errors import LogWarning, ParseError, RoofreportError
from roofreport.families import REGISTRY, ParseResult, RunHints
from roofreport.families.common.textio import Document
from roofreport.pipeline import config, cutshort, duplicates, identity
from roofreport.pipeline import runs as runs_mod
from roofreport.pipeline.dataset import Dataset, FileOutcome
from roofreport.pipeline.discover import discover
from roofreport.pipeline.sniff import Sniffed, sniff
from roofreport.tables import schema

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

Progress = Callable[[int, int, str], None]

_PARALLEL_MIN_FILES = 12


def ingest(paths: list[Path | str], progress: Progress | None = None, jobs: int | None = None,
           exclude: tuple[str, ...] = ()) -> Dataset:
    """Read every file under `paths` into the shared tables, each row tagged with its run
    (pipeline/runs.py). Files that a glob of `exclude` or a roofreport.toml's `exclude` names
    (pipeline/config.py) are listed as skipped, unread, with the glob that left them out."""
    paths = [Path(p) for p in paths]
    found = discover(paths)
    exclusions = config.Exclusions(tuple(exclude))
    reasons = [exclusions.reason(path, root) for path, root in found]
    results: dict[int, ParseResult] = {}
    with _pool(len(found), jobs) as pool:
        sniffed = _sniff_all([(path, reason) for (path, _), reason in zip(found, reasons)], pool)
        work = [(i, s) for i, s in enumerate(sniffed) if s.readable]
        total = len(found)
        done = total - len(work)
        for index, result in _parse_all(work, pool):
            results[index] = result
            done += 1
            if progress:
                progress(done, total, sniffed[index].display)
    plan = _plan_runs(found, sniffed, results)
    outcomes, frames = [], {name: [] for name in schema.PARSED_TABLES}
    for index, sn in enumerate(sniffed):
        result = results.get(index)
        outcome = _outcome(sn, result, plan.label_of(index) if result is not None else None)
        outcome.excluded = reasons[index] is not None
        outcomes.append(outcome)
        if result is None:
            continue
        for name, frame in result.tables.items():
            if frame.height:
                frames[name].append(frame.with_columns(
                    _run_column(plan, index, frame), pl.lit(sn.display, pl.String).alias("source_file")))
    tables = {name: _concat(name, parts) for name, parts in frames.items()}
    tables["kernels"] = _finish_kernels(tables["kernels"], tables["metrics"])
    tables["runs"] = cutshort.mark(plan.runs, _cut_short(plan, results, sniffed))
    tables["files"] = _files_table(outcomes)
    return Dataset(tables=tables, files=outcomes, inputs=list(paths))


# -- parsing ---------------------------------------------------------------------------------

def parse_file(path: Path, spec_name: str, variant: str, display: str) -> ParseResult:
    """Parse one sniffed file; any failure becomes the result's error, never an exception.

    Damage repaired while reading (NUL runs, non-UTF-8 bytes: textio) comes first among the
    file's warnings. An exception that is not roofreport's own is a defect or an input no rule
    foresaw: it is reported against the file (type and message; the traceback too with
    ROOFREPORT_DEBUG=1) and the rest of the folder goes on."""
    spec = next(s for s in REGISTRY if s.name == spec_name)
    result, source = _parse_source(spec, path, variant, display)
    repaired = source.warnings if isinstance(source, Document) else []
    result.warnings[:0] = [w for w in repaired if w not in result.warnings]
    if result.error is not None and not result.error.path:
        result.error.path = display
        result.error.args = (result.error.describe(),)
    return result


def _parse_source(spec, path: Path, variant: str, display: str) -> tuple[ParseResult, Document | Path | None]:
    """(result, what was parsed: the Document, the path of a binary file, None when the
    file could not be opened); any failure becomes the result's error."""
    source = None
    try:
        source = path if spec.binary else Document.open(path, display=display)
        result = spec.parse(source, variant)
    except RoofreportError as exc:
        result = ParseResult(family=spec.family, variant=variant)
        result.error = exc if isinstance(exc, ParseError) else ParseError(str(exc), path=display)
    except (Exception, pl.exceptions.PanicException) as exc:  # noqa: BLE001 - containment
        # A polars panic (Rust assertion on odd input) is a BaseException: contained too.
        result = ParseResult(family=spec.family, variant=variant)
        result.error = ParseError(_unexpected(spec.family, exc), path=display)
    return result, source


def _unexpected(family: str, exc: BaseException) -> str:
    first = str(exc).splitlines()[0][:300] if str(exc) else ""
    message = f"could not read this {family} file ({type(exc).__name__}: {first})"
    if os.environ.get("ROOFREPORT_DEBUG"):
        return f"{message}\n{traceback.format_exc()}"
    return f"{message}; set ROOFREPORT_DEBUG=1 to see where it failed"


def _parse_one(args: tuple[int, str, str, str, str]) -> tuple[int, ParseResult]:
    index, path, spec_name, variant, display = args
    return index, parse_file(Path(path), spec_name, variant, display)


def _pool(count: int, jobs: int | None):
    """Worker processes for many files (sniffing and parsing both run there, so both cores
    work), or no pool (None) for a few files or one job (`workers.pool`: safe to start from a
    script without a main guard or from a notebook)."""
    workers = jobs if jobs is not None else min(os.cpu_count() or 1, 4)
    if workers <= 1 or count < _PARALLEL_MIN_FILES:
        return nullcontext(None)
    from roofreport.pipeline.workers import pool  # only when used: start-up cost

    return pool(workers)


def _sniff_one(task: tuple[Path, str | None]) -> Sniffed:
    path, excluded = task
    if excluded is not None:
        return Sniffed(path, str(path), _size(str(path)), "", skip_reason=excluded)
    return sniff(path, display=str(path))


def _sniff_all(tasks: list[tuple[Path, str | None]], pool: ProcessPoolExecutor | None) -> list[Sniffed]:
    if pool is None:
        return [_sniff_one(task) for task in tasks]
    return list(pool.map(_sniff_one, tasks, chunksize=max(1, min(32, len(tasks) // 8))))


def _parse_all(work: list[tuple[int, Sniffed]], pool: ProcessPoolExecutor | None):
    tasks = [(i, str(s.path), s.spec.name, s.variant, s.display) for i, s in work]
    if pool is None or len(tasks) < _PARALLEL_MIN_FILES:
        for task in tasks:
            yield _parse_one(task)
        return
    # Largest files first so the pool stays balanced.
    tasks.sort(key=lambda t: -_size(t[1]))
    yield from pool.map(_parse_one, tasks, chunksize=4)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


# -- runs ------------------------------------------------------------------------------------

def _plan_runs(found: list[tuple[Path, Path]], sniffed: list[Sniffed],
               results: dict[int, ParseResult]) -> runs_mod.Plan:
    """Which run every parsed file (or profiler session) belongs to: copies first, then the
    grouping rules of pipeline/runs.py."""
    files, candidates = [], []
    for index, result in sorted(results.items()):
        path, root = found[index]
        rel = _relative(path, root)
        files.append(runs_mod.LogFile(
            index=index, rel=rel, root=root.name or str(root), family=result.family,
            variant=result.variant, tool_version=result.tool_version, hints=result.hints,
            sessions=result.sessions, tables=config.run_tables(path, root)))
        name = identity.read_name(rel.name)
        candidates.append(duplicates.Candidate(
            index=index, path=path, rel=rel, size=sniffed[index].size, family=result.family,
            variant=result.variant, name_key=name.key, tables=result.tables,
            richness=_richness(result.hints), job=name.get("job"), process_id=result.hints.process_id))
    originals = duplicates.find(candidates)
    for file in files:
        file.duplicate_of = originals.get(file.index)
    return runs_mod.plan(files)


def _cut_short(plan: runs_mod.Plan, results: dict[int, ParseResult], sniffed: list[Sniffed]) -> dict[str, str]:
    """run -> why its logs stop before the run did (the first such warning: cutshort.py)."""
    found: dict[str, str] = {}
    for index, result in sorted(results.items()):
        for warning in result.warnings:
            if not cutshort.is_cut_short(warning.code, result.family):
                continue
            sessions = plan.session_runs.get(index)
            run = cutshort.run_at_line(sessions, warning.line) if sessions else plan.file_run.get(index)
            if run:
                found.setdefault(run, cutshort.reason(warning.code, warning.message, sniffed[index].display,
                                                      warning.line))
    return found


def _relative(path: Path, root: Path) -> PurePosixPath:
    try:
        return PurePosixPath(path.relative_to(root).as_posix())
    except ValueError:
        return PurePosixPath(path.name)


def _richness(hints: RunHints) -> int:
    """How much a log says about its run: of two copies, the one that says more is kept."""
    return sum(value is not None for value in (hints.command, hints.device_name, hints.host, hints.label))


def _run_column(plan: runs_mod.Plan, index: int, frame: pl.DataFrame) -> pl.Series:
    """The run of each row: the file's run, or for a log of several profiler sessions the
    session whose first line is the last one at or before the row's line."""
    sessions = plan.session_runs.get(index)
    if not sessions:
        return pl.repeat(plan.file_run[index], frame.height, dtype=pl.String, eager=True).alias("run")
    starts = pl.Series([first for first, _ in sessions], dtype=pl.Int64)
    lines = frame["source_line"].fill_null(0).cast(pl.Int64)
    which = (starts.search_sorted(lines, side="right").cast(pl.Int64) - 1).clip(0, len(sessions) - 1)
    return pl.Series("run", [run for _, run in sessions], dtype=pl.String).gather(which)


# -- tables ----------------------------------------------------------------------------------

def _concat(name: str, parts: list[pl.DataFrame]) -> pl.DataFrame:
    if not parts:
        return schema.empty(name)
    return schema.conform(name, pl.concat(parts, how="diagonal_relaxed"))


def _finish_kernels(kernels: pl.DataFrame, metrics: pl.DataFrame) -> pl.DataFrame:
    """Derived kernel columns (counters, short name, category, phase region, tensor flags)."""
    if not kernels.height:
        return kernels
    return schema.conform("kernels", enrich_kernels(kernels, metrics))


def _outcome(sn: Sniffed, result: ParseResult | None, run: str | None) -> FileOutcome:
    base = dict(path=sn.display, family=sn.family, variant=sn.variant, encoding=sn.encoding,
                size_bytes=sn.size)
    if result is None:
        return FileOutcome(**base, status="skipped", error=sn.skip_reason)
    rows = result.rows()
    if result.error is None:
        status = "ok"
    else:
        status = "partial" if rows else "error"
    warnings = [LogWarning(w.code, w.message, w.line, path=sn.display) for w in result.warnings]
    return FileOutcome(**base, status=status, rows=rows, warnings=warnings,
                       error=result.error.describe() if result.error else None,
                       tool_version=result.tool_version, run=run)


def _files_table(outcomes: list[FileOutcome]) -> pl.DataFrame:
    if not outcomes:
        return schema.empty("files")
    return schema.conform("files", pl.DataFrame([{
        "path": o.path, "family": o.family, "variant": o.variant, "status": o.status,
        "run": o.run, "tool_version": o.tool_version, "encoding": o.encoding,
        "size_bytes": o.size_bytes, "rows": json.dumps(o.rows, sort_keys=True),
        "warnings": len(o.warnings), "error": o.error,
    } for o in outcomes], infer_schema_length=None))
