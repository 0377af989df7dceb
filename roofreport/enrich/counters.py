"""From raw counters in `metrics` to the roofline columns of `kernels` (docs/methodology.md a, b, c).

One place turns counter names into FLOPs, bytes, time, clocks and measured ceilings, whichever
log they came from:

* CUDA-core FLOPs (a.1): fp64 = dadd + dmul + 2·dfma, fp32 = fadd + fmul + 2·ffma,
  fp16 = hadd + hmul + 2·hfma, from `smsp__` or `sm__sass_thread_inst_executed_op_*_pred_on.sum`
  (ncu) or `flop_count_dp/sp/hp` (nvprof, already FMA = 2). Raw pages that carry only the
  rates `smsp__..._pred_on.sum.per_cycle_elapsed` (= count / smsp__cycles_elapsed.avg) give
  the count as rate × `smsp__cycles_elapsed.avg.per_second` × `gpu__time_duration.sum`, as
  ncu's roofline sections compute achieved FLOP/s from them [S2][S18].
* Tensor-core FLOPs (a.2, `tensor.py`): op-path counters, Volta's 512 × tensor instructions,
  instruction × 2·M·N·K when the kernel name gives the MMA shape (not on Hopper and later).
  When a log has both the tensor-pipe instruction count and `hfma`, the HFMA2.MMA register moves
  Turing+ compilers put on the tensor pipe leave fp16 (they are counted as hfma, but move data).
* Bytes (b): DRAM = 32·sectors when sectors were logged (exact integers, while `dram__bytes.sum`
  is printed rounded to 3 significant digits in auto-scaled units), else the byte counters;
  L2 and L1 likewise; nvprof transactions × 32 (L1 global ld/st only from Maxwell on: Kepler
  transactions are 32/64/128 bytes). A log that printed only the DRAM rate
  (`dram__bytes.sum.per_second`, or its read and write halves) and the kernel's duration gets
  rate × duration, as course authors compute it by hand: `dram_bytes_derived` marks those.
* Duration (c): `gpu__time_duration.sum`, else the `Duration` row of the Speed Of Light section,
  else `sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second` (NERSC).
* Clocks and measured ceilings: SM clock = `gpc__cycles_elapsed.avg.per_second` (the SOL
  `SM Frequency`), else `sm__`/`smsp__cycles_elapsed.avg.per_second`; memory clock =
  `dram__cycles_elapsed.avg.per_second` (the SOL `DRAM Frequency`), in Hz whatever unit ncu
  printed (cycle/nsecond, cycle/usecond, GHz, MHz) and kept as logged, below base too;
  peak FLOP/s = 2 × `..._op_ffma_pred_on.sum.peak_sustained` × SM clock, peak byte/s =
  `dram__bytes.sum.peak_sustained` × `dram__cycles_elapsed.avg.per_second` (same for L2, L1).

AMD counters (docs/methodology.md a.3, b.2), rules keyed by GPU family like NVIDIA's:

* VALU FLOPs per precision = lanes × (ADD + MUL + TRANS + 2·FMA) of `SQ_INSTS_VALU_<op>_F16/F32/F64`
  (rocprof-compute's roofline and "FLOP counting conventions" [A1][A2]): the counters count wave
  instructions, so × the wave's lanes: the dispatch's `wave_size` when logged, else the
  family's (`AMD_WAVE_LANES`: 64 on GCN/CDNA, the only GPUs with these counters);
* matrix-core (MFMA) FLOPs go to `flops_tensor` (`tensor.py`): 512 × `SQ_INSTS_VALU_MFMA_MOPS_*`;
* HBM bytes: rocprof-compute's formulas from the L2-to-fabric requests (`TCC_EA_RDREQ*`,
  `TCC_EA_WRREQ*`; MI300's `TCC_EA0_*` with `TCC_BUBBLE`, 128-byte reads) [A1], else rocprof's
  own `FETCH_SIZE` + `WRITE_SIZE` (held in bytes by the reader) [A3]; L2 = 64 × the L1-to-L2
  requests, L1 = 64 × `TCP_TOTAL_CACHE_ACCESSES_sum` [A1].

Summary rows (per-kernel summaries) carry averages: totals are average × invocations.
"""

