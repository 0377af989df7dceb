"""Labels name each parameter once (issue #32, pipeline/labels.py): from the best source (the
job's own parameters, then the path, then the command line), no command-line flag beside the
parameter it set, no experiment word that restates the rest of the label, and still one label
per run. On rows made here as ingest makes them, on our GTX 1080 fixture and on every corpus
course folder and sample_logs/.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from roofreport.pipeline import labels
from tests.conftest import CORPUS, SAMPLE_LOGS

MICRO = Path(__file__).resolve().parent / "data" / "gtx1080_micro"


def _conv_run(run: str, kernel: int, size: int, stride: int) -> dict:
    """A run as ingest hands it to `labels.assign`: the path says `kernel<N>_size<N>`, the
    command line says the same under other names, and the stride."""
    command = f"python conv2d.py --kernel_size {kernel} --stride {stride} --height {size} --width {size}"
    params = {"kernel": kernel, "size": size, "kernel_size": kernel, "stride": stride, "height": size, "width": size}
    provenance = {"kernel": "path", "size": "path", "experiment": "folder", "program": "log", "command": "log",
                  **{key: "log" for key in ("kernel_size", "stride", "height", "width")}}
    return {"run": run, "model": None, "program": "conv2d.py", "command": command, "experiment": "conv2d",
            "gpu_label": "GTX 1080", "all_params": params, "provenance": provenance, "duplicate_of": None}


def test_a_parameter_two_sources_give_is_named_once_from_the_better_source():
    """The issue's label: `conv2d.py --kernel_size 3 --stride 1 · GTX 1080 · conv2d · height 150 ·
    kernel 3 · kernel_size 3 · size 150 · stride 1 · width 150` named each parameter twice."""
    rows = [_conv_run(f"conv2d/k{k}_s{s}_n{n}", k, n, s) for k in (3, 5) for s in (1, 2) for n in (150, 300)]
    labels.assign(rows)
    assert rows[0]["label"] == "conv2d.py · GTX 1080 · kernel 3 · size 150 · stride 1"
    assert len({row["label"] for row in rows}) == len(rows)
    # what the label shows is what `params` keeps (the workload's key): the path's names
    assert rows[0]["params"] == {"kernel": 3, "size": 150, "stride": 1}


def test_two_names_of_one_source_are_two_parameters():
    """`--height` and `--width` always equal are still two flags of the command line: both shown.
    The flags of parameters that do not vary (not shown) stay in the lead: said once."""
    rows = [_conv_run(f"r{n}", 3, n, 1) for n in (150, 300)]
    for row in rows:
        for key in ("kernel", "size"):
            del row["all_params"][key], row["provenance"][key]
    labels.assign(rows)
    assert rows[0]["label"] == "conv2d.py --kernel_size 3 --stride 1 · GTX 1080 · height 150 · width 150"


def test_an_experiment_that_says_something_else_stays():
    rows = [_conv_run("a", 3, 150, 1), _conv_run("b", 3, 300, 1)]
    rows[0]["experiment"], rows[1]["experiment"] = "baseline", "tiled"
    labels.assign(rows)
    assert [row["label"] for row in rows] == ["conv2d.py --kernel_size 3 --stride 1 · GTX 1080 · baseline · size 150",
                                              "conv2d.py --kernel_size 3 --stride 1 · GTX 1080 · tiled · size 300"]


def test_the_gtx1080_fixtures_labels_say_each_parameter_once():
    import roofreport

    runs = roofreport.read(MICRO).tables["runs"]
    by_run = dict(zip(runs["run"], runs["label"]))
    assert by_run["conv2d/k3_s1_n64"] == "conv2d.py · GTX 1080 · kernel_size 3 · size 64 · stride 1"
    assert by_run["gpp/fma_n256"] == "gpp_fma.x 256 · GTX 1080"
    assert by_run["gpp/nofma_n8192"] == "gpp_nofma.x 8192 · GTX 1080"
    assert runs["label"].n_unique() == runs.height == 40


def _folders() -> list[Path]:
    course = sorted(p for p in (CORPUS / "course").iterdir() if p.is_dir()) if (CORPUS / "course").is_dir() else []
    return [SAMPLE_LOGS, MICRO, *course]


@pytest.mark.slow
@pytest.mark.parametrize("folder", _folders(), ids=lambda p: p.name)
def test_every_label_names_each_parameter_once_and_stays_unique(folder):
    """No label shows a flag beside the parameter it set, nor one value under two keys of two
    sources; labels stay one per run (copies read as their original's, marked)."""
    import json

    import roofreport

    runs = roofreport.read(folder).tables["runs"]
    assert runs["label"].n_unique() == runs.height, runs.filter(pl.col("label").is_duplicated())["label"].to_list()
    rows = runs.filter(pl.col("duplicate_of").is_null()).to_dicts()
    shown = [json.loads(row["params"] or "{}") for row in rows]
    for row, params in zip(rows, shown):
        for key in params:
            flag = re.escape(key).replace("_", "[_-]")
            assert not re.search(rf"(?<![\w-])--?{flag}(?![\w-])", row["label"]), (row["label"], key)
    # one value from two sources under two names in every run: one parameter shown twice
    sources = [json.loads(row["provenance"] or "{}") for row in rows]
    keys = sorted({key for params in shown for key in params})
    for a in keys:
        for b in keys:
            column_a = [repr(params.get(a)) for params in shown]
            if a < b and column_a == [repr(params.get(b)) for params in shown]:
                assert {s.get(a) for s in sources} == {s.get(b) for s in sources}, (folder.name, a, b)
