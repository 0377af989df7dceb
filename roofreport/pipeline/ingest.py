"""The pipeline from paths to the shared tables: discover → read each file → runs → tables.

`ingest(paths)` never raises for a bad input file: each file's outcome (ok, partial, error,
skipped, with warnings) is recorded and the rest goes on. Each file is read by one task
(`read_one`: sniff, parse, conform its tables), run by an executor (`executors.py`): many files
on worker processes so every core works, a few (or one big one, which polars already reads on
every core) in this process, or on Dask. A task whose process dies is retried once, then
recorded as a failed file. What looks across files (runs, GPUs, enrichment) is `assemble.py`.
"""

from __future__ import annotations

import os
import traceback
from contextlib import closing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import polars as pl

from roofreport.enrich.categories import only_copies
from roofreport.enrich.gpu_evidence import file_evidence
from roofreport.errors import ROWS_LOST, LogWarning, ParseError, RoofreportError
from roofreport.families import REGISTRY, ParseResult
from roofreport.families.common import limits as limits_mod
from roofreport.families.common.limits import Limits
from roofreport.families.common.textio import Document
from roofreport.gpu import NO_SETTINGS, GpuSettings
from roofreport.pipeline import assemble, config, cutshort, duplicates, estimates, executors, failures, progress
from roofreport.pipeline.dataset import Dataset
from roofreport.pipeline.discover import discover
from roofreport.pipeline.facts import FileFacts
from roofreport.pipeline.options import Progress
from roofreport.pipeline.sniff import sniff
from roofreport.pipeline.tasks import Crash, FileRead, FileTask
from roofreport.tables import schema

def ingest(paths: list[Path | str], progress: Progress | None = None, jobs: int | None = None,
           exclude: tuple[str, ...] = (), executor: str | None = None,
           limits: Limits = Limits(), settings: GpuSettings = NO_SETTINGS) -> Dataset:
    """Read every file under `paths` into the shared tables, each row tagged with its run
    (pipeline/runs.py). Files that a glob of `exclude` or a roofreport.toml's `exclude` names
    (pipeline/config.py) are listed as skipped, unread, with the glob that left them out.
    `executor`: where the files are read (`executors.choose`); `limits`: what one file may
    cost (a roofreport.toml may lower them for its folder); `settings`: what the user says of
    the GPU (`--gpu`, `--peaks`)."""
    paths = [Path(p) for p in paths]
    found = discover(paths)
    tasks = file_tasks(found, exclude, limits=limits)
    reads = read_all(tasks, progress=progress, jobs=jobs, executor=executor)
    facts = [read.facts for read in reads]
    plan = assemble.plan_runs(found, facts, {index: read.tables for index, read in enumerate(reads)}, settings)
    parts: dict[str, list[pl.DataFrame]] = {name: [] for name in schema.PARSED_TABLES}
    for index, read in enumerate(reads):
        for name, frame in read.tables.items():
            parts[name].append(assemble.with_run(frame, plan, index))
        read.tables = {}
    tables = assemble.finish(assemble.concat_parts(parts), assemble.families(plan, facts))
    outcomes = assemble.outcomes(facts, plan)
    tables["runs"] = assemble.runs_table(plan, facts)
    tables["files"] = assemble.files_table(outcomes)
    return Dataset(tables=tables, files=outcomes, inputs=list(paths), gpu=settings)


# -- the per-file task -----------------------------------------------------------------------

def file_tasks(found: list[tuple[Path, Path]], exclude: tuple[str, ...] = (),
               fingerprint: bool = False, limits: Limits = Limits()) -> list[FileTask]:
    exclusions = config.Exclusions(tuple(exclude))
    return [FileTask(str(path), str(path), exclusions.reason(path, root), fingerprint,
                     config.file_limits(limits, path, root))
            for path, root in found]


def read_all(tasks: list[FileTask], progress: Progress | None = None, jobs: int | None = None,
             executor: str | None = None) -> list[FileRead]:
    """Every task's `FileRead`, in the tasks' order, read by the chosen executor; a task whose
    process died twice gives a failed file."""
    reads: list[FileRead | None] = [None] * len(tasks)
    with closing(read_each(tasks, progress, jobs, executor)) as each:
        for position, read in each:
            reads[position] = read
    return reads


def read_each(tasks: list[FileTask], progress: Progress | None = None, jobs: int | None = None,
              executor: str | None = None, largest_first: bool = True) -> Iterator[tuple[int, FileRead]]:
    """(position in `tasks`, its `FileRead`) as each file is read. `largest_first`: the largest
    files are started first, so the workers stay busy to the end; else in the tasks' order, so
    that a caller keeping rows for consecutive files (a dataset's batches) can let them go as
    soon as their files are read."""
    sizes = [_size(task.path) for task in tasks]
    order = sorted(range(len(tasks)), key=lambda i: -sizes[i]) if largest_first else list(range(len(tasks)))
    isolated = any(task.limits.max_memory is not None for task in tasks)
    runner = executors.choose(executor, jobs, len(tasks), sum(sizes), isolated=isolated)
    try:
        for done, (position, result) in enumerate(runner.run(read_one, [tasks[i] for i in order]), 1):
            task = tasks[order[position]]
            yield order[position], _crashed(task, result) if isinstance(result, Crash) else result
            if progress:
                progress(done, len(tasks), task.display)
    finally:
        runner.close()


