"""The folder's own question on one GPU: runs that differ in one build or code variant (FMA or
not, kernel size, stride), matched on everything else, compared as a pair of GPUs would be:
which is faster, by how much, and why (issue 31, item 11).

A variant is
* a parameter of two or three values (`MAX_VALUES`; more values make a sweep: `sweeps.py`),
  between runs whose other parameters and arguments are the same (`kernel_size 3` against `5`
  at each `size` and `stride`);
* or the program: two programs whose names differ in one word (`gpp_fma.x` against
  `gpp_nofma.x`), run with the same parameters and arguments.

Runs are matched within one GPU label, each pair on a like basis (`speedup.comparable_times`:
per iteration where both count them, else the whole run's kernel time of runs not cut short).
Per GPU, variant and pair of values: the geometric-mean speedup of the faster value, its range
over the matched pairs, and the facts that say why: the FLOP and DRAM byte ratios of the pairs
(the work itself changed) and each side's % of roof (the same work done faster or slower).
`fastest`: the row's faster value is the fastest of three or more values of its variant (faster
than every other one, each matched): page 1 ranks the others against it in one sentence instead
of one per pair.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from itertools import combinations

import polars as pl

from roofreport.analysis import speedup, workloads

MAX_VALUES = 3           # a parameter of more values is a sweep, not a variant
SAME = 0.05              # ratios within this of 1 are "the same"
COLUMNS = {
    "gpu": pl.String, "subject": pl.String, "variant": pl.String, "faster": pl.String, "slower": pl.String,
    "pairs": pl.Int64, "matched_on": pl.String, "speedup": pl.Float64, "speedup_min": pl.Float64,
    "speedup_max": pl.Float64, "faster_in": pl.Int64, "basis": pl.String,
    "flops_ratio": pl.Float64, "dram_ratio": pl.Float64,
    "faster_pct_of_roof": pl.Float64, "slower_pct_of_roof": pl.Float64, "fastest": pl.Boolean,
}
_CELL = ("run", "gpu_label", "program", "command", "params", "time_per_iteration_ns", "kernel_time_ns", "cut_short",
         "flops", "dram_bytes", "pct_of_roof", "iterations")


def variant_comparisons(runs: pl.DataFrame) -> pl.DataFrame:
    """COLUMNS: per GPU, variant and pair of values (module docstring)."""
    if not runs.height or "kernel_time_ns" not in runs.columns:
        return pl.DataFrame(schema=COLUMNS)
    timed = runs.filter(pl.col("kernel_time_ns").is_not_null() & pl.col("gpu_label").is_not_null())
    cells = []
    for row in timed.to_dicts():
        params = workloads.params_of(row)
        cells.append({**{c: row.get(c) for c in _CELL}, "args": _arguments(row),
                      "p": {k: v for k, v in params.items()
                            if k not in workloads.IN_LEAD and v is not None and str(v).lower() not in ("none", "null")},
                      "work": (row.get("model"), row.get("experiment"), row.get("phase"))})
    # An "experiment" of its own per run is no experiment (a folder per run, `k3_s1_n64`): its
    # parameters say what differs
    experiments = [c["work"][1] for c in cells]
    if len(set(experiments)) == len(experiments) > 2:
        for cell in cells:
            cell["work"] = (cell["work"][0], None, cell["work"][2])
    found: dict[tuple, list[tuple[dict, dict]]] = {}
    # the same model, experiment and program: runs that differ in one parameter
    for (gpu, _, _), group in _by(cells, lambda c: (c["gpu_label"], c["work"], _stem(c["program"]))).items():
        _param_pairs(gpu, group, found)
    for (gpu, _), group in _by(cells, lambda c: (c["gpu_label"], c["work"][1:])).items():
        _program_pairs(gpu, group, found)
    rows = [row for key, pairs in found.items() if (row := _summary(key, pairs)) is not None]
    if not rows:
        return pl.DataFrame(schema=COLUMNS)
    return _fastest(pl.DataFrame(rows, schema={k: t for k, t in COLUMNS.items() if k != "fastest"}).sort(
        "gpu", "subject", "variant"))


def _fastest(rows: pl.DataFrame) -> pl.DataFrame:
    """`rows` with `fastest` (module docstring): per GPU, subject, variant and basis of three or
    more values, the value faster in a matched pair against every other value."""
    flags = []
    for row in rows.iter_rows(named=True):
        group = rows.filter((pl.col("gpu") == row["gpu"]) & (pl.col("subject") == row["subject"])
                            & (pl.col("variant") == row["variant"]) & (pl.col("basis") == row["basis"]))
        values = set(group["faster"].to_list()) | set(group["slower"].to_list())
        beaten = set(group.filter(pl.col("faster") == row["faster"])["slower"].to_list())
        flags.append(len(values) >= 3 and beaten == values - {row["faster"]})
    return rows.with_columns(pl.Series("fastest", flags, dtype=pl.Boolean))


def _by(cells: list[dict], key) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for cell in cells:
        out.setdefault(key(cell), []).append(cell)
    return out


def _stem(program: str | None) -> str:
    return re.sub(r"\.(?:x|exe|out|py|bin)$", "", program or "")


def _arguments(row: dict) -> tuple[str, ...]:
    """The command's positional arguments after the program (`./gpp_fma.x 1024` -> ("1024",)):
    options and their values are the parameters'."""
    try:
        words = shlex.split(row.get("command") or "")
    except ValueError:
        words = (row.get("command") or "").split()
    program = row.get("program")
    if program is None or not any(w.endswith(program) for w in words):
        return ()
    rest = words[next(i for i, w in enumerate(words) if w.endswith(program)) + 1:]
    out, skip = [], False
    for word in rest:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = "=" not in word
        else:
            out.append(word)
    return tuple(out)