from __future__ import annotations

import polars as pl

from roofreport.enrich import tensor

_OP = "sass_thread_inst_executed_op_{}_pred_on.sum"
KEYS = ["source_file", "launch_id"]

# output column -> list of (weight, op); smsp__ and sm__ spellings are the same counter.
_FLOP_TERMS = {
    "flops_fp64": [(1, "dadd"), (1, "dmul"), (2, "dfma")],
    "flops_fp32": [(1, "fadd"), (1, "fmul"), (2, "ffma")],
    "flops_fp16": [(1, "hadd"), (1, "hmul"), (2, "hfma")],
}
_PER_CYCLE = ".per_cycle_elapsed"  # smsp__X.sum.per_cycle_elapsed = X.sum / smsp__cycles_elapsed.avg
_NVPROF_FLOPS = {"flops_fp64": "flop_count_dp", "flops_fp32": "flop_count_sp", "flops_fp16": "flop_count_hp"}

# output column -> ordered alternatives, each a list of (weight, counter); first complete one wins.
_BYTE_RULES = {
    "dram_bytes": [
        [(32, "dram__sectors.sum")],
        [(32, "dram__sectors_read.sum"), (32, "dram__sectors_write.sum")],
        [(1, "dram__bytes.sum")],
        [(1, "dram__bytes_read.sum"), (1, "dram__bytes_write.sum")],
        [(1, "dram__bytes_op_read.sum"), (1, "dram__bytes_op_write.sum")],
        [(32, "dram_read_transactions"), (32, "dram_write_transactions")],
        [(1, "dram_read_bytes"), (1, "dram_write_bytes")],
    ],
    "l2_bytes": [
        [(32, "lts__t_sectors.sum")],
        [(1, "lts__t_bytes.sum")],
        [(32, "lts__t_sectors_op_read.sum"), (32, "lts__t_sectors_op_write.sum"),
         (32, "lts__t_sectors_op_atom.sum"), (32, "lts__t_sectors_op_red.sum")],
        [(32, "l2_read_transactions"), (32, "l2_write_transactions")],
    ],
    "l1_bytes": [
        [(32, "l1tex__t_sectors.sum")],
        [(1, "l1tex__t_bytes.sum")],
        [(32, "gld_transactions"), (32, "gst_transactions")],
    ],
}
# AMD (docs/methodology.md b.2): HBM traffic from the L2's requests to the fabric (EA), 32- and
# 64-byte requests weighed by size, in rocprof-compute's roofline [A1]: MI300 (`TCC_EA0_*`, 128-byte
# reads counted by `TCC_BUBBLE`), MI100/MI200 (`TCC_EA_*`); then rocprof's FETCH_SIZE + WRITE_SIZE
# (its own formula per target [A3]); last MI300's requests without TCC_BUBBLE (rocprofiler-sdk's
# FETCH_SIZE formula for gfx942: 128-byte reads counted as 64, a lower bound).
_AMD_DRAM = [
    [(64, "TCC_EA0_RDREQ_sum"), (64, "TCC_BUBBLE_sum"), (-32, "TCC_EA0_RDREQ_32B_sum"),
     (32, "TCC_EA0_WRREQ_sum"), (32, "TCC_EA0_WRREQ_64B_sum")],
    [(64, "TCC_EA_RDREQ_sum"), (-32, "TCC_EA_RDREQ_32B_sum"), (32, "TCC_EA_WRREQ_sum"), (32, "TCC_EA_WRREQ_64B_sum")],
    [(1, "FETCH_SIZE"), (1, "WRITE_SIZE")],
    [(64, "TCC_EA0_RDREQ_sum"), (-32, "TCC_EA0_RDREQ_32B_sum"), (32, "TCC_EA0_WRREQ_sum"), (32, "TCC_EA0_WRREQ_64B_sum")],
]
_BYTE_RULES["dram_bytes"] += _AMD_DRAM
_BYTE_RULES["l2_bytes"].append([(64, "TCP_TCC_READ_REQ_sum"), (64, "TCP_TCC_WRITE_REQ_sum"),
                                (64, "TCP_TCC_ATOMIC_WITH_RET_REQ_sum"), (64, "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum")])
