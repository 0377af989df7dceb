"""What Nsight Compute 2023-2025 prints around its text results (issue 16, item 4).

* With `--nvtx` and chart sections (roofline), ncu prints `==WARNING== No metrics to show for
  section(s): ...` after every kernel: every kernel of the log is still read. No corpus log
  holds that line, so real 2023+ logs get it inserted where ncu prints it (after each kernel's
  results), and their tables must stay those of the log without it; a hand-written `--nvtx`
  log follows the same layout.
* `--print-details all` adds each chart's tables (`Table Name : ...` blocks with their own
  rules): read under `<section> / <table name>` (the CSV export's section and Body Item
  Label), never reported as unreadable. The corpus holds no such log: the hand-written one
  follows ncu 2025's output for `--section SpeedOfLight --section SpeedOfLight_RooflineChart
  --print-details all`.

Kernel headers are counted here with a regex of their own, not the reader's.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from roofreport.families.spec import ParseResult
from roofreport.pipeline.ingest import parse_file
from roofreport.pipeline.sniff import sniff
from tests.conftest import corpus_path

# A kernel header of a detail page, 2023+: `  name(sig) (grid)x(block), Context 1, Stream 7, Device 0, CC 8.6`.
HEADER = re.compile(r"^  \S.* \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\), Context \d+, Stream \d+, Device \d+, CC \d+\.\d+\s*$")
NO_METRICS = ("==WARNING== No metrics to show for section(s): SpeedOfLight_RooflineChart. Use "
              "--print-details option to change the part of the section that should be shown.")
LOGS_2023 = ["pytorch_silu_gh200_ncu2025.txt", "rtx3050ti_laptop_2mm_tensor_setfull.txt",
             "colab_t4_raytracer_warning_interleaved.txt", "t4_alexnet_imagenet_roofline_metrics_table_layout.txt",
             "rtx30_metrics_flops_dram_kbyte.txt", "launchfailed_nan_na_err_rules_2024.txt"]


def _parse(path: Path) -> ParseResult:
    sniffed = sniff(path)
    assert sniffed.family == "ncu", sniffed.skip_reason
    return parse_file(path, sniffed.spec.name, sniffed.variant, path.name)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def _headers(text: str) -> list[int]:
    """Line numbers of the kernel headers, found without the reader."""
    return [i for i, line in enumerate(text.split("\n"), start=1) if HEADER.match(line)]


def _with_warning_after_each_kernel(text: str) -> str:
    """`text` with ncu's `No metrics to show` warning after every kernel's results: before each
    header but the first, and at the end (a blank line before it, as ncu prints it)."""
    lines = text.rstrip("\n").split("\n")
    heads = set(_headers(text)[1:])
    out = []
    for i, line in enumerate(lines, start=1):
        if i in heads:
            out += ["", NO_METRICS]
        out.append(line)
    return "\n".join(out + ["", NO_METRICS]) + "\n"


def _without_lines(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.drop("source_line", "source_file", strict=False)


@pytest.mark.parametrize("name", LOGS_2023)
def test_every_kernel_is_read_when_ncu_warns_between_kernels(name, tmp_path):
    text = corpus_path("ncu", "text", name).read_text(encoding="utf-8")
    warned = _with_warning_after_each_kernel(text)
    heads = _headers(warned)
    assert len(heads) >= 1
    result = _parse(_write(tmp_path, name, warned))
    kernels, metrics = result.tables["kernels"], result.tables["metrics"]
    # Every header is one kernel row, at its own line, with metrics of its own.
    assert kernels["source_line"].to_list() == heads
    per_launch = metrics.group_by("launch_id").len()
    assert per_launch.height == len(heads) and per_launch["len"].min() > 0
    # The same tables as the log without the warnings (line numbers aside: they moved).
    plain = _parse(_write(tmp_path, "plain_" + name, text))
    for table in ("kernels", "metrics"):
        assert_frame_equal(_without_lines(result.tables[table]), _without_lines(plain.tables[table]))
    # ncu's message is one warning, at its first line, saying how often it was printed.
    said = [w for w in result.warnings if "No metrics to show" in w.message]
    times = f" (printed {len(heads)} times)" if len(heads) > 1 else ""
    assert [w.message for w in said] == [f"ncu: {NO_METRICS.removeprefix('==WARNING== ')}{times}"]
    assert said[0].line == (heads[1] - 1 if len(heads) > 1 else len(warned.rstrip().split("\n")))


NVTX_ROOFLINE = """\
==PROF== Connected to process 4242 (/usr/bin/python3.11)
==PROF== Profiling "gemm_kernel" - 0 (1/3): 0%....50%....100% - 12 passes
==PROF== Profiling "relu_kernel" - 1 (2/3): 0%....50%....100% - 12 passes
==PROF== Profiling "gemm_kernel" - 2 (3/3): 0%....50%....100% - 12 passes
==PROF== Disconnected from process 4242
[4242] python3.11@127.0.0.1
{kernels}"""
KERNEL = """\
  {name} ({grid})x(16, 16, 1), Context 1, Stream 7, Device 0, CC 8.9
    NVTX Push/Pop Stack for Thread 4242:
      <default domain>
{ranges}
    Section: GPU Speed Of Light Throughput
    ----------------------- ----------- ------------
    Metric Name             Metric Unit Metric Value
    ----------------------- ----------- ------------
    DRAM Frequency                  Ghz        10.24
    SM Frequency                    Ghz         2.51
    Elapsed Cycles                cycle      118,772
    Duration                         us        {duration}
    Compute (SM) Throughput           %        77.14
    ----------------------- ----------- ------------

    Section: GPU Speed Of Light Roofline Chart
    INF   The ratio of peak float (fp32) to double (fp64) performance on this device is 64:1. The workload achieved 12%  
          of this device's fp32 peak performance and 0% of its fp64 peak performance.                                   

