"""The rules that make runs, on synthetic path lists and logs: names and command lines
(pipeline/identity.py), grouping, sessions, sources and labels (pipeline/runs.py, labels.py),
copies (pipeline/duplicates.py), roofreport.toml and --exclude (pipeline/config.py). Layouts no
corpus folder has are here, so that course folders nobody has seen work too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path, PurePosixPath

import polars as pl
import pytest

from roofreport import gpu
from roofreport.families.common.textio import Document
from roofreport.families.nvprof.read import parse_log
from roofreport.families.spec import RunHints, Session
from roofreport.pipeline import config, duplicates, identity, labels, runs
from roofreport.pipeline.config import RunTable
from roofreport.pipeline.ingest import ingest
from tests.conftest import SAMPLE_LOGS

# -- names and command lines -------------------------------------------------------------------

@pytest.mark.parametrize("name, facts", [
    # whole-name layouts, where the order says what each number is
    ("out.alexnet_16_0.01_k80_full.756013",
     {"model": "alexnet", "batch_size": 16, "learning_rate": 0.01, "gpu": "K80", "experiment": "full", "job": "756013"}),
    ("out.alexnet_600_16_0.01_k80_full_mem.787359",
     {"model": "alexnet", "batch_size": 16, "learning_rate": 0.01, "gpu": "K80", "experiment": "full_mem",
      "job": "787359", "timeout_s": 600}),
    ("resnet18_p40_32_conv.815065", {"model": "resnet18", "gpu": "P40", "batch_size": 32, "experiment": "conv", "job": "815065"}),
    ("workers_8.out", {"workers": 8}),
    ("optim_adam.out", {"optimizer": "adam"}),
    ("seed_3.log", {"seed": 3}),
    ("num_workers_4.out", {"workers": 4}),
    ("triton_silu_2025.ncu-rep", {"experiment": "triton_silu"}),
    # spans anywhere in the name
    ("llama3_specdecode8-1_sampling_false_toks3_0.2_draft_4bit_L4.txt",
     {"model": "llama3", "gpu": "L4", "sampling": False, "toks": 3, "draft_bits": 4, "experiment": "specdecode8-1"}),
    ("bert-large_bs32_lr3e-5_fp16_a100.nsys.sqlite",
     {"model": "bert", "batch_size": 32, "learning_rate": 3e-5, "precision": "fp16", "gpu": "A100", "experiment": "large"}),
    ("gpt2_h100x8_seq1024_bf16.ncu-rep.csv",
     {"model": "gpt2", "gpu": "H100", "gpus": 8, "seq": 1024, "precision": "bf16"}),
    ("mistral-7b_int4_rtx_4090_run2.txt",
     {"model": "mistral", "model_size": "7b", "precision": "int4", "gpu": "RTX 4090", "experiment": "run2"}),
    ("conv2d_kernel3_stride1_size64.metrics", {"kernel": 3, "stride": 1, "size": 64, "experiment": "conv2d"}),
    ("nvidia-smi_20160813115943_ABB.log", {"job": "20160813115943", "experiment": "ABB"}),
    ("slurm-766274.out", {"job": "766274"}),
    # what a name says about the tool or the report is no identity
    ("tmp_nsys_gputrace.csv", {}),
    ("report_cuda_gpu_kern_sum.csv", {}),
    ("ncu-log-vgg11.txt", {"model": "vgg11"}),
    ("fluidsGL_cuda_gpu_trace_base.csv", {"experiment": "fluidsGL"}),
    ("torch-ex-smi.csv", {"experiment": "torch-ex"}),
    ("kineto_resnet18_b32.json", {"model": "resnet18", "batch_size": 32}),
    ("gpt_b200_bf16.log", {"gpu": "B200", "model": "gpt", "precision": "bf16"}),
    # what names a monitor's output is no experiment
    ("nvidia-smi-compute-apps.csv", {}),
    ("dcgm-exporter-scrapes.prom", {}),
    ("dcgmi-dmon.log", {}),
    ("tegrastats.log", {}),
    ("prompt_tuning.log", {"experiment": "prompt_tuning"}),
    # one process of a distributed job
    ("sampled_rank-0.json.gz", {"experiment": "sampled", "rank": 0}),
    ("worker0_local_rank_3.pt.trace.json", {"experiment": "worker0", "rank": 3}),
    ("franklin_ranks8.txt", {"experiment": "franklin", "ranks": 8}),
])
def test_what_a_name_says(name, facts):
    assert identity.read_name(name).facts == facts


def test_copy_markers_and_placeholders():
    # a copy's marker says nothing of the run (duplicates.py tells the copies)
    assert identity.read_name("prev_out.alexnet_16_0.001_k80_full.741534").key == \
        identity.read_name("out.alexnet_16_0.001_k80_full.741534").key
    assert identity.read_name("_deleted_in_history", is_file=False).facts == {}
    assert duplicates.marked(PurePosixPath("x/prev_out.a.1")) and not duplicates.marked(PurePosixPath("x/n_out.a.1"))
    assert duplicates.in_history(PurePosixPath("_deleted_in_history/imagenet/out.a.1"))
    # a variable the job script never filled in says nothing
    echoed = identity.read_name("alexnet_4_0.01_%GPU%_full", is_file=False).facts
    assert echoed == {"model": "alexnet", "batch_size": 4, "learning_rate": 0.01, "experiment": "full"}


def test_names_that_differ_by_a_variant_token_have_different_keys():
    keys = {identity.read_name(f"llama3_specdecode8-1_toks3{v}_L4.txt").key for v in ("", "_draft_4bit", "_draft_8bit")}
    assert len(keys) == 3
    assert identity.read_name("out.x_16_0.01_k80_full.1001").key != identity.read_name("out.x_16_0.01_k80_full.1002").key
    assert identity.read_name("ncu-log-vgg11.txt").key == identity.read_name("nsys_vgg11_cuda_gpu_trace.csv").key


@pytest.mark.parametrize("command, facts", [
    ("python main.py --arch resnet18 -b 64 --epochs 1 --lr 0.10 /data",
     {"program": "main.py", "model": "resnet18", "batch_size": 64, "epochs": 1, "learning_rate": 0.1}),
    ("./q3_2a.o 1", {"program": "q3_2a.o"}),
    ("python3 -B lab2.py --num-workers 8 --optimizer Adam", {"program": "lab2.py", "workers": 8, "optimizer": "adam"}),
    ("torchrun --nproc_per_node=4 train.py --model gpt2 --fp16 --batch_size=8 --gpu 0 --seed 1",
     {"program": "train.py", "model": "gpt2", "precision": "fp16", "batch_size": 8, "seed": 1}),
    ("/usr/bin/python3.8 bench.py --model meta-llama/Llama-3-8B --dtype bfloat16",
     {"program": "bench.py", "model": "llama-3-8b", "precision": "bfloat16"}),
    ("", {}),
    # whole numbers past 64 bits stay text (a batch size of 1e308 is no batch size)
    ("python main.py -b 1e308 --epochs inf --seed 99999999999999999999 --lr 1e308",
     {"program": "main.py", "batch_size": "1e308", "epochs": "inf", "seed": "99999999999999999999",
      "learning_rate": 1e308}),
])
def test_what_a_command_line_says(command, facts):
    assert identity.read_command(command) == facts


def test_a_batch_size_past_64_bits_is_no_batch_size(tmp_path):
    """`-b 1e308` in a profiled command (a fuzzed log) left the runs table unbuildable: the
    whole read failed with an internal error."""
    text = (SAMPLE_LOGS / "k80_sweep" / "out.alexnet_64_0.01_k80_full.812075").read_text()
    (tmp_path / "nvprof.log").write_text(text.replace(" -b 64 ", " -b 1e308 "))
    data = ingest([tmp_path])
    assert data.tables["runs"]["batch_size"].to_list() == [None] and data.files[0].status == "ok"


# -- grouping ----------------------------------------------------------------------------------

def _gpu(name: str) -> str:
    """The one name the GPU database gives this device (the name itself when it knows none)."""
    spec = gpu.match(name)
    return spec.label if spec else name


def _file(index: int, rel: str, family: str = "nsys", variant: str = "gputrace csv", root: str = "logs",
          **hints) -> runs.LogFile:
    return runs.LogFile(index=index, rel=PurePosixPath(rel), root=root, family=family, variant=variant,
                        hints=RunHints(**hints))


def _plan(files: list[runs.LogFile]) -> tuple[runs.Plan, dict[str, list[str]]]:
    plan = runs.plan(files)
    members: dict[str, list[str]] = {}
    for f in files:
        if f.index in plan.session_runs:
            for _, run in plan.session_runs[f.index]:
                members.setdefault(run, []).append(str(f.rel))
        else:
            members.setdefault(plan.file_run[f.index], []).append(str(f.rel))
    return plan, members


def _row(plan: runs.Plan, run: str) -> dict:
    return plan.runs.filter(pl.col("run") == run).row(0, named=True)


def test_logs_of_one_folder_with_nothing_of_their_own_are_one_run():
    plan, members = _plan([
        _file(0, "a100/vgg11/ncu-log-vgg11.txt", "ncu", "text 2023+"),
        _file(1, "a100/vgg11/tmp_nsys_gputrace.csv", device_name="NVIDIA A100-SXM4-40GB (0)"),
        _file(2, "a100/vgg11/nvidia-smi-query.csv", "nvidia-smi", "query csv"),
        _file(3, "v100/vgg11/ncu-log-vgg11.txt", "ncu", "text 2023+"),
    ])
    assert members == {"a100/vgg11": ["a100/vgg11/ncu-log-vgg11.txt", "a100/vgg11/tmp_nsys_gputrace.csv",
                                      "a100/vgg11/nvidia-smi-query.csv"],
                       # one log whose name says nothing more than its folder: the folder names the run
                       "v100/vgg11": ["v100/vgg11/ncu-log-vgg11.txt"]}
    row = _row(plan, "a100/vgg11")
    assert (row["model"], row["gpu"], row["files"], row["tool"]) == ("vgg11", "NVIDIA A100-SXM4-40GB (0)", 3,
                                                                     "ncu+nsys+nvidia-smi")
    assert row["gpu_label"] == _gpu("NVIDIA A100-SXM4-40GB")


def test_a_program_profiled_by_two_tools_is_one_run_per_program():
    plan, members = _plan([
        _file(0, "Results/app/app-smi.csv", "nvidia-smi", "query csv"),
        _file(1, "Results/app/app_cuda_gpu_trace_base.csv"),
        _file(2, "Results/app/other_cuda_gpu_trace_base.csv"),
    ])
    assert sorted(map(sorted, members.values())) == [["Results/app/app-smi.csv", "Results/app/app_cuda_gpu_trace_base.csv"],
                                                     ["Results/app/other_cuda_gpu_trace_base.csv"]]


def test_variant_tokens_keep_files_apart():
    names = ["m_toks3_L4.txt", "m_toks3_draft_4bit_L4.txt", "m_toks3_draft_8bit_L4.txt", "baseline_toks3_L4.txt"]
    plan, members = _plan([_file(i, f"runs/{name}", "nsys", "stats console 2023+") for i, name in enumerate(names)])
    assert len(members) == 4
    assert plan.runs["label"].n_unique() == 4


def test_two_jobs_of_one_configuration_are_two_runs_told_apart_by_job():
    plan, members = _plan([_file(0, "r/out.vgg16_16_0.01_k80_full.756014", "nvprof", "summary csv"),
                           _file(1, "r/out.vgg16_16_0.01_k80_full.756087", "nvprof", "summary csv")])
    assert len(members) == 2
    assert sorted(plan.runs["label"]) == [f"vgg16 · {_gpu('K80')} · job 756014", f"vgg16 · {_gpu('K80')} · job 756087"]


def test_a_nameless_log_beside_several_runs_stays_apart():
    plan, members = _plan([_file(0, "d/resnet18_a100.csv"), _file(1, "d/vgg11_a100.csv"),
                           _file(2, "d/gputrace.csv")])
    assert len(members) == 3


def test_two_logs_of_one_kind_or_of_different_commands_are_never_one_run():
    _, same_kind = _plan([_file(0, "d/stats.csv"), _file(1, "d/gputrace.csv")])
    assert len(same_kind) == 2
    _, commands = _plan([_file(0, "d/prof.log", "nvprof", "summary", command="./a 1"),
                         _file(1, "d/trace.csv", command="./a 5")])
    assert len(commands) == 2
    _, gpus = _plan([_file(0, "d/prof.log", "nvprof", "summary", device_name="Tesla K80"),
                     _file(1, "d/trace.csv", device_name="Tesla P40 (0)")])
    assert len(gpus) == 2


def test_each_session_of_a_concatenated_log_is_a_run_with_its_command():
    log = _file(0, "hw/q3.out", "nvprof", "summary", device_name="Quadro RTX 8000", command="./q3 1")
    log.sessions = [Session(10, RunHints(command="./q3 1")), Session(40, RunHints(command="./q3 5")),
                    Session(70, RunHints(command="./q3 10", device_name="Tesla T4"))]
    plan, members = _plan([log, _file(1, "hw/q3_smi.csv", "nvidia-smi", "query csv")])
    assert plan.session_runs[0] == [(10, "hw/q3.out#1"), (40, "hw/q3.out#2"), (70, "hw/q3.out#3")]
    assert members["hw/q3_smi.csv"] == ["hw/q3_smi.csv"]
    sessions = plan.runs.filter(pl.col("session").is_not_null())
    assert sessions["command"].to_list() == ["./q3 1", "./q3 5", "./q3 10"]
    # a session that names no device ran where the file's others did
    assert sessions["gpu"].to_list() == ["Quadro RTX 8000", "Quadro RTX 8000", "Tesla T4"]
    rtx, t4 = _gpu("Quadro RTX 8000"), _gpu("Tesla T4")
    assert sessions["label"].to_list() == [f"q3 1 · {rtx}", f"q3 5 · {rtx}", f"q3 10 · {t4}"]
    assert plan.label_of(0) == "hw/q3.out#1, hw/q3.out#2, hw/q3.out#3"


def test_identity_comes_from_toml_then_log_then_path_then_label():
    f = _file(0, "a100/out.resnet50_32_0.001_a100_full.1234", "nvprof", "summary",
              command="python main.py -a resnet50 -b 64 --lr 0.1", label="resnet50_32_0.001_v100_full",
              device_name="NVIDIA A100-SXM4-80GB")
    f.tables = [RunTable(match="*", name=None, facts={"learning_rate": 0.2, "dataset": "imagenet"})]
    row = _row(runs.plan([f]), "a100/out.resnet50_32_0.001_a100_full.1234")
    assert (row["batch_size"], row["learning_rate"], row["gpu"], row["experiment"]) == (64, 0.2, "NVIDIA A100-SXM4-80GB", "full")
    provenance = json.loads(row["provenance"])
    assert provenance["learning_rate"] == "toml" and provenance["batch_size"] == "log"
    assert provenance["gpu"] == "log" and provenance["experiment"] == "path"
    assert json.loads(row["all_params"])["dataset"] == "imagenet"
    # the echoed label fills only what nothing stronger says
    g = _file(1, "x/out.expCloudML.99", "nvprof", "summary", label="hw_16_0.001_alexnet_p40")
    row = _row(runs.plan([g]), "x/out.expCloudML.99")
    assert (row["model"], row["batch_size"], row["gpu"], json.loads(row["provenance"])["gpu"]) == ("alexnet", 16, "P40", "label")
    assert (row["gpu_evidence"], row["gpu_label"]) == ("path", "P40")     # a name, as the path's tokens are


def test_toml_names_a_run_across_folders_and_says_cpu():
    files = [_file(0, "a/log1.txt", "nvprof", "summary"), _file(1, "b/log2.csv")]
    for f in files:
        f.tables = [RunTable(match="*", name="my run", facts={"gpu": "cpu", "model": "tiny"})]
    plan, members = _plan(files)
    assert members == {"my run": ["a/log1.txt", "b/log2.csv"]}
    row = _row(plan, "my run")
    assert (row["gpu"], row["gpu_label"], row["device_kind"], row["label"]) == (None, "CPU", "cpu", "tiny · CPU")


def test_one_canonical_gpu_and_unknown_ones():
    plan, _ = _plan([_file(0, "x/out.alexnet_16_0.01_k80_full.1", "nvprof", "summary"),
                     _file(1, "x/out.alexnet_32_0.01_k80_full.2", "nvprof", "summary", device_name="Tesla K80"),
                     _file(2, "x/out.alexnet_64_0.01_full.3", "nvprof", "summary"),
                     _file(3, "x/out.alexnet_8_0.01_full.4", "nvprof", "summary", device_kind="cpu")])
    rows = plan.runs.sort("batch_size")
    assert rows["gpu"].to_list() == [None, "K80", "Tesla K80", None]
    assert rows["gpu_label"].to_list() == ["CPU", _gpu("K80"), _gpu("Tesla K80"), gpu.NOT_NAMED]
    assert rows["gpu_evidence"].to_list() == [None, "path", "log", None]
    assert _gpu("K80") == _gpu("Tesla K80")
    assert rows["label"].to_list()[-1].split(" · ")[1] == gpu.NOT_NAMED


def test_copies_are_runs_of_their_own_marked_duplicate_of():
    files = [_file(0, "imagenet/prev_out.a_16_0.1_k80_full.7", "nvprof", "summary"),
             _file(1, "_deleted_in_history/imagenet/out.a_16_0.1_k80_full.7", "nvprof", "summary"),
             _file(2, "imagenet/outputs/prev_out.a_16_0.1_k80_full.7", "nvprof", "summary")]
    files[1].duplicate_of = files[2].duplicate_of = 0
    plan, members = _plan(files)
    assert len(members) == 3
    copies = plan.runs.filter(pl.col("duplicate_of").is_not_null())
    assert copies["duplicate_of"].to_list() == ["imagenet/prev_out.a_16_0.1_k80_full.7"] * 2
    original = _row(plan, "imagenet/prev_out.a_16_0.1_k80_full.7")["label"]
    assert sorted(copies["label"]) == [f"{original} (copy 1)", f"{original} (copy 2)"]


def test_ids_of_two_inputs_that_clash_name_their_input():
    plan, members = _plan([_file(0, "ncu.txt", "ncu", "text", root="a"), _file(1, "ncu.txt", "ncu", "text", root="b")])
    assert sorted(members) == ["a/ncu.txt", "b/ncu.txt"]


def test_two_inputs_of_one_folder_name_stay_two_runs(tmp_path):
    """`a100/vgg13` and `v100/vgg13` given apart: their logs are not one run, and each id names
    enough of its folder to tell them apart."""
    from roofreport.pipeline.assemble import root_names
    from tests.conftest import corpus_path

    course = corpus_path("course", "Anoushka21-Cloud-and-MachineLearning", "proj1")
    inputs = [course / "v100" / "vgg13", course / "a100" / "vgg13"]
    assert root_names(inputs) == {inputs[0]: "v100/vgg13", inputs[1]: "a100/vgg13"}
    assert root_names([tmp_path / "logs"]) == {tmp_path / "logs": "logs"}
    runs = ingest(inputs, jobs=1).tables["runs"]
    originals = runs.filter(pl.col("duplicate_of").is_null())
    assert originals.height == 2 and originals["run"].n_unique() == 2
    assert sorted(originals["gpu_model"].to_list()) == ["A100 SXM4 40GB", "Tesla V100 SXM2 16GB"]
    assert all(run.startswith(("v100/vgg13/", "a100/vgg13/")) for run in originals["run"])


# -- labels ------------------------------------------------------------------------------------

def test_labels_show_what_varies_and_what_tells_alike_runs_apart():
    rows = [{"run": str(i), "model": "alexnet", "gpu_label": "K80", "experiment": "full_mem",
             "params": params} for i, params in enumerate([
                 {"batch_size": 16, "timeout_s": 600, "toks": 3}, {"batch_size": 32, "timeout_s": 600, "toks": 3},
                 {"batch_size": 32, "toks": 3}])]
    keys = ["batch_size", "experiment", "timeout_s", "toks"]
    assert labels.varying(rows, keys) == ["batch_size"]
    texts = [labels.label(row, shown) for row, shown in zip(rows, labels.shown(rows, keys))]
    assert texts == ["alexnet · K80 · bs 16", "alexnet · K80 · bs 32 · timeout 600 s", "alexnet · K80 · bs 32"]


def test_labels_are_made_unique():
    rows = [{"job": "1"}, {"job": "2"}, {"session": 3}, {}]
    assert labels.unique(["x", "x", "y", "y"], rows) == ["x · job 1", "x · job 2", "y · session 3", "y"]
    assert labels.unique(["z", "z"], [{}, {}]) == ["z · #1", "z · #2"]


# -- copies ------------------------------------------------------------------------------------

def _candidate(tmp: Path, index: int, rel: str, text: str, family: str = "nvprof", job: str | None = None,
               tables: dict | None = None, process_id: int | None = None) -> duplicates.Candidate:
    path = tmp / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return duplicates.Candidate(index=index, path=path, rel=PurePosixPath(rel), size=path.stat().st_size,
                                family=family, tables=tables or {}, job=job, process_id=process_id)


def test_byte_identical_files_and_the_original_among_them(tmp_path):
    same = "==1== Profiling result:\n"
    found = duplicates.find([
        _candidate(tmp_path, 0, "_deleted_in_history/x/out.a.7", same, job="7"),
        _candidate(tmp_path, 1, "x/prev_out.a.7", same, job="7"),
        _candidate(tmp_path, 2, "x/outputs/prev_out.a.7", same, job="7"),
        _candidate(tmp_path, 3, "x/other.log", "something else\n"),
        _candidate(tmp_path, 4, "renamed.txt", "a copy\n"),
        _candidate(tmp_path, 5, "out.job.811288", "a copy\n", job="811288"),
    ])
    # live before history, shallow before deep; a name with its job id before a renamed one
    assert found == {0: 1, 2: 1, 4: 5}


def test_same_tables_are_copies_only_when_nothing_says_two_executions(tmp_path):
    table = {"kernels": pl.DataFrame({"name": ["k"], "duration_ns": [1.0], "source_line": [3]})}
    moved = {"kernels": pl.DataFrame({"name": ["k"], "duration_ns": [1.0], "source_line": [900]})}
    found = duplicates.find([
        _candidate(tmp_path, 0, "a/x.812055", "log 1", job="812055", tables=table, process_id=11),
        _candidate(tmp_path, 1, "a/x.812055.csv", "csv cut out", job="812055", tables=moved),
        _candidate(tmp_path, 2, "a/y.813550", "log 2", job="813550", tables=table, process_id=12),
    ])
    # the CSV cut out of a log copies it; a second job with the same counters does not
    assert found == {1: 0}


def test_a_marked_copy_with_other_bytes_is_superseded_by_its_original(tmp_path):
    found = duplicates.find([
        _candidate(tmp_path, 0, "runs/ncu.txt", "new"),
        _candidate(tmp_path, 1, "backup/runs/ncu.txt", "old, longer"),
        _candidate(tmp_path, 2, "runs/ncu.txt.bak", "older, longest"),
        _candidate(tmp_path, 3, "old/other/ncu.txt", "unrelated"),
    ])
    assert found == {1: 0, 2: 0}


# -- roofreport.toml and --exclude ---------------------------------------------------------------

@pytest.mark.parametrize("glob, path, excluded", [
    ("_deleted_in_history", "_deleted_in_history/imagenet/out.x.1", True),
    ("_deleted_in_history", "imagenet/out.x.1", False),
    ("*.csv", "a/b/c.csv", True),
    ("outputs", "imagenet/outputs/out.x", True),
    ("imagenet/outputs/*", "imagenet/outputs/out.x", True),
    ("**/prev_*", "imagenet/prev_out.x", True),
    ("prev_*", "imagenet/prev_out.x", True),
    ("final/*.csv", "imagenet/final/a.csv", True),      # a trailing part of the path
    ("final/*.csv", "imagenet/finals/a.csv", False),
])
def test_exclude_globs(glob, path, excluded):
    assert config.matches(glob, PurePosixPath(path)) is excluded


def test_toml_exclude_and_runs(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS / "a100", logs / "a100")
    shutil.copytree(SAMPLE_LOGS / "k80_sweep", logs / "k80_sweep")
    (logs / "roofreport.toml").write_text(
        'exclude = ["k80_sweep/*trace*"]\n[[run]]\nmatch = "a100/vgg11"\nname = "vgg11 on the A100"\n'
        'batch_size = 256\nprecision = "tf32"\n')
    config.load.cache_clear()
    dataset = ingest([logs], jobs=1)
    excluded = [f for f in dataset.files if f.excluded]
    assert [Path(f.path).name for f in excluded] == ["out.alexnet_32_0.01_k80_trace.812167"]
    assert "roofreport.toml" in excluded[0].error
    row = dataset["runs"].filter(pl.col("run") == "vgg11 on the A100").row(0, named=True)
    assert (row["batch_size"], row["precision"], row["files"]) == (256, "tf32", 3)
    assert json.loads(row["provenance"])["batch_size"] == "toml"


def test_a_broken_toml_is_a_usage_error(tmp_path):
    from roofreport.errors import UsageError
    (tmp_path / "roofreport.toml").write_text("exclude = [\n")
    config.load.cache_clear()
    with pytest.raises(UsageError, match="roofreport.toml"):
        config.load(tmp_path)


# -- sessions of a concatenated nvprof log -------------------------------------------------------

SESSION = """nvprof ./vadd {n}
=={pid}== NVPROF is profiling process {pid}, command: ./vadd {n}
=={pid}== Profiling application: ./vadd {n}
=={pid}== Profiling result:
            Type  Time(%)      Time     Calls       Avg       Min       Max  Name
 GPU activities:  100.00%  {ms}.000ms         1  {ms}.000ms  {ms}.000ms  {ms}.000ms  add(int, float*, float*)
      API calls:  100.00%  100.00ms         1  100.00ms  100.00ms  100.00ms  cudaMalloc
