"""nvprof's numbers with units: `8.92100s`, `57.632us`, `8.0000MB`, `60.641GB/s`, `100.00%`,
`1.6072e+10`, `Idle (0)`, as cells of text tables or of `--csv` columns with a units row.

nvprof scales sizes and throughputs in powers of two: a GPU-trace row of 256 bytes reads `256B`
in text and `0.000244` MB in CSV (256 / 2^20), and 8 MiB copied in 128.83 us reads
`60.641GB/s` (8 MiB / 128.83 us = 60.641 GiB/s). Times are decimal (ns, us, ms, s).
Everything is scaled to roofreport's base units: ns, byte, byte/second, %.
"""

from __future__ import annotations

import polars as pl

from roofreport.families.common import units

_BINARY = {"B": 1.0, "KB": 1024.0, "MB": 1024.0**2, "GB": 1024.0**3, "TB": 1024.0**4}

# nvprof unit spelling -> (factor to base unit, base unit)
UNITS: dict[str, tuple[float, str]] = {
    **{u: (units.scale(u)[1], "ns") for u in ("ns", "us", "ms", "s")},
    **{u: (f, "byte") for u, f in _BINARY.items()},
    **{f"{u}/s": (f, "byte/second") for u, f in _BINARY.items()},
    "%": (1.0, "%"),
}

# A printed cell: number (with exponent) and an optional unit glued to it, or a level such as
# `Idle (0)` / `High (7)` (utilization metrics, value = the level).
_CELL = r"^\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*([A-Za-z%/]*)\s*$"
_LEVEL = r"^\s*[A-Za-z]+ \((\d+)\)\s*$"


def _factor(unit: pl.Expr) -> pl.Expr:
    return unit.replace_strict({u: f for u, (f, _) in UNITS.items()}, default=None,
                               return_dtype=pl.Float64)


def base_unit(unit: pl.Expr) -> pl.Expr:
    """The base unit of a printed unit (`GB/s` -> `byte/second`); other units are kept."""
    mapped = unit.replace_strict({u: b for u, (_, b) in UNITS.items()}, default=None,
                                 return_dtype=pl.String)
    return pl.when(unit == "").then(None).otherwise(pl.coalesce(mapped, unit))


def cell_unit(cell: pl.Expr, column_unit: pl.Expr | None = None) -> pl.Expr:
    """The unit a cell is in: glued to the number, else the column's (CSV units row)."""
    glued = cell.str.extract(_CELL, 2)
    glued = pl.when(glued == "").then(None).otherwise(glued)
    if column_unit is not None:
        column_unit = pl.when(column_unit == "").then(None).otherwise(column_unit)
        return pl.coalesce(glued, column_unit)
    return glued


def scaled(cell: pl.Expr, column_unit: pl.Expr | None = None) -> pl.Expr:
    """The cell's value in base units (null for `-`, text, or an unknown unit)."""
    number = cell.str.extract(_CELL, 1).cast(pl.Float64, strict=False)
    unit = cell_unit(cell, column_unit)
    factor = pl.when(unit.is_null()).then(pl.lit(1.0)).otherwise(_factor(unit))
    level = cell.str.extract(_LEVEL, 1).cast(pl.Float64, strict=False)
    # 15 significant digits drop the float noise of the scaling (128.83 us * 1e3 is
    # 128830.00000000001) and keep every digit nvprof prints.
    return pl.coalesce((number * factor).round_sig_figs(15), level)


def plain(cell: pl.Expr, unit: str) -> pl.Expr:
    """A column of plain numbers in one unit (`""` for none), in base units."""
    factor = UNITS[unit][0] if unit else 1.0
    number = cell.cast(pl.Float64, strict=False)
    return number if factor == 1.0 else (number * factor).round_sig_figs(15)


def integer(cell: pl.Expr) -> pl.Expr:
    return cell.str.strip_chars().cast(pl.Int64, strict=False)

