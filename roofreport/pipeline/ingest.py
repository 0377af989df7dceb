"""The pipeline from paths to the shared tables: discover → sniff → parse → runs → tables.

`ingest(paths)` never raises for a bad input file: each file's outcome (ok, partial, error,
skipped, with warnings) is recorded and the rest goes on. Many files are parsed in worker
processes so both cores work; one big file is parsed in-process (polars is already parallel).
"""

from __future__ import annotations

import fnmatch
import json
import os
import traceback
from contextlib import nullcontext
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Callable

import polars as pl

from roofreport.enrich import enrich_kernels
from roofreport.errors import LogWarning, ParseError, RoofreportError
from roofreport.families import REGISTRY, ParseResult, RunHints
from roofreport.families.common.textio import Document
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
    """Read every file under `paths` into the shared tables. Files whose path relative to the
    folder given (or any trailing part of it, or their name) matches a glob of `exclude` are
    listed as skipped, unread."""
    paths = [Path(p) for p in paths]
    found = discover(paths)
    results: dict[int, ParseResult] = {}
    with _pool(len(found), jobs) as pool:
        sniffed = _sniff_all(found, tuple(exclude), pool)
        work = [(i, s) for i, s in enumerate(sniffed) if s.readable]
        total = len(found)
        done = total - len(work)
        for i, result in _parse_all(work, pool):
            results[i] = result
            done += 1
            if progress:
                progress(done, total, sniffed[i].display)
    outcomes, frames, hints = [], {name: [] for name in schema.PARSED_TABLES}, {}
    for i, ((path, root), sn) in enumerate(zip(found, sniffed)):
        assignment = _assign(path, root)
        outcome = _outcome(sn, results.get(i), assignment.run)
        outcomes.append(outcome)
        result = results.get(i)
        if result is None:
            continue
        hints.setdefault(assignment.run, []).append((assignment, result, sn))
        for name, frame in result.tables.items():
            if frame.height:
                frames[name].append(frame.with_columns(
                    pl.lit(assignment.run, pl.String).alias("run"),
                    pl.lit(sn.display, pl.String).alias("source_file")))
    tables = {name: _concat(name, parts) for name, parts in frames.items()}
    tables["kernels"] = _finish_kernels(tables["kernels"], tables["metrics"])
    tables["runs"] = _runs_table(hints)
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
    # A big file is parsed as it is while a thread checks its bytes (`Document.open`); in the
    # rare case they need repair, that parse is void and the repaired text is parsed.
    result, source = _parse_source(spec, path, variant, display, check_later=True)
    if isinstance(source, Document) and source.needs_repair():
        result, source = _parse_source(spec, path, variant, display, check_later=False)
    repaired = source.warnings if isinstance(source, Document) else []
    result.warnings[:0] = [w for w in repaired if w not in result.warnings]
    if result.error is not None and not result.error.path:
        result.error.path = display
        result.error.args = (result.error.describe(),)
    return result


def _parse_source(spec, path: Path, variant: str, display: str,
                  check_later: bool) -> tuple[ParseResult, Document | Path | None]:
    """(result, what was parsed: the Document, the path of a binary file, None when the
    file could not be opened); any failure becomes the result's error."""
    source = None
    try:
        source = path if spec.binary else Document.open(path, display=display, check_later=check_later)
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
    i, path, spec_name, variant, display = args
    return i, parse_file(Path(path), spec_name, variant, display)


def _pool(count: int, jobs: int | None):
    """Worker processes for many files (sniffing and parsing both run there, so both cores
    work), or no pool (None) for a few files or one job (`workers.pool`: safe to start from a
    script without a main guard or from a notebook)."""
    workers = jobs if jobs is not None else min(os.cpu_count() or 1, 4)
    if workers <= 1 or count < _PARALLEL_MIN_FILES:
        return nullcontext(None)
    from roofreport.pipeline.workers import pool  # only when used: start-up cost

    return pool(workers)


