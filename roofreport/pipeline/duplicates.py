"""Copies of one log: which files repeat another, and which of them is the original.

Course folders keep the same log more than once: files recovered from history
(`_deleted_in_history/`), `prev_out.*` copies, a backup beside its original, a log copied into a
second folder, the CSV part of a log cut out into `X.csv`, a spreadsheet re-save. Counted twice
they would double a run's time. A file is a copy of another when

* their bytes are identical;
* what was read from them is identical (every table, row for row, but where each row was read)
  and nothing says they are two executions (different job ids or process ids: counters such as
  `flop_count_sp` give the same numbers every time a program runs);
* two logs of one kind in one folder whose names say the same thing (`x.details.txt`,
  `x.details_base.txt`) and whose tables have the same rows, but for the units: two renderings
  of one profile, when nothing says two executions;
* or it is marked as a copy (a history folder, a `prev_`/`old_`/`.bak`/`~` name) and, history
  folders and markers taken away, has the path of an unmarked log of the same family.

The own files of the processes of one job are no copies, however alike: rocprof names each
process's by its id (`2293212_agent_info.csv`, `2293213_agent_info.csv`: the same agents on one
node).

Of a set of copies, the original is the file that is not in a history folder, has no copy
marker, is not named after another one of them (`X` before `X.csv`), is no spreadsheet re-save,
lies shallowest, says most about its run, and keeps its job id; the others are its duplicates.
"""

from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath

import polars as pl

from roofreport.pipeline import identity

# Columns that say where a row was read, not what it says.
_PLACE_COLUMNS = ("run", "source_file", "source_line", "launch_id")


@dataclass
class Candidate:
    """A parsed file as the duplicate check sees it."""

    index: int
    path: Path
    rel: PurePosixPath
    size: int
    family: str
    variant: str = ""
    name_key: tuple = ()    # what the name says (pipeline/identity.py)
    tables: dict = field(default_factory=dict)
    richness: int = 0       # how much the log says about its run (command, device...)
    job: str | None = None  # the job id in its name
    process_id: int | None = None
    # Known beforehand (an incremental dataset keeps them instead of the rows and bytes):
    shape: tuple | None = None          # (table, rows) per table with rows, sorted
    tables_digest: str | None = None    # `tables_digest(tables)`
    content_hash: str | None = None     # `file_digest(path)`


@cache
def _patterns() -> dict[str, re.Pattern]:
    return {
        "history_dir": re.compile(
            r"_*(?:deleted_in_history|deleted|history|backups?|bak|old|previous|prev|archived?|"
            r"trash|obsolete|attic|superseded)_*", re.I),
        "copy_prefix": re.compile(r"^(?:prev|previous|old|bak|backup|copy(?:[ _]of)?)[ _.-]+", re.I),
        "copy_suffix": re.compile(
            r"(?:[ _.-](?:copy|bak|backup|old|orig)|~| \(\d+\)|[ _-]copy[ _-]?\d+)$", re.I),
    }


def find(candidates: list[Candidate]) -> dict[int, int]:
    """index -> index of the original, for every file that copies another."""
    groups = _Groups()
    _same_bytes(candidates, groups)
    _same_tables(candidates, groups)
    _same_name_and_shape(candidates, groups)
    _same_marked_name(candidates, groups)
    by_index = {c.index: c for c in candidates}
    duplicates = {}
    for members in groups.sets():
        ranked = sorted((by_index[i] for i in members), key=lambda c: _rank(c, members, by_index))
        for copy in ranked[1:]:
            duplicates[copy.index] = ranked[0].index
    return duplicates


def in_history(rel: PurePosixPath) -> bool:
    """True when one of the folders of `rel` keeps old or deleted files."""
    return any(_patterns()["history_dir"].fullmatch(part) for part in rel.parts[:-1])


