"""The derived model: every number roofreport works out from the tables, worked out once.

The tables (`tables/schema.py`) hold what the logs say. The model holds what follows from them,
per run, for every answer to read (`build`, `compare`, `summary`, `--json-summary`, the
baseline section, the Python API), so one question never gets two figures:

* `time_rows`: the rows of each run's ONE time source (`timing.kernel_time_rows`: a trace
  before a summary before ncu's replays), each with its `setup` mark (`totals.setup_rows`: the
  copies of a trace before the run's first kernel); `kernels()` marks the kernel rows among
  them that make the run's `kernel_time_ns` (`in_run_total`);
* `time_partials`: per run and candidate file, the sums its time totals combine from
  (`totals.file_partials`); `trace_launches`: the trace launches counted launches are aligned
  with. These three come from one pass over the candidate rows (`timing.candidate_rows`, a
  copy of the kernel rows), which is let go once they are derived;
* `iterations`: the steps each run's time covers and how they were counted (`iterations.py`);
* `counted_times`: each counted launch's real time (`timing.counted_kernel_times`: the same
  launch in a trace of the run, aligned by name);
* `points`: the counted kernels with FLOPs, their precision and time (`roofline.kernel_points`);
  `gpus`: each run's GPU spec with the database's peaks; `clocks`: the evidence of the clock its
  time was measured at (`clocks.py`: logged, ncu's locked clock, nvidia-smi's sampled clock);
* `kernel_roofline`: each counted kernel's roofline point and ceiling (`roofline.kernel_roofline`),
  whose time-weighted sides of the ridge give a run's bound (`bound.py`; where they cover too
  little of the run, the sides of their kernel names weighted by the time rows: `bound.name_populations`);
* `ranks`: per (run, rank) of the traces with GPU activities, the time split as Holistic
  Trace Analysis splits it (`ranks.py`: span, compute, communication, memory, idle, overlap);
* `totals`: the runs table's `RUN_TOTALS` columns (`totals.py`: kernel, copy, setup-copy time,
  per iteration; FLOPs, bytes, the roofline point and bound), and `runs()` the runs table with
  them.

`derive(tables, db)` makes the model; each derivation runs on first use and is kept, so an
answer that needs only the time rows never aligns ncu launches, and two sections never derive
the same rows twice. Every derivation is per run: `keep_runs` narrows a model to some runs
(a view, the body without copies) keeping what it derived.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cached_property

import polars as pl

from roofreport import gpu
from roofreport.model import clocks as run_clocks, iterations as steps_counted, ranks as rank_split, roofline, timing, \
    totals as run_totals
from roofreport.tables import schema

Tables = Mapping[str, pl.DataFrame]
Partials = tuple[pl.DataFrame, pl.DataFrame]   # (time partials, step-range partials)
_DERIVED = ("time_partials", "step_partials", "time_rows", "trace_launches", "counted_times", "points", "iterations",
            "totals", "run_roofline", "kernel_roofline", "ranks")


class Model:
    """What the tables of one read imply, per run (module docstring)."""

    def __init__(self, tables: Tables, db: gpu.GpuDatabase, partials: Partials | None = None) -> None:
        self.tables = tables
        self.db = db
        if partials is not None:   # a dataset folder's, combined from its batches
            self.__dict__["time_partials"], self.__dict__["step_partials"] = partials

    def __repr__(self) -> str:
        runs = self.tables["runs"].height if "runs" in self.tables else 0
        done = [name for name in _DERIVED if name in self.__dict__]
        return f"<Model of {runs} runs; derived: {', '.join(done) or 'nothing yet'}>"

    @cached_property
    def time_rows(self) -> pl.DataFrame:
        """Each run's rows of its one time source (`timing.TIME_COLUMNS`) with `setup`."""
        self._from_candidates()
        return self.__dict__["time_rows"]

    @cached_property
    def time_partials(self) -> pl.DataFrame:
        """Per run, file and rank of its time source, the partial its totals combine from
        (`totals.PARTIAL`): of every candidate file, as a dataset folder's batches give them, so
        that a run's time source says how many files it was chosen among (a counter collection's
        passes) whether the tables were read whole or in batches."""
        self._from_candidates()
        return self.__dict__["time_partials"]

    @cached_property
    def trace_launches(self) -> pl.DataFrame:
        """The trace launches (`timing.trace_launches`) of the runs with counted launches, which
        `counted_times` aligns them with."""
        self._from_candidates()
        return self.__dict__["trace_launches"]

    def _from_candidates(self) -> None:
        """`time_rows`, `time_partials` and `trace_launches`, those not derived yet, from one
        pass over the rows that could give a run's time (`timing.candidate_rows`, a copy of
        the kernel rows): worked out together, then the candidates are let go (only what is
        derived from them is kept, so a parse's peak memory holds them once)."""
        found = self.__dict__
        cand = timing.candidate_rows(self.tables)
        if "trace_launches" not in found:
            found["trace_launches"] = timing.trace_launches(cand, timing.counted_runs(self.tables))
        if "time_partials" not in found:
            found["time_partials"] = run_totals.file_partials(self.tables, cand)
        if "time_rows" not in found:
            found["time_rows"] = run_totals.setup_rows(timing.kernel_time_rows(self.tables, cand))

    @cached_property
    def step_partials(self) -> pl.DataFrame:
        """Per run and file, the step ranges its iterations combine from (`iterations.PARTIAL`)."""
        return steps_counted.step_partials(self.tables.get("regions"))

    @cached_property
    def chosen_partials(self) -> pl.DataFrame:
        """Each run's one time partial (`totals.chosen_partials` of `time_partials`): the run
        totals, the iterations and `in_run_total` all read it, so it is worked out once."""
        return run_totals.chosen_partials(self.time_partials)

    @property
    def chosen_sources(self) -> pl.DataFrame:
        """run, source_file, source_rank: each run's time source (from its partials)."""
        return self.chosen_partials.select("run", "source_file", "source_rank")

    @cached_property
    def counted_times(self) -> pl.DataFrame:
        """source_file, launch_id, time_ns, time_source of every kernel row (counted launches
        with a trace's time where one aligns)."""
        return timing.counted_kernel_times(self.tables, self.time_rows, self.trace_launches)

    @cached_property
    def points(self) -> pl.DataFrame:
        """The counted kernels with FLOPs, their dominant precision, FLOPs and real time."""
        return roofline.kernel_points(self.tables, self.counted_times)

    @cached_property
    def gpus(self) -> dict[str, gpu.GpuSpec]:
        """run -> its GPU's spec, with the database's peaks."""
        return roofline.run_gpus(self.tables, self.db)

    @cached_property
    def clocks(self) -> dict[str, run_clocks.RunClock]:
        """run -> what the evidence says of the clock its time was measured at (`clocks.py`)."""
        return run_clocks.run_clocks(self.tables, self.gpus)

    @cached_property
    def iterations(self) -> pl.DataFrame:
        """run, iterations, iterations_source of the runs whose logs count steps."""
        return run_totals.iteration_totals(self.time_partials, self.step_partials, self.tables.get("runs"),
                                           chosen=self.chosen_partials)

    @cached_property
    def totals(self) -> pl.DataFrame:
        """run + the `RUN_TOTALS` columns, one row per run that has any."""
        return run_totals.run_totals(self)

    @cached_property
    def run_roofline(self) -> pl.DataFrame:
        """One row per run and precision with FLOPs (`roofline.COLUMNS`)."""
        return roofline.run_roofline(self)

    @cached_property
    def kernel_roofline(self) -> pl.DataFrame:
        """One row per counted kernel with FLOPs (`roofline.KERNEL_COLUMNS`): its point, the
        ceiling it is judged by and its side of the ridge (the run's bound reads them)."""
        return roofline.kernel_roofline(self)

    @cached_property
    def ranks(self) -> pl.DataFrame:
        """One row per (run, rank) with GPU activities: span, compute, communication, memory,
        idle and overlap as Holistic Trace Analysis splits them (`ranks.RANK_COLUMNS`)."""
        empty = schema.empty
        return rank_split.rank_breakdown(self.tables.get("activities", empty("activities")),
                                         self.tables.get("runs", empty("runs")),
                                         self.tables.get("steps", empty("steps")))

    def runs(self) -> pl.DataFrame:
        """The runs table with its `RUN_TOTALS` columns from this model."""
        runs = self.tables.get("runs")
        if runs is None or not runs.height:
            return schema.empty("runs")
        base = runs.drop([c for c in schema.RUN_TOTALS if c in runs.columns])
        return schema.conform("runs", run_totals.with_bound_reasons(base.join(self.totals, on="run", how="left")))

    def kernels(self) -> pl.DataFrame:
        """The kernels table with `in_run_total`: the rows whose durations sum to their run's
        `kernel_time_ns` (its time source's kernel rows, copies apart)."""
        kernels = self.tables.get("kernels")
        if kernels is None:
            return schema.empty("kernels")
        return timing.with_in_run_total(self.tables, self.chosen_sources, kernels.lazy()).collect()

    def kernels_scan(self, scan: pl.LazyFrame) -> pl.LazyFrame:
        """`scan` (of this model's kernels, a dataset folder's lazy scan) with `in_run_total`."""
        return timing.with_in_run_total(self.tables, self.chosen_sources, scan)

    def keep_runs(self, runs: Iterable[str], tables: Tables) -> Model:
        """This model narrowed to `runs`, over `tables` (this model's tables with only those
        runs' rows: a view's, the body without copies): what was derived is kept, filtered, not
        derived again."""
        kept = list(runs)
        narrow = Model(tables, self.db)
        for name in _DERIVED:
            if name in self.__dict__ and name != "counted_times":
                frame = self.__dict__[name]
                narrow.__dict__[name] = frame.filter(pl.col("run").is_in(kept)) if frame.height else frame
        if "counted_times" in self.__dict__:
            files = narrow.tables["kernels"].select("source_file").unique() if "kernels" in narrow.tables \
                else pl.DataFrame(schema={"source_file": pl.String})
            narrow.__dict__["counted_times"] = self.counted_times.join(files, on="source_file", how="semi")
        for name in ("gpus", "clocks"):
            if name in self.__dict__:
                narrow.__dict__[name] = {run: value for run, value in self.__dict__[name].items() if run in set(kept)}
        return narrow


def derive(tables: Tables, db: gpu.GpuDatabase | None = None, partials: Partials | None = None) -> Model:
    """The model of `tables` with `db`'s peaks (the shipped GPU table when None); `partials`:
    the time and step-range partials of a dataset folder's batches (`batches.py`), which its
    run totals and `in_run_total` combine from instead of every row."""
    return Model(tables, db if db is not None else gpu.load_database(), partials)


__all__ = ["Model", "derive"]
