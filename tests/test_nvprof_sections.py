"""Every summary section nvprof prints lands in its table, or is skipped with a reason; metric
and event cells that hold no value are null with a warning (issue 16, item 5).

Section rows are counted here by a walk of their own over the real logs (GPU activities,
API calls, NVTX ranges, Unified Memory in the corpus). The corpus holds no OpenACC, OpenMP,
CPU-sampling or NVLink section and no `<OVERFLOW>`/`n/a` cell: those are hand-written after
the layouts nvprof prints (`OpenACC (excl):` in the Type column of CUDA >= 9, as a titled
section in CUDA <= 8; `CPU profiling result (bottom up):` with its `Time(%)  Time  Name`
table), and real logs get placeholder cells written into their own columns.
"""

from __future__ import annotations

import csv
import io
import re

import polars as pl
import pytest

from roofreport.families.common.textio import Document
from roofreport.families.nvprof import read as nvprof_read
from tests.conftest import corpus_path, parse_path

SUMMARY_FILES = [("nvprof", "summary", "llmc_gpt2_t4_bf16_training_summary.txt"),
                 ("nvprof", "summary", "nyu_hpml_hw5_vecadd_multi_runs_concat.out"),
                 ("nvprof", "summary", "cs533_mpi_vecadd_v100_summary_allprocs.txt"),
                 ("nvprof", "summary", "cs566_reduction_summary_2024.out"),
                 ("nvprof", "summary", "thrust2d_convolve_old_notype_cuda8.profile.time"),
                 ("derived", "nvprof", "darknet_jetson_xavier_nvprof_sqlite_out.summary.txt")]
CSV_SUMMARIES = [("nvprof", "csv", "hpml_alexnet_k80x4_nccl_winograd_summary.csv.log"),
                 ("nvprof", "csv", "hpml_vgg16_k80x4_nccl_summary.csv.log"),
                 ("nvprof", "csv", "hpml_alexnet_p40x4_full_with_training_log.csv.log"),
                 ("nvprof", "csv", "hpml_resnet18_k80_apionly_nokernels.csv.log"),
                 ("derived", "nvprof", "darknet_jetson_xavier_nvprof_sqlite_out.summary.csv")]

_ROW = re.compile(r"^\s*(?:(?P<type>[A-Z][A-Za-z ]*(?: \([a-z]+\))?):)?\s+\d+(?:\.\d+)?%\s{2,}\d")
_BANNER = re.compile(r"^(?:==\d+==|========)\s*(?P<title>[A-Z][^:]*):\s*$")
_UM_ROW = re.compile(r"^\s*\d+\s{2,}\S")


def _count_sections(text: str) -> dict[str, int]:
    """Rows per destination, walking the log: summary rows by their Type (carried down a
    table; without a Type column, `API calls:` sections are API calls), in or out of the NVTX
    result; Unified Memory rows."""
    counts = {"kernels": 0, "api_calls": 0, "regions": 0, "in_ranges": 0, "um": 0}
    section, table, kind = None, None, None
    for line in text.split("\n"):
        banner = _BANNER.match(line)
        if banner:
            section, table = banner["title"], None
            continue
        if "Time(%)" in line and line.rstrip().endswith("Name"):
            table, kind = "summary", ("API calls" if section == "API calls" else "GPU activities")
            continue
        if line.lstrip().startswith("Count  Avg Size"):
            table = "um"
            continue
        if not line.strip() or line.startswith("=="):
            table = None
            continue
        if table == "um" and _UM_ROW.match(line):
            counts["um"] += 1
        row = _ROW.match(line) if table == "summary" else None
        if row:
            kind = row["type"] or kind
            if section == "NVTX result":
                counts["regions" if kind == "Range" else "in_ranges"] += 1
            else:
                counts["kernels" if kind == "GPU activities" else "api_calls"] += 1
    return counts