_BYTE_RULES["l1_bytes"].append([(64, "TCP_TOTAL_CACHE_ACCESSES_sum")])

# AMD VALU FLOPs (docs/methodology.md a.3): column -> the precision suffix of SQ_INSTS_VALU_<op>_<p>,
# and each op's weight (AMD's convention: add, mul, transcendental 1; FMA 2) [A2].
_AMD_VALU = {"flops_fp64": "F64", "flops_fp32": "F32", "flops_fp16": "F16"}
_AMD_VALU_OPS = [(1, "ADD"), (1, "MUL"), (1, "TRANS"), (2, "FMA")]
# Work-items per wave by GPU family: the VALU counters count wave instructions. GCN and CDNA run
# wave64 only; a dispatch's own `wave_size` wins where the log has it.
AMD_WAVE_LANES = {"gcn5": 64, "cdna1": 64, "cdna2": 64, "cdna3": 64, "cdna4": 64}
_DEFAULT_LANES = 64
_WAVE_SIZE = "wave_size"   # a dispatch's wave size, as the ROCm reader names it in `metrics`

# Alternatives that only hold from Maxwell on (Kepler's transactions are not 32-byte sectors).
_NOT_ON_KEPLER = {("l1_bytes", 2)}
# DRAM byte rates (byte/s) that, times the kernel's duration, give its DRAM bytes when no count was logged.
_DRAM_RATES = [["dram__bytes.sum.per_second"], ["dram__bytes_read.sum.per_second", "dram__bytes_write.sum.per_second"]]
# The kernel columns whose rules depend on the GPU family (tensor FLOPs, HFMA2.MMA moves,
# Kepler transactions, AMD's lanes per wave; flops_complete follows flops_tensor): worked out
# again when it changes.
FAMILY_COLUMNS = ["flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor", "l1_bytes", "tensor_active",
                  "flops_complete"]

_DURATION = ["gpu__time_duration.sum", "gpu__time_duration", "Duration"]
# The SM clock, best first: the Speed Of Light section's "SM Frequency" is
# gpc__cycles_elapsed.avg.per_second (a summary page may log only that one), then the SM's own.
_SM_CLOCK = ["gpc__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg.per_second",
             "smsp__cycles_elapsed.avg.per_second", "SM Frequency"]
_SM_CYCLE_RATES = _SM_CLOCK[1:3]   # the clocks of `_SM_CYCLES`, for a duration from cycles
# The clock an SM's per-cycle peak runs at: the SM's own first.
_PEAK_SM_CLOCK = [*_SM_CYCLE_RATES, _SM_CLOCK[0], _SM_CLOCK[3]]
# The memory clock: the SOL "DRAM Frequency" is dram__cycles_elapsed.avg.per_second.
_MEM_CLOCK = ["dram__cycles_elapsed.avg.per_second", "DRAM Frequency"]
_SM_CYCLES = ["sm__cycles_elapsed.avg", "smsp__cycles_elapsed.avg"]

