"""Which runs a report's body counts: every run but the copies of another.

The pipeline marks a run `duplicate_of` the run it copies (a file recovered from a history
folder, a `prev_*` copy, a backup, a byte-identical file, the CSV cut out of a log:
pipeline/duplicates.py). Its rows stay in the tables, so nothing read is lost; the body of a
report leaves them out (`body_tables`), and the appendix lists them (`duplicate_runs`).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from roofreport.tables.lazy import LazyTables, scan


def duplicate_ids(runs: pl.DataFrame) -> list[str]:
    """The runs that copy another."""
    if "duplicate_of" not in runs.columns:
        return []
    return runs.filter(pl.col("duplicate_of").is_not_null())["run"].to_list()


def body_tables(tables: Mapping[str, pl.DataFrame]) -> Mapping[str, pl.DataFrame]:
    """`tables` without the rows of runs that copy another (every table with a `run` column).
    Lazy tables (a dataset folder's) stay lazy: the filter goes into each table's scan."""
    copies = duplicate_ids(tables.get("runs", pl.DataFrame()))
    if isinstance(tables, LazyTables):
        if not copies:
            return tables.filtered(lambda name, scan: scan)
        return tables.filtered(lambda name, scan: scan.filter(~pl.col("run").is_in(copies) | pl.col("run").is_null())
                               if "run" in scan.collect_schema() and name != "files" else scan)
    if not copies:
        return dict(tables)
    out = {}
    for name, frame in tables.items():
        if "run" in frame.columns and name != "files":
            frame = frame.filter(~pl.col("run").is_in(copies) | pl.col("run").is_null())
        out[name] = frame
    return out


def duplicate_runs(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per copy, for an appendix: the copy, the run it copies, and the files it holds."""
    runs = tables.get("runs", pl.DataFrame())
    columns = {"run": pl.String, "label": pl.String, "duplicate_of": pl.String,
               "original_label": pl.String, "files": pl.List(pl.String)}
    if not duplicate_ids(runs):
        return pl.DataFrame(schema=columns)
    labels = runs.select(pl.col("run").alias("duplicate_of"), pl.col("label").alias("original_label"))
    copies = runs.filter(pl.col("duplicate_of").is_not_null()).select("run", "label", "duplicate_of") \
        .join(labels, on="duplicate_of", how="left")
    files = tables.get("files")
    if files is not None and files.height:
        held = _files_of_runs(files).rename({"paths": "files"})
        copies = copies.join(held, on="run", how="left")
    else:
        copies = copies.with_columns(pl.lit(None, pl.List(pl.String)).alias("files"))
    return copies.select(list(columns)).sort("duplicate_of", "run")


def _files_of_runs(files: pl.DataFrame) -> pl.DataFrame:
    """run -> the paths of its files (a file of several profiler sessions lists its runs)."""
    return files.filter(pl.col("run").is_not_null()) \
        .with_columns(pl.col("run").str.split(", ")).explode("run") \
        .group_by("run").agg(pl.col("path").alias("paths"))


GAP_COLUMNS = {"run": pl.String, "missing": pl.String, "failure": pl.String, "held": pl.List(pl.String),
               "logs_failed": pl.Boolean}
_HELD_TABLES = ("api_calls", "samples", "metrics", "activities", "regions")


def run_gaps(tables: Mapping[str, pl.DataFrame], timed: pl.DataFrame, files: list) -> pl.DataFrame:
    """One row per run of `tables` (the body's) without kernels, kernel time or a GPU name, for
    the appendix: what it misses ("kernels", "kernel time", "GPU name", joined by ", "), its
    logs' own `failure` code, the tables other than kernels that hold rows of it (`held`: what
    its logs did give, in words) and whether every file of it failed to read (`logs_failed`).
    `timed`: the run table (`compare.run_table`: `kernel_time_ns`); `files`: the FileOutcomes.
    Which runs a table holds is read from its `run` column alone (a dataset folder's tables
    stay unread otherwise)."""
    runs = tables["runs"]
    if not runs.height:
        return pl.DataFrame(schema=GAP_COLUMNS)
    with_time = set(timed.filter(pl.col("kernel_time_ns").is_not_null())["run"].to_list()) if timed.height else set()
    with_kernels = _runs_in(tables, "kernels")
    held: dict[str, list[str]] = {}
    for name in _HELD_TABLES:
        for run in sorted(_runs_in(tables, name)):
            held.setdefault(run, []).append(name.replace("_", " "))
    statuses: dict[str, list[str]] = {}
    for file in files:
        for run in (file.run or "").split(", "):
            if run:
                statuses.setdefault(run, []).append(file.status)
    rows = []
    failure = [pl.col("failure")] if "failure" in runs.columns else []
    for row in runs.select("run", "gpu_evidence", "device_kind", *failure).iter_rows(named=True):
        missing = []
        if row["run"] not in with_kernels:
            missing.append("kernels")
        elif row["run"] not in with_time:
            missing.append("kernel time")
        if not row.get("gpu_evidence") and row.get("device_kind") != "cpu":
            missing.append("GPU name")
        if missing:
            mine = statuses.get(row["run"], [])
            rows.append({"run": row["run"], "missing": ", ".join(missing), "failure": row.get("failure"),
                         "held": held.get(row["run"], []),
                         "logs_failed": bool(mine) and all(s == "error" for s in mine)})
    return pl.DataFrame(rows, schema=GAP_COLUMNS)


def _runs_in(tables: Mapping[str, pl.DataFrame], name: str) -> set[str]:
    """The runs with rows in table `name` (its `run` column only, scanned)."""
    found = scan(tables, name)
    if found is None or "run" not in found.collect_schema():
        return set()
    return set(found.select(pl.col("run").drop_nulls().unique()).collect()["run"].to_list())
