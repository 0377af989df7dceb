"""Run totals: the run-level numbers every part of roofreport reads (the `runs` table's
`RUN_TOTALS` columns, tables/schema.py), computed here once.

* Elapsed: the time of a training batch as the job ran, where its log prints it
  (`elapsed_per_iteration`).
* Time: the kernel rows of the run's time source (`timing.kernel_time_rows`: one log, a trace
  before a summary before ncu's replays), every kernel; memcpy/memset apart as transfer time.
  Per iteration where the logs count iterations (`iterations.py`).
* Work: FLOPs and DRAM bytes summed over every counted kernel of the run (`counted.py`: one
  file per run), whether the kernel did FLOPs or only moved bytes. `flops_complete` is false
  when tensor-core work went uncounted, or when only other precisions than FP32 were counted
  (nvprof's `flop_count_dp` alone): the FLOPs are then a lower bound.
* Roofline point: intensity = FLOPs / DRAM bytes; achieved FLOP/s = FLOPs of the timed counted
  kernels / their time (a trace's time for the same launches when the run has one:
  `timing.counted_kernel_times`). The run is judged against the ceiling of the precision doing
  most of its FLOPs, with `roofline.py`'s ceilings, ridge and bound rules (`roofline.point`).
* `bound`: by the run's time-weighted kernel population (`bound.py`): "memory" or "compute"
  when most of the classified time sits on that side of the ridge, "mixed" (at the ridge)
  otherwise and when the aggregate intensity is near the ridge, "latency" far below both roofs
  (or below half of it with short launches); `bound_note` gives the shares and how much of the
  run's kernel time they cover (`compute_time_share`, `bound_coverage`); where those cover under
  half the run's kernel time and the kernels they name at least half, by kernel name
  (`bound.name_populations`: the `*_by_name` columns, and `bound_note` says so). Null, with
  `bound_note` saying why, when FLOPs are incomplete, no GPU peak is known, a count is missing,
  the point lies above a roof (a counting error), no counted kernel has a time, or the counted
  kernels cover under half the run's kernel time (`bound.COVERAGE_FLOOR`).
* Ceiling: the compute peak of `roof_precision` × (1 + f) / 2 where the counters give the FMA
  share f of its FP instructions (`mix.py`; `ceiling` names it): % of roof, the ridge point
  and the bound are against the ceiling the run's instructions could reach.
* Roofs without a point: a run on a known GPU whose logs counted no FLOPs (a trace, a summary)
  still gets its GPU's peaks and ridge point, at FP32 (`roof_precision`), so its roofline has
  roofs; no intensity and no bound class.
* `dram_bytes_derived`: some of the run's DRAM bytes are a logged rate × duration (counters.py).

`run_totals(model)` gives these columns from a `Model`'s derived rows (`roofreport.model`):
`Model.runs()` is the runs table with them filled, which `roofreport.read` keeps, so `parse`,
`read`, `analyze` and the report read the same frame.
"""

from __future__ import annotations

import polars as pl

from roofreport import gpu
from roofreport.model import bound as bounds, counted, mix, parallel, roofline, timing
from roofreport.model import iterations as steps_counted
from roofreport.tables import lazy, schema
from roofreport.tables.frames import per_distinct

TRANSFERS = ("memcpy", "memset")
NO_COUNTS = "no FLOP counts in the logs"   # the bound note of a run whose logs counted nothing
_NO_PRECISION = "fp32"   # the roof of a run whose logs measured no precision
_KEEP_NOTES = ("below",)   # roofline notes a run keeps beside its bound class


def run_totals(model) -> pl.DataFrame:
    """run + the `RUN_TOTALS` columns of a `Model`, one row per run that has any (module
    docstring)."""
    time = time_totals(model.time_partials, model.chosen_partials)
    work = _work(model, dict(zip(time["run"].to_list(), time["kernel_time_ns"].to_list())),
                 dict(zip(time["run"].to_list(), time["kernel_launches"].to_list())))
    work = pl.concat([work, _roofs_only(model.gpus, set(work["run"].to_list()) if work.height else set())],
                     how="diagonal_relaxed")
    steps = model.iterations
    split = parallel.partial_parallelism(model.chosen_partials, model.tables)
    ids = pl.concat([f.select("run") for f in (time, work, steps)]).unique()
    out = ids.join(time, on="run", how="left").join(work, on="run", how="left").join(steps, on="run", how="left")
    out = out.join(split, on="run", how="left")
    out = out.with_columns(
        (pl.col("kernel_time_ns") / pl.col("iterations")).alias("time_per_iteration_ns"))
    out = out.join(elapsed_per_iteration(model.tables.get("runs")), on="run", how="left")
    return out.select("run", *[pl.col(c).cast(t) if c in out.columns else pl.lit(None, t).alias(c)
                               for c, t in schema.RUN_TOTALS.items()]).sort("run")