# output column -> (factor, [per-cycle peak counters], [clock counters]); factor 2 = FMA.
_PEAKS = {
    "peak_flops_fp32": (2, [f"{p}__{_OP.format('ffma')}.peak_sustained" for p in ("sm", "smsp")], _PEAK_SM_CLOCK),
    "peak_flops_fp64": (2, [f"{p}__{_OP.format('dfma')}.peak_sustained" for p in ("sm", "smsp")], _PEAK_SM_CLOCK),
    "peak_flops_fp16": (2, [f"{p}__{_OP.format('hfma')}.peak_sustained" for p in ("sm", "smsp")], _PEAK_SM_CLOCK),
    "peak_dram_bytes_per_s": (1, ["dram__bytes.sum.peak_sustained"], _MEM_CLOCK),
    "peak_l2_bytes_per_s": (1, ["lts__t_bytes.sum.peak_sustained"], ["lts__cycles_elapsed.avg.per_second"]),
    "peak_l1_bytes_per_s": (1, ["l1tex__t_bytes.sum.peak_sustained"], ["l1tex__cycles_elapsed.avg.per_second"]),
}
# Display-name rows only count inside the Speed Of Light section (other sections reuse names).
_SOL_ONLY = {"Duration", "SM Frequency", "DRAM Frequency"}


def _amd_valu(precision: str, op: str) -> str:
    return f"SQ_INSTS_VALU_{op}_{precision}"


def _flop_names() -> set[str]:
    names = set(_NVPROF_FLOPS.values())
    for terms in _FLOP_TERMS.values():
        for _, op in terms:
            names.add("smsp__" + _OP.format(op))
            names.add("sm__" + _OP.format(op))
            names.add("smsp__" + _OP.format(op) + _PER_CYCLE)
    return names


def counter_names() -> set[str]:
    """Every counter name this module reads (tensor counters are matched by pattern instead)."""
    names = _flop_names() | set(_DURATION) | set(_SM_CLOCK) | set(_MEM_CLOCK) | set(_SM_CYCLES) | {_WAVE_SIZE}
    names.update(_amd_valu(precision, op) for precision in _AMD_VALU.values() for _, op in _AMD_VALU_OPS)
    names.update(name for rates in _DRAM_RATES for name in rates)
    for alternatives in _BYTE_RULES.values():
        for alt in alternatives:
            names.update(n for _, n in alt)
    for _, peaks, clocks in _PEAKS.values():
        names.update(peaks)
        names.update(clocks)
    return names


def _wanted(metrics: pl.DataFrame, names: list[str]) -> tuple[pl.DataFrame, pl.Series]:
    """(file (a code), launch_id, value and counter (index in `names`) of the rows of counters
    this module reads: single values or summary averages, display names of `_SOL_ONLY` only
    inside the Speed Of Light section; the file names by code). Rows keep their order; each
    name is looked up once per row, and no string column is copied."""
    stat, files = pl.col("stat"), pl.Categories.random()
    wanted = metrics.select(
        "launch_id", "value", file=pl.col("source_file").cast(pl.String).cast(pl.Categorical(files)),
        counter=pl.col("metric").replace_strict(names, list(range(len(names))), default=None,
                                                return_dtype=pl.UInt32),
        keep=stat.is_null() | (stat == "avg"))
    file_names = files.to_series()   # while the categorical column keeps them alive
    wanted = wanted.with_columns(pl.col("file").to_physical())
    keep = wanted["keep"] & wanted["counter"].is_not_null()
    sol_only = keep & wanted["counter"].is_in([names.index(n) for n in _SOL_ONLY])
    if sol_only.any():  # the section is checked on those rows only
        at = sol_only.arg_true()
        keep = keep.scatter(at, metrics["section"].gather(at).fill_null("").str.contains("(?i)speed of light"))
    wanted = wanted.drop("keep")
    return (wanted if keep.all() else wanted.filter(keep)), file_names


