"""An incremental dataset folder: the shared tables as partitioned Parquet, kept up to date.

`update(paths, folder)` (`roofreport parse LOGS -o DIR --update`, `roofreport.read(LOGS,
dataset=DIR)`) reads only the files that are new or changed since the last update, drops the
rows of files that are gone, groups runs again over every file (from the facts kept per file:
grouping works across the files of a folder, so one changed file can move other files' runs)
and rewrites only the batches of files whose rows changed. The tables equal those of a fresh
read of the same logs. `open_dataset(folder)` (`roofreport.read(DIR)`) gives a `Dataset` whose
tables are scanned lazily.

The folder (README: "Incremental datasets"):

    DIR/manifest.json                    versions, the generation in use, its files per table
    DIR/current -> gen-000007            the generation in use, for other tools
    DIR/gen-000007/kernels/batch=b1c9e0f3a2d4/part.parquet   (one folder per table and batch)
    DIR/gen-000007/runs/part.parquet, files/part.parquet
    DIR/gen-000007/manifest-files.parquet   per file: path, size, mtime, content hash, batch, facts
    DIR/gen-000007/cache/kernels/batch=.../part.parquet   each batch's kernels before
                                                          enrichment, for the next update

A batch is a run of consecutive folders in the walk's order; a folder whose name hashes to a
multiple of `DIRS_PER_BATCH` (or a file whose name hashes to a multiple of `FILES_PER_BATCH`)
starts a new one, so a new folder or file changes its own batch only. An update writes a new
generation (unchanged batches are hard links to the previous one's files), then replaces
`manifest.json` in one atomic rename: an update that is interrupted leaves the previous
dataset as it was, readable. The previous generation is kept for readers still scanning it;
older ones, and those of interrupted updates, are removed by the next update.

A change of roofreport's version, of the tables' schema (`schema.SCHEMA_VERSION`,
`schema.fingerprint`) or of its code (a development install) reads everything again, with a
message saying why.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, MutableMapping
from contextlib import contextmanager
from functools import cache
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from roofreport.errors import RoofreportError, UsageError
from roofreport.pipeline import assemble, duplicates
from roofreport.pipeline.dataset import Dataset, FileOutcome
from roofreport.pipeline.discover import discover
from roofreport.pipeline.facts import FileFacts
from roofreport.pipeline.ingest import Progress, file_tasks, read_all, read_one
from roofreport.resources import data_dir
from roofreport.tables import schema
from roofreport.tables.frames import distinct_rows
from roofreport.tables.lazy import LazyTables
from roofreport.tables.output import PARQUET_ROW_GROUP_ROWS, atomic_path
from roofreport.version import __version__

MANIFEST = "manifest.json"
FORMAT = "roofreport-dataset"
FORMAT_VERSION = 1
CURRENT = "current"
FILES_MANIFEST = "manifest-files.parquet"
CACHE = "cache"
PART = "part.parquet"
DIRS_PER_BATCH = 4
FILES_PER_BATCH = 512
# A file changed this close to the last update's scan may have changed again within the same
# mtime tick: its bytes are hashed rather than trusted to its size and mtime (as git does).
RACY_NS = 2_000_000_000
_GENERATION = "gen-"
_KERNEL_RUNS = {"source_file": pl.String, "run": pl.String}
FinishRuns = Callable[[MutableMapping[str, pl.DataFrame]], pl.DataFrame]


@dataclass
class UpdateReport:
    """What an update did."""

    files: int = 0
    new: int = 0
    changed: int = 0
    gone: int = 0
    unchanged: int = 0
    read: int = 0
    batches_written: int = 0
    batches_kept: int = 0
    full: bool = False
    messages: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        return (f"{self.files} files: {self.new} new, {self.changed} changed, {self.gone} gone, "
                f"{self.unchanged} unchanged; {self.read} read, {self.batches_written} of "
                f"{self.batches_written + self.batches_kept} batches written")


@dataclass
class _Previous:
    """The dataset as the last update left it."""

    folder: Path
    generation: str
    manifest: dict
    files: dict[str, dict]            # display -> its row of manifest-files.parquet
    batches: dict[str, dict]          # batch id -> its manifest entry

    def path(self, relative: str) -> Path:
        return self.folder / self.generation / relative


# -- recognising and opening -----------------------------------------------------------------

def is_dataset(folder: Path) -> bool:
    """True when `folder` holds an incremental dataset (its manifest.json says so)."""
    manifest = Path(folder) / MANIFEST
    if not manifest.is_file():
        return False
    try:
        return json.loads(manifest.read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def open_dataset(folder: Path | str) -> Dataset:
    """The dataset in `folder`, its tables scanned lazily (nothing is read until asked for)."""
    folder = Path(folder)
    manifest = _load_manifest(folder)
    if manifest is None:
        raise UsageError(f"{folder} is no roofreport dataset (no {MANIFEST})")
    stale = _stale(manifest)
    if stale:
        raise UsageError(f"{folder}: {stale} since this dataset was written; refresh it with "
                         f"`roofreport parse LOGS -o {folder} --update`")
    generation = folder / manifest["generation"]
    tables = _lazy_tables(generation, manifest)
    runs = dict(tables["files"].select("path", "run").iter_rows())
    outcomes = [assemble.outcome(FileFacts.from_json(row["facts"]), runs.get(display))
                for display, row in _read_files_manifest(generation).items()]
    return Dataset(tables=tables, files=outcomes, inputs=[Path(p) for p in manifest["inputs"]])


def _lazy_tables(generation: Path, manifest: dict) -> LazyTables:
    return LazyTables({name: _scanner(generation, manifest["tables"].get(name, []), name) for name in schema.TABLES})


def _scanner(generation: Path, files: list[str], name: str):
    paths = [str(generation / f) for f in files]
    if not paths:
        return lambda: schema.empty(name).lazy()
    return lambda: pl.scan_parquet(paths, hive_partitioning=False, schema=schema.TABLES[name])


# -- updating ----------------------------------------------------------------------------------

def update(paths: list[Path], folder: Path, *, exclude: tuple[str, ...] = (), jobs: int | None = None,
           executor: str | None = None, progress: Progress | None = None,
           finish_runs: FinishRuns | None = None) -> Dataset:
    """Bring the dataset in `folder` up to date with the logs under `paths` (see the module
    docstring) and return it, opened (`open_dataset`), with `.update_report` saying what was
    done. `finish_runs(tables)`: the runs table to store, from the new tables (lazy) with the
    runs the pipeline found (the caller's run totals)."""
    started = time.perf_counter()
    folder = Path(folder)
    _check_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder):
        report = UpdateReport()
        previous = _previous(folder, report)
        found = _outside(discover(paths), folder, paths)
        scanned_at = time.time_ns()
        facts, mtimes, rows = _read_changes(found, previous, report, exclude, jobs, executor, progress)
        generation = _next_generation(folder)
        written, outcomes = _write_generation(folder / generation, found, facts, mtimes, rows, previous, report,
                                              finish_runs)
        manifest = _manifest(generation, previous, paths, exclude, written, scanned_at)
        _switch(folder, manifest)
        _clean(folder, keep={generation, previous.generation if previous else None})
    # (as `open_dataset` would give it, from what is at hand)
    dataset = Dataset(tables=_lazy_tables(folder / generation, manifest), files=outcomes, inputs=list(paths))
    report.seconds = time.perf_counter() - started
    dataset.update_report = report
    return dataset


