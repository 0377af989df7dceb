"""The nsys SQLite export (`nsys export --type sqlite`, or the `.sqlite` `nsys stats` leaves
beside a report), read with Python's sqlite3: no NVIDIA tool needed.

The file is opened read-only and immutable, with `trusted_schema` off, and only plain tables
are read, with fixed queries: nothing stored in the file is executed. Schemas differ between
versions (19 to 96 tables; 2.x `EXPORT_META_DATA`, 3.x `META_DATA_EXPORT`; `greenContextId`
from 2024; no `TARGET_INFO_GPU` in trimmed exports), so every table and column is looked up
before it is queried, and the column mappings below are data.

Tables filled: `activities` (kernels, memcpy, memset, in start order, like `gputrace`),
`kernels` (one launch row per kernel, `region` = the NVTX range it was launched in),
`api_calls` (CUDA runtime/driver trace), `regions` (NVTX ranges with their push/pop path,
see `nvtx.py`). `source_line` holds the row's SQLite rowid. A report of several processes that
each ran GPU work (`globalPid`) is a job of several ranks: each activity and kernel row carries
its process's `rank` and the hints the count (`families/common/processes.py`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common import processes, sqlite
from roofreport.families.common.sqlite import connect, table_names
from roofreport.families.common.textio import Head
from roofreport.families.nsys import nvtx as nsys_nvtx
from roofreport.families.spec import ParseResult
from roofreport.tables.frames import launch_dims

FAMILY = "nsys"
MAX_PROBLEMS = 20
META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")
NVPROF_TABLES = ("StringTable", "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL")
NSYS_TABLES = (*META_TABLES, "StringIds", "TARGET_INFO_GPU", "CUPTI_ACTIVITY_KIND_KERNEL",
               "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")


_COMMON = {"start": "start", "end": "end", "device_id": "deviceId", "context": "contextId",
           "stream": "streamId", "correlation_id": "correlationId", "global_pid": "globalPid"}
# CUPTI table -> (activity kind, field -> column). Grid and block only exist for kernels.
ACTIVITY_TABLES: dict[str, tuple[str, dict[str, str]]] = {
    "CUPTI_ACTIVITY_KIND_KERNEL": ("kernel", {
        **_COMMON, "grid_x": "gridX", "grid_y": "gridY", "grid_z": "gridZ",
        "block_x": "blockX", "block_y": "blockY", "block_z": "blockZ"}),
    "CUPTI_ACTIVITY_KIND_MEMCPY": ("memcpy", {**_COMMON, "bytes": "bytes", "copy_kind": "copyKind"}),
    "CUPTI_ACTIVITY_KIND_MEMSET": ("memset", {**_COMMON, "bytes": "bytes"}),
}
# Kernel names are StringIds ids; the demangled (full) name first, as `gputrace` prints it.
KERNEL_NAME_COLUMNS = ("demangledName", "shortName", "mangledName")
# copyKind -> the name nsys 2022 `gputrace` prints (2023+ spells `Host-to-Device`).
MEMCPY_NAMES = {
    0: "[CUDA memcpy Unknown]", 1: "[CUDA memcpy HtoD]", 2: "[CUDA memcpy DtoH]",
    3: "[CUDA memcpy HtoA]", 4: "[CUDA memcpy AtoH]", 5: "[CUDA memcpy AtoA]",
    6: "[CUDA memcpy AtoD]", 7: "[CUDA memcpy DtoA]", 8: "[CUDA memcpy DtoD]",
    9: "[CUDA memcpy HtoH]", 10: "[CUDA memcpy PtoP]", 11: "[CUDA Unified Memory memcpy HtoD]",
    12: "[CUDA Unified Memory memcpy DtoH]", 13: "[CUDA Unified Memory memcpy DtoD]",
}
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
# The export keeps the runtime's entry-point suffixes (`cudaLaunchKernel_v7000`); nsys's own
# API summaries drop the four-digit ones and keep the rest (`cudaStreamIsCapturing_v10000`,
# `cuGetProcAddress_v2`), checked on every row of a real export against its `cuda_api_sum`.
RUNTIME_SUFFIX = r"_v[1-9]\d{3}$"
RUNTIME_COLUMNS = {"start": "start", "end": "end", "thread": "globalTid", "correlation_id": "correlationId"}
NVTX_TABLE = "NVTX_EVENTS"
NVTX_COLUMNS = {"start": "start", "end": "end", "event_type": "eventType", "text": "text",
                "thread": "globalTid", "domain": "domainId"}
# Device names: TARGET_INFO_GPU (id, name); absent from trimmed exports.
GPU_TABLE = "TARGET_INFO_GPU"
SESSION_TABLE = "TARGET_INFO_SESSION_START_TIME"   # utcEpochNs: the session's start; times count from it


def sniff_sqlite(head: Head) -> str | None:
    """An nsys export (a damaged `.sqlite` too: nvprof writes `.nvvp`/`.prof`)."""
    return sqlite.sniff(head, _recognise, (".sqlite",), "sqlite export (unreadable)")


def _recognise(con: sqlite3.Connection, tables: set[str]) -> str | None:
    if any(t in tables for t in NVPROF_TABLES) or "StringIds" not in tables:
        return None
    if not any(t in tables for t in NSYS_TABLES if t != "StringIds"):
        return None
    schema = _meta(con, tables).get("EXPORT_SCHEMA_VERSION")
    return f"sqlite export (schema {schema})" if schema else "sqlite export"


def parse_sqlite(path: Path, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    try:
        con = connect(path)
    except sqlite3.Error as exc:
        result.error = ParseError(f"cannot open the SQLite export: {exc}", path=str(path))
        return result
    try:
        _read_all(Export(con, path), result)
    except sqlite3.Error as exc:   # sqlite_master itself unreadable: nothing could be read
        result.error = ParseError(f"cannot read the SQLite export: {exc}", path=str(path))
    finally:
        con.close()
    return result


class Export:
    """An open export and what it holds: table names, their columns, the string table."""

    def __init__(self, con: sqlite3.Connection, path: Path):
        self.con, self.path = con, path
        self.tables = table_names(con)
        self._columns: dict[str, list[str]] = {}

    def columns(self, table: str) -> list[str]:
        if table not in self._columns:
            rows = self.con.execute(f'PRAGMA table_info("{table}")') if table in self.tables else []
            self._columns[table] = [r[1] for r in rows]
        return self._columns[table]

    def select(self, table: str, mapping: dict[str, str], joins: dict[str, str] | None = None) -> pl.DataFrame:
        """`mapping` (field -> column) read from `table`, plus `joins` (field -> column of
        StringIds ids) resolved to their text; absent columns give nulls. Table and column
        names come from this module's mappings and were checked against the file's schema."""
        have = set(self.columns(table))
        parts = ["t.rowid AS source_line"]
        parts += [f't."{col}" AS {field}' if col in have else f"NULL AS {field}"
                  for field, col in mapping.items()]
        tail = []
        for index, (field, col) in enumerate((joins or {}).items()):
            if col in have and "StringIds" in self.tables:
                parts.append(f's{index}.value AS {field}')
                tail.append(f'LEFT JOIN StringIds s{index} ON s{index}.id = t."{col}"')
            else:
                parts.append(f"NULL AS {field}")
        return sqlite.query(self.con, f'SELECT {", ".join(parts)} FROM "{table}" t {" ".join(tail)}')
def _read_all(export: Export, result: ParseResult) -> None:
    meta = _meta(export.con, export.tables)
    result.tool_version = meta.get("EXPORT_PRODUCT_VERSION")
    devices = _guarded(export, result, "device names", lambda: _devices(export), {})
    activities = _guarded(export, result, "GPU activities", lambda: _activities(export, devices), None)
    runtime = _guarded(export, result, "CUDA API calls", lambda: _runtime(export), pl.DataFrame())
    ranges = _guarded(export, result, "NVTX ranges", lambda: _nvtx_ranges(export), pl.DataFrame())
    if activities is not None and activities.height:
        if ranges.height and runtime.height:
            activities = activities.with_columns(region=nsys_nvtx.launch_regions(
                activities, runtime, nsys_nvtx.innermost(ranges)))
        _add_activities(activities, devices, result)
        _gpu_window(export, activities, result)
    if runtime.height:
        _add_api_calls(runtime, result)
    if ranges.height:
        _add_regions(ranges, result)
    if not result.rows() and result.error is None:
        result.error = ParseError("the SQLite export holds no CUDA kernels, memory operations, "
                                  "API calls or NVTX ranges", path=str(export.path))
    elif "activities" not in result.tables and result.error is None:
        result.warn("nsys.no-gpu-activity", "the export holds no GPU kernels or memory operations "
                    "(no CUPTI_ACTIVITY_KIND_KERNEL/MEMCPY/MEMSET rows)")


def _guarded(export: Export, result: ParseResult, what: str, read, default):
    """Run one reader; a damaged table becomes the file's error, the other tables still count."""
    try:
        return read()
    except sqlite3.Error as exc:
        err = ParseError(f"cannot read the {what} of the SQLite export: {exc}", path=str(export.path))
        result.warn("nsys.sqlite-error", err.describe())
        if result.error is None:
            result.error = err
        return default