def kernel_counters(metrics: pl.DataFrame, families: dict[str, str] | None = None) -> pl.DataFrame:
    """Per (source_file, launch_id): duration_ns, flops_*, *_bytes, clock and peaks from the
    counters. `families` maps source_file -> GPU family ("volta", "ampere"...) where known; it
    decides the architecture-specific rules (tensor FLOPs, Kepler transactions).

    Counters absent from the log give null, never 0; a counter logged twice for one kernel
    counts with its first value.
    """
    names = sorted(counter_names())
    wide = _wide(*_wanted(metrics, names), names)
    wide = _with_family(wide, families)
    out = [_flops(col, terms) for col, terms in _FLOP_TERMS.items()]
    out += [_first_complete(col, alts) for col, alts in _BYTE_RULES.items() if col != "dram_bytes"]
    duration = pl.coalesce([pl.col(n) for n in _DURATION] + [_ratio(_SM_CYCLES, _SM_CYCLE_RATES) * 1e9])
    counted_dram, derived_dram = _first_complete("dram_bytes", _BYTE_RULES["dram_bytes"]), _dram_from_rate(duration)
    out += [pl.coalesce(counted_dram, derived_dram).alias("dram_bytes"),
            pl.when(counted_dram.is_null() & derived_dram.is_not_null()).then(True).alias("dram_bytes_derived")]
    out.append(duration.alias("duration_ns"))
    out.append(pl.coalesce([pl.col(n) for n in _SM_CLOCK]).alias("sm_clock_hz"))
    out.append(pl.coalesce([pl.col(n) for n in _MEM_CLOCK]).alias("mem_clock_hz"))
    out += [_peak(col, *rule) for col, rule in _PEAKS.items()]
    counted = wide.select(*KEYS, *out)
    tensor_cols = tensor.tensor_counters(metrics, families)
    if tensor_cols.height:
        counted = counted.join(tensor_cols, on=KEYS, how="full", coalesce=True)
        # HFMA2.MMA moves are not FP16 arithmetic: 2 "FLOPs" each in hadd + hmul + 2·hfma.
        fp16 = (pl.col("flops_fp16") - 2.0 * pl.col("hfma_moves").fill_null(0.0)).clip(lower_bound=0.0)
        counted = counted.with_columns(fp16.alias("flops_fp16")).drop("hfma_moves")
    return counted


def _wide(wanted: pl.DataFrame, files: pl.Series, names: list[str]) -> pl.DataFrame:
    """One row per (source_file, launch_id), one column per counter name: the value of its
    first row (null when absent). Each row's value is scattered into a flat array at its
    (counter, kernel) cell; nothing is grouped per row."""
    if not wanted.height:
        return pl.DataFrame(schema={"source_file": pl.String, "launch_id": pl.Int64,
                                    **{n: pl.Float64 for n in names}})
    slot, size, keys_of = _kernel_slots(wanted, files)
    present = sorted(wanted["counter"].unique().to_list())
    cell_type = pl.UInt32 if len(present) * size < 1 << 32 else pl.UInt64
    position = pl.Series([None] * len(names), dtype=cell_type).scatter(present, list(range(len(present)))) \
        .gather(wanted["counter"])
    values, seen = _first_values(position * size + slot.cast(cell_type), wanted["value"], len(present) * size)
    seen_by_counter = pl.DataFrame([seen.slice(i * size, size).alias(str(i)) for i in range(len(present))])
    occupied = seen_by_counter.select(pl.any_horizontal(pl.all() > 0)).to_series().arg_true()
    columns = {names[c]: values.slice(i * size, size).gather(occupied) for i, c in enumerate(present)}
    return keys_of(occupied).with_columns(
        (columns[n] if n in columns else pl.lit(None, pl.Float64)).alias(n) for n in names)


