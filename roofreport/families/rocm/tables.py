"""From the cells of one ROCm CSV to the shared tables, one small function per kind of file.

* dispatch tables (rocprof `results.csv`, rocprofv2 `results_<pid>.csv`, rocprofv3
  `kernel_trace.csv`, rocprof-compute `pmc_perf.csv` / `timestamps.csv` / `SQ_*.csv`): a
  `kernels` row per dispatch (`launch`, its duration from the end and start times or
  `DurationNs`), its counters and resources in `metrics`, and an `activities` row per kernel when
  the file is a timeline (start times, no counters);
* rocprofv3 `counter_collection.csv` (a row per dispatch and counter): a `kernels` row per
  dispatch, each counter in `metrics`;
* statistics (`*.stats.csv`, `*_stats.csv`, `pmc_kernel_top.csv`): `kernels` rows of kind
  `summary` (kernels, copies) or `api_calls` rows of kind `summary` (HIP/HSA calls);
* API and operation traces (rocprofv3 `*_api_trace.csv`, rocprofv2 `hip_api_trace`,
  `hcc_ops_trace`, `async_copy_trace`): `api_calls` rows of kind `trace`, or `activities` (and
  `kernels` for kernel executions) for the `*_OPS_DOMAIN` rows;
* rocprofv3 `memory_copy_trace.csv`: `activities` of kind `memcpy`;
* info files (`sysinfo.csv`, `agent_info.csv`, `roofline.csv`): every cell in `metrics`, and the
  GPU, command and host as the run's hints;
* barrier packets (`<barrier packet>`) are no kernels: `activities` of kind "barrier"
  (`barriers_apart`); the runtime's blit kernels (`__amd_rocclr_copyBuffer`, `fillBufferAligned`,
  `initHeap`) stay kernels whose category is memcpy/memset (data/kernel_categories.tsv), so that
  they are out of kernel time as copies are.

A grid is written as CUDA's is, in workgroups per dimension: HSA sizes count work-items, so a
grid of 1048576 work-items in workgroups of 256 is `(4096, 1, 1)`. Hardware counters keep their
names (`SQ_INSTS_VALU_FMA_F32`); rocprof's derived `FETCH_SIZE`/`WRITE_SIZE` (and `FetchSize`,
`WriteSize`) are kilobytes of 1024 bytes, held in bytes.
"""

from __future__ import annotations

import polars as pl

from roofreport import grammar
from roofreport.families.common import numbers, processes, series, units
from roofreport.families.rocm.columns import BY_HEADER, RESOURCES, TEXT_FIELDS, counter_columns, stats_kind
from roofreport.families.rocm.header import RocmHeader
from roofreport.families.spec import ParseResult

KIBIBYTE_COUNTERS = frozenset({"FETCH_SIZE", "WRITE_SIZE", "FetchSize", "WriteSize"})
_OPS_DOMAINS = ("HIP_OPS_DOMAIN", "HSA_OPS_DOMAIN")
_EXPECTED = ("dispatch", "name", "agent", "stream", "correlation_id", "grid_size", "grid_x", "grid_y",
             "grid_z", "block_size", "block_x", "block_y", "block_z", "start", "end", "duration", "calls",
             "total", "avg", "min", "med", "max", "domain", "function", "direction", "dst_agent", "kind",
             "counter_name", "counter_value")


def typed(cells: pl.DataFrame, header: RocmHeader) -> pl.DataFrame:
    """`source_line` and one column per field the header names (the first spelling of each),
    numbers in base units, text with "no value" marks as null; the fields it lacks as nulls."""
    syntax = grammar.load("rocm")
    exprs, seen = [pl.col("source_line")], set()
    for index, name in enumerate(header.names):
        column = BY_HEADER.get(name)
        if column is None or column.field in seen:
            continue
        seen.add(column.field)
        raw = pl.col(f"c{index}").str.strip_chars()
        if column.field in ("agent", "src_agent", "dst_agent"):
            # `1` or rocprofv3's `Agent 1`: the number
            exprs.append(raw.str.extract(syntax.regex("agent_cell"), 1).alias(column.field))
        elif column.field in TEXT_FIELDS:
            exprs.append(pl.when(raw.is_in(numbers.MISSING)).then(None).otherwise(raw).alias(column.field))
        else:
            factor = units.scale(column.unit)[1]
            number = raw.cast(pl.Float64, strict=False)
            number = pl.when(number.is_finite()).then(number)   # `nan`, `inf`: no value
            exprs.append((number * factor if factor != 1.0 else number).alias(column.field))
    values = cells.select(exprs)
    missing = [pl.lit(None, pl.String if f in TEXT_FIELDS else pl.Float64).alias(f)
               for f in _EXPECTED if f not in values.columns]
    return values.with_columns(missing) if missing else values


