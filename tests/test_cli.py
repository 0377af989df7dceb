"""The command line: help, exit codes, JSON shape, tables written."""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl
from click.testing import CliRunner

from roofreport.cli import cli
from tests.conftest import SAMPLE_LOGS, corpus_path
from tests.test_report_render import text_of


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_every_command_has_help():
    for command in ("inspect", "parse", "build", "summary", "compare"):
        result = run(command, "--help")
        assert result.exit_code == 0
        assert "Usage:" in result.output


def test_missing_path_is_a_usage_error():
    result = run("inspect", "/nonexistent/logs")
    assert result.exit_code == 2


def test_python_dash_m_runs_the_cli():
    out = subprocess.run([sys.executable, "-m", "roofreport", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and "roofreport" in out.stdout


def test_inspect_json_reports_family_variant_status_rows(tmp_path):
    log = corpus_path("ncu", "text", "v100_locale_decimal_comma_ax_2020.txt")
    readme = tmp_path / "README.md"
    readme.write_text("# notes\n")
    result = run("inspect", "--json", str(log), str(readme))
    assert result.exit_code == 0
    objects = json.loads(result.stdout)
    assert [o["family"] for o in objects] == ["ncu", None]
    assert objects[0]["status"] == "ok" and objects[0]["rows"]["kernels"] == 1
    assert objects[1]["status"] == "skipped"
    for o in objects:
        assert set(o) >= {"path", "family", "variant", "status", "rows", "warnings", "error"}


def test_parse_writes_every_table(tmp_path):
    log = corpus_path("ncu", "text", "mindspore_nvtx_start_end_ranges_metrics.txt")
    out = tmp_path / "tables"
    result = run("parse", str(log), "-o", str(out), "--format", "csv", "--quiet")
    assert result.exit_code == 0
    names = sorted(p.stem for p in out.iterdir())
    assert names == sorted(["kernels", "metrics", "activities", "api_calls", "samples", "regions",
                            "steps", "estimates", "runs", "files"])
    kernels = pl.read_csv(out / "kernels.csv")
    assert kernels.height == 3 and kernels["region"].to_list() == ["Gate_nvtx"] * 3


def test_output_over_an_input_is_refused(tmp_path):
    log = tmp_path / "ncu.txt"
    log.write_bytes(corpus_path("ncu", "text", "v100_locale_decimal_comma_ax_2020.txt").read_bytes())
    result = run("build", str(log), "-o", str(log.with_suffix(".pdf")))
    assert result.exit_code == 0
    result = run("parse", str(tmp_path), "-o", str(log))
    assert result.exit_code == 2


def test_parquet_tables_read_back_as_written_across_row_groups(tmp_path):
    """Tables bigger than one Parquet row group (output.PARQUET_ROW_GROUP_ROWS) read back with
    the same columns, types and values: a real trace's tables, repeated."""
    from polars.testing import assert_frame_equal

    from roofreport.pipeline.ingest import ingest
    from roofreport.tables import output

    log = corpus_path("nsys", "csv", "flame_torch_rtxa4500_cuda_gpu_trace_base_greenctx.csv")
    dataset = ingest([log])
    for name in ("kernels", "activities"):
        table = dataset.tables[name]
        assert table.height, name
        reps = 2 * output.PARQUET_ROW_GROUP_ROWS // table.height + 2
        dataset.tables[name] = pl.concat([table] * reps)
    written = output.write_tables(dataset, tmp_path / "out", "parquet")
    assert sorted(p.name for p in written) == sorted(f"{n}.parquet" for n in dataset.tables)
    for name in ("kernels", "activities", "runs", "files"):
        back = pl.read_parquet(tmp_path / "out" / f"{name}.parquet")
        assert_frame_equal(back, dataset.tables[name])
    assert dataset.tables["kernels"].height > 2 * output.PARQUET_ROW_GROUP_ROWS


def test_build_json_summary_writes_what_page_one_says(tmp_path):
    """`build --json-summary FILE`: page 1's findings, the speedups with their reasons and the
    per-run totals, for a CI job to track; the file is refused where it would overwrite an input."""
    logs = [str(SAMPLE_LOGS / "v100"), str(SAMPLE_LOGS / "a100")]
    out, summary = tmp_path / "report.html", tmp_path / "summary.json"
    result = run("build", *logs, "-o", str(out), "--json-summary", str(summary))
    assert result.exit_code == 0, result.output
    assert f"wrote {summary}" in result.output
    written = json.loads(summary.read_text(encoding="utf-8"))
    assert {"findings", "conclusions", "by_model", "speedups", "not_compared", "runs"} <= set(written)
    first = written["findings"][0]["text"]
    assert first.startswith("The A100-SXM4-40GB is faster than the V100-SXM2-16GB for resnet18")
    assert written["conclusions"][0]["text"] == first
    assert first in text_of(out.read_text(encoding="utf-8"))      # the page says it word for word
    assert {s["faster"] for s in written["speedups"]} == {"A100-SXM4-40GB"}
    timed = [r["kernel_time_ns"] for r in written["runs"] if r["kernel_time_ns"] is not None]
    assert len(written["runs"]) == 6 and len(timed) >= 4 and min(timed) > 0     # a dmon run has no kernels
    inside = SAMPLE_LOGS / "v100" / "vgg11"
    victim = next(p for p in sorted(inside.rglob("*")) if p.is_file())
    before = victim.read_bytes()
    refused = run("build", *logs, "-o", str(tmp_path / "again.html"), "--json-summary", str(victim))
    assert refused.exit_code != 0 and victim.read_bytes() == before
