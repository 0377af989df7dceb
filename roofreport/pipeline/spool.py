"""An update's rows on disk, a batch at a time, until its batch is written (`store.py`).

The files an update reads are read in the walk's order, so the files of one batch
(`generation.batches_of`) finish together: once the last of a batch is read, the batch's rows
go to the spool (one Arrow IPC file per table, in the new generation's `.spool/` folder) and
leave memory. Runs are grouped over every file's facts only once all are read; the batch is
then read back, given its runs, enriched and written (`generation.write_generation`). So an
update holds the rows of a few batches at a time, whatever the size of the campaign.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl

SPOOL = ".spool"


class Spool:
    """The rows of the files read now, by batch (module docstring)."""

    def __init__(self, folder: Path, batch_of: dict[int, str], expected: dict[str, int]):
        self.folder = folder
        self._batch_of = batch_of              # file index -> its batch id
        self._waiting = dict(expected)         # batch id -> files still being read
        self._held: dict[str, dict[int, dict[str, pl.DataFrame]]] = {}
        self._read: set[int] = set()

    def __contains__(self, index: int) -> bool:
        """The file at `index` was read now (its rows, if any, are in the spool)."""
        return index in self._read

    def add(self, index: int, tables: dict[str, pl.DataFrame]) -> None:
        """One file's rows, read now; its batch goes to disk once all its files are read."""
        self._read.add(index)
        batch = self._batch_of[index]
        self._held.setdefault(batch, {})[index] = tables
        self._waiting[batch] -= 1
        if self._waiting[batch] == 0:
            self._write(batch, self._held.pop(batch))

    def batch(self, batch_id: str) -> dict[str, pl.DataFrame]:
        """table -> the rows of the batch's files read now, in the files' order."""
        folder = self.folder / f"batch={batch_id}"
        if batch_id in self._held:       # (files of it still unread: a caller that stopped early)
            self._write(batch_id, self._held.pop(batch_id))
        if not folder.is_dir():
            return {}
        return {path.stem: pl.read_ipc(path) for path in sorted(folder.glob("*.arrow"))}

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def _write(self, batch_id: str, files: dict[int, dict[str, pl.DataFrame]]) -> None:
        tables: dict[str, list[pl.DataFrame]] = {}
        for index in sorted(files):
            for name, frame in files[index].items():
                if frame.height:
                    tables.setdefault(name, []).append(frame)
        if not tables:
            return
        folder = self.folder / f"batch={batch_id}"
        folder.mkdir(parents=True, exist_ok=True)
        for name, frames in tables.items():
            pl.concat(frames, how="vertical").write_ipc(folder / f"{name}.arrow", compression="lz4")