def _height(result, table: str, where: pl.Expr | None = None) -> int:
    frame = result.tables.get(table)
    if frame is None:
        return 0
    return frame.height if where is None else frame.filter(where).height


@pytest.mark.parametrize("parts", SUMMARY_FILES)
def test_every_text_summary_section_lands_in_its_table(parts):
    path = corpus_path(*parts)
    counts = _count_sections(path.read_text(encoding="utf-8"))
    assert sum(counts.values()) > 0
    result = parse_path(path, "nvprof")
    assert _height(result, "kernels") == counts["kernels"]
    assert _height(result, "api_calls") == counts["api_calls"]
    assert _height(result, "regions") == counts["regions"]
    # What ran inside the ranges: six cells each (Time(%), Calls, Time total/avg/min/max).
    assert _height(result, "metrics", pl.col("section").str.starts_with("NVTX ")) == 6 * counts["in_ranges"]
    um = pl.col("section") == "Unified Memory"
    assert _height(result, "metrics", um & ~pl.col("metric").str.starts_with("Total ")) == 6 * counts["um"]
    assert not [w for w in result.warnings if w.code in ("nvprof.unreadable-row", "nvprof.section-skipped")]


@pytest.mark.parametrize("parts", CSV_SUMMARIES)
def test_every_csv_summary_row_lands_in_its_table(parts):
    path = corpus_path(*parts)
    lines = path.read_text(encoding="utf-8").split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith('"Type","Time(%)"'))
    records = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    types = [r[0] for r in records[1:] if len(r) == len(records[0])]
    result = parse_path(path, "nvprof")
    assert _height(result, "kernels") == types.count("GPU activities")
    assert _height(result, "api_calls") == types.count("API calls")
    assert types.count("GPU activities") + types.count("API calls") == len(types) - 1  # (the units row)


def test_unified_memory_rows_keep_their_device_and_placeholders():
    result = parse_path(corpus_path("nvprof", "summary", "nyu_hpml_hw5_vecadd_multi_runs_concat.out"), "nvprof")
    um = result.tables["metrics"].filter(pl.col("section") == "Unified Memory")
    assert set(um["device"]) == {"Quadro RTX 8000 (0)"}
    faults = um.filter((pl.col("kernel_name") == "Gpu page fault groups") & (pl.col("metric") == "Size"))
    assert set(faults["value_text"]) == {"-"} and faults["value"].null_count() == faults.height
    totals = um.filter(pl.col("metric") == "Total CPU Page faults")
    assert totals.height == 15 and totals["value"].to_list()[0] == 24.0 and totals["value"].min() > 0


# -- sections the corpus lacks ------------------------------------------------------------------

def _parse_text(text: str, name: str = "log.txt"):
    return nvprof_read.parse_log(Document.from_text(text, name), "summary")


OPENACC = """\
==30112== NVPROF is profiling process 30112, command: ./jacobi 4096
Jacobi relaxation Calculation: 4096 x 4096 mesh
 total: 1.201883 s
==30112== Profiling application: ./jacobi 4096
==30112== Profiling result:
            Type  Time(%)      Time     Calls       Avg       Min       Max  Name
 GPU activities:   60.49%  412.77ms      1000  412.77us  409.31us  417.12us  main_63_gpu
                   37.12%  253.29ms      1000  253.29us  251.07us  256.03us  main_74_gpu
                    2.39%  16.310ms      1000  16.310us  15.967us  17.087us  main_63_gpu__red
      API calls:   71.90%  689.44ms      3002  229.66us  1.0830us  421.72us  cuStreamSynchronize
                   24.13%  231.39ms         1  231.39ms  231.39ms  231.39ms  cuDevicePrimaryCtxRetain
                    3.97%  38.046ms      3000  12.682us  5.9920us  396.03us  cuLaunchKernel
 OpenACC (excl):   61.01%  423.57ms      1000  423.57us  418.92us  431.93us  acc_wait@jacobi.c:63
                   37.55%  260.73ms      1000  260.73us  257.42us  270.02us  acc_wait@jacobi.c:74
                    0.72%  5.0023ms      1000  5.0020us  4.3110us  24.090us  acc_enqueue_launch@jacobi.c:63 (main_63_gpu)
"""