def with_bound_reasons(runs: pl.DataFrame) -> pl.DataFrame:
    """`runs` (the runs table joined with its totals: `Model.runs`, a dataset folder's
    `batches.runs_table`) where every run without a bound class says why in `bound_note`: a run
    the totals hold no counted rows of, on no known GPU, counted nothing."""
    return runs.with_columns(pl.when(pl.col("bound").is_null()).then(pl.col("bound_note").fill_null(NO_COUNTS))
                             .otherwise(pl.col("bound_note")).alias("bound_note"))


# -- time, from per-file partials --------------------------------------------------------------
#
# A run's time comes from ONE file (`timing.kernel_time_rows`), chosen by comparing its files,
# and its setup copies are those before that file's first kernel: nothing here needs every row
# of a run at once. Each file (each run, file and time-source rank in it) gives a partial
# (`PARTIAL`): its sums, its first kernel, its copies before that kernel (order, time), its
# devices and its loss-kernel launches. Partials combine associatively (`combine_partials`,
# in any grouping: a batch of files, a whole campaign), and `time_totals` makes the runs' time
# columns and iteration counts from them. A dataset folder keeps each batch's partials, so a
# run is combined from them, never from every row in memory.

_COPY = pl.Struct({"order": pl.Int64, "time_ns": pl.Float64})
_LOSS = pl.Struct({"short_name": pl.String, "backward": pl.Boolean, "launches": pl.Int64})
PARTIAL = {"run": pl.String, "source_file": pl.String, "source_rank": pl.Int64,
           "file_time_ns": pl.Float64,        # what chooses the run's file (its candidate rows)
           "kernel_rows": pl.Int64, "kernel_time_ns": pl.Float64, "kernel_launches": pl.Int64,
           "transfer_rows": pl.Int64, "transfer_time_ns": pl.Float64,
           "first_kernel": pl.Int64,          # the order (line) of its first kernel
           "early_copies": pl.List(_COPY),    # its copies before that kernel (all, without one)
           "devices": pl.List(pl.String), "losses": pl.List(_LOSS),
           "collectives": pl.List(pl.String),       # the collective kinds its kernels ran (`parallel.kind`)
           "all_reduce_orders": pl.List(pl.Int64)}  # the order (line) of each all-reduce kernel
_KEY = ["run", "source_file", "source_rank"]
_SUMS = ["file_time_ns", "kernel_rows", "kernel_time_ns", "kernel_launches", "transfer_rows", "transfer_time_ns"]
TIME_TOTALS = {"run": pl.String, "kernel_time_ns": pl.Float64, "kernel_launches": pl.Int64,
               "transfer_time_ns": pl.Float64, "setup_time_ns": pl.Float64, "devices": pl.Int64,
               "time_source": pl.String}


def file_partials(tables, candidates: pl.DataFrame | None = None) -> pl.DataFrame:
    """The time partials (`PARTIAL`) of every run, file and rank of `tables` (a batch of files,
    or all of them): each candidate time source with its own copies (`timing.candidate_rows`;
    `candidates`: those rows when the caller has them)."""
    if candidates is None:
        candidates = timing.candidate_rows(tables)
    if not candidates.height:
        return pl.DataFrame(schema=PARTIAL)
    transfers = timing.transfer_rows(tables, candidates)
    rows = candidates.with_columns(pl.lit(True).alias("__candidate"))
    if transfers.height:
        rows = pl.concat([rows, transfers.with_columns(pl.lit(False).alias("__candidate"))], how="diagonal_relaxed")
    return partials_of_rows(rows)


