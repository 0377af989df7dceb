"""Parameter sweeps: runs of one model on one GPU that differ in one parameter only.

Any parameter the runs carry (`runs.params`: batch size, learning rate, workers, optimizer,
draft bits...) can be swept; nothing is known in advance about the course. A series is one
model, one GPU and one configuration of every other parameter (`workloads.py`); its points are
sorted on the swept value (numbers by value, words by name). `series_of` gives, per run and
per parameter it sweeps, the series it belongs to: the kernel-share sweeps (`share.py`) and
the time sweeps below use the same series.

A sweep is a curve over runs of one GPU, known or shown to be one (`hidden_gpus`): runs whose
GPU is named alike but whose identical kernels (same names, same work: the same model and
configuration but for parameters that change no kernel, `SAME_KERNELS`) differ in average time
well beyond noise (`HIDDEN_GPU_RATIO`) ran on different GPUs (two GPU models behind one "GPU not
named", a node of another kind): their series are split by speed group, and a series across
other configurations of a label holding two such groups is no curve at all (which point ran
where is not known). A parameter that changes no kernel (the learning rate: same kernels, same
launches per iteration, `SAME_KERNELS`) gets no curve either: its points' times differ only by
noise or by GPU. `sweep_checks` says, per series, which of these happened and why.

`time_sweeps` gives each point's time over one basis for the whole series (`speedup.py`'s
rules: per iteration where the points count their iterations, else the whole run's kernel time
of the points not cut short; a point without a time on the series' basis is left out, a series
left with fewer than two points too) and, when the batch size is known, the time per sample and
the samples per second.
"""

from __future__ import annotations

import json
import math

import polars as pl

from roofreport.analysis import speedup, workloads
from roofreport.gpu import NOT_NAMED

SERIES_COLUMNS = {"run": pl.String, "param": pl.String, "series": pl.String, "model": pl.String,
                  "gpu": pl.String, "config": pl.String, "x": pl.Float64, "x_label": pl.String,
                  "x_order": pl.Int64}
# Parameters that change no kernel's work (a scalar the kernels read, the data loader, how long
# it runs): runs that differ only in them launch the same kernels on the same tensors.
SAME_KERNELS = ("learning_rate", "momentum", "weight_decay", "seed", "epochs", "workers", "job")
HIDDEN_GPU_RATIO = 1.5     # identical kernels this much slower on average: another GPU, not noise
MIN_LAUNCHES = 10          # a kernel compared between runs: launched at least this often in each
CHECK_COLUMNS = {"series": pl.String, "param": pl.String, "model": pl.String, "gpu": pl.String,
                 "config": pl.String, "kind": pl.String, "runs": pl.Int64, "groups": pl.Int64,
                 "ratio": pl.Float64, "kernels": pl.Int64, "example_kernel": pl.String}
# What a sweep's samples per second divide by (issue 31, item 5: a throughput says so): kernel time
# is GPU time, summed over every GPU of a run, not the job's elapsed time.
THROUGHPUT_BASIS = "batch size ÷ kernel time per iteration, summed over all of a run's GPUs"
SPLIT, MIXED, NO_CHANGE = "split by hidden GPU", "mixes hidden GPUs", "changes no kernel"
TIME_COLUMNS = {**{c: t for c, t in SERIES_COLUMNS.items() if c != "run"}, "runs": pl.Int64,
                "basis": pl.String, "time_ns": pl.Float64, "batch_size": pl.Int64,
                "time_per_sample_ns": pl.Float64, "samples_per_s": pl.Float64}


def series_of(runs: pl.DataFrame, groups: dict[str, int] | None = None) -> pl.DataFrame:
    """run, param, series (a key), model, gpu, config (the fixed parameters), x (the swept value
    when a number), x_label, x_order (rank on x within the series): one row per run and swept
    parameter, for series of two values or more. `groups`: run -> its speed group where one
    label holds runs of several GPUs (`hidden_gpus`): a series never mixes two groups."""
    rows = []
    groups = groups or {}
    for row in runs.to_dicts():
        params = workloads.params_of(row)
        for param, value in params.items():
            if value is None or param in workloads.IN_LEAD:
                continue
            gpu = row.get("gpu_label") or NOT_NAMED
            key = json.dumps([workloads.key(row, params, leave_out=(param,)), gpu, param, groups.get(row["run"])],
                             default=str)
            rows.append({"run": row["run"], "param": param, "series": key,
                         "model": workloads.lead(row, params), "gpu": gpu,
                         "config": workloads.describe(row, params, leave_out=(param,)),
                         "x": _number(value), "x_label": _text(value)})
    if not rows:
        return pl.DataFrame(schema=SERIES_COLUMNS)
    frame = pl.DataFrame(rows, schema={c: t for c, t in SERIES_COLUMNS.items() if c != "x_order"})
    frame = frame.filter(pl.col("x_label").n_unique().over("series") > 1)
    return frame.with_columns(_order().alias("x_order")).sort("series", "x_order", "run")


