"""Printed `key_averages().table()` output: the real H100 table agrees with its own trailer
lines and with the Kineto trace of the same run; torch's other column selections, units and
damage are read as torch writes them (layouts from torch's `_build_table`)."""

from __future__ import annotations

import polars as pl
import pytest

from roofreport.families.common.textio import Document
from roofreport.families.pytorch.kineto import parse_kineto
from roofreport.families.pytorch.table import parse_table
from tests.conftest import corpus_path, parse_path

RULE = "-" * 24 + "  " + "  ".join(["-" * 12] * 5) + "  "


def _table() -> tuple:
    path = corpus_path("kineto", "h100-resnet18", "key_averages_resnet18_b32.txt")
    return path, parse_path(path, "pytorch")


def _metric(result, name: str) -> pl.DataFrame:
    metrics = result.tables["metrics"]
    return metrics.filter((pl.col("metric") == name) & (pl.col("section") == "key_averages"))


@pytest.mark.corpus
def test_rows_become_kernels_and_operators():
    path, result = _table()
    assert result.error is None and result.variant == "key_averages table"
    body = [line for line in path.read_text().splitlines()[3:-3]]
    kernels, operators = result.tables["kernels"], result.tables["regions"]
    assert kernels.height + operators.height == len(body) == 40
    assert set(kernels["kind"]) == {"summary"} and set(operators["kind"]) == {"operator_self"}
    # Device rows: no CPU time. Their names are kernels', cut to the column with '...'.
    assert all(n.startswith(("void ", "sm80_", "sm90_")) for n in kernels["name"])
    first = kernels.row(0, named=True)
    assert (first["name"], first["count"], first["duration_ns"]) == (
        "void cudnn::engines_precompiled::nchwToNhwcKernel<fl...", 194, 1_557_000.0)
    assert "pytorch.truncated-name" in {w.code for w in result.warnings}
    conv = operators.filter(pl.col("name") == "aten::convolution_backward").row(0, named=True)
    assert (conv["count"], conv["duration_ns"]) == (40, 3_236_000.0)


@pytest.mark.corpus
def test_shares_agree_with_the_trailer_totals():
    _, result = _table()
    totals = dict(result.tables["metrics"].filter(pl.col("section") == "key_averages totals")
                  .select("metric", "value").iter_rows())
    assert totals == {"Self CPU time total": 34_268_000.0, "Self CUDA time total": 15_188_000.0}
    for time_col, pct_col, total in (("Self CPU", "Self CPU %", "Self CPU time total"),
                                     ("Self CUDA", "Self CUDA %", "Self CUDA time total")):
        rows = _metric(result, time_col).join(_metric(result, pct_col), on="source_line")
        computed = rows["value"] / totals[total] * 100
        # torch prints 2 decimals of a share of unrounded times; the times and the total are
        # printed to 1 us (a 15 ms total: 0.003 points), the share to 0.005 points.
        assert ((computed - rows["value_right"]).abs() < 0.01).all(), time_col
    # The printed rows are the top 40: their device time is part of the total, not more.
    assert result.tables["kernels"]["duration_ns"].sum() <= totals["Self CUDA time total"]


@pytest.mark.corpus
def test_the_table_agrees_with_the_trace_of_the_same_run():
    _, result = _table()
    trace = parse_kineto(corpus_path("kineto", "h100-resnet18", "kineto_resnet18_b32.json"), "x")
    gpu = trace.tables["activities"]
    total = dict(result.tables["metrics"].filter(pl.col("section") == "key_averages totals")
                 .select("metric", "value").iter_rows())["Self CUDA time total"]
    # Self CUDA time total: every kernel, memcpy and memset of the trace (to the printed us).
    assert abs(gpu["duration_ns"].sum() - total) <= 500
    by_name = gpu.filter(pl.col("kind") == "kernel").group_by("name").agg(
        pl.len().alias("calls"), pl.col("duration_ns").sum().alias("time"))
    for row in result.tables["kernels"].iter_rows(named=True):
        prefix = row["name"].removesuffix("...")
        same = by_name.filter(pl.col("name").str.starts_with(prefix) if row["name"].endswith("...")
                              else pl.col("name") == row["name"])
        matches = same.filter((pl.col("calls") == row["count"])
                              & ((pl.col("time") - row["duration_ns"]).abs() <= 500))
        assert matches.height >= 1, row["name"]


def _parse(text: str):
    return parse_table(Document.from_text(text, "t.txt"), "key_averages table")


def _layout(header: list[str], rows: list[list[str]], widths: list[int], totals: list[str]) -> str:
    rule = "  ".join("-" * w for w in widths) + "  "

    def line(cells):
        return "  ".join(f"{c:>{w}}" for c, w in zip(cells, widths)) + "  "
    return "\n".join(["program output", rule, line(header), rule, *map(line, rows), rule, *totals, ""])


def test_cpu_only_table_with_memory_and_seconds():
    header = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
              "CPU Mem", "Self CPU Mem", "# of Calls"]
    rows = [["aten::mm", "60.00%", "1.500s", "80.00%", "2.000s", "1.000s", "4.00 Mb", "-1.50 Kb", "2"],
            ["aten::relu", "40.00%", "1.000s", "40.00%", "1.000s", "500.000ms", "0 b", "0 b", "2"]]
    result = _parse(_layout(header, rows, [24] + [12] * 8, ["Self CPU time total: 2.500s"]))
    assert result.error is None and "kernels" not in result.tables
    regions = result.tables["regions"]
    assert regions["duration_ns"].to_list() == [1.5e9, 1.0e9]
    memory = result.tables["metrics"].filter(pl.col("metric") == "Self CPU Mem")
    assert memory["value"].to_list() == [-1536.0, 0.0]
    assert result.tables["metrics"].filter(pl.col("metric") == "CPU Mem")["value"][0] == 4 * 2**20