def read_one(task: FileTask) -> FileRead:
    """Sniff and parse one file (never raises: a failure is the file's error)."""
    path = Path(task.path)
    if task.excluded is not None:
        return FileRead(FileFacts(task.display, size=_size(task.path), encoding="",
                                  skip_reason=task.excluded, excluded=True), {})
    if task.limits.max_memory is not None:
        from roofreport.pipeline.workers import cap_memory  # (a worker process: it started a pool)

        cap_memory(task.limits.max_memory)
    with limits_mod.applied(task.limits):
        return _read_one(task, path)


def _gpu_window(hints, activities: pl.DataFrame | None) -> None:
    """The hints' `gpu_start_ns`/`gpu_end_ns`: the trace's first GPU activity's start and last
    one's end (`runs.py` tells the processes of one job, which ran together, by them)."""
    if activities is None or not activities.height or hints.gpu_start_ns is not None:
        return
    timed = activities.filter(pl.col("start_ns").is_not_null() & pl.col("duration_ns").is_not_null())
    if timed.height:
        hints.gpu_start_ns = float(timed["start_ns"].min())
        hints.gpu_end_ns = float((timed["start_ns"] + timed["duration_ns"]).max())


def _read_one(task: FileTask, path: Path) -> FileRead:
    sniffed = sniff(path, display=task.display)
    facts = FileFacts(task.display, size=sniffed.size, encoding=sniffed.encoding, family=sniffed.family,
                      variant=sniffed.variant, skip_reason=sniffed.skip_reason, job=sniffed.job)
    if not sniffed.readable:
        return FileRead(_fingerprinted(task, facts), _estimates_of(path, facts, sniffed.size))
    result = parse_file(path, sniffed.spec.name, sniffed.variant, task.display,
                        Skipped(sniffed.start, sniffed.skipped_lines))
    tables = {name: schema.conform(name, frame.with_columns(pl.lit(task.display, pl.String).alias("source_file")))
              for name, frame in result.tables.items() if frame.height}
    facts.parsed = True
    facts.family, facts.variant, facts.tool_version = result.family, result.variant, result.tool_version
    facts.hints, facts.sessions = result.hints, result.sessions
    _gpu_window(facts.hints, tables.get("activities"))
    facts.warnings = [LogWarning(w.code, w.message, w.line, path=task.display) for w in result.warnings]
    facts.error = result.error.describe() if result.error else None
    facts.rows = {name: frame.height for name, frame in tables.items()}
    hints = result.hints
    facts.gpu = file_evidence(tables, [hints.device_name, *(s.hints.device_name for s in result.sessions)],
                              hints.compute_capability, hints.sm_count)
    # The duplicate check compares files' rows by this digest: worked out here, in the worker,
    # rather than one file after the other in the process that groups runs.
    facts.tables_digest = duplicates.tables_digest(tables)
    if not sniffed.spec.binary:    # a torchinfo printout in the log (a job's output): its estimate
        tables.update(_estimates_of(path, facts, sniffed.size))
    if not _holds_kernels(tables) and not sniffed.spec.binary and not cutshort.is_monitor(facts.family):
        _record_failure(facts, path, sniffed.encoding)
    if facts.family == "ncu" and not sniffed.spec.binary:
        facts.command_line = failures.read_command(path, sniffed.encoding, sniffed.start)
    if facts.family in progress.PASS_STDOUT and not sniffed.spec.binary:
        found = progress.read_progress(path, sniffed.encoding, facts.family)
        facts.progress = found.as_dict() if found is not None else None
    return FileRead(_fingerprinted(task, facts), tables)


def _estimates_of(path: Path, facts: FileFacts, size: int) -> dict[str, pl.DataFrame]:
    """The file's FLOP estimates (`pipeline/estimates.py`: an estimates file, or a torchinfo
    printout) as its `estimates` table, counted in its rows; a file that is no log but holds
    them says so, and an entry that did not read is its error."""
    found, error = estimates.read_estimates(path, facts.display, size)
    if not found.height and error is None:
        return {}
    if found.height:
        facts.rows["estimates"] = found.height
    if not facts.parsed:
        what = "an estimates file" if estimates.is_estimates_file(path) else "a torchinfo summary() printout"
        facts.skip_reason = (f"{what}, not a profiler log: {found.height} FLOP estimate"
                             f"{'' if found.height == 1 else 's'} read for the report")
        facts.error = error
    return {"estimates": found} if found.height else {}