def _sniff_one(task: tuple[Path, Path, tuple[str, ...]]) -> Sniffed:
    path, root, exclude = task
    pattern = _excluded_by(path, root, exclude)
    if pattern is not None:
        return Sniffed(path, str(path), _size(str(path)), "", skip_reason=f"excluded by {pattern!r}")
    return sniff(path, display=str(path))


def _excluded_by(path: Path, root: Path, exclude: tuple[str, ...]) -> str | None:
    """The first glob of `exclude` matching the file's path relative to its root, a trailing
    part of that path (`_deleted_in_history/*`), or its name (`prev_*`); fnmatch, so `*` also
    crosses `/`."""
    if not exclude:
        return None
    try:
        parts = PurePosixPath(path.relative_to(root).as_posix()).parts
    except ValueError:
        parts = (path.name,)
    tails = ["/".join(parts[i:]) for i in range(len(parts))]
    return next((g for g in exclude if any(fnmatch.fnmatchcase(t, g) for t in tails)), None)


def _sniff_all(found: list[tuple[Path, Path]], exclude: tuple[str, ...],
               pool: ProcessPoolExecutor | None) -> list[Sniffed]:
    tasks = [(path, root, exclude) for path, root in found]
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

@lru_cache(maxsize=1024)
def _overrides(folder: Path) -> list[runs_mod.Override]:
    return runs_mod.load_overrides(folder)


def _assign(path: Path, root: Path) -> runs_mod.RunAssignment:
    """The file's run from its path, then any roofreport.toml in the input root or beside it."""
    try:
        rel = PurePosixPath(path.relative_to(root).as_posix())
    except ValueError:
        rel = PurePosixPath(path.name)
    assignment = runs_mod.assign(rel, root.name or str(root))
    folders = [root] if path.parent == root else [root, path.parent]
    for folder in folders:
        rel_here = PurePosixPath(path.relative_to(folder).as_posix())
        assignment = runs_mod.apply_overrides(rel_here, assignment, _overrides(folder))
    return assignment


def _runs_table(by_run: dict[str, list]) -> pl.DataFrame:
    rows = []
    for run, members in by_run.items():
        attrs = runs_mod.RunAttrs()
        device = command = host = tool_version = None
        tools = set()
        for assignment, result, sn in members:
            h: RunHints = result.hints
            label = runs_mod.attrs_from_name(h.label) if h.label else runs_mod.RunAttrs()
            attrs = attrs.merged(assignment.attrs)
            attrs = attrs.merged(runs_mod.RunAttrs(model=h.model or label.model,
                                                   batch_size=h.batch_size or label.batch_size,
                                                   learning_rate=h.learning_rate or label.learning_rate))
            attrs = attrs.merged(runs_mod.attrs_from_command(h.command))
            device = device or h.device_name or label.gpu
            command = command or h.command
            host = host or h.host
            tool_version = tool_version or result.tool_version
            tools.add(result.family)
        gpu = device or attrs.gpu
        rows.append({
            "run": run, "gpu": gpu, "gpu_model": _gpu_model(device, attrs.gpu),
            "model": attrs.model, "batch_size": attrs.batch_size,
            "learning_rate": attrs.learning_rate, "experiment": attrs.experiment,
            "tool": "+".join(sorted(tools)), "tool_version": tool_version, "host": host,
            "command": command, "source_dir": members[0][0].source_dir, "files": len(members),
        })
    if not rows:
        return schema.empty("runs")
    return schema.conform("runs", pl.DataFrame(rows, infer_schema_length=None)).sort("run")


def _gpu_model(device: str | None, token: str | None) -> str | None:
    """Key of the GPU database for this run (None until the hardware module can tell)."""
    try:
        from roofreport import hardware
    except ImportError:
        return None
    for name in (device, token):
        if name:
            spec = hardware.match(name)
            if spec is not None:
                return spec.key
    return None


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


def _outcome(sn: Sniffed, result: ParseResult | None, run: str) -> FileOutcome:
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
