"""Human labels of runs, from what they are (model · GPU · parameters), never from their paths.

A label leads with the model (or, for a program with no model, its command: `q3_2a.o 1`; else
the experiment the names give), then the run's GPU, then the experiment and the parameters that
vary across the dataset, in a fixed order: `alexnet · Tesla K80 · bs 16 · lr 0.01 · full`.
A parameter varies when runs give it two or more values; one that only some runs have
(`timeout 600 s`) is shown where it tells runs apart that would otherwise read alike. Labels are
unique within a dataset: runs that still read alike get their job id, their session, or a
number; a duplicate reads as its original's label with "(copy)".
"""

from __future__ import annotations

SEPARATOR = " · "
UNKNOWN_GPU = "unknown GPU"
# Parameters in the order a label shows them; the others follow alphabetically.
_ORDER = ("batch_size", "learning_rate", "precision", "workers", "optimizer", "epochs")
# How the program or its profiler was launched, not what work it did (a time-out; the rank of
# one process of a distributed job, whose ranks do the same work): last in a label, only when
# it varies, and never part of a workload (analysis/workloads.py).
LAUNCH_ONLY = ("timeout_s", "rank")


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
    parts.append(row.get("gpu_label") or UNKNOWN_GPU)
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