def partials_of_rows(rows: pl.DataFrame) -> pl.DataFrame:
    """`PARTIAL` per run, file and rank of time rows (`timing.TIME_COLUMNS`; `__candidate`
    false on copies added from activities, which do not choose the file)."""
    if not rows.height:
        return pl.DataFrame(schema=PARTIAL)
    moved = pl.col("category").fill_null("").is_in(TRANSFERS)
    candidate = pl.col("__candidate") if "__candidate" in rows.columns else pl.lit(True)
    first = pl.col("order").filter(~moved).min()
    early = moved & pl.col("order").is_not_null() & (first.is_null() | (pl.col("order") < first))
    comm = ~moved & (pl.col("category") == "communication")
    # (a name's collective kind is worked out once per distinct name, not per row: its
    # lower-casing and seven patterns cost more than the rest of the partial on a big trace)
    collective = pl.col("__collective")
    rows = rows.with_columns(per_distinct(rows["name"], _collective_kinds)["__collective"])
    sums = rows.group_by(*_KEY, maintain_order=True).agg(
        pl.col("time_ns").filter(candidate).sum().alias("file_time_ns"),
        (~moved).sum().cast(pl.Int64).alias("kernel_rows"),
        pl.col("time_ns").filter(~moved).sum().alias("kernel_time_ns"),
        pl.col("count").filter(~moved).sum().cast(pl.Int64).alias("kernel_launches"),
        moved.sum().cast(pl.Int64).alias("transfer_rows"),
        pl.col("time_ns").filter(moved).sum().alias("transfer_time_ns"),
        first.alias("first_kernel"),
        pl.struct("order", "time_ns").filter(early).alias("early_copies"),
        pl.col("device").filter(~moved).drop_nulls().unique(maintain_order=True).alias("devices"),
        collective.filter(comm).drop_nulls().unique(maintain_order=True).alias("collectives"),
        pl.col("order").filter(comm & (collective == "all-reduce")).drop_nulls().alias("all_reduce_orders"))
    losses = steps_counted.loss_counts(rows, _KEY)
    if losses.height:
        losses = losses.group_by(_KEY, maintain_order=True).agg(pl.struct("short_name", "backward", "launches").alias("losses"))
        sums = sums.join(losses, on=_KEY, how="left", maintain_order="left")
    else:
        sums = sums.with_columns(pl.lit(None, PARTIAL["losses"]).alias("losses"))
    return _conform(sums)


def _collective_kinds(names: pl.Series) -> pl.DataFrame:
    return names.to_frame("name").select(parallel.kind(pl.col("name")).alias("__collective"))


def combine_partials(partials: pl.DataFrame) -> pl.DataFrame:
    """Partials of the same run, file and rank made one: sums add, the first kernel is the
    earliest, copies stay early only before it, devices and loss launches join. Associative
    and commutative but for the order of float additions (one file's rows are one partial)."""
    if not partials.height:
        return pl.DataFrame(schema=PARTIAL)
    first = pl.col("first_kernel").min()
    merged = partials.group_by(_KEY, maintain_order=True).agg(
        *[pl.col(c).sum() for c in _SUMS], first.alias("first_kernel"),
        pl.col("early_copies").list.explode(keep_nulls=False, empty_as_null=False).drop_nulls().alias("early_copies"),
        pl.col("devices").list.explode(keep_nulls=False, empty_as_null=False).drop_nulls().unique(maintain_order=True).alias("devices"),
        pl.col("losses").list.explode(keep_nulls=False, empty_as_null=False).drop_nulls().alias("losses"),
        pl.col("collectives").list.explode(keep_nulls=False, empty_as_null=False).drop_nulls().unique(maintain_order=True).alias("collectives"),
        pl.col("all_reduce_orders").list.explode(keep_nulls=False, empty_as_null=False).drop_nulls().alias("all_reduce_orders"))
    # copies stay early only before the combined first kernel
    copies = merged.select(*_KEY, "first_kernel", "early_copies").explode("early_copies").drop_nulls("early_copies")
    if copies.height:
        order = pl.col("early_copies").struct.field("order")
        copies = copies.filter(pl.col("first_kernel").is_null() | (order < pl.col("first_kernel"))) \
            .group_by(_KEY, maintain_order=True).agg("early_copies")
        merged = merged.drop("early_copies").join(copies, on=_KEY, how="left", maintain_order="left")
    # loss launches of one kernel name add
    exploded = merged.select(*_KEY, "losses").explode("losses").drop_nulls("losses").unnest("losses")
    if exploded.height:
        losses = exploded.group_by(_KEY + ["short_name"], maintain_order=True).agg(
            pl.col("backward").any(), pl.col("launches").sum()) \
            .group_by(_KEY, maintain_order=True).agg(pl.struct("short_name", "backward", "launches").alias("losses"))
        merged = merged.drop("losses").join(losses, on=_KEY, how="left", maintain_order="left")
    return _conform(merged)


