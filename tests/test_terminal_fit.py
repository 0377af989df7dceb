"""The terminal (issue 33, item 5): tables fit $COLUMNS with kernel names elided in the middle
and still distinct (`--wide`: whole), min/median/max per kernel as `nsys stats` prints them
(empty where the log gives a summary), `--format csv` one table a stream (or a file per table
with `-o DIR`), and `roofreport steps` on a real Kineto trace."""

from __future__ import annotations

import csv
import io
import json

import polars as pl
import pytest
from click.testing import CliRunner

import roofreport
from roofreport import terminal
from roofreport.cli import cli
from roofreport.report import fmt
from tests.conftest import SAMPLE_LOGS, corpus_path


def run(*args, columns: int | None = None):
    env = {"COLUMNS": str(columns)} if columns else {"COLUMNS": ""}
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False, env=env)


def _kernel_blocks(stdout: str) -> dict[str, list[str]]:
    """Run heading -> the kernel cells of its table in `summary`'s "Top N kernels" part."""
    part = stdout[stdout.index("Top "):].split("\n\n")[1:]
    blocks = {}
    for block in part:
        lines = block.splitlines()
        column = lines[1].index("category")     # the kernel column ends where category begins
        blocks[lines[0]] = [line[:column].rstrip() for line in lines[3:]]
    return blocks


@pytest.fixture(scope="module")
def whole():
    """Every kernel name `summary --top 5` shows of sample_logs/, whole, per run."""
    kernels = roofreport.summary(roofreport.read(SAMPLE_LOGS), top=5).kernels
    return {run: mine["kernel"].to_list() for (run,), mine in kernels.group_by(["run"], maintain_order=True)}


def test_summary_at_100_columns_fits_and_its_elided_kernel_names_stay_distinct(whole):
    result = run("summary", SAMPLE_LOGS, "--top", "5", "-q", columns=100)
    assert result.exit_code == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= 100
    blocks = _kernel_blocks(result.stdout)
    assert len(blocks) == len(whole)
    elided = 0
    for heading, shown in blocks.items():
        names = whole[heading.split(" (")[0]]
        assert len(shown) == len(names) and len(set(shown)) == len(shown), heading    # still distinct
        for cut, name in zip(shown, names):
            if "…" in cut:
                elided += 1
                pieces = [piece for piece in cut.split("…") if piece]
                assert all(piece in name for piece in pieces)    # what is shown is the name's own
            else:
                assert cut == name
    assert elided >= 10
    wide = run("summary", SAMPLE_LOGS, "--top", "5", "-q", "--wide", columns=100)
    for heading, shown in _kernel_blocks(wide.stdout).items():
        assert shown == whole[heading.split(" (")[0]]            # --wide: every name whole


def test_elision_keeps_what_tells_template_and_tile_variants_apart():
    names = [f"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_{tile}_32x{stages}_nn_align4>(Params)"
             for tile, stages in (("128x128", 3), ("64x64", 6), ("256x128", 3), ("128x256", 3))]
    names.append("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_kernel")
    for width in (24, 30, 40, 64):
        shown = terminal.elide_all(names, width)
        assert all(len(text) <= width for text in shown) and len(set(shown)) == len(names), (width, shown)
    shown = terminal.elide_all(names, 40)
    assert "128x128" in shown[0] and "64x64" in shown[1] and "256x128" in shown[2] and "128x256" in shown[3]
    assert all(text.startswith("void cutlass::") for text in shown[:4])


