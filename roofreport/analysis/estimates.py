"""Analytic FLOP and byte estimates for runs, from the `estimates` table.

The estimates users keep beside their logs are read as the logs are (`pipeline/estimates.py`,
README "Estimates"), so `--exclude`, the limits and incremental datasets apply to them; the
table holds them as written. Here each is matched to its runs:

* an estimates file's entry (`kind` "entry") applies to the runs its `match` glob (over run
  ids), `model`, `gpu` and `experiment` name (an entry must name a `match` or a `model`); its
  FLOPs (or 2 x its mult-adds), bytes and `factor` are scaled from its `batch_size` to each
  run's, over its `span` ("iteration", "forward", "run"), judged by its `precision`'s peak;
* a torchinfo printout's (`kind` "torchinfo"): FLOPs = 2 x mult-adds (torchinfo counts a
  multiply-add as one), bytes = its "Estimated Total Size" (a lower bound on traffic), for the
  batch of its first output shape, forward pass only; it applies to the runs of the logs in
  its folder.

An estimate is compared with the measurement over the same span only (compare.estimates): per
iteration, per forward pass of an inference run, or over a whole run that was not cut short.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import PurePath

import polars as pl

SPANS = ("iteration", "forward", "run")


@dataclass(frozen=True)
class Estimate:
    """Estimated work of one run (FLOP, bytes), the peak to judge it by, and where it came from."""

    run: str
    flops: float | None
    bytes: float | None
    precision: str
    source: str
    span: str = "iteration"   # SPANS: what the numbers cover


def find_estimates(tables: dict[str, pl.DataFrame]) -> list[Estimate]:
    """Every estimate of the `estimates` table, matched to the runs of `tables`."""
    found = tables.get("estimates")
    runs = _runs(tables)
    if found is None or not found.height or not runs:
        return []
    out: list[Estimate] = []
    for entry in found.iter_rows(named=True):
        entry = {key: value for key, value in entry.items() if value is not None}
        out += _from_torchinfo(entry, runs, tables) if entry["kind"] == "torchinfo" else _from_entry(entry, runs)
    return out


def _runs(tables: dict[str, pl.DataFrame]) -> list[dict]:
    runs = tables.get("runs")
    return runs.to_dicts() if runs is not None and runs.height else []


def _name(entry: dict) -> str:
    return PurePath(entry["source_file"]).name


# -- estimates files -------------------------------------------------------------------------

def _from_entry(entry: dict, runs: list[dict]) -> list[Estimate]:
    flops, mult_adds = entry.get("flops"), entry.get("mult_adds")
    if flops is None and mult_adds is not None:
        flops = 2.0 * mult_adds
    label = _describe(entry, flops, mult_adds)
    out = []
    for run in _matching(entry, runs):
        scale = _scale(run, entry.get("batch_size")) * (entry.get("factor") or 1.0)
        out.append(Estimate(run["run"], _times(flops, scale), _times(entry.get("bytes"), scale),
                            entry.get("precision", "fp32"), label + (f", x{scale:g}" if scale != 1 else ""),
                            entry.get("span", "iteration")))
    return out


def _describe(entry: dict, flops: float | None, mult_adds: float | None) -> str:
    what = f"FLOPs = 2 x {mult_adds:g} mult-adds" if mult_adds is not None and entry.get("flops") is None \
        else (f"{flops:g} FLOPs" if flops is not None else "no FLOPs")
    note = f" ({entry['note']})" if entry.get("note") else ""
    return f"{_name(entry)} entry {entry['entry']}: {what}{note}"


def _matching(entry: dict, runs: list[dict]) -> list[dict]:
    pattern = entry.get("match")
    out = []
    for run in runs:
        if pattern is not None and not fnmatch.fnmatchcase(run["run"], str(pattern)):
            continue
        if any(entry.get(k) is not None and str(entry[k]).lower() != str(run.get(k) or "").lower()
               for k in ("model", "gpu", "experiment")):
            continue
        if pattern is None and entry.get("model") is None:
            continue  # an entry must say which runs it is for
        out.append(run)
    return out


def _scale(run: dict, batch: float | None) -> float:
    """Numbers given for `batch` samples, scaled to the run's batch size (when both are known)."""
    if batch and run.get("batch_size"):
        return run["batch_size"] / batch
    return 1.0


def _times(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


# -- torchinfo printouts ---------------------------------------------------------------------

def _from_torchinfo(entry: dict, runs: list[dict], tables: dict[str, pl.DataFrame]) -> list[Estimate]:
    beside = _runs_in_dir(tables, PurePath(entry["source_file"]).parent)
    batch_size = entry.get("batch_size")
    out = []
    for run in runs:
        if run["run"] not in beside:
            continue
        scale = _scale(run, batch_size)
        batch = f"batch {batch_size:g}" if batch_size else "batch unknown"
        source = (f"torchinfo summary {_name(entry)}: FLOPs = 2 x {entry['mult_adds']:g} mult-adds, forward pass, "
                  f"{batch}" + (f", scaled x{scale:g} to batch {run['batch_size']}" if scale != 1 else ""))
        out.append(Estimate(run["run"], 2.0 * entry["mult_adds"] * scale, _times(entry.get("bytes"), scale),
                            "fp32", source, "forward"))
    return out


def _runs_in_dir(tables: dict[str, pl.DataFrame], folder: PurePath) -> set[str]:
    """The runs of the logs in `folder` (paths as the `files` table gives them)."""
    files = tables.get("files")
    if files is None or not files.height:
        return set()
    rows = files.filter(pl.col("run").is_not_null()).select("path", "run").iter_rows()
    return {run for path, run in rows if PurePath(path).parent == folder}
