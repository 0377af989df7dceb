"""Human labels of runs, from what they are (model · GPU · parameters), never from their paths.

A label leads with the model (or, for a program with no model, its command: `q3_2a.o 1`; else
the experiment the names give), then the run's GPU, then the experiment and the parameters that
vary across the dataset, in a fixed order: `alexnet · Tesla K80 · bs 16 · lr 0.01 · full`.
A parameter varies when runs give it two or more values; one that only some runs have
(`timeout 600 s`) is shown where it tells runs apart that would otherwise read alike. Labels are
unique within a dataset: runs that still read alike get their job id, their session, or a
number; a duplicate reads as its original's label with "(copy)".

`assign(rows)` labels the runs of a dataset at ingest; `relabel(runs)` labels a runs table again
when the analysis changes its GPUs (`--gpu`), so both give the same labels.
"""

from __future__ import annotations

import json

import polars as pl

from roofreport.gpu import NOT_NAMED
from roofreport.tables import schema

SEPARATOR = " · "
# Parameters in the order a label shows them; the others follow alphabetically.
_ORDER = ("batch_size", "learning_rate", "precision", "workers", "optimizer", "epochs")
# How the program or its profiler was launched, not what work it did (a time-out; the rank of
# one process of a distributed job, whose ranks do the same work): last in a label, only when
# it varies, and never part of a workload (analysis/workloads.py).
LAUNCH_ONLY = ("timeout_s", "rank")


def assign(rows: list[dict]) -> None:
    """Each row's `label` (unique, from its identity) and `params`: its `all_params` narrowed to
    what the label shows, the parameters that vary across the runs (copies do not count). A
    copy reads as its original, with "(copy)"."""
    for row in rows:
        row["params"] = dict(row["all_params"])
    keys = sorted({key for row in rows for key in row["params"]} | {"experiment"})
    originals = [row for row in rows if not row["duplicate_of"]]
    shown_keys = dict(zip((row["run"] for row in originals), shown(originals, keys)))
    texts = unique([label(row, shown_keys[row["run"]]) for row in originals], originals)
    label_of = {row["run"]: text for row, text in zip(originals, texts)}
    copies: dict[str, int] = {}
    for row in rows:
        original = row["duplicate_of"]
        if original:
            copies[original] = copies.get(original, 0) + 1
            shown_keys[row["run"]] = shown_keys.get(original, [])
    seen: dict[str, int] = {}
    for row in rows:
        original = row["duplicate_of"]
        if original:
            seen[original] = seen.get(original, 0) + 1
            number = f" {seen[original]}" if copies[original] > 1 else ""
            row["label"] = f"{label_of.get(original, row['run'])} (copy{number})"
        else:
            row["label"] = label_of[row["run"]]
        row["params"] = {k: v for k, v in row["params"].items() if k in shown_keys[row["run"]]}


def relabel(runs: pl.DataFrame) -> pl.DataFrame:
    """A runs table's `label` and `params` made again from its rows (`assign`)."""
    if not runs.height:
        return runs
    # (the run totals are the analysis'; a label is made from what ingest knew)
    rows = [{**{k: v for k, v in row.items() if k not in schema.RUN_TOTALS},
             "all_params": json.loads(row["all_params"] or "{}")} for row in runs.to_dicts()]
    assign(rows)
    return runs.with_columns(
        pl.Series("label", [row["label"] for row in rows], dtype=pl.String),
        pl.Series("params", [json.dumps(row["params"], sort_keys=True, default=str) for row in rows], dtype=pl.String))


def varying(rows: list[dict], keys: list[str]) -> list[str]:
    """The keys that take two or more values across the rows, in label order."""
    out = []
    for key in keys:
        values = {_hashable(value(row, key)) for row in rows} - {None}
        if len(values) > 1:
            out.append(key)
    return sorted(out, key=param_order)