def _check_folder(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} exists and is not a folder")
    if (folder / "kernels.parquet").exists() and not is_dataset(folder):
        raise UsageError(f"{folder} holds the tables of a plain `roofreport parse`; give --update "
                         "a folder of its own")


def _previous(folder: Path, report: UpdateReport) -> _Previous | None:
    manifest = _load_manifest(folder)
    if manifest is None:
        report.full = True
        return None
    stale = _stale(manifest)
    if stale:
        report.full = True
        report.messages.append(f"{stale} since the dataset was written: every file is read again")
        return None
    generation = manifest["generation"]
    files = _read_files_manifest(folder / generation)
    return _Previous(folder, generation, manifest, files, {b["id"]: b for b in manifest["batches"]})


def _stale(manifest: dict) -> str | None:
    """What changed since the dataset was written, when it cannot be used as it is, or None."""
    if manifest.get("format_version") != FORMAT_VERSION:
        return f"the dataset layout changed (version {manifest.get('format_version')} -> {FORMAT_VERSION})"
    if manifest.get("roofreport_version") != __version__:
        return f"the roofreport version changed ({manifest.get('roofreport_version')} -> {__version__})"
    if manifest.get("schema_version") != schema.SCHEMA_VERSION or \
            manifest.get("schema_fingerprint") != schema.fingerprint():
        return (f"the tables' schema version changed ({manifest.get('schema_version')} -> "
                f"{schema.SCHEMA_VERSION})")
    if manifest.get("code_fingerprint") != code_fingerprint():
        return f"roofreport's readers changed within version {__version__} (a development install)"
    return None


