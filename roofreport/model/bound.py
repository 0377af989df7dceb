"""What bounds a run, by its time-weighted kernel population (issue 31, item 2).

A run is not memory-bound because its aggregate intensity sits left of the ridge: its FLOPs and
bytes are sums over kernels that each sit on one side of their own ridge point, and the time
each spends there is what the run's time is made of. So:

* Each counted kernel is on the compute side when its DRAM intensity is at or right of its own
  ridge point (the ceiling it is judged by: `roofline.kernel_roofline`), else on the memory
  side; a kernel that moved DRAM bytes and did no floating-point work is on the memory side.
  Kernels whose FLOPs are incomplete (uncounted tensor work), or without a time, intensity or
  ridge, are not classified.
* `LATENCY`: the run reaches under `LATENCY_PCT` of its roof, or under `SHORT_PCT` with most of
  its classified time in short launches (under `SHORT_LAUNCH_NS` each, where launch overhead and
  the ramp up and down of a grid weigh) or in launches of less than one wave on the SMs: far
  below both roofs, neither roof is what holds it back.
* `MEMORY` / `COMPUTE`: at least `MOST` of the classified time sits on that side, and the
  run's aggregate intensity is outside the ridge band.
* `MIXED` ("at the ridge / mixed"): otherwise; always when the aggregate intensity is within
  a factor `RIDGE_BAND` of the ridge point (both roofs are near).

`compute_time_share` is the classified time's share on the compute side; `bound_coverage` the
share of the run's kernel time the classification covers (ncu may profile only some kernels).
`share_words` says both, for every answer to print the same sentence.

* No class (`thin`): the classified kernels cover under `COVERAGE_FLOOR` of the run's kernel
  time. The rule above asks where most of the run's time sits; when the counted kernels are
  the smaller part of it, the uncounted rest could put most of the run on either side whatever
  the counted split (87 % compute-side of 4 % of the time says nothing of the other 96 %). ncu
  runs with `--launch-skip`/`--launch-count` or `-k` (a window of one step, one kernel) beside
  a trace of the whole run are the common case. `thin_words` says what is counted instead.
* No class (`UNTIMED`) either when no counted kernel has a time (nvprof `--metrics` alone): the
  aggregate intensity right or left of the ridge does not say on which side the time sits.

Classed by kernel name (`name_populations`), where the counted launches cover under the floor
but the kernels they name cover at least it. ncu profiles a window (one step, `--launch-count N`)
of a run whose trace has every launch, and the launches outside the window are mostly the same
kernels launched again. A kernel's arithmetic intensity is a property of the kernel and its
launch shape (Nsight Compute's guidance: profile a representative subset, extrapolate per
kernel), so each uncounted launch takes the side of the counted launches of its kernel:

* kernels are one by `short_name`, the name the alignment of counted launches with a trace
  already joins on (`timing._align_run`; `enrich.names.short_name`: ncu's and nsys's or
  Kineto's spellings of one kernel, mangled or demangled, `(anonymous namespace)` or
  `<unnamed>`, `(int)4` or `4`, give one short name);
* a trace launch of a grid and block that counted launches of its name had takes the side of
  those launches; any other launch of a counted name takes the side of all its name's counted
  launches. The side of a group of counted launches is the run's rule in small: the side
  holding at least `MOST` of their time. Counted launches that straddle the ridge with neither
  side holding that much (different shapes, different problems under one grid) make the name
  (or shape) `MIXED`: its time is on neither side, so it weighs against both. (One 26 µs
  launch of a weight-gradient convolution left of the ridge beside six of 400 µs right of it
  does not make the kernel mixed: V100 resnet18 in sample_logs.)
* each name's weight is its time in the run's time source (`Population.by_name`), and the
  coverage is the share of the run's kernel time whose names have a counted launch
  (`bound_coverage_by_name`).

`bound_coverage` and `compute_time_share` keep the counted launches' own figures; the runs
table's `*_by_name` columns hold the names'.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

MEMORY, COMPUTE, MIXED, LATENCY = "memory", "compute", "mixed", "latency"
MOST = 0.6                 # the share of time on one side that makes the run that side's
RIDGE_BAND = 1.25          # an aggregate intensity within ×/÷ this of the ridge: at the ridge
LATENCY_PCT = 10.0         # under this % of the roof: latency-bound whatever the kernels
SHORT_PCT = 50.0           # under this % with short kernels or few waves: latency-bound
SHORT_LAUNCH_NS = 20_000.0  # a launch shorter than this is short (launch cost, grid ramp)
ONE_WAVE = 1.0             # waves per SM under one: the grid does not fill the GPU once
COVERAGE_FLOOR = 0.5       # under this share of the run's kernel time classified: too little to classify
THIN = "too little of the run's kernel time is counted to classify"
UNTIMED = "no counted kernel has a time, so where the run's time sits is not known"

WORDS = {MEMORY: "memory-bound", COMPUTE: "compute-bound", MIXED: "neither memory- nor compute-bound",
         LATENCY: "latency-bound"}


def words(bound: str | None) -> str | None:
    """The bound class as a report prints it ("memory-bound"; "neither memory- nor compute-bound" for
    a run at the ridge or with its time split between both sides)."""
    return WORDS.get(bound, f"{bound}-bound") if bound else None


@dataclass(frozen=True)
class Population:
    """Where a run's classified kernel time sits (ns)."""

    compute_ns: float
    memory_ns: float
    short_ns: float          # of the classified time, in short launches or under one wave
    run_ns: float | None     # the run's kernel time (what the coverage is a share of)
    run_launches: int | None = None   # the run's kernel launches (to say how many were counted)
    mixed_ns: float = 0.0    # of kernels whose counted launches straddle the ridge (by name only)
    by_name: bool = False    # the run's kernel time by name (`name_populations`), not the counted launches'

    @property
    def classified_ns(self) -> float:
        return self.compute_ns + self.memory_ns + self.mixed_ns

    @property
    def compute_share(self) -> float | None:
        return self.compute_ns / self.classified_ns if self.classified_ns else None

    @property
    def memory_share(self) -> float | None:
        return self.memory_ns / self.classified_ns if self.classified_ns else None

    @property
    def coverage(self) -> float | None:
        if not self.classified_ns or not self.run_ns:
            return None
        return min(1.0, self.classified_ns / self.run_ns)

    @property
    def thin(self) -> bool:
        """Too little of the run's kernel time is classified to say where most of it sits."""
        coverage = self.coverage
        return coverage is not None and coverage < COVERAGE_FLOOR