def _devices(export: Export) -> dict[int, str]:
    if "id" not in export.columns(GPU_TABLE) or "name" not in export.columns(GPU_TABLE):
        return {}
    rows = export.con.execute(f'SELECT id, name FROM "{GPU_TABLE}" ORDER BY id').fetchall()
    return {int(i): str(n) for i, n in rows if i is not None and n}


# -- GPU activities --------------------------------------------------------------------------

def _activities(export: Export, devices: dict[int, str]) -> pl.DataFrame | None:
    frames = []
    for table, (kind, mapping) in ACTIVITY_TABLES.items():
        if table not in export.tables:
            continue
        joins = {}
        if kind == "kernel":
            name_col = next((c for c in KERNEL_NAME_COLUMNS if c in export.columns(table)), None)
            joins = {"name": name_col} if name_col else {}
        frame = export.select(table, mapping, joins)
        if frame.height:
            frames.append(_activity_frame(frame, kind))
    if not frames:
        return None
    rows = pl.concat(frames, how="diagonal_relaxed").sort("start", "source_line", nulls_last=True)
    return rows.with_columns(device=_device_expr(devices),
                             launch_id=pl.int_range(1, rows.height + 1, dtype=pl.Int64))


def _activity_frame(frame: pl.DataFrame, kind: str) -> pl.DataFrame:
    if kind == "memcpy":
        name = pl.col("copy_kind").cast(pl.Int64).replace_strict(
            MEMCPY_NAMES, default="[CUDA memcpy]", return_dtype=pl.String)
    elif kind == "memset":
        name = pl.lit("[CUDA memset]")
    else:
        name = pl.col("name").cast(pl.String) if "name" in frame.columns else pl.lit(None, pl.String)
    return frame.with_columns(name.alias("name"), pl.lit(kind).alias("kind"))


