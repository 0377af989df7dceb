"""Which files the given paths hold, and which paths an output must not take.

Folders are walked recursively, sorted, hidden files and folders skipped, so the same folder
gives the same files in the same order on every machine. An output path that is one of the
inputs, or a profiler log inside an input folder, or one that cannot be written, is refused
before anything is read; one inside an input folder is allowed (`inside_input` finds it, so
the CLI can warn that the next run over that folder finds it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from roofreport.errors import UsageError
from roofreport.pipeline.sniff import sniff


def discover(paths: list[Path]) -> list[tuple[Path, Path]]:
    """(file, root it was found under) for every file under the given paths, sorted."""
    return list(walk(paths))


def walk(paths: list[Path]) -> Iterator[tuple[Path, Path]]:
    """`discover`'s files as the walk finds them: a caller that needs the first few only
    (`store.one_batch`) walks no further."""
    for given in paths:
        if given.is_file():
            yield given, given.parent
            continue
        for dirpath, dirnames, filenames in os.walk(given):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if not name.startswith("."):
                    yield Path(dirpath) / name, given


def check_not_input(output: Path, inputs: tuple[Path, ...] | list[Path]) -> None:
    """Refuse an output path that is one of the inputs (also through a link), or an existing
    profiler log inside an input folder (a previous report there may be overwritten; a log
    never)."""
    out = output.resolve()
    for given in inputs:
        src = Path(given).resolve()
        if out == src or _same_file(out, src):
            raise UsageError(f"output {output} is one of the inputs; choose another path")
        if src.is_dir() and src in out.parents and out.is_file() and sniff(out).family is not None:
            raise UsageError(f"output {output} is a profiler log inside the input folder {given}; "
                             "choose another path")


def check_writable(output: Path) -> None:
    """Refuse an output that cannot be written: an existing file or folder without write
    permission, or a new one whose nearest existing folder cannot take it (permissions, a
    read-only filesystem: `os.access` says so for root too), or whose parent is a file."""
    target = Path(output)
    if target.exists():
        folder = target if target.is_dir() else target.parent
        if not os.access(target, os.W_OK) or not os.access(folder, os.W_OK | os.X_OK):
            raise UsageError(f"cannot write {output}: permission denied")
        return
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {output}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write {output}: the folder {parent} is not writable")


def inside_input(output: Path, inputs: tuple[Path, ...] | list[Path]) -> Path | None:
    """The input folder `output` lies in (the next read of that folder will find it), or None."""
    out = Path(output).resolve()
    for given in inputs:
        src = Path(given).resolve()
        if src.is_dir() and src in out.parents:
            return Path(given)
    return None


def _same_file(first: Path, second: Path) -> bool:
    try:
        return first.exists() and second.exists() and os.path.samefile(first, second)
    except OSError:
        return False
