"""The FLOP and byte estimates users keep beside their logs, read as the logs are (README
"Estimates"): one file at a time by the same task (`ingest.read_one`), so `--exclude`, the
limits and incremental datasets apply to them as to any log. They fill the `estimates` table
(tables/schema.py) as written; `analysis/estimates.py` matches them to runs.

Two sources:

* an estimates file named as `ESTIMATE_NAMES` says (`estimates.toml`, `roofreport-estimates.csv`
  ...), one `[[estimate]]` table (or CSV row) per model or run: `model`, `match` (or `run`: a
  glob over run ids), `gpu`, `experiment`, `flops` or `mult_adds`, `bytes`, `batch_size`,
  `factor`, `span` (iteration, forward, run), `precision`, `note`;
* a torchinfo `summary()` printout (any text file whose first 256 KiB say `Total mult-adds
  (G): 7.61`, a log among them): its mult-adds, its "Estimated Total Size (MB)" as bytes, the
  batch of its first output shape; forward pass only.

An entry that does not read (a number that is not one, a span not in `SPANS`) is the file's
error, naming the entry; the entries before and after it are kept.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from roofreport.errors import ParseError, UsageError
from roofreport.tables import schema
from roofreport.userfiles import read_records

ESTIMATE_NAMES = ("roofreport-estimates.toml", "roofreport_estimates.toml", "estimates.toml",
                  "roofreport-estimates.csv", "roofreport_estimates.csv", "estimates.csv")
SPANS = ("iteration", "forward", "run")
HEAD_BYTES = 256 * 1024            # a printout's summary is in a text file's first 256 KiB
MAX_FILE_BYTES = 8 * 1024 * 1024   # larger files are neither estimates files nor printouts
MARK = b"Total mult-adds ("
_MULT_ADDS = re.compile(r"Total mult-adds \((?:Units\.)?([A-Za-z]*)\):\s*([\d.,]+)")
_TOTAL_SIZE = re.compile(r"Estimated Total Size \(MB\):\s*([\d.,]+)")
_FIRST_SHAPE = re.compile(r"^\S.*?\s\[(\d+)(?:,[^\]]*)?\]", re.M)
_SCALE = {"": 1.0, "NONE": 1.0, "K": 1e3, "KILO": 1e3, "M": 1e6, "MEGABYTES": 1e6, "MEGA": 1e6,
          "G": 1e9, "GIGABYTES": 1e9, "GIGA": 1e9, "T": 1e12, "TERABYTES": 1e12, "TERA": 1e12}
_NUMBERS = ("flops", "mult_adds", "bytes", "batch_size", "factor")
_WORDS = ("precision", "model", "gpu", "experiment", "note")


def is_estimates_file(path: Path) -> bool:
    return path.name.lower() in ESTIMATE_NAMES


def read_estimates(path: Path, display: str, size: int) -> tuple[pl.DataFrame, str | None]:
    """The `estimates` rows of one file (an estimates file, or any text file holding a torchinfo
    printout; else none) and the file's error, if an entry did not read."""
    if size > MAX_FILE_BYTES or not path.is_file():    # (a named pipe, a device: never opened)
        return schema.empty("estimates"), None
    if is_estimates_file(path):
        return _from_file(path, display)
    try:
        with path.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return schema.empty("estimates"), None
    if MARK not in head:
        return schema.empty("estimates"), None
    parsed = parse_torchinfo(head.decode("utf-8", "replace"))
    if parsed is None:
        return schema.empty("estimates"), None
    return _frame([{"kind": "torchinfo", "entry": 1, "source_line": parsed.pop("line"), **parsed,
                    "span": "forward", "precision": "fp32"}], display), None


def parse_torchinfo(text: str) -> dict | None:
    """{"mult_adds", "bytes", "batch_size", "line"} from a torchinfo summary printout (`line`:
    the line of its mult-adds), or None."""
    match = _MULT_ADDS.search(text)
    if not match:
        return None
    unit = match.group(1).upper()
    mult_adds = float(match.group(2).replace(",", "")) * _SCALE.get(unit, 1.0)
    size = _TOTAL_SIZE.search(text)
    header = text.find("Layer (type")
    shape = _FIRST_SHAPE.search(text, header if header >= 0 else 0)
    return {"mult_adds": mult_adds, "bytes": float(size.group(1).replace(",", "")) * 1e6 if size else None,
            "batch_size": int(shape.group(1)) if shape else None, "line": text.count("\n", 0, match.start()) + 1}


def _from_file(path: Path, display: str) -> tuple[pl.DataFrame, str | None]:
    try:
        entries = read_records(path, "estimate", "estimates file")
    except UsageError as exc:
        return schema.empty("estimates"), ParseError(str(exc), path=display).describe()
    rows, errors = [], []
    for index, raw in enumerate(entries, start=1):
        entry = {key: value for key, value in raw.items() if value not in (None, "")}
        try:
            rows.append(_entry(entry, index))
        except ValueError as exc:
            errors.append(f"entry {index}: {exc}")
    error = None
    if errors:
        error = ParseError(f"estimates file: {'; '.join(errors[:3])}"
                           + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else "")
                           + ": left out, the other entries kept", path=display).describe()
    return _frame(rows, display), error


def _entry(entry: dict, index: int) -> dict:
    row = {"kind": "entry", "entry": index}
    for key in _NUMBERS:
        value = entry.get(key)
        if value is None:
            continue
        try:
            row[key] = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{key} = {value!r} is not a number") from None
    span = str(entry.get("span") or "iteration")
    if span not in SPANS:
        raise ValueError(f"span = {span!r} is not one of {', '.join(SPANS)}")
    row["span"] = span
    row["precision"] = str(entry.get("precision") or "fp32")
    pattern = entry.get("match") or entry.get("run")
    row["match"] = str(pattern) if pattern is not None else None
    row.update({key: str(entry[key]) for key in _WORDS[1:] if entry.get(key) is not None})
    return row


def _frame(rows: list[dict], display: str) -> pl.DataFrame:
    if not rows:
        return schema.empty("estimates")
    frame = pl.DataFrame(rows, schema={key: schema.ESTIMATES[key] for key in {k for r in rows for k in r}})
    return schema.conform("estimates", frame.with_columns(pl.lit(display, pl.String).alias("source_file")))