def test_openacc_rows_are_metrics_not_api_calls():
    result = _parse_text(OPENACC)
    assert result.error is None and result.warnings == []
    assert result.tables["kernels"]["name"].to_list() == ["main_63_gpu", "main_74_gpu", "main_63_gpu__red"]
    assert result.tables["api_calls"]["name"].to_list() == ["cuStreamSynchronize", "cuDevicePrimaryCtxRetain",
                                                          "cuLaunchKernel"]
    acc = result.tables["metrics"].filter(pl.col("section") == "OpenACC (excl)")
    assert acc["kernel_name"].unique(maintain_order=True).to_list() == [
        "acc_wait@jacobi.c:63", "acc_wait@jacobi.c:74", "acc_enqueue_launch@jacobi.c:63 (main_63_gpu)"]
    total = acc.filter((pl.col("metric") == "Time") & (pl.col("stat") == "total"))
    assert total["value"].to_list() == [423.57e6, 260.73e6, 5.0023e6]
    assert acc.filter(pl.col("metric") == "Calls")["value"].to_list() == [1000.0] * 3


def test_openmp_rows_are_metrics_and_not_kernels():
    text = """\
==20854== NVPROF is profiling process 20854, command: ./openmp
==20854== Profiling application: ./openmp
==20854== Profiling result:
No kernels were profiled.
            Type  Time(%)      Time     Calls       Avg       Min       Max  Name
  OpenMP (incl):   99.97%  277.10ms        20  13.855ms  13.131ms  18.151ms  omp_parallel
                    0.03%  72.728us        19  3.8270us  2.9840us  9.5610us  omp_idle
                    0.00%  7.9170us         7  1.1310us  1.0360us  1.2750us  omp_wait_barrier
"""
    result = _parse_text(text)
    assert "kernels" not in result.tables and "api_calls" not in result.tables
    omp = result.tables["metrics"]
    assert set(omp["section"]) == {"OpenMP (incl)"} and omp.height == 18
    assert omp["kernel_name"].unique(maintain_order=True).to_list() == ["omp_parallel", "omp_idle", "omp_wait_barrier"]
    assert [w.code for w in result.warnings] == ["nvprof.no-data"]


PGPROF_SECTIONS = """\
======== Profiling result:
Time(%)      Time     Calls       Avg       Min       Max  Name
 38.14%  1.41393s        20  70.696ms  70.666ms  70.731ms  calc2_198_gpu
 31.11%  1.15312s        18  64.062ms  64.039ms  64.083ms  calc3_273_gpu
  5.17%  191.78ms       141  1.3602ms  1.3120us  1.6409ms  [CUDA memcpy HtoD]

======== API calls:
Time(%)      Time     Calls       Avg       Min       Max  Name
 92.65%  3.49314s        62  56.341ms  1.8850us  70.771ms  cuStreamSynchronize
  3.78%  142.36ms         1  142.36ms  142.36ms  142.36ms  cuDevicePrimaryCtxRetain

======== OpenACC (excl):
Time(%)      Time     Calls       Avg       Min       Max  Name
 36.27%  1.41470s        20  70.735ms  70.704ms  70.773ms  acc_wait@swim-acc-data.f:223
 63.73%  1.15449s        18  64.138ms  64.114ms  64.159ms  acc_wait@swim-acc-data.f:302

======== CPU profiling result (bottom up):
Time(%)      Time  Name
 59.09%  8.55785s  cudbgGetAPIVersion
 59.09%  8.55785s   start_thread
 25.75%  3.73007s  cuStreamSynchronize
 10.38%  1.50269s       swim_mod_calc2_

======== Data collected at 100Hz frequency
"""


