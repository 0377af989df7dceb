"""What each run ran, apart from the GPU it ran on: the key every cross-run comparison groups by.

A run's workload is its model (or, for a program with no model, the program with its first
arguments, else the experiment: `labels.lead`) and its configuration: the experiment, the phase
and the parameters that vary across the dataset (`runs.params`: batch size, learning rate,
workers, optimizer, precision, draft bits...), without those that only say how the profiler
was run (`labels.LAUNCH_ONLY`: a time-out). Two runs with the same workload on two GPUs are the
same work on two GPUs; runs whose workloads differ in one parameter only form a sweep of it.
A run of monitoring logs only (nvidia-smi, DCGM, tegrastats, rocm-smi: no kernel, no iteration)
ran no workload the logs know (`holds_workload`): it is never the same work as another run.
Nothing here reads a path: only the identity the pipeline gave each run.
"""

from __future__ import annotations

import json

import polars as pl

from roofreport.model import labels

IN_LEAD = ("model_size",)          # shown in the model's name already
COLUMNS = {"run": pl.String, "model": pl.String, "experiment": pl.String, "config": pl.String,
           "config_key": pl.String, "param_values": pl.String}


# The readers whose logs only sample a GPU (runs.tool joins a run's families with `+`); `rocm`
# also reads rocprof, whose runs have kernels.
_MONITORS = frozenset(("nvidia-smi", "dcgm", "tegrastats", "rocm"))
_WORK_COLUMNS = ("kernel_launches", "kernel_time_ns", "iterations")


def holds_workload(row: dict) -> bool:
    """False for a run of monitoring logs only: its tools all sample a GPU, and it counts no
    kernel and no iteration."""
    tools = {tool for tool in str(row.get("tool") or "").split("+") if tool}
    monitoring = bool(tools) and tools <= _MONITORS
    return not monitoring or any(row.get(column) for column in _WORK_COLUMNS)


def without_workload(runs: pl.DataFrame) -> list[str]:
    """The runs (ids) of the runs table that hold no workload (`holds_workload`)."""
    if not runs.height or "tool" not in runs.columns:
        return []
    columns = [c for c in ("run", "tool", *_WORK_COLUMNS) if c in runs.columns]
    return [row["run"] for row in runs.select(columns).iter_rows(named=True) if not holds_workload(row)]


def params_of(row: dict) -> dict:
    """The run's varying parameters that describe the work (not how it was profiled)."""
    try:
        params = json.loads(row.get("params") or "{}")
    except (TypeError, ValueError):
        params = {}
    return {k: v for k, v in params.items() if k not in labels.LAUNCH_ONLY}


def experiment(row: dict, params: dict) -> str:
    """The experiment and phase a run belongs to (`backprop`, `full · train`; "" for none): what
    its workload does, apart from the parameters that are swept. Runs of two experiments are
    different work (`loss_only` times the loss alone): no mean is taken across them."""
    model = lead(row, params)
    return labels.SEPARATOR.join(str(row[k]) for k in ("experiment", "phase") if row.get(k) and str(row[k]) != model)


def describe(row: dict, params: dict, leave_out: tuple[str, ...] = ()) -> str:
    """experiment · phase · parameters as labels spell them (`backprop · bs 16 · lr 0.01`)."""
    model = lead(row, params)
    parts = [str(row[k]) for k in ("experiment", "phase") if row.get(k) and str(row[k]) != model]
    keys = sorted((k for k in params if k not in IN_LEAD and k not in leave_out), key=labels.param_order)
    parts += [text for text in (labels.describe(k, params[k]) for k in keys) if text]
    return labels.SEPARATOR.join(parts)


def lead(row: dict, params: dict) -> str:
    return labels.lead({**row, "params": params})


def key(row: dict, params: dict, leave_out: tuple[str, ...] = ()) -> str:
    """A stable key of the workload (JSON), `leave_out` parameters excepted."""
    kept = {k: v for k, v in params.items() if k not in leave_out}
    return json.dumps({"model": lead(row, params), "experiment": row.get("experiment"),
                       "phase": row.get("phase"), "params": kept}, sort_keys=True, default=str)


def workloads(runs: pl.DataFrame) -> pl.DataFrame:
    """run, model, experiment, config, config_key, param_values (JSON of the work's parameters)
    per run."""
    if not runs.height:
        return pl.DataFrame(schema=COLUMNS)
    rows = []
    for row in runs.to_dicts():
        params = params_of(row)
        rows.append({"run": row["run"], "model": lead(row, params), "experiment": experiment(row, params),
                     "config": describe(row, params),
                     "config_key": key(row, params), "param_values": json.dumps(params, sort_keys=True, default=str)})
    return pl.DataFrame(rows, schema=COLUMNS)
