"""Runs whose logs stop before the run did: `cut_short` and `cut_short_reason` in the runs table.

A profiler that stopped the program at its time-out (nvprof `--timeout`: "Execution timeout,
stopping the application"), a batch system that killed the job ("CANCELLED AT ... DUE TO TIME
LIMIT"), a log or trace that ends inside a table row: the readers say so with a warning whose
code ends in one of `CUT_SHORT` (`nvprof.timeout`, `nvprof.job-killed`, `nvprof.truncated`,
`ncu.truncated`, `nsys.truncated`...). Such a run's totals cover only the part that ran, so
they compare with another run only per iteration. Monitors (nvidia-smi, DCGM, tegrastats) are
left out: a sampler stopped mid-line says nothing about the program it watched.

A warning of a log that holds several profiler sessions belongs to the session its line is in.
"""

from __future__ import annotations

from pathlib import PurePosixPath

import polars as pl

CUT_SHORT = (".timeout", ".job-killed", ".truncated")
MONITORS = ("nvidia-smi", "smi", "dcgm", "tegrastats")


def is_monitor(family: str | None) -> bool:
    """A monitor's log (nvidia-smi, DCGM, tegrastats): it never holds kernels."""
    return (family or "") in MONITORS


def is_cut_short(code: str, family: str | None) -> bool:
    return code.endswith(CUT_SHORT) and (family or "") not in MONITORS and not code.startswith(MONITORS)


def mark(runs: pl.DataFrame, reasons: dict[str, str]) -> pl.DataFrame:
    """`runs` with `cut_short` (false when no log of the run says it stopped early) and
    `cut_short_reason`."""
    if not runs.height:
        return runs
    found = pl.DataFrame({"run": list(reasons), "__reason": list(reasons.values())},
                         schema={"run": pl.String, "__reason": pl.String})
    out = runs.drop("cut_short", "cut_short_reason", strict=False).join(found, on="run", how="left")
    out = out.with_columns(pl.col("__reason").is_not_null().alias("cut_short"),
                           pl.col("__reason").alias("cut_short_reason")).drop("__reason")
    return out.select(runs.columns)


def reason(code: str, message: str, path: str, line: int | None) -> str:
    """The warning as a reason: what the log said, then where."""
    where = PurePosixPath(path).name + (f" line {line}" if line else "")
    text = message.split(" (", 1)[0] if code.endswith(".timeout") else message
    return f"{text} [{where}]"


def run_at_line(sessions: list[tuple[int, str]], line: int | None) -> str:
    """The session of a multi-session log that `line` falls in (the first one before any)."""
    chosen = sessions[0][1]
    for first, run in sessions:
        if line is not None and first <= line:
            chosen = run
    return chosen
