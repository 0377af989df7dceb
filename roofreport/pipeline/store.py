"""An incremental dataset folder: the shared tables as partitioned Parquet, kept up to date.

`prepare_update(paths, folder)` (`roofreport parse LOGS -o DIR --update`, `roofreport.read(LOGS,
dataset=DIR)`) reads only the files that are new or changed since the last update (their rows
spooled to disk a batch at a time: `spool.py`), drops the rows of files that are gone, groups
runs again over every file (from the facts kept per file: grouping works across the files of a
folder, so one changed file can move other files' runs) and rewrites only the batches of files
whose rows changed. The runs table's totals are the model's: the `Pending` update is read by
it (`model/batches.py`, from each batch's partials) and `Pending.commit(runs)` writes them and
switches to the new generation. The tables equal those of a fresh read of the same logs. `open_dataset(folder)` (`roofreport.read(DIR)`) gives a `Dataset` whose
tables are scanned lazily.

The folder (README: "Incremental datasets"):

    DIR/manifest.json                    versions, the generation in use, its files per table
    DIR/current -> gen-000007            the generation in use, for other tools
    DIR/gen-000007/kernels/batch=b1c9e0f3a2d4/part.parquet   (one folder per table and batch)
    DIR/gen-000007/runs/part.parquet, files/part.parquet
    DIR/gen-000007/manifest-files.parquet   per file: path, size, mtime, content hash, batch, facts
    DIR/gen-000007/cache/kernels/batch=.../part.parquet   each batch's kernels before
                                                          enrichment, for the next update

This module owns the folder as a whole: recognising and opening it, deciding which files to
read again (size, mtime, content hash, the limits each was read under, the versions in
`manifest.json`), the lock, the atomic switch to a new generation and the clean-up of old ones. Writing a generation's files (the
batches, their rows, the hard links, the per-file manifest) is `generation.py`'s.

A batch is a run of consecutive folders in the walk's order (`generation.batches_of`), cut
where a folder or file name says so (the path below the logs' anchor: the same wherever the logs
lie), so a new folder or file changes its own batch only. An update writes a new generation
(unchanged batches are hard links to the previous one's files), then replaces `manifest.json`
in one atomic rename: an update that is interrupted leaves the previous dataset as it was,
readable. The previous generation is kept for readers still scanning it; older ones, and
those of interrupted updates, are removed by the next update.

A change of roofreport's version, of the tables' schema (`schema.SCHEMA_VERSION`,
`schema.fingerprint`), of its code and data tables (a development install) or of what the user
says of the GPU (`--gpu`, `--peaks` and the peaks file's contents: every run's GPU and totals
may change) reads everything again, with a message saying why.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import polars as pl

from roofreport.errors import RoofreportError, UsageError
from roofreport.families.common.limits import Limits
from roofreport.gpu import NO_SETTINGS, GpuSettings
from roofreport.pipeline import assemble, duplicates
from roofreport.pipeline.dataset import Dataset
from roofreport.pipeline.discover import discover, walk
from roofreport.pipeline.facts import FileFacts
from roofreport.pipeline.generation import (
    FILES_MANIFEST,
    PART,
    Previous,
    batch_names,
    batches_of,
    derived_file,
    generation_tables,
    lazy_tables,
    read_files_manifest,
    write_generation,
    write_runs,
)
from roofreport.pipeline.generation import one_batch as cuts_in_one_batch
from roofreport.pipeline.ingest import Progress, file_tasks, read_each, read_one
from roofreport.pipeline.spool import SPOOL, Spool
from roofreport.pipeline.tasks import FileTask
from roofreport.resources import data_dir
from roofreport.tables.lazy import LazyTables
from roofreport.tables import schema
from roofreport.tables.output import atomic_path
from roofreport.version import __version__

MANIFEST = "manifest.json"
FORMAT = "roofreport-dataset"
FORMAT_VERSION = 1
CURRENT = "current"
# A file changed this close to the last update's scan may have changed again within the same
# mtime tick: its bytes are hashed rather than trusted to its size and mtime (as git does).
RACY_NS = 2_000_000_000
_GENERATION = "gen-"


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


# -- recognising and opening -----------------------------------------------------------------

def one_batch(paths: list[Path]) -> bool:
    """The files under `paths` (none a dataset folder) make at most one batch
    (`generation.batches_of`, as an update would cut them): a dataset folder of them would hold
    all their rows at once all the same, so a read in memory bounds nothing less."""
    if any(path.is_dir() and is_dataset(path) for path in paths):
        return False
    return cuts_in_one_batch(walk(paths))     # (the walk stops where a second batch opens)


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
    tables = lazy_tables(generation, manifest)
    runs = {path: (run, family) for path, run, family in tables["files"].select("path", "run", "gpu_family").iter_rows()}
    outcomes = [assemble.outcome(FileFacts.from_json(row["facts"]), *runs.get(display, (None, None)))
                for display, row in read_files_manifest(generation).items()]
    return Dataset(tables=tables, files=outcomes, inputs=[Path(p) for p in manifest["inputs"]],
                   gpu=_settings(manifest), generation=generation)


def derived_files(generation: Path, name: str) -> list[Path] | None:
    """What a layer above derived from each batch's rows (`Pending.derived_file`) in a dataset
    folder's generation in use, one file per batch; None when a batch has none."""
    manifest = _load_manifest(generation.parent)
    if manifest is None or manifest.get("generation") != generation.name:
        return None
    paths = [generation / derived_file(entry["id"], name) for entry in manifest["batches"]]
    return paths if all(path.is_file() for path in paths) else None