def column_of(header: RocmHeader, field: str) -> int:
    """The index of the first column of `header` that is `field`."""
    return next(i for i, name in enumerate(header.names) if name in BY_HEADER and BY_HEADER[name].field == field)


def _dims(prefix: str) -> pl.Expr:
    """`(x, y, z)` of a launch, from the sizes per dimension or the one size (1-D): the block in
    work-items, the grid in workgroups (HSA's grid size counts work-items)."""
    sizes = [pl.col(f"{prefix}_{axis}") for axis in "xyz"]
    scalar = pl.col(f"{prefix}_size")
    if prefix == "grid":
        sizes = [(size / pl.col(f"block_{axis}")).ceil() for size, axis in zip(sizes, "xyz")]
        scalar = (scalar / pl.col("block_size")).ceil()
    three = pl.format("({}, {}, {})", *[size.cast(pl.Int64, strict=False) for size in sizes])
    one = pl.format("({}, 1, 1)", scalar.cast(pl.Int64, strict=False))
    return pl.coalesce(three, one).alias(prefix)


def _duration() -> pl.Expr:
    return pl.coalesce(pl.col("duration"), pl.col("end") - pl.col("start")).alias("duration_ns")


def _launch() -> list[pl.Expr]:
    """What a dispatch's `kernels` and `activities` rows share."""
    return [pl.col("source_line"), pl.col("name"), _duration(), pl.col("agent").alias("device"),
            pl.col("stream").cast(pl.Int64, strict=False), _dims("grid"), _dims("block")]


def _kernels(values: pl.DataFrame) -> pl.DataFrame:
    return values.select(*_launch(), "launch_id", pl.lit("launch").alias("kind"), pl.lit(1).alias("count"))


# -- dispatch tables ---------------------------------------------------------------------------

def dispatches(cells: pl.DataFrame, header: RocmHeader, result: ParseResult, also: tuple[str, ...] = ()) -> None:
    """`also`: fields kept in `metrics` (section "dispatch") beside the resources (rocprofv2's
    printed records keep each dispatch's process there: the ranks of one log stay apart)."""
    values = typed(cells, header).with_columns(launch_id=pl.int_range(1, cells.height + 1, dtype=pl.Int64))
    # dispatches of several processes (rocprofv2's records of an MPI job's ranks, interleaved in
    # its log): each process a rank of one job (`families/common/processes.py`)
    ranks = processes.process_ranks(values, "pid", "agent") if "pid" in values.columns else None
    values = values.with_columns(ranks if ranks is not None else pl.lit(None, pl.Int64).alias("rank"))
    result.hints.ranks = processes.count(ranks) or result.hints.ranks
    result.add("kernels", _kernels(values).with_columns(values["rank"]))
    counters = counter_columns(list(header.names))
    if not counters and values["start"].is_not_null().any():
        result.add("activities", values.select(*_launch(), pl.lit("kernel").alias("kind"),
                                               pl.col("start").alias("start_ns"), pl.col("correlation_id").cast(pl.Int64, strict=False),
                                               "rank"))
    position: dict[str, int] = {}   # name -> its first column
    for index, name in enumerate(header.names):
        position.setdefault(name, index)
    keys = values.select("source_line", "launch_id", pl.col("name").alias("kernel_name"), pl.col("agent").alias("device"))
    resources: dict[str, str] = {}   # field -> its column (the first spelling in the header)
    for name, index in position.items():
        if name in BY_HEADER and (BY_HEADER[name].field in RESOURCES or BY_HEADER[name].field in also):
            resources.setdefault(BY_HEADER[name].field, f"c{index}")
    _long_metrics(cells, keys, "dispatch", list(resources.items()), result)
    _long_metrics(cells, keys, "counters", [(name, f"c{position[name]}") for name in counters], result)


def _long_metrics(cells: pl.DataFrame, keys: pl.DataFrame, section: str, named: list[tuple[str, str]],
                  result: ParseResult) -> None:
    """One `metrics` row per non-empty cell of the `named` (metric, column) pairs."""
    if not named:
        return
    wide = pl.concat([keys, cells.select([pl.col(column).alias(metric) for metric, column in named])],
                     how="horizontal")
    long = wide.unpivot(index=keys.columns, on=[metric for metric, _ in named],
                        variable_name="metric", value_name="value_text").drop_nulls("value_text")
    result.add("metrics", metric_values(long, section))


def metric_values(long: pl.DataFrame, section: str) -> pl.DataFrame:
    """metric rows with `value` (in bytes for rocprof's kilobyte metrics) and `unit`."""
    number = long["value_text"].str.strip_chars().cast(pl.Float64, strict=False)
    kib = long["metric"].is_in(list(KIBIBYTE_COUNTERS))
    return long.with_columns(
        section=pl.lit(section),
        value=pl.when(kib).then(number * 1024.0).otherwise(number),
        unit=pl.when(kib).then(pl.lit(units.BASE_BYTES)).when(pl.col("metric").is_in(["lds", "scratch"]))
        .then(pl.lit(units.BASE_BYTES)))