def _device_expr(devices: dict[int, str]) -> pl.Expr:
    """`NVIDIA RTX A4500 (0)` as gputrace prints it; the bare id when the name is unknown."""
    dev = pl.col("device_id").cast(pl.Int64)
    named = dev.replace_strict({i: f"{n} ({i})" for i, n in devices.items()}, default=None,
                               return_dtype=pl.String) if devices else pl.lit(None, pl.String)
    return pl.coalesce(named, dev.cast(pl.String))


def _add_activities(rows: pl.DataFrame, devices: dict[int, str], result: ParseResult) -> None:
    for col in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "bytes"):
        if col not in rows.columns:
            rows = rows.with_columns(pl.lit(None, pl.Int64).alias(col))
    rows = rows.with_columns(launch_dims(rows, "grid"), launch_dims(rows, "block"),
                             duration_ns=pl.col("end") - pl.col("start"))
    # a report of several processes (`nsys profile torchrun ...`): each process a rank of one job
    ranks = processes.process_ranks(rows, "global_pid", "device_id")
    rows = rows.with_columns(ranks if ranks is not None else pl.lit(None, pl.Int64).alias("rank"))
    result.hints.ranks = processes.count(ranks)
    common = ["source_line", "name", "duration_ns", "device", "context", "stream", "grid", "block", "rank"]
    result.add("activities", rows.select(*common, "kind", pl.col("start").alias("start_ns"),
                                         "bytes", "correlation_id"))
    kernels = rows.filter(pl.col("kind") == "kernel")
    if kernels.height:
        region = pl.col("region") if "region" in rows.columns else pl.lit(None, pl.String)
        result.add("kernels", kernels.select(*common, "launch_id", pl.lit("launch").alias("kind"),
                                             pl.lit(1).alias("count"), region.alias("region")))
    if devices:
        used = rows.filter(pl.col("kind") == "kernel") if kernels.height else rows
        ids = used["device_id"].drop_nulls().cast(pl.Int64).mode().sort()
        result.hints.device_name = devices.get(ids[0]) if ids.len() else next(iter(devices.values()))