def _holds_kernels(tables: dict[str, pl.DataFrame]) -> bool:
    """Some kernel row is a kernel: a summary of copies and memsets alone measured no kernel."""
    kernels = tables.get("kernels")
    if kernels is None or not kernels.height:
        return False
    return not only_copies(kernels["name"])


def _record_failure(facts: FileFacts, path: Path, encoding: str | None) -> None:
    """Why a profiler log holds no kernels, where the log says it (`failures.py`)."""
    found = failures.read_failure(path, encoding)
    if found is not None:
        facts.failure = found.code
        facts.failure_reason = f"{found.reason} [{PurePosixPath(facts.display).name} line {found.line}]"


def _fingerprinted(task: FileTask, facts: FileFacts) -> FileFacts:
    """The file's facts with the hash of its bytes and the limits it was read under when the
    task asks for them (an update compares them: a touched file is not a changed one, and a file
    read under other limits may read otherwise)."""
    if task.fingerprint:
        facts.content_hash = duplicates.file_digest(Path(task.path))
        facts.limits = task.limits.as_dict()
    return facts


def _crashed(task: FileTask, crash: Crash) -> FileRead:
    message = crash.message
    if task.limits.max_memory is not None:
        message += f"; its worker's memory was limited to {limits_mod.shown(task.limits.max_memory)} (--max-memory)"
    return FileRead(FileFacts(task.display, size=_size(task.path), error=f"{task.display}: {message}"), {})


# -- parsing ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Skipped:
    """The part of a file before its log (`sniff`: a log after unrelated output): its bytes
    and lines."""

    bytes: int = 0
    lines: int = 0


def parse_file(path: Path, spec_name: str, variant: str, display: str,
               skipped: Skipped = Skipped()) -> ParseResult:
    """Parse one sniffed file; any failure becomes the result's error, never an exception.

    Damage repaired while reading (NUL runs, non-UTF-8 bytes: textio) comes first among the
    file's warnings. An exception that is not roofreport's own is a defect or an input no rule
    foresaw: it is reported against the file (type and message; the traceback too with
    ROOFREPORT_DEBUG=1) and the rest of the folder goes on. A log after unrelated output is
    read from its first line; the lines before it are counted in one warning, and the line
    numbers made the file's."""
    spec = next(s for s in REGISTRY if s.name == spec_name)
    result, source = _parse_source(spec, path, variant, display, skipped.bytes)
    repaired = source.warnings if isinstance(source, Document) else []
    result.warnings[:0] = [w for w in repaired if w not in result.warnings]
    mark_lost_rows(result, display)
    if result.error is not None and not result.error.path:
        result.error.path = display
        result.error.args = (result.error.describe(),)
    if skipped.lines:
        result.shift_lines(skipped.lines, display)
        result.warnings.insert(0, LogWarning(
            "input.leading-text", f"lines 1-{skipped.lines} ({skipped.bytes:,} bytes) are not "
            f"{result.family} output (a job's other output before it): skipped", line=1))
    return result


def mark_lost_rows(result: ParseResult, display: str) -> None:
    """A file some of whose rows could not be read (`errors.ROWS_LOST` warnings) gets an error
    naming them, so its status is `partial` (or `error` when no row was read): a failed input
    in the exit code and the report's file list, never "ok" with rows missing."""
    lost = [w for w in result.warnings if w.code in ROWS_LOST]
    if not lost or result.error is not None:
        return
    codes = ", ".join(sorted({w.code for w in lost}))
    first = next((w.line for w in lost if w.line is not None), None)
    where = f"; the first at line {first}" if first is not None else ""
    result.error = ParseError(f"rows that could not be read were left out ({len(lost)} {codes} "
                              f"warning{'s' if len(lost) > 1 else ''}{where})", path=display, line=first)


def _parse_source(spec, path: Path, variant: str, display: str,
                  start: int = 0) -> tuple[ParseResult, Document | Path | None]:
    """(result, what was parsed: the Document, the path of a binary file, None when the
    file could not be opened); any failure becomes the result's error."""
    source = None
    try:
        source = path if spec.binary else Document.open(path, display=display, start=start)
        result = spec.parse(source, variant)
    except RoofreportError as exc:
        result = ParseResult(family=spec.family, variant=variant)
        result.error = exc if isinstance(exc, ParseError) else ParseError(str(exc), path=display)
    except MemoryError:
        result = ParseResult(family=spec.family, variant=variant)
        memory = limits_mod.active().max_memory
        result.error = ParseError("reading this file needs more memory than " + (
            f"the {limits_mod.shown(memory)} its worker may use (--max-memory)" if memory else
            "this machine has"), path=display)
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


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
