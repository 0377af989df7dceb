"""Human labels of runs, from what they are (model · GPU · parameters), never from their paths.

A label leads with the model (or, for a program with no model, its command: `q3_2a.o 1`; else
the experiment the names give), then the run's GPU, then the experiment and the parameters that
vary across the dataset, in a fixed order: `alexnet · Tesla K80 · bs 16 · lr 0.01 · full`.
A parameter varies when runs give it two or more values; one that only some runs have
(`timeout 600 s`) is shown where it tells runs apart that would otherwise read alike. Labels are
unique within a dataset: runs that still read alike get their job id, their session, or a
number; a duplicate reads as its original's label with "(copy)".

A label names each parameter once (issue #32), from its best source: what the job says of itself
(roofreport.toml, the log's own printout), then the path, then the command line. A parameter two
sources give under two names with the same value in every run (`kernel 3` from the path,
`kernel_size 3` from `--kernel_size 3`) is shown once, from the better source; the program's
flags whose parameters the label shows are left out of its lead (`conv2d.py`, not
`conv2d.py --kernel_size 3 --stride 1`); an experiment word that only restates what the rest of
the label says (`k3_s1_n64` beside `kernel_size 3 · size 64 · stride 1`, `fma_n256` beside
`gpp_fma.x 256`) is left out where the labels stay as distinct without it.

`assign(rows)` labels the runs of a dataset at ingest; `relabel(runs)` labels a runs table again
when the analysis changes its GPUs (`--gpu`), so both give the same labels.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

import polars as pl

from roofreport.gpu import NOT_NAMED
from roofreport.pipeline import identity
from roofreport.tables import schema

SEPARATOR = " · "
# Parameters in the order a label shows them; the others follow alphabetically.
_ORDER = ("batch_size", "learning_rate", "precision", "workers", "optimizer", "epochs")
# How the program or its profiler was launched, not what work it did (a time-out; the rank of
# one process of a distributed job, whose ranks do the same work): last in a label, only when
# it varies, and never part of a workload (analysis/workloads.py).
LAUNCH_ONLY = ("timeout_s", "rank")
# A key the label says under a better source's name (`restated`): in a run's shown keys with this
# mark, so that the program's flag that set it leaves the lead, but never described twice.
SAID_AS = "="
# The size a job named by its folder alone carries (`traces (8 ranks)`: its traces say no rank):
# what tells it from another job of the same folder (`job_name`, `job_base`).
_JOB_SIZE = re.compile(r"\((?:\d+ )?ranks\)$")


def job_name(folder: str, world_size: int | None) -> str:
    """The name of a job whose traces say no rank: its folder and its size (`traces (8 ranks)`,
    `(ranks)` at the input's top and of unknown size)."""
    size = f"({world_size} ranks)" if world_size else "(ranks)"
    return f"{folder} {size}" if folder != "." else size


def job_base(name: str) -> str:
    """A job's name less the size `job_name` gave it (`traces`), for a heading that says the
    job's ranks itself; another job's name as it is; empty for a job at the input's top."""
    return _JOB_SIZE.sub("", name).rstrip()


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
             "all_params": json.loads(row["all_params"] or "{}"),
             "provenance": json.loads(row.get("provenance") or "{}")} for row in runs.to_dicts()]
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
    """Per row, the keys its label shows: those that vary across `rows` (less those that restate a
    better source's, `restated`), and where runs would still read alike, the keys that tell them
    apart (`timeout_s` on one of two alike runs); an experiment that restates the rest of the
    label is left out (`_without_restated_experiment`)."""
    again = restated(rows, keys)
    base = [key for key in varying(rows, keys) if key not in again] + [SAID_AS + key for key in sorted(again)]
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
    return _without_restated_experiment(rows, out)


def value(row: dict, key: str):
    """A row's value of `key`: its own column, else its parameters."""
    if key in row and key != "params":
        return row[key]
    return row.get("params", {}).get(key)


# Where a parameter came from, best first (a label takes each parameter from its best source):
# what the job says of itself, then its path (and the name it echoed), then its command line.
_JOB, _PATH, _COMMAND = 0, 1, 2
_PATH_SOURCES = ("path", "label", "folder")