@cache
def code_fingerprint() -> str:
    """A hash of roofreport's code and grammars: a development install whose readers change
    without a new version number reads everything again too (~1 MB hashed, a few ms)."""
    package = Path(__file__).resolve().parent.parent
    hasher = hashlib.blake2b(digest_size=12)
    for path in sorted([*package.rglob("*.py"), *data_dir("grammars").rglob("*.lark")]):
        hasher.update(path.name.encode())
        hasher.update(path.read_bytes())
    return hasher.hexdigest()


def _read_changes(found, previous: _Previous | None, report: UpdateReport, exclude, jobs, executor,
                  progress) -> tuple[list[FileFacts], list[int | None], dict[int, dict[str, pl.DataFrame]]]:
    """Every file's facts (kept ones, or read again), its mtime, and the rows of the files
    read now."""
    tasks = file_tasks(found, exclude, fingerprint=True)
    facts: list[FileFacts | None] = [None] * len(found)
    stats: list[os.stat_result | None] = [None] * len(found)
    to_read = []
    scanned_at = previous.manifest.get("scanned_at_ns", 0) if previous else 0
    for i, task in enumerate(tasks):
        stats[i] = _stat(task.path)
        before = previous.files.get(task.display) if previous else None
        if task.excluded is not None:
            facts[i] = read_one(task).facts
            if before is not None and not json.loads(before["facts"]).get("excluded"):
                report.changed += 1
            continue
        if before is None:
            report.new += 1
        elif _unchanged(before, stats[i], task.path, scanned_at):
            facts[i] = FileFacts.from_json(before["facts"])
            report.unchanged += 1
            continue
        else:
            report.changed += 1
        to_read.append(i)
    reads = read_all([tasks[i] for i in to_read], progress=progress, jobs=jobs, executor=executor)
    rows = {}
    for i, read in zip(to_read, reads):
        facts[i], rows[i] = read.facts, read.tables
    report.read = len(to_read)
    report.files = len(found)
    if previous:
        present = {task.display for task in tasks}
        report.gone = sum(1 for display in previous.files if display not in present)
    return facts, [stat.st_mtime_ns if stat else None for stat in stats], rows


def _unchanged(before: dict, stat: os.stat_result | None, path: str, scanned_at: int) -> bool:
    """The file is as the last update read it: same size and mtime, or (same size, another
    mtime, or an mtime too close to the last scan) the same bytes. A file whose reader's
    process crashed last time is read again."""
    if stat is None or before["size"] != stat.st_size:
        return False
    facts = json.loads(before["facts"])
    if facts.get("excluded") or (not facts.get("parsed") and facts.get("error")):
        return False
    racy = before["mtime_ns"] is None or before["mtime_ns"] >= scanned_at - RACY_NS
    if before["mtime_ns"] == stat.st_mtime_ns and not racy:
        return True
    return before["content_hash"] is not None and duplicates.file_digest(Path(path)) == before["content_hash"]


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


# -- writing a generation ----------------------------------------------------------------------

@dataclass
class _Batch:
    id: str
    members: list[int]
    rows_key: str = ""
    key: str = ""
    kernel_runs: pl.DataFrame | None = None
    parts: dict[str, list[pl.DataFrame]] | None = None   # its files' rows with their runs, when loaded
    tables: list[str] = field(default_factory=list)