WAVES = ("launch__waves_per_multiprocessor", "Waves Per SM")   # ncu's Launch Statistics


def launch_waves(metrics: pl.LazyFrame | None) -> pl.DataFrame:
    """source_file, launch_id, waves: ncu's waves per SM of each launch that logged it (the grid
    over what the SMs hold at once; under one, part of the GPU idles the whole launch)."""
    schema = {"source_file": pl.String, "launch_id": pl.Int64, "waves": pl.Float64}
    if metrics is None or "metric" not in metrics.collect_schema().names():
        return pl.DataFrame(schema=schema)
    rows = metrics.filter(pl.col("metric").is_in(list(WAVES)) & pl.col("value").is_not_null()).select(
        pl.col("source_file").cast(pl.String), pl.col("launch_id").cast(pl.Int64), pl.col("value").alias("waves")
    ).collect()
    return rows.unique(["source_file", "launch_id"], keep="first", maintain_order=True)


def kernel_sides(points: pl.DataFrame, bytes_only: pl.DataFrame | None = None,
                 waves: pl.DataFrame | None = None) -> pl.DataFrame:
    """run, time_ns, side ("compute"/"memory"), short, under_wave, short_name, grid, block of
    every classifiable kernel row.

    `points`: `roofline.kernel_roofline` rows (ai_dram, ridge_ai, time_ns, count,
    flops_complete; short_name, grid, block where given); `bytes_only`: counted rows with DRAM
    bytes and no FLOPs (run, time_ns, count): memory side; `waves`: source_file, launch_id,
    waves (ncu's Waves Per SM)."""
    schema = {"run": pl.String, "time_ns": pl.Float64, "side": pl.String, "short": pl.Boolean,
              "under_wave": pl.Boolean, **{c: pl.String for c in _KEY}}
    frames = []
    if points is not None and points.height:
        usable = points.filter(pl.col("time_ns").is_not_null() & pl.col("ai_dram").is_not_null()
                               & pl.col("ridge_ai").is_not_null() & (pl.col("flops_complete") != False))  # noqa: E712
        if waves is not None and waves.height and "launch_id" in usable.columns:
            usable = usable.join(waves, on=["source_file", "launch_id"], how="left")
        else:
            usable = usable.with_columns(pl.lit(None, pl.Float64).alias("waves"))
        frames.append(usable.select(
            "run", pl.col("time_ns").cast(pl.Float64),
            pl.when(pl.col("ai_dram") >= pl.col("ridge_ai")).then(pl.lit(COMPUTE)).otherwise(pl.lit(MEMORY)).alias("side"),
            _short(pl.col("waves")), _under_wave(pl.col("waves")), *_key(usable)))
    if bytes_only is not None and bytes_only.height:
        timed = bytes_only.filter(pl.col("time_ns").is_not_null())
        frames.append(timed.select(
            "run", pl.col("time_ns").cast(pl.Float64), pl.lit(MEMORY).alias("side"),
            _short(pl.lit(None, pl.Float64)), _under_wave(pl.lit(None, pl.Float64)), *_key(timed)))
    if not frames:
        return pl.DataFrame(schema=schema)
    return pl.concat(frames, how="vertical_relaxed")