def counter_collection(cells: pl.DataFrame, header: RocmHeader, result: ParseResult) -> None:
    """rocprofv3's long form: the dispatch's fields repeat on each counter's row."""
    values = typed(cells, header)
    dispatch = values["dispatch"]
    order = dispatch.unique(maintain_order=True)
    values = values.with_columns(launch_id=pl.col("dispatch").replace_strict(
        order, pl.int_range(1, order.len() + 1, dtype=pl.Int64, eager=True)))
    result.add("kernels", _kernels(values.unique("launch_id", keep="first", maintain_order=True)))
    text = cells[f"c{column_of(header, 'counter_value')}"]
    long = values.select("source_line", "launch_id", pl.col("name").alias("kernel_name"), pl.col("agent").alias("device"),
                         pl.col("counter_name").alias("metric")).with_columns(value_text=text)
    result.add("metrics", metric_values(long.drop_nulls("metric"), "counters"))


# -- statistics, traces, copies ---------------------------------------------------------------

def stats(cells: pl.DataFrame, header: RocmHeader, result: ParseResult) -> None:
    values = typed(cells, header)
    if stats_kind(header.file_report, values["name"].head(200).to_list()) == "api":
        result.add("api_calls", values.select(
            "source_line", pl.lit("summary").alias("kind"), "name", pl.col("calls").cast(pl.Int64, strict=False),
            pl.col("total").alias("total_ns"), pl.col("avg").alias("avg_ns"), pl.col("min").alias("min_ns"),
            pl.col("max").alias("max_ns")))
        return
    result.add("kernels", values.select(
        "source_line", "name", pl.lit("summary").alias("kind"), pl.col("calls").cast(pl.Int64, strict=False).alias("count"),
        # The per-launch statistics the file printed (MinNs/MaxNs; a median only in pmc_kernel_top).
        pl.col("total").alias("duration_ns"), pl.col("min").alias("min_ns"), pl.col("med").alias("median_ns"),
        pl.col("max").alias("max_ns")))


def trace(cells: pl.DataFrame, header: RocmHeader, result: ParseResult) -> None:
    """API calls, and (rocprofv2) the operations of the HIP/HSA *_OPS_DOMAIN."""
    values = typed(cells, header)
    ops = values["domain"].is_in(list(_OPS_DOMAINS))
    calls = values.filter(~ops)
    if calls.height:
        result.add("api_calls", calls.select(
            "source_line", pl.lit("trace").alias("kind"), pl.col("function").alias("name"), pl.lit(1).alias("calls"),
            _duration().alias("total_ns"), pl.col("start").alias("start_ns")))
    operations = values.filter(ops)
    if not operations.height:
        return
    kind = (pl.when(pl.col("function").str.contains("(?i)kernel")).then(pl.lit("kernel"))
            .when(pl.col("function").str.contains("(?i)copy")).then(pl.lit("memcpy"))
            .when(pl.col("function").str.contains("(?i)fill|memset")).then(pl.lit("memset"))
            .otherwise(pl.lit("other")))
    acts = operations.select("source_line", kind.alias("kind"), pl.coalesce("name", "function").alias("name"),
                       pl.col("start").alias("start_ns"), _duration(), pl.col("correlation_id").cast(pl.Int64, strict=False))
    result.add("activities", acts)
    kernels = acts.filter(pl.col("kind") == "kernel")
    if kernels.height:
        result.add("kernels", kernels.select(
            "source_line", pl.int_range(1, kernels.height + 1, dtype=pl.Int64).alias("launch_id"), "name",
            pl.lit("launch").alias("kind"), pl.lit(1).alias("count"), "duration_ns"))


def copies(cells: pl.DataFrame, header: RocmHeader, result: ParseResult) -> None:
    values = typed(cells, header)
    result.add("activities", values.select(
        "source_line", pl.lit("memcpy").alias("kind"), pl.col("direction").alias("name"),
        pl.col("start").alias("start_ns"), _duration(), pl.col("dst_agent").alias("device"),
        pl.col("stream").cast(pl.Int64, strict=False), pl.col("correlation_id").cast(pl.Int64, strict=False)))


# An AQL barrier packet (rocprof v1 lists `<barrier packet>` among the kernels, 40 % of a
# llama.cpp run's "kernel" time in the corpus): a wait between dispatches, no kernel.
BARRIER = r"(?i)^\s*<barrier[^>]*>\s*$"


