"""`roofreport compare A B`: what changed between two runs, per category and per kernel.

The anchors are HolisticTraceAnalysis's TraceDiff (control and test traces; per operator and
kernel their counts and durations, the differences, and which were added, deleted, increased or
decreased), Nsight Compute's baselines and the `nsys stats` multi-report recipes. Here A is the
baseline and B the run compared with it: `delta_ns` = B - A, `speedup` = A / B (above 1: B is
faster).

* Sides: each side is a Dataset's model (`roofreport.model`) and the runs chosen on it (globs over run ids and
  labels, `view.View`; none: every run). Two folders, two datasets, or two sets of runs of one.
* Pairs, like for like: one run on each side pair up; otherwise runs pair by workload
  (`workloads.py`: model and configuration, never paths; the parameters that vary across both
  sides' runs, `_keyed_together`), and a workload with more than one run
  on a side, or none on the other, stays unpaired with the reason. A pair whose GPUs differ and
  whose workloads differ too is not like for like: it is compared, with a note saying so.
* Times: each run's rows of its one time source (`Model.time_rows`, the rows of the runs
  table's `kernel_time_ns`): per category, the category deltas sum to the delta of the totals
  (kernels apart from memcpy/memset transfers, as the run totals count them).
* Per iteration, as `build` compares (`speedup.comparable_times`): when both runs' logs count
  their iterations, every time of a pair (totals, categories, kernels, so their faster/slower
  labels too) is divided by its run's iterations (`basis` "time per iteration"; launch counts
  stay whole-run); otherwise whole runs are compared, and a pair whose iteration counts only one
  side gives says so in its `note`.
* Kernels on one architecture family (`gpu_family`: the GPU database's family of each run's
  `gpu_model`): matched by normalised name (the short name; transfers by kind and direction,
  which the tools spell differently). When a name stands for several kernels on a side
  (template arguments: `vectorized_elementwise_kernel` of seven functors), the launch
  configuration (grid and block) tells them apart where both sides log it. A kernel on one
  side only is `added` (B only) or `removed` (A only).
* Kernels across families (V100 against A100): libraries pick other kernels (`volta_sgemm_*`
  against `ampere_sgemm_*`), so the kernels whose names match are matched by name and the rest
  are pooled per category ("gemm kernels"). (Not by launching operator yet: the kernels table
  does not hold the aten operator that launched a kernel, and `region` mixes real launching
  ranges with phases guessed from kernel names, which differ between libraries.)
* A kernel's `category` is the one its time is counted in; `category_label` says it as the
  report's tables do (`share.category_label`: "conv (via GEMM)" where what launched the kernel
  and its name disagree; a pool's label is its category).
* FLOP/s and intensity: per run from the run totals, per kernel from its counted FLOPs and
  DRAM bytes (`Model.points`), given only where both sides have them and neither
  misses tensor-core work (`flops_complete`): otherwise they would not compare.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace

import polars as pl

from roofreport import gpu
from roofreport.analysis import reasons, runsets, share, speedup, workloads
from roofreport.analysis.view import View
from roofreport.errors import UsageError
from roofreport.model import Model
from roofreport.model.totals import TRANSFERS
from roofreport.tables import schema

MATCH_NAME, MATCH_LAUNCH, MATCH_CATEGORY = "name", "name+launch", "category"
SAME_WITHIN = 0.01   # |B - A| within 1 % of A: "same" (HTA's "unchanged")

PAIR_COLUMNS = {
    "pair": pl.String, "run_a": pl.String, "run_b": pl.String, "label_a": pl.String, "label_b": pl.String,
    "gpu_a": pl.String, "gpu_b": pl.String, "family_a": pl.String, "family_b": pl.String,
    "matching": pl.String, "like_for_like": pl.Boolean, "basis": pl.String, "iterations_a": pl.Int64,
    "iterations_b": pl.Int64, "time_source_a": pl.String, "time_source_b": pl.String,
    "flops_per_s_a": pl.Float64, "flops_per_s_b": pl.Float64, "ai_a": pl.Float64, "ai_b": pl.Float64,
    "note": pl.String,
}
UNPAIRED_COLUMNS = {"side": pl.String, "run": pl.String, "label": pl.String, "reason": pl.String}
_TIMES = {"count_a": pl.Int64, "count_b": pl.Int64, "time_a_ns": pl.Float64, "time_b_ns": pl.Float64,
          "delta_ns": pl.Float64, "speedup": pl.Float64}
TOTAL_COLUMNS = {"pair": pl.String, "what": pl.String, **_TIMES}
CATEGORY_COLUMNS = {"pair": pl.String, "category": pl.String, **_TIMES, "share_a": pl.Float64,
                    "share_b": pl.Float64}
KERNEL_COLUMNS = {
    "pair": pl.String, "kernel": pl.String, "match": pl.String, "category": pl.String,
    "category_label": pl.String, "change": pl.String,
    **_TIMES, "kernels_a": pl.Int64, "kernels_b": pl.Int64, "name_a": pl.String, "name_b": pl.String,
    "flops_per_s_a": pl.Float64, "flops_per_s_b": pl.Float64, "ai_a": pl.Float64, "ai_b": pl.Float64,
}
TOTALS = ("kernels", "transfers", "GPU time")


@dataclass(frozen=True)
class Comparison:
    """The frames of a comparison (module docstring): `pairs` (which run of A is compared with
    which of B, and how), `unpaired`, `totals`, `categories` and `kernels` (one row per matched
    kernel or pool, biggest change first), each keyed by `pair`."""

    pairs: pl.DataFrame
    unpaired: pl.DataFrame
    totals: pl.DataFrame
    categories: pl.DataFrame
    kernels: pl.DataFrame

    def frames(self, top: int | None = None) -> dict[str, pl.DataFrame]:
        """The frames by name, in the order they are printed; `top`: kernel rows per pair."""
        kernels = self.kernels if top is None else self.kernels.group_by("pair", maintain_order=True).head(top)
        return {"pairs": self.pairs, "unpaired": self.unpaired, "totals": self.totals,
                "categories": self.categories, "kernels": kernels}


def gpu_family(run: Mapping, db: gpu.GpuDatabase) -> str | None:
    """A run's architecture family ("volta", "ampere", "cdna3"...): the runs table's
    `gpu_family`, else the GPU database's family of its `gpu_model` (a runs table written before
    that column): the one place a comparison asks which architecture a run ran on."""
    if run.get("gpu_family"):
        return run["gpu_family"]
    spec = db.get(run["gpu_model"]) if run.get("gpu_model") else None
    return spec.family if spec else None


def compare(baseline: Model, other: Model, *, runs_a: View | None = None, runs_b: View | None = None,
            db: gpu.GpuDatabase | None = None) -> Comparison:
    """Compare the runs of `baseline` (A) with those of `other` (B): the models of two Datasets
    (or one Dataset's twice), whose tables hold the run totals; `runs_a`/`runs_b` choose the runs
    on each side; `db`: the GPU database of the architecture families (`other`'s by default)."""
    db = db or other.db
    sides = _keyed_together([_Side.of("A", baseline, runs_a), _Side.of("B", other, runs_b)])
    pairs, unpaired = _pairs(*sides)
    if not pairs:
        raise UsageError("nothing to compare: " + "; ".join(u["reason"] for u in unpaired[:4])
                         + " (choose the runs with --run-a and --run-b)")
    pair_rows, totals, categories, kernels = [], [], [], []
    for run_a, run_b in pairs:
        pair = _Pair(sides[0], run_a, sides[1], run_b, db)
        pair_rows.append(pair.row())
        totals.append(pair.totals())
        categories.append(pair.categories())
        kernels.append(pair.kernels())
    return Comparison(pairs=pl.DataFrame(pair_rows, schema=PAIR_COLUMNS),
                      unpaired=pl.DataFrame(unpaired, schema=UNPAIRED_COLUMNS),
                      totals=pl.concat(totals), categories=pl.concat(categories), kernels=pl.concat(kernels))


# -- sides and pairs -------------------------------------------------------------------------

@dataclass(frozen=True)
class _Side:
    name: str
    model: Model
    runs: pl.DataFrame       # the runs chosen, with their workload (`config_key`)
    rows: pl.DataFrame       # their time rows, transfers with one name per kind and direction
    work: pl.DataFrame       # their counted kernels with FLOPs, with real time where known

    @classmethod
    def of(cls, name: str, model: Model, view: View | None) -> _Side:
        body = runsets.body_tables(model.tables)
        runs = model.runs().join(body["runs"].select("run"), on="run", how="semi")
        if view is not None and view.runs:
            try:
                body = view.keep_runs(body)
            except UsageError as exc:
                raise UsageError(f"side {name}: {exc}".replace("--run ", f"--run-{name.lower()} ")) from None
            runs = body["runs"]
        if not runs.height:
            raise UsageError(f"side {name} holds no run")
        runs = schema.conform("runs", runs)
        work = workloads.workloads(runs).select("run", "config_key")
        model = model.keep_runs(runs["run"].to_list(), body)
        rows = model.time_rows.with_columns(_normalised().alias("norm"))
        points = model.points
        if points.height:
            points = points.with_columns(_normalised().alias("norm"))
        return cls(name=name, model=model, runs=runs.join(work, on="run", how="left"), rows=rows, work=points)

    def run(self, run: str) -> dict:
        return self.runs.filter(pl.col("run") == run).row(0, named=True)


def _keyed_together(sides: list[_Side]) -> list[_Side]:
    """The sides with workload keys over the parameters that tell runs of either side apart.

    A side's `params` hold what varies across its own runs: a folder of batch 64 runs only has
    none, and would never pair with the batch 64 runs of a folder that also holds batch 256.
    Here a parameter counts where it takes two values or more across both sides' runs (a value
    one side does not know is no value), from each run's `all_params`."""
    if any("all_params" not in side.runs.columns for side in sides):
        return sides
    known = [json.loads(text or "{}") for side in sides for text in side.runs["all_params"]]
    values: dict[str, set[str]] = {}
    for params in known:
        for key, value in params.items():
            if value is not None:
                values.setdefault(key, set()).add(json.dumps(value, sort_keys=True, default=str))
    telling = {key for key, seen in values.items() if len(seen) > 1}
    out = []
    for side in sides:
        params = [json.dumps({k: v for k, v in json.loads(text or "{}").items() if k in telling and v is not None},
                             sort_keys=True, default=str) for text in side.runs["all_params"]]
        runs = side.runs.drop("config_key").with_columns(pl.Series("params", params, dtype=pl.String))
        keys = workloads.workloads(runs).select("run", "config_key")
        out.append(replace(side, runs=side.runs.drop("config_key").join(keys, on="run", how="left")))
    return out


def _pairs(side_a: _Side, side_b: _Side) -> tuple[list[tuple[str, str]], list[dict]]:
    """(run of A, run of B) pairs, and the runs left unpaired with the reason."""
    if side_a.runs.height == 1 and side_b.runs.height == 1:
        return [(side_a.runs["run"][0], side_b.runs["run"][0])], []
    pairs, unpaired = [], []
    if _ranked(side_a.runs) and _ranked(side_b.runs):   # one job on each side: as one run on each
        _pair_ranks({"A": side_a.runs, "B": side_b.runs}, pairs, unpaired)
        return pairs, unpaired
    keys = list(dict.fromkeys(side_a.runs["config_key"].to_list() + side_b.runs["config_key"].to_list()))
    for key in keys:
        mine = {side.name: side.runs.filter(pl.col("config_key") == key) for side in (side_a, side_b)}
        if mine["A"].height == 1 and mine["B"].height == 1:
            pairs.append((mine["A"]["run"][0], mine["B"]["run"][0]))
            continue
        if _ranked(mine["A"]) and _ranked(mine["B"]):   # two jobs' ranks: rank N of A with rank N of B
            _pair_ranks(mine, pairs, unpaired)
            continue
        for side, other in (("A", "B"), ("B", "A")):
            for row in mine[side].iter_rows(named=True):
                reason = (f"{row['label']} ({row['run']}): no run of {other} has its workload"
                          if not mine[other].height else
                          f"{row['label']} ({row['run']}): {mine[side].height} runs of {side} and "
                          f"{mine[other].height} of {other} have this workload")
                unpaired.append({"side": side, "run": row["run"], "label": row["label"], "reason": reason})
    return pairs, unpaired


def _pair_ranks(mine: dict[str, pl.DataFrame], pairs: list, unpaired: list) -> None:
    """Rank N of A's job with rank N of B's; a rank one job lacks is unpaired, saying so."""
    ranks = {side: dict(zip(mine[side]["rank"].to_list(), mine[side].iter_rows(named=True))) for side in mine}
    pairs += [(ranks["A"][n]["run"], ranks["B"][n]["run"]) for n in sorted(ranks["A"]) if n in ranks["B"]]
    unpaired += [{"side": side, "run": row["run"], "label": row["label"],
                  "reason": f"{row['label']} ({row['run']}): the job of {other} has no rank {n}"}
                 for side, other in (("A", "B"), ("B", "A"))
                 for n, row in sorted(ranks[side].items()) if n not in ranks[other]]


def _ranked(runs: pl.DataFrame) -> bool:
    """The runs are ranks of one distributed job, each rank once (`runs.distributed_job`)."""
    if "rank" not in runs.columns or "distributed_job" not in runs.columns or runs.height < 2:
        return False
    return runs["rank"].null_count() == 0 and runs["rank"].n_unique() == runs.height \
        and runs["distributed_job"].null_count() == 0 and runs["distributed_job"].n_unique() == 1


# -- one pair --------------------------------------------------------------------------------

class _Pair:
    """One run of A against one run of B."""

    def __init__(self, side_a: _Side, run_a: str, side_b: _Side, run_b: str, db: gpu.GpuDatabase):
        self.a, self.b = side_a.run(run_a), side_b.run(run_b)
        self.rows_a = side_a.rows.filter(pl.col("run") == run_a)
        self.rows_b = side_b.rows.filter(pl.col("run") == run_b)
        self.work_a = side_a.work.filter(pl.col("run") == run_a) if side_a.work.height else side_a.work
        self.work_b = side_b.work.filter(pl.col("run") == run_b) if side_b.work.height else side_b.work
        self.basis, self.per_iteration_note = _basis(self.a, self.b)
        if self.basis == speedup.PER_ITERATION:
            self.rows_a = _per_iteration(self.rows_a, self.a["iterations"])
            self.rows_b = _per_iteration(self.rows_b, self.b["iterations"])
        # kernel time summed over several GPUs: per GPU where both counts are known and differ,
        # a GPU-time ratio where they cannot be (`speedup._per_gpu`, as build compares)
        gpus_a, gpus_b = _gpus(self.rows_a, side_a.runs, run_a), _gpus(self.rows_b, side_b.runs, run_b)
        self.basis, _, self.measure = speedup._per_gpu(self.basis, (1.0, 1.0), gpus_a, gpus_b)
        if self.basis.endswith(speedup.PER_GPU):
            self.rows_a = _per_iteration(self.rows_a, gpus_a["gpus"])
            self.rows_b = _per_iteration(self.rows_b, gpus_b["gpus"])
        self.gpus_a, self.gpus_b = gpus_a, gpus_b
        self.family_a, self.family_b = gpu_family(self.a, db), gpu_family(self.b, db)
        self.by_name = self.family_a == self.family_b or None in (self.family_a, self.family_b)
        self.name = f"{self.a['label'] or run_a} vs {self.b['label'] or run_b}"

    def row(self) -> dict:
        first, second = self.a, self.b
        same_gpu = _same(first.get("gpu_model") or first.get("gpu_label"),
                         second.get("gpu_model") or second.get("gpu_label"))
        same_work = first.get("config_key") == second.get("config_key")
        comparable = _complete_work(first) and _complete_work(second)
        return {
            "pair": self.name, "run_a": first["run"], "run_b": second["run"],
            "label_a": first["label"], "label_b": second["label"],
            "gpu_a": first.get("gpu_label") or first.get("gpu"),
            "gpu_b": second.get("gpu_label") or second.get("gpu"),
            "family_a": self.family_a, "family_b": self.family_b,
            "matching": "kernels by name" if self.by_name else "kernels by name, the rest by category",
            "like_for_like": bool(same_gpu or same_work), "basis": self.basis,
            "iterations_a": first.get("iterations"), "iterations_b": second.get("iterations"),
            "time_source_a": first.get("time_source"), "time_source_b": second.get("time_source"),
            "flops_per_s_a": first.get("achieved_flops_per_s") if comparable else None,
            "flops_per_s_b": second.get("achieved_flops_per_s") if comparable else None,
            "ai_a": first.get("arithmetic_intensity") if comparable else None,
            "ai_b": second.get("arithmetic_intensity") if comparable else None,
            "note": "; ".join(self._notes(same_gpu, same_work, comparable)) or None,
        }

    def _notes(self, same_gpu: bool | None, same_work: bool, comparable: bool) -> list[str]:
        first, second = self.a, self.b
        notes = [self.per_iteration_note] if self.per_iteration_note else []
        if self.basis.endswith(speedup.PER_GPU):
            notes.append(f"kernel times per GPU: each side's sum divided by its GPUs (A: {self.gpus_a['gpus']}, "
                         f"B: {self.gpus_b['gpus']}), as build compares them")
        elif self.measure == speedup.GPU_TIME_RATIO:
            several = "A" if self.gpus_a.get("multi_gpu") else "B"
            notes.append(f"{several}'s kernel time is summed over several GPUs and the other's GPU count is not "
                         "known: the totals are a ratio of GPU time, not a speedup")
        if not same_gpu and not same_work:
            notes.append(f"not like for like: other GPUs ({first.get('gpu_label') or 'unknown'} and "
                         f"{second.get('gpu_label') or 'unknown'}) and other workloads ({first['label']} "
                         f"and {second['label']})")
        for side, run, family in (("A", first, self.family_a), ("B", second, self.family_b)):
            if not run.get("time_source"):
                notes.append(f"no kernel time in {side} ({speedup.no_kernels_reason(run)})")
            if run.get("cut_short"):
                notes.append(f"{side} was cut short ({run.get('cut_short_reason')}): its times cover only "
                             "the part that ran")
            if family is None and self.by_name:
                notes.append(f"the architecture of {side}'s GPU is unknown: kernels matched by name")
        if not comparable and (first.get("flops") or second.get("flops")):
            why = [f"{side} has no FLOP count" if not run.get("flops") else f"{side}'s FLOPs miss tensor-core work"
                   for side, run in (("A", first), ("B", second)) if not _complete_work(run)]
            notes.append(f"FLOP/s and intensity not compared: {' and '.join(why)}")
        return notes

    # -- frames

    def totals(self) -> pl.DataFrame:
        moved = pl.col("category").fill_null("").is_in(TRANSFERS)
        rows = []
        for what, keep in zip(TOTALS, (~moved, moved, pl.lit(True))):
            rows.append({"what": what, **_times(self.rows_a.filter(keep), self.rows_b.filter(keep))})
        elapsed = (self.a.get("elapsed_per_iteration_ns"), self.b.get("elapsed_per_iteration_ns"))
        if all(elapsed):       # the batch as the job ran, where both logs print it (`speedup.ELAPSED`)
            rows.append({"what": ELAPSED_TOTAL, "time_a_ns": elapsed[0], "time_b_ns": elapsed[1],
                         "delta_ns": elapsed[1] - elapsed[0], "speedup": elapsed[0] / elapsed[1]})
        return _frame(self.name, rows, TOTAL_COLUMNS)

    def categories(self) -> pl.DataFrame:
        side_a, side_b = (_by(rows, "category") for rows in (self.rows_a, self.rows_b))
        joined = side_a.join(side_b, on="category", how="full", coalesce=True, suffix="_b")
        total_a, total_b = self.rows_a["time_ns"].sum(), self.rows_b["time_ns"].sum()
        out = _compared(joined).with_columns(
            (pl.col("time_a_ns") / total_a if total_a else pl.lit(None, pl.Float64)).alias("share_a"),
            (pl.col("time_b_ns") / total_b if total_b else pl.lit(None, pl.Float64)).alias("share_b"))
        return _with_pair(self.name, out.sort(pl.col("delta_ns").abs(), "category", descending=[True, False]),
                          CATEGORY_COLUMNS)

    def kernels(self) -> pl.DataFrame:
        keys = _Keys.choose(self.rows_a, self.rows_b, by_name=self.by_name)
        side_a, side_b = (_by_kernel(keys.apply(rows)) for rows in (self.rows_a, self.rows_b))
        joined = side_a.join(side_b, on="kernel", how="full", coalesce=True, suffix="_b")
        out = _compared(joined).with_columns(
            pl.coalesce("match", "match_b").alias("match"),
            pl.coalesce("category", "category_b").alias("category"),
            pl.col("kernels").alias("kernels_a"), pl.col("name").alias("name_a"), pl.col("name_b"),
            _change().alias("change"))
        pooled = pl.col("match") == MATCH_CATEGORY     # a pool of kernels: its category alone
        by_name = pl.when(~pooled).then(pl.coalesce("category_by_name", "category_by_name_b"))
        out = out.with_columns(share.category_label("category", by_name).alias("category_label"))
        on_both = pl.col("time_a_ns").is_not_null() & pl.col("time_b_ns").is_not_null()
        out = out.join(_rates(keys, self.work_a, self.work_b), on="kernel", how="left").with_columns(
            [pl.when(on_both).then(pl.col(c)).alias(c) for c in ("flops_per_s_a", "flops_per_s_b", "ai_a", "ai_b")])
        return _with_pair(self.name, out.sort(pl.col("delta_ns").abs(), "kernel", descending=[True, False]),
                          KERNEL_COLUMNS)


def _basis(first: Mapping, second: Mapping) -> tuple[str, str | None]:
    """How a pair's times compare, as `build` compares them (`speedup.comparable_times`): per
    iteration when both runs count iterations, else whole runs; with the note that says so
    (why not per iteration when only one side counts them)."""
    iterations = [run.get("iterations") for run in (first, second)]
    if all(iterations):
        differ = iterations[0] != iterations[1]   # (the same count: per iteration changes no ratio)
        return speedup.PER_ITERATION, (f"times per iteration (A: {iterations[0]}, B: {iterations[1]} iterations), "
                                       "as build compares them") if differ else None
    if any(iterations):
        side, count = ("A", iterations[0]) if iterations[0] else ("B", iterations[1])
        other = "B" if side == "A" else "A"
        return speedup.WHOLE_RUN, (f"times of whole runs, not per iteration: {side}'s logs count {count} "
                                   f"iterations, {other}'s give no count")
    return speedup.WHOLE_RUN, None


ELAPSED_TOTAL = "elapsed per training batch"   # a totals row: the batch time the logs print, less data


def _gpus(rows: pl.DataFrame, runs: pl.DataFrame, run: str) -> dict:
    """gpus, multi_gpu of one run (`reasons.run_reasons`: the GPUs its kernel time is summed over)."""
    found = reasons.run_reasons(rows, runs.filter(pl.col("run") == run))
    return found.row(0, named=True) if found.height else {"gpus": None, "multi_gpu": None}


def _per_iteration(rows: pl.DataFrame, iterations: int) -> pl.DataFrame:
    return rows.with_columns(pl.col("time_ns") / iterations)


def _same(first, second) -> bool | None:
    return None if first is None or second is None else first == second


def _complete_work(run: Mapping) -> bool:
    return bool(run.get("flops")) and run.get("flops_complete") is not False


def _times(rows_a: pl.DataFrame, rows_b: pl.DataFrame) -> dict:
    time_a = rows_a["time_ns"].sum() if rows_a.height else None
    time_b = rows_b["time_ns"].sum() if rows_b.height else None
    return {"count_a": rows_a["count"].sum() if rows_a.height else None,
            "count_b": rows_b["count"].sum() if rows_b.height else None,
            "time_a_ns": time_a, "time_b_ns": time_b,
            "delta_ns": (time_b or 0.0) - (time_a or 0.0) if time_a is not None or time_b is not None else None,
            "speedup": time_a / time_b if time_a and time_b else None}


def _by(rows: pl.DataFrame, key: str) -> pl.DataFrame:
    return rows.group_by(key).agg(pl.col("count").sum(), pl.col("time_ns").sum())


def _compared(joined: pl.DataFrame) -> pl.DataFrame:
    """count/time of both sides (`x` and `x_b` after a join), the delta and the speedup."""
    time_a, time_b = pl.col("time_ns"), pl.col("time_ns_b")
    return joined.with_columns(
        pl.col("count").alias("count_a"), pl.col("count_b"), time_a.alias("time_a_ns"), time_b.alias("time_b_ns"),
        (time_b.fill_null(0.0) - time_a.fill_null(0.0)).alias("delta_ns"),
        pl.when((time_a > 0) & (time_b > 0)).then(time_a / time_b).alias("speedup"))


def _change() -> pl.Expr:
    """HTA's kinds of change: added (B only), removed (A only), slower, faster, same."""
    time_a, time_b, delta = pl.col("time_a_ns"), pl.col("time_b_ns"), pl.col("delta_ns")
    return (pl.when(time_a.is_null()).then(pl.lit("added"))
            .when(time_b.is_null()).then(pl.lit("removed"))
            .when(delta.abs() <= SAME_WITHIN * time_a).then(pl.lit("same"))
            .when(delta > 0).then(pl.lit("slower"))
            .otherwise(pl.lit("faster")))


def _frame(pair: str, rows: list[dict], columns: dict) -> pl.DataFrame:
    return pl.DataFrame([{"pair": pair, **row} for row in rows], schema=columns)


def _with_pair(pair: str, frame: pl.DataFrame, columns: dict) -> pl.DataFrame:
    out = frame.with_columns(pl.lit(pair).alias("pair"))
    return out.select([pl.col(c).cast(t) if c in out.columns else pl.lit(None, t).alias(c)
                       for c, t in columns.items()])


# -- matching kernels ------------------------------------------------------------------------

_DIRECTIONS = [("HtoD", r"(?i)HtoD|Host[ -]?to[ -]?Device"), ("DtoH", r"(?i)DtoH|Device[ -]?to[ -]?Host"),
               ("DtoD", r"(?i)DtoD|Device[ -]?to[ -]?Device"), ("PtoP", r"(?i)PtoP|Peer[ -]?to[ -]?Peer"),
               ("HtoH", r"(?i)HtoH|Host[ -]?to[ -]?Host")]


def _normalised() -> pl.Expr:
    """The name kernels are matched by: the short name with runs of spaces collapsed; a
    transfer by its kind and direction (`memcpy HtoD`: nsys writes `[CUDA memcpy HtoD]` or
    `[CUDA memcpy Host-to-Device]`, PyTorch `Memcpy HtoD (Pageable -> Device)`)."""
    name = pl.coalesce("short_name", "name").fill_null("").str.replace_all(r"\s+", " ").str.strip_chars()
    category = pl.col("category").fill_null("")
    direction = pl.lit(None, pl.String)
    for label, pattern in reversed(_DIRECTIONS):
        named = pl.col("name").fill_null("").str.contains(pattern)
        direction = pl.when(named).then(pl.lit(label)).otherwise(direction)
    transfer = pl.concat_str([category, direction], separator=" ", ignore_nulls=True)
    return pl.when(category.is_in(TRANSFERS)).then(transfer).otherwise(name)


@dataclass(frozen=True)
class _Keys:
    """How one pair's kernel rows get their matching key (`kernel`) and `match` (module
    docstring): `launch` the names refined by launch configuration; `pooled` (across
    architecture families) the name keys found on both sides: the others are pooled per category."""

    launch: frozenset[str]
    pooled: frozenset[str] | None = None

    @classmethod
    def choose(cls, rows_a: pl.DataFrame, rows_b: pl.DataFrame, by_name: bool) -> _Keys:
        launch = frozenset((cls._colliding(rows_a) | cls._colliding(rows_b))
                           - cls._unlaunched(rows_a) - cls._unlaunched(rows_b))
        if by_name:
            return cls(launch)
        named_a, named_b = (set(cls(launch)._name_key(rows)["kernel"].to_list()) for rows in (rows_a, rows_b))
        return cls(launch, frozenset(named_a & named_b))

    @staticmethod
    def _colliding(rows: pl.DataFrame) -> set[str]:
        """Normalised names that stand for several kernels (full names) on one side."""
        if not rows.height:
            return set()
        counts = rows.group_by("norm").agg(pl.col("name").n_unique().alias("names"))
        return set(counts.filter(pl.col("names") > 1)["norm"].to_list())

    @staticmethod
    def _unlaunched(rows: pl.DataFrame) -> set[str]:
        """Names with a row that logs no launch configuration (summaries): never refined."""
        if not rows.height:
            return set()
        return set(rows.filter(pl.col("grid").is_null() | pl.col("block").is_null())["norm"].to_list())

    def _name_key(self, rows: pl.DataFrame) -> pl.DataFrame:
        refined = pl.col("norm").is_in(list(self.launch)) & pl.col("grid").is_not_null() \
            & pl.col("block").is_not_null()
        launch = pl.format("{} <<<{}, {}>>>", "norm", "grid", "block")
        return rows.with_columns(
            pl.when(refined).then(launch).otherwise(pl.col("norm")).alias("kernel"),
            pl.when(refined).then(pl.lit(MATCH_LAUNCH)).otherwise(pl.lit(MATCH_NAME)).alias("match"))

    def apply(self, rows: pl.DataFrame) -> pl.DataFrame:
        """`rows` (time rows or counted kernels, with `norm`) with `kernel` and `match`."""
        if not rows.height:
            return rows.with_columns(pl.lit(None, pl.String).alias("kernel"),
                                     pl.lit(None, pl.String).alias("match"))
        keyed = self._name_key(rows)
        if self.pooled is None:
            return keyed
        matched = pl.col("kernel").is_in(list(self.pooled))
        pool = pl.format("{} kernels", pl.col("category").fill_null("other"))
        return keyed.with_columns(
            pl.when(matched).then(pl.col("kernel")).otherwise(pool).alias("kernel"),
            pl.when(matched).then(pl.col("match")).otherwise(pl.lit(MATCH_CATEGORY)).alias("match"))


def _by_kernel(rows: pl.DataFrame) -> pl.DataFrame:
    """Per key: count, time, category, the largest kernel's name, how many kernels."""
    named = rows.with_columns(pl.coalesce("short_name", "name").alias("shown"))
    if "category_by_name" not in named.columns:
        named = named.with_columns(pl.lit(None, pl.String).alias("category_by_name"))
    return named.sort("time_ns", descending=True, nulls_last=True).group_by("kernel", maintain_order=True).agg(
        pl.col("match").first(), pl.col("category").first(), pl.col("category_by_name").first(),
        pl.col("count").sum(), pl.col("time_ns").sum(),
        pl.col("shown").first().alias("name"), pl.col("name").n_unique().cast(pl.Int64).alias("kernels"))


def _rates(keys: _Keys, work_a: pl.DataFrame, work_b: pl.DataFrame) -> pl.DataFrame:
    """kernel, flops_per_s_a/b, ai_a/b: where both sides counted the key's FLOPs completely."""
    sides = [_work(keys.apply(work)) for work in (work_a, work_b)]
    joined = sides[0].join(sides[1], on="kernel", how="inner", suffix="_b")
    both = pl.col("complete") & pl.col("complete_b")
    return joined.select(
        "kernel", pl.when(both).then(pl.col("flops_per_s")).alias("flops_per_s_a"),
        pl.when(both).then(pl.col("flops_per_s_b")).alias("flops_per_s_b"),
        pl.when(both).then(pl.col("ai")).alias("ai_a"), pl.when(both).then(pl.col("ai_b")).alias("ai_b"))


def _work(points: pl.DataFrame) -> pl.DataFrame:
    schema_out = {"kernel": pl.String, "flops_per_s": pl.Float64, "ai": pl.Float64, "complete": pl.Boolean}
    if not points.height:
        return pl.DataFrame(schema=schema_out)
    timed = pl.col("time_ns").is_not_null()
    out = points.group_by("kernel").agg(
        (pl.col("flops").filter(timed).sum() / pl.col("time_ns").filter(timed).sum() * 1e9).alias("flops_per_s"),
        pl.when(pl.col("dram_bytes").sum() > 0)
        .then(pl.col("flops").sum() / pl.col("dram_bytes").sum()).alias("ai"),
        pl.col("flops_complete").fill_null(True).all().alias("complete"))
    return out.select([pl.col(c).cast(t) for c, t in schema_out.items()])