"""


def test_nvprof_sessions_one_after_another(tmp_path):
    text = "".join(SESSION.format(n=n, pid=100 + n, ms=n) for n in (1, 5, 10))
    path = tmp_path / "concat.out"
    path.write_text(text)
    result = parse_log(Document.open(path), "summary")
    assert [s.first_line for s in result.sessions] == [2, 9, 16]
    assert [s.hints.command for s in result.sessions] == ["./vadd 1", "./vadd 5", "./vadd 10"]
    dataset = ingest([path], jobs=1)
    kernels = dataset["kernels"].sort("source_line")
    assert kernels["run"].to_list() == ["concat.out#1", "concat.out#2", "concat.out#3"]
    assert kernels["duration_ns"].to_list() == [1e6, 5e6, 10e6]
    assert dataset["runs"]["command"].to_list() == ["./vadd 1", "./vadd 5", "./vadd 10"]


def test_nvprof_child_processes_are_one_session(tmp_path):
    text = ("==100== NVPROF is profiling process 100, command: python train.py\n"
            "==101== NVPROF is profiling process 101, command: python -c worker\n"
            "==101== Profiling application: python -c worker\n"
            "==100== Profiling application: python train.py\n"
            "==100== Profiling result:\n"
            "            Type  Time(%)      Time     Calls       Avg       Min       Max  Name\n"
            " GPU activities:  100.00%  1.0000ms         1  1.0000ms  1.0000ms  1.0000ms  k\n")
    path = tmp_path / "children.log"
    path.write_text(text)
    result = parse_log(Document.open(path), "summary")
    assert result.sessions == []
    assert result.hints.command == "python train.py"


def test_two_renderings_of_one_profile_are_copies(tmp_path):
    def rendering(index: int, name: str, metrics: int) -> duplicates.Candidate:
        tables = {"metrics": pl.DataFrame({"value": [float(i) for i in range(metrics)]})}
        return _candidate(tmp_path, index, f"ncu/{name}", f"text {index}", family="ncu", tables=tables)

    candidates = [rendering(0, "sgemm.details.txt", 56), rendering(1, "sgemm.details_base.txt", 56),
                  rendering(2, "sgemm.raw.txt", 699), rendering(3, "other.details.txt", 56)]
    for c in candidates:
        c.variant = "text"
        c.name_key = identity.read_name(c.rel.name).key
        c.tables["metrics"] = c.tables["metrics"].with_columns(pl.col("value") * (c.index + 1))
    # one folder, one kind, one name, the same rows (other units): one profile rendered twice
    assert duplicates.find(candidates) == {1: 0}


def test_a_device_name_cut_short_is_the_same_gpu():
    plan, members = _plan([_file(0, "p/sgemm.raw.txt", "ncu", "text raw page", device_name="NVIDIA GeForce RTX"),
                           _file(1, "p/sgemm.raw.csv", "ncu", "csv raw", device_name="NVIDIA GeForce RTX 2080 Ti"),
                           _file(2, "p/sgemm.summary.txt", "ncu", "text summary")])
    assert members == {"p": ["p/sgemm.raw.txt", "p/sgemm.raw.csv", "p/sgemm.summary.txt"]}
    _, apart = _plan([_file(0, "p/sgemm.raw.txt", "ncu", "text", device_name="NVIDIA GeForce RTX 3070"),
                      _file(1, "p/sgemm.raw.csv", "ncu", "csv raw", device_name="NVIDIA GeForce RTX 2080 Ti")])
    assert len(apart) == 2


def test_the_readme_roofreport_toml_is_what_config_reads(tmp_path):
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    runs_section = readme.split("## Runs", 1)[1]
    block = runs_section.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "roofreport.toml").write_text(block)
    config.load.cache_clear()
    loaded = config.load(tmp_path)
    assert loaded.exclude == ("_deleted_in_history", "*.bak")
    assert loaded.runs[0].name == "A100 runs" and loaded.runs[0].facts["batch_size"] == 16


def test_the_ranks_of_one_job_are_one_workload_one_run_each():
    # HTA's two-rank traces: each trace's distributedInfo names its rank; the runs are one
    # experiment, labelled by rank, and their workload (what cross-run comparisons group by) is one.
    from roofreport.analysis import workloads
    from tests.conftest import corpus_path
    data = ingest([corpus_path("kineto", "hta-trace_filter")], jobs=1)
    rows = data.tables["runs"].sort("run").to_dicts()
    assert [r["experiment"] for r in rows] == ["sampled", "sampled"]
    assert [json.loads(r["params"])["rank"] for r in rows] == [0, 1]
    assert [json.loads(r["provenance"])["rank"] for r in rows] == ["log", "log"]
    assert [r["label"].endswith(f"rank {i}") for i, r in enumerate(rows)] == [True, True]
    keys = {workloads.key(r, workloads.params_of(r)) for r in rows}
    assert len(keys) == 1
    # ...and one distributed job, whose rank and size the runs table says (the rows too: kernels
    # and activities of a Kineto trace carry the rank its distributedInfo gives)
    assert [(r["rank"], r["world_size"]) for r in rows] == [(0, 128), (1, 128)]
    assert {r["distributed_job"] for r in rows} == {"sampled_rank-*.json.gz"}
    for table in ("kernels", "activities"):
        ranks = data.tables[table].group_by("run").agg(pl.col("rank").unique()).sort("run")
        assert ranks["rank"].to_list() == [[0], [1]]


def _kineto(index: int, rel: str, **hints) -> runs.LogFile:
    return _file(index, rel, "pytorch", "kineto trace", **hints)


def test_a_job_groups_ranks_by_distributed_info_or_rank_names_never_by_steps_alone():
    plan, _ = _plan([
        # ranks by their names only, and by distributedInfo only (tensorboard_trace_handler's
        # `host_pid.stamp` names), each group one job
        _kineto(0, "ddp/trace_rank_0.json"), _kineto(1, "ddp/trace_rank_1.json"),
        _kineto(2, "fsdp/node1_4242.1700000000001.pt.trace.json", rank=0, world_size=2),
        _kineto(3, "fsdp/node2_4343.1700000000002.pt.trace.json", rank=1, world_size=2),
        # two jobs' ranks in one folder, told apart by their names
        _kineto(4, "two/a_rank-0.json", rank=0, world_size=2), _kineto(5, "two/a_rank-1.json", rank=1, world_size=2),
        _kineto(6, "two/b_rank-0.json", rank=0, world_size=2), _kineto(7, "two/b_rank-1.json", rank=1, world_size=2),
        # step numbers are no ranks: these stay apart, no job
        _kineto(8, "steps/step_1.json"), _kineto(9, "steps/step_2.json"),
    ])
    jobs = dict(plan.runs.select("run", "distributed_job").iter_rows())
    assert jobs["ddp/trace_rank_0.json"] == jobs["ddp/trace_rank_1.json"] == "ddp/trace_rank_*.json"
    fsdp = [run for run in jobs if run.startswith("fsdp/")]
    assert len(fsdp) == 2 and {jobs[run] for run in fsdp} == {"fsdp (2 ranks)"}
    assert jobs["two/a_rank-0.json"] == jobs["two/a_rank-1.json"] == "two/a_rank-*.json"
    assert jobs["two/b_rank-0.json"] == jobs["two/b_rank-1.json"] == "two/b_rank-*.json"
    assert [jobs[run] for run in jobs if run.startswith("steps/")] == [None, None]
    ranks = dict(plan.runs.select("run", "rank").iter_rows())
    assert (ranks["ddp/trace_rank_1.json"], ranks["steps/step_2.json"]) == (1, None)


def test_the_same_rank_twice_is_no_one_job():
    plan, _ = _plan([_kineto(0, "x/host1.json", rank=0, world_size=2),
                     _kineto(1, "x/host2.json", rank=0, world_size=2)])
    assert plan.runs["distributed_job"].to_list() == [None, None]
    assert plan.runs["rank"].to_list() == [0, 0]


def test_a_run_id_does_not_depend_on_which_folder_was_given():
    """Issue 33: the ids are relative to the folder whose roofreport.toml governs the input
    (`sample_logs/`), so reading `sample_logs/v100` or `sample_logs` names V100's ResNet-18 run
    alike."""
    from roofreport import api

    def ids(path: Path) -> set[str]:
        return set(api.read(path, jobs=1).runs["run"].to_list())

    alone, whole = ids(SAMPLE_LOGS / "v100"), ids(SAMPLE_LOGS)
    assert "v100/resnet18" in alone and alone <= whole


def test_each_input_is_anchored_at_its_own_governing_folder(tmp_path):
    """Two inputs under different roofreport.toml files: each file's id is relative to its own
    governing folder, and the ids stay apart (`root_names`)."""
    from roofreport.pipeline.assemble import anchors

    for side in ("left", "right"):
        (tmp_path / side / "logs").mkdir(parents=True)
        (tmp_path / side / "roofreport.toml").write_text("", encoding="utf-8")
    (tmp_path / ".git").mkdir()      # the search for a roofreport.toml ends here
    inputs = [tmp_path / "left" / "logs", tmp_path / "right" / "logs", tmp_path / "other"]
    assert anchors(inputs) == {inputs[0]: tmp_path / "left", inputs[1]: tmp_path / "right",
                               inputs[2]: inputs[2]}
