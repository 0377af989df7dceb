"""rocprofv3's rocpd SQLite database (`<pid>_results.db`, its default output from ROCm 7) -> the
shared tables.

The database holds rocprofiler-sdk's `rocpd_*` tables, each name suffixed with the run's uuid
(`rocpd_kernel_dispatch_<uuid>`), an unsuffixed view over each, and the data views its own
tools query (rocprofiler-sdk `source/share/rocprofiler-sdk-rocpd/`: `rocpd_tables.sql`,
`rocpd_views.sql`, `data_views.sql`). Their layout changed between releases (times inline in
each row, then in a `rocpd_timestamp` table; tracks for the agent, queue and stream), while the
data views kept their meaning, so this reader queries those views, by the columns they have.
Two spellings of those columns are known, each read (`_ALIASES`): the released `rocpd` package's
(`agent_log_index`, `agent_abs_index`, `vgpr_count`, `stack_id`, counters in a
`counters_collection` view, as its `csv.py` reads them) and `data_views.sql`'s of the SDK's
sources (`agent_logical_index`, `arch_vgpr_count`, `correlation_id`, `kernel_pmc_events`):

* `kernels` (a row per dispatch: `name`, `dispatch_id`, `start`/`end` in ns, the agent's
  `agent_logical_index` = rocprofv3's `Agent N`, `stream_id`, `grid_x..z` in work-items,
  `workgroup_x..z`, `lds_size`, `scratch_size`, registers): read through the CSV vocabulary as
  a `kernel_trace.csv` is (`tables.dispatches`): `kernels`, `activities` and resources in `metrics`;
* `counters_collection` (a row per dispatch and counter: `dispatch_id`, `counter_name`, `value`)
  or `kernel_pmc_events` (`id`, `pmc_name`, `pmc_value`), when the run collected counters: each in `metrics` (section "counters"), as a `counter_collection.csv`'s;
  the dispatches are then a counter collection's (no timeline rows);
* `memory_copies` (`name` = the direction, `size` in bytes, `start`/`end`, the destination
  agent): `activities` of kind memcpy;
* `regions` (CPU spans, `category` = the tracing domain): roctx ranges (`MARKER_*` domains, named
  by their `extdata.message` where kept there) as `regions` of kind "nvtx", API calls (`HIP_RUNTIME_API`, `HSA_CORE_API`, `RCCL_API`...) as
  `api_calls` of kind "trace";
* `rocpd_info_agent`, `rocpd_info_node`, `rocpd_info_process`: the GPU that ran the kernels (its
  product name, else its gfx target where the product is `unknown` as on gfx950; its compute
  units from `extdata.cu_count`), the host and the command, as the run's hints.

A kernel's or copy's `source_line` is its place in the device timeline the two make, by start
time (ids of the views are not comparable: the model takes the copies before the first kernel
for set-up by this order); an API call's or range's is its id in `regions`. The database is opened read-only and immutable
(`families/common/sqlite.py`). A database without a `kernels` view (a damaged or partial one) is
an error naming what it lacks; its other views are still read.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common import sqlite as common_sqlite
from roofreport.families.common.sqlite import connect, query
from roofreport.families.common.textio import Head
from roofreport.families.rocm import FAMILY, tables
from roofreport.families.rocm.header import RocmHeader
from roofreport.families.spec import ParseResult

VARIANT = "rocprofv3 rocpd database"
# kernels view column -> the CSV header spelling `tables.dispatches` reads (columns.COLUMNS)
_KERNEL_COLUMNS = {
    "dispatch_id": "Dispatch_Id", "name": "Kernel_Name", "agent_logical_index": "Agent_Id",
    "pid": "Process_Id", "tid": "Thread_Id", "queue_id": "Queue_Id", "stream_id": "Stream_Id",
    "correlation_id": "Correlation_Id", "kernel_id": "Kernel_Id", "start": "Start_Timestamp", "end": "End_Timestamp",
    "grid_x": "Grid_Size_X", "grid_y": "Grid_Size_Y", "grid_z": "Grid_Size_Z",
    "workgroup_x": "Workgroup_Size_X", "workgroup_y": "Workgroup_Size_Y", "workgroup_z": "Workgroup_Size_Z",
    "lds_size": "LDS_Block_Size", "scratch_size": "Scratch_Size", "arch_vgpr_count": "Arch_VGPR_Count",
    "accum_vgpr_count": "Accum_VGPR_Count", "sgpr_count": "SGPR_Count",
}
_MARKER_DOMAIN = "MARKER"
# view -> {another release's column name: the name this reader uses}
_ALIASES = {
    "kernels": {"agent_log_index": "agent_logical_index", "agent_abs_index": "agent_absolute_index",
                "vgpr_count": "arch_vgpr_count", "stack_id": "correlation_id"},
    "memory_copies": {"dst_agent_log_index": "dst_agent_logical_index", "stack_id": "correlation_id"},
}


def sniff(head: Head) -> str | None:
    """A SQLite database holding rocpd's tables (`recognise`), else None."""
    if not common_sqlite.is_sqlite(head):
        return None
    return common_sqlite.sniff(head, recognise, (), "rocpd database (unreadable)")


