"""The number spellings the tools print: auto-scaled bytes and times, thousands separators."""

from __future__ import annotations

# -- number formatting -----------------------------------------------------------------------

def auto_bytes(n: float, table: bool) -> tuple[str, str]:
    for unit, f in (("Gbyte", 1e9), ("Mbyte", 1e6), ("Kbyte", 1e3)):
        if n >= f:
            return unit, f"{n / f:.2f}"
    return "byte", f"{int(n)}"


def auto_time(ns: float, table: bool) -> tuple[str, str]:
    for (old, new), f in ((("msecond", "ms"), 1e6), (("usecond", "us"), 1e3)):
        if ns >= f:
            return (new if table else old), f"{ns / f:.2f}"
    return ("ns" if table else "nsecond"), f"{ns:.2f}"


def sep(n: int, thousands: bool = True) -> str:
    return f"{n:,}" if thousands else str(n)
