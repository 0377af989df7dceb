"""Runs as their authors ran them, on every course folder of the corpus (issue 15, item 1).

`tests/data/course_runs.tsv` holds what each folder's runs truly are, checked by hand against
the files: which files (or profiler sessions) form each run, the model, GPU, parameters,
command and which files copy which. `roofreport parse` must agree with it, row for row; the
issue's own cases are spelled out below too.
"""

from __future__ import annotations

import json
from functools import cache

import polars as pl
import pytest

from roofreport import gpu
from roofreport.analysis import runsets
from roofreport.pipeline.ingest import ingest
from tests.conftest import ROOT, corpus_path

EXPECTED = ROOT / "tests" / "data" / "course_runs.tsv"


def _gpu_label(name: str) -> str:
    """The one name the GPU database gives this device (the name itself when it knows none)."""
    spec = gpu.match(name)
    return spec.label if spec else name


def _expected() -> pl.DataFrame:
    return pl.read_csv(EXPECTED, separator="\t", comment_prefix="#", infer_schema_length=0, quote_char=None)


FOLDERS = sorted(_expected()["folder"].unique().to_list())


@cache
def _read(folder: str):
    return ingest([corpus_path("course", folder)])


def _run_of_unit(dataset, folder: str) -> dict[str, str]:
    """unit (a path below the folder, `#N` for the N-th session of a log) -> its run id."""
    root = str(corpus_path("course", folder)) + "/"
    out = {}
    for f in dataset.files:
        if f.run is None:
            continue
        rel = f.path[len(root):]
        runs = f.run.split(", ")
        if len(runs) == 1:
            out[rel] = runs[0]
        else:
            out.update({f"{rel}#{n}": run for n, run in enumerate(runs, 1)})
    return out


@pytest.mark.parametrize("folder", FOLDERS)
def test_files_form_the_runs_their_authors_ran(folder):
    dataset = _read(folder)
    expected = _expected().filter(pl.col("folder") == folder)
    run_of = _run_of_unit(dataset, folder)
    assert set(run_of) == set(expected["unit"]), "the logs read are the logs listed"
    got: dict[str, set] = {}
    for unit in expected["unit"]:
        got.setdefault(run_of[unit], set()).add(unit)
    want: dict[str, set] = {}
    for unit, run in expected.select("unit", "run").iter_rows():
        want.setdefault(run, set()).add(unit)
    assert sorted(map(sorted, got.values())) == sorted(map(sorted, want.values()))
    assert dataset["runs"].height == len(want)
    assert set(dataset["runs"]["run"]) == set(run_of.values())


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_run_is_what_its_logs_say(folder):
    dataset = _read(folder)
    run_of = _run_of_unit(dataset, folder)
    runs = {row["run"]: row for row in dataset["runs"].to_dicts()}
    problems = []
    for want in _expected().filter(pl.col("folder") == folder).to_dicts():
        row = runs[run_of[want["unit"]]]
        problems += [f"{want['unit']}: {p}" for p in _differences(want, row, run_of)]
    assert not problems, "\n".join(problems[:20])


def _differences(want: dict, row: dict, run_of: dict[str, str]) -> list[str]:
    out = []
    for name in ("model", "batch_size", "learning_rate", "experiment", "job", "command"):
        expected, got = want[name], row[name]
        if expected is None:
            continue
        if expected == "-":
            if got is not None:
                out.append(f"{name}: none expected, got {got!r}")
        elif name == "learning_rate" and got is not None and float(expected) == got:
            continue
        elif str(got).strip() != expected:
            out.append(f"{name}: {expected!r} expected, got {got!r}")
    out += _gpu_differences(want["gpu"], row)
    params = json.loads(row["all_params"])
    for pair in (want["params"] or "").split(";"):
        if not pair:
            continue
        key, value = pair.split("=")
        got = row[key] if key in row else params.get(key)
        if value == "-" and got is not None or value != "-" and str(got).lower() != value.lower():
            out.append(f"{key}: {value!r} expected, got {got!r}")
    original = run_of[want["duplicate_of"]] if want["duplicate_of"] else None
    if row["duplicate_of"] != original:
        out.append(f"duplicate_of: {original!r} expected, got {row['duplicate_of']!r}")
    return out


