"""How numbers look in the report: SI prefixes, durations, percentages, shares.

One place decides the spelling, so tables, findings and chart labels agree
(decimal prefixes: 1 GB = 1e9 bytes, 1 TFLOP/s = 1e12 FLOP/s, as docs/methodology.md uses).
Unknown values print as an en dash, never as 0.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

MISSING = "–"
_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


def _known(value) -> bool:
    """Null, NaN and infinities (a division by a zero count) print as missing."""
    return value is not None and not (isinstance(value, float) and not math.isfinite(value))


def si(value, unit: str = "", digits: int = 3) -> str:
    """1.234e12, "FLOP/s" -> "1.23 TFLOP/s" (three significant digits)."""
    if not _known(value):
        return MISSING
    magnitude = abs(value)
    for factor, prefix in _PREFIXES:
        if magnitude >= factor:
            return f"{_sig(value / factor, digits)} {prefix}{unit}".rstrip()
    return f"{_sig(value, digits)} {unit}".rstrip()


def _sig(value: float, digits: int) -> str:
    """`digits` significant digits, halves rounded up as people do (1.555 -> 1.56, not 1.55)."""
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(value)))))
    rounded = Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return f"{rounded:.{decimals}f}"


def flops(value) -> str:
    return si(value, "FLOP")


def rate(value) -> str:
    return si(value, "FLOP/s")


def nbytes(value) -> str:
    return si(value, "B")


def bandwidth(value) -> str:
    return si(value, "B/s")


def intensity(value) -> str:
    if not _known(value):
        return MISSING
    return f"{_sig(value, 3) if value < 1000 else f'{value:,.0f}'} FLOP/B"


def duration(ns) -> str:
    """Nanoseconds in the largest unit that keeps a number >= 1: "12.3 ms", "4.50 s"."""
    if not _known(ns):
        return MISSING
    for factor, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if abs(ns) >= factor:
            return f"{_sig(ns / factor, 3)} {unit}"
    return f"{_sig(ns, 3)} ns"


def seconds(value) -> str:
    if not _known(value):
        return MISSING
    if value >= 120:
        return f"{value / 60:.1f} min"
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"


def percent(value, digits: int = 1) -> str:
    """A value already in percent (0..100); one too small to show is "< 0.1 %", never "0.0 %"
    (0.0 % would say nothing was there)."""
    if not _known(value):
        return MISSING
    smallest = 10 ** -digits
    if 0 < abs(value) < smallest / 2:
        return f"< {smallest:.{digits}f} %"
    return f"{value:.{digits}f} %"


def share(value, digits: int = 1) -> str:
    """A fraction (0..1) as percent."""
    if not _known(value):
        return MISSING
    return percent(value * 100, digits)


def count(value) -> str:
    if not _known(value):
        return MISSING
    return f"{int(value):,}"


def number(value, digits: int = 3) -> str:
    if not _known(value):
        return MISSING
    return _sig(float(value), digits)


def ratio(value) -> str:
    """A ratio like estimate/measured: "0.42×", "19×"."""
    if not _known(value):
        return MISSING
    return f"{_sig(value, 2)}×"


def value_range(values, show) -> str:
    """The least and greatest of `values` (None left out) as `show` spells them: "1.2 ms to
    3.4 ms", or one value where both spell the same; "–" where none is known."""
    known = [value for value in values if value is not None]
    if not known:
        return MISSING
    low, high = show(min(known)), show(max(known))
    return low if low == high else f"{low} to {high}"


def listing(words: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


FILTERS = {
    "si": si, "flops": flops, "rate": rate, "nbytes": nbytes, "bandwidth": bandwidth,
    "intensity": intensity, "duration": duration, "seconds": seconds, "percent": percent,
    "share": share, "count": count, "number": number, "ratio": ratio,
}
