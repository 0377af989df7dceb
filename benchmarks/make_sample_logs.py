"""Generate `sample_logs/`, roofreport's own demo folder, deterministically.

The story is a course TA's "ImageNet analysis": resnet18 (mixed precision, AMP) and vgg11 (FP32,
which cuDNN runs as TF32 on the A100) trained at batch size 64 on an A100-SXM4-40GB and a
Tesla V100-SXM2-16GB, plus a 2019-style nvprof batch-size sweep of alexnet on four Tesla K80s.
Every number is invented, but follows from one small model: layer shapes give FLOPs and bytes,
a per-kernel efficiency against the named GPU's peaks gives durations (so nothing lands above
a roof), and the layouts follow the real tools' output as documented in the corpus field guides
(`../shared/corpus/FORMATS-*.md`). No corpus file or block of one is copied.

    python benchmarks/make_sample_logs.py            # (re)write sample_logs/
    python benchmarks/make_sample_logs.py --check    # exit 1 when a committed file differs
    python benchmarks/make_sample_logs.py --out DIR  # write elsewhere

The pieces live in `benchmarks/samples/`, one module per tool, and are reusable to build larger
inputs: `workload.resnet18_iteration`/`vgg11_iteration` give one training step's `Kernel`s for a
GPU, `workload.simulate(..., iterations=N)` a trace of N steps, and the writers (`ncu.ncu_text`,
`ncu.ncu_csv`, `nsys.nsys_gputrace_csv`, `nsys.nsys_stats_text`, `smi.smi_query_csv`,
`smi.smi_dmon`, `nvprof.nvprof_summary_csv`, `nvprof.nvprof_trace_csv`, ...) turn them into the
tools' layouts; `runs.py` composes the A100/V100 runs. The GPU series beyond nvidia-smi's are
their own: `dcgm.py` (dcgmi dmon, dcgm-exporter), `tegrastats.py`, and `smi.smi_compute_apps`;
`rocm.py` writes the AMD folder (rocprof, rocprofv3, rocprof-compute, rocm-smi, amd-smi);
`ddp.py` a four-rank DistributedDataParallel job's Kineto traces, one per rank.
This script writes the folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # (run as a script: `samples` beside it)

from samples.dcgm import dcgm_files
from samples.ddp import files as ddp_files
from samples.gpus import V100, rng_for
from samples.nvprof import sweep_files
from samples.pytorch import files as pytorch_files
from samples.rocm import rocm_files
from samples.runs import RUNS, run_files
from samples.smi import Load, compute_apps_file, smi_dmon
from samples.tegrastats import tegrastats_files

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "sample_logs"


# -- the folder ------------------------------------------------------------------------------

def dmon_file() -> dict[str, str]:
    rng = rng_for("v100/dmon")
    load = Load(util=96, util_sd=1.5, mem_util=61, mem_mib=5871, power=258, warmup_s=5, train_s=172, tail_s=3)
    return {"v100/dmon/gpu_utilization_v100.txt": smi_dmon(V100, load, "[ta@gpu-v100-07 ~]$ ", rng)}


TOML = """\
# roofreport.toml: what the paths do not say. The A100/V100 runs all trained at batch size 64
# (main.py -b 64); the folders only name the GPU and the model.

[[run]]
match = "a100/*/*"
batch_size = 64

[[run]]
match = "v100/resnet18/*"
batch_size = 64

[[run]]
match = "v100/vgg11/*"
batch_size = 64

# The LeNet-5 run profiled with torch.profiler trained at batch 256 (train_lenet5.py --batch-size 256).
[[run]]
match = "a100/lenet5/*"
batch_size = 256
"""


def all_files() -> dict[str, str | bytes]:
    """Relative path -> the file's text (or bytes: the rocpd SQLite database)."""
    files: dict[str, str | bytes] = {}
    for plan in RUNS:
        files.update(run_files(plan))
    files.update(dmon_file())
    files.update(compute_apps_file())
    files.update(sweep_files())
    files.update(dcgm_files())
    files.update(tegrastats_files())
    files.update(pytorch_files())
    files.update(ddp_files())
    files.update(rocm_files())
    files["roofreport.toml"] = TOML
    return dict(sorted(files.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for rel, text in all_files().items():
        path = args.out / rel
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        if args.check:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for rel in stale:
        print(f"out of date: {rel}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