def _gpu_differences(expected: str | None, row: dict) -> list[str]:
    """The GPU as the database knows it (`K80` and `Tesla K80` are one), or as the log spells a
    name the database cannot tell (`GeForce RTX 208...`)."""
    if expected is None:
        return []
    if expected == "-":
        return [] if row["gpu"] is None and row["gpu_model"] is None else [f"gpu: none expected, got {row['gpu']!r}"]
    spec = gpu.match(expected)
    if spec is not None:
        return [] if row["gpu_model"] == spec.key else [f"gpu: {spec.key!r} expected, got {row['gpu_model']!r}"]
    return [] if (row["gpu"] or "").lower() == expected.lower() else [f"gpu: {expected!r} expected, got {row['gpu']!r}"]


@pytest.mark.parametrize("folder", FOLDERS)
def test_labels_are_unique_and_built_from_identity(folder):
    runs = _read(folder)["runs"]
    assert runs["label"].null_count() == 0
    assert runs["label"].n_unique() == runs.height
    for run, text in runs.select("run", "label").iter_rows():
        # never the path: no folder of the id, no file extension or Slurm output prefix
        assert "/" not in text and "out." not in text and not text.endswith((".txt", ".csv", ".log")), text
    for row in runs.to_dicts():
        if row["gpu_label"]:
            assert row["gpu_label"] in row["label"]
        if row["model"]:
            assert row["label"].startswith(row["model"])


# -- the cases -------------------------------------------------------------------------

def test_pranavdani_flame_is_two_programs_each_a_trace_and_a_power_log():
    runs = _read("PranavDani-Flame")["runs"]
    assert runs.height == 2
    assert sorted(runs["experiment"]) == ["fluidsGL", "torch-ex"]
    assert runs["tool"].to_list() == ["nsys+nvidia-smi"] * 2
    assert runs["files"].to_list() == [2, 2]
    assert set(runs["gpu_label"]) == {_gpu_label("NVIDIA RTX A4500")}


def test_spec_decoding_gives_four_runs_of_llama3():
    dataset = ingest([corpus_path("course", "nin-ran-jan-HPML_Project", "spec-decoding")])
    runs = dataset["runs"]
    assert runs.height == 4
    assert set(runs["model"]) == {"llama3"}
    assert runs["label"].n_unique() == 4
    drafts = sorted(json.loads(p).get("draft_bits") or 0 for p in runs["all_params"])
    assert drafts == [0, 0, 4, 8]
    assert sorted(runs["experiment"]) == ["baseline", "specdecode8-1", "specdecode8-1", "specdecode8-1"]
    # the draft precision is what sets the three spec-decode runs apart, and the label says so
    assert {text.split(" · ")[-1] for text in runs["label"]} >= {"draft 4-bit", "draft 8-bit"}


def test_q3_out_is_thirty_runs_each_with_its_command():
    dataset = _read("adityamwagh-hpml-hw")
    runs = dataset["runs"].filter(pl.col("run").str.starts_with("hw5/part_a/q3.out#"))
    assert runs.height == 30
    commands = [f"./q3_{part}.o {n}" for part in ("2a", "2b", "2c", "3a", "3b", "3c") for n in (1, 5, 10, 50, 100)]
    assert runs["command"].to_list() == commands
    assert runs["session"].to_list() == list(range(1, 31))
    assert set(runs["gpu_label"]) == {_gpu_label("Quadro RTX 8000")}
    # every row of the log is in the run of its session
    kernels = dataset["kernels"].filter(pl.col("source_file").str.ends_with("q3.out"))
    per_run = kernels.group_by("run").agg(pl.col("source_line").min().alias("first"), pl.col("source_line").max().alias("last"))
    assert per_run.height == 30
    spans = per_run.join(runs.select("run", "session"), on="run").sort("session")
    assert (spans["first"].shift(-1).drop_nulls() > spans["last"].head(29)).all()
    add = kernels.filter((pl.col("run") == "hw5/part_a/q3.out#1") & pl.col("name").str.starts_with("add"))
    assert add["duration_ns"].to_list() == [pytest.approx(92.203e6)]     # line 40 of q3.out


