"""The fixed schemas of the shared tables every parser fills (README: Tables).

Base units throughout: ns, bytes, FLOP, %, W, MiB, Hz. Unknown is null, never 0.
Every row remembers `source_file` and `source_line`. `empty(name)` and `conform(name, df)`
give a frame with exactly the table's columns, in order, with the right types.
"""

from __future__ import annotations

from functools import lru_cache

import polars as pl

from roofreport.tables.frames import shared_strings

Str, I64, F64, Bool = pl.String, pl.Int64, pl.Float64, pl.Boolean

_SOURCE = {
    "run": Str,                # the run the row belongs to (`runs.run`)
    "source_file": Str,        # the file the row was read from, as given (`files.path`)
    "source_line": I64,        # its line in that file (1-based; a JSON trace: the event's position)
}

# kernels: one row per kernel launch (ncu, nsys/nvprof/PyTorch traces) or per summary row (nsys
# kern sum, nvprof summary: `kind` "summary", `count` launches), with the roofline quantities
# the log counted.
KERNELS = {
    **_SOURCE,
    "launch_id": I64,          # per-file launch index (ncu ID, trace row); joins `metrics`
    "name": Str,               # full name as the log printed it
    "short_name": Str,         # no template arguments, no parameter list
    "category": Str,           # conv, gemm, elementwise, ... (data/kernel_categories.tsv); other; a GEMM by what launched it
    "category_by_name": Str,   # the name rule's reading (gemm for a Winograd convolution's GEMM)
    "category_source": Str,    # what decided `category`: "name", "launch neighbourhood", "operator"
    "region": Str,             # NVTX path / profiler range / phase when known
    "operator": Str,           # the operators open around its launch, outermost first (a Kineto
                               # trace's cpu_op path: aten::conv2d/aten::convolution/...); null: not logged
    "kind": Str,               # "launch" or "summary"; "view": a PyTorch table view that gives no totals
    "count": I64,              # launches the row stands for
    "duration_ns": F64,        # total for the row
    "min_ns": F64,             # a summary row's per-launch minimum, median and maximum, as the log
    "median_ns": F64,          # printed them (nsys kern sum; nvprof prints no median); null for a
    "max_ns": F64,             # launch row and where the log printed none
    "device": Str,             # the device as the log names it
    "context": I64,            # CUDA context id
    "stream": I64,             # CUDA stream id
    "grid": Str,               # launch grid "(x, y, z)"
    "block": Str,              # thread block "(x, y, z)"
    "flops_fp64": F64,         # FLOPs per precision (docs/methodology.md: fma counts twice)
    "flops_fp32": F64,
    "flops_fp16": F64,
    "flops_tensor": F64,       # tensor-core FLOPs where an op-path counter gives them
    "dram_bytes": F64,         # bytes moved to and from device memory
    "l2_bytes": F64,
    "l1_bytes": F64,
    "dram_bytes_derived": Bool,  # true: dram_bytes is the logged DRAM byte rate × duration, no count
    "flops_complete": Bool,    # false when tensor-core work is known or suspected missing
    "tensor_active": Bool,     # tensor pipes busy or tensor instructions counted
    "tensor_precision": Str,   # input type of the kernel's largest matrix work, where counters say it
                               # (fp64, fp32, bf16, fp16): whose matrix ("tensor") peak applies
    "sm_clock_hz": F64,        # the SM clock the counters ran at, when logged (ncu's SM Frequency)
    "mem_clock_hz": F64,       # the memory clock they ran at, when logged (ncu's DRAM Frequency)
    "peak_flops_fp32": F64,    # the log's own .peak_sustained ceilings, FLOP/s
    "peak_flops_fp64": F64,
    "peak_flops_fp16": F64,
    "peak_dram_bytes_per_s": F64,
    "peak_l2_bytes_per_s": F64,   # the log's L2 / L1 ceilings (lts__t_bytes, l1tex__t_bytes peaks)
    "peak_l1_bytes_per_s": F64,
    "rank": I64,               # the process's rank in a distributed job (a Kineto trace's
                               # `distributedInfo`; the process of an nsys or rocprof trace of
                               # several, families/common/processes.py); null: the log says
                               # none (`runs.rank` may)
    # Derived (roofreport/model/): `roofreport.read` fills it; the pipeline leaves it null.
    "in_run_total": Bool,      # its duration is part of its run's kernel_time_ns (the time source, not a copy)
}

