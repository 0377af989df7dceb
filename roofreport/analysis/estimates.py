"""Analytic FLOP and byte estimates for runs, read from files beside the logs.

Two sources (README "Estimates"):

* an estimates file named `roofreport-estimates.toml` / `estimates.toml` (or `.csv` with the
  same keys as columns), one `[[estimate]]` per model or run:

      [[estimate]]
      model = "vgg11"          # every run of this model (or: match = "a100/*", a glob over run ids)
      mult_adds = 7.61e9       # multiply-adds; FLOPs = 2 x mult-adds (or give flops = ...)
      bytes = 5.2e8            # DRAM bytes moved (optional)
      batch_size = 1           # samples the numbers are for: scaled to each run's batch size
      factor = 3               # e.g. 3 = forward + backward of training
      span = "iteration"       # what the numbers cover: "iteration" (the default), "forward"
                               # (one forward pass) or "run" (the whole run, e.g. x iterations)
      precision = "fp32"       # which peak: fp64 fp32 fp16 tensor_fp16 tensor_tf32 tensor_bf16

* a torchinfo `summary()` printout saved beside the logs (any text file whose first 256 KiB say
  `Total mult-adds (G): 7.61`): FLOPs = 2 x mult-adds (torchinfo counts a multiply-add as one),
  bytes = its "Estimated Total Size (MB)" x 1e6 (input + activations + parameters, each touched
  at least once: a lower bound on traffic), for the batch of its first output shape, forward
  pass only (span "forward"); it applies to the runs of the logs in its directory.

An estimate is compared with the measurement over the same span only (compare.estimates): per
iteration, per forward pass of an inference run, or over a whole run that was not cut short.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from roofreport.errors import UsageError
from roofreport.userfiles import read_records

ESTIMATE_NAMES = ("roofreport-estimates.toml", "roofreport_estimates.toml", "estimates.toml",
                  "roofreport-estimates.csv", "roofreport_estimates.csv", "estimates.csv")
_HEAD = 256 * 1024
_MAX_SUMMARY_FILE = 8 * 1024 * 1024
_MULT_ADDS = re.compile(r"Total mult-adds \((?:Units\.)?([A-Za-z]*)\):\s*([\d.,]+)")
_TOTAL_SIZE = re.compile(r"Estimated Total Size \(MB\):\s*([\d.,]+)")
_FIRST_SHAPE = re.compile(r"^\S.*?\s\[(\d+)(?:,[^\]]*)?\]", re.M)
SPANS = ("iteration", "forward", "run")
_SCALE = {"": 1.0, "NONE": 1.0, "K": 1e3, "KILO": 1e3, "M": 1e6, "MEGABYTES": 1e6, "MEGA": 1e6,
          "G": 1e9, "GIGABYTES": 1e9, "GIGA": 1e9, "T": 1e12, "TERABYTES": 1e12, "TERA": 1e12}


@dataclass(frozen=True)
class Estimate:
    """Estimated work of one run (FLOP, bytes), the peak to judge it by, and where it came from."""

    run: str
    flops: float | None
    bytes: float | None
    precision: str
    source: str
    span: str = "iteration"   # SPANS: what the numbers cover


def find_estimates(inputs: list[Path], tables: dict[str, pl.DataFrame]) -> list[Estimate]:
    """Every estimate the inputs hold, matched to the runs in `tables`."""
    runs = _runs(tables)
    out: list[Estimate] = []
    for path in _files(inputs):
        if path.name.lower() in ESTIMATE_NAMES:
            out += _from_table(path, runs)
        elif _looks_like_summary(path):
            out += _from_torchinfo(path, runs, tables)
    return out


def _files(inputs: list[Path]):
    for given in inputs:
        if given.is_file():
            yield given
            continue
        for dirpath, dirnames, filenames in os.walk(given):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                yield Path(dirpath) / name


def _runs(tables: dict[str, pl.DataFrame]) -> list[dict]:
    runs = tables.get("runs")
    return runs.to_dicts() if runs is not None and runs.height else []


# -- estimates files -------------------------------------------------------------------------

def read_entries(path: Path) -> list[dict]:
    """The raw entries of an estimates file (TOML `[[estimate]]` tables or CSV rows)."""
    entries = read_records(path, "estimate", "estimates file")
    return [{k: v for k, v in e.items() if v not in (None, "")} for e in entries]


def _number(entry: dict, key: str, path: Path) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"estimates file {path}: {key} = {value!r} is not a number") from exc


def _from_table(path: Path, runs: list[dict]) -> list[Estimate]:
    out = []
    for index, entry in enumerate(read_entries(path), start=1):
        flops = _number(entry, "flops", path)
        mult_adds = _number(entry, "mult_adds", path)
        if flops is None and mult_adds is not None:
            flops = 2.0 * mult_adds
        precision = str(entry.get("precision") or "fp32")
        span = str(entry.get("span") or "iteration")
        if span not in SPANS:
            raise UsageError(f"estimates file {path}: span = {span!r} is not one of {', '.join(SPANS)}")
        label = _describe(entry, path, index, flops, mult_adds)
        for run in _matching(entry, runs):
            scale = _scale(run, _number(entry, "batch_size", path)) * (_number(entry, "factor", path) or 1.0)
            out.append(Estimate(run["run"], _times(flops, scale), _times(_number(entry, "bytes", path), scale),
                                precision, label + (f", x{scale:g}" if scale != 1 else ""), span))
    return out


def _describe(entry: dict, path: Path, index: int, flops: float | None, mult_adds: float | None) -> str:
    what = f"FLOPs = 2 x {mult_adds:g} mult-adds" if mult_adds is not None and entry.get("flops") is None \
        else (f"{flops:g} FLOPs" if flops is not None else "no FLOPs")
    note = f" ({entry['note']})" if entry.get("note") else ""
    return f"{path.name} entry {index}: {what}{note}"


def _matching(entry: dict, runs: list[dict]) -> list[dict]:
    pattern = entry.get("match") or entry.get("run")
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

def _looks_like_summary(path: Path) -> bool:
    try:
        if path.stat().st_size > _MAX_SUMMARY_FILE:
            return False
        with path.open("rb") as fh:
            head = fh.read(_HEAD)
    except OSError:
        return False
    return b"Total mult-adds (" in head


def parse_torchinfo(text: str) -> dict | None:
    """{"mult_adds", "bytes", "batch_size"} from a torchinfo summary printout, or None."""
    match = _MULT_ADDS.search(text)
    if not match:
        return None
    unit = match.group(1).upper()
    mult_adds = float(match.group(2).replace(",", "")) * _SCALE.get(unit, 1.0)
    size = _TOTAL_SIZE.search(text)
    header = text.find("Layer (type")
    shape = _FIRST_SHAPE.search(text, header if header >= 0 else 0)
    return {"mult_adds": mult_adds, "bytes": float(size.group(1).replace(",", "")) * 1e6 if size else None,
            "batch_size": int(shape.group(1)) if shape else None}


def _from_torchinfo(path: Path, runs: list[dict], tables: dict[str, pl.DataFrame]) -> list[Estimate]:
    with path.open("rb") as fh:
        parsed = parse_torchinfo(fh.read(_HEAD).decode("utf-8", "replace"))
    if parsed is None:
        return []
    beside = _runs_in_dir(tables, path.parent)
    out = []
    for run in runs:
        if run["run"] not in beside:
            continue
        scale = _scale(run, parsed["batch_size"])
        batch = f"batch {parsed['batch_size']}" if parsed["batch_size"] else "batch unknown"
        source = (f"torchinfo summary {path.name}: FLOPs = 2 x {parsed['mult_adds']:g} mult-adds, forward pass, "
                  f"{batch}" + (f", scaled x{scale:g} to batch {run['batch_size']}" if scale != 1 else ""))
        out.append(Estimate(run["run"], 2.0 * parsed["mult_adds"] * scale, _times(parsed["bytes"], scale),
                            "fp32", source, "forward"))
    return out


def _runs_in_dir(tables: dict[str, pl.DataFrame], folder: Path) -> set[str]:
    files = tables.get("files")
    if files is None or not files.height:
        return set()
    here = str(folder.resolve())
    rows = files.filter(pl.col("run").is_not_null()).select("path", "run").iter_rows()
    return {run for p, run in rows if str(Path(p).resolve().parent) == here}