def recognise(con: sqlite3.Connection, tables_found: set[str]) -> str | None:
    """rocpd's own tables (`rocpd_kernel_dispatch`, uuid-suffixed or not), else None; ` (counters)`
    when it holds counter values (`rocprofv3 --pmc`: its dispatches were serialised to count
    them, timed as a counter collection is: model/timing.py)."""
    if not any(name.startswith("rocpd_kernel_dispatch") for name in tables_found):
        return None
    counted = any(con.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchone() is not None
                  for name in sorted(tables_found) if name.startswith("rocpd_pmc_event"))
    return VARIANT + (" (counters)" if counted else "")


def parse(path: Path, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    try:
        con = connect(path)
    except sqlite3.Error as exc:
        result.error = ParseError(f"cannot open the rocpd database: {exc}", path=str(path))
        return result
    try:
        _read(_Views(con), path, result)
    except sqlite3.Error as exc:
        result.error = ParseError(f"cannot read the rocpd database: {exc}", path=str(path))
    finally:
        con.close()
    return result


class _Views:
    def __init__(self, con: sqlite3.Connection):
        self.con = con
        self.names = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type IN ('view', 'table')")}

    def columns(self, name: str) -> list[str]:
        return [row[1] for row in self.con.execute(f'PRAGMA table_info("{name}")')] if name in self.names else []

    def select(self, name: str, wanted: list[str], order: str = "id") -> pl.DataFrame | None:
        """The `wanted` columns `name` has, under either spelling (`_ALIASES`; none: None), in
        `order`, named as this reader names them."""
        have = self.columns(name)
        aliases = {alias: canonical for alias, canonical in _ALIASES.get(name, {}).items()
                   if canonical in wanted and canonical not in have and alias in have}
        chosen = [c for c in wanted if c in have] + list(aliases)
        if not chosen:
            return None
        by = f' ORDER BY "{order}"' if order in have else ""
        frame = query(self.con, f'SELECT {", ".join(f"{chr(34)}{c}{chr(34)}" for c in chosen)} FROM "{name}"{by}')
        frame = frame.rename(aliases)
        # a view without ids: its rows numbered in the order read
        return frame if "id" not in wanted or "id" in frame.columns else frame.with_row_index("id", offset=1)


def _read(views: _Views, path: Path, result: ParseResult) -> None:
    missing = [name for name in ("kernels", "memory_copies", "regions") if name not in views.names]
    kernels = views.select("kernels", ["id", *_KERNEL_COLUMNS, "agent_absolute_index", "agent_id"], order="start")
    copies = views.select("memory_copies", ["id", "name", "start", "end", "duration", "size", "dst_agent_logical_index",
                                            "stream_id", "correlation_id"], order="start")
    kernels, copies = _timeline(kernels, copies)
    if kernels is not None and kernels.height:
        _kernels(kernels, result)
        _counters(views, kernels, result)
    if copies is not None and copies.height:
        _copies(copies, result)
    regions = views.select("regions", ["id", "category", "name", "start", "end", "duration", "extdata"])
    if regions is not None and regions.height:
        _regions(regions, result)
    _hints(views, kernels, result)
    tables.barriers_apart(result)
    if "kernels" in missing:
        result.error = ParseError(f"the rocpd database has no {', '.join(missing)} view: its "
                                  "rocpd data views (data_views.sql) are missing", path=str(path))
    elif not result.rows():
        result.error = ParseError("the rocpd database holds no kernels, copies, API calls or ranges", path=str(path))


def _timeline(kernels: pl.DataFrame | None, copies: pl.DataFrame | None) -> tuple:
    """Both frames with `line`: 1, 2, ... in the order of their start times together (a kernel
    before a copy that starts with it)."""
    parts = [frame.select(pl.lit(which).alias("__which"), pl.col("id").cast(pl.Int64).alias("__id"),
                          (pl.col("start").cast(pl.Float64) if "start" in frame.columns else pl.lit(None, pl.Float64)).alias("__start"))
             for which, frame in ((0, kernels), (1, copies)) if frame is not None and frame.height]
    if not parts:
        return kernels, copies
    order = pl.concat(parts).sort(["__start", "__which", "__id"], nulls_last=True).with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("line"))
    out = []
    for which, frame in ((0, kernels), (1, copies)):
        if frame is None or not frame.height:
            out.append(frame)
            continue
        lines = order.filter(pl.col("__which") == which).select(pl.col("__id").alias("id"), "line")
        out.append(frame.with_columns(pl.col("id").cast(pl.Int64)).join(lines, on="id", how="left"))
    return tuple(out)


