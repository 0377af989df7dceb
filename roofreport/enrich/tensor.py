"""Tensor-core work: FLOPs where the counters allow it, and evidence that tensor cores ran.

CUDA-core op counters (`fadd/fmul/ffma`...) never see HMMA/IMMA/DMMA/GMMA work (docs/methodology.md
a.2). Per kernel, in this order:

1. op-path counters `sm__ops_path_tensor_src_*.sum` (GA100 and newer; ops = FLOPs): summed, a
   parent counter taken instead of its `_sparsity_on/_off` children (never both); per-opcode
   `sm__ops_path_tensor_op_*_src_*` only when no generic one was logged;
2. Volta only (family "volta", CC 7.0/7.2): 512 × `sm__inst_executed_pipe_tensor.sum`
   (HMMA.884 = m8n8k4 per warp = 512 FLOP, NERSC);
3. Turing/Ampere/Ada: warp MMA instructions × 2·M·N·K when the kernel name states the MMA
   shape (`s1688gemm`, `h16816`, `i8816`, `tensor16x8x16`); on Hopper and later never
   (wgmma's N varies per instruction: an instruction count alone cannot give FLOPs);
4. tensor instructions counted and all zero: 0 tensor FLOPs. Off Volta, the generic
   `pipe_tensor` count first loses the HFMA2.MMA register moves compilers schedule on the tensor
   pipe (one warp instruction per 32 thread `hfma`s): a kernel whose tensor-pipe instructions are
   all such moves did no MMA work;
5. otherwise unknown (null).

`tensor_active` is true when any tensor pipe/instruction/op counter or nvprof
`tensor_precision_fu_utilization` level is above zero; `names_look_tensor` recognises tensor-core
kernels by name (cuBLAS/cuDNN/CUTLASS naming) for logs without such counters.

"Tensor" means matrix-core work on both vendors. AMD's matrix cores (MFMA, CDNA) fit the same
steps (docs/methodology.md a.3): `SQ_INSTS_VALU_MFMA_MOPS_F16/BF16/F32/F64/F8/XF32` count matrix
operations in units of 512 [A4], so 512 × MOPS is an op-path count (step 1; `I8` counts integer
ops, no FLOPs: only evidence that the cores ran); rocprofv3's derived `MfmaFlops` (already
FLOPs) stands in when no MOPS counter was logged; MFMA instruction counts
(`SQ_INSTS_VALU_MFMA_<type>`, `SQ_INSTS_MFMA`) are the instruction evidence of step 4 (MI100
has only these: its matrix FLOPs stay unknown). `tensor_precision` names the input type of a
kernel's largest matrix work where the counters say it (AMD MOPS per type), so the roofline
judges it against that type's matrix peak (an FP64 DGEMM on an MI250X against 47.9 TFLOP/s,
never the FP16 383).
"""

from __future__ import annotations

import re

import polars as pl

KEYS = ["source_file", "launch_id"]

_OPS_GENERIC = re.compile(r"^(?:sm|smsp)__ops_path_tensor_(src_\w+)\.sum$")
_OPS_OPCODE = re.compile(r"^(?:sm|smsp)__ops_path_tensor_op_[a-z0-9]+_(src_\w+)\.sum$")
_INST_GENERIC = re.compile(r"^sm(?:sp)?__inst_executed_pipe_tensor\.sum$")
_INST_OPCODE = re.compile(r"^sm(?:sp)?__inst_executed_pipe_tensor_(?:op|subpipe)_[a-z0-9]+\.sum$")
_ACTIVITY = re.compile(r"pipe_tensor|ops_path_tensor|tensor_precision_fu_utilization|"
                       r"tensor_int_fu_utilization|tensor_pipe_active_cycles")
_HFMA = re.compile(r"^sm(?:sp)?__sass_thread_inst_executed_op_hfma_pred_on\.sum$")
_LEVEL = r"\((\d+)\)"  # nvprof utilization levels: `Idle (0)`, `Low (1)`
# AMD matrix cores (docs/methodology.md a.3): MOPS counters per input type, in units of 512 ops [A4].
AMD_MOPS_FLOPS = 512.0
# F8 (CDNA3+: FP8/BF8 inputs) and XF32 (CDNA3: xf32, the TF32 of AMD) count in the same units
# (rocprofiler-sdk's gfx942/gfx950 counter definitions); CDNA4 has no XF32.
AMD_MOPS_PRECISION = {f"SQ_INSTS_VALU_MFMA_MOPS_{t}": p for t, p in
                      (("F16", "fp16"), ("BF16", "bf16"), ("F32", "fp32"), ("F64", "fp64"), ("F8", "fp8"),
                       ("XF32", "tf32"))}
_AMD_DERIVED = {"MfmaFlops"}   # rocprofv3: (MOPS_F16 + BF16 + F32 + F64) x 512, in FLOPs
_AMD_INST = re.compile(r"^SQ_INSTS_(?:VALU_MFMA_(?:I8|F8|F16|BF16|XF32|F32|F64)|MFMA)$")
_AMD_ACTIVITY = re.compile(r"^SQ_(?:VALU_MFMA_BUSY_CYCLES|INSTS_VALU_MFMA_MOPS_I8)$")