def _conform(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select([pl.col(c).cast(t) if c in frame.columns else pl.lit(None, t).alias(c)
                         for c, t in PARTIAL.items()])


def chosen_partials(partials: pl.DataFrame) -> pl.DataFrame:
    """Each run's one time source among its partials (as `timing.kernel_time_rows` chooses: the
    best rank, then the most time, then the first file by name), with `files`: how many files
    of that rank the run has."""
    merged = combine_partials(partials)
    ordered = merged.sort(["run", "source_rank", "file_time_ns", "source_file"],
                          descending=[False, False, True, False])
    best_rank = pl.col("source_rank").first().over("run")
    files = ordered.filter(pl.col("source_rank") == best_rank).group_by("run").agg(
        pl.col("source_file").n_unique().alias("files"))
    return ordered.group_by("run", maintain_order=True).first().join(files, on="run", how="left")


def time_totals(partials: pl.DataFrame, chosen: pl.DataFrame | None = None) -> pl.DataFrame:
    """`TIME_TOTALS` per run from its partials (any grouping of them); `chosen`: their
    `chosen_partials` when the caller has them already."""
    if not partials.height:
        return pl.DataFrame(schema=TIME_TOTALS)
    chosen = chosen_partials(partials) if chosen is None else chosen
    kernels = pl.col("kernel_rows") > 0
    setup = pl.col("early_copies").list.eval(pl.element().struct.field("time_ns")).list.sum().fill_null(0.0)
    return chosen.select(
        "run",
        pl.when(kernels).then(pl.col("kernel_time_ns")).alias("kernel_time_ns"),
        pl.when(kernels).then(pl.col("kernel_launches")).alias("kernel_launches"),
        pl.when(pl.col("transfer_rows") > 0).then(pl.col("transfer_time_ns")).alias("transfer_time_ns"),
        pl.when(kernels & timing.is_ordered(pl.col("source_rank"))).then(setup).alias("setup_time_ns"),
        pl.when(pl.col("devices").list.len() > 0).then(pl.col("devices").list.len()).alias("devices"),
        timing.source_label(pl.col("source_rank"), pl.col("files")).alias("time_source"),
    ).select([pl.col(c).cast(t) for c, t in TIME_TOTALS.items()])


def iteration_totals(partials: pl.DataFrame, steps: pl.DataFrame, runs: pl.DataFrame | None = None, *,
                     chosen: pl.DataFrame | None = None) -> pl.DataFrame:
    """run, iterations, iterations_source (`iterations.py`) from the time partials (the loss
    launches of each run's chosen file), the step-range partials and the progress the runs
    table holds (the epoch size the log printed); `chosen`: their `chosen_partials` when the
    caller has them already."""
    if chosen is None and partials.height:
        chosen = chosen_partials(partials)
    chosen = chosen if partials.height else pl.DataFrame(schema={"run": pl.String, "losses": PARTIAL["losses"]})
    losses = chosen.select("run", "losses").explode("losses").drop_nulls("losses").unnest("losses") \
        if chosen.height else pl.DataFrame(schema={"run": pl.String, **steps_counted.LOSS_COLUMNS})
    return steps_counted.from_partials(steps, losses, runs)


def elapsed_per_iteration(runs: pl.DataFrame | None) -> pl.DataFrame:
    """run, elapsed_per_iteration_ns: a training batch's elapsed time as the program printed it
    (`step_time_ns`, the steady-state median: `pipeline/progress.py`) less its wait for data
    (`data_time_ns`): the time of the step as the job ran, on all its GPUs at once, which a
    kernel time summed over several GPUs is not."""
    if runs is None or "step_time_ns" not in runs.columns:
        return pl.DataFrame(schema={"run": pl.String, "elapsed_per_iteration_ns": pl.Float64})
    said = runs.filter(pl.col("step_time_ns").is_not_null())
    return said.select("run", (pl.col("step_time_ns") - pl.col("data_time_ns").fill_null(0.0))
                       .clip(lower_bound=0.0).alias("elapsed_per_iteration_ns"))


def kernel_time(rows: pl.DataFrame) -> pl.DataFrame:
    """`TIME_TOTALS` from the rows of each run's time source (`timing.kernel_time_rows`), by
    way of their partials (one per run: its file)."""
    return time_totals(partials_of_rows(rows))


def setup_rows(rows: pl.DataFrame) -> pl.DataFrame:
    """`rows` (`timing.kernel_time_rows`) with `setup`: a copy of a trace (or of a counter
    collection that lists its copies in order, as a rocpd database does) that ran before the
    run's first kernel (the model's weights uploaded once, the first batch): the start-up,
    apart from the steady state the kernels' time and shares describe. A summary orders
    nothing: its copies are never setup."""
    moved = pl.col("category").fill_null("").is_in(TRANSFERS)
    first_kernel = pl.col("order").filter(~moved).min().over("run", "source_file")
    return rows.with_columns((moved & timing.is_ordered(pl.col("source_rank")) & (pl.col("order") < first_kernel))
                             .fill_null(False).alias("setup"))


# -- work and the roofline point -------------------------------------------------------------

def _work(model, run_times: dict[str, float | None], run_launches: dict[str, int | None]) -> pl.DataFrame:
    rows = counted.counter_rows(model.tables)
    if not rows.height:
        return pl.DataFrame(schema={"run": pl.String})
    rows = rows.join(model.counted_times, on=["source_file", "launch_id"], how="left").with_columns(
        counted.row_flops().alias("flops"))
    precisions = _dominant_precision(model.points)
    shares = _fma_shares(model.points)
    bytes_only = rows.filter((pl.col("flops").fill_null(0.0) == 0) & (pl.col("dram_bytes").fill_null(0.0) > 0))
    waves = bounds.launch_waves(lazy.scan(model.tables, "metrics"))
    shapes = rows.select("source_file", "launch_id", "grid", "block").unique(["source_file", "launch_id"],
                                                                           keep="first")
    points = model.kernel_roofline
    if points.height:
        points = points.join(shapes, on=["source_file", "launch_id"], how="left")
    sides = bounds.kernel_sides(points, bytes_only, waves)
    populations = bounds.populations(sides, run_times, run_launches)
    by_name = bounds.name_populations(sides, _kernel_rows(model.time_rows, set(populations)), run_times,
                                      run_launches)
    gpus = model.gpus
    out = []
    for (run,), group in rows.group_by(["run"], maintain_order=True):
        precision = precisions.get(run)
        out.append(run_point(run, group, gpus.get(run), precision, populations.get(run),
                             shares.get((run, precision)), model.clocks.get(run), by_name.get(run)))
    return pl.DataFrame(out, infer_schema_length=None)


def _kernel_rows(time_rows: pl.DataFrame, runs: set[str]) -> pl.DataFrame:
    """The kernel rows (copies apart) of the time sources of `runs`: the time their kernels
    weigh by name (`bound.name_populations`)."""
    if not runs or not time_rows.height:
        return time_rows.clear()
    return time_rows.filter(pl.col("run").is_in(list(runs)) & ~pl.col("category").fill_null("").is_in(TRANSFERS)) \
        .select("run", "short_name", "grid", "block", "count", "time_ns")


def _fma_shares(points: pl.DataFrame) -> dict[tuple[str, str], float]:
    """(run, precision) -> the FMA share of its kernels' FP instructions (`mix.combined_share`)."""
    if not points.height or "fma_share" not in points.columns or points["fma_share"].is_null().all():
        return {}
    out = {}
    for (run, precision), group in points.group_by(["run", "precision"]):
        share = mix.combined_share(group["flops"].to_list(), group["fma_share"].to_list())
        if share is not None:
            out[(run, precision)] = share
    return out


def _roofs_only(gpus: dict[str, gpu.GpuSpec], counted_runs: set[str]) -> pl.DataFrame:
    """The FP32 and DRAM roofs and ridge point of each run on a known GPU whose logs counted
    nothing (module docstring)."""
    out = []
    for run, spec in gpus.items():
        if run in counted_runs:
            continue
        peaks = roofline.peaks_for(spec, {}, _NO_PRECISION, [])
        out.append({"run": run, "roof_precision": _NO_PRECISION, "peak_flops_per_s": peaks["peak_flops_per_s"],
                    "peak_dram_bytes_per_s": peaks["peak_dram_bytes_per_s"], "ridge_ai": roofline.ridge(peaks),
                    "bound_note": NO_COUNTS})
    return pl.DataFrame(out, schema={"run": pl.String, "roof_precision": pl.String, "peak_flops_per_s": pl.Float64,
                                     "peak_dram_bytes_per_s": pl.Float64, "ridge_ai": pl.Float64,
                                     "bound_note": pl.String})


def run_point(run: str, rows: pl.DataFrame, spec: gpu.GpuSpec | None, precision: str | None,
              population: bounds.Population | None = None, fma_share: float | None = None,
              clock=None, by_name: bounds.Population | None = None) -> dict:
    """The totals and roofline point of one run from its counted rows (with `flops`, `time_ns`,
    `time_source` columns), its counted kernels' time on each side of the ridge (`bound.py`),
    its kernel time by kernel name (`bound.name_populations`) and the FMA share of its FP
    instructions at `precision` (`mix.py`)."""
    timed = rows.filter(pl.col("time_ns").is_not_null())
    flops = rows["flops"].drop_nulls()
    unmeasured = _unmeasured_fp32(rows)
    base = {
        "run": run,
        "flops": float(flops.sum()) if flops.len() else None,
        "flops_complete": False if unmeasured else _complete(rows),
        "incomplete_because": unmeasured or "tensor-core work not counted, the true point is higher",
        "dram_bytes": _sum(rows["dram_bytes"]),
        "l2_bytes": None, "l1_bytes": None,
        "counted_kernels": int(rows["count"].fill_null(1).sum()),
        "time_ns": float(timed["time_ns"].sum()) if timed.height else None,
        "timed_flops": _sum(timed["flops"]) if timed.height else None,
        "counted_time_source": _time_source(rows, timed),
        "fma_share": fma_share,
    }
    roof_clock = None
    peaks = {"peak_flops_per_s": None, "peak_dram_bytes_per_s": None, "peak_l2_bytes_per_s": None,
             "peak_l1_bytes_per_s": None, "peak_source": None}
    if precision is None and spec is not None:
        precision = _NO_PRECISION      # no FLOPs counted: the GPU's FP32 roof all the same
    if precision is not None:
        sources = timed["time_source"].to_list()
        measured, roof_clock = roofline.at_run_clock(roofline.measured_ceilings(rows), roofline.trace_timed(sources),
                                                     clock)
        peaks = roofline.peaks_for(spec, measured, precision, rows["name"].to_list(),
                                   rows["tensor_precision"].to_list() if "tensor_precision" in rows.columns else None)
    point = roofline.point({**base, "flops": base["flops"] or 0.0, "timed_flops": base["timed_flops"] or 0.0}, peaks)
    bound, note = _bound(base, point, spec, precision, population, by_name)
    shares = population is not None and (bound is not None or (population.thin and note is not None
                                                                and note.startswith(bounds.THIN)))
    names = shares and by_name is not None and by_name.compute_share is not None
    return {
        **{k: base[k] for k in ("run", "flops", "flops_complete", "dram_bytes", "counted_kernels",
                                "counted_time_source")},
        "counted_time_ns": base["time_ns"],
        "arithmetic_intensity": point["ai_dram"] if base["flops"] is not None else None,
        "achieved_flops_per_s": point["achieved_flops_per_s"] if base["flops"] else None,
        "roof_precision": precision,
        "peak_flops_per_s": peaks["peak_flops_per_s"], "peak_dram_bytes_per_s": peaks["peak_dram_bytes_per_s"],
        "ridge_ai": point["ridge_ai"], "pct_of_roof": point["pct_of_roof"] if base["flops"] else None,
        "attainable_flops_per_s": point["attainable_flops_per_s"] if base["flops"] is not None else None,
        "bound": bound, "bound_note": note,
        "compute_time_share": population.compute_share if shares else None,
        "bound_coverage": population.coverage if shares else None,
        "bound_coverage_by_name": by_name.coverage if names else None,
        "compute_time_share_by_name": by_name.compute_share if names else None,
        "memory_time_share_by_name": by_name.memory_share if names else None,
        "fma_share": point["fma_share"], "ceiling": point["ceiling"],
        "ceiling_flops_per_s": point["ceiling_flops_per_s"], "roof_clock": roof_clock,
        "dram_bytes_derived": bool(rows["dram_bytes_derived"].fill_null(False).any()),
    }


def _bound(base: dict, point: dict, spec, precision: str | None, population: bounds.Population | None = None,
           by_name: bounds.Population | None = None) -> tuple[str | None, str | None]:
    """The bound class by the counted kernel population (`bound.classify`), or by kernel name
    where the counted launches cover too little and the kernels they name enough (`bound.classes_by_name`),
    with the shares that gave it; or null with the reason."""
    if base["flops"] is None:
        return None, NO_COUNTS
    if base["flops_complete"] is False:
        return None, f"FLOPs incomplete: {base['incomplete_because']}"
    if not base["flops"]:
        return None, "no floating-point work was counted"
    if not base["dram_bytes"]:
        return None, "no DRAM byte counts in the logs"
    if point["ridge_ai"] is None:
        missing = "no GPU identified" if spec is None else f"no {precision} peak known for the {spec.key}"
        return None, f"{missing}, so no ridge point"
    if point["above_roof"]:
        return None, point["note"]
    if population is None or population.compute_share is None:
        return None, f"{bounds.UNTIMED} (intensity {point['ai_dram'] / point['ridge_ai']:.2g}× the ridge point)"
    counted = population
    if bounds.classes_by_name(population, by_name):
        population = by_name
    elif population.thin:
        return None, bounds.thin_words(population, base["counted_kernels"], by_name)
    ai, ridge, pct = point["ai_dram"], point["ridge_ai"], point["pct_of_roof"]
    bound = bounds.classify(ai, ridge, pct, population)
    kept = point["note"] if point["note"] and point["note"].startswith(_KEEP_NOTES) else None
    words = bounds.share_words(bound, ai, ridge, population, pct, counted, base["counted_kernels"])
    said = [text for text in (kept, words) if text]
    return bound, "; ".join(said) or None


def _dominant_precision(points: pl.DataFrame) -> dict[str, str]:
    """run -> the precision doing most of its FLOPs (roofline's precision of each kernel:
    `roofline.kernel_points`)."""
    if not points.height:
        return {}
    per = points.group_by("run", "precision").agg(pl.col("flops").sum())
    top = per.sort(["run", "flops", "precision"], descending=[False, True, False]).group_by(
        "run", maintain_order=True).first()
    return dict(zip(top["run"].to_list(), top["precision"].to_list()))


def _unmeasured_fp32(rows: pl.DataFrame) -> str | None:
    """Why the run's FLOPs miss its FP32 work, when its counters measured other precisions but
    never FP32 (e.g. nvprof `--metrics flop_count_dp` alone): its deep-learning kernels then count
    0 FLOPs, which is no count of the work at all. None when FP32 was measured or nothing was."""
    measured = [column for column in counted.FLOP_COLUMNS if rows[column].is_not_null().any()]
    if not measured or "flops_fp32" in measured:
        return None
    names = ", ".join(column.removeprefix("flops_").upper() for column in measured)
    return f"only {names} FLOPs were counted; FP32 work was not measured"


def _complete(rows: pl.DataFrame) -> bool | None:
    flags = rows.filter(pl.col("flops").is_not_null())["flops_complete"].drop_nulls()
    return None if flags.is_empty() else bool(flags.all())


def _sum(values: pl.Series) -> float | None:
    values = values.drop_nulls()
    return float(values.sum()) if values.len() else None


def _time_source(rows: pl.DataFrame, timed: pl.DataFrame) -> str | None:
    sources = timed["time_source"].drop_nulls().value_counts(sort=True)
    if not sources.height:
        return None
    source = sources["time_source"][0]
    launches, timed_launches = rows["count"].fill_null(1).sum(), timed["count"].fill_null(1).sum()
    if timed_launches < launches:
        source = f"{source}; {timed_launches} of {launches} counted launches timed"
    return source