_KEY = ("short_name", "grid", "block")   # a kernel (its short name) and its launch shape


def _key(frame: pl.DataFrame) -> list[pl.Expr]:
    return [pl.col(c).cast(pl.String) if c in frame.columns else pl.lit(None, pl.String).alias(c)
            for c in _KEY]


def _under_wave(waves: pl.Expr) -> pl.Expr:
    return (waves.fill_null(ONE_WAVE) < ONE_WAVE).alias("under_wave")


def _short(waves: pl.Expr) -> pl.Expr:
    per_launch = pl.col("time_ns") / pl.col("count").fill_null(1).clip(lower_bound=1)
    return ((per_launch < SHORT_LAUNCH_NS) | (waves.fill_null(ONE_WAVE) < ONE_WAVE)).alias("short")


def populations(sides: pl.DataFrame, run_times: dict[str, float | None],
                run_launches: dict[str, int | None] | None = None) -> dict[str, Population]:
    """run -> its Population, of `kernel_sides` rows and each run's kernel time and launches."""
    if not sides.height:
        return {}
    sums = sides.group_by("run").agg(
        pl.col("time_ns").filter(pl.col("side") == COMPUTE).sum().alias("compute"),
        pl.col("time_ns").filter(pl.col("side") == MEMORY).sum().alias("memory"),
        pl.col("time_ns").filter(pl.col("short")).sum().alias("short"))
    launches = run_launches or {}
    return {run: Population(float(c or 0.0), float(m or 0.0), float(s or 0.0), run_times.get(run), launches.get(run))
            for run, c, m, s in sums.iter_rows()}


