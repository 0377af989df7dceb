"""The runs' GPUs under other GPU settings than the logs were read with.

`roofreport.read(LOGS, gpu=...)` resolves every run's GPU with the user's word at ingest;
`analyze(data, gpu=...)` on a dataset read without it must give the same tables. `with_settings`
does what ingest would have done differently: each run's GPU again (`gpu.override` of what the
row holds, with the settings' database: a peaks file may name a GPU the logs named and the
shipped table did not know), the labels again (`labels.relabel`: they show the GPU), and the
kernel columns whose rules depend on the GPU family, for the files whose family changed
(`enrich.with_families`). The model of the tables so made follows (`derive`, in `bundle.analyze`).
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping

import polars as pl

from roofreport import gpu
from roofreport.enrich import with_families
from roofreport.pipeline import labels
from roofreport.pipeline.runs import gpu_provenance
from roofreport.tables import lazy, schema
from roofreport.tables.lazy import LazyTables

Tables = MutableMapping[str, pl.DataFrame]


def with_settings(tables: Tables, settings: gpu.GpuSettings) -> Tables:
    """A copy of `tables` (lazy ones stay lazy) whose runs, labels and family-dependent kernel
    columns are those `settings` give (module docstring)."""
    out = tables.filtered(lambda name, scan: scan) if isinstance(tables, LazyTables) else dict(tables)
    runs = tables["runs"]
    if not runs.height:
        return out
    db = settings.database()
    rows = runs.to_dicts()
    found = [_identity(row, settings, db) for row in rows]
    columns = {name: [identity.columns()[name] for identity in found] for name in found[0].columns()}
    columns["provenance"] = [_provenance(row, identity) for row, identity in zip(rows, found)]
    changed = {run: identity.family for run, identity, before in zip(runs["run"], found, runs["gpu_family"])
               if identity.family != before}
    out["runs"] = labels.relabel(runs.with_columns(pl.Series(name, values, dtype=runs.schema[name])
                                                   for name, values in columns.items()))
    if changed:
        out["kernels"] = _kernels_again(tables, changed)
    return out


def _identity(row: dict, settings: gpu.GpuSettings, db: gpu.GpuDatabase) -> gpu.GpuIdentity:
    if row.get("device_kind") == "cpu":
        return gpu.CPU
    found = gpu.GpuIdentity.from_row(row, db)
    return gpu.override(found, settings.gpu, db) if settings.gpu else found


def _provenance(row: dict, found: gpu.GpuIdentity) -> str:
    """The row's provenance JSON with its gpu entries for `found` (as ingest writes them)."""
    provenance = json.loads(row["provenance"] or "{}")
    before = provenance.get("gpu") if row.get("gpu_evidence") == gpu.PATH else None
    gpu_provenance(provenance, found, named_by=before, from_toml=provenance.get("gpu") == "toml"
                   and found.evidence == gpu.USER and found.name == row.get("gpu"))
    return json.dumps(provenance, sort_keys=True, default=str)


def _kernels_again(tables: Tables, families: dict[str, str | None]) -> pl.DataFrame:
    """The kernels, those of the runs in `families` enriched again with their new family."""
    kernels = tables["kernels"]
    of_runs = kernels.filter(pl.col("run").is_in(list(families))).select("source_file", "run").unique()
    by_file = {source: families[run] for source, run in of_runs.iter_rows()}
    scan = lazy.scan(tables, "metrics")
    metrics = scan.filter(pl.col("source_file").is_in(list(by_file))).collect() if scan is not None \
        else schema.empty("metrics")
    return with_families(kernels, metrics, by_file)
