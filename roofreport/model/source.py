"""What the analyses read of one read of logs: its tables, its files' outcomes, the paths given,
the GPU settings it was read with, and its model once derived.

`roofreport.read` gives a `pipeline.dataset.Dataset`, which is one (`Source` is a protocol: any
object with these attributes is one). The analyses name this protocol, never the pipeline's
class, so `analysis` imports the model and not ingest (the import contract in pyproject.toml).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import polars as pl

from roofreport.gpu import GpuSettings

if TYPE_CHECKING:
    from roofreport.model import Model


class Source(Protocol):
    """See the module docstring."""

    tables: MutableMapping[str, pl.DataFrame]   # a dict, or `LazyTables` for a dataset folder
    files: list[Any]        # one outcome per file: path, status, run, warnings (`FileOutcome`)
    inputs: list[Path]
    gpu: GpuSettings        # `--gpu`, `--peaks` as the logs were read
    model: Model | None     # what the tables imply, kept once derived