# metrics: every metric the logs printed, long form (one row per launch and metric), nothing dropped.
METRICS = {
    **_SOURCE,
    "launch_id": I64,          # joins `kernels.launch_id` of the same file
    "kernel_name": Str,
    "device": Str,
    "section": Str,            # the ncu section (or the reader's group) the metric was printed in
    "metric": Str,             # metric name as printed (display name or counter name)
    "stat": Str,               # null for a single value; "min"/"max"/"avg"/"total" in summaries
    "unit": Str,               # unit as printed
    "value": F64,              # scaled to base units; null when not numeric
    "value_text": Str,         # the text as printed (kept for non-numeric values)
}

# activities: the timeline of traces (nsys, nvprof, PyTorch): kernels, memcpy and memset.
ACTIVITIES = {
    **_SOURCE,
    "kind": Str,               # "kernel", "memcpy", "memset", ...
    "name": Str,
    "start_ns": F64,           # from the trace's own origin
    "duration_ns": F64,
    "bytes": F64,              # bytes a copy or set moved
    "device": Str,
    "context": I64,
    "stream": I64,
    "correlation_id": I64,     # links the activity to the API call that launched it
    "grid": Str,
    "block": Str,
    "rank": I64,               # the process's rank in a distributed job (a Kineto trace's
                               # `distributedInfo`; the process of an nsys or rocprof trace of
                               # several, families/common/processes.py); null: the log says
                               # none (`runs.rank` may)
}

# api_calls: CUDA runtime and driver calls, summed (`kind` "summary") or one row per call ("trace").
API_CALLS = {
    **_SOURCE,
    "kind": Str,               # "summary" or "trace"
    "name": Str,
    "calls": I64,
    "total_ns": F64,
    "avg_ns": F64,
    "min_ns": F64,
    "max_ns": F64,
    "start_ns": F64,
}

# samples: GPU time series of the monitors (nvidia-smi, DCGM, tegrastats), one row per GPU and sample.
SAMPLES = {
    **_SOURCE,
    "gpu_index": I64,
    "gpu_name": Str,
    "timestamp": pl.Datetime("us"),   # absolute time when the log gave a date
    "elapsed_s": F64,                 # seconds since the file's first sample
    "util_gpu_pct": F64,
    "util_mem_pct": F64,
    "mem_used_mib": F64,
    "mem_total_mib": F64,
    "power_w": F64,
    "power_limit_w": F64,
    "temperature_c": F64,
    "sm_clock_mhz": F64,
    "mem_clock_mhz": F64,
    "pstate": Str,                    # performance state as printed (P0..P12), nvidia-smi only
    # DCGM profiling fields (`dcgmi dmon -e 1002,1003,1004,1005`, dcgm-exporter), as % of time
    # or of capacity: the GPU's real activity, where utilization.gpu only says "a kernel ran".
    "sm_active_pct": F64,             # SMACT: cycles an SM had at least one warp resident, over all SMs
    "sm_occupancy_pct": F64,          # SMOCC: resident warps / the SMs' maximum warps
    "tensor_active_pct": F64,         # TENSO: cycles the tensor (HMMA) pipes were busy
    "dram_active_pct": F64,           # DRAMA: cycles device memory was sending or receiving
    # A row with `pid` is one process's sample (`--query-compute-apps`, `--query-accounted-apps`):
    # its GPU-wide columns are null and only the process columns say something.
    "pid": I64,
    "process_name": Str,
    "process_mem_mib": F64,           # GPU memory the process used (accounted apps: its maximum)
}

# regions: NVTX ranges, profiler ranges, PyTorch annotations, operators and training phases.
REGIONS = {
    **_SOURCE,
    "kind": Str,               # "nvtx", "profiler_range", "phase"
    "name": Str,
    "path": Str,               # full push/pop path, "/"-joined
    "start_ns": F64,
    "duration_ns": F64,        # total for the row
    "count": I64,
    "flops": F64,              # FLOPs of the row's operator calls, each call counted once (PyTorch
                               # traces with shapes: `families/pytorch/flops.py`); null: none counted
}