""" + NO_METRICS + "\n"


def test_nvtx_and_roofline_log_with_warnings_between_kernels(tmp_path):
    kernels = [("gemm_kernel(const float *, const float *, float *, int)", "64, 64, 1", "47.30",
                ["        <0,forward>", "          <1,linear1>"]),
               ("relu_kernel(float *, int)", "256, 1, 1", "3.68", ["        <0,forward>"]),
               ("gemm_kernel(const float *, const float *, float *, int)", "64, 64, 1", "46.80",
                ["        <0,backward>"])]
    text = NVTX_ROOFLINE.format(kernels="".join(
        KERNEL.format(name=name, grid=grid, duration=duration, ranges="\n".join(ranges))
        for name, grid, duration, ranges in kernels))
    heads = _headers(text)
    result = _parse(_write(tmp_path, "nvtx_roofline.txt", text))
    table = result.tables["kernels"]
    assert table["source_line"].to_list() == heads and len(heads) == 3
    assert table["region"].to_list() == ["forward/linear1", "forward", "backward"]
    duration = result.tables["metrics"].filter(pl.col("metric") == "Duration")
    assert duration.sort("launch_id")["value"].to_list() == [47300.0, 3680.0, 46800.0]
    assert result.tables["metrics"].group_by("launch_id").len()["len"].to_list() == [5, 5, 5]
    assert [w.code for w in result.warnings] == ["ncu.warning"]


def test_progress_after_results_still_ends_them(tmp_path):
    """Two processes: the second's `==PROF==` lines and program output (shaped like table rows)
    after the first's results are not read as rows of its last table."""
    first = NVTX_ROOFLINE.format(kernels=KERNEL.format(
        name="relu_kernel(float *, int)", grid="256, 1, 1", duration="3.68", ranges="        <0,forward>"))
    second = ("==PROF== Connected to process 4243 (/usr/bin/python3.11)\n"
              "    loss                              0.25        1.00\n"
              "==PROF== Profiling \"relu_kernel\" - 0 (1/1): 0%....50%....100% - 12 passes\n"
              "==PROF== Disconnected from process 4243\n"
              "[4243] python3.11@127.0.0.1\n"
              + KERNEL.format(name="relu_kernel(float *, int)", grid="128, 1, 1", duration="2.00",
                              ranges="        <0,eval>"))
    result = _parse(_write(tmp_path, "two.txt", first + second))
    assert result.tables["kernels"]["grid"].to_list() == ["(256, 1, 1)", "(128, 1, 1)"]
    assert "loss" not in result.tables["metrics"]["metric"].to_list()
    assert result.tables["metrics"].height == 10