def test_min_median_max_per_kernel_from_launches_or_as_a_summary_printed_them():
    traced = roofreport.summary(roofreport.read(SAMPLE_LOGS / "a100" / "resnet18"), top=3).kernels
    assert traced["median_ns"].null_count() == 0
    assert ((traced["min_ns"] <= traced["median_ns"]) & (traced["median_ns"] <= traced["max_ns"])).all()
    assert ((traced["min_ns"] <= traced["avg_ns"]) & (traced["avg_ns"] <= traced["max_ns"])).all()
    # nvprof's summary mode prints Min and Max per kernel, never a median
    summarised = roofreport.summary(roofreport.read(SAMPLE_LOGS / "k80_sweep"), top=3).kernels.filter(
        pl.col("run").str.contains("alexnet_128"))
    assert summarised.height and summarised["avg_ns"].null_count() == 0
    assert summarised.select("min_ns", "median_ns", "max_ns").null_count().row(0) == (0, summarised.height, 0)
    assert ((summarised["min_ns"] <= summarised["avg_ns"]) & (summarised["avg_ns"] <= summarised["max_ns"])).all()
    printed = run("summary", SAMPLE_LOGS / "a100" / "resnet18", "--top", "3", "-q", columns=120).stdout
    assert "median" in printed.splitlines()[printed.splitlines().index("Top 3 kernels per run") + 3]


def test_summary_prints_a_kernel_summarys_min_median_and_max():
    """cs336's gpukernsum: ampere_sgemm_128x128_nn is one row (`485057 ... 485377.0 ... 599458`:
    its printed min, median and max); ampere_sgemm_128x64_tn three rows of three launch shapes
    (the min of their mins, the max of their maxes, no median of medians)."""
    kern_sum = corpus_path("derived", "nsys", "cs336_pytorch_lm2.7B_nsys2024.6_gpukernsum.csv")
    rows = {row["kernel"]: row for row in csv.DictReader(io.StringIO(
        run("summary", kern_sum, "--top", "4", "--format", "csv", "--table", "kernels", "-q").stdout))}
    one = rows["ampere_sgemm_128x128_nn"]
    assert (one["min_ns"], one["median_ns"], one["max_ns"]) == ("485057.0", "485377.0", "599458.0")
    three = rows["ampere_sgemm_128x64_tn"]
    assert (three["count"], three["min_ns"], three["median_ns"], three["max_ns"]) == ("900", "1446691.0", "", "7121681.0")
    lines = run("summary", kern_sum, "--top", "4", "--table", "kernels", "-q", columns=150).stdout.splitlines()
    heads = lines[lines.index("Top 4 kernels per run") + 3].split()
    assert heads[-5:] == ["average", "min", "median", "max", "share"]
    printed = {line.split()[0]: line.split() for line in lines if line.startswith("ampere_sgemm_")}
    # average, min, median, max
    assert printed["ampere_sgemm_128x128_nn"][5:13] == ["491", "µs", "485", "µs", "485", "µs", "599", "µs"]
    assert printed["ampere_sgemm_128x64_tn"][5:12] == ["3.32", "ms", "1.45", "ms", "–", "7.12", "ms"]


def test_csv_without_a_table_is_refused_naming_the_tables_or_written_one_file_each(tmp_path):
    refused = run("summary", SAMPLE_LOGS / "v100", "--format", "csv")
    assert refused.exit_code == 2 and refused.stdout == ""
    assert refused.stderr == ("roofreport: usage error: --format csv prints one table: add --table NAME "
                              "(runs, categories, kernels), or -o DIR for one CSV file per table\n")
    compared = run("compare", SAMPLE_LOGS / "v100", SAMPLE_LOGS / "a100", "--format", "csv")
    assert compared.exit_code == 2 and "(pairs, unpaired, totals, categories, kernels)" in compared.stderr
    written = run("summary", SAMPLE_LOGS / "v100", "--format", "csv", "-o", tmp_path / "tables", "-q")
    assert written.exit_code == 0 and written.stdout == ""
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == ["categories.csv", "kernels.csv", "runs.csv"]
    for name in ("runs", "categories", "kernels"):
        alone = run("summary", SAMPLE_LOGS / "v100", "--format", "csv", "--table", name, "-q").stdout
        assert (tmp_path / "tables" / f"{name}.csv").read_text(encoding="utf-8").rstrip("\n") == alone.rstrip("\n")
    assert run("summary", SAMPLE_LOGS / "v100", "-o", tmp_path / "x").exit_code == 2   # -o writes CSV only