def test_cuda8_sections_openacc_read_and_cpu_samples_skipped_with_a_reason():
    result = _parse_text(PGPROF_SECTIONS)
    assert result.tables["kernels"].height == 3 and result.tables["api_calls"].height == 2
    acc = result.tables["metrics"].filter(pl.col("section") == "OpenACC (excl)")
    assert acc["kernel_name"].unique(maintain_order=True).to_list() == [
        "acc_wait@swim-acc-data.f:223", "acc_wait@swim-acc-data.f:302"]
    skipped = [w for w in result.warnings if w.code == "nvprof.section-skipped"]
    assert [(w.line, w.message.split(" not read")[0]) for w in skipped] == [
        (17, "nvprof section `CPU profiling result (bottom up)` (line 17)")]
    assert "host CPU samples" in skipped[0].message
    metrics = result.tables["metrics"]
    assert not metrics.filter(pl.col("kernel_name").is_in(["start_thread", "cudbgGetAPIVersion"])).height


def test_a_log_of_cpu_samples_only_says_which_section_it_skipped():
    text = """\
==22639== NVPROF is profiling process 22639, command: ./cg
Rows: 8120601, nnz: 218535025
Total Iterations: 100
==22639== Profiling application: ./cg

======== CPU profiling result (top down):
Time(%)      Time  Name
 79.56%  26.7635s  main
 74.58%  25.0876s  | matvec(matrix const &, vector const &, vector const &)

======== Data collected at 100Hz frequency
"""
    result = _parse_text(text, "cg.log")
    assert result.rows() == {}   # program output (`Total Iterations: 100`) is no Unified Memory total
    assert result.error.line == 6
    assert result.error.message.startswith("nvprof printed only sections roofreport does not read: "
                                           "`CPU profiling result (top down)` (line 6)")


def test_an_nvlink_section_is_skipped_with_a_reason():
    text = OPENACC + """
==30112== NVLink Topology:
Device 0 (Tesla V100-SXM2-16GB)  Link 0  Device 1  NVLink 2.0
"""
    result = _parse_text(text)
    skipped = [w for w in result.warnings if w.code == "nvprof.section-skipped"]
    assert [w.line for w in skipped] == [17] and "`NVLink Topology`" in skipped[0].message
    assert result.tables["kernels"].height == 3


# -- cells that hold no value -----------------------------------------------------------------

def _set_cell(line: str, old: str, new: str, from_right: int) -> str:
    """`line` with its `from_right`-th cell from the right (`old`) replaced, right-aligned in
    the same width, as nvprof prints a column."""
    spans = [m.span() for m in re.finditer(r"\S+(?: \S+)*", line)]
    start, end = spans[-from_right]
    assert line[start:end] == old
    return line[:end - len(old)] + new.rjust(len(old)) + line[end:]


