"""A dataset folder's run totals, from its batches one at a time (`store.Pending`).

A campaign's rows never sit in memory at once. Each batch of files gives its partials
(`totals.file_partials`, `iterations.step_partials`: sums, first kernels, early copies,
devices, loss launches, step ranges per run and file), kept beside the batch
(`Pending.derived_file`) and linked into the next generation while its rows are unchanged; the
runs' time and iteration totals combine them (`totals.time_totals`, `totals.iteration_totals`).

What needs a whole run (the FLOPs and bytes of counted kernels, their alignment with a
trace's launches, the roofline point) is worked out for the runs that counted kernels, a few
runs at a time: the runs of one batch, with their rows from every batch that holds them. Its
memory is bounded by the largest run, not by the campaign. The other runs need only their row
of the runs table and the peaks a `roofline.csv` measured (a scan of `metrics`).

An update works out the totals of the runs whose rows or row changed (`Pending.touched`) and
keeps the others' from the previous runs table.
"""

from __future__ import annotations

import polars as pl

from roofreport import gpu
from roofreport.model import Model, counted, timing
from roofreport.model import iterations as steps_counted
from roofreport.model import totals as run_totals
from roofreport.tables import schema

_TIME, _STEPS, _COUNTED = "time_partials", "step_partials", "counted_runs"


def runs_table(pending, db: gpu.GpuDatabase) -> pl.DataFrame:
    """The runs table of a pending update (`store.Pending`) with its run totals."""
    runs = pending.runs
    base = runs.drop([c for c in schema.RUN_TOTALS if c in runs.columns])
    touched = pending.touched
    previous = pending.previous_runs() if touched is not None else None
    if previous is not None:
        kept = previous.filter(~pl.col("run").is_in(sorted(touched))).select("run", *schema.RUN_TOTALS)
        runs = runs.filter(pl.col("run").is_in(sorted(touched)))
    time, steps, counted_runs = batch_partials(pending)
    if touched is not None:
        keep = pl.col("run").is_in(sorted(touched))
        time, steps, counted_runs = time.filter(keep), steps.filter(keep), counted_runs.filter(keep)
    totals = [_uncounted(pending, runs, time, steps, counted_runs, db)]
    totals += _counted(pending, runs, time, steps, counted_runs, db)
    if previous is not None:
        totals.append(kept)
    found = pl.concat([t.select("run", *schema.RUN_TOTALS) for t in totals if t.height], how="vertical") \
        if any(t.height for t in totals) else pl.DataFrame(schema={"run": pl.String, **schema.RUN_TOTALS})
    return schema.conform("runs", run_totals.with_bound_reasons(base.join(found, on="run", how="left",
                                                                           maintain_order="left")))


def batch_partials(pending) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Every batch's time and step-range partials and the runs it holds counted kernels of,
    read where kept, else worked out from the batch's rows (and kept), one batch at a time."""
    time, steps, counted_runs = [], [], []
    for entry in pending.batches:
        paths = [pending.derived_file(entry["id"], name) for name in (_TIME, _STEPS, _COUNTED)]
        if entry["id"] in pending.written or not all(p.is_file() for p in paths):
            frames = _partials_of(pending.tables([entry["id"]]))
            for path, frame in zip(paths, frames):
                path.parent.mkdir(parents=True, exist_ok=True)
                frame.write_parquet(path)
        else:
            frames = [pl.read_parquet(p) for p in paths]
        for found, frame in zip((time, steps, counted_runs), frames):
            found.append(frame)
    return (_concat(time, run_totals.PARTIAL), _concat(steps, steps_counted.PARTIAL),
            _concat(counted_runs, {"run": pl.String}))


def stored_partials(generation) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """The time and step-range partials kept with a dataset folder's generation (`generation`:
    its folder, `Dataset.generation`), or None when it has none (a folder written before
    partials were kept)."""
    if generation is None:
        return None
    from roofreport.pipeline.store import derived_files

    found = []
    for name, columns in ((_TIME, run_totals.PARTIAL), (_STEPS, steps_counted.PARTIAL)):
        paths = derived_files(generation, name)
        if paths is None:
            return None
        found.append(_concat([pl.read_parquet(path) for path in paths], columns))
    return found[0], found[1]


def _partials_of(tables) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    # (only the columns read: the kernels' counters for which runs counted, those of the time rows)
    counted_runs = tables.scan("kernels").filter(counted.has_counter() & pl.col("run").is_not_null()) \
        .select("run").unique().collect()
    batch = {name: tables.scan(name).select(columns).collect() for name, columns in timing.READ_COLUMNS.items()}
    batch["regions"] = tables.scan("regions").collect()
    batch["files"] = tables["files"]
    return (run_totals.file_partials(batch), steps_counted.step_partials(batch["regions"]),
            counted_runs.sort("run"))


def _concat(frames: list[pl.DataFrame], columns: dict) -> pl.DataFrame:
    frames = [f for f in frames if f.height]
    return pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=columns)


def _uncounted(pending, runs: pl.DataFrame, time: pl.DataFrame, steps: pl.DataFrame,
               counted_runs: pl.DataFrame, db: gpu.GpuDatabase) -> pl.DataFrame:
    """The totals of the runs that counted no kernel: time and iterations from the partials,
    the roofs from their GPU (and a `roofline.csv`'s measured peaks)."""
    counted_ids = set(counted_runs["run"].to_list())
    keep = ~pl.col("run").is_in(sorted(counted_ids))
    wanted = set(runs.filter(keep)["run"].to_list())
    # (the metrics of the batches that hold these runs: an update's few runs scan few batches)
    holding = [entry["id"] for entry in pending.batches if not wanted.isdisjoint(entry["runs"])]
    tables = {"runs": runs.filter(keep), "files": pending.files,
              "metrics": pending.tables(holding).scan("metrics")}
    model = Model(tables, db, partials=(time.filter(keep), steps.filter(keep)))
    return model.totals


def _counted(pending, runs: pl.DataFrame, time: pl.DataFrame, steps: pl.DataFrame,
             counted_runs: pl.DataFrame, db: gpu.GpuDatabase) -> list[pl.DataFrame]:
    """The totals of the runs that counted kernels, the runs of one batch at a time with all
    their rows (from every batch that holds them)."""
    wanted = set(counted_runs["run"].to_list()) & set(runs["run"].to_list())
    out = []
    for entry in pending.batches:
        group = sorted(wanted & set(entry["runs"]))
        if not group:
            continue
        wanted -= set(group)
        holding = [e["id"] for e in pending.batches if not set(e["runs"]).isdisjoint(group)]
        keep = pl.col("run").is_in(group)
        scans = pending.tables(holding)
        tables = {name: scans.scan(name).filter(keep).collect() for name in schema.PARSED_TABLES}
        tables["runs"], tables["files"] = runs.filter(keep), pending.files
        model = Model(tables, db, partials=(time.filter(keep), steps.filter(keep)))
        out.append(model.totals)
    return out