def test_pramitmallick_history_copies_are_duplicates_and_k80_is_one_gpu():
    dataset = _read("pramitmallick-examples")
    runs = dataset["runs"]
    copies = runs.filter(pl.col("duplicate_of").is_not_null())
    assert copies.height == 9
    assert copies.filter(pl.col("run").str.starts_with("_deleted_in_history/"))["run"].to_list() == [
        "_deleted_in_history/imagenet/out.alexnet_16_0.001_k80_full.741534",
        "_deleted_in_history/imagenet/out.alexnet_16_0.001_k80_full.741534.csv",
        "_deleted_in_history/imagenet/out.alexnet_16_0.001_p40_loss_only.744573",
        "_deleted_in_history/imagenet/out.expCloudML.546584"]
    assert copies.filter(pl.col("run").str.contains("prev_out"))["duplicate_of"].unique().sort().to_list() == [
        "imagenet/prev_out.alexnet_16_0.001_k80_full.741534", "imagenet/prev_out.alexnet_16_0.001_p40_loss_only.744573"]
    assert all(text.endswith(")") and "(copy" in text for text in copies["label"])
    # one GPU per device: the K80 a path names and the Tesla K80 a log names are one
    gpus = runs.filter(pl.col("gpu").is_not_null()).group_by("gpu_label").agg(pl.col("gpu").unique())
    assert sorted(gpus["gpu_label"]) == sorted([_gpu_label("Tesla K80"), _gpu_label("Tesla P40")])
    assert sorted(gpus.filter(pl.col("gpu_label") == _gpu_label("Tesla K80"))["gpu"].item()) == ["K80", "Tesla K80"]
    assert runs["gpu_model"].drop_nulls().n_unique() == 2
    # the body leaves the copies out; nothing read is lost
    body = runsets.body_tables(dataset.tables)
    assert body["runs"].height == runs.height - 9
    assert body["kernels"].height < dataset["kernels"].height
    assert set(runsets.duplicate_runs(dataset.tables)["run"]) == set(copies["run"])


def test_runs_record_where_each_field_came_from():
    runs = _read("pramitmallick-examples")["runs"]
    row = runs.filter(pl.col("run") == "_deleted_in_history/imagenet/out.alexnet_16_0.001_p40_loss_only.744573").row(0, named=True)
    provenance = json.loads(row["provenance"])
    # the name says lr 0.001; nvprof's command line says --lr 0.01, and the log wins
    assert (row["learning_rate"], provenance["learning_rate"]) == (0.01, "log")
    assert provenance["experiment"] == "path" and provenance["gpu"] == "path"
    assert provenance["gpu_model"] == "database"
    row = runs.filter(pl.col("run") == "imagenet/final/out.alexnet_16_0.01_k80_conv.775370").row(0, named=True)
    assert (row["gpu"], json.loads(row["provenance"])["gpu"]) == ("Tesla K80", "log")


def test_parameters_that_vary_are_found_without_knowing_the_course():
    runs = _read("srikarym-hpml")["runs"]
    varied = {}
    for params in runs["params"]:
        for key, value in json.loads(params).items():
            varied.setdefault(key, set()).add(value)
    assert varied == {"workers": {0, 1, 4, 8, 12, 16, 20}, "cuda": {0, 1},
                      "optimizer": {"adadelta", "adagrad", "adam", "nesterov", "sgd"}}
    assert runs.filter(pl.col("workers").is_not_null())["experiment"].unique().to_list() == ["C3"]
    final = _read("srinidhigoud-examples")["runs"]
    sweep = final.filter((pl.col("model") == "alexnet") & (pl.col("experiment") == "full")
                         & (pl.col("gpu_label") == _gpu_label("Tesla P40")))
    assert sorted(sweep["batch_size"]) == [4, 8, 16, 32, 64]
    assert all("batch_size" in json.loads(p) for p in final["params"])


def test_exclude_leaves_files_out_and_lists_them():
    root = corpus_path("course", "pramitmallick-examples")
    dataset = ingest([root], exclude=["_deleted_in_history", "imagenet/outputs/*"])
    excluded = [f for f in dataset.files if f.excluded]
    left_out = [p for folder in ("_deleted_in_history", "imagenet/outputs") for p in (root / folder).rglob("*")
                if p.is_file() and not p.name.startswith(".")]
    assert sorted(f.path for f in excluded) == sorted(map(str, left_out))
    assert all(f.status == "skipped" and f.error.startswith("excluded by '") for f in excluded)
    assert not dataset["runs"]["run"].str.contains("_deleted_in_history|outputs/").any()
    # what was a copy of an excluded file is the original now; no copies are left
    assert dataset["runs"].filter(pl.col("duplicate_of").is_not_null()).height == 0
    # every log left is a run of its own: 163 logs, less the 12 of _deleted_in_history and 25 of outputs
    assert dataset["runs"].height == sum(f.run is not None for f in dataset.files) == 163 - 12 - 25