# -- --print-details all ---------------------------------------------------------------------

DETAILS_ALL = """\
==PROF== Connected to process 243320 (/llm.c/profile_adamw)
==PROF== Profiling "adamw_kernel3": 0%....50%....100% - 9 passes
==PROF== Profiling "adamw_kernel3": 0%....50%....100% - 9 passes
==PROF== Disconnected from process 243320
[243320] profile_adamw@127.0.0.1
{kernels}"""
DETAILS_KERNEL = """\
  void adamw_kernel3<float, float>(T1 *, float *, T2 *, float *, float *, unsigned long, long, long, long, float, float, float, float, float, float, float, float, unsigned int) (2048, 1, 1)x(512, 1, 1), Context 1, Stream 7, Device 0, CC 7.5
    Section: GPU Speed Of Light Throughput
    ----------------------- ----------- ------------
    Metric Name             Metric Unit Metric Value
    ----------------------- ----------- ------------
    DRAM Frequency                  Ghz         3.49
    SM Frequency                    Ghz         1.39
    Elapsed Cycles                cycle      845,438
    Memory Throughput                 %        {memory}
    Duration                         us       606.56
    Compute (SM) Throughput           %         7.12
    ----------------------- ----------- ------------

    GPU Throughput Chart
    Table Name : GPU Throughput
    ---------------- ----------- ------------
    Metric Name      Metric Unit Metric Value
    ---------------- ----------- ------------
    Memory [%]                 %        {memory}
    Compute (SM) [%]           %         7.12
    ---------------- ----------- ------------

    Compute Throughput Breakdown Chart
    Table Name : Pipe Utilization (% of active cycles)
    Table Description : Pipeline utilization based on the number of cycles the pipeline was active. This takes the rates of different instructions executing on the pipeline into account.
    -------------------- ----------- ------------
    Metric Name          Metric Unit Metric Value
    -------------------- ----------- ------------
    ALU                            %         9.24
    Tensor (All)                   %         0.55
    -------------------- ----------- ------------

    INF   This workload is utilizing greater than 80.0% of the available compute or memory performance of this device.
          To further improve performance, work will likely need to be shifted from the most utilized to another unit.

    Section: GPU Speed Of Light Roofline Chart
    ----------------------------------------------------------- ----------- ------------
    Metric Name                                                 Metric Unit Metric Value
    ----------------------------------------------------------- ----------- ------------
    Theoretical Predicated-On FFMA Thread Instructions Executed  inst/cycle          896
    Predicated-On FFMA Thread Instructions Executed Per Cycle    inst/cycle        28.46
    ----------------------------------------------------------- ----------- ------------

    Single Precision Roofline Chart
    Table Name : Achieved Traffic
    -------------- ----------- ------------
    Metric Name    Metric Unit Metric Value
    -------------- ----------- ------------
    DRAM Bandwidth     Gbyte/s        48.17
    -------------- ----------- ------------

    INF   The ratio of peak float (FP32) to double (FP64) performance on this device is 32:1.
"""