def _param_pairs(gpu: str, cells: list[dict], found: dict) -> None:
    names = {k for c in cells for k in c["p"]}
    for name in sorted(names):
        values = {json.dumps(c["p"].get(name), default=str) for c in cells}
        if not 2 <= len(values) <= MAX_VALUES:
            continue
        rest = _by(cells, lambda c: (json.dumps({k: v for k, v in c["p"].items() if k != name}, sort_keys=True,
                                                default=str), c["args"]))
        for group in rest.values():
            for first, second in combinations(sorted(group, key=lambda c: str(c["p"].get(name))), 2):
                if first["p"].get(name) == second["p"].get(name) or None in (first["p"].get(name),
                                                                             second["p"].get(name)):
                    continue
                key = (gpu, _stem(first["program"]) or first["work"][0] or "its runs", name.replace("_", " "),
                       _label(name, first["p"].get(name)), _label(name, second["p"].get(name)),
                       _listing([k.replace("_", " ") for k in sorted(names - {name})]))
                found.setdefault(key, []).append((first, second))


def _listing(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1] if words else ""


def _label(name: str, value) -> str:
    return f"{name.replace('_', ' ')} {value:g}" if isinstance(value, float) else f"{name.replace('_', ' ')} {value}"


def _program_pairs(gpu: str, cells: list[dict], found: dict) -> None:
    programs = sorted({c["program"] for c in cells if c["program"]})
    for first_program, second_program in combinations(programs, 2):
        word = _one_word_apart(_stem(first_program), _stem(second_program))
        if word is None:
            continue
        mine = {(json.dumps(c["p"], sort_keys=True, default=str), c["args"]): c for c in cells
                if c["program"] == first_program}
        for cell in cells:
            if cell["program"] != second_program:
                continue
            other = mine.get((json.dumps(cell["p"], sort_keys=True, default=str), cell["args"]))
            if other is not None:
                key = (gpu, word[0], "program", first_program, second_program, "parameters and arguments")
                found.setdefault(key, []).append((other, cell))


def _one_word_apart(first: str, second: str) -> tuple[str] | None:
    """(the shared name,) of two program names that differ in one word (`gpp_fma`, `gpp_nofma`),
    else None."""
    one, two = re.split(r"[_\-.]", first), re.split(r"[_\-.]", second)
    if len(one) != len(two):
        return None
    apart = [i for i, (a, b) in enumerate(zip(one, two)) if a != b]
    if len(apart) != 1:
        return None
    shared = "_".join(w for i, w in enumerate(one) if i != apart[0])
    return (shared or first,)


def _summary(key: tuple, pairs: list[tuple[dict, dict]]) -> dict | None:
    gpu, subject, variant, value_a, value_b, matched_on = key
    ratios, flops, dram, pct_a, pct_b, bases = [], [], [], [], [], set()
    for first, second in pairs:
        basis, times, why = speedup.comparable_times(_cell(first), _cell(second), elapsed=False)
        if why is not None:
            continue
        ratios.append(times[0] / times[1])          # > 1: b is faster
        bases.add(basis)
        if first["flops"] and second["flops"]:
            flops.append(first["flops"] / second["flops"])
        if first["dram_bytes"] and second["dram_bytes"]:
            dram.append(first["dram_bytes"] / second["dram_bytes"])
        pct_a += [first["pct_of_roof"]] if first["pct_of_roof"] is not None else []
        pct_b += [second["pct_of_roof"]] if second["pct_of_roof"] is not None else []
    if not ratios:
        return None
    mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    b_faster = mean >= 1
    ups = ratios if b_faster else [1 / r for r in ratios]
    flip = (lambda r: r) if b_faster else (lambda r: 1 / r)
    return {
        "gpu": gpu, "subject": subject, "variant": variant,
        "faster": value_b if b_faster else value_a, "slower": value_a if b_faster else value_b,
        "pairs": len(ratios), "matched_on": matched_on, "speedup": max(mean, 1 / mean),
        "speedup_min": min(ups), "speedup_max": max(ups), "faster_in": sum(u > 1 + SAME / 10 for u in ups),
        "basis": " and ".join(sorted(bases)),
        # the slower side's work over the faster side's
        "flops_ratio": flip(_median(flops)) if flops else None, "dram_ratio": flip(_median(dram)) if dram else None,
        "faster_pct_of_roof": _median(pct_b if b_faster else pct_a), "slower_pct_of_roof": _median(pct_a if b_faster else pct_b),
    }


def _cell(cell: dict) -> dict:
    """A run as `speedup.comparable_times` reads a cell."""
    complete = not cell.get("cut_short")
    return {"time_per_iteration_ns": cell["time_per_iteration_ns"],
            "kernel_time_ns": cell["kernel_time_ns"] if complete else None,
            "timed_runs": 1, "cut_short": not complete, "gpu": cell["gpu_label"], "cut_short_reason": None}


def _median(values: list[float]) -> float | None:
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
