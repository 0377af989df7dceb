"""Writing one generation of a dataset folder (`store.py`): its batches, their rows, the links.

`write_generation` groups runs over every file's facts (their GPUs too, resolved from the facts),
cuts the files into batches (`batches_of`), and for each batch either hard-links the previous
generation's files (its files, their rows, their runs and their GPU families are as before) or
builds its tables again: the rows of the files read now, and those of the others read back from
the previous generation (the published tables, and the kernels as they were before enrichment,
kept in `cache/`), given their runs and enriched with their GPU families; what a layer above
derived from a kept batch's rows alone (`derived/batch=ID/`: the model's partials) is linked
with it. Then the files table, the per-file manifest, and which runs' rows or row changed. The
runs table is written last, with the totals the model derives (`store.Pending.commit`): the
pipeline computes none. Nothing here is seen before `store.py` switches the manifest to this
generation.

A batch is a run of consecutive files in the walk's order; a folder whose name hashes to a
multiple of `DIRS_PER_BATCH`, or a file whose name hashes to a multiple of `FILES_PER_BATCH`,
starts a new one: the cuts depend on names alone, so a new folder or file changes its own
batch only and the others are linked as they were. The names are the paths below the folder
the run ids are relative to (`batch_names`), so the same logs are cut alike wherever they lie.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

import polars as pl

from roofreport.errors import RoofreportError
from roofreport.gpu import NO_SETTINGS, GpuSettings
from roofreport.pipeline import assemble
from roofreport.pipeline.dataset import FileOutcome
from roofreport.pipeline.facts import FileFacts
from roofreport.pipeline.spool import Spool
from roofreport.tables import schema
from roofreport.tables.lazy import LazyTables
from roofreport.tables.output import PARQUET_ROW_GROUP_ROWS

FILES_MANIFEST = "manifest-files.parquet"
CACHE = "cache"
PART = "part.parquet"
DIRS_PER_BATCH = 4
FILES_PER_BATCH = 512
DERIVED = "derived"


@dataclass
class Previous:
    """The dataset as the last update left it."""

    folder: Path
    generation: str
    manifest: dict
    files: dict[str, dict]            # display -> its row of manifest-files.parquet
    batches: dict[str, dict]          # batch id -> its manifest entry

    def path(self, relative: str) -> Path:
        return self.folder / self.generation / relative


def lazy_tables(generation: Path, manifest: dict) -> LazyTables:
    """A generation's tables, each scanned lazily from its files."""
    return LazyTables({name: _scanner(generation, manifest["tables"].get(name, []), name) for name in schema.TABLES})


def _scanner(generation: Path, files: list[str], name: str):
    paths = [str(generation / f) for f in files]
    if not paths:
        return lambda: schema.empty(name).lazy()
    return lambda: pl.scan_parquet(paths, hive_partitioning=False, schema=schema.TABLES[name])


@dataclass
class _Batch:
    id: str
    members: list[int]
    rows_key: str = ""
    key: str = ""
    parts: dict[str, list[pl.DataFrame]] | None = None   # its files' rows with their runs, when loaded
    tables: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)         # the runs its rows belong to


@dataclass
class Written:
    """What `write_generation` wrote: the manifest's part, the files' outcomes, the batches."""

    manifest: dict
    outcomes: list[FileOutcome]
    batches_written: int = 0
    batches_kept: int = 0
    runs: pl.DataFrame | None = None      # the runs the pipeline found (no totals: `store.Pending`)
    files: pl.DataFrame | None = None
    rewritten: set[str] = field(default_factory=set)   # ids of the batches written now
    touched: set[str] | None = None       # runs whose rows or row changed (None: all, no previous)


