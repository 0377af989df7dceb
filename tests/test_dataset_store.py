"""The incremental dataset folder (`parse --update`, `roofreport.read(paths, dataset=DIR)`,
pipeline/store.py): every update's tables equal a fresh read of the same logs, only new and
changed files are read, a version change reads everything again, an interrupted update leaves
the previous dataset readable, and others scan the folder lazily."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

import roofreport
from roofreport import api
from roofreport.cli import cli
from roofreport.families.common.limits import Limits
from roofreport.pipeline import config, generation, store
from roofreport.tables import schema
from tests.conftest import SAMPLE_LOGS, corpus_path

TABLES = list(schema.TABLES)


@pytest.fixture()
def logs(tmp_path: Path) -> Path:
    """A copy of the demo logs the test may change, with old mtimes (as logs that arrived
    earlier: an update trusts their size and mtime)."""
    folder = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, folder)
    for path in folder.rglob("*"):
        os.utime(path, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    return folder


def assert_same_tables(dataset: roofreport.Dataset, fresh: roofreport.Dataset) -> None:
    for name in TABLES:
        assert_frame_equal(dataset.tables[name], fresh.tables[name], check_exact=True), name
    assert [(f.path, f.status, f.run, f.rows, len(f.warnings), f.error) for f in dataset.files] == \
        [(f.path, f.status, f.run, f.rows, len(f.warnings), f.error) for f in fresh.files]


def test_a_first_update_writes_the_tables_of_a_fresh_read(logs, tmp_path):
    data = roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    assert data.update_report.full and data.update_report.new == data.update_report.read == len(data.files)
    assert_same_tables(data, roofreport.read(logs, jobs=1))
    # a dataset folder read again, as it is, is the same
    assert_same_tables(roofreport.read(tmp_path / "ds"), roofreport.read(logs, jobs=1))


def test_an_update_reads_only_new_and_changed_files_and_drops_the_gone(logs, tmp_path):
    roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    trace = logs / "a100" / "resnet18" / "report_cuda_gpu_trace.csv"
    lines = trace.read_text().splitlines(keepends=True)
    trace.write_text("".join(lines[: len(lines) // 2]))          # a trace cut short
    (logs / "v100" / "dmon" / "gpu_utilization_v100.txt").unlink()
    new = logs / "k80_sweep_2" / "out.alexnet_64_0.01_k80_full.912075"
    new.parent.mkdir()
    shutil.copy(logs / "k80_sweep" / "out.alexnet_64_0.01_k80_full.812075", new)

    data = roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    report = data.update_report
    assert (report.new, report.changed, report.gone, report.read) == (1, 1, 1, 2)
    assert report.unchanged == len(data.files) - 2 and not report.full
    # three files changed, came or went: at most their three batches are written again (how
    # many batches the demo logs make depends on where the test's folder is)
    assert 1 <= report.batches_written <= 3
    assert_same_tables(data, roofreport.read(logs, jobs=1))
    assert not data.kernels.filter(pl.col("source_file").str.contains("dmon")).height


def test_a_changed_file_that_moves_other_files_runs_regroups_them(logs, tmp_path):
    before = roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    runs_before = {f.path: f.run for f in before.files}
    # A second Nsight Compute log in a folder of one run: two logs of one kind are never one
    # run, so the folder's other files (not read again) get other runs.
    shutil.copy(logs / "v100" / "vgg11" / "ncu-log-vgg11.txt", logs / "a100" / "vgg11" / "ncu-log-vgg11-v100.txt")
    after = roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    assert after.update_report.read == 1
    moved = [f.path for f in after.files if f.path in runs_before and f.run != runs_before[f.path]]
    assert any("a100/vgg11" in path for path in moved)
    assert_same_tables(after, roofreport.read(logs, jobs=1))


# (`logs-5`, given relative: where the demo logs made one batch when the cuts hashed the whole
# path, the folders above the logs included, as 1 temporary folder in ~300 did; the update then
# rewrote that batch, and worked out the totals of every run)
@pytest.mark.parametrize("where", [None, "logs-5"])
def test_an_update_works_out_run_totals_only_for_the_runs_it_changed(logs, tmp_path, monkeypatch, where):
    """The run totals of runs whose rows and row are as before are kept, not computed again
    from every batch; the runs table still equals a fresh read's. Wherever the logs lie."""
    from roofreport.model import Model, batches

    if where:
        monkeypatch.chdir(tmp_path)
        logs = Path(logs.rename(where).name)
    roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    asked = []
    real = Model.totals.func
    computed = []
    real_partials = batches._partials_of
    trace = logs / "a100" / "resnet18" / "report_cuda_gpu_trace.csv"
    with monkeypatch.context() as spied:
        def spy(model):
            asked.append(sorted(model.tables["runs"]["run"]))
            return real(model)

        spied.setattr(Model, "totals", property(spy))
        spied.setattr(batches, "_partials_of", lambda tables: computed.append(1) or real_partials(tables))
        roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
        assert computed == []                            # nothing changed: every batch's partials kept
        assert all(not runs for runs in asked)           # and no run's totals computed
        asked.clear()
        lines = trace.read_text().splitlines(keepends=True)
        trace.write_text("".join(lines[: len(lines) // 2]))
        data = roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
        assert 1 <= len(computed) <= 2                   # the changed file's batch, no other
    fresh = roofreport.read(logs, jobs=1)
    changed_run = next(f.run for f in fresh.files if f.path == str(trace))
    worked_out = sorted(run for runs in asked for run in runs)
    assert changed_run in worked_out and len(worked_out) < fresh.runs.height
    assert_same_tables(data, fresh)


def test_a_touched_file_with_the_same_bytes_is_not_read_again(logs, tmp_path):
    roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    log = logs / "v100" / "vgg11" / "ncu-log-vgg11.txt"
    os.utime(log, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    data = roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    assert (data.update_report.read, data.update_report.changed, data.update_report.batches_written) == (0, 0, 0)
    manifest = pl.read_parquet(tmp_path / "ds" / "current" / generation.FILES_MANIFEST)
    assert manifest.filter(pl.col("path") == str(log))["mtime_ns"].item() == 1_700_000_000_000_000_000


def test_a_file_read_under_other_limits_is_read_again(logs, tmp_path):
    """The limits are part of what decides re-reading: a trace refused past --max-unpacked is
    read whole once the limit is raised, and a roofreport.toml lowering a limit for one folder
    reads that folder again (alone); the tables equal a fresh read's each time."""
    event = b'{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"device": 0}}'
    trace = logs / "a100" / "rank0.pt.trace.json.gz"
    trace.write_bytes(gzip.compress(b'{"schemaVersion": 1, "traceEvents": [' + event + b" " * (4 << 20) + b"]}"))
    os.utime(trace, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    strict = Limits(unpacked_bytes=1 << 20)
    data = roofreport.read(logs, dataset=tmp_path / "ds", jobs=1, limits=strict)
    outcome = next(f for f in data.files if f.path == str(trace))
    assert outcome.status == "error" and "unpacks to more than 1.0 MiB" in outcome.error
    again = roofreport.read(logs, dataset=tmp_path / "ds", jobs=1, limits=strict)
    assert again.update_report.read == 0                       # the same limits: nothing read
    assert_same_tables(again, roofreport.read(logs, jobs=1, limits=strict))

    raised = roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    report = raised.update_report
    assert report.read == report.changed == len(raised.files) and report.new == 0
    assert any("read under other limits" in message for message in report.messages)
    assert next(f for f in raised.files if f.path == str(trace)).status == "ok"
    assert_same_tables(raised, roofreport.read(logs, jobs=1))

    folder = logs / "v100" / "vgg11"
    (folder / "roofreport.toml").write_text('[limits]\nmax_line = "512K"\n')
    config.load.cache_clear()
    lowered = roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    beside = [f for f in lowered.files if Path(f.path).parent == folder and not f.path.endswith(".toml")]
    assert lowered.update_report.changed == len(beside) > 0 and lowered.update_report.new == 1   # (the toml)
    assert_same_tables(lowered, roofreport.read(logs, jobs=1))
    config.load.cache_clear()


def test_the_manifest_records_every_file_and_the_versions(logs, tmp_path):
    data = roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    manifest = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert manifest["roofreport_version"] == roofreport.__version__
    assert manifest["schema_version"] == schema.SCHEMA_VERSION
    files = pl.read_parquet(tmp_path / "ds" / manifest["generation"] / generation.FILES_MANIFEST)
    assert files["path"].to_list() == [f.path for f in data.files]
    on_disk = {str(p): p.stat() for p in logs.rglob("*") if p.is_file()}
    for row in files.iter_rows(named=True):
        assert row["size"] == on_disk[row["path"]].st_size and row["mtime_ns"] == on_disk[row["path"]].st_mtime_ns
    readable = files.filter(pl.col("facts").str.contains('"parsed":true'))
    assert readable.height and readable["content_hash"].null_count() == 0


@pytest.mark.parametrize("change", ["roofreport version", "schema version", "readers changed"])
def test_a_new_version_reads_everything_again_and_says_why(logs, tmp_path, monkeypatch, change):
    roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    if change == "roofreport version":
        monkeypatch.setattr(store, "__version__", "99.0")
    elif change == "schema version":
        monkeypatch.setattr(schema, "SCHEMA_VERSION", schema.SCHEMA_VERSION + 1)
    else:   # a development install: the code changed, not the version
        monkeypatch.setattr(store, "code_fingerprint", lambda: "another")
    with pytest.raises(roofreport.UsageError, match="refresh it with"):
        roofreport.read(tmp_path / "ds")      # an old dataset is not read as if it were new
    data = roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    assert data.update_report.full and data.update_report.read == len(data.files)
    assert any(change in message and "every file is read again" in message for message in data.update_report.messages)
    assert_same_tables(data, roofreport.read(logs, jobs=1))


def test_an_update_that_fails_while_writing_leaves_the_previous_dataset(logs, tmp_path, monkeypatch):
    roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    previous = roofreport.read(logs, jobs=1)
    (logs / "a100" / "vgg11" / "nvidia-smi-query.csv").unlink()
    writes = []
    real_write = generation._write_table

    def fail_on_the_third(path, frame, cache=False):
        writes.append(path)
        if len(writes) == 3:
            raise OSError(28, "No space left on device")
        real_write(path, frame, cache)

    monkeypatch.setattr(generation, "_write_table", fail_on_the_third)
    with pytest.raises(OSError):
        roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    assert_same_tables(roofreport.read(tmp_path / "ds"), previous)

    monkeypatch.setattr(generation, "_write_table", real_write)
    data = roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    assert_same_tables(data, roofreport.read(logs, jobs=1))
    generations = sorted(p.name for p in (tmp_path / "ds").glob("gen-*"))
    assert len(generations) == 2   # the one in use and the previous; the failed one is gone


def test_an_update_killed_while_writing_leaves_the_previous_dataset(logs, tmp_path):
    roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    previous = roofreport.read(logs, jobs=1)
    (logs / "k80_sweep" / "out.alexnet_16_0.01_k80_full.812041").unlink()
    script = textwrap.dedent(f"""\
        import os, signal
        import roofreport
        from roofreport.pipeline import generation, store
        real, count = generation._write_table, [0]
        def write_then_die(path, frame, cache=False):
            real(path, frame, cache)
            count[0] += 1
            if count[0] == 4:
                os.kill(os.getpid(), signal.SIGKILL)
        generation._write_table = write_then_die
        roofreport.read({str(logs)!r}, dataset={str(tmp_path / "ds")!r}, jobs=1)
        """)
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert_same_tables(roofreport.read(tmp_path / "ds"), previous)
    assert_same_tables(roofreport.read(logs, dataset=tmp_path / "ds", jobs=1), roofreport.read(logs, jobs=1))


def test_others_scan_the_dataset_lazily(logs, tmp_path):
    roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    fresh = roofreport.read(logs, jobs=1)
    current = tmp_path / "ds" / "current"
    # polars: one scan over the table's batch files, the filter pushed into the read
    query = pl.scan_parquet(current / "metrics" / "**" / "*.parquet", hive_partitioning=False) \
        .filter(pl.col("run") == "a100/vgg11").select("metric", "value")
    plan = query.explain()   # the scan itself filters and reads 3 of the 12 columns
    assert 'SELECTION: col("run") == "a100/vgg11"' in plan and "PROJECT 3/12 COLUMNS" in plan
    assert_frame_equal(query.collect(), fresh.metrics.filter(pl.col("run") == "a100/vgg11").select("metric", "value"))
    hive = pl.scan_parquet(current / "kernels").collect()   # the batch folders as a column
    assert "batch" in hive.columns and hive.height == fresh.kernels.height
    # roofreport's own read and analysis never load the metrics table
    data = roofreport.read(tmp_path / "ds")
    analysis = roofreport.analyze(data)
    assert "metrics" not in data.tables.loaded() and "metrics" not in analysis.tables.loaded()
    assert_frame_equal(data.scan("metrics").filter(pl.col("run") == "a100/vgg11").collect(),
                       fresh.metrics.filter(pl.col("run") == "a100/vgg11"))


def test_duckdb_reads_the_dataset(logs, tmp_path):
    duckdb = pytest.importorskip("duckdb", reason="DuckDB is not installed (it is no dependency)")
    roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    fresh = roofreport.read(logs, jobs=1)
    glob = str(tmp_path / "ds" / "current" / "kernels" / "*" / "*.parquet")
    count, seconds = duckdb.sql(f"select count(*), sum(duration_ns) from read_parquet('{glob}', "
                                "hive_partitioning = true)").fetchall()[0]
    assert count == fresh.kernels.height and seconds == pytest.approx(fresh.kernels["duration_ns"].sum())


def test_pandas_reads_the_dataset(logs, tmp_path):
    pandas = pytest.importorskip("pandas", reason="pandas is not installed (it is no dependency)")
    pytest.importorskip("pyarrow", reason="pyarrow (pandas' Parquet reader) is not installed")
    roofreport.read(logs, dataset=tmp_path / "ds", jobs=1)
    frame = pandas.read_parquet(tmp_path / "ds" / "current" / "kernels")
    assert len(frame) == roofreport.read(logs, jobs=1).kernels.height and "batch" in frame.columns


def test_the_cli_updates_and_builds_from_a_dataset(logs, tmp_path):
    runner = CliRunner()
    first = runner.invoke(cli, ["parse", str(logs), "-o", str(tmp_path / "ds"), "--update"])
    assert first.exit_code == 0, first.output
    count = sum(1 for p in logs.rglob("*") if p.is_file())
    assert f"{count} new" in first.output and f"{count} read" in first.output
    again = runner.invoke(cli, ["parse", str(logs), "-o", str(tmp_path / "ds"), "--update"])
    assert again.exit_code == 0 and "0 read" in again.output, again.output
    built = runner.invoke(cli, ["build", str(tmp_path / "ds"), "-o", str(tmp_path / "report.html"), "-q"])
    assert built.exit_code == 0, built.output
    assert "a100/vgg11" in (tmp_path / "report.html").read_text()
    # the layouts stay apart: no plain tables into a dataset, no dataset over plain tables
    plain = runner.invoke(cli, ["parse", str(logs), "-o", str(tmp_path / "ds"), "-q"])
    assert plain.exit_code == 2 and "incremental dataset" in plain.output
    assert runner.invoke(cli, ["parse", str(logs), "-o", str(tmp_path / "plain"), "-q"]).exit_code == 0
    onto = runner.invoke(cli, ["parse", str(logs), "-o", str(tmp_path / "plain"), "--update", "-q"])
    assert onto.exit_code == 2 and "plain" in onto.output
    csv = runner.invoke(cli, ["parse", str(logs), "-o", str(tmp_path / "x"), "--update", "--format", "csv"])
    assert csv.exit_code == 2 and "Parquet" in csv.output


@pytest.mark.corpus
@pytest.mark.slow
def test_a_course_folder_updated_equals_a_fresh_read(tmp_path):
    """A real course folder (runs spread over folders, copies, failed runs) changed the way a
    campaign changes: a log cut short, one deleted, one new run folder."""
    logs = tmp_path / "course"
    shutil.copytree(corpus_path("course", "srikarym-hpml"), logs)
    roofreport.read(logs, dataset=tmp_path / "ds")
    outs = sorted(p for p in logs.rglob("*.out") if p.stat().st_size > 2000)
    text = outs[0].read_bytes()
    outs[0].write_bytes(text[: len(text) // 2])
    outs[1].unlink()
    shutil.copytree(outs[2].parent, logs / "rerun")
    data = roofreport.read(logs, dataset=tmp_path / "ds")
    assert data.update_report.read < len(data.files) // 2
    assert_same_tables(data, roofreport.read(logs))


def test_the_same_logs_are_cut_into_the_same_batches_wherever_they_lie(tmp_path):
    """The cuts hash each file's path below the folder its run ids are relative to, not the
    folders above the logs: the demo logs copied anywhere, or given relative, make the same
    batches, and so the same saving on an update and the same `parse` in memory or not."""
    from roofreport.pipeline.discover import discover

    found = discover([SAMPLE_LOGS])

    def cuts(root: Path) -> list[list[str]]:
        moved = [(root / path.relative_to(SAMPLE_LOGS), root) for path, _ in found]
        batches = generation.batches_of([str(path) for path, _ in moved], generation.batch_names(moved))
        return [[moved[i][0].relative_to(root).as_posix() for i in batch.members] for batch in batches]

    names = [path.relative_to(SAMPLE_LOGS).as_posix() for path, _ in found]
    assert generation.batch_names(found) == names     # (sample_logs holds its roofreport.toml)
    here = cuts(SAMPLE_LOGS)
    assert 1 < len(here) < len(found) // 4 and [name for batch in here for name in batch] == names
    # a file given alone is named as in its folder's walk; a folder under the toml's, from there
    given = [SAMPLE_LOGS / "v100", SAMPLE_LOGS / "a100" / "resnet18" / "nvidia-smi-query.csv"]
    assert generation.batch_names(discover(given)) == [*[name for name in names if name.startswith("v100/")],
                                                        "a100/resnet18/nvidia-smi-query.csv"]
    # (logs-5 and the pytest folder: places where the whole path's hash made the demo logs one batch)
    pytest_folder = Path("/tmp/pytest-of-ci/pytest-8/popen-gw0/test_an_update_works_out_run_t0/logs")
    elsewhere = [Path(f"/data/campaign{n}/logs") for n in range(20)]
    for root in [Path("logs-5"), pytest_folder, tmp_path / "logs", *elsewhere]:
        assert cuts(root) == here, root


def test_batches_stay_put_when_files_come_and_go():
    """A new folder or file changes the batch it lands in, no other: the rest of an update's
    batches are hard links to the previous generation's files."""
    folders = [f"camp/week{w:02d}/{course}/run{r}" for w in range(1, 5) for course in ("a", "b", "c")
               for r in range(6)]
    paths = [f"{folder}/log{n}.txt" for folder in folders for n in range(5)]
    before = {b.id: [paths[i] for i in b.members] for b in generation.batches_of(paths, paths)}
    assert 5 < len(before) < len(folders)   # folders grouped, not one batch per folder
    grown = sorted(paths + ["camp/week02/b/run3/log9.txt"] + [f"camp/week03/new/log{n}.txt" for n in range(3)])
    after = {b.id: [grown[i] for i in b.members] for b in generation.batches_of(grown, grown)}
    changed = [batch_id for batch_id, members in after.items() if before.get(batch_id) != members]
    assert 1 <= len(changed) <= 2 and len(after) - len(changed) >= len(before) - 2


def test_file_facts_keep_what_a_file_said_through_json(logs):
    from roofreport.pipeline.facts import FileFacts
    from roofreport.pipeline.ingest import FileTask, read_one

    path = logs / "k80_sweep" / "out.alexnet_64_0.01_k80_full.812075"
    facts = read_one(FileTask(str(path), str(path), fingerprint=True)).facts
    again = FileFacts.from_json(facts.to_json())
    assert again == facts and again.to_json() == facts.to_json()
    assert facts.parsed and facts.hints.command and facts.content_hash and facts.tables_digest


def test_an_update_keeps_the_run_ids_the_dataset_was_written_with(logs, tmp_path):
    """A dataset records the folder each input's run ids are relative to, and `--update` keeps
    it; a dataset written before anchors were recorded keeps its ids relative to the input."""
    v100 = logs / "v100"
    data = roofreport.read(v100, dataset=tmp_path / "ds", jobs=1)
    assert "v100/resnet18" in data.runs["run"].to_list()
    manifest_path = tmp_path / "ds" / store.MANIFEST
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    assert manifest["anchors"] == {os.path.abspath(v100): os.path.abspath(logs)}
    # an old dataset: no anchors recorded, and its ids were relative to the folder given
    del manifest["anchors"]
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    old = roofreport.read(v100, dataset=tmp_path / "ds", jobs=1)
    assert "resnet18" in old.runs["run"].to_list()
    # and now recorded so: the next update keeps them
    again = roofreport.read(v100, dataset=tmp_path / "ds", jobs=1)
    assert "resnet18" in again.runs["run"].to_list()
