"""Which runs and kernels a summary, a comparison or a report shows: `--run GLOB`, `--kernel REGEX`.

A view narrows what is SHOWN, never what is counted: run totals (kernel time, FLOPs, intensity,
bound) still count every kernel of the run, and a kernel's share stays a fraction of its run's
whole GPU time; `parse` keeps every row. The filters match as their users expect from the
NVIDIA tools:

* `kernel`: a regular expression searched (not anchored) in each kernel's full name and its
  short name, as `ncu --kernel-name regex:` does; the syntax is polars' (Rust `regex`: no
  look-around or back-references); `(?i)` makes it case-insensitive.
* `runs`: shell globs (`a100/*`, `*vgg13*`) matched against each run's id (`a100/vgg13`) and
  its label (`vgg13 · A100-SXM4-40GB`); a run matching any of them is kept.

`View` is a frozen settings object: the CLI's options and the API's arguments both become one,
and it travels down to the analyses that draw kernels (`share`, `roofline`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

import polars as pl

from roofreport.errors import UsageError
from roofreport.tables.lazy import LazyTables

# Tables whose rows belong to runs but that list every input, whatever is shown (the appendix).
_ALL_ROWS = ("files", "estimates")   # no run's rows: the files, the estimates (matched to the runs kept)


@dataclass(frozen=True)
class View:
    """The runs and kernels to show (module docstring); the default shows everything."""

    kernel: str | None = None        # regex searched in full and short kernel names
    runs: tuple[str, ...] = ()       # globs over run ids and labels

    def __post_init__(self) -> None:
        if isinstance(self.runs, str):   # one glob given as a string, not a tuple of characters
            object.__setattr__(self, "runs", (self.runs,))
        if self.kernel is not None:
            _check_regex(self.kernel)

    @property
    def narrows(self) -> bool:
        return self.kernel is not None or bool(self.runs)

    def describe(self) -> str:
        """What the view keeps, in words (`""` when it keeps everything)."""
        parts = []
        if self.runs:
            parts.append("runs matching " + " or ".join(repr(g) for g in self.runs))
        if self.kernel is not None:
            parts.append(f"kernels matching /{self.kernel}/")
        return "; ".join(parts)

    # -- runs

    def run_ids(self, runs: pl.DataFrame) -> list[str]:
        """The ids of the runs (a runs table) the view keeps, in the table's order."""
        if not self.runs:
            return runs["run"].to_list()
        labels = runs["label"].to_list() if "label" in runs.columns else [None] * runs.height
        return [run for run, label in zip(runs["run"].to_list(), labels)
                if any(fnmatchcase(run, glob) or (label is not None and fnmatchcase(label, glob))
                       for glob in self.runs)]

    def keep_runs(self, tables: Mapping[str, pl.DataFrame]) -> Mapping[str, pl.DataFrame]:
        """`tables` with only the kept runs' rows (the files table whole). A glob that keeps
        no run is a UsageError naming some of the runs there are."""
        if not self.runs:
            return tables
        runs = tables["runs"]
        kept = self.run_ids(runs)
        if not kept:
            known = runs["run"].to_list()
            shown = ", ".join(known[:8]) + (f", ... ({len(known)} runs)" if len(known) > 8 else "")
            raise UsageError(f"no run matches --run {' '.join(self.runs)} (runs: {shown or 'none'})")
        keep = pl.col("run").is_in(kept)
        if isinstance(tables, LazyTables):
            return tables.filtered(lambda name, scan: scan.filter(keep)
                                   if name not in _ALL_ROWS and "run" in scan.collect_schema() else scan)
        return {name: frame.filter(keep) if name not in _ALL_ROWS and "run" in frame.columns else frame
                for name, frame in tables.items()}

    # -- kernels

    def keep_kernels(self, rows: pl.DataFrame) -> pl.DataFrame:
        """The rows (with `name` and/or `short_name`) of the kernels the view keeps."""
        if self.kernel is None or not rows.height:
            return rows
        names = [c for c in ("name", "short_name") if c in rows.columns]
        return rows.filter(pl.any_horizontal([pl.col(c).fill_null("").str.contains(self.kernel) for c in names]))


EVERYTHING = View()


def _check_regex(pattern: str) -> None:
    """A regex polars cannot compile is a UsageError before anything is read."""
    try:
        pl.Series([""]).str.contains(pattern)
    except pl.exceptions.ComputeError as exc:
        lines = [line.strip() for line in str(exc).strip().splitlines()]
        detail = next((line for line in lines if line.startswith("error:")), lines[-1] if lines else "")
        raise UsageError(f"--kernel {pattern!r} is not a regular expression ({detail})") from None