def _order() -> pl.Expr:
    """Rank on x within a series: numbers by value, words by name (a series with any word: all by name)."""
    numeric = pl.col("x").is_not_null().all().over("series")
    by_value = pl.col("x").rank("dense").over("series")
    by_name = pl.col("x_label").rank("dense").over("series")
    return pl.when(numeric).then(by_value).otherwise(by_name).cast(pl.Int64)


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def _text(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# -- one GPU per sweep ---------------------------------------------------------------------------

def _shape_key(row: dict) -> str:
    """The work of a run's kernels: its GPU label, model and configuration but for parameters
    that change no kernel (SAME_KERNELS)."""
    params = workloads.params_of(row)
    return json.dumps([workloads.key(row, params, leave_out=SAME_KERNELS), row.get("gpu_label") or NOT_NAMED],
                      default=str)


def _per_launch(rows: pl.DataFrame, runs: list[str]) -> pl.DataFrame:
    """run, kernel (its full name: one template instance), launches, time_ns, avg_ns: each
    kernel's average time per launch in each run."""
    kernels = rows.filter(pl.col("run").is_in(runs) & ~pl.col("category").fill_null("").is_in(("memcpy", "memset")))
    return kernels.group_by("run", pl.col("name").alias("kernel")).agg(
        pl.col("count").fill_null(1).sum().alias("launches"), pl.col("time_ns").sum()).with_columns(
        (pl.col("time_ns") / pl.col("launches")).alias("avg_ns"))


def hidden_gpus(runs: pl.DataFrame, rows: pl.DataFrame) -> tuple[dict[str, int], list[dict]]:
    """(run -> speed group, findings): per shape (`_shape_key`) of two runs or more, the runs
    grouped so that two runs of one group have identical kernels within HIDDEN_GPU_RATIO of each
    other (`_apart`, single linkage). Runs of a shape that holds one group get none. A finding
    per split shape: its runs, groups, the largest ratio between groups and its kernel."""
    if not runs.height or rows is None or not rows.height:
        return {}, []
    shapes: dict[str, list[str]] = {}
    for row in runs.filter(pl.col("kernel_time_ns").is_not_null()).sort("run").to_dicts():
        shapes.setdefault(_shape_key(row), []).append(row["run"])
    groups: dict[str, int] = {}
    found = []
    for shape, members in shapes.items():
        if len(members) < 2:
            continue
        per = _per_launch(rows, members).filter(pl.col("launches") >= MIN_LAUNCHES)
        kernels = {run: {r["kernel"]: (r["avg_ns"], r["time_ns"]) for r in part.iter_rows(named=True)}
                   for (run,), part in per.group_by(["run"])}
        clusters: list[list[str]] = []
        for run in members:
            near = [c for c in clusters if any(_apart(kernels.get(run, {}), kernels.get(o, {}))[0] <= HIDDEN_GPU_RATIO
                                               for o in c)]
            merged = [run] + [r for c in near for r in c]
            clusters = [c for c in clusters if c not in near] + [merged]
        if len(clusters) < 2:
            continue
        clusters.sort(key=lambda c: min(members.index(r) for r in c))
        for index, cluster in enumerate(clusters):
            for run in cluster:
                groups[run] = index + 1
        ratio, kernel, shared = max(_apart(kernels.get(a, {}), kernels.get(b, {}))
                                    for i, first in enumerate(clusters) for second in clusters[i + 1:]
                                    for a in first for b in second)
        found.append({"shape": shape, "runs": members, "groups": len(clusters), "ratio": ratio,
                      "kernels": shared, "example_kernel": kernel})
    return groups, found


def _apart(first: dict, second: dict) -> tuple[float, str | None, int]:
    """(ratio, kernel, shared): how far apart two runs' identical kernels are in average time per
    launch: the ratio (slower over faster) that shared kernels holding a quarter of their time
    reach or exceed (timing noise never moves a quarter of the time of kernels launched thousands
    of times by half; another GPU's memory or compute does), the heaviest shared kernel at that
    ratio or beyond, and how many they share. 1.0 when they share none (nothing says they differ)."""
    shared = [(max(first[k][0], second[k][0]) / max(min(first[k][0], second[k][0]), 1e-9),
               min(first[k][1], second[k][1]), k) for k in first.keys() & second.keys()]
    if not shared:
        return 1.0, None, 0
    shared.sort()
    total, half, ratio = sum(w for _, w, _ in shared), 0.0, shared[-1][0]
    for value, weight, _ in shared:
        half += weight
        if half >= total * 0.75:
            ratio = value
            break
    example = max((item for item in shared if item[0] >= ratio), key=lambda item: item[1])[2]
    return ratio, example, len(shared)


def _same_population(per: pl.DataFrame, runs: pl.DataFrame, members: list[str]) -> bool:
    """The runs launch the same kernels, as often per iteration (within 10 %): those launched at
    least MIN_LAUNCHES times (a few autotuning trials more or less are no other population)."""
    iterations = dict(zip(runs["run"].to_list(), runs["iterations"].to_list())) if "iterations" in runs.columns else {}
    if not all(iterations.get(run) for run in members):
        return False
    per = per.filter(pl.col("launches") >= MIN_LAUNCHES)
    names = [set(per.filter(pl.col("run") == run)["kernel"].to_list()) for run in members]
    if not names[0] or any(n != names[0] for n in names[1:]):
        return False
    rate = per.with_columns((pl.col("launches") / pl.col("run").replace_strict(iterations, return_dtype=pl.Float64))
                            .alias("rate"))
    spread = rate.group_by("kernel").agg((pl.col("rate").max() / pl.col("rate").min()).alias("spread"))
    return bool((spread["spread"] <= 1.1).all())


def sweep_checks(runs: pl.DataFrame, rows: pl.DataFrame | None) -> tuple[pl.DataFrame, dict[str, int], set[str]]:
    """(CHECK_COLUMNS, run -> speed group, series with no curve): per series, whether it was
    split by hidden GPU, left out as mixing hidden GPUs, or left out as a parameter that
    changes no kernel, and why (module docstring)."""
    groups, found = hidden_gpus(runs, rows) if rows is not None else ({}, [])
    series = series_of(runs, groups)
    checks: list[dict] = []
    dropped: set[str] = set()
    if not series.height:
        return pl.DataFrame(schema=CHECK_COLUMNS), groups, dropped
    split_labels = {json.loads(f["shape"])[1] for f in found}
    by_run = {f_run: f for f in found for f_run in f["runs"]}
    for (key, param), points in series.group_by("series", "param", maintain_order=True):
        members = points["run"].to_list()
        first = points.row(0, named=True)
        base = {"series": key, "param": param, "model": first["model"], "gpu": first["gpu"], "config": first["config"],
                "runs": len(members)}
        split = [by_run[run] for run in members if run in by_run]
        if param not in SAME_KERNELS and first["gpu"] in split_labels:
            dropped.add(key)
            worst = max((f for f in found if json.loads(f["shape"])[1] == first["gpu"]), key=lambda f: f["ratio"])
            checks.append({**base, "kind": MIXED, "groups": worst["groups"], "ratio": worst["ratio"],
                           "kernels": worst["kernels"], "example_kernel": worst["example_kernel"]})
            continue
        if split:
            checks.append({**base, "kind": SPLIT, "groups": split[0]["groups"], "ratio": split[0]["ratio"],
                           "kernels": split[0]["kernels"], "example_kernel": split[0]["example_kernel"]})
        if param in SAME_KERNELS and rows is not None and _same_population(_per_launch(rows, members), runs, members):
            dropped.add(key)
            checks.append({**base, "kind": NO_CHANGE})
    frame = pl.DataFrame(checks, schema=CHECK_COLUMNS) if checks else pl.DataFrame(schema=CHECK_COLUMNS)
    return frame.unique(subset=["series", "kind"], keep="first", maintain_order=True), groups, dropped


def time_sweeps(runs: pl.DataFrame, rows: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per series point with its time on the series' one basis (TIME_COLUMNS). `rows`:
    the model's time rows, to keep each series to one GPU and drop parameters that change no
    kernel (`sweep_checks`)."""
    _, groups, dropped = sweep_checks(runs, rows) if rows is not None else (None, {}, set())
    series = series_of(runs, groups)
    series = series.filter(~pl.col("series").is_in(list(dropped))) if dropped else series
    if not series.height:
        return pl.DataFrame(schema=TIME_COLUMNS)
    complete = ~pl.col("cut_short").fill_null(False)
    points = series.join(runs.select("run", "batch_size", "time_per_iteration_ns", "kernel_time_ns", "cut_short"),
                         on="run").group_by(*[c for c in SERIES_COLUMNS if c != "run"]).agg(
        pl.len().alias("runs"), pl.col("batch_size").drop_nulls().first(),
        pl.col("time_per_iteration_ns").median(),
        pl.col("kernel_time_ns").filter(complete).median().alias("whole_run_ns"))
    # One basis per series: per iteration where two or more points have it, else the whole run's
    # time of the points that were not cut short; points without a time on that basis are left out.
    iterations = pl.col("time_per_iteration_ns").is_not_null()
    per_iteration = points.filter(iterations & (iterations.sum().over("series") > 1))
    whole = points.join(per_iteration.select("series").unique(), on="series", how="anti") \
        .filter(pl.col("whole_run_ns").is_not_null())
    parts = [per_iteration.with_columns(pl.lit(speedup.PER_ITERATION).alias("basis"),
                                        pl.col("time_per_iteration_ns").alias("time_ns")),
             whole.with_columns(pl.lit(speedup.WHOLE_RUN).alias("basis"), pl.col("whole_run_ns").alias("time_ns"))]
    out = pl.concat([p.drop("time_per_iteration_ns", "whole_run_ns") for p in parts])
    out = out.filter(pl.len().over("series") > 1)
    per_sample = pl.when(pl.col("basis") == speedup.PER_ITERATION).then(pl.col("time_ns") / pl.col("batch_size"))
    out = out.with_columns(per_sample.alias("time_per_sample_ns")).with_columns(
        (1e9 / pl.col("time_per_sample_ns")).alias("samples_per_s"))
    return out.select([pl.col(c).cast(t) for c, t in TIME_COLUMNS.items()]).sort("param", "series", "x_order")


# -- input-size series on a roofline ----------------------------------------------------------------

# Parameters that set a run's input size: a roofline draws runs differing only in one of them as
# one series, the size as the marker's size (issue 32: rooflines at any run count).
SIZE_PARAMS = ("size", "input_size", "problem_size", "n")
SIZE_SERIES_COLUMNS = {"run": pl.String, "series": pl.String, "size_param": pl.String, "size": pl.Float64}


def size_series(runs: pl.DataFrame) -> pl.DataFrame:
    """run, series (its name: what the runs share, `conv2d.py · kernel_size 3 · stride 1`),
    size_param, size: one row per run of a series of runs on one GPU that differ only in a numeric
    input size (SIZE_PARAMS), each size once, two sizes at least. The runs' experiment names are
    left out of the key only where they name nothing the parameters do not: each size appears once
    among the runs that share every other parameter (a folder named `k3_s1_n64`), else they part
    the series."""
    candidates: dict[str, list[dict]] = {}
    for row in runs.to_dicts():
        params = workloads.params_of(row)
        sized = [p for p in SIZE_PARAMS if _number(params.get(p)) is not None]
        if len(sized) != 1:
            continue
        param = sized[0]
        others = {k: v for k, v in params.items() if k != param}
        # the model, not its lead name (which may spell the folder or command line, size and all)
        key = json.dumps([row.get("gpu_label") or NOT_NAMED, row.get("program"), row.get("model"),
                          row.get("phase"), param, others], sort_keys=True, default=str)
        # named by its model (else its program) and the parameters it fixes, never its command line
        name = workloads.describe({**row, "experiment": None}, params, leave_out=(param,))
        lead = row.get("model") or row.get("program")
        candidates.setdefault(key, []).append({"run": row["run"], "series": _joined(lead, name),
                                               "size_param": param, "size": _number(params[param]),
                                               "experiment": row.get("experiment")})
    rows = []
    for members in candidates.values():
        sizes = [m["size"] for m in members]
        if len(set(sizes)) != len(sizes):       # two runs of one size: their experiments differ in more
            by_experiment: dict = {}
            for member in members:
                by_experiment.setdefault(member["experiment"], []).append(member)
            parts = [[{**member, "series": _joined(member["series"], member["experiment"] or "")} for member in part]
                     for part in by_experiment.values() if len({member["size"] for member in part}) == len(part)]
        else:
            parts = [members]
        rows += [m for part in parts if len(part) > 1 for m in part]
    if not rows:
        return pl.DataFrame(schema=SIZE_SERIES_COLUMNS)
    return pl.DataFrame([{c: r[c] for c in SIZE_SERIES_COLUMNS} for r in rows], schema=SIZE_SERIES_COLUMNS)


def _joined(lead: str | None, rest: str) -> str:
    return " · ".join(part for part in (lead, rest) if part)