def _kernel_slots(wanted: pl.DataFrame, files: pl.Series):
    """(slot of each row's kernel, number of slots, slots -> their (source_file, launch_id)).
    Launch ids of a file are usually 0..n-1: the slot is file × (largest id + 1) + launch id;
    otherwise kernels are numbered in (file, launch id) order."""
    file, launch = wanted["file"].cast(pl.UInt64), wanted["launch_id"]
    width = (launch.max() or 0) + 1
    if not launch.null_count() and launch.min() >= 0 and files.len() * width <= 4 * launch.len() + 1024:
        def keys_of(slots: pl.Series) -> pl.DataFrame:
            return pl.DataFrame({"source_file": files.gather(slots // width),
                                 "launch_id": (slots % width).cast(pl.Int64)})
        return file * width + launch.cast(pl.UInt64), files.len() * width, keys_of
    kernel = wanted.select(pl.struct("file", "launch_id").rank("dense").cast(pl.UInt64) - 1).to_series()
    kernels = wanted.select("file", "launch_id", kernel=kernel).unique("kernel").sort("kernel")
    keys = kernels.select(source_file=files.gather(kernels["file"]), launch_id="launch_id")
    return kernel, kernels.height, lambda slots: keys[slots]


def _first_values(cell: pl.Series, value: pl.Series, size: int) -> tuple[pl.Series, pl.Series]:
    """(value per cell from its first row, null when none; how many rows fell in each cell)."""
    seen = pl.repeat(0, size, dtype=pl.UInt8, eager=True).scatter(cell, 1)
    if seen.sum() != cell.len():  # a counter logged twice for one kernel: the first row counts
        rows = pl.DataFrame({"cell": cell, "row": pl.int_range(cell.len(), dtype=pl.UInt32, eager=True)})
        first = rows.sort("cell", maintain_order=True).filter(
            (pl.col("cell") != pl.col("cell").shift(1)).fill_null(True))
        cell, value = first["cell"], value.gather(first["row"])
    return pl.repeat(None, size, dtype=pl.Float64, eager=True).scatter(cell, value), seen


def _with_family(wide: pl.DataFrame, families: dict[str, str] | None) -> pl.DataFrame:
    fam = pl.DataFrame({"source_file": list((families or {}).keys()),
                        "__family": list((families or {}).values())},
                       schema={"source_file": pl.String, "__family": pl.String})
    return wide.join(fam, on="source_file", how="left")


def _ratio(num: list[str], den: list[str]) -> pl.Expr:
    return pl.coalesce([pl.col(n) for n in num]) / pl.coalesce([pl.col(n) for n in den])


def _flops(column: str, terms: list[tuple[int, str]]) -> pl.Expr:
    """Sum of weighted op counters; smsp__ and sm__ spellings are the same counter."""
    def op(name: str) -> pl.Expr:
        return pl.coalesce(pl.col("smsp__" + _OP.format(name)), pl.col("sm__" + _OP.format(name)))

    present = pl.any_horizontal([op(name).is_not_null() for _, name in terms])
    total = pl.sum_horizontal([op(name).fill_null(0) * w for w, name in terms])
    ncu = pl.when(present).then(total)
    return pl.coalesce(ncu, _flops_from_rates(terms), pl.col(_NVPROF_FLOPS[column]),
                       _amd_valu_flops(_AMD_VALU[column])).alias(column)


def _amd_valu_flops(precision: str) -> pl.Expr:
    """docs/methodology.md a.3 [A1][A2]: lanes × (ADD + MUL + TRANS + 2·FMA) of one precision's VALU
    wave instructions; lanes = the dispatch's wave size, else its GPU family's."""
    counters = [(weight, pl.col(_amd_valu(precision, op))) for weight, op in _AMD_VALU_OPS]
    present = pl.any_horizontal([c.is_not_null() for _, c in counters])
    per_wave = pl.sum_horizontal([c.fill_null(0) * weight for weight, c in counters])
    lanes = pl.coalesce(pl.col(_WAVE_SIZE), pl.col("__family").replace_strict(
        AMD_WAVE_LANES, default=None, return_dtype=pl.Float64), pl.lit(float(_DEFAULT_LANES)))
    return pl.when(present).then(per_wave * lanes)


def _flops_from_rates(terms: list[tuple[int, str]]) -> pl.Expr:
    """docs/methodology.md a.1 from per-cycle rates only (raw pages) [S2][S18]: ncu's roofline takes
    achieved FLOP/s = (fadd + fmul + 2·ffma).per_cycle_elapsed × smsp__cycles_elapsed.avg.per_second,
    so FLOPs = that × gpu__time_duration (per_second divides by that duration, so the product is
    smsp__cycles_elapsed.avg × rate = the .sum count, to the printed digits: a text page's
    `1.31 cycle/nsecond` costs 0.3 %); smsp__cycles_elapsed.avg itself is used when logged."""
    rates = [pl.col("smsp__" + _OP.format(name) + _PER_CYCLE) for _, name in terms]
    present = pl.any_horizontal([r.is_not_null() for r in rates])
    per_cycle = pl.sum_horizontal([r.fill_null(0) * w for r, (w, _) in zip(rates, terms)])
    seconds = pl.coalesce([pl.col(n) for n in _DURATION[:2]]) * 1e-9
    cycles = pl.coalesce(pl.col("smsp__cycles_elapsed.avg"),
                         pl.col("smsp__cycles_elapsed.avg.per_second") * seconds)
    return pl.when(present).then(per_cycle * cycles)


def _first_complete(column: str, alternatives: list[list[tuple[int, str]]]) -> pl.Expr:
    exprs = []
    for index, alt in enumerate(alternatives):
        complete = pl.all_horizontal([pl.col(n).is_not_null() for _, n in alt])
        if (column, index) in _NOT_ON_KEPLER:
            complete = complete & (pl.col("__family").fill_null("") != "kepler")
        exprs.append(pl.when(complete).then(pl.sum_horizontal([pl.col(n) * w for w, n in alt])))
    return pl.coalesce(exprs).alias(column)


def _dram_from_rate(duration_ns: pl.Expr) -> pl.Expr:
    """DRAM bytes = the logged DRAM byte rate × the kernel's duration (the first complete rate)."""
    rates = [pl.when(pl.all_horizontal([pl.col(n).is_not_null() for n in names]))
             .then(pl.sum_horizontal([pl.col(n) for n in names])) for names in _DRAM_RATES]
    return pl.coalesce(rates) * duration_ns * 1e-9


def _peak(column: str, factor: float, peaks: list[str], clocks: list[str]) -> pl.Expr:
    """A measured ceiling: per-cycle peak × clock (both as the log gave them)."""
    return (pl.coalesce([pl.col(n) for n in peaks]) * factor
            * pl.coalesce([pl.col(n) for n in clocks])).alias(column)


def fill_kernel_counters(kernels: pl.DataFrame, metrics: pl.DataFrame,
                         families: dict[str, str] | None = None) -> pl.DataFrame:
    """kernels with duration/FLOP/byte/clock/peak columns filled from `metrics` where the row
    lacks them. Summary rows get totals (average × count) for counts, not for rates."""
    if not kernels.height or not metrics.height:
        return kernels
    counters = kernel_counters(metrics, families)
    if not counters.height:
        return kernels
    cols = [c for c in counters.columns if c not in KEYS and c in kernels.columns]
    joined = kernels.join(counters.select(*KEYS, *cols), on=KEYS, how="left", suffix="_counted")
    per_row = pl.when(pl.col("kind") == "summary").then(pl.col("count").cast(pl.Float64)).otherwise(1.0)
    rates = {"sm_clock_hz", "mem_clock_hz", "tensor_active", "tensor_precision", "dram_bytes_derived", *_PEAKS}  # not scaled by invocations
    return joined.with_columns(
        [pl.coalesce(pl.col(c), pl.col(f"{c}_counted") if c in rates else pl.col(f"{c}_counted") * per_row)
         .alias(c) for c in cols]
    ).drop([f"{c}_counted" for c in cols])
