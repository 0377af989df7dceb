"""Jetson `tegrastats` lines -> `samples`.

Every line is checked against `grammars/tegrastats.lark`'s `stats_line`; the quantities are
picked out of the good ones, all lines at once, with the regexes of the grammar's item rules:

| column | item | note |
|---|---|---|
| `util_gpu_pct`, `sm_clock_mhz` | `GR3D_FREQ 12%@[1300,1300]` (`GR3D` before JetPack 3) | the 3D engine's load; its clock (the fastest GPC's) |
| `util_mem_pct`, `mem_clock_mhz` | `EMC_FREQ 3%@3199` (`EMC`) | the memory controller's load and clock |
| `mem_used_mib`, `mem_total_mib` | `RAM 20642/62817MB` | memory the CPU and GPU share |
| `temperature_c` | `GPU@39.5C`, `gpu@45.1C` | -256C (sensor off) is null |
| `power_w` | `VDD_GPU`, `VDD_SYS_GPU`, `POM_5V_GPU`, `GPU` rail | else the rail the GPU shares (`VDD_GPU_SOC`, `VDD_CPU_GPU_CV`): now, not average |

There is one GPU (index 0), whose name tegrastats does not print. Times: `--logfile`'s
`MM-DD-YYYY HH:MM:SS` when present, else the sample number times the `--interval` (1000 ms by
default).

Warning codes: `tegrastats.bad-line` (a line that is not a tegrastats line: file:line:column,
and what Lark expected there), `tegrastats.truncated` (the last line has no line break: cut,
so its values may be too; not read).
"""

from __future__ import annotations

import re

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common import monitor, series
from roofreport.families.common.textio import Document
from roofreport.families.spec import ParseResult
from roofreport.families.tegrastats import FAMILY

DEFAULT_PERIOD_S = 1.0
SENSOR_OFF_C = -256.0
_INTERVAL = re.compile(r"(?:--interval|-i)[ =](\d+)")
_ITEMS = ("ram_item", "gpu_item", "emc_item", "gpu_temp_item", "gpu_rail_item", "shared_rail_item")


def parse(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    syntax = grammar.load("tegrastats")
    frame = doc.lines()
    frame = frame.with_columns(kind=syntax.classify_lines(frame["text"]))
    # (tegrastats killed mid-write: the cut line may still look whole, `VDD_IN 4520mW/45`)
    frame = monitor.drop_truncated(frame, doc, result, code="tegrastats.truncated",
                                   may_end=("blank_line", "command_line"),
                                   consequence="its values may be cut and are not read")
    strays = frame.filter(pl.col("kind") == "other").select("line_no", "text")
    series.warn_unparsed(result, "tegrastats.bad-line", syntax, "stats_line", list(strays.iter_rows()),
                         doc.display)
    rows = frame.filter(pl.col("kind") == "stats_line")
    if rows.height:
        period = _period(frame.filter(pl.col("kind") == "command_line")["text"].to_list())
        result.add("samples", series.finish(_samples(rows), period))
    else:
        result.error = ParseError("no tegrastats samples in this file", path=doc.display)
    return result


def _item(text: pl.Expr, rule: str) -> pl.Expr:
    """The first occurrence of an item in each line, as a struct of its named parts."""
    rx = grammar.load("tegrastats").regex(rule, anchored=False)
    return text.str.extract_groups(f"(?:^|\\s)(?:{rx})(?:\\s|$)").alias(rule)


def _samples(rows: pl.DataFrame) -> pl.DataFrame:
    syntax = grammar.load("tegrastats")
    stamp = pl.col("text").str.extract(f"^({syntax.terminal('STAMP')})", 1).alias("stamp")
    items = rows.select("line_no", stamp, *[_item(pl.col("text"), rule) for rule in _ITEMS])
    part = lambda rule, name: pl.col(rule).struct.field(name)   # noqa: E731 (a local shorthand)
    number = lambda rule, name: part(rule, name).cast(pl.Float64, strict=False)  # noqa: E731
    clocks = part("gpu_item", "gpu_freq").str.extract_all(r"\d+").list.eval(
        pl.element().cast(pl.Float64)).list.max()
    temperature = number("gpu_temp_item", "gpu_temp")
    power_mw = pl.coalesce(number("gpu_rail_item", "gpu_power"), number("shared_rail_item", "shared_power"))
    return items.select(
        pl.col("line_no").alias("source_line"),
        pl.lit(0, pl.Int64).alias("gpu_index"),
        pl.col("stamp").str.strptime(pl.Datetime("us"), "%m-%d-%Y %H:%M:%S", strict=False).alias("timestamp"),
        pl.int_range(pl.len()).cast(pl.Int64).alias("sample_no"),
        number("gpu_item", "gpu_load").alias("util_gpu_pct"),
        clocks.alias("sm_clock_mhz"),
        number("emc_item", "emc_load").alias("util_mem_pct"),
        number("emc_item", "emc_freq").alias("mem_clock_mhz"),
        number("ram_item", "ram_used").alias("mem_used_mib"),
        number("ram_item", "ram_total").alias("mem_total_mib"),
        pl.when(temperature > SENSOR_OFF_C).then(temperature).alias("temperature_c"),
        (power_mw / 1000.0).alias("power_w"),
    )


def _period(commands: list[str]) -> float:
    for command in commands:
        found = _INTERVAL.search(command)
        if found:
            return int(found.group(1)) / 1000.0
    return DEFAULT_PERIOD_S