def source_rank(row: dict, key: str) -> int:
    """How good the source of the row's `key` is (`_JOB` best): the provenance ingest recorded,
    with a log's parameter read from its command line ranked after the path's."""
    source = (row.get("provenance") or {}).get(key)
    if source in _PATH_SOURCES:
        return _PATH
    if source == "log" and key in _command_facts(row.get("command")):
        return _COMMAND
    return _JOB


def restated(rows: list[dict], keys: list[str]) -> set[str]:
    """The varying keys that only restate a better source's parameter: the same value in every
    run, under another name, from a worse source (`kernel_size` from the command line beside the
    path's `kernel`; `height` and `width` beside `size`). Two names of one source are two
    parameters, whatever their values."""
    candidates = [key for key in varying(rows, keys) if key not in ("experiment", *LAUNCH_ONLY)]
    columns = {key: [_hashable(value(row, key)) for row in rows] for key in candidates}
    ranks = {key: min(source_rank(row, key) for row in rows if value(row, key) is not None) for key in candidates}
    out = set()
    for key in candidates:
        for better in candidates:
            if better != key and better not in out and ranks[better] < ranks[key] \
                    and columns[better] == columns[key]:
                out.add(key)
                break
    return out


_WORD = re.compile(r"[A-Za-z0-9]+")
_SHORT_KEY = re.compile(r"(?i)([a-z]{1,3})?(\d+(?:\.\d+)?)")


def _without_restated_experiment(rows: list[dict], shown: list[list[str]]) -> list[list[str]]:
    """`shown` without the experiment of each run whose experiment only restates the rest of its
    label (each of its words is a word of the label, or a short key and a number the label
    holds: `k3_s1_n64` beside `kernel_size 3 · size 64 · stride 1`), where its label stays
    distinct from every other run's without it."""
    texts = [label(row, keys) for row, keys in zip(rows, shown)]
    out = [list(keys) for keys in shown]
    for index, (row, keys) in enumerate(zip(rows, shown)):
        name = str(row.get("experiment") or "")
        if "experiment" not in keys or not name or name == lead(row, keys):
            continue
        rest = [key for key in keys if key != "experiment"]
        text = label(row, rest)
        words = {w.lower() for w in _WORD.findall(text)}
        tokens = [t for t in re.split(r"[\s_.-]+", name.lower()) if t]
        if all(t in words or ((short := _SHORT_KEY.fullmatch(t)) and short[2] in words) for t in tokens) \
                and text not in texts[:index] + texts[index + 1:]:
            out[index], texts[index] = rest, text
    return out


def label(row: dict, shown: list[str]) -> str:
    """The label of one run: lead · GPU · experiment · parameters in `shown`."""
    parts = [lead(row, shown)]
    parts.append(row.get("gpu_label") or NOT_NAMED)
    if "experiment" in shown and row.get("experiment") and row.get("experiment") != parts[0]:
        parts.append(str(row["experiment"]))
    for key in shown:
        if key in ("experiment", "model_size") or key.startswith(SAID_AS):
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


def lead(row: dict, shown: list[str] | None = None) -> str:
    """What a run is before its GPU and parameters: the model (with its size), else the
    profiled program with its first arguments, else the experiment. Given the keys its label
    shows (`shown`), the program's flags that set one of them are left out: the label says
    `kernel_size 3` once, not `--kernel_size 3` as well."""
    if row.get("model"):
        size = row.get("params", {}).get("model_size")
        return f"{row['model']} {size}" if size else str(row["model"])
    command = row.get("command")
    if command and row.get("program"):
        args = command.split(row["program"], 1)[-1].split()
        if shown:
            args = _arguments_not_shown(row["program"], args, {key.lstrip(SAID_AS) for key in shown})
        return " ".join([row["program"], *args[:4]])[:48]
    if row.get("experiment"):
        return str(row["experiment"])
    if row.get("program"):
        return str(row["program"])
    return str(row.get("tool") or "run")


def _arguments_not_shown(program: str, args: list[str], shown: set[str]) -> list[str]:
    """The arguments without the flags (and their values) that set a parameter in `shown`."""
    out: list[str] = []
    index = 0
    while index < len(args):
        flag, _, used = identity._flag(args, index)
        tokens = args[index:index + used]
        index += used
        if flag is not None:
            said = set(_command_facts(" ".join([program, *tokens]))) - {"program"}
            if said and said <= shown:
                continue
        out += tokens
    return out


@lru_cache(maxsize=4096)
def _command_facts(command: str | None) -> dict:
    return identity.read_command(command) if command else {}


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
