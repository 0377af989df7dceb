"""How logs are read, as one typed object every reader of logs takes (`ReadOptions`).

`roofreport.read`, `analyze`, `summary` and `compare` given paths, `build_report` (its logs
and its baseline) and every CLI command read with one: the paths, the globs left unread, what
one input may cost (`Limits`), where the files are read (the executor, its worker count), what
the user says of the GPU (`GpuSettings`), a progress callback, and the incremental dataset
folder kept up to date, if any. `roofreport.api.read_options` builds one from keywords and
checks it (a UsageError names what is wrong), so the CLI and a script read alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from roofreport.errors import UsageError
from roofreport.families.common.limits import Limits
from roofreport.gpu import NO_SETTINGS, GpuSettings

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ReadOptions:
    """See the module docstring."""

    paths: tuple[Path, ...] = ()                    # files, or folders walked recursively
    exclude: tuple[str, ...] = ()                   # globs of files left unread (config.Exclusions)
    limits: Limits = field(default_factory=Limits)  # what one input may cost
    executor: str | None = None                     # "local", "dask", "dask://HOST:PORT" (executors.choose)
    jobs: int | None = None                         # worker processes (None: one per core, up to 4)
    gpu: GpuSettings = NO_SETTINGS                  # --gpu, --peaks
    progress: Progress | None = None                # (done, total, name) as files are read
    dataset: Path | None = None                     # an incremental dataset folder kept up to date (store.py)

    def __post_init__(self) -> None:
        object.__setattr__(self, "paths", tuple(Path(p) for p in self.paths))
        object.__setattr__(self, "exclude", tuple(self.exclude))
        if self.dataset is not None:
            object.__setattr__(self, "dataset", Path(self.dataset))
        if self.jobs is not None and self.jobs < 1:
            raise UsageError(f"jobs must be at least 1, not {self.jobs}")

    def reading(self, paths) -> ReadOptions:
        """The same options for other paths (no dataset folder: that one is kept for the paths
        it was given with)."""
        return replace(self, paths=tuple(Path(p) for p in paths), dataset=None)

    def for_baseline(self, paths) -> ReadOptions:
        """The options a baseline's logs are read with (`build --baseline`): these, for its
        paths, but for the GPU name: `--gpu` says which GPU the runs compared ran on, and the
        baseline's ran on their own (a `--peaks` file still corrects the peaks of both)."""
        return replace(self.reading(paths), gpu=GpuSettings(peaks=self.gpu.peaks))


DEFAULT = ReadOptions()
