"""From the cells of one nsys report (CSV or console) to the shared tables.

Both nsys parsers cut a report into a frame of text cells named by field (see
`columns.py`) plus `source_line`; `typed` turns the cells into numbers in base units and
`emit` writes the report's rows into `kernels`, `activities`, `api_calls`, `regions` or
`metrics`, one small function per report kind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common import numbers, units
from roofreport.families.common.activity import activity_kinds
from roofreport.families.nsys.columns import DEFAULT, TEXT_FIELDS, Column, Report
from roofreport.families.spec import ParseResult
from roofreport.tables import schema
from roofreport.tables.frames import launch_dims, printed_dims

ELLIPSIS = "\u2026"   # nsys cuts names (and console cells) at their column width with `…`

_NO_TEXT = ("", "None")   # printed for "no value" in text cells (2022.4 writes Python's None)
MAX_PROBLEMS = 20         # located problems reported per table; the rest are counted


def problem(result: ParseResult, code: str, err: ParseError) -> None:
    """A located problem: a coded warning, and the file's error (status "partial") if first."""
    result.warn(code, err.describe(), line=err.line)
    if result.error is None:
        result.error = err


@dataclass
class Cells:
    """One report's cells: `frame` holds `source_line` and one column per field, String (or
    already Float64 when the CSV reader parsed plain numbers). `padded`: console cells carry
    the spaces of their column."""

    report: Report
    columns: list[Column]
    frame: pl.DataFrame
    padded: bool = False


