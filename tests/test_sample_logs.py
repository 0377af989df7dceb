"""The demo folder `sample_logs/` (what `make report` renders): every file is read as the family it
imitates and parses cleanly, the runs carry model/GPU/batch size, the story it tells holds
(the K80 sweep's NCCL and Winograd shares, tensor-core counting per GPU), nothing sits above a
roof, and the committed files are exactly what `benchmarks/make_sample_logs.py` generates."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path, PurePosixPath

import polars as pl
import pytest

from roofreport import gpu
from roofreport.pipeline.ingest import ingest, parse_file
from roofreport.pipeline.sniff import sniff
from tests.conftest import ROOT, SAMPLE_LOGS

NOT_LOGS = {"README.md", "roofreport.toml"}
DEMO_FILES = sorted(p for p in SAMPLE_LOGS.rglob("*") if p.is_file() and p.name not in NOT_LOGS)
IMAGENET_RUNS = {
    "a100/resnet18": ("resnet18", "NVIDIA A100-SXM4-40GB"),
    "a100/vgg11": ("vgg11", "NVIDIA A100-SXM4-40GB"),
    "v100/resnet18": ("resnet18", "Tesla V100-SXM2-16GB"),
    "v100/vgg11": ("vgg11", "Tesla V100-SXM2-16GB"),
}
SWEEP_BATCHES = [16, 32, 64, 128]


def intended_family(rel: PurePosixPath) -> str | None:
    """The family each demo file was written to imitate (by its name, as the generator names them)."""
    name = rel.name
    if name.startswith("ncu-"):
        return "ncu"
    if name.startswith(("report_cuda_gpu_trace", "nsys-")):
        return "nsys"
    if name.startswith("nvidia-smi") or rel.parent.name == "dmon":
        return "nvidia-smi"
    if name.startswith(("dcgmi-", "dcgm-")):
        return "dcgm"
    if name.startswith("tegrastats"):
        return "tegrastats"
    if name.startswith("out."):
        return "nvprof"
    if rel.parent.name in ("lenet5", "ddp_4rank"):
        return "pytorch"
    if rel.parts[0] == "amd":
        return "rocm"
    return None


def _rel(path: Path) -> PurePosixPath:
    return PurePosixPath(path.relative_to(SAMPLE_LOGS).as_posix())


@pytest.fixture(scope="module")
def demo():
    return ingest([SAMPLE_LOGS], jobs=1)


def test_the_folder_holds_every_family_and_stays_small():
    families = {intended_family(_rel(p)) for p in DEMO_FILES}
    assert families == {"ncu", "nsys", "nvprof", "nvidia-smi", "dcgm", "tegrastats", "pytorch", "rocm"}
    sizes = {str(_rel(p)): p.stat().st_size for p in DEMO_FILES}
    # the AMD folder added ~100 KB to ~875 KB, the four ranks' traces of ddp_4rank/ ~120 KB, the AMD
    # traces and rocprofv2 job log of issue #34 (amd/mi210/cg, amd/mi250x/cg-mpi) ~66 KB, its
    # counter passes (amd/mi300x/stream-dgemm) ~15 KB and rocpd database (512-byte pages) ~62 KB
    assert sum(sizes.values()) < 1_300_000, sizes
    assert max(sizes.values()) < 120_000, sizes


@pytest.mark.parametrize("path", DEMO_FILES, ids=lambda p: str(_rel(p)))
def test_every_demo_file_is_sniffed_as_its_family_and_parses_ok(path):
    expected = intended_family(_rel(path))
    assert expected is not None, "a new demo file needs a rule in intended_family()"
    sniffed = sniff(path)
    assert sniffed.family == expected, sniffed.skip_reason
    assert sniffed.readable, sniffed.skip_reason
    result = parse_file(path, sniffed.spec.name, sniffed.variant, str(path))
    assert result.error is None, result.error.describe()
    assert sum(result.rows().values()) > 0


def test_readme_and_toml_are_skipped_not_misread():
    for name in NOT_LOGS:
        sniffed = sniff(SAMPLE_LOGS / name)
        assert not sniffed.readable and sniffed.family is None, (name, sniffed.variant)


def test_imagenet_runs_carry_model_gpu_and_the_toml_batch_size(demo):
    runs = demo["runs"]
    for run, (model, device) in IMAGENET_RUNS.items():
        row = runs.filter(pl.col("run") == run).to_dicts()
        assert len(row) == 1, runs["run"].to_list()
        row = row[0]
        assert (row["model"], row["gpu"], row["batch_size"]) == (model, device, 64)
        assert row["tool"] == "ncu+nsys+nvidia-smi"
    a100_resnet = runs.filter(pl.col("run") == "a100/resnet18")["files"][0]
    assert a100_resnet == 5  # ncu CSV, nsys trace, nsys --stats console, nvidia-smi query and compute-apps


def test_k80_sweep_runs_have_batch_sizes_16_to_128(demo):
    sweep = demo["runs"].filter(pl.col("run").str.starts_with("k80_sweep/") & (pl.col("model") == "alexnet")
                                & (pl.col("experiment") == "full")).sort("batch_size")
    assert sweep["batch_size"].to_list() == SWEEP_BATCHES
    assert set(sweep["learning_rate"].to_list()) == {0.01}
    assert set(sweep["gpu_model"].to_list()) == {gpu.match("Tesla K80").key}


def _sweep_share(demo, pattern: str) -> list[float]:
    full = r"^k80_sweep/out\.alexnet_\d+_0\.01_k80_full\.\d+$"
    kernels = demo["kernels"].filter(pl.col("run").str.contains(full))
    shares = kernels.group_by("run").agg(
        pl.col("duration_ns").filter(pl.col("name").str.contains(pattern)).sum().alias("part"),
        pl.col("duration_ns").sum().alias("all"),
        pl.col("run").str.extract(r"alexnet_(\d+)_", 1).cast(pl.Int64).first().alias("batch"))
    shares = shares.sort("batch")
    assert shares["batch"].to_list() == SWEEP_BATCHES
    return (shares["part"] / shares["all"]).to_list()


def test_sweep_nccl_share_falls_and_winograd_share_rises_with_batch(demo):
    nccl = _sweep_share(demo, "^nccl")
    winograd = _sweep_share(demo, "winograd")
    assert all(a > b for a, b in zip(nccl, nccl[1:])), nccl
    assert all(a < b for a, b in zip(winograd, winograd[1:])), winograd
    assert nccl[0] > 0.5 and nccl[-1] < 0.45
    assert winograd[0] < 0.02 and winograd[-1] > 0.15


def _ncu_kernels(demo, run: str) -> pl.DataFrame:
    return demo["kernels"].filter((pl.col("run") == run) & pl.col("source_file").str.contains("/ncu-"))


def test_tensor_core_work_is_counted_where_the_logs_allow_it(demo):
    # V100: 512 FLOP per HMMA.884 instruction; A100 resnet18: the fp16 op-path counter.
    v100 = _ncu_kernels(demo, "v100/resnet18").filter(pl.col("name").str.contains("s884"))
    assert v100.height == 12 and (v100["flops_tensor"] > 0).all() and v100["flops_complete"].all()
    inst = demo["metrics"].filter((pl.col("run") == "v100/resnet18")
                                  & (pl.col("metric") == "sm__inst_executed_pipe_tensor.sum"))
    assert v100["flops_tensor"].sum() == 512 * inst["value"].sum()
    a100 = _ncu_kernels(demo, "a100/resnet18").filter(pl.col("name").str.contains("sm80_xmma|s16816gemm"))
    ops = demo["metrics"].filter((pl.col("run") == "a100/resnet18")
                                 & (pl.col("metric") == "sm__ops_path_tensor_src_fp16_dst_fp32.sum"))
    assert a100.height == 7 and a100["flops_complete"].all()
    assert a100["flops_tensor"].sum() == ops["value"].sum() > 0


def test_a100_vgg11_tf32_convolutions_are_flagged_incomplete(demo):
    kernels = _ncu_kernels(demo, "a100/vgg11")
    tf32 = kernels.filter(pl.col("name").str.contains("tf32"))
    assert tf32.height == 1 and not tf32["flops_complete"].any() and tf32["flops_tensor"].is_null().all()
    sgemm = kernels.filter(pl.col("name").str.starts_with("ampere_sgemm"))
    assert sgemm.height == 7 and sgemm["flops_complete"].all() and (sgemm["flops_fp32"] > 1e6).all()


@pytest.mark.parametrize("run", sorted(IMAGENET_RUNS))
def test_no_ncu_kernel_sits_above_a_roof_at_its_logged_clock(demo, run):
    kernels = _ncu_kernels(demo, run)
    spec = gpu.match(IMAGENET_RUNS[run][1])
    assert kernels.height >= 21
    for k in kernels.iter_rows(named=True):
        seconds = k["duration_ns"] / 1e9
        at_clock = spec.at_clock(k["sm_clock_hz"])
        assert k["sm_clock_hz"] == pytest.approx(spec.base_clock_mhz * 1e6, rel=0.01)  # ncu locks to base
        assert k["flops_fp32"] / seconds <= at_clock.fp32, k["name"]
        assert (k["flops_fp16"] or 0) / seconds <= at_clock.fp16, k["name"]
        if k["flops_tensor"]:  # AMP fp16 on both GPUs (vgg11 counts none: FP32 on V100, uncounted TF32 on A100)
            assert k["flops_tensor"] / seconds <= at_clock.fp16_tensor, k["name"]
        assert k["dram_bytes"] / seconds <= spec.dram_bw, k["name"]
        assert k["dram_bytes"] <= k["l2_bytes"] <= k["l1_bytes"], k["name"]


def test_committed_files_are_what_the_generator_writes():
    spec = importlib.util.spec_from_file_location("make_sample_logs", ROOT / "benchmarks" / "make_sample_logs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    try:
        spec.loader.exec_module(module)
        generated = module.all_files()
    finally:
        del sys.modules[spec.name]
    committed = {str(_rel(p)) for p in DEMO_FILES} | {"roofreport.toml"}
    assert set(generated) == committed
    for rel, text in generated.items():
        if isinstance(text, bytes):   # a SQLite database: its content (the bytes carry SQLite's version)
            assert _dump((SAMPLE_LOGS / rel).read_bytes()) == _dump(text), f"{rel} is out of date"
            continue
        assert (SAMPLE_LOGS / rel).read_bytes() == text.encode("utf-8"), f"{rel} is out of date"


def _dump(data: bytes) -> list[str]:
    """The SQL that rebuilds a SQLite database of these bytes (schema and rows)."""
    import sqlite3
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "db"
        path.write_bytes(data)
        con = sqlite3.connect(path)
        try:
            return list(con.iterdump())
        finally:
            con.close()
