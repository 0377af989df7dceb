"""Why a profiler log holds no kernels, in the log's own words (issue 31, item 9).

A run whose logs hold no kernel is no measurement, and the reason is nearly always in the log:
the job crashed before profiling (a Python traceback, an argparse error), the profiler refused
the GPU (ncu on Pascal and older: `Profiling is not supported on device`) or its counters
(`ERR_NVGPUCTRPERM`), the program ran out of GPU memory, or a time limit stopped it first
(Slurm's `CANCELLED AT ... DUE TO TIME LIMIT`, nvprof's `--timeout`). `failure_of` reads the
first of these a log's lines say: the first cause is the one that counts (a timeout kills the
data loader's workers, whose tracebacks follow it). A traceback speaks through its last line,
the exception (`RuntimeError: CUDA out of memory...` is an out-of-memory failure).

Ingest records it as the file's facts (`failure`, `failure_reason`) for every profiler log
without kernel rows, from the whole text a reader saw and the lines before it, and the runs
without kernels take their files' first (`assemble.runs_table`). It also finds the ncu command
line a log echoed before its output (`read_command`), whose `--clock-control` decides the
clocks of a log that records no frequency (`gpu.clocks`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from roofreport.gpu import clocks

CRASH, ARGUMENTS, UNSUPPORTED_GPU, COUNTER_PERMISSION, OUT_OF_MEMORY, TIME_LIMIT, CANCELLED = (
    "crash", "arguments", "unsupported-gpu", "counter-permission", "out-of-memory", "time-limit", "cancelled")

# Each failure in a few words, for lists that group runs by their reason (the appendix's runs
# without kernels): `failure_reason` says the log's own line and where it is.
SUMMARY = {
    CRASH: "the program crashed before its kernels ran (a Python traceback)",
    ARGUMENTS: "the program refused its command line (an argparse error)",
    UNSUPPORTED_GPU: "ncu does not profile this GPU (Pascal and older need nvprof)",
    COUNTER_PERMISSION: "no permission to read the GPU's performance counters (ERR_NVGPUCTRPERM)",
    OUT_OF_MEMORY: "the program ran out of GPU memory",
    TIME_LIMIT: "a time limit stopped the program first (the batch job's, or the profiler's --timeout)",
    CANCELLED: "the batch job was cancelled first",
}

# Logs bigger than this are read for a failure only in their first part: a log that failed
# before its first kernel is short, and a big log holds what it measured.
MAX_READ_BYTES = 4 << 20
# ncu's command line is echoed before its output: the lines before it and a little more are read.
COMMAND_READ_BYTES = 64 << 10
_SHOWN = 160   # characters of a quoted line kept in a reason

_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):")
_USAGE = re.compile(r"^usage: \S+")
_ARGPARSE_ERROR = re.compile(r"^\S+: error: (.+)$")
_OUT_OF_MEMORY = re.compile(r"CUDA out of memory|CUDA error: out of memory|cudaErrorMemoryAllocation|"
                            r"OutOfMemoryError|RESOURCE_EXHAUSTED: OOM|hipErrorOutOfMemory|CUBLAS_STATUS_ALLOC_FAILED")
# (line pattern, failure, what it means); the first line matching one of them decides.
_SAID = [
    (re.compile(r"Profiling is not supported on (?:this )?device"), UNSUPPORTED_GPU,
     "ncu does not profile this GPU (Pascal and older need nvprof)"),
    (re.compile(r"ERR_NVGPUCTRPERM"), COUNTER_PERMISSION,
     "no permission to read the GPU's performance counters (ERR_NVGPUCTRPERM)"),
    (re.compile(r"(?:slurmstepd: error: )?(?:\*{3} )?(?:JOB|STEP) \S+ (?:ON \S+ )?CANCELLED AT \S+ DUE TO TIME LIMIT"
                r"(?: \*{3})?|DUE TO TIME LIMIT"), TIME_LIMIT, "the batch job hit its time limit"),
    (re.compile(r"Execution timeout, stopping the application"), TIME_LIMIT,
     "the profiler's --timeout stopped the program"),
    (re.compile(r"(?:slurmstepd: error: )?(?:\*{3} )?(?:JOB|STEP) \S+ (?:ON \S+ )?CANCELLED AT \S+(?: BY \S+)?"
                r"(?: \*{3})?|\bCANCELLED AT\b"), CANCELLED, "the batch job was cancelled"),
    (_OUT_OF_MEMORY, OUT_OF_MEMORY, "the program ran out of GPU memory"),
]


@dataclass(frozen=True)
class Failure:
    """Why a log holds no kernels: `code` (one of the constants above), `reason` (what it
    means, then the log's own line) and the 1-based `line` the log says it on."""

    code: str
    reason: str
    line: int


def failure_of(lines: Iterable[str], first_line: int = 1) -> Failure | None:
    """The first failure the lines tell (module docstring), or None."""
    lines = list(lines)
    for at, text in enumerate(lines):
        line_no = first_line + at
        if _TRACEBACK.match(text):
            return _traceback(lines[at + 1:], line_no)
        if _USAGE.match(text):
            refused = _argparse_error(lines[at + 1:at + 40])
            if refused is not None:
                return Failure(ARGUMENTS, f"the program refused its command line before profiling ({refused})",
                               line_no)
        for pattern, code, meaning in _SAID:
            found = pattern.search(text)
            if found:
                # A long line quotes the match alone (Slurm's `*** JOB ... ***` after a progress line).
                said = text if len(text.strip()) <= _SHOWN else found.group(0)
                return Failure(code, f"{meaning}: {_quoted(said)}", line_no)
    return None


def _traceback(after: list[str], line_no: int) -> Failure:
    """A traceback's failure: its exception line, the first that is not indented (frames and
    source lines are), read as out of memory when it says so."""
    exception = next((text for text in after if text.strip() and not text[:1].isspace()), "")
    if _OUT_OF_MEMORY.search(exception):
        return Failure(OUT_OF_MEMORY, f"the program ran out of GPU memory: {_quoted(exception)}", line_no)
    said = f": {_quoted(exception)}" if exception else ""
    return Failure(CRASH, f"the program crashed (a Python traceback){said}", line_no)


def _argparse_error(after: list[str]) -> str | None:
    for text in after:
        found = _ARGPARSE_ERROR.match(text.strip())
        if found:
            return _quoted(text.strip())
    return None


def _quoted(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"


def read_failure(path: Path, encoding: str | None = None) -> Failure | None:
    """`failure_of` the file's text (its first `MAX_READ_BYTES`), decoded leniently."""
    return failure_of(_head(path, encoding, MAX_READ_BYTES).splitlines())


def read_command(path: Path, encoding: str | None = None, log_start: int = 0) -> str | None:
    """The ncu invocation a log echoed (a shell prompt, `set -x`, a job's echo) before its
    output or among its first lines (`log_start`: where the profiler's own output starts),
    for its clock control (`gpu.clocks.ncu_clock_domain`); None when none is there."""
    for text in _head(path, encoding, log_start + COMMAND_READ_BYTES).splitlines():
        found = clocks.ncu_command(text) if "ncu" in text or "nv-nsight-cu-cli" in text else None
        if found:
            return found
    return None


def _head(path: Path, encoding: str | None, size: int) -> str:
    with open(path, "rb") as handle:
        head = handle.read(size)
    try:
        return head.decode(encoding or "utf-8", errors="replace")
    except LookupError:   # an encoding name Python does not know: UTF-8 will do for these lines
        return head.decode("utf-8", errors="replace")
