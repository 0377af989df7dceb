"""The derived kernel columns ingest fills once for everyone: counters, short name, category,
phase region, tensor-core flags.

`enrich_kernels(kernels, metrics)` is what `ingest._finish_kernels` calls, so `roofreport parse`
writes these columns and every analysis reads them:

* FLOPs, bytes, duration, clock and measured ceilings from the counters (`counters.py`), with
  architecture-specific rules decided by the GPU each file ran on (`file_gpus`);
* `short_name` (`names.py`) and `category` (`categories.py`), kept when a parser set them;
* `region`: when the log gave none, the forward/backward/optimizer phase the name tells;
* `tensor_active`: tensor counters above zero, or (when the log has no tensor counter) a kernel
  name that is a tensor-core kernel;
* `flops_complete`: false when tensor-core work ran but no counter measured it (the FLOPs are a
  lower bound), true when the FLOPs counted are all of it, null when nothing was counted.
"""

from __future__ import annotations

import re
from pathlib import PurePath

import polars as pl

from roofreport import hardware
from roofreport.enrich.categories import Rule, categorize
from roofreport.enrich.counters import fill_kernel_counters
from roofreport.enrich.names import phase_of, short_names
from roofreport.enrich.tensor import names_look_tensor
from roofreport.tables.frames import distinct_rows, per_distinct

FLOP_COLUMNS = ["flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor"]
_CC_FAMILY = [(r"^3\.", "kepler"), (r"^5\.", "maxwell"), (r"^6\.", "pascal"), (r"^7\.[02]$", "volta"),
              (r"^7\.5$", "turing"), (r"^8\.9$", "ada"), (r"^8\.", "ampere"), (r"^9\.", "hopper"),
              (r"^1[0-2]\.", "blackwell")]
_PATH_DEPTH = 4  # path components (file name and parents) searched for a GPU token


def family_of_cc(cc: str | None) -> str | None:
    """GPU family from a compute capability string ("7.0" -> "volta")."""
    if not cc:
        return None
    return next((fam for pattern, fam in _CC_FAMILY if re.match(pattern, str(cc).strip())), None)


def enrich_kernels(kernels: pl.DataFrame, metrics: pl.DataFrame, families: dict[str, str] | None = None,
                   rules: list[Rule] | None = None) -> pl.DataFrame:
    """kernels with every derived column filled (see the module docstring)."""
    if not kernels.height:
        return kernels
    if families is None:
        families = file_families(kernels, metrics)
    kernels = fill_kernel_counters(kernels, metrics, families)
    return with_name_facts(kernels, rules)


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


# -- which GPU each file ran on --------------------------------------------------------------

def file_gpus(kernels: pl.DataFrame, metrics: pl.DataFrame,
              db: hardware.GpuDatabase | None = None) -> pl.DataFrame:
    """source_file, run, gpu_model, family: from device names in the logs, then the compute
    capability, then other files of the same run, then GPU tokens in the file's path."""
    return resolve_gpus(distinct_rows(kernels, ["source_file", "run"]), gpu_facts(kernels, metrics), db)


def gpu_facts(kernels: pl.DataFrame, metrics: pl.DataFrame) -> dict[str, tuple[list[str], str | None]]:
    """source_file -> (the device names its rows give, in order; the GPU family of the compute
    capability it logged) for every file with kernels: what `resolve_gpus` needs of its rows.
    A file's facts depend on its own rows only, so they can be kept per file."""
    named = _device_names(kernels, metrics)
    ccs = _cc_families(metrics)
    files = distinct_rows(kernels, ["source_file"])["source_file"].to_list()
    return {source_file: (named.get(source_file, []), ccs.get(source_file)) for source_file in files}


def resolve_gpus(files: pl.DataFrame, facts: dict[str, tuple[list[str], str | None]],
                 db: hardware.GpuDatabase | None = None) -> pl.DataFrame:
    """`file_gpus` from each file's `gpu_facts` and the (source_file, run) pairs of the kernel
    rows, in row order (a run's files lend each other their GPU in that order)."""
    db = db or hardware.load_database()
    rows = []
    for source_file, run in files.select("source_file", "run").iter_rows():
        names, cc_family = facts.get(source_file, ([], None))
        spec = _first_match(db, names)
        family = spec.family if spec else cc_family
        rows.append({"source_file": source_file, "run": run, "gpu_model": spec.key if spec else None,
                     "family": family})
    out = pl.DataFrame(rows, schema={"source_file": pl.String, "run": pl.String,
                                     "gpu_model": pl.String, "family": pl.String})
    return _fill_from_run_and_path(out, db)


