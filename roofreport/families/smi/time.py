"""Time in nvidia-smi logs: sampling intervals from echoed commands and file names, times of
day, and elapsed seconds. The spellings of date-times (nvidia-smi's own, ISO, `date`'s...) are
`families.common.times`, shared with the other GPU monitors' readers.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import polars as pl

from roofreport.families.common.times import DT

# Options that set the sampling period of a loop, in seconds per unit.
_INTERVAL_OPTIONS = (
    (re.compile(r"(?:^|\s)(?:-lms|--loop-ms)[ =](\d+(?:\.\d+)?)"), 1e-3),
    (re.compile(r"(?:^|\s)(?:-l|--loop)[ =](\d+(?:\.\d+)?)"), 1.0),
    (re.compile(r"(?:^|\s)(?:-d|--delay)[ =](\d+(?:\.\d+)?)"), 1.0),
    (re.compile(r"(?:^|\s)(?:-n|--interval)[ =](\d+(?:\.\d+)?)"), 1.0),   # watch -n N
)
# `nvidia-smi_20160813115943_ABB.log`: the capture started 2016-08-13 11:59:43.
_NAME_START = re.compile(r"(?<!\d)(20\d{2})(\d\d)(\d\d)[_-]?(\d\d)(\d\d)(\d\d)(?!\d)")


def parse_day(text: pl.Expr) -> pl.Expr:
    """A date without a time (Windows `date /T`: `Tue 08/18/2020`) -> midnight of that day."""
    return text.str.strip_chars().str.strptime(DT, "%a %m/%d/%Y", strict=False)


def time_of_day_seconds(text: pl.Expr) -> pl.Expr:
    """`13:25:50`, `15:38:43.359`, `03:44 PM` -> seconds since midnight (Float64)."""
    stripped = text.str.strip_chars()
    parts = stripped.str.extract_groups(r"^(\d{1,2}):(\d\d)(?::(\d\d(?:\.\d+)?))?(?: ?([AP]M))?$")
    hour = parts.struct.field("1").cast(pl.Float64, strict=False)
    pm = parts.struct.field("4")
    hour = (pl.when(pm == "PM").then(hour % 12 + 12).when(pm == "AM").then(hour % 12)
            .otherwise(hour))
    minute = parts.struct.field("2").cast(pl.Float64, strict=False)
    second = parts.struct.field("3").cast(pl.Float64, strict=False).fill_null(0.0)
    return hour * 3600 + minute * 60 + second


def elapsed_from_time_of_day(tod: pl.Expr) -> pl.Expr:
    """Seconds since the first value of a time-of-day series, a day added at each midnight."""
    back = (tod.diff() < -43200).cast(pl.Int64).fill_null(0)
    absolute = tod + back.cum_sum() * 86400.0
    return absolute - absolute.drop_nulls().first()


def elapsed_from_datetime(ts: pl.Expr) -> pl.Expr:
    return (ts - ts.min()).dt.total_microseconds() / 1e6


def interval_from_command(command: str | None) -> float | None:
    """The loop period an echoed `nvidia-smi ... -l 5` / `dmon -d 5` / `watch -n 2` sets."""
    if not command:
        return None
    for pattern, unit in _INTERVAL_OPTIONS:
        found = pattern.search(command)
        if found:
            return float(found.group(1)) * unit
    return None


def start_from_name(path: Path) -> datetime | None:
    """A start time encoded in the file name, if it is a plausible date."""
    found = _NAME_START.search(path.name)
    if not found:
        return None
    try:
        return datetime(*(int(g) for g in found.groups()))
    except ValueError:
        return None
