"""Tables read on first use: a dataset folder's Parquet files scanned lazily.

`LazyTables` is a mapping of table name -> DataFrame, like the dict a fresh read gives, whose
frames are collected from polars scans only when first asked for. `scan(tables, name)` gives a
LazyFrame for either kind, so an analysis that needs a few rows of a big table (metrics of one
run) filters before anything is read: polars pushes the filter into the Parquet scan, and row
groups whose statistics exclude it are never read. `filtered` keeps that laziness through a
filter applied to every table (the report's copies left out).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping

import polars as pl

Scan = Callable[[], pl.LazyFrame]


class LazyTables(MutableMapping[str, pl.DataFrame]):
    """See the module docstring. A frame set by assignment replaces the table's scan."""

    def __init__(self, scans: dict[str, Scan]):
        self._scans = dict(scans)
        self._frames: dict[str, pl.DataFrame] = {}

    def scan(self, name: str) -> pl.LazyFrame:
        if name in self._frames:
            return self._frames[name].lazy()
        return self._scans[name]()

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name not in self._frames:
            if name not in self._scans:
                raise KeyError(name)
            self._frames[name] = self._scans[name]().collect()
        return self._frames[name]

    def __setitem__(self, name: str, frame: pl.DataFrame) -> None:
        self._frames[name] = frame
        self._scans.setdefault(name, frame.lazy)

    def __delitem__(self, name: str) -> None:
        self._scans.pop(name)
        self._frames.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._scans   # (Mapping's own would collect the table to find out)

    def __iter__(self) -> Iterator[str]:
        return iter(self._scans)

    def __len__(self) -> int:
        return len(self._scans)

    def loaded(self) -> set[str]:
        """The tables collected so far."""
        return set(self._frames)

    def filtered(self, keep: Callable[[str, pl.LazyFrame], pl.LazyFrame]) -> LazyTables:
        """New lazy tables: each table's scan passed through `keep(name, scan)`."""
        def later(name: str) -> Scan:
            return lambda: keep(name, self.scan(name))
        return LazyTables({name: later(name) for name in self._scans})


def scan(tables: Mapping[str, pl.DataFrame], name: str) -> pl.LazyFrame | None:
    """The table as a LazyFrame (a lazy scan for `LazyTables`), or None when there is none."""
    if isinstance(tables, LazyTables):
        return tables.scan(name) if name in tables else None
    frame = tables.get(name)
    return frame.lazy() if frame is not None else None