def bare_name(name: str) -> str:
    """The name without copy markers: `prev_out.x.741534` -> `out.x.741534`, `x.log.bak` -> `x.log`."""
    pats = _patterns()
    stem = pats["copy_prefix"].sub("", name)
    for suffix in (".bak", ".orig", ".old"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
    return pats["copy_suffix"].sub("", stem)


def marked(rel: PurePosixPath) -> bool:
    return bare_name(rel.name) != rel.name


def _rank(candidate: Candidate, members: set[int], by_index: dict[int, Candidate]) -> tuple:
    others = [by_index[i] for i in members if i != candidate.index]
    derived = any(o.rel.parent == candidate.rel.parent and candidate.rel.name.startswith(o.rel.name)
                  and candidate.rel.name != o.rel.name for o in others)
    resaved = "re-save" in candidate.variant
    return (in_history(candidate.rel), marked(candidate.rel), derived, resaved, len(candidate.rel.parts),
            -candidate.richness, candidate.job is None, str(candidate.rel))


def _same_bytes(candidates: list[Candidate], groups: _Groups) -> None:
    by_size: dict[int, list[Candidate]] = {}
    for candidate in candidates:
        if candidate.size > 0:
            by_size.setdefault(candidate.size, []).append(candidate)
    for same_size in by_size.values():
        if len(same_size) > 1:
            _join_equal(same_size, _file_digest, groups, _not_per_process)


def _same_tables(candidates: list[Candidate], groups: _Groups) -> None:
    """Files whose tables hold the same rows (a log and the CSV cut out of it, a re-save)."""
    by_shape: dict[tuple, list[Candidate]] = {}
    for candidate in candidates:
        shape = _shape(candidate)
        if shape:
            by_shape.setdefault((candidate.family, shape), []).append(candidate)
    for same_shape in by_shape.values():
        if len(same_shape) > 1:
            _join_equal(same_shape, _tables_digest, groups,
                        lambda a, b: _same_execution(a, b) and _not_per_process(a, b))


def _same_name_and_shape(candidates: list[Candidate], groups: _Groups) -> None:
    """Two renderings of one profile: one folder, one kind, one name, the same rows per table."""
    by_name: dict[tuple, list[Candidate]] = {}
    for candidate in candidates:
        shape = _shape(candidate)
        if candidate.name_key and shape:
            key = (candidate.rel.parent, candidate.family, candidate.variant, candidate.name_key, shape)
            by_name.setdefault(key, []).append(candidate)
    for same in by_name.values():
        for index, candidate in enumerate(same):
            original = next((o for o in same[:index] if _same_execution(o, candidate)), None)
            if original is not None:
                groups.join(original.index, candidate.index)


def _shape(candidate: Candidate) -> tuple:
    if candidate.shape is not None:
        return candidate.shape
    return tuple(sorted((name, frame.height) for name, frame in candidate.tables.items() if frame.height))


def _same_marked_name(candidates: list[Candidate], groups: _Groups) -> None:
    """A marked copy (history folder, `prev_` name) of an unmarked log at its path."""
    originals: dict[tuple, list[Candidate]] = {}
    for candidate in candidates:
        if not in_history(candidate.rel) and not marked(candidate.rel):
            originals.setdefault((candidate.family, str(candidate.rel)), []).append(candidate)
    for candidate in candidates:
        if in_history(candidate.rel) or marked(candidate.rel):
            for original in originals.get((candidate.family, str(_bare_path(candidate.rel))), []):
                groups.join(candidate.index, original.index)


def _bare_path(rel: PurePosixPath) -> PurePosixPath:
    folders = [part for part in rel.parts[:-1] if not _patterns()["history_dir"].fullmatch(part)]
    return PurePosixPath(*folders, bare_name(rel.name))


def _same_execution(first: Candidate, second: Candidate) -> bool:
    """Nothing says these are two executions: no two different job ids or process ids."""
    return all(x is None or y is None or x == y
               for x, y in ((first.job, second.job), (first.process_id, second.process_id)))


def _not_per_process(first: Candidate, second: Candidate) -> bool:
    """Not the own files of two processes of one job: rocprof names each process's files by
    its id in one folder (`2293212_agent_info.csv`, `2293213_agent_info.csv`), and on one node
    the processes' agent info is the same, byte for byte (`identity.process_in_name`)."""
    if first.family != "rocm" or second.family != "rocm" or first.rel.parent != second.rel.parent:
        return True
    (one, named), (other, also) = (identity.process_in_name(c.rel.name) for c in (first, second))
    return one is None or other is None or one == other or named != also


def _join_equal(candidates: list[Candidate], digest, groups: _Groups, compatible=None) -> None:
    seen: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        key = digest(candidate)
        if key is None:
            continue
        for other in seen.setdefault(key, []):
            if compatible is None or compatible(other, candidate):
                groups.join(other.index, candidate.index)
                break
        else:
            seen[key].append(candidate)


def _file_digest(candidate: Candidate) -> str | None:
    return candidate.content_hash or file_digest(candidate.path)


def file_digest(path: Path) -> str | None:
    """A hash of the file's bytes (None when it cannot be read)."""
    hasher = hashlib.blake2b(digest_size=20)
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                hasher.update(chunk)
    except OSError:
        return None
    return hasher.hexdigest()


def _tables_digest(candidate: Candidate) -> str:
    return candidate.tables_digest or tables_digest(candidate.tables)


def tables_digest(tables: dict) -> str:
    """A hash of what was read: every table's rows, but for where each row was read."""
    hasher = hashlib.blake2b(digest_size=20)
    for name in sorted(tables):
        frame = tables[name]
        if not frame.height:
            continue
        content = frame.drop([c for c in _PLACE_COLUMNS if c in frame.columns])
        hasher.update(name.encode())
        hasher.update(",".join(content.columns).encode())
        # The row hashes' bytes through Arrow IPC: `to_numpy` would import numpy (0.1-1.5 s)
        # into a process that needs nothing else of it. The column's name ("h") is hashed with
        # the rows: renaming it would change every digest that datasets keep in their facts.
        buffer = io.BytesIO()
        pl.DataFrame({"h": content.hash_rows(seed=0)}).write_ipc(buffer, compression="uncompressed")
        hasher.update(buffer.getvalue())
    return hasher.hexdigest()


class _Groups:
    """Union-find over file indices."""

    def __init__(self) -> None:
        self._parent: dict[int, int] = {}

    def _root(self, index: int) -> int:
        self._parent.setdefault(index, index)
        while self._parent[index] != index:
            self._parent[index] = self._parent[self._parent[index]]
            index = self._parent[index]
        return index

    def join(self, first: int, second: int) -> None:
        self._parent[self._root(first)] = self._root(second)

    def sets(self) -> list[set[int]]:
        out: dict[int, set[int]] = {}
        for index in list(self._parent):
            out.setdefault(self._root(index), set()).add(index)
        return [members for members in out.values() if len(members) > 1]