def _text(series: pl.Series) -> pl.Series:
    return series.cast(pl.String)


def _kernels(kernels: pl.DataFrame, result: ParseResult) -> None:
    """The dispatches as a rocprofv3 `kernel_trace.csv`'s rows (its header's spellings), in the order they ran."""
    if "agent_logical_index" not in kernels.columns:
        fallback = next((c for c in ("agent_absolute_index", "agent_id") if c in kernels.columns), None)
        if fallback:
            kernels = kernels.with_columns(pl.col(fallback).alias("agent_logical_index"))
    kernels = kernels.sort(["start", "id"] if "start" in kernels.columns else ["id"], nulls_last=True)
    present = [column for column in _KERNEL_COLUMNS if column in kernels.columns]
    names = tuple(_KERNEL_COLUMNS[column] for column in present)
    cells = pl.DataFrame({"source_line": kernels["line"],
                          **{f"c{index}": _text(kernels[column]) for index, column in enumerate(present)}})
    header = RocmHeader(line_no=0, names=names, kind="table", report="dispatches", tool="rocprofv3",
                        file_report="kernel_trace")
    tables.dispatches(cells, header, result)


def _counters(views: _Views, kernels: pl.DataFrame, result: ParseResult) -> None:
    """The counters of each dispatch (`counters_collection` by dispatch id, or `kernel_pmc_events`
    by the kernel row's id) into `metrics`, keyed as its kernel row; a counted run's dispatches
    are a counter collection's: their timeline rows go."""
    order = kernels.sort("line").select(
        pl.col("id").cast(pl.Int64), pl.col("line").alias("source_line"),
        (pl.col("dispatch_id") if "dispatch_id" in kernels.columns else pl.lit(None)).cast(pl.Int64).alias("dispatch_id"),
        (pl.col("pid") if "pid" in kernels.columns else pl.lit(None)).cast(pl.Int64).alias("pid"),
        pl.col("name").cast(pl.String).alias("kernel_name"),
        (pl.col("agent_logical_index") if "agent_logical_index" in kernels.columns else pl.lit(None))
        .cast(pl.String).alias("device"))
    order = order.with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("launch_id"))
    collected = views.select("counters_collection", ["dispatch_id", "pid", "counter_name", "value"], order="dispatch_id")
    if collected is not None and {"dispatch_id", "counter_name", "value"} <= set(collected.columns):
        keys = ["dispatch_id", "pid"] if "pid" in collected.columns and order["pid"].is_not_null().any() else ["dispatch_id"]
        long = collected.with_columns([pl.col(k).cast(pl.Int64) for k in keys]).join(order, on=keys, how="inner").select(
            "source_line", "launch_id", "kernel_name", "device", pl.col("counter_name").cast(pl.String).alias("metric"),
            pl.col("value").cast(pl.String).alias("value_text"))
    else:
        values = views.select("kernel_pmc_events", ["id", "pmc_name", "pmc_value"])
        if values is None or not {"id", "pmc_name", "pmc_value"} <= set(values.columns):
            return
        long = values.with_columns(pl.col("id").cast(pl.Int64)).join(order, on="id", how="inner").select(
            "source_line", "launch_id", "kernel_name", "device", pl.col("pmc_name").cast(pl.String).alias("metric"),
            pl.col("pmc_value").cast(pl.String).alias("value_text"))
    if not long.height:
        return
    result.add("metrics", tables.metric_values(long.drop_nulls("metric"), "counters"))
    acts = result.tables.get("activities")
    if acts is not None:
        result.tables["activities"] = acts.filter(pl.col("kind") != "kernel")