def write_generation(target: Path, found, facts: list[FileFacts], mtimes: list[int | None],
                     rows: Spool, previous: Previous | None, settings: GpuSettings = NO_SETTINGS,
                     anchored: dict[Path, Path] | None = None) -> Written:
    """Write the new generation's files into `target` (see the module docstring), but for the
    runs table, whose totals the model derives (`store.Pending`). `rows`: the tables of the
    files read now (`spool.Spool`, by batch); `settings`: what the user says of the GPU;
    `anchored`: the folders the run ids are relative to (`assemble.plan_runs`)."""
    plan = assemble.plan_runs(found, facts, settings=settings, anchored=anchored)
    batches = batches_of([f.display for f in facts], batch_names(found, anchored))
    families = assemble.families(plan, facts)
    for batch in batches:
        # (a file's rows follow from its bytes, the limits it was read under and its run)
        batch.rows_key = _key([(facts[i].display, facts[i].content_hash, facts[i].limits, facts[i].parsed,
                                assemble.run_of(plan, i)) for i in batch.members])
    written = Written({}, assemble.outcomes(facts, plan))
    entries = []
    for batch in batches:
        batch.key = _key([batch.rows_key, [families.get(facts[i].display) for i in batch.members]])
        before = previous.batches.get(batch.id) if previous else None
        if before is not None and before["key"] == batch.key:
            batch.tables, batch.runs = before["tables"], before["runs"]
            _link_batch(previous, target, batch)
            written.batches_kept += 1
        else:
            if batch.parts is None:
                batch.parts = _load_parts(batch, facts, rows, plan, previous)
            _write_batch(target, batch, families)
            written.batches_written += 1
            written.rewritten.add(batch.id)
        entries.append({"id": batch.id, "files": len(batch.members),
                        "logs": sum(1 for i in batch.members if _holds_rows(facts[i])), "rows_key": batch.rows_key,
                        "key": batch.key, "tables": batch.tables, "runs": batch.runs})
        batch.parts = None
    tables = generation_tables(entries)
    runs, files = assemble.runs_table(plan, facts), assemble.files_table(written.outcomes)
    _write_table(target / "files" / PART, files)
    _write_files_manifest(target, facts, mtimes, batches)
    written.manifest = {"batches": entries, "tables": tables}
    written.runs, written.files = runs, files
    if previous is not None:
        written.touched = _touched_runs(runs, pl.read_parquet(previous.path(f"runs/{PART}")), previous, entries)
    return written


def generation_tables(entries: list[dict]) -> dict[str, list[str]]:
    """table -> its files in a generation of these batches (manifest entries)."""
    tables = {name: [f"{name}/batch={entry['id']}/{PART}" for entry in entries if name in entry["tables"]]
              for name in schema.PARSED_TABLES}
    tables.update(runs=[f"runs/{PART}"], files=[f"files/{PART}"])
    return tables


def write_runs(target: Path, runs: pl.DataFrame) -> None:
    """The runs table of the generation in `target`, with the totals the model derived."""
    _write_table(target / "runs" / PART, runs)


def derived_file(batch_id: str, name: str) -> str:
    """Where what a layer above derived from one batch's rows alone is kept (`store.Pending`)."""
    return f"{DERIVED}/batch={batch_id}/{name}.parquet"


def _touched_runs(runs: pl.DataFrame, before: pl.DataFrame, previous: Previous,
                  entries: list[dict]) -> set[str]:
    """The runs whose totals may differ from the previous generation's: those with rows in a
    batch written now or in a batch of the previous generation that is gone or rewritten (the
    rows of a run in kept batches only are the same files), and those whose row of the runs
    table is new or changed (regrouping, a GPU named again)."""
    kept_ids = {entry["id"] for entry in entries if previous.batches.get(entry["id"], {}).get("key") == entry["key"]}
    touched = {run for entry in entries if entry["id"] not in kept_ids for run in entry["runs"]}
    touched |= {run for batch_id, entry in previous.batches.items() if batch_id not in kept_ids
                for run in entry["runs"]}
    columns = ["run", *[name for name in runs.columns if name != "run" and name not in schema.RUN_TOTALS]]
    rows_before = {row[0]: row for row in before.select(columns).rows()}
    touched |= {row[0] for row in runs.select(columns).rows() if rows_before.get(row[0]) != row}
    return touched


def batches_of(displays: list[str], names: list[str]) -> list[_Batch]:
    """Consecutive files cut into batches where a folder or file name says so (see the module
    docstring), so the cuts stay put when files come and go elsewhere. `names` (`batch_names`:
    each file's path below its anchor) decide the cuts, so the same logs are cut alike wherever
    they lie, and with them what an update reads again and whether `parse` reads in memory;
    `displays` (the paths as found) name the batches."""
    batches: list[_Batch] = []
    for index, (display, opens) in enumerate(zip(displays, _opening(zip(displays, names, strict=True)))):
        if opens:
            batch_id = f"b{_hash(display):012x}"[:13]
            while any(b.id == batch_id for b in batches[-2:]):  # the same path given twice
                batch_id += "x"
            batches.append(_Batch(batch_id, []))
        batches[-1].members.append(index)
    return batches


def batch_names(found: list[tuple[Path, Path]], anchored: dict[Path, Path] | None = None) -> list[str]:
    """What `batches_of` cuts by: each file's path below the folder its run ids are relative to
    (`assemble.relative_names`)."""
    return assemble.relative_names(found, anchored)


def one_batch(found: Iterable[tuple[Path, Path]]) -> bool:
    """The files (file, input root) make at most one batch, as `batches_of` cuts them; `found`
    is read no further than the file that opens a second (a walk of a campaign stops there)."""
    name = assemble.relative_namer()
    opening = _opening((str(path), name(path, root)) for path, root in found)
    return not any(islice(opening, 1, None))


