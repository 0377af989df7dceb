"""Printed date-times in every spelling the GPU monitors' logs and their loops use: nvidia-smi's
own, ISO 8601, `date`'s (GNU, `'+%F %T'`, with a zone name), tegrastats' `MM-DD-YYYY`, epoch
seconds; a time outside 1970-2200 is null (damage, not a time).

All parsing is vectorised: a column of printed times becomes `Datetime("us")` by trying each
known spelling (`strict=False` gives null where a spelling does not fit) and keeping the first
that fits. Times are kept as the wall clock the log printed; an ISO offset or a zone name is
dropped rather than converted, so a tool's own local times and a wrapper's times compare.
"""

from __future__ import annotations

from datetime import datetime

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


# A time no log can have printed (a damaged year: `-1/04/24 16:02:21`) is no time: one such
# sample would shift every sample's elapsed seconds by millennia.
_EARLIEST, _LATEST = datetime(1970, 1, 1), datetime(2200, 1, 1)


def parse_datetime(text: pl.Expr) -> pl.Expr:
    """Printed times -> Datetime (null where no known spelling fits, or the time is not
    between 1970 and 2200)."""
    parsed = text.map_batches(_parse_datetimes, return_dtype=DT)
    return pl.when(parsed.is_between(_EARLIEST, _LATEST, closed="left")).then(parsed)


def _parse_datetimes(text: pl.Series) -> pl.Series:
    """A log writes one spelling throughout: the first that reads a sample of the column is
    applied to all of it (one strptime pass); only values it misses try every spelling."""
    frame = pl.DataFrame({"text": text.cast(pl.String)})
    sample = frame.filter(pl.col("text").is_not_null()).head(16)
    fmt = next((f for f in _FORMATS if sample.height and sample.select(
        _strptime(pl.col("text"), f).is_not_null().all()).item()), None)
    if fmt is None:
        return frame.select(_every_spelling(pl.col("text")))["text"]
    fast = frame.select(_strptime(pl.col("text"), fmt))["text"]
    missed = (fast.is_null() & text.is_not_null()).arg_true()
    if missed.len():
        slow = frame[missed].select(_every_spelling(pl.col("text")))["text"]
        fast = fast.scatter(missed, slow)
    return fast


def _strptime(text: pl.Expr, fmt: str) -> pl.Expr:
    return text.str.strip_chars().str.strptime(DT, fmt, strict=False)


def _every_spelling(text: pl.Expr) -> pl.Expr:
    cleaned = (text.str.strip_chars().str.replace_all(r"\s+", " ")
         .str.replace(_ZONE, " ${1}").str.replace(_OFFSET, ""))
    epoch = pl.when(cleaned.str.contains(_EPOCH)).then(
        (cleaned.cast(pl.Float64, strict=False) * 1e6).cast(pl.Int64).cast(DT))
    tries = [cleaned.str.strptime(DT, fmt, strict=False) for fmt in _FORMATS]
    return pl.coalesce(epoch, *tries)