def typed(cells: Cells) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(values, bad): numbers scaled to base units, text stripped; `bad` lists the cells
    (`source_line`, `field`, `text`) that hold neither a number nor a "no value" mark.

    Trace CSVs hold millions of plain numbers: a column whose every cell casts as it is
    skips the careful parse (thousands separators, `(!)`, `%`), which only the others get."""
    numeric = [c.field for c in cells.columns if c.field not in TEXT_FIELDS
               and cells.frame.schema[c.field] == pl.String]
    careful = _needs_care(cells.frame, numeric)
    exprs = [pl.col("source_line")]
    for col in cells.columns:
        raw = pl.col(col.field).str.strip_chars() if cells.padded else pl.col(col.field)
        if col.field in TEXT_FIELDS:
            # CSV cells come without padding and with "no value" marks already null.
            text = pl.when(raw.is_in(_NO_TEXT)).then(None).otherwise(raw) if cells.padded else raw
            exprs.append(text.alias(col.field))
            continue
        unit = cells.report.default_unit if col.unit == DEFAULT else col.unit
        number = numbers.parse_number(raw) if col.field in careful else _plain(cells.frame, col.field)
        factor = units.scale(unit)[1]
        exprs.append((number * factor if factor != 1.0 else number).alias(col.field))
    values = cells.frame.select(exprs)
    return values, _bad_cells(cells.frame, values, careful)


def _plain(frame: pl.DataFrame, field: str) -> pl.Expr:
    """A column of plain numbers as Float64 (whole numbers the reader typed stay so), NaN as
    null. A column the CSV reader already
    typed is used as it is unless it holds a NaN (no copy of a million-row column for nothing)."""
    column = pl.col(field)
    if frame.schema[field].is_integer():   # read as whole numbers (ids, launch dimensions)
        return column
    if frame.schema[field] == pl.Float64 and not frame[field].is_nan().any():
        return column
    return column.cast(pl.Float64, strict=False).fill_nan(None)


def _needs_care(frame: pl.DataFrame, fields: list[str]) -> set[str]:
    """Numeric fields with a cell that is neither a plain number nor a "no value" mark."""
    if not fields:
        return set()
    odd = frame.select([(pl.col(f).cast(pl.Float64, strict=False).is_null() & pl.col(f).is_not_null()
                         & ~pl.col(f).is_in(numbers.MISSING)).any().alias(f) for f in fields])
    return {f for f in fields if odd[f][0]}


def _bad_cells(frame: pl.DataFrame, values: pl.DataFrame, careful: set[str]) -> pl.DataFrame:
    schema = {"source_line": pl.Int64, "field": pl.String, "text": pl.String}
    parts = []
    for field in sorted(careful):
        raw = frame[field].str.strip_chars()
        broken = values[field].is_null() & raw.is_not_null() & ~raw.is_in(numbers.MISSING) \
            & ~raw.str.ends_with(ELLIPSIS)
        if broken.any():
            parts.append(pl.DataFrame({"source_line": frame["source_line"].filter(broken),
                                       "field": field, "text": raw.filter(broken)}))
    if not parts:
        return pl.DataFrame(schema=schema)
    return pl.concat(parts).cast(schema).sort("source_line")


def truncated_values(cells: Cells) -> int:
    """How many numeric console cells nsys cut with `…` (their value is lost)."""
    numeric = [c.field for c in cells.columns if c.field not in TEXT_FIELDS]
    if not numeric:
        return 0
    return int(cells.frame.select(
        pl.sum_horizontal(pl.col(f).str.ends_with(ELLIPSIS).fill_null(False) for f in numeric)).sum().item())


# -- emitters --------------------------------------------------------------------------------

def emit(report: Report, values: pl.DataFrame, result: ParseResult, context: dict) -> None:
    """Write one report's typed rows into the shared tables. `context` carries what the file
    said around the table (e.g. `nvtx_prefix`: kernel names are `range/kernel`)."""
    if not values.height:
        return
    EMITTERS[report.id](_ensure(values), result, context)


_EXPECTED = ("start", "duration", "name", "device", "context", "stream", "correlation_id", "bytes",
             "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "total", "instances",
             "calls", "operations", "avg", "min", "med", "max", "range", "grid_xyz", "block_xyz", "api_name")


def _ensure(values: pl.DataFrame) -> pl.DataFrame:
    """Fields a report may lack (older or narrower headers) as typed nulls, so every
    emitter can name them."""
    missing = [pl.lit(None, pl.String if c in TEXT_FIELDS else pl.Float64).alias(c)
               for c in _EXPECTED if c not in values.columns]
    return values.with_columns(missing) if missing else values


# Fields an emitter reads, for reports big enough that the rest is worth dropping early.
USED_FIELDS = {"gputrace": frozenset({"start", "duration", "name", "device", "context", "stream",
                                      "correlation_id", "bytes", "grid_x", "grid_y", "grid_z",
                                      "block_x", "block_y", "block_z"})}


def _gputrace(frame: pl.DataFrame, result: ParseResult, context: dict) -> None:
    kind = activity_kinds(frame["name"])
    common = [pl.col("source_line"), pl.col("name"), pl.col("duration").alias("duration_ns"),
              "device", "context", "stream", launch_dims(frame, "grid"), launch_dims(frame, "block")]
    activities = schema.conform("activities", frame.select(
        *common, pl.lit(kind).alias("kind"), pl.col("start").alias("start_ns"), "bytes", "correlation_id"))
    result.add("activities", activities)
    # Kernels are the activities' kernel rows (columns picked before filtering: no copies of
    # the rest); launch ids count every row of the trace.
    is_kernel = kind == "kernel"
    if is_kernel.any():
        result.add("kernels", activities.select(
            "source_line", "name", "duration_ns", "device", "context", "stream", "grid", "block",
            pl.int_range(1, frame.height + 1, dtype=pl.Int64).alias("launch_id"),
            pl.lit("launch").alias("kind"), pl.lit(1).alias("count")).filter(is_kernel))
    devices = activities["device"].drop_nulls()
    if devices.len() and result.hints.device_name is None:
        result.hints.device_name = device_name(devices[0])


def device_name(printed: str) -> str:
    """`NVIDIA RTX A4500 (0)` -> `NVIDIA RTX A4500`."""
    return re.sub(r"\s*\(\d+\)$", "", printed.strip())


def _kernel_summary(frame: pl.DataFrame, result: ParseResult, context: dict) -> None:
    name, region = pl.col("name"), pl.col("range")
    if context.get("nvtx_prefix"):  # `cuda_gpu_kern_sum:nvtx-name`: `forward/kernel`
        has = name.str.contains("/")
        region = pl.when(has).then(name.str.extract(r"^([^/]*)/", 1))
        name = pl.when(has).then(name.str.replace(r"^[^/]*/", "")).otherwise(name)
    result.add("kernels", frame.select(
        "source_line", name.alias("name"), region.alias("region"), pl.lit("summary").alias("kind"),
        pl.col("instances").alias("count"), pl.col("total").alias("duration_ns"),
        # The per-launch statistics nsys printed (2020-21 headers print no median: null).
        pl.col("min").alias("min_ns"), pl.col("med").alias("median_ns"), pl.col("max").alias("max_ns"),
        printed_dims(pl.col("grid_xyz")).alias("grid"), printed_dims(pl.col("block_xyz")).alias("block")))


def _nvtx_kernel_summary(frame: pl.DataFrame, result: ParseResult, context: dict) -> None:
    _kernel_summary(frame, result, context)
    if frame["range"].drop_nulls().n_unique() > 1:
        result.warn("nsys.overlapping-rows",
                    "nvtxkernsum lists a kernel under every NVTX range open at its launch: rows of "
                    "nested ranges count the same launches again (sum gpukernsum or a trace instead)",
                    line=int(frame["source_line"][0]))


def _memtime_summary(frame: pl.DataFrame, result: ParseResult, context: dict) -> None:
    result.add("kernels", frame.select(
        "source_line", "name", pl.lit("summary").alias("kind"),
        pl.col("operations").alias("count"), pl.col("total").alias("duration_ns")))


def _api_summary(kind: str):
    def emit_api(frame: pl.DataFrame, result: ParseResult, context: dict) -> None:
        result.add("api_calls", frame.select(
            "source_line", pl.lit(kind).alias("kind"), "name", pl.col("calls"),
            pl.col("total").alias("total_ns"), pl.col("avg").alias("avg_ns"),
            pl.col("min").alias("min_ns"), pl.col("max").alias("max_ns")))
    return emit_api


def _api_trace(frame: pl.DataFrame, result: ParseResult, context: dict) -> None:
    result.add("api_calls", frame.select(
        "source_line", pl.lit("trace").alias("kind"),
        pl.coalesce("api_name", "name").alias("name"), pl.lit(1).alias("calls"),
        pl.col("duration").alias("total_ns"), pl.col("start").alias("start_ns")))


def _nvtx_summary(frame: pl.DataFrame, result: ParseResult, context: dict) -> None:
    result.add("regions", frame.select(
        "source_line", pl.lit("nvtx").alias("kind"), pl.col("range").alias("name"),
        pl.col("instances").alias("count"), pl.col("total").alias("duration_ns")))


def _nvtx_projection(frame: pl.DataFrame, result: ParseResult, context: dict) -> None:
    result.add("regions", frame.select(
        "source_line", pl.lit("nvtx_gpu").alias("kind"), "name",
        pl.col("start").alias("start_ns"), pl.col("duration").alias("duration_ns"),
        pl.lit(1).alias("count")))


def _nvtx_projection_summary(frame: pl.DataFrame, result: ParseResult, context: dict) -> None:
    result.add("regions", frame.select(
        "source_line", pl.lit("nvtx_gpu").alias("kind"), pl.col("range").alias("name"),
        pl.col("instances").alias("count"), pl.col("total").alias("duration_ns")))


def _memsize_summary(frame: pl.DataFrame, result: ParseResult, context: dict) -> None:
    """Bytes moved per memory operation: long form in `metrics` (one row per statistic)."""
    stats = [c for c in ("total_size", "operations", "avg", "med", "min", "max", "stddev")
             if c in frame.columns]
    long = frame.unpivot(index=["source_line", "name"], on=stats, variable_name="stat", value_name="value")
    result.add("metrics", long.select(
        "source_line", pl.col("name").alias("kernel_name"), pl.lit("gpumemsizesum").alias("section"),
        pl.when(pl.col("stat") == "operations").then(pl.lit("memory operations"))
        .otherwise(pl.lit("memory operation bytes")).alias("metric"),
        pl.col("stat").replace({"total_size": "total", "operations": None}).alias("stat"),
        pl.when(pl.col("stat") == "operations").then(None).otherwise(pl.lit("byte")).alias("unit"),
        "value"))


EMITTERS = {
    "gputrace": _gputrace,
    "gpukernsum": _kernel_summary,
    "nvtxkernsum": _nvtx_kernel_summary,
    "gpumemtimesum": _memtime_summary,
    "gpumemsizesum": _memsize_summary,
    "cudaapisum": _api_summary("summary"),
    "osrtsum": _api_summary("osrt_summary"),
    "apitrace": _api_trace,
    "rulesync": _api_trace,
    "nvtxsum": _nvtx_summary,
    "nvtxgpuproj": _nvtx_projection,
    "nvtxgpuprojsum": _nvtx_projection_summary,
}