def test_steps_prints_steps_time_breakdown_and_mfu_of_a_kineto_trace():
    trace = corpus_path("kineto", "hta-trace_filter")
    result = run("steps", trace, "-q", "--gpu", "A100", columns=140)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Training steps per run") and max(len(line) for line in lines) <= 140
    assert any("ProfilerStep#551" in line for line in lines) and any("ProfilerStep#552" in line for line in lines)
    heads = lines[1].split()
    assert {"MFU", "compute", "comm", "memory", "idle"} <= set(heads)
    rows = list(csv.DictReader(io.StringIO(run("steps", trace, "--format", "csv", "--table", "steps", "-q").stdout)))
    assert [row["name"] for row in rows] == ["ProfilerStep#551", "ProfilerStep#552"] * 2
    steps = roofreport.analyze(trace, gpu="A100").steps
    assert sorted(float(row["duration_ns"]) for row in rows) == sorted(steps["duration_ns"].to_list())
    objects = json.loads(run("steps", trace, "--format", "json", "-q", "--gpu", "A100").stdout)
    assert set(objects) == {"runs", "steps"} and len(objects["runs"]) == 2
    assert all(0 < row["mfu_pct"] < 100 for row in objects["runs"])
    parts = [sum(row[f"{part}_pct"] for part in ("compute", "communication", "memory", "idle")) for row in objects["runs"]]
    assert parts == pytest.approx([100.0, 100.0])
    assert run("steps", SAMPLE_LOGS / "v100", "-q").stderr == ""    # (quiet: nothing said)
    empty = run("steps", SAMPLE_LOGS / "v100")
    assert empty.exit_code == 0 and "no training steps" in empty.stderr


def _longest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_steps_at_100_columns_fits_splitting_its_tables_into_panels_that_repeat_run_and_step():
    trace = corpus_path("kineto", "hta-trace_filter")
    result = run("steps", trace, "-q", "--gpu", "A100", columns=100)
    assert result.exit_code == 0, result.stderr
    assert _longest(result.stdout) <= 100
    steps = roofreport.analyze(trace, gpu="A100").step_summary
    for median in steps["step_ns"]:                     # the key figure: each run's step time
        assert fmt.duration(median) in result.stdout
    assert "MFU" in result.stdout and "(continued)" in result.stdout
    continued = result.stdout[result.stdout.index("Every step"):].split("\n\n")[1].splitlines()
    assert continued[1].split()[:3] == ["run", "step", "name"]    # each panel names its rows
    assert sum("ProfilerStep#551" in line for line in result.stdout.splitlines()) == 4   # 2 ranks, 2 panels
    wide = run("steps", trace, "-q", "--gpu", "A100", "--wide", columns=100)
    assert "(continued)" not in wide.stdout and _longest(wide.stdout) > 100    # --wide: one table each


def test_compare_at_100_columns_fits_and_keeps_the_speedups():
    result = run("compare", SAMPLE_LOGS / "v100", SAMPLE_LOGS / "a100", "-q", columns=100)
    assert result.exit_code == 0, result.stderr
    assert _longest(result.stdout) <= 100
    pairs = roofreport.compare(SAMPLE_LOGS / "v100", SAMPLE_LOGS / "a100").frames()
    for speedup in pairs["totals"]["speedup"]:
        assert fmt.ratio(speedup) in result.stdout
    kernels = result.stdout.split("Kernels, biggest change first")[1].split("\n\n")[0].splitlines()
    assert "A/B" in kernels[1].split()                  # the speedup stays beside each kernel's name
    assert "FLOP/s A" in result.stdout                  # the rest in a panel below, not dropped
    for columns in (60, 80):
        assert _longest(run("compare", SAMPLE_LOGS / "v100", SAMPLE_LOGS / "a100", "-q", columns=columns).stdout) \
            <= columns
    assert _longest(run("compare", SAMPLE_LOGS / "v100", SAMPLE_LOGS / "a100", "-q", "--wide", columns=100).stdout) > 100