def _settings(manifest: dict) -> GpuSettings:
    """The GPU settings a dataset was read with."""
    peaks = manifest.get("peaks")
    return GpuSettings(gpu=manifest.get("gpu"), peaks=Path(peaks) if peaks else None)


# -- updating ----------------------------------------------------------------------------------

@dataclass
class Pending:
    """An update written but not yet switched to (`prepare_update`): the new generation's
    tables, readable batch by batch, for the layers above to derive from before `commit`
    makes it the dataset. Until then the previous generation stays the dataset, and the
    folder stays locked; `close` (or leaving the `with` block) without a commit leaves the
    new generation for the next update to remove."""

    folder: Path
    generation: str
    manifest: dict
    runs: pl.DataFrame                  # the runs the pipeline found (no run totals)
    files: pl.DataFrame
    batches: list[dict]                 # the manifest's batch entries (id, runs, tables, key)
    written: set[str]                   # ids of the batches written now (the others are linked)
    touched: set[str] | None            # runs whose rows or row changed (None: every run)
    previous: Previous | None
    dataset: Dataset
    report: UpdateReport
    lock: ExitStack                     # the folder's lock, held until `close`
    started: float = 0.0                # when the update began (`time.perf_counter`)
    committed: bool = False

    def tables(self, batch_ids: list[str] | None = None) -> LazyTables:
        """The new generation's tables (of `batch_ids` only, when given), scanned lazily; the
        runs and files tables in memory."""
        tables = self.manifest["tables"] if batch_ids is None else \
            generation_tables([b for b in self.batches if b["id"] in set(batch_ids)])
        lazy = lazy_tables(self.path, {"tables": tables})
        lazy["runs"], lazy["files"] = self.runs, self.files
        return lazy

    @property
    def path(self) -> Path:
        return self.folder / self.generation

    def derived_file(self, batch_id: str, name: str) -> Path:
        """Where a layer above keeps what it derived from one batch's rows alone (`name`):
        kept with the batch, linked into the next generation while its rows are unchanged."""
        return self.path / derived_file(batch_id, name)

    def batch_ids(self) -> list[str]:
        return [entry["id"] for entry in self.batches]

    def previous_runs(self) -> pl.DataFrame | None:
        """The runs table of the generation this one follows, or None."""
        return None if self.previous is None else pl.read_parquet(self.previous.path(f"runs/{PART}"))

    def commit(self, runs: pl.DataFrame) -> Dataset:
        """Write `runs` (this update's runs with their totals) and make this generation the
        dataset in one atomic switch; the Dataset, opened."""
        write_runs(self.path, runs)
        _switch(self.folder, self.manifest)
        _clean(self.folder, keep={self.generation, self.previous.generation if self.previous else None})
        self.committed = True
        self.report.seconds = time.perf_counter() - self.started
        return self.dataset

    def close(self) -> None:
        """Release the folder's lock (an uncommitted generation is left for the next update
        to remove)."""
        self.lock.close()

    def __enter__(self) -> Pending:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def prepare_update(paths: list[Path], folder: Path, *, exclude: tuple[str, ...] = (), jobs: int | None = None,
                   executor: str | None = None, progress: Progress | None = None, limits: Limits = Limits(),
                   settings: GpuSettings = NO_SETTINGS) -> Pending:
    """Bring the dataset in `folder` up to date with the logs under `paths` (see the module
    docstring): read what changed and write the new generation, but for its run totals; the
    `Pending` update holds the folder's lock until closed, and `Pending.commit(runs)` makes it
    the dataset (`roofreport.read(paths, dataset=DIR)` derives the totals from it: the
    pipeline never computes them). `settings`: what the user says of the GPU."""
    started = time.perf_counter()
    folder = Path(folder)
    _check_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    lock = ExitStack()
    lock.enter_context(_locked(folder))
    try:
        report = UpdateReport()
        previous = _previous(folder, report, settings)
        found = _outside(discover(paths), folder, paths)
        anchored = _anchors(_load_manifest(folder), [root for _, root in found])
        scanned_at = time.time_ns()
        generation = _next_generation(folder)
        facts, mtimes, spool = _read_changes(found, previous, report, exclude, jobs, executor, progress,
                                             limits, folder / generation / SPOOL, anchored)
        try:
            written = write_generation(folder / generation, found, facts, mtimes, spool, previous, settings,
                                       anchored)
        finally:
            spool.remove()
        report.batches_written, report.batches_kept = written.batches_written, written.batches_kept
        manifest = _manifest(generation, previous, paths, exclude, written.manifest, scanned_at, settings)
        manifest["anchors"] = {os.path.abspath(root): os.path.abspath(anchor) for root, anchor in anchored.items()}
        # (as `open_dataset` would give it, from what is at hand)
        dataset = Dataset(tables=lazy_tables(folder / generation, manifest), files=written.outcomes,
                          inputs=list(paths), gpu=settings, generation=folder / generation)
        dataset.update_report = report
        return Pending(folder, generation, manifest, written.runs, written.files, written.manifest["batches"],
                       written.rewritten, written.touched, previous, dataset, report, lock, started)
    except BaseException:
        lock.close()
        raise