# What the analysis adds to a step (`analysis/steps.py`): `roofreport.read` fills them, the
# pipeline leaves them null.
STEP_METRICS = {
    "model_flops": F64,           # the step's model FLOPs: flops - recompute_flops, or the given count
    "model_flops_source": Str,    # "shapes", "trace flops", "flop counter FILE", "--model-flops"
    "peak_precision": Str,        # bf16, fp16, tf32 (fp32 on TF32 tensor cores), fp32, fp64, fp8
    "peak_flops_per_s": F64,      # the GPU's DENSE peak at that precision (never the sparsity figure)
    "peak_source": Str,           # which peak: "Tensor BF16 dense, H100 SXM5 80GB (datasheet)"
    "achieved_flops_per_s": F64,  # model_flops / duration
    "mfu_pct": F64,               # model FLOPs utilisation: model_flops / duration / peak, %
    "hfu_pct": F64,               # hardware FLOPs utilisation: flops (recomputation too) / duration / peak
    "outlier": Bool,              # the step's time is far from its run's median (left out of medians)
    "outlier_reason": Str,
}

# One row per run (and rank) and training step: `ProfilerStep#N` ranges of PyTorch traces
# (`families/pytorch/steps.py`), the whole trace where it marks no steps.
STEPS = {
    **_SOURCE,
    "step": I64,                  # N of ProfilerStep#N; null: the whole trace, which marks no steps
    "name": Str,                  # "ProfilerStep#N" or "whole trace"
    "rank": I64,                  # the process's rank in a distributed job
    "device": Str,                # the GPU whose time is split (the one most kernels ran on)
    "start_ns": F64,              # the step's window on the wall clock, from the trace's first event
    "duration_ns": F64,
    "compiled": Bool,             # torch.compile'd code ran in the step
    "flops": F64,                 # FLOPs of the counted operator calls (recomputation included);
                                  # null: the trace has no shapes for them
    "recompute_flops": F64,       # forward work redone in the backward (activation checkpointing)
    "flops_matmul": F64,          # by operator kind
    "flops_attention": F64,
    "flops_conv": F64,
    "flops_ops": I64,             # operator calls counted
    "flops_missing_ops": I64,     # matrix/attention/convolution calls whose shapes give no FLOPs
    "flops_source": Str,          # "shapes", "trace" (the profiler's `flops` args), "shapes and trace"
    "precision": Str,             # the input type doing most FLOPs: bf16, fp16, fp32, fp64, fp8
    "causal_attention": Bool,     # causal attention counted in full, as FlopCounterMode counts it
    # The step's window on the GPU: compute + communication + memory + idle = duration_ns.
    "compute_ns": F64,            # a kernel other than communication ran
    "communication_ns": F64,      # only collectives (NCCL...) ran
    "memory_ns": F64,             # only memcpy/memset ran
    "idle_ns": F64,               # nothing ran
    "comm_overlap_ns": F64,       # communication time during which compute ran too
    "idle_dataloader_ns": F64,    # idle while a data-loader range was open
    "idle_sync_ns": F64,          # idle around a synchronising CUDA call
    "idle_launch_ns": F64,        # idle until the CPU launched the next work
    "idle_other_ns": F64,         # idle with work queued (dependencies)
    "kernel_launches": I64,       # CUDA launch calls made in the step (a graph launch counts once)
    "kernels": I64,               # GPU kernels launched from the step
    "time_matmul_ns": F64,        # kernel time the step's matmul calls launched
    "time_attention_ns": F64,
    "time_conv_ns": F64,
    "time_other_ns": F64,         # every other compute kernel
    **STEP_METRICS,
}

