"""Which rows give a run's kernel time, and the real time of the kernels ncu counted.

A run can hold several logs of the same work: an ncu log (counters, but kernels serialised and
clocks locked to base by default), an nsys or nvprof trace (the real timeline), summaries, and
repeated jobs of the same configuration. Kernel time must come from ONE of them, never a sum:

    rank 1  nsys trace        (kernels.kind = launch, from an nsys file)
    rank 2  nvprof trace
    rank 3  rocprof trace     (ROCm kernel traces: rocprofv3 kernel_trace, rocprof-compute timestamps)
    rank 4  PyTorch trace     (Kineto's CUPTI kernel events: a timeline as nvprof's)
    rank 5  nsys summary      (kern sum)
    rank 6  nvprof summary    (GPU activities)
    rank 7  rocprof summary   (kernel stats)
    rank 8  PyTorch key_averages table (the same events summed, names cut at 55 characters)
    rank 9  other launch rows (activities of kind kernel without kernel rows)
    rank 10 ncu               (gpu__time_duration: serialised, clock-locked)
    rank 11 rocprof counters  (the dispatches of a counter collection: serialised, one per pass)

Within the best rank, one file (the one with the most kernel time) stands for the run when
several were logged (repeated jobs), so time is never double counted; memcpy/memset activities
of that file are added when its kernel rows do not list them.

`counted_kernel_times` gives each counted kernel launch (ncu's, a ROCm counter collection's) the
duration of the same launch in
a trace of the same run: launches are aligned by their short names in order (difflib), so a
trace that also captured kernels ncu skipped still lines up.
"""

from __future__ import annotations

import difflib

import polars as pl

# Kernel rows of a view that does not give its run's totals (a PyTorch table's other views).
VIEW = "view"
# Counter files of a family whose files are also traces, told apart by their variant's ending.
COUNTED_VARIANT = "(counters)"
COUNTER_FILES = {"rocm": "rocm counters"}

_RANKS = {("nsys", "launch"): 1, ("nvprof", "launch"): 2, ("rocm", "launch"): 3, ("pytorch", "launch"): 4,
          ("nsys", "summary"): 5, ("nvprof", "summary"): 6, ("rocm", "summary"): 7, ("pytorch", "summary"): 8,
          ("activities", "launch"): 9, ("ncu", "launch"): 10, ("ncu", "summary"): 10,
          (COUNTER_FILES["rocm"], "launch"): 11}
_LABELS = {1: "nsys trace", 2: "nvprof trace", 3: "rocprof trace", 4: "PyTorch trace", 5: "nsys summary",
           6: "nvprof summary", 7: "rocprof summary", 8: "PyTorch key_averages", 9: "trace",
           10: "ncu gpu__time_duration", 11: "rocprof counter collection"}
_TRACE_RANKS = (1, 2, 3, 4, 9)   # timelines: each launch with its own duration
NCU_RANK = 10                   # the first rank of counter files (serialised launches)
_COUNTED = ("ncu", COUNTER_FILES["rocm"])   # their launches get a trace's time when it has them
_UNKNOWN_RANK = 9
MIN_MATCHED = 0.9  # share of ncu launches a trace must match to give their time

TIME_COLUMNS = {"run": pl.String, "source_file": pl.String, "order": pl.Int64, "name": pl.String,
                "short_name": pl.String,
                "category": pl.String,
                # the name rule's reading where what launched the kernel says otherwise (a Winograd
                # convolution's GEMM: category conv, category_by_name gemm: "conv (via GEMM)")
                "category_by_name": pl.String,
                "region": pl.String, "count": pl.Int64, "time_ns": pl.Float64,
                # a summary row's per-launch statistics as its log printed them (`kernels`)
                "min_ns": pl.Float64, "median_ns": pl.Float64, "max_ns": pl.Float64,
                "tensor_active": pl.Boolean, "grid": pl.String, "block": pl.String, "device": pl.String,
                "source_rank": pl.Int64, "time_source": pl.String}