def _anchors(manifest: dict | None, roots: list[Path]) -> dict[Path, Path]:
    """The folder each input root's run ids are relative to: the one the dataset recorded for it
    (read even from a stale manifest: the ids must outlive a re-read), else, in a dataset written
    before anchors were recorded, the root itself (its ids as they were), else the folder that
    governs it (`assemble.anchors`)."""
    computed = assemble.anchors(roots)
    if manifest is None:
        return computed
    recorded = manifest.get("anchors")
    if not isinstance(recorded, dict):
        return {root: root for root in computed}
    return {root: Path(recorded.get(os.path.abspath(root), anchor)) for root, anchor in computed.items()}


def _check_folder(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} exists and is not a folder")
    if (folder / "kernels.parquet").exists() and not is_dataset(folder):
        raise UsageError(f"{folder} holds the tables of a plain `roofreport parse`; give --update "
                         "a folder of its own")


def _previous(folder: Path, report: UpdateReport, settings: GpuSettings) -> Previous | None:
    manifest = _load_manifest(folder)
    if manifest is None:
        report.full = True
        return None
    stale = _stale(manifest)
    if stale is None and manifest.get("gpu_settings") != settings.fingerprint():
        stale = "the GPU settings (--gpu, --peaks) changed"
    if stale:
        report.full = True
        report.messages.append(f"{stale} since the dataset was written: every file is read again")
        return None
    generation = manifest["generation"]
    files = read_files_manifest(folder / generation)
    return Previous(folder, generation, manifest, files, {b["id"]: b for b in manifest["batches"]})


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
    """A hash of roofreport's code, grammars and data tables (GPU database, kernel categories:
    kept batches carry their enrichment and kept runs their totals): a development install
    whose readers change without a new version number reads everything again too (~1 MB
    hashed, a few ms)."""
    package = Path(__file__).resolve().parent.parent
    hasher = hashlib.blake2b(digest_size=12)
    for path in sorted([*package.rglob("*.py"), *(package / "data").glob("*.tsv"),
                        *data_dir("grammars").rglob("*.lark")]):
        hasher.update(path.name.encode())
        hasher.update(path.read_bytes())
    return hasher.hexdigest()