# Run totals (model/totals.py): `roofreport.read` fills them; the pipeline leaves them null.
RUN_TOTALS = {
    "kernel_time_ns": F64,        # GPU kernel time of the run's time source, transfers apart
    "transfer_time_ns": F64,      # memcpy/memset time that source lists
    "time_source": Str,           # which log gave the time ("nsys trace", "nvprof summary"...)
    "kernel_launches": I64,       # launches behind kernel_time_ns
    "iterations": I64,            # steps the logs show (step markers, loss-kernel launches)
    "iterations_source": Str,
    "time_per_iteration_ns": F64,  # kernel_time_ns / iterations
    "elapsed_per_iteration_ns": F64,  # a training batch as the job ran: the log's printed batch time less its data wait
    "flops": F64,                 # every counted kernel, every precision
    "flops_complete": Bool,       # false: tensor-core work went uncounted (a lower bound)
    "dram_bytes": F64,            # every counted kernel, with FLOPs or without
    "dram_bytes_derived": Bool,   # some are a logged DRAM byte rate × duration (no count logged)
    "counted_kernels": I64,       # launches whose counters were read (one file per run)
    "counted_time_ns": F64,       # their time: a trace's when it has them, else their own
    "counted_time_source": Str,
    "setup_time_ns": F64,         # copies before the run's first kernel (a trace's weight upload): once
    "devices": I64,               # GPUs the time source's kernel rows name (a trace of several devices)
    "arithmetic_intensity": F64,  # flops / dram_bytes
    "achieved_flops_per_s": F64,  # flops of the timed counted kernels / their time
    "roof_precision": Str,        # the precision doing most FLOPs: whose ceiling applies (fp32: none counted)
    "peak_flops_per_s": F64,
    "peak_dram_bytes_per_s": F64,
    "ridge_ai": F64,              # peak FLOP/s / DRAM bandwidth
    "attainable_flops_per_s": F64,  # the roof at this intensity: min(ceiling, DRAM bandwidth × intensity)
    "pct_of_roof": F64,           # achieved / attainable at this intensity, in percent
    "bound": Str,                 # "memory" | "compute" | "mixed" (at the ridge) | "latency" | null, also when the counters cover under half the run's kernel time and the kernels they name too (model/bound.py)
    "bound_note": Str,            # why no bound class, or the share of time on each side that gave it ("classed by kernel name: ..." when so)
    "compute_time_share": F64,    # share of the counted launches' classified time in compute-side kernels (0-1)
    "bound_coverage": F64,        # share of the run's kernel time the counted launches cover (0-1); under 0.5: classed by kernel name, or no class
    "bound_coverage_by_name": F64,      # share of the run's kernel time in kernels (short names) with a counted launch (0-1)
    "compute_time_share_by_name": F64,  # of that time, the share whose counted launches of its name (its shape where counted) are compute-side
    "memory_time_share_by_name": F64,   # ... memory-side; the rest: names counted on both sides of the ridge
    "fma_share": F64,             # FMA share of the FP instructions at roof_precision, where counted (0-1)
    "ceiling": Str,               # the compute ceiling the run is judged by ("FP32 at 0% FMA: half the peak")
    "ceiling_flops_per_s": F64,   # its value: peak_flops_per_s × (1 + fma_share) / 2, else the peak
    "roof_clock": Str,            # the SM clock the compute roof is at, and what said so
    "parallelism": Str,           # how the work was split over GPUs, from the collectives (model/parallel.py):
                                  # data-parallel, "data-parallel, sharded", DataParallel single-process,
                                  # pipeline, tensor; null: no collective ran
}