def _duration(frame: pl.DataFrame) -> pl.Expr:
    if "duration" in frame.columns:
        return pl.col("duration").cast(pl.Float64)
    return (pl.col("end") - pl.col("start")).cast(pl.Float64)


def _copies(copies: pl.DataFrame, result: ParseResult) -> None:
    def col(name: str, dtype) -> pl.Expr:
        return pl.col(name).cast(dtype) if name in copies.columns else pl.lit(None, dtype)

    fill = pl.col("name").str.contains("(?i)fill|memset")
    result.add("activities", copies.select(
        pl.col("line").alias("source_line"),
        pl.when(fill).then(pl.lit("memset")).otherwise(pl.lit("memcpy")).alias("kind"),
        pl.col("name").cast(pl.String), col("start", pl.Float64).alias("start_ns"),
        _duration(copies).alias("duration_ns"), col("size", pl.Float64).alias("bytes"),
        col("dst_agent_logical_index", pl.String).alias("device"), col("stream_id", pl.Int64).alias("stream"),
        col("correlation_id", pl.Int64)))


def _regions(regions: pl.DataFrame, result: ParseResult) -> None:
    category = pl.col("category").fill_null("").cast(pl.String) if "category" in regions.columns else pl.lit("")
    marker = category.str.starts_with(_MARKER_DOMAIN)
    spans = regions.select(pl.col("id").cast(pl.Int64).alias("source_line"), pl.col("name").cast(pl.String),
                           pl.col("start").cast(pl.Float64).alias("start_ns"), _duration(regions).alias("duration_ns"),
                           marker.alias("__marker"))
    ranges, calls = spans.filter(pl.col("__marker")), spans.filter(~pl.col("__marker"))
    if ranges.height and "extdata" in regions.columns:
        # a roctx range's text: its `extdata.message` where the writer kept it there (rocpd's csv.py)
        messages = regions.filter(marker)["extdata"].map_elements(
            lambda text: _extdata(text).get("message"), return_dtype=pl.String)
        ranges = ranges.with_columns(pl.coalesce(messages, pl.col("name")).alias("name"))
    if ranges.height:
        result.add("regions", ranges.select("source_line", pl.lit("nvtx").alias("kind"), "name",
                                            pl.col("name").alias("path"), "start_ns", "duration_ns",
                                            pl.lit(1, pl.Int64).alias("count")))
    if calls.height:
        result.add("api_calls", calls.select("source_line", pl.lit("trace").alias("kind"), "name",
                                             pl.lit(1, pl.Int64).alias("calls"), pl.col("duration_ns").alias("total_ns"),
                                             "start_ns"))


def _extdata(text: object) -> dict:
    """A row's `extdata` JSON (the released schema keeps an agent's product name there)."""
    try:
        found = json.loads(str(text)) if text else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _hints(views: _Views, kernels: pl.DataFrame | None, result: ParseResult) -> None:
    """The GPU agent that ran the most dispatches (else the first GPU agent), the host, the command."""
    agents = views.select("rocpd_info_agent", ["id", "type", "logical_index", "name", "product_name", "model_name",
                                               "extdata"])
    if agents is not None and agents.height and "type" in agents.columns:
        gpus = agents.filter(pl.col("type") == "GPU").to_dicts()
        used: Counter = Counter()
        if kernels is not None and "agent_logical_index" in kernels.columns:
            used.update(kernels["agent_logical_index"].drop_nulls().to_list())
        busiest = used.most_common(1)[0][0] if used else None
        agent = next((a for a in gpus if busiest is not None and a.get("logical_index") == busiest), gpus[0] if gpus else None)
        if agent:
            product = (agent.get("product_name") or _extdata(agent.get("extdata")).get("product_name") or "").strip()
            target = (agent.get("name") or "").strip()
            result.hints.device_name = product if product and product.lower() != "unknown" else target or None
            result.hints.compute_capability = target if target.lower().startswith("gfx") else None
            units = _extdata(agent.get("extdata")).get("cu_count")   # the agent's compute units, where kept
            result.hints.sm_count = int(units) if isinstance(units, (int, float)) and units > 0 else None
    node = views.select("rocpd_info_node", ["id", "hostname"])
    if node is not None and node.height and "hostname" in node.columns:
        result.hints.host = node["hostname"][0]
    process = views.select("rocpd_info_process", ["id", "pid", "command"])
    if process is not None and process.height:
        if "command" in process.columns and process["command"][0]:
            result.hints.command = str(process["command"][0])
        if "pid" in process.columns and process["pid"][0] is not None:
            result.hints.process_id = int(process["pid"][0])
