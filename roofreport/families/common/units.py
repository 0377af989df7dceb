"""Unit spellings as printed by the profilers, scaled to roofreport's base units, in one table.

Base units: ns for time, byte for sizes, byte/s for throughput, Hz for clocks, % for shares,
W for power, MiB for nvidia-smi memory. Nsight Compute scales bytes decimally
(`Kbyte` = 1000 byte: "Shared Memory Configuration Size 32.77 Kbyte" is 32,768 byte in the
base-unit export of the same run). Anything not listed keeps factor 1 and its own spelling
(counts such as `inst`, `sector`, `cycle`, `warp`, `register/thread`).
"""

from __future__ import annotations

from functools import lru_cache

import polars as pl

from roofreport.tables.frames import per_distinct

_TIME = {  # -> ns
    "second": 1e9, "msecond": 1e6, "usecond": 1e3, "nsecond": 1.0,
    "s": 1e9, "sec": 1e9, "ms": 1e6, "us": 1e3, "µs": 1e3, "ns": 1.0,
}
_DECIMAL_BYTES = {  # -> byte
    "byte": 1.0, "bytes": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
    "B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
}
_FREQ = {  # -> Hz, and cycle/<time> -> cycle/second
    "hz": 1.0, "Hz": 1.0, "khz": 1e3, "Khz": 1e3, "KHz": 1e3, "mhz": 1e6, "Mhz": 1e6, "MHz": 1e6,
    "ghz": 1e9, "Ghz": 1e9, "GHz": 1e9,
}
_BINARY_BYTES = {"KiB": 1024.0, "MiB": 1024.0**2, "GiB": 1024.0**3}

BASE_TIME, BASE_BYTES, BASE_RATE, BASE_FREQ = "ns", "byte", "byte/second", "cycle/second"


@lru_cache(maxsize=4096)
def scale(unit: str | None) -> tuple[str, float]:
    """(base unit, factor) such that value_in_base = printed_value * factor."""
    if unit is None:
        return ("", 1.0)
    spelled = unit.strip()
    if spelled in _TIME:
        return (BASE_TIME, _TIME[spelled])
    if spelled in _DECIMAL_BYTES:
        return (BASE_BYTES, _DECIMAL_BYTES[spelled])
    if spelled in _BINARY_BYTES:
        return (BASE_BYTES, _BINARY_BYTES[spelled])
    if spelled in _FREQ:
        return (BASE_FREQ, _FREQ[spelled])
    if "/" in spelled:
        num, _, den = spelled.partition("/")
        num_base, num_f = scale(num)
        if den in _TIME or den in ("second", "s"):
            den_f = _TIME.get(den, 1e9) / 1e9  # seconds per printed time unit
            base_num = num_base or num
            return (f"{base_num}/second", num_f / den_f)
        if num_base:
            return (f"{num_base}/{den}", num_f)
    return (spelled, 1.0)


def factors(unit: pl.Series) -> pl.Series:
    """Each row's factor from its printed unit to the base unit (no unit: 1), looked up once
    per distinct unit: a log prints millions of values in a few dozen units."""
    def looked_up(distinct: pl.Series) -> pl.DataFrame:
        return pl.DataFrame({"factor": [scale(name)[1] for name in distinct.to_list()]},
                            schema={"factor": pl.Float64})

    return per_distinct(unit, looked_up)["factor"].fill_null(1.0).alias("factor")