# runs: one row per run, the unit of comparison: its identity (model, GPU, parameters, from the
# logs, the paths and roofreport.toml) and its totals, counted over every kernel of the run.
RUNS = {
    "run": Str,                # stable id: a file's path (`#N` for a profiler session), a folder
    "label": Str,              # human label from the identity (model · GPU · parameters), unique
    # The run's GPU, as the one resolver found it (gpu/resolve.py; README: "How a run's GPU is found")
    "gpu": Str,                # the GPU as the deciding evidence spells it: logged name, path token, "CC 8.0", --gpu
    "gpu_model": Str,          # key in the GPU database, or null (no peaks)
    "gpu_label": Str,          # the one name reports use: the table's label, the logged name,
                               # "GPU not named" (with the kernels' class when they tell), "CPU"
    "gpu_family": Str,         # architecture family (volta, hopper, cdna2, cdna3...): the kernel counters' rules
    "gpu_evidence": Str,       # what decided: "user" (--gpu, toml), "log", "cc", "path"; null: nothing
    "gpu_assumed": Bool,       # a default variant stands in for one the evidence did not name
    "gpu_note": Str,           # why assumed (the variants' peak span), what disagreed; null: nothing to say
    "model": Str,
    "batch_size": I64,
    "learning_rate": F64,
    "experiment": Str,
    "precision": Str,
    "phase": Str,
    "tool": Str,
    "tool_version": Str,
    "host": Str,
    "command": Str,
    "source_dir": Str,
    "files": I64,
    "program": Str,            # the profiled program (script or binary) when the log names it
    "workers": I64,
    "optimizer": Str,
    "epochs": I64,
    "job": Str,                # Slurm job id, PID or time stamp that tells executions apart
    "session": I64,            # the profiler session of a log that holds several (1-based)
    "device_kind": Str,        # "cpu" when the log shows the run on the CPU
    "job_gpus": I64,           # GPUs the run's batch-job script asked for (`#SBATCH --gres=gpu:k80:4`)
    "job_script": Str,         # that script and its directive (`imagenet/run.sh: --gres=gpu:k80:4`)
    # A rank of a distributed job is a run of its own (pipeline/runs.py); its job groups its ranks.
    "rank": I64,               # the process's rank (Kineto's distributedInfo, `rank-N` in the name, or
                               # the order of per-process files that ran together); null for a
                               # trace of several processes, whose rows carry theirs
    "world_size": I64,         # the job's processes, as the log gives them
    "distributed_job": Str,    # the job whose rank this run is (`traces/sampled_rank-*.json.gz`):
                               # its runs share it; null: no rank of a job
    "ranks": I64,              # the ranks of that job the inputs hold (its runs); null: no rank of a job
    "params": Str,             # JSON object: the run's parameters that vary across the dataset
    "all_params": Str,         # JSON object: every parameter the logs, names or toml give the run
    "duplicate_of": Str,       # the run this one copies (history folder, prev_*, identical file)
    "provenance": Str,         # JSON object: field -> toml | log | path | label | folder | database (gpu: its gpu_evidence, or toml)
    "cut_short": Bool,         # the log stops mid-run: profiler timeout, job killed, cut trace
    "cut_short_reason": Str,   # what the log says, with file and line
    "failure": Str,            # a run without kernels: why its logs hold none (pipeline/failures.py codes)
    "failure_reason": Str,     # ... in words, with the log's own line, file and line number
    "clock_domain": Str,       # an ncu run's clocks when no frequency is logged: base, boost or unlocked (gpu/clocks.py)
    "clock_source": Str,       # what said so: the version's default or --clock-control on the command line
    # What the program's own progress lines print (pipeline/progress.py): "Epoch: [0][10/4184] Time 0.048"
    "epoch_steps": I64,        # training batches per epoch, as printed
    "logged_epochs": I64,      # training epochs the log printed to their end
    "validation_steps": I64,   # validation batches per epoch, as printed ("Test: [0/163]")
    "step_time_ns": F64,       # steady-state elapsed time of one training batch, as printed (median)
    "data_time_ns": F64,       # ... of which waiting for data
    "progress_source": Str,    # the first progress line, with file and line
    **RUN_TOTALS,
}

# files: one row per file found, with what became of it (`roofreport inspect`).
FILES = {
    "path": Str,
    "family": Str,
    "variant": Str,
    "status": Str,             # "ok", "partial", "error", "skipped"
    "run": Str,
    "gpu_family": Str,         # the family of its run's GPU (the first run's for a file of several)
    "tool_version": Str,
    "encoding": Str,
    "size_bytes": I64,
    "rows": Str,               # JSON object: table -> row count
    "warnings": I64,
    "error": Str,
    "failure": Str,            # a profiler log without kernels: why (pipeline/failures.py codes)
    "failure_reason": Str,     # ... in words, with the log's own line
}