def test_print_details_all_chart_tables_are_read_under_their_names(tmp_path):
    text = DETAILS_ALL.format(kernels="".join(DETAILS_KERNEL.format(memory=m) for m in ("86.36", "86.40")))
    result = _parse(_write(tmp_path, "details_all.txt", text))
    assert result.warnings == [] and result.error is None
    assert result.tables["kernels"]["source_line"].to_list() == _headers(text)
    metrics = result.tables["metrics"]
    sections = metrics.filter(pl.col("launch_id") == 1).group_by("section", maintain_order=True).agg("metric")
    assert sections.rows() == [
        ("GPU Speed Of Light Throughput", ["DRAM Frequency", "SM Frequency", "Elapsed Cycles", "Memory Throughput",
                                           "Duration", "Compute (SM) Throughput"]),
        ("GPU Speed Of Light Throughput / GPU Throughput", ["Memory [%]", "Compute (SM) [%]"]),
        ("GPU Speed Of Light Throughput / Pipe Utilization (% of active cycles)", ["ALU", "Tensor (All)"]),
        ("GPU Speed Of Light Roofline Chart", ["Theoretical Predicated-On FFMA Thread Instructions Executed",
                                               "Predicated-On FFMA Thread Instructions Executed Per Cycle"]),
        ("GPU Speed Of Light Roofline Chart / Achieved Traffic", ["DRAM Bandwidth"]),
    ]
    # Chart titles and table descriptions are no rows; every table row is one metric.
    rows = [line for line in text.split("\n") if re.match(r"^    \S.*\s\S+$", line)
            and not re.match(r"^    (Section:|Table |Metric Name|INF|-)", line) and "Chart" not in line]
    assert metrics.height == len(rows) == 26
    traffic = metrics.filter(pl.col("metric") == "DRAM Bandwidth")
    assert traffic["value"].to_list() == [48.17e9, 48.17e9] and traffic["unit"].to_list() == ["Gbyte/s"] * 2


def test_a_chart_table_read_in_small_blocks_keeps_its_name(tmp_path, monkeypatch):
    """Blocks that cut a chart table from its name (the context crosses blocks)."""
    from roofreport import tuning

    text = DETAILS_ALL.format(kernels="".join(DETAILS_KERNEL.format(memory=m) for m in ("86.36", "86.40")))
    path = _write(tmp_path, "details_all.txt", text)
    whole = _parse(path).tables["metrics"]
    monkeypatch.setattr(tuning, "TEXT_BLOCK_BYTES", 512)
    assert_frame_equal(_parse(path).tables["metrics"], whole)


@pytest.mark.parametrize("most", [1.0, 0.0])
def test_metric_instances_keep_the_aggregate_as_value(most, tmp_path, monkeypatch):
    """`--print-metric-instances values` prints the aggregate, then every instance; values read
    as codes of distinct lines (`most` 1.0) or as strings (0.0) alike."""
    from roofreport.families.ncu.text_lines import Distinct

    monkeypatch.setattr(Distinct, "MOST", most)
    text = DETAILS_ALL.format(kernels="""\
  vectorAdd(const float *, const float *, float *, int) (196, 1, 1)x(256, 1, 1), Context 1, Stream 7, Device 0, CC 8.6
    Section: Command line profiler metrics
    ----------------------------- ----------- ------------------------------
    Metric Name                   Metric Unit                   Metric Value
    ----------------------------- ----------- ------------------------------
    dram__bytes_read.sum                 byte 1,204,224 (602,112; 602,112)
    lts__t_bytes.sum                    Kbyte            12.50 (6.25; 6.25)
    sm__cycles_active.avg               cycle        2,310.42 (2,101; 2,520)
    launch__grid_size                                                   196
    sm__warps_launched.sum                                   1,568 (8; 8)
    ----------------------------- ----------- ------------------------------
""")
    metrics = _parse(_write(tmp_path, "instances.txt", text)).tables["metrics"]
    assert metrics["value"].to_list() == [1204224.0, 12500.0, 2310.42, 196.0, 1568.0]
    assert metrics["value_text"].to_list() == ["1,204,224 (602,112; 602,112)", "12.50 (6.25; 6.25)",
                                               "2,310.42 (2,101; 2,520)", "196", "1,568 (8; 8)"]
