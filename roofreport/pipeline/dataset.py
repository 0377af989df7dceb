"""What reading a set of logs gives: the shared tables and what happened to every file.

`Dataset` is what `roofreport.read` returns and what `analyze` and the report take. Each table
is an attribute (`data.kernels`, `data.runs`, ...: polars DataFrames with the fixed schemas of
`tables/schema.py`); `data.files` lists every file found with its status, warnings and error
(the `files` table is the same facts as a frame: `data.tables["files"]`).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from roofreport.errors import LogWarning, UsageError
from roofreport.gpu import NO_SETTINGS, GpuSettings
from roofreport.pipeline.discover import check_not_input
from roofreport.tables import lazy, schema
from roofreport.tables.output import TABLE_FORMATS, write_tables


@dataclass
class FileOutcome:
    """What happened to one input file (one row of the `files` table, one `inspect` object)."""

    path: str
    family: str | None
    variant: str | None
    status: str                      # ok | partial | error | skipped
    rows: dict[str, int] = field(default_factory=dict)
    warnings: list[LogWarning] = field(default_factory=list)
    error: str | None = None
    tool_version: str | None = None
    run: str | None = None
    encoding: str | None = None
    size_bytes: int = 0
    excluded: bool = False           # left out by an exclude glob (--exclude, roofreport.toml)
    gpu_family: str | None = None    # the family of its run's GPU (volta, hopper, cdna3...)
    failure: str | None = None       # a profiler log without kernels: why (`failures.py` codes)
    failure_reason: str | None = None  # ... in words, with the log's line

    def as_json(self) -> dict:
        return {
            "path": self.path, "family": self.family, "variant": self.variant,
            "status": self.status, "rows": self.rows,
            "warnings": [w.as_dict() for w in self.warnings], "error": self.error,
            "run": self.run, "gpu_family": self.gpu_family, "tool_version": self.tool_version,
        }

    @property
    def failed(self) -> bool:
        return self.status in ("error", "partial")


@dataclass
class Dataset:
    """Everything read from a set of paths: the shared tables, the per-file outcomes, the
    paths given (the report's default title and the estimate files beside the logs use them)
    and what the user said of the GPU when they were read (`--gpu`, `--peaks`: the runs'
    GPUs and the run totals follow it)."""

    tables: MutableMapping[str, pl.DataFrame]   # a dict, or `LazyTables` for a dataset folder
    files: list[FileOutcome]
    inputs: list[Path] = field(default_factory=list)
    update_report: Any = None   # what an incremental update did (`store.UpdateReport`), or None
    gpu: GpuSettings = NO_SETTINGS
    model: Any = None   # what the tables imply (`roofreport.model.Model`), kept by `roofreport.read`
    generation: Path | None = None   # a dataset folder's generation these tables are read from

    def __getitem__(self, name: str) -> pl.DataFrame:
        return self.tables[name]

    def _table(self, name: str) -> pl.DataFrame:
        return self.tables.get(name, schema.empty(name))

    def scan(self, name: str) -> pl.LazyFrame:
        """The table as a LazyFrame: a lazy Parquet scan for a dataset folder (filters and
        column selections are pushed into the read), the frame itself otherwise."""
        frame = lazy.scan(self.tables, name)
        return frame if frame is not None else schema.empty(name).lazy()

    @property
    def kernels(self) -> pl.DataFrame:
        """One row per kernel launch or summary row: names, category, region, time, FLOPs, bytes."""
        return self._table("kernels")

    @property
    def metrics(self) -> pl.DataFrame:
        """Every metric the logs printed, long form, in base units."""
        return self._table("metrics")

    @property
    def activities(self) -> pl.DataFrame:
        """Timeline rows of traces: kernels, memcpy and memset with start, duration and bytes."""
        return self._table("activities")

    @property
    def api_calls(self) -> pl.DataFrame:
        """CUDA API summaries and traces."""
        return self._table("api_calls")

    @property
    def samples(self) -> pl.DataFrame:
        """GPU time series (nvidia-smi and kin): utilization, memory, power, clocks."""
        return self._table("samples")

    @property
    def regions(self) -> pl.DataFrame:
        """NVTX ranges, profiler ranges and training phases with their times."""
        return self._table("regions")

    @property
    def steps(self) -> pl.DataFrame:
        """Training steps of PyTorch traces: FLOPs, MFU, HFU and where each step's time went."""
        return self._table("steps")

    @property
    def estimates(self) -> pl.DataFrame:
        """The FLOP and byte estimates kept beside the logs (estimates files, torchinfo printouts), as written."""
        return self._table("estimates")

    @property
    def runs(self) -> pl.DataFrame:
        """One row per run: its identity (model, GPU, parameters) and where each file went."""
        return self._table("runs")

    @property
    def failed(self) -> list[FileOutcome]:
        return [f for f in self.files if f.failed]

    @property
    def warning_count(self) -> int:
        return sum(len(f.warnings) for f in self.files)

    def __repr__(self) -> str:
        """A few lines (files, runs, rows per table), never the tables themselves. Row counts
        come from the files' outcomes, so a dataset folder's tables stay unread."""
        statuses: dict[str, int] = {}
        rows: dict[str, int] = {}
        for file in self.files:
            statuses[file.status] = statuses.get(file.status, 0) + 1
            for table, count in file.rows.items():
                rows[table] = rows.get(table, 0) + count
        status = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items(), key=lambda item: -item[1]))
        runs = self.tables["runs"].height if "runs" in self.tables else 0
        tables = ", ".join(f"{name} {rows[name]:,}" for name in schema.TABLES if rows.get(name))
        inputs = ", ".join(str(p) for p in self.inputs[:3])
        inputs += f", ... ({len(self.inputs)})" if len(self.inputs) > 3 else ""
        return (f"<Dataset: {len(self.files)} files ({status or 'none'}), {runs} runs, "
                f"{self.warning_count} warnings\n  rows: {tables or 'none'}\n  from: {inputs or '-'}>")

    __str__ = __repr__

    def write(self, folder: str | Path, format: str = "parquet") -> list[Path]:  # noqa: A002 - the CLI's word
        """Write one file per table into `folder` (created if needed), each atomically:
        `kernels.parquet`, `runs.parquet`, ... (`format` is "parquet", "csv" or "json"). An
        output that is one of the inputs, or a log inside an input folder, is refused."""
        folder = Path(folder)
        if (folder / "manifest.json").is_file():
            raise UsageError(f"{folder} holds an incremental dataset: update it with --update "
                             "(roofreport.read(..., dataset=folder)), or write to another folder")
        for target in [folder, *(folder / f"{name}.{format}" for name in schema.TABLES)]:
            check_not_input(target, self.inputs)
        return write_tables(self, folder, format)


__all__ = ["TABLE_FORMATS", "Dataset", "FileOutcome"]