def test_other_devices_flops_shapes_and_nan():
    header = ["Name", "Self CPU", "CPU total", "Self XPU", "Self XPU %", "XPU total", "# of Calls",
              "Input Shapes", "Total GFLOPs"]
    rows = [["aten::addmm", "10.000us", "20.000us", "0.000us", "0.00%", "5.000us", "1",
             "[[8], [8, 4], [4]]", "1.250"],
            ["gemm_kernel", "0.000us", "0.000us", "5.000us", "NaN", "5.000us", "1", "[]", "--"]]
    result = _parse(_layout(header, rows, [16] + [12] * 6 + [20, 12], ["Self XPU time total: 5.000us"]))
    assert result.tables["kernels"]["name"].to_list() == ["gemm_kernel"]
    assert result.tables["kernels"]["duration_ns"].to_list() == [5000.0]
    flops = result.tables["metrics"].filter(pl.col("metric") == "Total GFLOPs")["value"].to_list()
    assert flops == [1.25e9, None]
    shapes = result.tables["metrics"].filter(pl.col("metric") == "Input Shapes")["value_text"]
    assert shapes.to_list() == ["[[8], [8, 4], [4]]", "[]"]
    nan = result.tables["metrics"].filter(pl.col("metric") == "Self XPU %")["value_text"]
    assert nan.to_list() == ["0.00%", "NaN"]
    assert not [w for w in result.warnings if w.code == "pytorch.bad-value"]


def test_damage_is_reported_with_its_place():
    header = ["Name", "Self CPU", "CPU total", "# of Calls"]
    rows = [["aten::mm", "1.000us", "2.000us", "3"], ["aten::add", "oops", "2.000us", "1"]]
    text = _layout(header, rows, [16, 12, 12, 12], ["Self CPU time total: 3.000us"])
    result = _parse(text)
    bad = [w for w in result.warnings if w.code == "pytorch.bad-value"]
    assert len(bad) == 1 and bad[0].line == 6 and ":6:" in bad[0].message
    assert result.tables["regions"]["name"].to_list() == ["aten::mm", "aten::add"]
    cut = _parse("\n".join(text.splitlines()[:6]))
    assert "pytorch.truncated" in {w.code for w in cut.warnings}
    assert cut.tables["regions"].height == 2
    twice = _parse(text + text)
    assert "pytorch.repeated-table" in {w.code for w in twice.warnings}
    assert twice.tables["regions"].height == 2
    assert _parse("no table here\n").error is not None


def test_torch_1_5_legacy_layout_left_aligned():
    """The autograd profiler of torch 1.4-1.7 left-aligns every column, names `Self CPU total`
    and `Number of Calls`, and folds kernel time into its operators (no device rows)."""
    widths = [20, 16, 14, 11, 11, 12, 12, 11, 12, 15]
    header = ["Name", "Self CPU total %", "Self CPU total", "CPU total %", "CPU total", "CPU time avg",
              "CUDA total %", "CUDA total", "CUDA time avg", "Number of Calls"]
    rows = [["addmm", "62.50%", "500.000us", "75.00%", "600.000us", "300.000us", "80.00%", "1.200ms",
             "600.000us", "2"],
            ["relu", "37.50%", "300.000us", "37.50%", "300.000us", "150.000us", "20.00%", "300.000us",
             "150.000us", "2"]]
    rule = "".join("-" * w + "  " for w in widths)

    def line(cells):
        return "".join(f"{c:<{w}}  " for c, w in zip(cells, widths))
    text = "\n".join([rule, line(header), rule, *map(line, rows), rule,
                      "Self CPU time total: 800.000us", "CUDA time total: 1.500ms", ""])
    result = _parse(text)
    assert result.error is None and "kernels" not in result.tables
    assert result.tables["regions"].select("name", "duration_ns", "count").rows() == [
        ("addmm", 500_000.0, 2), ("relu", 300_000.0, 2)]
    totals = result.tables["metrics"].filter(pl.col("section") == "key_averages totals")
    assert totals.select("metric", "value").rows() == [("Self CPU time total", 800_000.0),
                                                       ("CUDA time total", 1_500_000.0)]


def test_source_location_continuation_lines():
    widths = [12, 12, 12, 40]
    header = ["Name", "Self CPU", "# of Calls", "Source Location"]
    rule = "".join("-" * w + "  " for w in widths)

    def line(cells):
        return "".join(f"{c:>{w}}  " for c, w in zip(cells, widths))
    text = "\n".join([rule, line(header), rule, line(["aten::mm", "5.000us", "1", "train.py(42): step"]),
                      line(["", "", "", "train.py(80): main"]), rule, "Self CPU time total: 5.000us", ""])
    result = _parse(text)
    assert result.tables["regions"]["name"].to_list() == ["aten::mm"]
    locations = result.tables["metrics"].filter(pl.col("metric") == "Source Location")["value_text"]
    assert locations.to_list() == ["train.py(42): step"]
