"""Run totals from per-file partials that combine (roofreport/model/totals.py, batches.py;
issue 30): a dataset folder's runs are combined from its batches' partials, never from every row
in memory, and equal the full derivation of an in-memory read, every table, on sample_logs/ and
every course folder of the corpus; partials combine in any grouping."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import roofreport
from roofreport.model import Model, batches, derive, iterations, totals
from roofreport.pipeline import generation
from roofreport.tables import schema
from tests.conftest import CORPUS, SAMPLE_LOGS

COURSE = sorted(p for p in (CORPUS / "course").iterdir() if p.is_dir()) if (CORPUS / "course").is_dir() else []


def _tables_equal(dataset: roofreport.Dataset, fresh: roofreport.Dataset) -> None:
    for name in schema.TABLES:
        try:
            assert_frame_equal(dataset.tables[name], fresh.tables[name], check_exact=True)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
    # and the model's per-rank table (issue #36), derived from the stored activities
    try:
        assert_frame_equal(dataset.model.ranks, fresh.model.ranks, check_exact=True)
    except AssertionError as exc:
        raise AssertionError(f"ranks: {exc}") from None


@pytest.fixture()
def small_batches(monkeypatch):
    """Batches of a few files, so runs span batches and their partials must combine."""
    monkeypatch.setattr(generation, "FILES_PER_BATCH", 2)
    monkeypatch.setattr(generation, "DIRS_PER_BATCH", 1)


@pytest.mark.parametrize("folder", [SAMPLE_LOGS, *COURSE], ids=lambda p: p.name)
def test_a_dataset_folders_tables_combined_from_partials_equal_a_full_read(folder, tmp_path, small_batches,
                                                                           monkeypatch):
    """Every table (steps, runs and their totals included) of a dataset folder whose runs were
    combined from batches' partials equals an in-memory read's, whose model derives them from
    every row at once; and the runs of no batch were derived from the whole campaign's rows."""
    held = []
    real = batches._counted

    def counted(pending, runs, *rest):
        found = real(pending, runs, *rest)
        held.extend(frame.height for frame in found)
        return found

    monkeypatch.setattr(batches, "_counted", counted)
    data = roofreport.read(folder, dataset=tmp_path / "ds", jobs=1)
    manifest = data.update_report
    assert manifest.batches_written > 1
    fresh = roofreport.read(folder, jobs=1)
    _tables_equal(data, fresh)
    _tables_equal(roofreport.read(tmp_path / "ds"), fresh)
    assert sum(held) <= fresh.runs.height                     # each counted run's group, once


def test_partials_combine_in_any_grouping():
    """The time and step-range partials of sample_logs/, made file by file, shuffled, cut into
    random groups, combined group by group and then together, give the totals and iterations
    of the model that derives them from all rows at once."""
    data = roofreport.read(SAMPLE_LOGS, jobs=1)
    tables = dict(data.tables)
    whole = derive(tables)
    files = tables["files"]["path"].to_list()
    rng = random.Random(7)
    time_parts, step_parts = [], []
    for path in files:
        one = {name: frame.filter(pl.col("source_file") == path) if "source_file" in frame.columns else frame
               for name, frame in tables.items() if name in ("kernels", "activities", "regions")}
        one["files"] = tables["files"]
        time_parts.append(totals.file_partials(one))
        step_parts.append(iterations.step_partials(one["regions"]))
    order = list(range(len(files)))
    rng.shuffle(order)
    cuts = sorted(rng.sample(range(1, len(order)), 5))
    groups = [order[a:b] for a, b in zip([0, *cuts], [*cuts, len(order)])]
    time = pl.concat([totals.combine_partials(pl.concat([time_parts[i] for i in group])) for group in groups])
    steps = pl.concat([iterations.combine_steps(pl.concat([step_parts[i] for i in group])) for group in groups])
    combined = Model(tables, whole.db, partials=(time, steps))
    assert_frame_equal(combined.totals, whole.totals, check_exact=True)
    assert_frame_equal(combined.iterations, whole.iterations, check_exact=True)
    assert whole.totals["setup_time_ns"].drop_nulls().sum() > 0      # the early copies were exercised
    assert whole.iterations.height > 0


def test_a_files_copies_stay_setup_only_before_the_first_kernel_of_all_its_parts():
    """Two parts of one file: copies early in the second part but after the first part's first
    kernel are no setup once the parts combine; the devices and sums join."""
    def part(rows):
        frame = pl.DataFrame(rows, orient="row", schema={"order": pl.Int64, "category": pl.String, "time_ns": pl.Float64,
                                           "device": pl.String, "name": pl.String})
        return totals.partials_of_rows(frame.with_columns(
            pl.lit("r"), pl.lit("f.csv").alias("source_file"), pl.lit(1, pl.Int64).alias("source_rank"),
            pl.lit(1, pl.Int64).alias("count"), pl.col("name").alias("short_name")).rename({"literal": "run"}))

    first = part([(1, "memcpy", 5.0, "0", "HtoD"), (3, "conv", 10.0, "0", "k1"), (4, "memcpy", 2.0, "0", "DtoH")])
    second = part([(2, "memcpy", 7.0, "1", "HtoD"), (6, "gemm", 20.0, "1", "k2"), (5, "memcpy", 1.0, "1", "HtoD")])
    for parts in ([first, second], [second, first]):
        run = totals.time_totals(pl.concat(parts)).row(0, named=True)
        assert run["setup_time_ns"] == 12.0            # the copies at 1 and 2, before the kernel at 3
        assert run["kernel_time_ns"] == 30.0 and run["transfer_time_ns"] == 15.0 and run["devices"] == 2


def test_no_callback_carries_run_totals_into_the_pipeline():
    """Ingest writes the tables and the model its totals: the pipeline neither takes a
    callback nor imports the model (the layers contract checks the imports)."""
    import inspect

    from roofreport.pipeline import store

    assert "finish_runs" not in inspect.signature(store.prepare_update).parameters
    assert "finish_runs" not in inspect.signature(generation.write_generation).parameters
    assert not hasattr(generation, "FinishRuns")
    assert Path(generation.__file__).read_text().count("roofreport.model") == 0