def _write_generation(target: Path, found, facts: list[FileFacts], mtimes: list[int | None],
                      rows: dict[int, dict], previous: _Previous | None, report: UpdateReport,
                      finish_runs: FinishRuns | None) -> tuple[dict, list[FileOutcome]]:
    """Write the new generation's files into `target`; return what the manifest lists, and
    every file's outcome."""
    plan = assemble.plan_runs(found, facts)
    batches = batches_of([f.display for f in facts])
    for batch in batches:
        batch.rows_key = _key([(facts[i].display, facts[i].content_hash, facts[i].parsed,
                                assemble.run_of(plan, i)) for i in batch.members])
        before = previous.batches.get(batch.id) if previous else None
        if before is not None and before["rows_key"] == batch.rows_key:
            batch.kernel_runs = pl.DataFrame(before["kernel_runs"], schema=_KERNEL_RUNS, orient="row")
        else:
            batch.parts = _load_parts(batch, facts, rows, plan, previous)
            batch.kernel_runs = _kernel_runs(batch.parts["kernels"])
            _add_gpu_facts(batch, facts)
    runs_of_kernels = pl.concat([b.kernel_runs for b in batches]) if batches else pl.DataFrame(schema=_KERNEL_RUNS)
    families = assemble.resolve_families(runs_of_kernels, facts)
    entries = []
    for batch in batches:
        batch.key = _key([batch.rows_key, [families.get(facts[i].display) for i in batch.members]])
        before = previous.batches.get(batch.id) if previous else None
        if before is not None and before["key"] == batch.key:
            batch.tables = before["tables"]
            _link_batch(previous, target, batch)
            report.batches_kept += 1
        else:
            if batch.parts is None:
                batch.parts = _load_parts(batch, facts, rows, plan, previous)
            _write_batch(target, batch, families)
            report.batches_written += 1
        entries.append({"id": batch.id, "files": len(batch.members),
                        "logs": sum(1 for i in batch.members if facts[i].parsed), "rows_key": batch.rows_key,
                        "key": batch.key, "tables": batch.tables,
                        "kernel_runs": batch.kernel_runs.rows()})
        batch.parts = None
    outcomes = assemble.outcomes(facts, plan)
    tables = {name: [f"{name}/batch={b.id}/{PART}" for b in batches if name in b.tables]
              for name in schema.PARSED_TABLES}
    tables.update(runs=[f"runs/{PART}"], files=[f"files/{PART}"])
    written = _lazy_tables(target, {"tables": tables})
    written["runs"] = assemble.runs_table(plan, facts)
    written["files"] = assemble.files_table(outcomes)
    if finish_runs is not None:   # the run totals (computed by the analysis layer: api.read)
        written["runs"] = finish_runs(written)
    _write_table(target / "runs" / PART, written["runs"])
    _write_table(target / "files" / PART, written["files"])
    _write_files_manifest(target, facts, mtimes, batches)
    return {"batches": entries, "tables": tables}, outcomes


def _add_gpu_facts(batch: _Batch, facts: list[FileFacts]) -> None:
    """The GPU facts of the batch's files from its rows (the files read now have none yet)."""
    if batch.parts["kernels"]:
        metrics = batch.parts["metrics"][0] if batch.parts["metrics"] else schema.empty("metrics")
        assemble.add_gpu_facts([facts[i] for i in batch.members], batch.parts["kernels"][0], metrics)


def _kernel_runs(kernels: list[pl.DataFrame]) -> pl.DataFrame:
    """`assemble.kernel_runs` of a batch's kernels (one frame, in file order)."""
    if not kernels:
        return pl.DataFrame(schema=_KERNEL_RUNS)
    return distinct_rows(kernels[0], ["source_file", "run"])


def batches_of(displays: list[str]) -> list[_Batch]:
    """Consecutive files cut into batches where a folder or file name says so (see the module
    docstring), so the cuts stay put when files come and go elsewhere."""
    batches: list[_Batch] = []
    folder_before = None
    for i, display in enumerate(displays):
        folder = os.path.dirname(display)
        new_folder = folder != folder_before
        if not batches or (new_folder and _hash(folder) % DIRS_PER_BATCH == 0) \
                or _hash(display) % FILES_PER_BATCH == 0:
            batch_id = f"b{_hash(display):012x}"[:13]
            while any(b.id == batch_id for b in batches[-2:]):  # the same path given twice
                batch_id += "x"
            batches.append(_Batch(batch_id, []))
        batches[-1].members.append(i)
        folder_before = folder
    return batches


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=6).digest(), "big")


