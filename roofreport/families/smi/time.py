"""Time in nvidia-smi logs: every timestamp spelling seen, sampling intervals from echoed
commands and file names, and elapsed seconds.

All parsing is vectorised: a column of printed times becomes `Datetime("us")` by trying each
known spelling (`strict=False` gives null where a spelling does not fit) and keeping the first
that fits. Times are kept as the wall clock the log printed; an ISO offset or a zone name is
dropped rather than converted, so nvidia-smi's own local times and a wrapper's times compare.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import polars as pl

DT = pl.Datetime("us")

# strptime formats after normalisation (runs of spaces collapsed, zone names and ISO offsets
# removed): nvidia-smi's own, ISO-8601, `date '+%F %T'`, ctime/GNU `date` (24 h and AM/PM).
_FORMATS = (
    "%Y/%m/%d %H:%M:%S%.f",
    "%Y/%m/%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S%.f",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M:%S%.f",
    "%Y-%m-%d %H:%M:%S",
    "%a %b %d %H:%M:%S %Y",
    "%a %b %d %I:%M:%S %p %Y",
    "%m-%d-%Y %H:%M:%S",
)
_EPOCH = r"^\d{9,10}(?:\.\d+)?$"
_ZONE = r" (?:[A-Z]{2,5}) (\d{4})$"          # `Tue Jun  9 09:00:01 UTC 2020`
_OFFSET = r"(?:Z|[+-]\d\d:?\d\d)$"            # `...T03:48:33.493Z`, `...+08:00`

# Options that set the sampling period of a loop, in seconds per unit.
_INTERVAL_OPTIONS = (
    (re.compile(r"(?:^|\s)(?:-lms|--loop-ms)[ =](\d+(?:\.\d+)?)"), 1e-3),
    (re.compile(r"(?:^|\s)(?:-l|--loop)[ =](\d+(?:\.\d+)?)"), 1.0),
    (re.compile(r"(?:^|\s)(?:-d|--delay)[ =](\d+(?:\.\d+)?)"), 1.0),
    (re.compile(r"(?:^|\s)(?:-n|--interval)[ =](\d+(?:\.\d+)?)"), 1.0),   # watch -n N
)
# `nvidia-smi_20160813115943_ABB.log`: the capture started 2016-08-13 11:59:43.
_NAME_START = re.compile(r"(?<!\d)(20\d{2})(\d\d)(\d\d)[_-]?(\d\d)(\d\d)(\d\d)(?!\d)")


def parse_datetime(text: pl.Expr) -> pl.Expr:
    """Printed times -> Datetime (null where no known spelling fits)."""
    return text.map_batches(_parse_datetimes, return_dtype=DT)


def _parse_datetimes(text: pl.Series) -> pl.Series:
    """A log writes one spelling throughout: the first that reads a sample of the column is
    applied to all of it (one strptime pass); only values it misses try every spelling."""
    frame = pl.DataFrame({"t": text.cast(pl.String)})
    sample = frame.filter(pl.col("t").is_not_null()).head(16)
    fmt = next((f for f in _FORMATS if sample.height and sample.select(
        _strptime(pl.col("t"), f).is_not_null().all()).item()), None)
    if fmt is None:
        return frame.select(_every_spelling(pl.col("t")))["t"]
    fast = frame.select(_strptime(pl.col("t"), fmt))["t"]
    missed = (fast.is_null() & text.is_not_null()).arg_true()
    if missed.len():
        slow = frame[missed].select(_every_spelling(pl.col("t")))["t"]
        fast = fast.scatter(missed, slow)
    return fast


def _strptime(text: pl.Expr, fmt: str) -> pl.Expr:
    return text.str.strip_chars().str.strptime(DT, fmt, strict=False)


def _every_spelling(text: pl.Expr) -> pl.Expr:
    s = (text.str.strip_chars().str.replace_all(r"\s+", " ")
         .str.replace(_ZONE, " ${1}").str.replace(_OFFSET, ""))
    epoch = pl.when(s.str.contains(_EPOCH)).then(
        (s.cast(pl.Float64, strict=False) * 1e6).cast(pl.Int64).cast(DT))
    tries = [s.str.strptime(DT, fmt, strict=False) for fmt in _FORMATS]
    return pl.coalesce(epoch, *tries)


def parse_day(text: pl.Expr) -> pl.Expr:
    """A date without a time (Windows `date /T`: `Tue 08/18/2020`) -> midnight of that day."""
    return text.str.strip_chars().str.strptime(DT, "%a %m/%d/%Y", strict=False)


def time_of_day_seconds(text: pl.Expr) -> pl.Expr:
    """`13:25:50`, `15:38:43.359`, `03:44 PM` -> seconds since midnight (Float64)."""
    s = text.str.strip_chars()
    parts = s.str.extract_groups(r"^(\d{1,2}):(\d\d)(?::(\d\d(?:\.\d+)?))?(?: ?([AP]M))?$")
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