def name_populations(sides: pl.DataFrame, time_rows: pl.DataFrame | None, run_times: dict[str, float | None],
                     run_launches: dict[str, int | None] | None = None) -> dict[str, Population]:
    """run -> the Population of its kernel time by kernel name (module docstring: "Classed by
    kernel name"), of `kernel_sides` rows and the kernel rows of each run's time source
    (`time_rows`: run, short_name, grid, block, count, time_ns; copies left out)."""
    if not sides.height or time_rows is None or not time_rows.height:
        return {}
    named = sides.filter(pl.col("short_name").is_not_null())
    names = named.group_by("run", "short_name").agg(_one_side().alias("name_side"))
    shapes = named.filter(pl.col("grid").is_not_null() & pl.col("block").is_not_null()).group_by(
        "run", *_KEY).agg(_one_side().alias("shape_side"), pl.col("under_wave").all())
    timed = time_rows.filter(pl.col("short_name").is_not_null() & pl.col("time_ns").is_not_null())
    launches = timed.group_by("run", *_KEY).agg(
        pl.col("time_ns").sum(), pl.col("count").fill_null(1).clip(lower_bound=1).sum())
    # (a null grid or block matches no shape: such launches take their name's side)
    joined = launches.join(names, on=["run", "short_name"], how="inner").join(
        shapes, on=["run", *_KEY], how="left")
    side = pl.coalesce("shape_side", "name_side")
    short = (pl.col("time_ns") / pl.col("count") < SHORT_LAUNCH_NS) | pl.col("under_wave").fill_null(False)
    sums = joined.group_by("run").agg(
        *[pl.col("time_ns").filter(side == which).sum().alias(which) for which in (COMPUTE, MEMORY, MIXED)],
        pl.col("time_ns").filter(short).sum().alias("short"))
    counts = run_launches or {}
    return {run: Population(float(c or 0.0), float(m or 0.0), float(s or 0.0), run_times.get(run),
                            counts.get(run), mixed_ns=float(x or 0.0), by_name=True)
            for run, c, m, x, s in sums.select("run", COMPUTE, MEMORY, MIXED, "short").iter_rows()}


def _one_side() -> pl.Expr:
    """The side of a group of counted launches (a kernel name's, a launch shape's) by the run's
    own rule: the side holding at least `MOST` of their time, else mixed (they straddle the
    ridge)."""
    time = pl.col("time_ns")
    total = time.sum()
    return (pl.when(time.filter(pl.col("side") == COMPUTE).sum() >= MOST * total).then(pl.lit(COMPUTE))
            .when(time.filter(pl.col("side") == MEMORY).sum() >= MOST * total).then(pl.lit(MEMORY))
            .otherwise(pl.lit(MIXED)))


def classes_by_name(launches: Population | None, names: Population | None) -> bool:
    """Whether a run is classed by kernel name: its counted launches cover under the floor, the
    kernels they name at least it."""
    return launches is not None and launches.thin and names is not None and names.coverage is not None \
        and not names.thin and names.compute_share is not None


def thin_words(population: Population, counted_launches: int | None = None,
               names: Population | None = None) -> str:
    """Why a run too thinly counted has no class, naming what is counted: "too little of the
    run's kernel time is counted to classify: the counters cover 4% of it (21 of 368 launches),
    87% of that in compute-side kernels", and, where `names` (its `name_populations` one) cover
    more, "; the kernels they name take 46% of it"."""
    launches = _launches(population, counted_launches)
    text = f"{THIN}: the counters cover {population.coverage:.0%} of it{launches}, {_side_words(population)}"
    if names is not None and names.coverage is not None \
            and round(100 * names.coverage) > round(100 * population.coverage):
        text += f"; the kernels they name take {names.coverage:.0%} of it"
    return text


def _launches(population: Population, counted_launches: int | None) -> str:
    if counted_launches and population.run_launches and counted_launches <= population.run_launches:
        return f" ({counted_launches:,} of {population.run_launches:,} launches)"
    if counted_launches:
        return f" ({counted_launches:,} launch{'es' if counted_launches != 1 else ''})"
    return ""


