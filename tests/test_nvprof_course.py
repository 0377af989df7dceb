"""The NYU Cloud & ML 2019 nvprof runs on K80/P40 (corpus/course, ../shared/corpus/FORMATS-smi_course.md §5.1):
each run's model, batch size, learning rate, GPU and experiment come from the file names in all
their variants, from the first-line label, or from the command line nvprof echoed; the NCCL and
winograd kernels of the 4-GPU DataParallel runs are in `kernels`."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest

from roofreport.pipeline import identity
from roofreport.pipeline.ingest import ingest
from tests.conftest import corpus_path

COURSE_NAME = re.compile(r"(?:^|/)(?:out|prev_out|n_out|ma_out|conv_out)\.(?:\d+_)?([a-z]+\d*)_(?:\d+_)?"
                         r"(\d+)_(\d*\.\d+)_(k80|p40)_([a-z_]+)\.\d+$")


@pytest.fixture(scope="module")
def pramit():
    return ingest([corpus_path("course", "pramitmallick-examples")], jobs=1)


def test_every_nvprof_file_is_read_or_says_why(pramit):
    nvprof = [f for f in pramit.files if f.family == "nvprof"]
    assert len(nvprof) == 163
    assert all(f.status in ("ok", "error") for f in nvprof)
    assert sum(f.status == "ok" for f in nvprof) == 143
    for f in nvprof:
        if f.status == "error":
            assert f.error and ("nvprof reported" in f.error or "the log ends" in f.error), f.path


def test_runs_named_by_the_course_pattern_carry_their_configuration(pramit):
    runs_table = pramit["runs"]
    files = pl.DataFrame([(f.path, f.run) for f in pramit.files if f.family == "nvprof"],
                         schema=["path", "run"], orient="row")
    checked = 0
    for path, run in files.iter_rows():
        m = COURSE_NAME.search(path)
        if not m:
            continue
        model, batch, lr, gpu, experiment = m.groups()
        got = runs_table.filter(pl.col("run") == run).row(0, named=True)
        assert (got["model"], got["batch_size"], got["experiment"]) == (model, int(batch), experiment), path
        # The learning rate nvprof's command line gives wins over the name (`..._0.001_p40_loss_only.744573`
        # ran `--lr 0.01`).
        assert got["learning_rate"] == float(re.search(r"--lr ([\d.]+)", got["command"]).group(1)), path
        assert gpu.upper() in got["gpu"].upper(), path  # `K80`, or the log's `Tesla K80`
        checked += 1
    assert checked == 140


def test_unnamed_runs_get_their_configuration_from_the_log(pramit):
    runs_table = pramit["runs"]

    def run(name: str) -> dict:
        return runs_table.filter(pl.col("run") == name).row(0, named=True)

    # `out.expCloudML.<job>` names nothing: the command line nvprof echoed does, and each job is
    # a run of its own.
    assert runs_table.filter(pl.col("run").str.starts_with("imagenet/outputs/out.expCloudML.")).height == 19
    first = run("imagenet/outputs/out.expCloudML.546940")
    assert (first["model"], first["batch_size"], first["learning_rate"]) == ("alexnet", 64, 0.01)
    assert json.loads(first["provenance"])["batch_size"] == "log"
    # The first-line label `hw_32_0.001_alexnet_k80` names the GPU.
    labelled = run("imagenet/outputs/out.expCloudML.714086")
    assert (labelled["model"], labelled["batch_size"], labelled["learning_rate"], labelled["gpu"]) == \
        ("alexnet", 32, 0.001, "K80")
    assert json.loads(labelled["provenance"])["gpu"] == "label"
    general = run("_deleted_in_history/imagenet/out.general_300_alexnet_16_0.01_full_mem.744566")
    assert (general["model"], general["batch_size"], general["learning_rate"], general["experiment"]) == \
        ("alexnet", 16, 0.01, "full_mem")


def test_nccl_and_winograd_kernels_of_the_four_gpu_runs(pramit):
    kernels = pramit["kernels"]
    run = kernels.filter(pl.col("source_file").str.ends_with("final/out.alexnet_16_0.01_k80_full.756013"))
    nccl = run.filter(pl.col("name") == "ncclBroadcastKernel_copy_i8(ncclColl)").row(0, named=True)
    assert (nccl["count"], nccl["duration_ns"], nccl["kind"]) == (36442, pytest.approx(299.45228e9), "summary")
    assert nccl["run"] == "imagenet/final/out.alexnet_16_0.01_k80_full.756013"
    winograd = run.filter(pl.col("short_name") == "cudnn::winograd::winograd3x3Kernel")
    assert winograd["count"].to_list() == [91122]
    every = kernels["name"]
    assert every.str.starts_with("ncclBroadcast").sum() == 58
    assert every.str.contains("winograd").sum() == 962
    # The whole folder: a share sweep over batch sizes has something to show.
    broadcast = kernels.filter(pl.col("short_name") == "ncclBroadcastKernel_copy_i8") \
        .join(pramit["runs"].select("run", "batch_size"), on="run")
    assert set(broadcast["batch_size"]) >= {4, 8, 16, 32, 64}


@pytest.mark.parametrize("tree", ["srinidhigoud-examples", "pranshu777-imagenet"])
def test_file_names_of_the_other_trees(tree):
    """Every log of the trees whose name carries a configuration gets all of it from its path
    (srinidhigoud: `results/<experiment>/<gpu>/out.<...>`, pranshu777: `<arch>_<gpu>_<bs>_<exp>`)."""
    root = corpus_path("course", tree)
    named = 0
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix in (".sh", ".py", ".md") or "expCloudML" in path.name:
            continue
        facts = identity.read_name(path.name).facts
        if facts.get("model") is None:
            continue
        named += 1
        assert facts.get("batch_size") and facts.get("gpu") in ("K80", "P40") and facts.get("experiment"), path
    assert named >= {"srinidhigoud-examples": 190, "pranshu777-imagenet": 20}[tree]


def test_name_variants():
    cases = {
        "out.alexnet_600_16_0.01_k80_full_mem.787359": ("alexnet", 16, 0.01, "K80", "full_mem"),
        "out.general_300_alexnet_16_0.01_full_cpu.744560": ("alexnet", 16, 0.01, None, "full_cpu"),
        "prev_out.alexnet_16_0.001_p40_loss_only.744573": ("alexnet", 16, 0.001, "P40", "loss_only"),
        "alex_k80_32_conv_mem.814771": ("alexnet", 32, None, "K80", "conv_mem"),
        "resnet18_k80_64_conv.815040.txt": ("resnet18", 64, None, "K80", "conv"),
        "hw_32_0.001_alexnet_k80": ("alexnet", 32, 0.001, "K80", None),
    }
    for name, want in cases.items():
        f = identity.read_name(name).facts
        got = (f.get("model"), f.get("batch_size"), f.get("learning_rate"), f.get("gpu"), f.get("experiment"))
        assert got == want, name
    # The Slurm job id is read (`%20` dropped); the timeout nvprof ran with is a parameter.
    assert identity.read_name("out.expCloudML_conv_float.811288%20").get("job") == "811288"
    assert identity.read_name("out.alexnet_600_16_0.01_k80_full_mem.787359").get("timeout_s") == 600
