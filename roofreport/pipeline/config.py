"""`roofreport.toml` beside the logs, and the files a user leaves out (`--exclude GLOB`).

A folder's `roofreport.toml` may hold:

    exclude = ["_deleted_in_history", "*.bak"]   # globs, relative to this file's folder

    [[run]]
    match = "a100/*/*"          # files this table is about (glob, relative to this folder)
    name = "A100 runs"          # optional: these files form one run with this id
    gpu = "A100-SXM4-40GB"      # optional identity: model, gpu, batch_size, learning_rate,
    batch_size = 64             #   experiment, precision, workers, optimizer, ... any other
    draft_bits = 4              #   key is a parameter of the run

    [limits]                    # optional: lower what one input may cost (never raise it:
    max_unpacked = "1G"         #   the toml travels with the untrusted logs); see
    max_unpacked_ratio = 20     #   roofreport/families/common/limits.py
    max_line = "256K"
    max_memory = "4G"

Globs use fnmatch (`*` also crosses `/`). A pattern excludes a file when it matches the file's
path, its name, or one of the folders it lies in (`_deleted_in_history` leaves out the folder).
The toml of the input folder applies to everything under it, else the nearest one above it
(`roofreport build logs/a100` follows `logs/roofreport.toml`, its globs relative to `logs/`),
looked for up to the filesystem's root but not past a git repository's root; one beside a file
applies too.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath

from roofreport.errors import UsageError
from roofreport.families.common.limits import Limits

CONFIG_NAME = "roofreport.toml"


@dataclass(frozen=True)
class RunTable:
    """One `[[run]]` table: files matching `match` get `name` (their run id) and `facts`."""

    match: str
    name: str | None
    facts: dict


@dataclass(frozen=True)
class FolderConfig:
    runs: tuple[RunTable, ...] = ()
    exclude: tuple[str, ...] = ()
    limits: Limits | None = None   # the `[limits]` table: what it lowers


@lru_cache(maxsize=1024)
def load(folder: Path) -> FolderConfig:
    """The `roofreport.toml` of `folder`, or an empty configuration when there is none."""
    path = folder / CONFIG_NAME
    if not path.is_file():
        return FolderConfig()
    import tomllib  # only when a folder has one

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not a valid roofreport.toml ({exc})") from None
    exclude = data.get("exclude", [])
    if isinstance(exclude, str):
        exclude = [exclude]
    tables = []
    for table in data.get("run", []):
        table = dict(table)
        match = str(table.pop("match", "*"))
        name = table.pop("name", None)
        tables.append(RunTable(match=match, name=str(name) if name is not None else None, facts=table))
    limits = data.get("limits")
    if limits is not None and not isinstance(limits, dict):
        raise UsageError(f"{path}: [limits] must be a table")
    return FolderConfig(runs=tuple(tables), exclude=tuple(str(glob) for glob in exclude),
                        limits=Limits.from_table(limits, str(path)) if limits else None)


def file_limits(limits: Limits, path: Path, root: Path) -> Limits:
    """The limits reading `path` (found under `root`) works within: `limits`, lowered by the
    `[limits]` of the roofreport.toml files that apply to it (never raised)."""
    for folder in folders_for(path, root):
        lower = load(folder).limits
        if lower is not None:
            limits = limits.lowered(lower)
    return limits


def folders_for(path: Path, root: Path) -> list[Path]:
    """The folders whose roofreport.toml applies to `path`: the input root's (`governing`), and
    the file's own."""
    base = governing(root)
    return [base] if path.parent == base else [base, path.parent]


@lru_cache(maxsize=256)
def governing(root: Path) -> Path:
    """The folder whose roofreport.toml applies to the input folder `root`: `root` itself when it
    holds one, else the nearest folder above it that does, up to the filesystem's root or a git
    repository's root (the folder holding `.git`: the project's own folders end there) or the
    user's home folder (a stray roofreport.toml above it must not govern, nor move the run
    ids of, every folder on the machine); `root` when none does."""
    folder = Path(os.path.abspath(root))
    home = _home()
    for candidate in (folder, *folder.parents):
        if (candidate / CONFIG_NAME).is_file():
            return root if candidate == folder else candidate
        if (candidate / ".git").exists() or candidate == home:
            break
    return root


def _home() -> Path | None:
    try:
        return Path(os.path.abspath(Path.home()))
    except (RuntimeError, KeyError):   # no HOME and no passwd entry
        return None


def matches(glob: str, rel: PurePosixPath) -> bool:
    """True when `glob` names the file's path, a trailing part of it (`outputs/*`), its name,
    or a folder it lies in (`_deleted_in_history`)."""
    pattern = glob.strip().removeprefix("./").rstrip("/")
    if not pattern:
        return False
    parts = rel.parts
    candidates = ["/".join(parts[i:]) for i in range(len(parts))]
    candidates += [str(parent) for parent in rel.parents if str(parent) != "."]
    candidates += list(parts[:-1])
    bare = pattern.removeprefix("**/")
    return any(fnmatch.fnmatchcase(text, pattern) or fnmatch.fnmatchcase(text, bare) for text in candidates)


@dataclass(frozen=True)
class Exclusions:
    """The `--exclude` globs given on the command line and those of each folder's toml."""

    cli: tuple[str, ...] = ()

    def reason(self, path: Path, root: Path) -> str | None:
        """Why `path` (found under `root`) is left out, or None when it is read."""
        if self.cli:
            rel = _relative(path, root)
            for glob in self.cli:
                if matches(glob, rel):
                    return f"excluded by {glob!r}"
        for folder in folders_for(path, root):
            globs = load(folder).exclude
            if globs:   # (most folders have no toml: no path worked out for them)
                rel = _relative(path, folder)
                for glob in globs:
                    if matches(glob, rel):
                        return f"excluded by {glob!r} ({folder / CONFIG_NAME})"
        return None


def run_tables(path: Path, root: Path) -> list[RunTable]:
    """The `[[run]]` tables that match `path`, in the order they apply (later wins)."""
    found = []
    for folder in folders_for(path, root):
        tables = load(folder).runs
        if tables:
            rel = _relative(path, folder)
            found += [table for table in tables if matches(table.match, rel)]
    return found


def _relative(path: Path, folder: Path) -> PurePosixPath:
    try:
        return PurePosixPath(path.relative_to(folder).as_posix())
    except ValueError:   # (a folder above the input given as a relative path: `governing`)
        try:
            return PurePosixPath(Path(os.path.abspath(path)).relative_to(os.path.abspath(folder)).as_posix())
        except ValueError:
            return PurePosixPath(path.name)
