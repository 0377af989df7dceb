"""Where GPU time goes: per category, per kernel, and how it moves across runs (sweeps).

All times come from the model's time rows (`Model.time_rows`): one source per run (trace rows when the run has a
trace, else summary rows, else ncu durations), memcpy/memset included when that source lists
them. They describe the steady state: the copies of a trace before the run's first kernel (the
weights uploaded once: `totals.setup_rows`, the runs table's `setup_time_ns`) are left out, as
one-time setup. Shares are fractions (0..1) of the run's total of those rows. The uncategorized
share ("other") is always reported, 0 when every kernel matched a rule.

A `view.View` narrows the kernels shown (`--kernel REGEX`); shares stay fractions of the run's
whole GPU time (`run_total_ns`, summed before the view), so a kernel's share does not change
with what else is shown.
"""

from __future__ import annotations

import polars as pl

from roofreport.analysis import sweeps
from roofreport.analysis.view import EVERYTHING, View
from roofreport.model import Model
from roofreport.model.names import OTHER_CATEGORY as OTHER
from roofreport.tables import kernel_names


def _rows(model: Model, view: View = EVERYTHING) -> pl.DataFrame:
    """The steady-state time rows (`timing.kernel_time_rows` but the setup copies) the view
    keeps, each with its run's whole steady-state time (`run_total_ns`, every row counted)."""
    rows = model.time_rows.filter(~pl.col("setup")).with_columns(
        pl.col("category").fill_null(OTHER), pl.col("time_ns").sum().over("run").alias("run_total_ns"))
    return view.keep_kernels(rows)