# Warp-level MMA shapes named in kernel names -> (M, N, K).
SHAPES = {"884": (8, 8, 4), "1684": (16, 8, 4), "1688": (16, 8, 8), "16816": (16, 8, 16),
          "8816": (8, 8, 16), "16832": (16, 8, 32), "16864": (16, 8, 64)}
_SHAPE_IN_NAME = re.compile(r"(?:^|[^0-9])[hsdibt]?(884|1684|1688|16816|8816|16832|16864)(?:gemm|cudnn|_|[a-z]|$)"
                            r"|tensor(\d+)x(\d+)x(\d+)", re.I)
_SHAPE_FAMILIES = {"turing", "ampere", "ada"}

# Tensor-core kernels by name (cuBLAS, cuDNN, CUTLASS, xmma, Hopper nvjet/wgmma). Rust regex.
TENSOR_NAME_PATTERN = (
    r"(?i)hmma|imma|dmma|wgmma|gmma|xmma|tensorop|tensor_?core|tensor\d+x\d+x\d+|tf32|nvjet|"
    r"[hsibd](?:884|1684|1688|16816|8816|16832|16864)(?:gemm|cudnn|_|[a-z])|_wmma|wmma::|mma_sync|"
    r"sm(?:8\d|9\d|1\d\d)_xmma|cutlass.*(?:tensorop|_tf32|_bf16|_f16)"
)


def names_look_tensor(names: pl.Expr) -> pl.Expr:
    """True where a kernel name says it runs on tensor cores."""
    return names.fill_null("").str.contains(TENSOR_NAME_PATTERN)


def shape_flops(name: str | None) -> float | None:
    """FLOP per warp-level MMA instruction (2·M·N·K) when the name names exactly one shape."""
    if not name:
        return None
    found = set()
    for match in _SHAPE_IN_NAME.finditer(name):
        if match.group(1):
            found.add(SHAPES[match.group(1)])
        else:
            found.add((int(match.group(2)), int(match.group(3)), int(match.group(4))))
    if len(found) != 1:
        return None
    mm, nn, kk = found.pop()
    return float(2 * mm * nn * kk)


def _classify(names: list[str]) -> dict[str, str]:
    """metric name -> role (ops, ops_opcode, inst, inst_opcode, activity)."""
    roles = {}
    for name in names:
        if name in AMD_MOPS_PRECISION:
            roles[name] = "ops"
        elif name in _AMD_DERIVED:
            roles[name] = "ops_opcode"
        elif _AMD_INST.match(name):
            roles[name] = "inst_opcode"
        elif _AMD_ACTIVITY.match(name):
            roles[name] = "activity"
        elif _OPS_GENERIC.match(name):
            roles[name] = "ops"
        elif _OPS_OPCODE.match(name):
            roles[name] = "ops_opcode"
        elif _INST_GENERIC.match(name):
            roles[name] = "inst"
        elif _INST_OPCODE.match(name):
            roles[name] = "inst_opcode"
        elif _HFMA.match(name):
            roles[name] = "hfma"
        elif _ACTIVITY.search(name):
            roles[name] = "activity"
    return roles


def _ops_sum(rows: pl.DataFrame, role: str) -> pl.DataFrame:
    """Sum of op-path counters per kernel, parents preferred to their sparsity children."""
    ops = rows.filter(pl.col("role") == role).with_columns(
        parent=pl.col("metric").str.replace(r"\.sum$", "").str.replace(r"_sparsity_(?:on|off)$", ""),
        is_child=pl.col("metric").str.replace(r"\.sum$", "").str.contains(r"_sparsity_(?:on|off)$"))
    has_parent = ops.filter(~pl.col("is_child")).select(*KEYS, "parent").unique()
    children = ops.filter(pl.col("is_child")).join(has_parent, on=[*KEYS, "parent"], how="anti")
    kept = pl.concat([ops.filter(~pl.col("is_child")), children])
    return kept.group_by(KEYS).agg(pl.col("value").sum().alias(role))


