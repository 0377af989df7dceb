"""`rocm-smi --csv` and `amd-smi metric|monitor --csv` series -> the `samples` table.

rocm-smi's CSV (`rocm_smi.py` `formatCsv`) has a `device` column (`card0`) and one column per
printed label (`GPU use (%)`, `Average Graphics Package Power (W)`, `sclk clock speed:` with
cells `(1700Mhz)`...); it writes no time, and a loop (`while true; do rocm-smi --showuse
--showpower --csv; sleep 1; done`) repeats the header before every sample. amd-smi's CSV
(`amdsmi_logger.py`) has `gpu` and, with `--watch`, `timestamp` (epoch seconds) first, then the
leaf names of its nested output (`gfx_activity`, `socket_power`, `gfx_0_clk`, `edge`, `used_vram`
in `metric`; `gfx`, `power_usage`, `gfx_clock`, `vram_used` in `monitor`), bare numbers in the
units its human-readable output prints (%, W, MHz, C, MB = MiB). `N/A` is no value.

A column is read when the vocabulary below names it (a new spelling is a new row); a sample
keeps the first of several columns for one quantity (edge before junction temperature).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from roofreport import grammar
from roofreport.families.common import numbers

MIB = 1024.0 ** 2


@dataclass(frozen=True)
class SmiColumn:
    header: str
    column: str          # `samples` column
    factor: float = 1.0  # printed value x factor = base unit
    kind: str = "number"  # number, clock (`(1700Mhz)`), name


def _c(column: str, *headers: str, factor: float = 1.0, kind: str = "number") -> list[SmiColumn]:
    return [SmiColumn(h, column, factor, kind) for h in headers]


ROCM_SMI: list[SmiColumn] = [
    *_c("util_gpu_pct", "GPU use (%)"),
    *_c("util_mem_pct", "GPU Memory Read/Write Activity (%)", "GPU memory use (%)"),
    *_c("power_w", "Average Graphics Package Power (W)", "Current Socket Graphics Package Power (W)",
        "Current Graphics Package Power (W)", "Average Socket Power (W)"),
    *_c("power_limit_w", "Max Graphics Package Power (W)"),
    *_c("temperature_c", "Temperature (Sensor edge) (C)", "Temperature (Sensor junction) (C)"),
    *_c("sm_clock_mhz", "sclk clock speed:", kind="clock"),
    *_c("mem_clock_mhz", "mclk clock speed:", kind="clock"),
    *_c("mem_total_mib", "VRAM Total Memory (B)", factor=1 / MIB),
    *_c("mem_used_mib", "VRAM Total Used Memory (B)", factor=1 / MIB),
    *_c("gpu_name", "Card Series", "Card series", "Device Name", "Card SKU", "Card Model", "Card model",
        kind="name"),
]
AMD_SMI_METRIC: list[SmiColumn] = [
    *_c("util_gpu_pct", "gfx_activity", "gfx_usage"),
    *_c("util_mem_pct", "umc_activity", "mem_activity"),
    *_c("power_w", "socket_power", "average_socket_power", "current_socket_power"),
    *_c("temperature_c", "edge", "hotspot"),
    *_c("sm_clock_mhz", "gfx_0_clk", "gfx_clk"),
    *_c("mem_clock_mhz", "mem_0_clk", "mem_clk"),
    *_c("mem_total_mib", "total_vram"),
    *_c("mem_used_mib", "used_vram"),
]
AMD_SMI_MONITOR: list[SmiColumn] = [
    *_c("util_gpu_pct", "gfx"),
    *_c("util_mem_pct", "mem"),
    *_c("power_w", "power_usage"),
    *_c("temperature_c", "hotspot_temperature"),
    *_c("sm_clock_mhz", "gfx_clock"),
    *_c("mem_clock_mhz", "mem_clock"),
    *_c("mem_total_mib", "vram_total"),
    *_c("mem_used_mib", "vram_used"),
]
VOCABULARIES = {"rocm-smi": ("device", ROCM_SMI), "amd-smi": ("gpu", AMD_SMI_METRIC)}
_MONITOR_TELLS = {"power_usage", "gfx_clock", "vram_used"}


def vocabulary(names: list[str] | tuple[str, ...], tool: str) -> list[SmiColumn]:
    if tool == "amd-smi" and _MONITOR_TELLS & set(names):
        return AMD_SMI_MONITOR
    return VOCABULARIES[tool][1]


TELLS = frozenset({device for device, _ in VOCABULARIES.values()})


def recognise(names: list[str]) -> str | None:
    """"rocm-smi" or "amd-smi" when the header has the tool's device column and at least one
    column it reads, else None."""
    for tool, (device, _) in VOCABULARIES.items():
        if device in names[:2]:
            known = {c.header for c in vocabulary(names, tool)}
            if known & set(names):
                return tool
    return None


def raw_samples(cells: pl.DataFrame, names: tuple[str, ...], tool: str) -> pl.DataFrame:
    """Raw `samples` rows (see families/common/series.py) from the text cells of an SMI CSV
    (columns c0..cN and source_line); the repeated headers of a loop left out."""
    position = {name: index for index, name in enumerate(names)}
    device = VOCABULARIES[tool][0]
    syntax = grammar.load("rocm")
    device_cell = pl.col(f"c{position[device]}").str.strip_chars()
    rows = cells.filter(device_cell != device)
    found: dict[str, list[pl.Expr]] = {}
    for column in vocabulary(names, tool):
        if column.header in position:
            found.setdefault(column.column, []).append(_value(pl.col(f"c{position[column.header]}"), column, syntax))
    out = [pl.col("source_line"),
           device_cell.str.extract(syntax.regex("smi_device_cell"), 1).cast(pl.Int64, strict=False).alias("gpu_index")]
    out += [pl.coalesce(exprs).alias(name) for name, exprs in found.items()]
    if "timestamp" in position:
        seconds = pl.col(f"c{position['timestamp']}").cast(pl.Float64, strict=False)
        out.append((seconds * 1e6).round().cast(pl.Int64, strict=False).cast(pl.Datetime("us")).alias("timestamp"))
    frame = rows.select(out)
    return frame.with_columns(sample_no=pl.int_range(pl.len()).over("gpu_index").cast(pl.Int64))


def _value(cell: pl.Expr, column: SmiColumn, syntax: grammar.Grammar) -> pl.Expr:
    text = cell.str.strip_chars()
    text = pl.when(text.is_in(numbers.MISSING) | text.str.contains(syntax.regex("missing_cell"))).then(None).otherwise(text)
    if column.kind == "name":
        return text
    if column.kind == "clock":
        text = text.str.extract(syntax.regex("smi_clock_cell"), 1)
    return numbers.parse_number(text) * column.factor