def _key(value) -> str:
    return hashlib.blake2b(json.dumps(value, separators=(",", ":")).encode(), digest_size=16).hexdigest()


def _load_parts(batch: _Batch, facts: list[FileFacts], rows: dict[int, dict], plan,
                previous: _Previous | None) -> dict[str, list[pl.DataFrame]]:
    """The batch's rows with their runs, in file order, one frame per table: each file's rows
    read now, or kept in the previous generation. Files are put in order and given their runs
    a table at a time, not file by file: a batch holds tens of files."""
    members = [i for i in batch.members if facts[i].parsed]
    pieces: dict[str, list[pl.DataFrame]] = {name: [] for name in schema.PARSED_TABLES}
    for name, frames in _kept_rows([facts[i].display for i in members if i not in rows], previous).items():
        pieces[name] += frames
    for i in members:
        for name, frame in rows.get(i, {}).items():
            pieces[name].append(frame)
    order = {facts[i].display: n for n, i in enumerate(members)}
    return {name: [_with_runs(_in_order(frames, order), members, facts, plan)] if frames else []
            for name, frames in pieces.items()}


def _in_order(frames: list[pl.DataFrame], order: dict[str, int]) -> pl.DataFrame:
    """The frames' rows with the files in batch order (each file's rows keep theirs)."""
    frame = frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical")
    position = frame["source_file"].replace_strict(order, return_dtype=pl.UInt32)
    if position.is_sorted():
        return frame
    return frame.with_columns(position.alias("__order")).sort("__order", maintain_order=True).drop("__order")


def _with_runs(frame: pl.DataFrame, members: list[int], facts: list[FileFacts], plan) -> pl.DataFrame:
    """`assemble.with_run` for every file of the frame (a file's run, looked up per row; a log
    of several profiler sessions, file by file)."""
    if not any(i in plan.session_runs for i in members):
        runs = {facts[i].display: plan.file_run[i] for i in members}
        return frame.with_columns(pl.col("source_file").replace_strict(runs, return_dtype=pl.String).alias("run"))
    index = {facts[i].display: i for i in members}
    files = frame.partition_by("source_file", maintain_order=True, as_dict=True)
    return pl.concat([assemble.with_run(rows, plan, index[display]) for (display,), rows in files.items()])


def _kept_rows(displays: list[str], previous: _Previous | None) -> dict[str, list[pl.DataFrame]]:
    """table -> the rows of these files, one frame per batch of the previous generation that
    holds some: its published tables (their `run` is set again), and its kernels as they were
    before enrichment."""
    if not displays:
        return {}
    if previous is None:
        raise RoofreportError("internal: rows of kept files without a previous dataset")
    by_batch: dict[str, list[str]] = {}
    for display in displays:
        by_batch.setdefault(previous.files[display]["batch"], []).append(display)
    out: dict[str, list[pl.DataFrame]] = {}
    for batch_id, members in by_batch.items():
        everything = len(members) == previous.batches[batch_id]["logs"]   # (a subset of them)
        for name in previous.batches[batch_id]["tables"]:
            frame = pl.read_parquet(previous.path(_raw_file(name, batch_id)))
            if not everything:
                frame = frame.filter(pl.col("source_file").is_in(members))
            out.setdefault(name, []).append(frame)
    return out


def _write_batch(target: Path, batch: _Batch, families: dict[str, str]) -> None:
    """The batch's tables; and its kernels before enrichment (enrichment fills columns from
    the metrics and the run's GPU: the next update enriches them again, maybe differently)."""
    raw = assemble.concat_parts(batch.parts)
    tables = assemble.finish(raw, families)
    raw_kernels = raw["kernels"]
    batch.tables = [name for name in schema.PARSED_TABLES if tables[name].height]
    for name in batch.tables:
        _write_table(target / name / f"batch={batch.id}" / PART, tables[name])
    if raw_kernels.height:
        _write_table(target / _raw_file("kernels", batch.id), raw_kernels, cache=True)


def _raw_file(name: str, batch_id: str) -> str:
    """Where a batch's rows of `name` are kept as they were read (with a `run` set again)."""
    return f"{CACHE}/{name}/batch={batch_id}/{PART}" if name == "kernels" else f"{name}/batch={batch_id}/{PART}"