def barriers_apart(result: ParseResult) -> None:
    """Barrier packets out of the kernels (so out of kernel time, FLOP/s and the categories):
    an `activities` row of kind "barrier" each, kept, as copies are. A dispatch's timeline row
    becomes that row; a row of a summary or a counter collection moves there."""
    barrier = pl.col("name").fill_null("").str.contains(BARRIER)
    acts = result.tables.get("activities")
    if acts is not None and acts.height:
        result.tables["activities"] = acts.with_columns(
            kind=pl.when(barrier & (pl.col("kind") == "kernel")).then(pl.lit("barrier")).otherwise("kind"))
    kernels = result.tables.get("kernels")
    if kernels is None or not kernels.filter(barrier).height:
        return
    moved = kernels.filter(barrier)
    result.tables["kernels"] = kernels.filter(~barrier)
    timed = result.tables["activities"]["source_line"].drop_nulls().to_list() if acts is not None else []
    moved = moved.filter(~pl.col("source_line").is_in(timed).fill_null(False))
    if moved.height:
        result.add("activities", moved.select("source_line", pl.lit("barrier").alias("kind"), "name",
                                              "duration_ns", "device", "stream"))


EMITTERS = {"dispatches": dispatches, "counters": counter_collection, "stats": stats, "trace": trace,
            "copies": copies}


# -- info files ------------------------------------------------------------------------------

_INFO_DEVICE = {"sysinfo": None, "agent_info": "Node_Id", "roofline": "device"}
# roofline.csv: GB/s and GFLOP/s (GOP/s for integer ops), as rocprof-compute's roofline tool prints them
_ROOFLINE_UNITS = (("Bw", "byte/second"), ("Flops", "FLOP/second"), ("Ops", "OP/second"))


def info(cells: pl.DataFrame, header: RocmHeader, result: ParseResult) -> None:
    """Every cell in `metrics` (section: the file kind), and what it says about the run."""
    names = list(header.names)
    device = _INFO_DEVICE[header.report]
    device_expr = pl.col(f"c{names.index(device)}") if device in names else pl.lit(None, pl.String)
    keys = cells.select("source_line", device_expr.str.strip_chars().alias("device"))
    first = {name: index for index, name in reversed(list(enumerate(names))) if name != device}
    wide = pl.concat([keys, cells.select([pl.col(f"c{index}").alias(name) for name, index in first.items()])],
                     how="horizontal")
    long = wide.unpivot(index=["source_line", "device"], variable_name="metric", value_name="value_text")
    long = long.with_columns(pl.col("value_text").str.strip_chars()).filter(
        pl.col("value_text").is_not_null() & ~pl.col("value_text").is_in(numbers.MISSING))
    number = long["value_text"].cast(pl.Float64, strict=False)
    unit, factor = pl.lit(None, pl.String), pl.lit(1.0)
    if header.report == "roofline":
        for suffix, base in _ROOFLINE_UNITS:
            hit = pl.col("metric").str.contains(suffix)
            unit = pl.when(hit).then(pl.lit(base)).otherwise(unit)
            factor = pl.when(hit).then(pl.lit(1e9)).otherwise(factor)
    result.add("metrics", long.with_columns(section=pl.lit(header.report), value=number * factor, unit=unit))
    _info_hints(cells, header, result)


def _cell(cells: pl.DataFrame, names: list[str], wanted: tuple[str, ...], rows: pl.Expr | None = None) -> str | None:
    """The first non-empty value of the first of `wanted` columns the file has."""
    frame = cells.filter(rows) if rows is not None else cells
    for name in wanted:
        if name in names:
            found = frame[f"c{names.index(name)}"].str.strip_chars()
            found = found.filter(found.is_not_null() & ~found.is_in(numbers.MISSING))
            if found.len():
                return found[0]
    return None


def _info_hints(cells: pl.DataFrame, header: RocmHeader, result: ParseResult) -> None:
    names, hints = list(header.names), result.hints
    if header.report == "sysinfo":
        hints.device_name = _cell(cells, names, ("gpu_model", "gpu_series", "gpu_arch"))
        hints.command = _cell(cells, names, ("command",))
        hints.host = _cell(cells, names, ("hostname", "host_name"))
        result.tool_version = _cell(cells, names, ("version",))
    elif header.report == "agent_info":
        gpus = pl.col(f"c{names.index('Agent_Type')}").str.strip_chars() == "GPU"
        hints.device_name = _cell(cells, names, ("Marketing_Name", "Product_Name", "Model_Name", "Name"), gpus)


# -- SMI series --------------------------------------------------------------------------------

def finish_samples(raw: pl.DataFrame, result: ParseResult) -> None:
    samples = series.finish(raw, None)
    if samples.height:
        result.add("samples", samples)
        names = samples["gpu_name"].drop_nulls()
        if names.len() and result.hints.device_name is None:
            result.hints.device_name = names[0]