# -- CUDA API --------------------------------------------------------------------------------

def _runtime(export: Export) -> pl.DataFrame:
    if RUNTIME_TABLE not in export.tables:
        return pl.DataFrame()
    return export.select(RUNTIME_TABLE, RUNTIME_COLUMNS, {"name": "nameId"})


def _add_api_calls(calls: pl.DataFrame, result: ParseResult) -> None:
    result.add("api_calls", calls.sort("start", nulls_last=True).select(
        "source_line", pl.lit("trace").alias("kind"),
        pl.col("name").cast(pl.String).str.replace(RUNTIME_SUFFIX, ""),
        pl.lit(1).alias("calls"), (pl.col("end") - pl.col("start")).alias("total_ns"),
        pl.col("start").alias("start_ns")))


# -- NVTX ------------------------------------------------------------------------------------

def _nvtx_ranges(export: Export) -> pl.DataFrame:
    if NVTX_TABLE not in export.tables:
        return pl.DataFrame()
    events = export.select(NVTX_TABLE, NVTX_COLUMNS, {"text_id": "textId"})
    if not events.height:
        return pl.DataFrame()
    events = events.with_columns(pl.coalesce(pl.col("text").cast(pl.String),
                                             pl.col("text_id").cast(pl.String)).alias("label"))
    return nsys_nvtx.named_ranges(events, _event_types(export))


def _add_regions(ranges: pl.DataFrame, result: ParseResult) -> None:
    result.add("regions", ranges.select(
        "source_line", pl.lit("nvtx").alias("kind"), "name", "path",
        pl.col("start").alias("start_ns"), (pl.col("end") - pl.col("start")).alias("duration_ns"),
        pl.lit(1).alias("count")))


def _event_types(export: Export) -> dict[str, int]:
    types = dict(nsys_nvtx.EVENT_TYPES)
    if "ENUM_NSYS_EVENT_TYPE" in export.tables:
        rows = export.con.execute('SELECT name, id FROM "ENUM_NSYS_EVENT_TYPE"').fetchall()
        types.update({str(n): int(i) for n, i in rows if str(n) in types})
    return types


def _gpu_window(export: Export, rows: pl.DataFrame, result: ParseResult) -> None:
    """The hints' GPU window in UTC (the session's start, `utcEpochNs`, plus the export's
    times, which count from it): the reports of one job's processes ran at the same time, two
    runs one after the other did not (`pipeline/runs.py`)."""
    if SESSION_TABLE not in export.tables or "utcEpochNs" not in export.columns(SESSION_TABLE):
        return
    origin = export.con.execute(f'SELECT utcEpochNs FROM "{SESSION_TABLE}"').fetchone()
    timed = rows.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
    if origin and origin[0] is not None and timed.height:
        result.hints.gpu_start_ns = float(int(origin[0]) + int(timed["start"].min()))
        result.hints.gpu_end_ns = float(int(origin[0]) + int(timed["end"].max()))


def _meta(con: sqlite3.Connection, tables: set[str]) -> dict[str, str]:
    for table in META_TABLES:
        if table in tables:
            return {str(k): str(v) for k, v in con.execute(f'SELECT name, value FROM "{table}"')}
    return {}