def file_families(kernels: pl.DataFrame, metrics: pl.DataFrame) -> dict[str, str]:
    return families_of(file_gpus(kernels, metrics))


def families_of(gpus: pl.DataFrame) -> dict[str, str]:
    """source_file -> GPU family, from `file_gpus` / `resolve_gpus`."""
    gpus = gpus.drop_nulls("family")
    return dict(zip(gpus["source_file"].to_list(), gpus["family"].to_list()))


def _device_names(kernels: pl.DataFrame, metrics: pl.DataFrame) -> dict[str, list[str]]:
    parts = [distinct_rows(kernels, ["source_file", "device"]).rename({"device": "device_name"})]
    if metrics.height:
        parts.append(distinct_rows(metrics, ["source_file", "device"]).rename({"device": "device_name"}))
        parts.append(metrics.filter(pl.col("metric") == "device__attribute_display_name")
                     .select("source_file", pl.col("value_text").alias("device_name")))
    names = pl.concat(parts).drop_nulls().unique(maintain_order=True)
    out: dict[str, list[str]] = {}
    for source_file, name in names.iter_rows():
        out.setdefault(source_file, []).append(name)
    return out


def _first_match(db: hardware.GpuDatabase, names: list[str]) -> hardware.GpuSpec | None:
    for name in names:
        if re.fullmatch(r"\s*\d+\s*", name):  # a bare device index says nothing
            continue
        spec = db.match(name)
        if spec is not None:
            return spec
    return None


def _cc_families(metrics: pl.DataFrame) -> dict[str, str]:
    """source_file -> family from the compute capability a raw ncu page logs."""
    if not metrics.height:
        return {}
    names = ["device__attribute_compute_capability_major", "device__attribute_compute_capability_minor"]
    cc = metrics.filter(pl.col("metric").is_in(names)).group_by("source_file").agg(
        [pl.col("value").filter(pl.col("metric") == n).first().alias(n) for n in names])
    out = {}
    for source_file, major, minor in cc.iter_rows():
        family = family_of_cc(f"{int(major)}.{int(minor or 0)}") if major is not None else None
        if family:
            out[source_file] = family
    return out


def _fill_from_run_and_path(gpus: pl.DataFrame, db: hardware.GpuDatabase) -> pl.DataFrame:
    by_run = gpus.drop_nulls("family").group_by("run").agg(
        pl.col("gpu_model").drop_nulls().first().alias("run_model"), pl.col("family").first().alias("run_family"))
    gpus = gpus.join(by_run, on="run", how="left").with_columns(
        pl.coalesce("gpu_model", "run_model").alias("gpu_model"),
        pl.coalesce("family", "run_family").alias("family")).drop("run_model", "run_family")
    missing = gpus.filter(pl.col("family").is_null())
    if not missing.height:
        return gpus
    found = {f: _path_gpu(db, f) for f in missing["source_file"].to_list()}
    fill = pl.DataFrame({"source_file": list(found),
                         "p_model": [key for key, _ in found.values()],
                         "p_family": [family for _, family in found.values()]},
                        schema={"source_file": pl.String, "p_model": pl.String, "p_family": pl.String})
    return gpus.join(fill, on="source_file", how="left").with_columns(
        pl.coalesce("gpu_model", "p_model").alias("gpu_model"),
        pl.coalesce("family", "p_family").alias("family")).drop("p_model", "p_family")


def _path_gpu(db: hardware.GpuDatabase, source_file: str) -> tuple[str | None, str | None]:
    """GPU key and family from a GPU token in the file's path; the family alone when the token
    names several GPUs of one family (`v100`: a PCIe or an SXM2 V100, Volta either way)."""
    for part in reversed(PurePath(source_file).parts[-_PATH_DEPTH:]):
        spec = db.match(part)
        if spec is not None:
            return spec.key, spec.family
        if family := db.family(part):
            return None, family
    return None, None
