"""The derived kernel columns ingest fills once for everyone: counters, short name, category,
phase region, tensor-core flags.

`enrich_kernels(kernels, metrics)` is what `ingest._finish_kernels` calls, so `roofreport parse`
writes these columns and every analysis reads them:

* FLOPs, bytes, duration, clock and measured ceilings from the counters (`counters.py`), with
  architecture-specific rules decided by the family of the GPU each file ran on (the run's GPU,
  as `gpu/resolve.py` found it: `families` maps each file to it);
* `short_name` (`names.py`) and `category` (`categories.py`), kept when a parser set them; then
  a GEMM's category by what launched it (`categories.by_launch_context`: the operators its region
  or its `operator` path names, a Kineto trace's cpu_op ancestry, or its place between a
  convolution's transform kernels in a trace), the name's reading kept in
  `category_by_name` and the deciding evidence in `category_source`;
* `region`: when the log gave none, the forward/backward/optimizer phase the name tells;
* `tensor_active`: tensor counters above zero, or (when the log has no tensor counter) a kernel
  name that is a tensor-core kernel;
* `flops_complete`: false when tensor-core work ran but no counter measured it (the FLOPs are a
  lower bound), true when the FLOPs counted are all of it, null when nothing was counted.

`with_families` works the family-dependent columns (`counters.FAMILY_COLUMNS`) out again for
files whose GPU family changed after ingest (`analyze(data, gpu=...)`).
"""

from __future__ import annotations

import polars as pl

from roofreport.enrich.categories import Rule, by_launch_context, categorize
from roofreport.enrich.counters import FAMILY_COLUMNS, fill_kernel_counters
from roofreport.enrich.names import phase_of, short_names
from roofreport.enrich.tensor import names_look_tensor
from roofreport.tables.frames import per_distinct

FLOP_COLUMNS = ["flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor"]


def enrich_kernels(kernels: pl.DataFrame, metrics: pl.DataFrame, families: dict[str, str] | None = None,
                   rules: list[Rule] | None = None, activities: pl.DataFrame | None = None) -> pl.DataFrame:
    """kernels with every derived column filled (see the module docstring); `families`: each
    file's GPU family, where known; `activities`: the traces' start times (launch order)."""
    if not kernels.height:
        return kernels
    kernels = fill_kernel_counters(kernels, metrics, families or {})
    return by_launch_context(with_name_facts(kernels, rules), activities)


def with_families(kernels: pl.DataFrame, metrics: pl.DataFrame, families: dict[str, str | None]) -> pl.DataFrame:
    """`kernels` with the columns that depend on the GPU family worked out again for the files
    of `families` (source_file -> its new family): what ingest gives when it knows that family.
    The other files' rows are left as they are."""
    files = list(families)
    if not kernels.height or not files:
        return kernels
    again = pl.col("source_file").is_in(files)
    cleared = kernels.with_row_index("__row").with_columns(
        [pl.when(again).then(None).otherwise(pl.col(column)).alias(column) for column in FAMILY_COLUMNS])
    known = {source: family for source, family in families.items() if family}
    refilled = with_tensor_flags(fill_kernel_counters(cleared.filter(again), metrics.filter(again), known))
    return pl.concat([cleared.filter(~again), refilled]).sort("__row").drop("__row")


def name_facts(names: pl.Series, rules: list[Rule] | None = None) -> pl.DataFrame:
    """What a kernel name alone tells, one row per name: short name, category, phase, and
    whether it names a tensor-core kernel."""
    return pl.DataFrame({
        "__short": short_names(names),
        "__category": categorize(names, rules),
        "__phase": phase_of(names),
        "__tensor_name": pl.select(names_look_tensor(pl.lit(names.cast(pl.String)))).to_series(),
    })


def with_name_facts(kernels: pl.DataFrame, rules: list[Rule] | None = None) -> pl.DataFrame:
    """short_name, category (kept where a parser set them), phase region (where the log gave
    none) and tensor flags. A trace names a few dozen kernels a million times: the facts are
    worked out once per distinct name and gathered back to the rows (`frames.per_distinct`)."""
    facts = per_distinct(kernels["name"], lambda names: name_facts(names, rules))
    kernels = kernels.with_columns(_kept_or(kernels, "short_name", facts["__short"]),
                                   _kept_or(kernels, "category", facts["__category"]),
                                   _kept_or(kernels, "region", facts["__phase"]))
    return with_tensor_flags(kernels, facts["__tensor_name"].fill_null(False))


def _kept_or(kernels: pl.DataFrame, column: str, derived: pl.Series) -> pl.Expr:
    """`column` where the log set it, else `derived`. A column the log left empty (every
    trace) takes the gathered values themselves: coalescing would copy a million views."""
    if kernels[column].null_count() == kernels.height:
        return pl.lit(derived).alias(column)
    return pl.coalesce(pl.col(column), derived).alias(column)


def with_phase_regions(kernels: pl.DataFrame) -> pl.DataFrame:
    phases = phase_of(kernels["name"])
    return kernels.with_columns(pl.coalesce(pl.col("region"), phases).alias("region"))


def with_tensor_flags(kernels: pl.DataFrame, by_name: pl.Series | None = None) -> pl.DataFrame:
    """tensor_active from counters (when any) else from the name; flops_complete from both.
    `by_name`: whether each row's name is a tensor-core kernel's (worked out here if None)."""
    by_name = names_look_tensor(pl.col("name")) if by_name is None else pl.lit(by_name)
    active = pl.coalesce(pl.col("tensor_active"), by_name)
    counted = pl.any_horizontal([pl.col(c).is_not_null() for c in FLOP_COLUMNS])
    # Tensor work is "missing from the counters" when something was counted, or tensor counters
    # themselves showed the work; a bare trace counted nothing and stays unknown.
    measured = counted | pl.col("tensor_active").is_not_null()
    complete = (pl.when(active & pl.col("flops_tensor").is_null() & measured).then(False)
                .when(counted).then(True))
    return kernels.with_columns(pl.coalesce(pl.col("flops_complete"), complete).alias("flops_complete"),
                                active.alias("tensor_active"))