def _with_share(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns((pl.col("time_ns") / pl.col("run_total_ns")).alias("share"))


def kernel_share(model: Model, view: View = EVERYTHING) -> pl.DataFrame:
    """run, category, time_ns, share (+ count, time_source), largest first within a run."""
    rows = _rows(model, view)
    out = rows.group_by("run", "category").agg(
        pl.col("time_ns").sum(), pl.col("count").sum(), pl.col("time_source").first(),
        pl.col("run_total_ns").first())
    return _with_share(out).select("run", "category", "time_ns", "share", "count", "time_source").sort(
        ["run", "time_ns"], descending=[False, True])


TRANSFERS = ("memcpy", "memset")
LEADER_COLUMNS = {"run": pl.String, "category": pl.String, "share": pl.Float64, "transfer_share": pl.Float64,
                  "transfers_large": pl.Boolean, "transfers_notable": pl.Boolean}
TRANSFERS_LARGE = 0.2     # transfers this share of a run's steady-state GPU time are said before its kernels
TRANSFERS_NOTABLE = 0.05  # transfers this share of it are worth a mention among many runs


def leading_categories(share: pl.DataFrame) -> pl.DataFrame:
    """run, category, share (the kernel category with the most time, of `kernel_share`'s
    frame), transfer_share (memcpy and memset together), for each run with kernels;
    transfers_large and transfers_notable: that share is at least TRANSFERS_LARGE,
    TRANSFERS_NOTABLE."""
    share = share.filter(pl.col("share").is_not_null()) if share.height else share
    kernels = share.filter(~pl.col("category").is_in(TRANSFERS)) if share.height else share
    if not kernels.height:
        return pl.DataFrame(schema=LEADER_COLUMNS)
    leaders = kernels.sort(["run", "share", "category"], descending=[False, True, False]) \
        .group_by("run", maintain_order=True).first().select("run", "category", "share")
    moved = share.filter(pl.col("category").is_in(TRANSFERS)).group_by("run").agg(
        pl.col("share").sum().alias("transfer_share"))
    out = leaders.join(moved, on="run", how="left").with_columns(pl.col("transfer_share").fill_null(0.0))
    out = out.with_columns((pl.col("transfer_share") >= TRANSFERS_LARGE).alias("transfers_large"),
                           (pl.col("transfer_share") >= TRANSFERS_NOTABLE).alias("transfers_notable"))
    return out.select([pl.col(c).cast(t) for c, t in LEADER_COLUMNS.items()]).sort("run")


def category_label(category: pl.Expr | str = "category", by_name: pl.Expr | str = "category_by_name") -> pl.Expr:
    """A kernel's category as the tables show it: both readings where what launched it and its
    name disagree ("conv (via GEMM)": a Winograd convolution's GEMM, counted once, as conv),
    else its category."""
    category = pl.col(category) if isinstance(category, str) else category
    by_name = pl.col(by_name) if isinstance(by_name, str) else by_name
    differs = by_name.is_not_null() & category.is_not_null() & (by_name != category)
    return pl.when(differs).then(pl.format("{} (via {})", category, _named(by_name))).otherwise(category)


def _named(category: pl.Expr) -> pl.Expr:
    return pl.when(category.is_in(list(_UPPER))).then(category.str.to_uppercase()).otherwise(category)


_UPPER = ("gemm", "fft")   # kernel families named in capitals


def by_launch_context(model: Model, view: View = EVERYTHING) -> pl.DataFrame:
    """run, category, category_by_name, label, named, count, time_ns, share: per run, the time its
    categories hold that the name rule alone reads otherwise (GEMMs that serve convolutions:
    `enrich.categories.by_launch_context`). That time is in `kernel_share`'s `category` once;
    here it is shown apart, so both readings can be said ("conv (via GEMM)")."""
    rows = _rows(model, view)
    if "category_by_name" not in rows.columns:
        return pl.DataFrame(schema=_CONTEXT_COLUMNS)
    rows = rows.filter(pl.col("category_by_name").is_not_null() & (pl.col("category_by_name") != pl.col("category")))
    out = rows.group_by("run", "category", "category_by_name").agg(
        pl.col("count").sum(), pl.col("time_ns").sum(), pl.col("run_total_ns").first())
    out = _with_share(out).with_columns(category_label().alias("label"), _named(pl.col("category_by_name")).alias("named"))
    return out.select(list(_CONTEXT_COLUMNS)).cast(_CONTEXT_COLUMNS).sort(  # type: ignore[arg-type]
        ["run", "time_ns"], descending=[False, True])


_CONTEXT_COLUMNS = {"run": pl.String, "category": pl.String, "category_by_name": pl.String, "label": pl.String,
                    "named": pl.String, "count": pl.Int64, "time_ns": pl.Float64, "share": pl.Float64}


def top_kernels(model: Model, top_n: int = 10, view: View = EVERYTHING) -> pl.DataFrame:
    """run, short_name, category, category_label, count, time_ns, share: the `top_n` kernels with
    most time per run."""
    return per_kernel(model, view).group_by("run", maintain_order=True).head(top_n).select(
        "run", "short_name", "category", "category_label", "count", "time_ns", "share")


def per_kernel(model: Model, view: View = EVERYTHING) -> pl.DataFrame:
    """run, short_name, category, category_label, count, time_ns, share, run_total_ns, min_ns,
    median_ns, max_ns: every kernel (by its name: `_kernel_key`; labelled by its short name) of
    every run, largest first; `category_label` gives both readings where what launched the
    kernel and its name disagree ("conv (via GEMM)"; `category_label`). The launch statistics,
    as `nsys stats` prints them, come from the launches themselves (a trace's or ncu's rows, one
    launch each) or from what a summary printed per row (`kernels.min_ns`...: nsys kern sum,
    nvprof's Min/Max without a median); `_launch_statistics` says how they combine."""
    rows = _rows(model, view).with_columns(pl.coalesce("short_name", "name").alias("short_name"),
                                           _kernel_key().alias("__kernel"))
    if "category_by_name" not in rows.columns:
        rows = rows.with_columns(pl.col("category").alias("category_by_name"))
    # (one kernel can be launched both ways: a GEMM serving a convolution and a fully connected
    # layer; its row is then read as the context read most of its time)
    out = rows.group_by("run", "__kernel").agg(
        pl.col("short_name").first(), pl.col("category").sort_by("time_ns", descending=True).first(),
        pl.col("category_by_name").first(), pl.col("count").sum(), pl.col("time_ns").sum(),
        pl.col("run_total_ns").first(), *_launch_statistics())
    out = _with_share(_distinct_labels(out)).drop("__kernel").with_columns(category_label().alias("category_label"))
    return out.sort(["run", "time_ns", "short_name"], descending=[False, True, False], nulls_last=True)


def _kernel_key() -> pl.Expr:
    """What tells one kernel from another within a run: its whole name, less what the profiler
    appended (nvprof's per-launch correlation id, ROCm's ` [clone .kd]`: `tables.kernel_names`).
    Instantiations of one template (`rocprim::detail::transform_kernel<..., 1u, ...>` and
    `<..., 2u, ...>`, listed apart by the profiler) share a short name but are distinct kernels,
    never summed into one row."""
    return pl.coalesce(kernel_names.bare_name(pl.col("name")), pl.col("short_name"))


def _distinct_labels(out: pl.DataFrame) -> pl.DataFrame:
    """Each kernel's label: its short name, or its whole name where several kernels of the run
    share that short name (the displays elide long names keeping them distinct)."""
    shared = pl.col("short_name").count().over("run", "short_name") > 1
    return out.with_columns(pl.when(shared).then(pl.col("__kernel")).otherwise(pl.col("short_name")).alias("short_name"))


def _launch_statistics() -> list[pl.Expr]:
    """min_ns, median_ns, max_ns of one kernel's rows. A row of one launch stands for itself
    (its time), a summary row for what it printed. The minimum and maximum need every row's
    (a row without them could hold the extreme launch): the min of mins, the max of maxes. The
    median of several summary rows is not theirs to combine: only launches, or one row, give it."""
    one_launch = pl.col("count").fill_null(0).eq(1)

    def of_row(printed: str) -> pl.Expr:
        return pl.coalesce(pl.col(printed), pl.when(one_launch).then(pl.col("time_ns")))

    def when_every_row(statistic: pl.Expr, printed: str) -> pl.Expr:
        return pl.when(of_row(printed).is_not_null().all()).then(statistic).alias(printed)

    median = pl.when(one_launch.all()).then(pl.col("time_ns").median()) \
        .when(pl.len() == 1).then(of_row("median_ns").first())
    return [when_every_row(of_row("min_ns").min(), "min_ns"), median.alias("median_ns"),
            when_every_row(of_row("max_ns").max(), "max_ns")]


def top_kernels_rest(model: Model, top_n: int = 10, view: View = EVERYTHING) -> pl.DataFrame:
    """run, kernels, count, time_ns, share, total_ns: per run, the kernels outside its `top_n`
    largest (those `top_kernels` leaves out: the "other" row of a top-n table, so that every
    kernel counts) and the run's total kernel time (every kernel, whatever the view shows).
    `kernels` is how many; 0 when none is left."""
    every = per_kernel(model, view)
    ranked = every.with_columns(pl.int_range(pl.len()).over("run").alias("rank"))
    totals = ranked.group_by("run").agg(pl.col("run_total_ns").first().alias("total_ns"))
    rest = ranked.filter(pl.col("rank") >= top_n).group_by("run").agg(
        pl.len().cast(pl.Int64).alias("kernels"), pl.col("count").sum(), pl.col("time_ns").sum(),
        pl.col("share").sum())
    out = totals.join(rest, on="run", how="left").with_columns(
        pl.col("kernels").fill_null(0), pl.col("count").fill_null(0), pl.col("time_ns").fill_null(0.0),
        pl.col("share").fill_null(0.0))
    return out.select("run", "kernels", "count", "time_ns", "share", "total_ns").sort("run")


def uncategorized_share(model: Model, view: View = EVERYTHING) -> pl.DataFrame:
    """run, share of time in kernels no category rule matched."""
    share = kernel_share(model, view)
    return share.group_by("run", maintain_order=True).agg(
        pl.col("share").filter(pl.col("category") == OTHER).sum().alias("share")).sort("run")


def pattern_share(model: Model, patterns: dict[str, str],
                  view: View = EVERYTHING) -> pl.DataFrame:
    """run, label, time_ns, share for kernels whose name matches each pattern (Rust regex),
    e.g. {"ncclBroadcast": "ncclBroadcast", "winograd": "(?i)winograd"}; 0 when none matches."""
    rows = _rows(model, view)
    totals = rows.group_by("run").agg(pl.col("run_total_ns").first().alias("total"))
    parts = []
    for label, pattern in patterns.items():
        hit = rows.filter(pl.col("name").str.contains(pattern)).group_by("run").agg(pl.col("time_ns").sum())
        parts.append(totals.join(hit, on="run", how="left").select(
            "run", pl.lit(label).alias("label"), pl.col("time_ns").fill_null(0.0),
            (pl.col("time_ns").fill_null(0.0) / pl.col("total")).alias("share")))
    if not parts:
        return pl.DataFrame(schema={"run": pl.String, "label": pl.String, "time_ns": pl.Float64, "share": pl.Float64})
    return pl.concat(parts).sort("run", "label")


SWEEP_COLUMNS = ["series", "param", "model", "gpu", "config", "x", "x_label", "x_order"]


def _sweep(model: Model, values: pl.DataFrame, key: str, by: str) -> pl.DataFrame:
    """values (run, key, share) along the sweeps of parameter `by` (`sweeps.series_of`: one
    model, one GPU, every other parameter fixed), every `key` of a series at every point
    (zero-filled), the runs of one point averaged; sorted on x."""
    runs = model.tables.get("runs")
    schema = {**{c: t for c, t in sweeps.SERIES_COLUMNS.items() if c != "run"}, key: pl.String,
              "share": pl.Float64, "runs": pl.Int64}
    if runs is None or not runs.height:
        return pl.DataFrame(schema=schema)
    series = sweeps.series_of(runs.join(values.select("run").unique(), on="run", how="semi"))
    series = series.filter((pl.col("param") == by) & (pl.col("x_label").n_unique().over("series") > 1))
    if not series.height:
        return pl.DataFrame(schema=schema)
    keys = values.join(series.select("run"), on="run", how="semi").select(key).unique()
    grid = series.join(keys, how="cross")
    filled = grid.join(values, on=["run", key], how="left").with_columns(pl.col("share").fill_null(0.0))
    out = filled.group_by(*SWEEP_COLUMNS, key).agg(pl.col("share").mean(), pl.len().alias("runs"))
    return out.select(list(schema)).sort(["series", key, "x_order"])


def sweep_share(model: Model, by: str = "batch_size",
                categories: list[str] | None = None, view: View = EVERYTHING) -> pl.DataFrame:
    """series, param, model, gpu, config, x, x_label, x_order, category, share, runs: every
    kernel category along each sweep of `by` (batch size by default; any parameter of
    `runs.params`). `categories` keeps only those."""
    share = kernel_share(model, view).select("run", "category", "share")
    if categories is not None:
        share = share.filter(pl.col("category").is_in(categories))
    return _sweep(model, share, "category", by)


def sweep_pattern_share(model: Model, patterns: dict[str, str],
                        by: str = "batch_size", view: View = EVERYTHING) -> pl.DataFrame:
    """Like sweep_share for kernel-name patterns (e.g. ncclBroadcast, winograd vs batch size)."""
    return _sweep(model, pattern_share(model, patterns, view).select("run", "label", "share"), "label", by)


SWING_COLUMNS = {"gpu": pl.String, "label": pl.String, "model": pl.String, "config": pl.String, "param": pl.String,
                 "first_label": pl.String, "first_share": pl.Float64, "last_label": pl.String,
                 "last_share": pl.Float64, "swing": pl.Float64}


def pattern_swings(pattern_sweeps: pl.DataFrame, per_gpu: int = 2, least_peak: float = 0.05) -> pl.DataFrame:
    """Per GPU, the `per_gpu` kernel families (`sweep_pattern_share`) whose share moves most
    along a sweep, each at its sweep's ends: the families reaching `least_peak` somewhere."""
    if not pattern_sweeps.height:
        return pl.DataFrame(schema=SWING_COLUMNS)
    ends = pattern_sweeps.sort("x_order").group_by("series", "label", maintain_order=True).agg(
        pl.col("gpu", "model", "config", "param").first(), pl.col("x_label").first().alias("first_label"),
        pl.col("share").first().alias("first_share"), pl.col("x_label").last().alias("last_label"),
        pl.col("share").last().alias("last_share"), pl.col("share").max().alias("peak"))
    swings = ends.filter(pl.col("peak") >= least_peak).with_columns(
        (pl.col("last_share") - pl.col("first_share")).abs().alias("swing"))
    biggest = swings.sort("swing", descending=True).group_by("gpu", "label", maintain_order=True).first()
    out = biggest.group_by("gpu", maintain_order=True).head(per_gpu)
    return out.select([pl.col(c).cast(t) for c, t in SWING_COLUMNS.items()])