def _opening(files: Iterable[tuple[str, str]]) -> Iterator[bool]:
    """For each (display, name), in the walk's order, whether the file opens a batch: the first
    does; then a new folder whose name hashes to a multiple of DIRS_PER_BATCH, or a file whose
    name hashes to a multiple of FILES_PER_BATCH."""
    folder_before = None
    for index, (display, name) in enumerate(files):
        folder = os.path.dirname(display)
        new_folder = folder != folder_before
        yield index == 0 or (new_folder and _hash(os.path.dirname(name)) % DIRS_PER_BATCH == 0) \
            or _hash(name) % FILES_PER_BATCH == 0
        folder_before = folder


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=6).digest(), "big")


def _key(value) -> str:
    return hashlib.blake2b(json.dumps(value, separators=(",", ":")).encode(), digest_size=16).hexdigest()


def _load_parts(batch: _Batch, facts: list[FileFacts], rows: Spool, plan,
                previous: Previous | None) -> dict[str, list[pl.DataFrame]]:
    """The batch's rows with their runs, in file order, one frame per table: each file's rows
    read now, or kept in the previous generation. Files are put in order and given their runs
    a table at a time, not file by file: a batch holds tens of files."""
    members = [i for i in batch.members if _holds_rows(facts[i])]
    pieces: dict[str, list[pl.DataFrame]] = {name: [] for name in schema.PARSED_TABLES}
    for name, frames in _kept_rows([facts[i].display for i in members if i not in rows], previous).items():
        pieces[name] += frames
    if any(i in rows for i in members):
        for name, frame in rows.batch(batch.id).items():
            pieces[name].append(frame)
    order = {facts[index].display: n for n, index in enumerate(members)}
    return {name: [_with_runs(_in_order(frames, order), members, facts, plan)] if frames else []
            for name, frames in pieces.items()}


def _holds_rows(fact: FileFacts) -> bool:
    """The file's rows are in the tables: a log read (`parsed`), or a file that is none but
    gave rows (an estimates file: `pipeline/estimates.py`)."""
    return fact.parsed or bool(fact.rows)


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
        runs = {facts[i].display: plan.file_run.get(i) for i in members}
        return frame.with_columns(pl.col("source_file").replace_strict(runs, return_dtype=pl.String).alias("run"))
    index = {facts[i].display: i for i in members}
    files = frame.partition_by("source_file", maintain_order=True, as_dict=True)
    return pl.concat([assemble.with_run(rows, plan, index[display]) for (display,), rows in files.items()])


def _kept_rows(displays: list[str], previous: Previous | None) -> dict[str, list[pl.DataFrame]]:
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
    batch.runs = sorted({run for name in batch.tables for run in tables[name]["run"].unique().drop_nulls()})
    for name in batch.tables:
        _write_table(target / name / f"batch={batch.id}" / PART, tables[name])
    if raw_kernels.height:
        _write_table(target / _raw_file("kernels", batch.id), raw_kernels, cache=True)


def _raw_file(name: str, batch_id: str) -> str:
    """Where a batch's rows of `name` are kept as they were read (with a `run` set again)."""
    return f"{CACHE}/{name}/batch={batch_id}/{PART}" if name == "kernels" else f"{name}/batch={batch_id}/{PART}"


def _link_batch(previous: Previous, target: Path, batch: _Batch) -> None:
    derived = previous.path(f"{DERIVED}/batch={batch.id}")
    kept = [f"{DERIVED}/batch={batch.id}/{p.name}" for p in derived.glob("*.parquet")] if derived.is_dir() else []
    for name in batch.tables:
        kept += [f"{name}/batch={batch.id}/{PART}", _raw_file(name, batch.id)]
    for relative in dict.fromkeys(kept):
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
    columns = {"path": pl.String, "size": pl.Int64, "mtime_ns": pl.Int64, "content_hash": pl.String,
               "batch": pl.String, "facts": pl.String}
    # (a few thousand files at a time: a campaign's facts as JSON text, 1-2 KB a file, are
    # never all Python strings at once)
    frames = [pl.DataFrame({
        "path": [f.display for f in chunk],
        "size": [f.size for f in chunk],
        "mtime_ns": mtimes[start:start + _MANIFEST_CHUNK],
        "content_hash": [f.content_hash for f in chunk],
        "batch": [batch_of.get(i) for i in range(start, start + len(chunk))],
        "facts": [f.to_json() for f in chunk],
    }, schema=columns) for start in range(0, len(facts), _MANIFEST_CHUNK)
        for chunk in (facts[start:start + _MANIFEST_CHUNK],)]
    frame = pl.concat(frames, how="vertical", rechunk=False) if frames else pl.DataFrame(schema=columns)
    _write_table(target / FILES_MANIFEST, frame)


_MANIFEST_CHUNK = 4096


def read_files_manifest(generation: Path) -> dict[str, dict]:
    """display -> its row of the files manifest (as a dict)."""
    columns = pl.read_parquet(generation / FILES_MANIFEST).to_dict(as_series=False)
    names = list(columns)
    return {row[0]: dict(zip(names, row)) for row in zip(*columns.values())}