def _read_changes(found, previous: Previous | None, report: UpdateReport, exclude, jobs, executor,
                  progress, limits: Limits, spool_folder: Path,
                  anchored: dict[Path, Path]) -> tuple[list[FileFacts], list[int | None], Spool]:
    """Every file's facts (kept ones, or read again), its mtime, and the rows of the files
    read now, spooled to disk a batch at a time (`spool.py`; the batches `write_generation`
    cuts with the same `anchored`)."""
    tasks = file_tasks(found, exclude, fingerprint=True, limits=limits)
    facts: list[FileFacts | None] = [None] * len(found)
    stats: list[os.stat_result | None] = [None] * len(found)
    to_read = []
    scanned_at = previous.manifest.get("scanned_at_ns", 0) if previous else 0
    relimited = 0
    for index, task in enumerate(tasks):
        stats[index] = _stat(task.path)
        before = previous.files.get(task.display) if previous else None
        if task.excluded is not None:
            facts[index] = read_one(task).facts
            if before is not None and not json.loads(before["facts"]).get("excluded"):
                report.changed += 1
            continue
        if before is None:
            report.new += 1
        elif _other_limits(before, task):
            relimited += 1
            report.changed += 1
        elif _unchanged(before, stats[index], task.path, scanned_at):
            facts[index] = FileFacts.from_json(before["facts"])
            report.unchanged += 1
            continue
        else:
            report.changed += 1
        to_read.append(index)
    if relimited:
        report.messages.append(f"{relimited} files were read under other limits: they are read again")
    cut = batches_of([task.display for task in tasks], batch_names(found, anchored))
    batch_of = {index: batch.id for batch in cut for index in batch.members}
    expected: dict[str, int] = {}
    for index in to_read:
        expected[batch_of[index]] = expected.get(batch_of[index], 0) + 1
    spool = Spool(spool_folder, batch_of, expected)
    # (in the walk's order, so each batch's rows leave memory once its files are read)
    # (closed on the way out, whatever stops it: Ctrl-C between two files stops the workers now)
    with closing(read_each([tasks[index] for index in to_read], progress=progress, jobs=jobs,
                           executor=executor, largest_first=False)) as reads:
        for position, read in reads:
            index = to_read[position]
            facts[index] = read.facts.compact()   # (kept for every file until runs are grouped)
            spool.add(index, read.tables)
            read.tables = {}
    report.read = len(to_read)
    report.files = len(found)
    if previous:
        present = {task.display for task in tasks}
        report.gone = sum(1 for display in previous.files if display not in present)
    return facts, [stat.st_mtime_ns if stat else None for stat in stats], spool


def _other_limits(before: dict, task: FileTask) -> bool:
    """The file was read under other limits than it is now (options, a roofreport.toml's
    [limits]): it is read again, as one that failed past a limit may read now and one read
    whole may not."""
    return json.loads(before["facts"]).get("limits") != task.limits.as_dict()


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


# -- the manifest, the switch, the clean-up ----------------------------------------------------

def _manifest(generation: str, previous: Previous | None, paths: list[Path], exclude, written: dict,
              scanned_at: int, settings: GpuSettings) -> dict:
    return {
        "gpu": settings.gpu, "peaks": str(settings.peaks) if settings.peaks else None,
        "gpu_settings": settings.fingerprint(),
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
    try:
        handle = open(folder / ".lock", "w")  # noqa: SIM115 - closed below, after the update
    except OSError as exc:
        raise UsageError(f"cannot update {folder}: {exc.strerror or exc}") from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UsageError(f"another update of {folder} is running") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