def tensor_counters(metrics: pl.DataFrame, families: dict[str, str] | None = None) -> pl.DataFrame:
    """Per (source_file, launch_id) with any tensor counter: flops_tensor, tensor_active and
    hfma_moves (thread `hfma`s that were HFMA2.MMA register moves, not arithmetic)."""
    roles = _classify(metrics["metric"].unique().drop_nulls().to_list()) if metrics.height else {}
    if not any(r != "hfma" for r in roles.values()):
        return pl.DataFrame(schema={"source_file": pl.String, "launch_id": pl.Int64, "flops_tensor": pl.Float64,
                                    "tensor_active": pl.Boolean, "hfma_moves": pl.Float64,
                                    "tensor_precision": pl.String})
    role_df = pl.DataFrame({"metric": list(roles), "role": list(roles.values())})
    rows = metrics.filter(pl.col("metric").is_in(list(roles))).join(role_df, on="metric")
    value = pl.coalesce(pl.col("value"),
                        pl.col("value_text").str.extract(_LEVEL, 1).cast(pl.Float64, strict=False))
    mops = pl.col("metric").is_in(list(AMD_MOPS_PRECISION))
    rows = rows.with_columns(value=pl.when(mops).then(value * AMD_MOPS_FLOPS).otherwise(value))
    counts = rows.filter(pl.col("stat").is_null() | (pl.col("stat") == "avg"))
    per_kernel = rows.filter(pl.col("role") != "hfma").group_by(KEYS).agg(
        pl.col("kernel_name").drop_nulls().first().alias("kernel_name"),
        pl.col("value").filter(pl.col("role") == "activity").max().alias("activity"))
    for role in ("inst", "inst_opcode", "hfma"):
        summed = counts.filter(pl.col("role") == role).group_by(KEYS).agg(pl.col("value").sum().alias(role))
        per_kernel = per_kernel.join(summed, on=KEYS, how="left")
    for role in ("ops", "ops_opcode"):
        per_kernel = per_kernel.join(_ops_sum(counts, role), on=KEYS, how="left")
    return _tensor_flops(per_kernel, families).join(_precisions(counts), on=KEYS, how="left")


def _precisions(counts: pl.DataFrame) -> pl.DataFrame:
    """Per kernel, the input type of its largest matrix work where the counters name it."""
    typed = counts.filter(pl.col("metric").is_in(list(AMD_MOPS_PRECISION)) & (pl.col("value") > 0))
    return typed.with_columns(precision=pl.col("metric").replace_strict(AMD_MOPS_PRECISION)).group_by(KEYS).agg(
        pl.col("precision").sort_by("value", descending=True).first().alias("tensor_precision"))


def _mma_instructions(family: pl.Expr) -> pl.Expr:
    """Generic tensor-pipe instructions minus the HFMA2.MMA register moves Turing and later
    compilers schedule on that pipe: each is one warp instruction and 32 thread `hfma`s (seen on
    A100: pipe_tensor x 32 == hfma exactly, in elementwise kernels and a CUDA-core sgemm)."""
    moves = pl.col("hfma") / 32.0
    residual = (pl.col("inst") - moves).clip(lower_bound=0.0)
    return pl.when((family != "volta") & pl.col("hfma").is_not_null()).then(residual).otherwise(pl.col("inst"))


def _tensor_flops(per_kernel: pl.DataFrame, families: dict[str, str] | None) -> pl.DataFrame:
    fam = pl.DataFrame({"source_file": list((families or {}).keys()),
                        "family": list((families or {}).values())},
                       schema={"source_file": pl.String, "family": pl.String})
    df = per_kernel.join(fam, on="source_file", how="left")
    shapes = df["kernel_name"].unique().to_list()
    shape_df = pl.DataFrame({"kernel_name": shapes, "shape_flops": [shape_flops(n) for n in shapes]},
                            schema={"kernel_name": pl.String, "shape_flops": pl.Float64})
    df = df.join(shape_df, on="kernel_name", how="left", nulls_equal=True)
    family = pl.col("family").fill_null("")
    df = df.with_columns(_mma_instructions(family).alias("mma"))
    inst_any = pl.coalesce("inst_opcode", "mma")
    flops = (pl.when(pl.col("ops").is_not_null()).then(pl.col("ops"))
             # Hopper's hmma op path reads 0 for wgmma kernels: 0 ops with instructions is unknown.
             .when(pl.col("ops_opcode").is_not_null()
                   & ~((pl.col("ops_opcode") == 0) & (inst_any.fill_null(0) > 0))).then(pl.col("ops_opcode"))
             .when((family == "volta") & pl.col("inst").is_not_null()).then(pl.col("inst") * 512.0)
             .when(family.is_in(list(_SHAPE_FAMILIES)) & inst_any.is_not_null()
                   & pl.col("shape_flops").is_not_null()).then(inst_any * pl.col("shape_flops"))
             .when((inst_any == 0) & pl.col("ops_opcode").is_null()).then(0.0))
    evidence = [pl.col(c) for c in ("ops", "ops_opcode", "inst_opcode", "mma", "activity")]
    active = pl.when(pl.any_horizontal([e.is_not_null() for e in evidence])).then(
        pl.any_horizontal([e.fill_null(0) > 0 for e in evidence]))
    # Thread-level hfma instructions that were HFMA2.MMA moves (counted as FP16 FLOPs otherwise).
    moves = pl.when((family != "volta") & pl.col("hfma").is_not_null() & pl.col("inst").is_not_null()).then(
        pl.min_horizontal(pl.col("inst") * 32.0, pl.col("hfma")))
    return df.select(*KEYS, flops.alias("flops_tensor"), active.alias("tensor_active"), moves.alias("hfma_moves"))