def shown(rows: list[dict], keys: list[str]) -> list[list[str]]:
    """Per row, the keys its label shows: those that vary across `rows`, and where runs would
    still read alike, the keys that tell them apart (`timeout_s` on one of two alike runs)."""
    base = varying(rows, keys)
    out = [list(base) for _ in rows]
    texts = [label(row, base) for row in rows]
    by_text: dict[str, list[int]] = {}
    for index, text in enumerate(texts):
        by_text.setdefault(text, []).append(index)
    for indices in by_text.values():
        if len(indices) < 2:
            continue
        alike = [rows[i] for i in indices]
        extra = [key for key in keys if key not in base
                 and len({_hashable(value(row, key)) for row in alike}) > 1]
        for index in indices:
            out[index] = sorted(base + extra, key=param_order)
    return out


def value(row: dict, key: str):
    """A row's value of `key`: its own column, else its parameters."""
    if key in row and key != "params":
        return row[key]
    return row.get("params", {}).get(key)


def label(row: dict, shown: list[str]) -> str:
    """The label of one run: lead · GPU · experiment · parameters in `shown`."""
    parts = [lead(row)]
    parts.append(row.get("gpu_label") or NOT_NAMED)
    if "experiment" in shown and row.get("experiment") and row.get("experiment") != parts[0]:
        parts.append(str(row["experiment"]))
    for key in shown:
        if key in ("experiment", "model_size"):
            continue
        text = describe(key, value(row, key))
        if text:
            parts.append(text)
    return SEPARATOR.join(parts)


def unique(labels: list[str], rows: list[dict]) -> list[str]:
    """Labels made unique: the job id, then the session, then a number where runs read alike.
    A duplicate reads `<its original's label> (copy)`."""
    out = list(labels)
    for extra in (_job, _session, _ordinal):
        seen: dict[str, list[int]] = {}
        for index, text in enumerate(out):
            seen.setdefault(text, []).append(index)
        clashes = [indices for indices in seen.values() if len(indices) > 1]
        if not clashes:
            break
        for indices in clashes:
            for number, index in enumerate(indices, 1):
                addition = extra(rows[index], number)
                if addition:
                    out[index] = f"{out[index]}{SEPARATOR}{addition}"
    return out


def describe(key: str, value) -> str | None:
    """One parameter as a label shows it: `bs 16`, `lr 0.01`, `8 workers`, `draft 4-bit`."""
    if value is None:
        return None
    if key == "batch_size":
        return f"bs {value}"
    if key == "learning_rate":
        return f"lr {value:g}" if isinstance(value, float) else f"lr {value}"
    if key == "workers":
        return f"{value} workers"
    if key == "epochs":
        return f"{value} epoch" + ("" if value == 1 else "s")
    if key in ("optimizer", "precision"):
        return str(value)
    if key == "timeout_s":
        return f"timeout {value} s"
    if key.endswith("_bits"):
        return f"{key[:-5]} {value}-bit"
    if isinstance(value, bool):
        return f"{key} {'on' if value else 'off'}"
    return f"{key} {value}"


def lead(row: dict) -> str:
    """What a run is before its GPU and parameters: the model (with its size), else the
    profiled program with its first arguments, else the experiment."""
    if row.get("model"):
        size = row.get("params", {}).get("model_size")
        return f"{row['model']} {size}" if size else str(row["model"])
    command = row.get("command")
    if command and row.get("program"):
        args = command.split(row["program"], 1)[-1].split()
        return " ".join([row["program"], *args[:4]])[:48]
    if row.get("experiment"):
        return str(row["experiment"])
    if row.get("program"):
        return str(row["program"])
    return str(row.get("tool") or "run")


def _job(row: dict, number: int) -> str | None:
    return f"job {row['job']}" if row.get("job") else None


def _session(row: dict, number: int) -> str | None:
    return f"session {row['session']}" if row.get("session") else None


def _ordinal(row: dict, number: int) -> str:
    return f"#{number}"


def param_order(key: str) -> tuple:
    if key == "experiment":
        return (0, 0, key)
    if key in _ORDER:
        return (1, _ORDER.index(key), key)
    if key in LAUNCH_ONLY:
        return (3, 0, key)
    return (2, 0, key)


def _hashable(value):
    return repr(value) if isinstance(value, (dict, list)) else value
