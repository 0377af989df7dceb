"""nvprof's own profile files (`nvprof -o x.nvvp|x.prof`): SQLite, read with sqlite3, read-only.

Kernels (`CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`, else `..._KERNEL`), copies and sets become
`activities` (kernels also `kernels` launches), as `--print-gpu-trace` would print them; runtime and driver
API records become `api_calls` (kind "trace"), as `--print-api-trace` would. Times are made
relative to the first GPU activity (API calls: the first API call), like nvprof's own traces.
Names come from `StringTable` and stay mangled (`_Z11fill_kerneliPfi`) as nvprof stored them.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common import sqlite
from roofreport.families.common.sqlite import connect, query, table_names
from roofreport.families.common.textio import Head
from roofreport.families.nvprof import cupti as nvprof_cupti, text as nvprof_text
from roofreport.families.spec import ParseResult
from roofreport.tables.frames import launch_dims

FAMILY = "nvprof"


def sniff(head: Head) -> str | None:
    """An nvprof profile: a string table and CUPTI activity tables (a damaged `.nvvp` or
    `.prof` too)."""
    return sqlite.sniff(head, _recognise, (".nvvp", ".prof"), "sqlite profile (unreadable)")


def _recognise(con: sqlite3.Connection, tables: set[str]) -> str | None:
    if "StringTable" in tables and any(t.startswith("CUPTI_ACTIVITY_KIND_") for t in tables):
        return "sqlite profile"
    return None


def parse(path: Path, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    try:
        with closing(connect(path)) as con:
            _read(con, result)
    except sqlite3.Error as exc:
        result.error = ParseError(f"cannot read this nvprof SQLite profile: {exc}", path=str(path))
        return result
    if not result.rows() and result.error is None:
        result.error = ParseError("nvprof profile holds no kernel, copy or API record", path=str(path))
    return result


def _read(con: sqlite3.Connection, result: ParseResult) -> None:
    tables = table_names(con)
    version = query(con, "SELECT version FROM Version") if "Version" in tables else None
    if version is not None and version.height:
        result.tool_version = f"nvprof profile format {version.item(0, 0)}"
    devices = _devices(con, tables)
    if devices.height:
        result.hints.device_name = devices["device_name"][0]
    gpu = _gpu_activities(con, tables, devices)
    if gpu.height:
        nvprof_text.add_gpu_trace(gpu, result)
    api = _api_calls(con, tables, result)
    if api.height:
        result.add("api_calls", api)


def _devices(con: sqlite3.Connection, tables: set[str]) -> pl.DataFrame:
    if "CUPTI_ACTIVITY_KIND_DEVICE" not in tables:
        return pl.DataFrame(schema={"deviceId": pl.Int64, "device_name": pl.String})
    return query(con, """SELECT d.id AS deviceId, s.value AS device_name
                           FROM CUPTI_ACTIVITY_KIND_DEVICE d LEFT JOIN StringTable s ON s._id_ = d.name""")


def _gpu_activities(con: sqlite3.Connection, tables: set[str], devices: pl.DataFrame) -> pl.DataFrame:
    parts = []
    for table in ("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", "CUPTI_ACTIVITY_KIND_KERNEL"):
        if table in tables:
            kernels = query(con, f"""
                SELECT k.start, k."end", k.deviceId, k.contextId, k.streamId, k.correlationId,
                       s.value AS name, k.gridX AS grid_x, k.gridY AS grid_y, k.gridZ AS grid_z,
                       k.blockX AS block_x, k.blockY AS block_y, k.blockZ AS block_z, NULL AS bytes
                FROM {table} k LEFT JOIN StringTable s ON s._id_ = k.name""")
            if kernels.height:
                parts.append(kernels.with_columns(launch_dims(kernels, "grid"), launch_dims(kernels, "block"))
                             .drop("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"))
                break
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
        copies = query(con, """SELECT start, "end", deviceId, contextId, streamId, correlationId,
                                       copyKind, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY""")
        kind = pl.col("copyKind").replace_strict(nvprof_cupti.MEMCPY_KINDS, default="?", return_dtype=pl.String)
        parts.append(copies.with_columns(
            pl.concat_str([pl.lit("[CUDA memcpy "), kind, pl.lit("]")]).alias("name")).drop("copyKind"))
    if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
        parts.append(query(con, """SELECT start, "end", deviceId, contextId, streamId, correlationId,
                                           '[CUDA memset]' AS name, bytes FROM CUPTI_ACTIVITY_KIND_MEMSET"""))
    parts = [p for p in parts if p.height]
    if not parts:
        return pl.DataFrame()
    rows = pl.concat(parts, how="diagonal_relaxed").sort("start", "correlationId")
    return _as_trace(rows, devices)


def _as_trace(rows: pl.DataFrame, devices: pl.DataFrame) -> pl.DataFrame:
    """Raw records -> the columns of a GPU trace row; the device as the trace prints it."""
    rows = rows.join(devices, on="deviceId", how="left")
    device = pl.format("{} ({})", pl.col("device_name"), pl.col("deviceId"))
    return rows.with_row_index("source_line", offset=1).select(
        pl.col("source_line").cast(pl.Int64), "name",
        (pl.col("start") - pl.col("start").min()).cast(pl.Float64).alias("start_ns"),
        (pl.col("end") - pl.col("start")).cast(pl.Float64).alias("duration_ns"),
        pl.col("bytes").cast(pl.Float64), device.alias("device"),
        pl.col("contextId").alias("context"), pl.col("streamId").alias("stream"),
        pl.col("correlationId").alias("correlation_id"), "grid", "block")


def _api_calls(con: sqlite3.Connection, tables: set[str], result: ParseResult) -> pl.DataFrame:
    parts = []
    for table, names, unknown in (("CUPTI_ACTIVITY_KIND_RUNTIME", nvprof_cupti.RUNTIME, "cudaRuntimeApi#"),
                                  ("CUPTI_ACTIVITY_KIND_DRIVER", nvprof_cupti.DRIVER, "cuDriverApi#")):
        if table not in tables:
            continue
        calls = query(con, f'SELECT cbid, start, "end", correlationId FROM {table}')
        if not calls.height:
            continue
        name = pl.col("cbid").replace_strict(names, default=None, return_dtype=pl.String)
        calls = calls.with_columns(pl.coalesce(name, pl.format(unknown + "{}", pl.col("cbid"))).alias("name"))
        missing = sorted(set(calls.filter(name.is_null())["cbid"].to_list()))
        if missing:
            result.warn("nvprof.unknown-api", f"{table}: callback ids without a known name: "
                        f"{', '.join(map(str, missing))}")
        parts.append(calls)
    if not parts:
        return pl.DataFrame()
    calls = pl.concat(parts).sort("start")
    return calls.with_row_index("source_line", offset=1).select(
        pl.col("source_line").cast(pl.Int64), pl.lit("trace").alias("kind"), "name",
        pl.lit(1).alias("calls"),
        (pl.col("start") - pl.col("start").min()).cast(pl.Float64).alias("start_ns"),
        (pl.col("end") - pl.col("start")).cast(pl.Float64).alias("total_ns"))
