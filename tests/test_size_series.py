"""Runs that differ only in input size are one roofline series (issue 32: rooflines at any run
count), `sweeps.size_series`; the real 28-run conv2d sweep is drawn in tests/test_layout.py."""

from __future__ import annotations

import json

import polars as pl

from roofreport.analysis import sweeps
from roofreport.tables import schema


def _runs(rows: list[tuple[str, str, dict, str]]) -> pl.DataFrame:
    """(run, experiment, params, GPU label) per run of one program."""
    return schema.conform("runs", pl.DataFrame(
        [{"run": run, "experiment": experiment, "program": "conv2d.py", "params": json.dumps(params),
          "gpu_label": gpu} for run, experiment, params, gpu in rows], infer_schema_length=None))


def test_folders_named_by_their_parameters_form_one_series_per_other_parameters():
    runs = _runs([(f"k{k}_n{n}", f"k{k}_n{n}", {"kernel_size": k, "size": n}, "GTX 1080")
                  for k in (3, 5) for n in (64, 128, 256)] + [("k7_n64", "k7_n64", {"kernel_size": 7, "size": 64}, "GTX 1080")])
    out = sweeps.size_series(runs)
    assert out.columns == list(sweeps.SIZE_SERIES_COLUMNS)
    by_series = {s: sorted(g["size"].to_list()) for (s,), g in out.group_by("series")}
    assert by_series == {"conv2d.py · kernel_size 3": [64, 128, 256], "conv2d.py · kernel_size 5": [64, 128, 256]}
    assert "k7_n64" not in out["run"].to_list()          # a size alone is no series
    assert set(out["size_param"]) == {"size"}


def test_experiments_that_repeat_a_size_part_the_series_and_name_it():
    runs = _runs([(f"{e}/n{n}", e, {"size": n}, "A100") for e in ("eager", "compiled") for n in (64, 128)])
    out = sweeps.size_series(runs)
    assert sorted(out["series"].unique()) == ["conv2d.py · compiled", "conv2d.py · eager"]
    assert out.height == 4


def test_a_series_never_spans_two_gpus_or_a_size_that_is_no_number():
    runs = _runs([("a", "a", {"size": 64}, "A100"), ("b", "b", {"size": 128}, "V100"),
                  ("c", "c", {"size": "large"}, "A100"), ("d", "d", {"size": "small"}, "A100")])
    assert sweeps.size_series(runs).height == 0
