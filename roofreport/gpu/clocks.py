"""The clock a run's kernels ran at, when its log records no frequency: small pure functions the
model reads (issue 31, item 1), best evidence first.

1. The frequencies the log records (ncu's `SM Frequency` / `DRAM Frequency`: the kernels'
   `sm_clock_hz` / `mem_clock_hz`, `enrich/counters.py`) win over everything here.
2. ncu's locked clock (`ncu_clock_domain`): from the tool version and the command line. ncu
   locks the SM and memory clocks to base (`--clock-control base`) by default in every version
   up to 2025.x; the 2026.1 CLI reference lists `boost` as the default (with `force-boost` and
   `reset` added). `--clock-control none` leaves the clocks to the GPU's governor, as a trace
   runs.
3. For traces (nsys, nvprof, PyTorch: never locked), the SM clock nvidia-smi sampled in the same
   folder while the GPU was busy (`sampled_sm_clock`), before assuming boost: a 70 W T4 rarely
   holds its 1590 MHz boost.

A domain is "base" or "boost" (locked there: the GPU table's clock applies) or "unlocked" (the
governor's clock: sampled, or boost at best); the source says which evidence decided.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

import polars as pl

BASE, BOOST, UNLOCKED = "base", "boost", "unlocked"

# The first ncu whose default is `--clock-control boost` (its 2026.1 CLI reference).
BOOST_DEFAULT_SINCE = (2026, 1)
# `--clock-control` value -> the domain the kernels ran in (`reset` only resets and exits).
_CONTROL_DOMAINS = {"base": BASE, "boost": BOOST, "force-boost": BOOST, "none": UNLOCKED}
_CONTROL = re.compile(r"(?:^|\s)--clock-control(?:=|\s+)[\"']?([\w-]+)")
_VERSION = re.compile(r"(\d{4})\.(\d+)")
# A sample counts as the kernels' clock only when the GPU was busy: an idle GPU sits at its
# lowest clock between jobs, which no kernel ran at.
BUSY_UTIL_PCT = 50.0


@dataclass(frozen=True)
class ClockDomain:
    """The clock domain a run's times were measured in (`BASE`, `BOOST`, `UNLOCKED`) and what
    said so, in words a report can print."""

    domain: str
    source: str


@dataclass(frozen=True)
class SampledClock:
    """The SM (and memory) clock nvidia-smi sampled while the GPU was busy: medians in MHz,
    over `samples` busy samples."""

    sm_clock_mhz: float
    mem_clock_mhz: float | None
    samples: int


def clock_control(command_line: str | None) -> str | None:
    """The `--clock-control` value on an ncu command line (`none`, `base`, `boost`,
    `force-boost`, `reset`), lower-cased; None when the option is absent."""
    if not command_line:
        return None
    found = _CONTROL.search(command_line)
    return found.group(1).lower() if found else None


def version_tuple(tool_version: str | None) -> tuple[int, int] | None:
    """(year, release) of an ncu version (`2023.2.0.0 (build 32895467)` -> (2023, 2))."""
    found = _VERSION.search(tool_version or "")
    return (int(found.group(1)), int(found.group(2))) if found else None


def ncu_clock_domain(tool_version: str | None, command_line: str | None) -> ClockDomain:
    """The clock ncu ran the kernels at when the log records no frequency: the command line's
    `--clock-control` when it has one, else the version's default (base before 2026.1, boost
    from it; a log that names no version is taken for one before 2026.1, as every ncu log seen
    so far)."""
    option = clock_control(command_line)
    if option in _CONTROL_DOMAINS:
        return ClockDomain(_CONTROL_DOMAINS[option], f"--clock-control {option} on ncu's command line")
    version = version_tuple(tool_version)
    if version is not None and version >= BOOST_DEFAULT_SINCE:
        return ClockDomain(BOOST, f"ncu {version[0]}.{version[1]} locks clocks to boost by default")
    named = f"ncu {version[0]}.{version[1]}" if version else "ncu (version not logged, taken as before 2026.1)"
    return ClockDomain(BASE, f"{named} locks clocks to base by default")


def ncu_command(text: str) -> str | None:
    """The part of a line that invokes ncu (`ncu`, `nv-nsight-cu-cli`, by path too) with its
    options, as a shell echo (`$ ncu ...`, `+ ncu ...`) or a job script prints it; None when the
    line runs no ncu."""
    try:
        words = shlex.split(text, comments=False, posix=True)
    except ValueError:      # an unbalanced quote: plain words will do
        words = text.split()
    for at, word in enumerate(words):
        if re.fullmatch(r"(?:.*/)?(?:ncu|nv-nsight-cu-cli)(?:\.exe)?", word) and at + 1 < len(words) \
                and words[at + 1].startswith("-"):
            return shlex.join(words[at:])
    return None


def sampled_sm_clock(samples: pl.DataFrame) -> SampledClock | None:
    """The SM clock a GPU held while busy, from a run's (or its folder's) nvidia-smi samples:
    the median `sm_clock_mhz` over the samples with `util_gpu_pct` at or above `BUSY_UTIL_PCT`
    (all samples with a clock when no utilization was logged). None when no sample has a clock."""
    if not samples.height or "sm_clock_mhz" not in samples.columns:
        return None
    clocked = samples.filter(pl.col("sm_clock_mhz").is_not_null() & (pl.col("sm_clock_mhz") > 0))
    if "util_gpu_pct" in clocked.columns and clocked["util_gpu_pct"].is_not_null().any():
        clocked = clocked.filter(pl.col("util_gpu_pct") >= BUSY_UTIL_PCT)
    if not clocked.height:
        return None
    memory = clocked["mem_clock_mhz"].drop_nulls() if "mem_clock_mhz" in clocked.columns else pl.Series([])
    return SampledClock(sm_clock_mhz=float(clocked["sm_clock_mhz"].median()),
                        mem_clock_mhz=float(memory.median()) if memory.len() else None,
                        samples=clocked.height)