def _link_batch(previous: _Previous, target: Path, batch: _Batch) -> None:
    for name in batch.tables:
        for relative in {f"{name}/batch={batch.id}/{PART}", _raw_file(name, batch.id)}:
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(previous.path(relative), destination)
            except OSError:  # a filesystem without hard links
                shutil.copy2(previous.path(relative), destination)


def _write_table(path: Path, frame: pl.DataFrame, cache: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path, row_group_size=PARQUET_ROW_GROUP_ROWS,
                        compression="lz4" if cache else "zstd")


def _write_files_manifest(target: Path, facts: list[FileFacts], mtimes: list[int | None],
                          batches: list[_Batch]) -> None:
    batch_of = {i: b.id for b in batches for i in b.members}
    frame = pl.DataFrame({
        "path": [f.display for f in facts],
        "size": [f.size for f in facts],
        "mtime_ns": mtimes,
        "content_hash": [f.content_hash for f in facts],
        "batch": [batch_of.get(i) for i in range(len(facts))],
        "facts": [f.to_json() for f in facts],
    }, schema={"path": pl.String, "size": pl.Int64, "mtime_ns": pl.Int64, "content_hash": pl.String,
               "batch": pl.String, "facts": pl.String})
    _write_table(target / FILES_MANIFEST, frame)


def _read_files_manifest(generation: Path) -> dict[str, dict]:
    """display -> its row of the files manifest (as a dict)."""
    columns = pl.read_parquet(generation / FILES_MANIFEST).to_dict(as_series=False)
    names = list(columns)
    return {row[0]: dict(zip(names, row)) for row in zip(*columns.values())}


# -- the manifest, the switch, the clean-up ----------------------------------------------------

def _manifest(generation: str, previous: _Previous | None, paths: list[Path], exclude, written: dict,
              scanned_at: int) -> dict:
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "roofreport_version": __version__, "schema_version": schema.SCHEMA_VERSION,
        "schema_fingerprint": schema.fingerprint(), "code_fingerprint": code_fingerprint(),
        "generation": generation, "previous": previous.generation if previous else None,
        "scanned_at_ns": scanned_at, "inputs": [str(p) for p in paths], "exclude": list(exclude),
        "files_manifest": FILES_MANIFEST, **written,
    }


def _load_manifest(folder: Path) -> dict | None:
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RoofreportError(f"cannot read {path}: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise UsageError(f"{path} is not a roofreport dataset manifest")
    return manifest


def _switch(folder: Path, manifest: dict) -> None:
    """The one atomic step that makes the new generation the dataset; then the `current`
    link other tools read through (best effort: the manifest is what counts)."""
    with atomic_path(folder / MANIFEST) as tmp:
        tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    link = folder / CURRENT
    temporary = folder / f".{CURRENT}.{os.getpid()}"
    try:
        if temporary.is_symlink():
            temporary.unlink()
        os.symlink(manifest["generation"], temporary, target_is_directory=True)
        os.replace(temporary, link)
    except OSError:
        pass


def _next_generation(folder: Path) -> str:
    numbers = [int(p.name[len(_GENERATION):]) for p in folder.glob(f"{_GENERATION}*")
               if p.name[len(_GENERATION):].isdigit()]
    return f"{_GENERATION}{max(numbers, default=0) + 1:06d}"


def _clean(folder: Path, keep: set) -> None:
    """Remove generations that are neither in use nor the previous one (older ones, those of
    interrupted updates)."""
    for path in folder.glob(f"{_GENERATION}*"):
        if path.name not in keep and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def _outside(found: list[tuple[Path, Path]], folder: Path, paths: list[Path]) -> list[tuple[Path, Path]]:
    """The files found that are not the dataset's own (a dataset folder inside a logs folder)."""
    inside = folder.resolve()
    if not any(inside.is_relative_to(Path(p).resolve()) for p in paths):
        return found
    return [(path, root) for path, root in found if not path.resolve().is_relative_to(inside)]


@contextmanager
def _locked(folder: Path):
    """One update of a folder at a time (an advisory lock where the platform has one)."""
    try:
        import fcntl
    except ImportError:  # no advisory locks here
        yield
        return
    with open(folder / ".lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UsageError(f"another update of {folder} is running") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
