"""Writing results safely: tables and reports go to a temporary file in the destination folder
and are renamed into place, so a failure never leaves a partial file (that outputs never
overwrite an input is checked against the inputs by `pipeline.discover.check_not_input`)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from roofreport.errors import RoofreportError, UsageError
from roofreport.tables import schema

TABLE_FORMATS = ("parquet", "csv", "json")
# Rows per Parquet row group. polars encodes row groups on all cores: at 64 Ki rows (its
# default is 256 Ki) a million-row trace table is written 10-20 % faster (400 MB nsys trace:
# 0.41 -> 0.33 s; 32 Ki and 128 Ki are both slower), and readers such as DuckDB get more
# groups to read in parallel. The tables read back are the same.
PARQUET_ROW_GROUP_ROWS = 64 * 1024


@contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temporary path beside `target`; rename it onto `target` if the block succeeds.

    A failure (in the block or on the filesystem) leaves `target` as it was and no temporary
    file behind. Filesystem errors come out as RoofreportError naming the target."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
    except OSError as exc:
        raise RoofreportError(f"cannot write {target}: {exc.strerror or exc}") from None
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        _publishable(tmp_path)
        os.replace(tmp_path, target)
    except OSError as exc:
        raise RoofreportError(f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _publishable(path: Path) -> None:
    """mkstemp makes owner-only files; an output gets the mode a plain open() would give."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def table_paths(out_dir: Path, fmt: str) -> list[Path]:
    """The files `write_tables` writes: one per table, named after it."""
    return [out_dir / f"{name}.{fmt}" for name in schema.TABLES]


def write_tables(dataset, out_dir: Path, fmt: str) -> list[Path]:
    if fmt not in TABLE_FORMATS:
        raise UsageError(f"unknown table format {fmt!r}")
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir} exists and is not a folder")
    # Every table goes to a temporary file first; they are renamed onto their names only once
    # all are written, so that an interrupted write (Ctrl-C, a full disk) leaves the folder as
    # it was, not some tables new and some old.
    written = []
    with ExitStack() as publish:
        scans = dataset.tables if hasattr(dataset.tables, "scan") else None
        for name in schema.TABLES:
            target = out_dir / f"{name}.{fmt}"
            tmp = publish.enter_context(atomic_path(target))
            try:
                if scans is not None and name in scans and fmt in ("parquet", "csv"):
                    # (a dataset folder's table streamed from its batches, never all in memory)
                    scan = scans.scan(name)
                    if fmt == "parquet":
                        scan.sink_parquet(tmp, row_group_size=PARQUET_ROW_GROUP_ROWS)
                    else:
                        scan.sink_csv(tmp)
                    written.append(target)
                    continue
                frame = dataset.tables.get(name, schema.empty(name))
                if fmt == "parquet":
                    frame.write_parquet(tmp, row_group_size=PARQUET_ROW_GROUP_ROWS)
                elif fmt == "csv":
                    frame.write_csv(tmp)
                else:
                    frame.write_json(tmp)
            except OSError as exc:
                raise RoofreportError(f"cannot write {target}: {exc.strerror or exc}") from None
            written.append(target)
    return written