# estimates: the analytic FLOP and byte estimates users keep beside the logs (README "Estimates"),
# as written: one row per `[[estimate]]` of an estimates file (`estimates.toml`, `.csv`) or per
# torchinfo summary() printout (pipeline/estimates.py). `analysis/estimates.py` matches them to
# runs: an entry by `match`, `model`, `gpu`, `experiment`; a printout to the runs of its folder.
ESTIMATES = {
    **_SOURCE,                 # run: the file's run when the printout is inside a log, else null
    "kind": Str,               # "entry" (an estimates file's) or "torchinfo" (a summary() printout)
    "entry": I64,              # its number in the file (1-based)
    "flops": F64,              # FLOPs, as given
    "mult_adds": F64,          # multiply-adds (FLOPs = 2 x mult-adds where no FLOPs are given)
    "bytes": F64,              # DRAM bytes moved (a printout: its "Estimated Total Size")
    "batch_size": F64,         # the samples the numbers are for (scaled to each run's batch size)
    "factor": F64,             # a multiplier (3: forward + backward of training)
    "span": Str,               # what the numbers cover: iteration, forward, run
    "precision": Str,          # which peak: fp64 fp32 fp16 tensor_fp16 tensor_tf32 tensor_bf16
    "match": Str,              # a glob over run ids (`match` or `run`)
    "model": Str,              # the runs of this model (and `gpu`, `experiment`)
    "gpu": Str,
    "experiment": Str,
    "note": Str,
}

TABLES: dict[str, dict[str, pl.DataType]] = {
    "kernels": KERNELS,
    "metrics": METRICS,
    "activities": ACTIVITIES,
    "api_calls": API_CALLS,
    "samples": SAMPLES,
    "regions": REGIONS,
    "steps": STEPS,
    "estimates": ESTIMATES,
    "runs": RUNS,
    "files": FILES,
}

# Tables a parser may fill (runs and files are made by the pipeline).
PARSED_TABLES = ("kernels", "metrics", "activities", "api_calls", "samples", "regions", "steps", "estimates")

# The version of these tables' layout. Raise it when a column is added, removed, retyped or
# changes meaning: an incremental dataset written under another version is read again in full
# (`pipeline/store.py`), and so is one whose `fingerprint()` differs, should a change forget it.
SCHEMA_VERSION = 8


def fingerprint() -> str:
    """A short hash of every table's columns and types."""
    import hashlib

    text = ";".join(f"{name}:" + ",".join(f"{col}={dtype}" for col, dtype in columns.items())
                    for name, columns in TABLES.items())
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def empty(name: str) -> pl.DataFrame:
    return pl.DataFrame(schema=TABLES[name])


def conform(name: str, df: pl.DataFrame) -> pl.DataFrame:
    """Add missing columns as nulls, cast to the schema's types, order as the schema.

    A Categorical column becomes a String column whose rows share one copy of each distinct
    value (`frames.shared_strings`): parsers read repeated names as Categorical so a million
    launches of forty kernels do not hold a million copies of the names."""
    schema = TABLES[name]
    types = df.schema   # (polars builds a new Schema object each time it is asked)
    if len(types) == len(schema) and all(a == b for a, b in zip(types.items(), schema.items())):
        return df   # (already the table's columns, types and order: the casts would change nothing)
    shared = {col: shared_strings(df[col]) for col, dtype in types.items()
              if dtype == pl.Categorical and schema.get(col) == pl.String}
    if shared:
        df = df.with_columns(**shared)
    unknown = set(df.columns) - set(schema)
    if unknown:
        raise KeyError(f"table {name!r} has no column(s) {sorted(unknown)}")
    return df.select(_conforming(name, frozenset(df.columns)))


@lru_cache(maxsize=256)
def _conforming(name: str, present: frozenset[str]) -> list[pl.Expr]:
    """`conform`'s expressions for a frame holding the columns `present`, built once per table
    and set of columns: a reader's frames have a handful of shapes, and building ~50
    expressions cost ~0.4 ms per frame, several per small log."""
    return [pl.col(col).cast(dtype, strict=False) if col in present else pl.lit(None, dtype=dtype).alias(col)
            for col, dtype in TABLES[name].items()]