def test_placeholders_in_a_real_text_metrics_log(tmp_path):
    path = corpus_path("nvprof", "metrics", "darknet19_v100_metrics_all_text.txt")
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if line.strip().endswith("422.000000  422.000000  422.000000"))
    lines[at] = _set_cell(_set_cell(lines[at], "422.000000", "<OVERFLOW>", 3), "422.000000", "n/a", 1)
    lines[at + 1] = _set_cell(lines[at + 1], "100.00%", "", 2)       # an empty Max cell
    damaged = tmp_path / "darknet19_metrics.txt"
    damaged.write_text("\n".join(lines), encoding="utf-8")
    whole, result = parse_path(path, "nvprof"), parse_path(damaged, "nvprof")
    assert result.error is None
    for table in ("kernels", "metrics"):
        assert result.tables[table].height == whole.tables[table].height
    metrics = result.tables["metrics"]
    changed = metrics.filter(pl.col("source_line").is_in([at + 1, at + 2]))
    assert changed.select("metric", "stat", "value_text").rows() == [
        ("inst_per_warp", "min", "<OVERFLOW>"), ("inst_per_warp", "max", "422.000000"),
        ("inst_per_warp", "avg", "n/a"), ("branch_efficiency", "min", "100.00%"),
        ("branch_efficiency", "max", ""), ("branch_efficiency", "avg", "100.00%")]
    assert changed["value"].to_list() == [None, 422.0, None, 100.0, None, 100.0]
    unchanged = pl.col("source_line").is_in([at + 1, at + 2]).not_()
    assert metrics.filter(unchanged).equals(whole.tables["metrics"].filter(unchanged))
    warned = [(w.code, w.line, w.message.split(": ", 1)[0]) for w in result.warnings if w.code == "nvprof.no-value"]
    header = lines[next(i for i in range(at, 0, -1) if lines[i].startswith("Invocations"))]
    ends = {m.group(): m.end() for m in re.finditer(r"\S+(?: \S+)*", header)}
    name = str(damaged)
    assert warned == [("nvprof.no-value", at + 1, f"{name}:{at + 1}:{ends['Min'] - 9}"),
                      ("nvprof.no-value", at + 1, f"{name}:{at + 1}:{ends['Avg'] - 2}"),
                      ("nvprof.no-value", at + 2, f"{name}:{at + 2}:{ends['Max']}")]


def test_placeholders_in_a_real_csv_metrics_log(tmp_path):
    path = corpus_path("nvprof", "metrics", "hpml_alexnet_p40x4_flopdp_metrics.csv.log")
    lines = path.read_text(encoding="utf-8").split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith('"Device","Kernel"'))
    first, second = start + 1, start + 2
    lines[first] = lines[first].rsplit(",", 3)[0] + ',"<OVERFLOW>",n/a,'    # Min, Max, empty Avg
    lines[second] = lines[second].rsplit(",", 1)[0] + ",-"
    damaged = tmp_path / "flopdp.csv.log"
    damaged.write_text("\n".join(lines), encoding="utf-8")
    whole, result = parse_path(path, "nvprof"), parse_path(damaged, "nvprof")
    assert result.error is None
    assert result.tables["metrics"].height == whole.tables["metrics"].height
    changed = result.tables["metrics"].filter(pl.col("source_line").is_in([first + 1, second + 1]))
    assert changed["value_text"].to_list()[:3] == ["<OVERFLOW>", "n/a", ""]
    assert changed["value"].to_list()[:3] == [None, None, None] and changed["value"][5] is None
    warned = [(w.line, w.message) for w in result.warnings if w.code == "nvprof.no-value"]
    assert [line for line, _ in warned] == [first + 1] * 3 + [second + 1]
    row = lines[first]
    column = row.index('"<OVERFLOW>"') + 1
    assert warned[0][1] == f"{damaged}:{first + 1}:{column}: flop_count_dp min: <OVERFLOW> read as no value"
    assert warned[2][1].endswith(f":{len(row) + 1}: flop_count_dp avg: an empty cell read as no value")


def test_many_placeholders_are_counted_not_listed():
    rows = "\n".join(f"        301     metric_{i:03d}     A metric     n/a     n/a     n/a" for i in range(30))
    text = f"""\
==4126== NVPROF is profiling process 4126, command: ./app
==4126== Profiling application: ./app
==4126== Profiling result:
==4126== Metric result:
Invocations     Metric Name     Metric Description     Min     Max     Avg
Device "Tesla K80 (0)"
    Kernel: kernel(int)
{rows}
"""
    result = _parse_text(text)
    assert result.tables["metrics"].height == 90 and result.tables["metrics"]["value"].null_count() == 90
    codes = [w for w in result.warnings if w.code == "nvprof.no-value"]
    assert len(codes) == 21 and codes[-1].message.startswith("70 more metric/event cells hold no value")