def _side_words(population: Population) -> str:
    """"87% of that in compute-side kernels", the larger side's share of the classified time, and
    the straddling names' where there are any."""
    compute, memory = population.compute_share, population.memory_share
    side, value = (COMPUTE, compute) if compute >= memory else (MEMORY, memory)
    text = f"{value:.0%} of that in {side}-side kernels"
    if population.mixed_ns:
        mixed = population.mixed_ns / population.classified_ns
        text += f", {mixed:.0%} in kernels counted on both sides of the ridge"
    return text


def thin() -> pl.Expr:
    """The runs table's rows left without a class because too little of their time is counted."""
    return pl.col("bound").is_null() & (pl.col("bound_coverage") < COVERAGE_FLOOR).fill_null(False)


def classed_by_name() -> pl.Expr:
    """The runs table's rows classed by kernel name (`classes_by_name`): a class, with the counted
    launches under the floor and the kernels they name at or over it."""
    return pl.col("bound").is_not_null() & (pl.col("bound_coverage") < COVERAGE_FLOOR).fill_null(False) \
        & (pl.col("bound_coverage_by_name") >= COVERAGE_FLOOR).fill_null(False)


def classify(ai: float, ridge: float, pct_of_roof: float | None, population: Population | None) -> str:
    """The run's bound class (module docstring), of its aggregate intensity, ridge point and %
    of roof and its kernel population (None: by the aggregate alone; the run totals never ask so,
    they give no class without timed kernels: `UNTIMED`, nor under the coverage floor: `THIN`)."""
    if pct_of_roof is not None and pct_of_roof < LATENCY_PCT:
        return LATENCY
    share = population.compute_share if population is not None else None
    if pct_of_roof is not None and pct_of_roof < SHORT_PCT and share is not None \
            and population.short_ns >= MOST * population.classified_ns:
        return LATENCY
    if ridge / RIDGE_BAND <= ai <= ridge * RIDGE_BAND:
        return MIXED
    if share is None:        # no kernel of the run could be placed: its aggregate decides
        return MEMORY if ai < ridge else COMPUTE
    if share >= MOST:
        return COMPUTE
    if population.memory_share >= MOST:
        return MEMORY
    return MIXED


def share_words(bound: str | None, ai: float | None, ridge: float | None, population: Population | None,
                pct_of_roof: float | None = None, counted: Population | None = None,
                counted_launches: int | None = None) -> str | None:
    """Why, in words: the share of time on each side, the coverage, the ridge band, the
    short kernels ("58% of the counted time in compute-side kernels; the counters cover 14%
    of the run's kernel time"). A `population` by name (`counted`: the counted launches'
    population, `counted_launches` their number) opens with what classed it: "classed by kernel
    name: the counters cover 14% of the run's kernel time (32 of 168 launches), and the kernels
    they name take 90% of it; 87% of that in compute-side kernels"."""
    if population is None or population.compute_share is None:
        return None
    if population.by_name and counted is not None and counted.coverage is not None:
        parts = [f"classed by kernel name: the counters cover {counted.coverage:.0%} of the run's kernel time"
                 f"{_launches(counted, counted_launches)}, and the kernels they name take "
                 f"{population.coverage:.0%} of it", _side_words(population)]
    else:
        parts = [_side_words(population).replace(" of that ", " of the counted time ", 1)]
    if ai and ridge and ridge / RIDGE_BAND <= ai <= ridge * RIDGE_BAND:
        parts.append(f"intensity at {ai / ridge:.0%} of the ridge point")
    if bound == LATENCY and pct_of_roof is not None and pct_of_roof >= LATENCY_PCT:
        parts.append(f"{population.short_ns / population.classified_ns:.0%} of it in launches under "
                     f"{SHORT_LAUNCH_NS / 1000:.0f} µs or under one wave, at {pct_of_roof:.0f}% of the roof")
    coverage = population.coverage
    if not population.by_name and coverage is not None and coverage < 0.995:
        parts.append(f"the counters cover {coverage:.0%} of the run's kernel time")
    return "; ".join(parts)