# The columns `candidate_rows` and `transfer_rows` read, of each table: a reader of stored
# tables reads only these (a kernel row has 40-odd columns).
READ_COLUMNS = {"kernels": ("run", "source_file", "source_line", "name", "short_name", "category",
                            "category_by_name", "region", "kind", "count", "duration_ns", "min_ns",
                            "median_ns", "max_ns", "tensor_active", "grid", "block", "device"),
                "activities": ("run", "source_file", "source_line", "kind", "name", "duration_ns", "grid", "block",
                               "device")}

# A launch printed no statistics of launches: its own time is all there is.
_NO_STATISTICS = [pl.lit(None, pl.Float64).alias(name) for name in ("min_ns", "median_ns", "max_ns")]


def file_families(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """source_file -> family ("ncu", "nsys", "nvprof", "nvidia-smi") from the files table; a
    ROCm counter collection (variant "... (counters)": its dispatches were serialised to count
    them, as ncu's launches are) is family "rocm counters"."""
    files = tables.get("files")
    if files is None or not files.height:
        return pl.DataFrame(schema={"source_file": pl.String, "family": pl.String})
    counted = pl.col("variant").fill_null("").str.ends_with(COUNTED_VARIANT)
    family = pl.col("family")
    for base, timing_family in COUNTER_FILES.items():
        family = pl.when((pl.col("family") == base) & counted).then(pl.lit(timing_family)).otherwise(family)
    return files.select(pl.col("path").alias("source_file"), family.alias("family")).unique("source_file")


def candidate_rows(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Every row that could give its run's time (`TIME_COLUMNS` but `time_source`), of every
    file and rank: kernel rows with a duration (a PyTorch table's other views apart), and the
    kernel activities of files without kernel rows."""
    kernels = tables.get("kernels")
    fam = file_families(tables)
    parts = []
    if kernels is not None and kernels.height:
        # (the columns read are taken before the join: it copies what it is given, and 2 million
        # kernel rows hold 30 columns)
        # (a PyTorch table printed as several views gives its totals from one: the others'
        # rows, kind "view", are kept but never timed: `families/pytorch/table.py`)
        timed = kernels.filter(pl.col("duration_ns").is_not_null() & pl.col("kind").ne_missing(VIEW)).select(
            "run", "source_file", pl.col("source_line").alias("order"), "name", "short_name", "category",
            pl.coalesce("category_by_name", "category").alias("category_by_name"), "region", pl.col("count").fill_null(1), pl.col("duration_ns").alias("time_ns"),
            "min_ns", "median_ns", "max_ns", "tensor_active", "grid", "block", "device", "kind").join(fam, on="source_file", how="left")
        parts.append(timed.select(pl.exclude("kind", "family"), _rank(pl.col("family"), pl.col("kind")).alias("source_rank")))
    parts.append(_activity_kernels(tables, kernels))
    parts = [p for p in parts if p.height]
    if not parts:
        return pl.DataFrame(schema=TIME_COLUMNS)
    return pl.concat([p.select([pl.col(c).cast(t) for c, t in TIME_COLUMNS.items() if c != "time_source"])
                      for p in parts])


def _rank(family: pl.Expr, kind: pl.Expr) -> pl.Expr:
    expr = pl.lit(_UNKNOWN_RANK, pl.Int64)
    for (fam, knd), rank in _RANKS.items():
        expr = pl.when((family == fam) & (kind == knd)).then(pl.lit(rank, pl.Int64)).otherwise(expr)
    return expr


def _activity_kernels(tables: dict[str, pl.DataFrame], kernels: pl.DataFrame | None) -> pl.DataFrame:
    """Kernel activities of files that gave no kernel rows (a trace read into activities only)."""
    acts = tables.get("activities")
    if acts is None or not acts.height:
        return pl.DataFrame()
    acts = acts.filter((pl.col("kind") == "kernel") & pl.col("duration_ns").is_not_null())
    if kernels is not None and kernels.height:
        acts = acts.join(kernels.select("source_file").unique(), on="source_file", how="anti")
    if not acts.height:
        return pl.DataFrame()
    from roofreport.enrich.categories import categorize
    from roofreport.enrich.names import phase_of, with_short_names
    from roofreport.enrich.tensor import names_look_tensor
    acts = with_short_names(acts)
    return acts.select(
        "run", "source_file", pl.col("source_line").alias("order"), "name", "short_name",
        categorize(acts["name"]).alias("category"), categorize(acts["name"]).alias("category_by_name"),
        phase_of(acts["name"]).alias("region"), pl.lit(1, pl.Int64).alias("count"),
        pl.col("duration_ns").alias("time_ns"), *_NO_STATISTICS,
        names_look_tensor(pl.col("name")).alias("tensor_active"),
        "grid", "block", "device", pl.lit(_RANKS[("activities", "launch")], pl.Int64).alias("source_rank"))


def kernel_time_rows(tables: dict[str, pl.DataFrame], cand: pl.DataFrame | None = None) -> pl.DataFrame:
    """The rows that make up each run's GPU time (kernels, plus memcpy/memset when the chosen
    source has them), all from one source file per run; `time_source` labels the choice.
    `cand`: `candidate_rows(tables)` when the caller has them (the model works them out once)."""
    if cand is None:
        cand = candidate_rows(tables)
    if not cand.height:
        return pl.DataFrame(schema=TIME_COLUMNS)
    per_file = cand.group_by("run", "source_file", "source_rank").agg(pl.col("time_ns").sum().alias("file_time_ns"))
    best = (per_file.sort(["run", "source_rank", "file_time_ns", "source_file"],
                          descending=[False, False, True, False])
            .group_by("run", maintain_order=True)
            .agg(pl.col("source_file").first(), pl.col("source_rank").first(),
                 pl.col("source_file").filter(pl.col("source_rank") == pl.col("source_rank").first())
                 .n_unique().alias("files")))
    # (each run's rows of one file and rank, as most runs are: all of them, not a copy by a join)
    chosen = cand if per_file.height == best.height else \
        cand.join(best.select("run", "source_file", "source_rank"), on=["run", "source_file", "source_rank"])
    del cand
    transfers = transfer_rows(tables, chosen)
    if transfers.height:
        chosen = pl.concat([chosen, transfers], how="diagonal_relaxed")
    labels = best.filter(pl.col("run").is_not_null()).select(
        "run", source_label(pl.col("source_rank"), pl.col("files")).alias("time_source"))
    # (one column added, by run, not a join: a join copies every column of every row)
    return chosen.with_columns(pl.col("run").replace_strict(labels["run"], labels["time_source"], default=None,
                                                            return_dtype=pl.String).alias("time_source")) \
        .select(list(TIME_COLUMNS))


def with_in_run_total(tables: dict[str, pl.DataFrame], chosen: pl.DataFrame,
                      kernels: pl.LazyFrame) -> pl.LazyFrame:
    """`kernels` with `in_run_total`: the row is of its run's time source (`chosen`: run,
    source_file, source_rank, one per run, as `kernel_time_rows` chooses) and not a copy, so
    the durations of the rows marked sum to the run's `kernel_time_ns`. A run whose time source
    is a file read into activities only (no kernel rows) marks none. Lazy, and in the rows'
    order without sorting them, so a dataset folder's kernels are marked as they are scanned.
    (Columns looked up by file and by run, not joined: a join copies every column of every
    row, and the kernels are the biggest table.)"""
    chosen = chosen.select("run", "source_file", "source_rank").unique("run", keep="first", maintain_order=True) \
        .filter(pl.col("run").is_not_null())
    families = file_families(tables)
    family = pl.col("source_file").replace_strict(families["source_file"], families["family"], default=None,
                                                  return_dtype=pl.String)
    run = pl.col("run")
    its_file = run.replace_strict(chosen["run"], chosen["source_file"], default=None, return_dtype=pl.String)
    its_rank = run.replace_strict(chosen["run"], chosen["source_rank"], default=None, return_dtype=pl.Int64)
    of_source = (pl.col("source_file") == its_file) & (_rank(family, pl.col("kind")) == its_rank)
    moved = pl.col("category").fill_null("").is_in(["memcpy", "memset"])
    return kernels.with_columns(
        (of_source.fill_null(False) & pl.col("duration_ns").is_not_null() & ~moved
         & pl.col("kind").ne_missing(VIEW)).alias("in_run_total"))


def is_trace(rank: pl.Expr) -> pl.Expr:
    """Rows of a timeline (each launch in the order it ran), not of a summary or ncu's replays."""
    return rank.is_in(_TRACE_RANKS)


def is_ordered(rank: pl.Expr) -> pl.Expr:
    """Rows in the order they ran: a timeline's, or a ROCm counter collection's (its serialised
    dispatches, and a rocpd database's copies among them, listed by start time), not a
    summary's (nor ncu's replays, which list no copies)."""
    return rank.is_in([*_TRACE_RANKS, _RANKS[(COUNTER_FILES["rocm"], "launch")]])


def source_label(rank: pl.Expr, total: pl.Expr) -> pl.Expr:
    base = pl.lit(None, pl.String)
    for rank_at_least, text in _LABELS.items():
        base = pl.when(rank == rank_at_least).then(pl.lit(text)).otherwise(base)
    return pl.when(total > 1).then(pl.format("{} (1 of {} files)", base, total)).otherwise(base)


def transfer_rows(tables: dict[str, pl.DataFrame], chosen: pl.DataFrame) -> pl.DataFrame:
    """memcpy/memset activities of the `chosen` files (run, source_file, source_rank) whose
    kernel rows do not list transfers."""
    acts = tables.get("activities")
    if acts is None or not acts.height:
        return pl.DataFrame(schema={c: t for c, t in TIME_COLUMNS.items() if c != "time_source"})
    listed = chosen.filter(pl.col("category").is_in(["memcpy", "memset"])).select("source_file").unique()
    files = chosen.select("run", "source_file", "source_rank").unique().join(listed, on="source_file", how="anti")
    moves = acts.filter(pl.col("kind").is_in(["memcpy", "memset"]) & pl.col("duration_ns").is_not_null())
    moves = moves.join(files, on=["run", "source_file"])
    return moves.select(
        "run", "source_file", pl.col("source_line").alias("order"), "name", pl.col("name").alias("short_name"),
        pl.col("kind").alias("category"), pl.col("kind").alias("category_by_name"),
        pl.lit(None, pl.String).alias("region"), pl.lit(1, pl.Int64).alias("count"),
        pl.col("duration_ns").alias("time_ns"), *_NO_STATISTICS, pl.lit(False).alias("tensor_active"),
        pl.lit(None, pl.String).alias("grid"), pl.lit(None, pl.String).alias("block"), "device", "source_rank")


# -- real time for counted launches (ncu, rocprof counters) -----------------------------------------------------

def counted_kernel_times(tables: dict[str, pl.DataFrame], time_rows: pl.DataFrame | None = None,
                         traces: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per kernel row: source_file, launch_id, time_ns and time_source, in this order of choice:
    the same launch in a trace of the run (ncu rows; needs MIN_MATCHED of them to align), the
    same kernel name's total in the run's time source (summary rows such as nvprof metrics),
    the row's own duration. `time_rows`: `kernel_time_rows(tables)`, `traces`: `trace_launches`
    of them (of the counted runs at least), when the caller has them."""
    kernels = tables.get("kernels")
    empty = pl.DataFrame(schema={"source_file": pl.String, "launch_id": pl.Int64,
                                 "time_ns": pl.Float64, "time_source": pl.String})
    if kernels is None or not kernels.height:
        return empty
    own = kernels.join(file_families(tables), on="source_file", how="left")
    out = own.select("source_file", "launch_id", pl.col("duration_ns").alias("time_ns"),
                     pl.when(pl.col("duration_ns").is_not_null())
                     .then(pl.format("{} duration", pl.col("family").fill_null("log"))).alias("time_source"))
    runs = own.filter(pl.col("family").is_in(_COUNTED) & (pl.col("kind") == "launch"))["run"].unique().to_list()
    if runs and traces is None:
        traces = trace_launches(candidate_rows(tables))
    found = [_align_run(own.filter(pl.col("run") == run), traces.filter(pl.col("run") == run)) for run in runs]
    found.append(_by_name(tables, own, time_rows))
    found = [f for f in found if f.height]
    for part in found:
        out = out.join(part, on=["source_file", "launch_id"], how="left", suffix="_m").select(
            "source_file", "launch_id", pl.coalesce("time_ns_m", "time_ns").alias("time_ns"),
            pl.coalesce("time_source_m", "time_source").alias("time_source"))
    return out


def trace_launches(cand: pl.DataFrame, runs: list[str] | None = None) -> pl.DataFrame:
    """The kernel launches of timelines among candidate rows (`candidate_rows`), of `runs` only
    when given: what counted launches are aligned with."""
    keep = pl.col("source_rank").is_in(_TRACE_RANKS) & ~pl.col("category").fill_null("").is_in(["memcpy", "memset"])
    if runs is not None:
        keep = keep & pl.col("run").is_in(runs)
    return cand.filter(keep)


def counted_runs(tables: dict[str, pl.DataFrame]) -> list[str]:
    """The runs with counted launches (ncu's, a ROCm counter collection's): those whose time
    `counted_kernel_times` looks for in a trace."""
    kernels = tables.get("kernels")
    if kernels is None or not kernels.height:
        return []
    counted = file_families(tables).filter(pl.col("family").is_in(_COUNTED)).select("source_file")
    launches = kernels.select("run", "source_file", "kind").filter(pl.col("kind") == "launch")
    return launches.join(counted, on="source_file", how="semi")["run"].drop_nulls().unique().sort().to_list()


def _align_run(own: pl.DataFrame, trace: pl.DataFrame) -> pl.DataFrame:
    """Launch-by-launch alignment of a run's counted rows (ncu, rocprof counters) with its best
    trace file."""
    ncu = own.filter(pl.col("family").is_in(_COUNTED) & (pl.col("kind") == "launch")).sort("source_file", "launch_id")
    if not ncu.height or not trace.height:
        return pl.DataFrame()
    best_file = trace.group_by("source_file", "source_rank").agg(pl.len()).sort(
        ["source_rank", "len", "source_file"], descending=[False, True, False])
    trace = trace.filter(pl.col("source_file") == best_file["source_file"][0]).sort("order")
    first, second = ncu["short_name"].to_list(), trace["short_name"].to_list()
    pairs = [(blk.a + i, blk.b + i) for blk in difflib.SequenceMatcher(None, first, second, autojunk=False)
             .get_matching_blocks() for i in range(blk.size)]
    if len(pairs) < MIN_MATCHED * len(first):
        return pl.DataFrame()
    label = f"{_LABELS[int(trace['source_rank'][0])]} (matched {len(pairs)} of {len(first)} launches)"
    return pl.DataFrame({
        "source_file": [ncu["source_file"][i] for i, _ in pairs],
        "launch_id": [ncu["launch_id"][i] for i, _ in pairs],
        "time_ns": [trace["time_ns"][j] for _, j in pairs],
        "time_source": [label] * len(pairs),
    }, schema={"source_file": pl.String, "launch_id": pl.Int64, "time_ns": pl.Float64, "time_source": pl.String})


def _by_name(tables: dict[str, pl.DataFrame], own: pl.DataFrame, time_rows: pl.DataFrame | None) -> pl.DataFrame:
    """Counted summary rows without a time of their own (nvprof metrics) get their kernel name's
    total time from the run's time source (nvprof summary or trace of the same run)."""
    rows = own.filter((pl.col("kind") == "summary") & pl.col("duration_ns").is_null()
                      & ~pl.col("family").is_in(_COUNTED))
    if not rows.height:
        return pl.DataFrame()
    times = (kernel_time_rows(tables) if time_rows is None else time_rows).filter(pl.col("source_rank") < NCU_RANK)
    totals = times.group_by("run", "name").agg(pl.col("time_ns").sum(), pl.col("time_source").first())
    joined = rows.join(totals, on=["run", "name"], how="inner")
    return joined.select("source_file", "launch_id", "time_ns",
                         pl.format("{} (by kernel name)", pl.col("time_source")).alias("time_source"))
