"""nvprof `--print-summary-per-gpu` (issue 36): one summary table per GPU, read as one run whose
kernel rows carry their GPU.

Where the layout comes from. No copy of this flag's output was found in the search indexes
(code, pages, issues, docs: scripts that pass the flag, no output they printed). The layout is
nvprof's own, read from its binary: Debian bookworm's non-free package `nvidia-profiler`
11.8.87~11.8.0-5~deb12u1 (`/usr/lib/nvidia-cuda-toolkit/bin/nvprof`, CUDA 11.8, stripped,
non-PIE), its format strings (`strings`: `print-summary-per-gpu`, "Print a summary of the
profiling result for each GPU.", `Profiling result:\\n`, `Device "%s"\\n`, `GPU activities`,
`API calls`, `No kernels were profiled.\\n`) and the code that prints them (`objdump -d`):

* the summary function prints `Profiling result:` once through nvprof's prefixed printer
  (`==PID== `), then, with the per-GPU option set, sorts the profiled devices by id and prints
  each device's part in turn (0x434490-0x434591);
* each part opens with a bare newline (a blank line) and `Device "%s"` through the same
  prefixed printer: `==PID== Device "Tesla K80 (0)"` (0x41a1ab-0x41a1cd). The Unified Memory
  section's `Device "%s"` goes through the plain printer instead, as the real logs show it
  (`Device "Tesla K80 (0)"` under `==PID== Unified Memory profiling result:`);
* then the usual summary table (columns Type, Time(%), Time, Calls, Avg, Min, Max, Name, the
  plain printer) of that device's GPU activities only: each row's device is compared with the
  part's (0x41a140-0x41a152), so Time(%) adds to 100 per GPU; a GPU without any prints
  `No kernels were profiled.`;
* API calls are added to the table only when no device is asked for (`cmp ebp,-1` at 0x41a392
  jumps to the API rows): a per-GPU summary has no `API calls` rows at all;
* that device's Unified Memory and NVTX results follow in its part, filtered the same way.

The fixtures (`tests/data/nvprof_per_gpu/`) are a four-K80 DataParallel alexnet run written in
that layout, text and `--csv`; the lines around the tables (banner, `Profiling application:`,
`Generated result file:`, the CSV units row) are as pramitmallick's corpus summaries of the
same kind of run print them. The expected figures below are summed by hand from the fixtures'
printed cells.
"""

from __future__ import annotations

import polars as pl
import pytest

import roofreport
from roofreport.families.common.textio import Document
from roofreport.families.nvprof.read import parse_log
from roofreport.report.assemble import assemble
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "nvprof_per_gpu"
TEXT = DATA / "out.alexnet_64_0.01_k80_pergpu.812200"
CSV = DATA / "out.alexnet_64_0.01_k80_pergpu_csv.812207"
GPUS = [f"Tesla K80 ({i})" for i in range(4)]
# Each GPU's Time cells as the text fixture prints them (ms), added by hand: all its GPU
# activities, then its kernels only (its `[CUDA memcpy ...]` rows left out).
TEXT_ALL_MS = {GPUS[0]: 412.35 + 198.76 + 95.433 + 88.210 + 52.181 + 41.070 + 10.440 + 0.90240 + 0.25120,
               GPUS[1]: 397.02 + 192.95 + 92.921 + 84.674 + 10.172 + 5.9819,
               GPUS[2]: 401.07 + 194.92 + 93.869 + 85.538 + 10.276 + 6.0430,
               GPUS[3]: 409.17 + 198.85 + 95.765 + 87.266 + 10.484 + 6.1650}
TEXT_KERNEL_MS = {GPUS[0]: 858.2764, GPUS[1]: 777.737, GPUS[2]: 785.673, GPUS[3]: 801.535}


def _parse(path) -> dict[str, pl.DataFrame]:
    return parse_log(Document.open(path), "summary").tables


def _by_device(kernels: pl.DataFrame, kernels_only: bool = False) -> dict[str, float]:
    if kernels_only:
        kernels = kernels.filter(~pl.col("name").str.starts_with("[CUDA memcpy"))
    sums = kernels.group_by("device").agg(pl.col("duration_ns").sum())
    return {d: t / 1e6 for d, t in sums.iter_rows()}


def test_each_gpus_part_gives_its_rows_that_gpu_and_no_row_adds_two_gpus():
    kernels = _parse(TEXT)["kernels"]
    # 9 rows under GPU 0, 6 under each other GPU: one row per (GPU, kernel), none summed
    assert kernels.height == 27
    assert kernels.group_by("device").len().sort("device").rows() == [(GPUS[0], 9), (GPUS[1], 6), (GPUS[2], 6),
                                                                      (GPUS[3], 6)]
    broadcast = kernels.filter(pl.col("name") == "ncclBroadcastKernel_copy_i8(ncclColl)").sort("device")
    assert broadcast["device"].to_list() == GPUS
    assert broadcast["duration_ns"].to_list() == pytest.approx([412.35e6, 397.02e6, 401.07e6, 409.17e6])
    # the loss and the optimizer step ran on GPU 0 only
    assert kernels.filter(pl.col("name").str.contains("ClassNLLCriterion|TensorCAddOp"))["device"].unique().to_list() \
        == [GPUS[0]]
    assert _by_device(kernels) == pytest.approx(TEXT_ALL_MS)
    assert _by_device(kernels, kernels_only=True) == pytest.approx(TEXT_KERNEL_MS)


def test_each_gpus_time_shares_add_to_one_hundred_and_no_api_rows_are_made_up():
    tables = _parse(TEXT)
    shares = tables["metrics"].filter(pl.col("metric") == "Time(%)").group_by("device").agg(pl.col("value").sum())
    assert sorted(shares["device"].to_list()) == GPUS
    assert shares["value"].to_list() == pytest.approx([100.0] * 4, abs=0.02)   # rounded to 0.01 % per row
    assert "api_calls" not in tables or not tables["api_calls"].height


def test_the_csv_form_reads_to_the_same_rows_as_the_text_form():
    text, csv = _parse(TEXT)["kernels"], _parse(CSV)["kernels"]
    assert csv.height == text.height == 27
    assert csv["device"].to_list() == text["device"].to_list()
    assert csv["name"].to_list() == text["name"].to_list()
    # the CSV prints 9 significant digits, the text 5: the same figures to the text's rounding
    assert csv["duration_ns"].to_list() == pytest.approx(text["duration_ns"].to_list(), rel=1e-4)
    # GPU 0's cells in the CSV, in ms, added by hand
    assert _by_device(csv)[GPUS[0]] == pytest.approx(
        412.350112 + 198.760320 + 95.432640 + 88.210400 + 52.180800 + 41.070000 + 10.440000 + 0.902400 + 0.251200)


@pytest.fixture(scope="module")
def per_gpu():
    return roofreport.analyze(roofreport.read(TEXT, jobs=1))


def test_the_run_has_four_gpus_and_says_gpu_zeros_extra_work_per_device(per_gpu):
    runs = per_gpu.tables["runs"]
    assert runs["devices"].to_list() == [4]
    assert per_gpu.reasons.select("gpus", "parallelism").rows() == [(4, "DataParallel single-process")]
    row = per_gpu.distributed.single_process.row(0, named=True)
    assert (row["per_device"], row["gpus"], row["would_tell"]) == (True, 4, None)
    # GPU 0's kernels against the median of GPUs 1-3's (785.673 ms), copies left out
    assert row["gpu0_time_ns"] == pytest.approx(858.2764e6)
    assert row["others_median_ns"] == pytest.approx(785.673e6)
    assert row["gpu0_excess_pct"] == pytest.approx(100 * (858.2764 / 785.673 - 1))   # 9.24 %


def test_page_one_says_gpu_zeros_share_instead_of_cannot_tell(per_gpu):
    texts = ["".join(s.text for s in p.spans) for p in assemble(per_gpu).findings]
    said = next(t for t in texts if "DataParallel" in t)
    assert "cannot tell per device" not in said
    assert "GPU 0's kernels take 9 % more time than the median other GPU's" in said


def _log(*lines: str) -> Document:
    return Document.from_text("\n".join(lines) + "\n", display="per_gpu_um.log")


HEADER = "            Type  Time(%)      Time     Calls       Avg       Min       Max  Name"
UM_HEADER = "   Count  Avg Size  Min Size  Max Size  Total Size  Total Time  Name"


def test_a_gpus_unified_memory_keeps_its_device_and_the_next_process_has_none():
    """A part with its Unified Memory section (the section's own `Device` line, plain, as nvprof
    prints it), the next GPU's part, then a second process's plain summary: the device of a part
    holds for that part only."""
    doc = _log(
        "==35302== Profiling application: ./MonteCarlo --method=threaded",
        "==35302== Profiling result:",
        "",
        '==35302== Device "Tesla V100-SXM2-16GB (0)"',
        HEADER,
        " GPU activities:  100.00%  1.04941s         1  1.04941s  1.04941s  1.04941s  MonteCarloOneBlockPerOption(curandStateXORWOW*, __TOptionData const *, __TOptionValue*, int, int)",
        "",
        "==35302== Unified Memory profiling result:",
        'Device "Tesla V100-SXM2-16GB (0)"',
        UM_HEADER,
        "       1  1.6016MB  1.6016MB  1.6016MB  1.601563MB  175.6180us  Host To Device",
        "",
        '==35302== Device "Tesla V100-SXM2-16GB (1)"',
        HEADER,
        " GPU activities:  100.00%  1.03478s         1  1.03478s  1.03478s  1.03478s  MonteCarloOneBlockPerOption(curandStateXORWOW*, __TOptionData const *, __TOptionValue*, int, int)",
        "==37768== Profiling application: ./MonteCarlo --method=streamed",
        "==37768== Profiling result:",
        HEADER,
        " GPU activities:  100.00%  2.08419s         2  1.04209s  1.03478s  1.04941s  MonteCarloOneBlockPerOption(curandStateXORWOW*, __TOptionData const *, __TOptionValue*, int, int)",
    )
    tables = parse_log(doc, "summary").tables
    kernels = tables["kernels"].sort("source_line")
    assert kernels.select("device", "duration_ns").rows() == [
        ("Tesla V100-SXM2-16GB (0)", pytest.approx(1.04941e9)), ("Tesla V100-SXM2-16GB (1)", pytest.approx(1.03478e9)),
        (None, pytest.approx(2.08419e9))]
    um = tables["metrics"].filter(pl.col("section") == "Unified Memory")
    assert um["device"].unique().to_list() == ["Tesla V100-SXM2-16GB (0)"]


def test_a_per_gpu_summary_scales_at_its_busiest_gpus_time_where_a_summed_one_cannot():
    from roofreport.analysis import distributed

    runs = pl.DataFrame({"run": ["one", "dp"], "model": ["alexnet"] * 2, "gpu_label": ["K80"] * 2,
                         "batch_size": [64, 64], "rank": [None, None], "ranks": [None, None],
                         "distributed_job": [None, None], "iterations": [100, 100],
                         # the 4-GPU run's kernel time per iteration adds its GPUs together
                         "time_per_iteration_ns": [20e6, 32.23e6]},
                        schema_overrides={"rank": pl.Int64, "ranks": pl.Int64, "distributed_job": pl.String})
    reasons = pl.DataFrame({"run": ["one", "dp"], "gpus": [1, 4]})
    summed = distributed.scaling(runs, reasons, pl.DataFrame()).row(0, named=True)
    assert summed["efficiency_pct"] is None and "cannot tell per device" in summed["note"]
    # the fixture's GPU 0 is its busiest: 858.2764 ms over 100 iterations
    single = pl.DataFrame({"run": ["dp"], "per_device": [True], "busiest_ns": [858.2764e6]})
    row = distributed.scaling(runs, reasons, pl.DataFrame(), single).row(0, named=True)
    assert (row["scaling"], row["gpus_a"], row["gpus_b"], row["note"]) == ("strong", 1, 4, None)
    assert row["step_ns_b"] == pytest.approx(8.582764e6)
    assert row["speedup"] == pytest.approx(20 / 8.582764)
    assert row["efficiency_pct"] == pytest.approx(100 * 20 / 8.582764 / 4)   # 58 %


def test_the_fixtures_busiest_gpu_is_gpu_zero(per_gpu):
    row = per_gpu.distributed.single_process.row(0, named=True)
    assert row["busiest_ns"] == pytest.approx(TEXT_KERNEL_MS[GPUS[0]] * 1e6)


@pytest.mark.parametrize("path, variant", [(TEXT, "summary (per GPU)"), (CSV, "summary csv (per GPU)")])
def test_the_files_table_says_the_summary_is_per_gpu(path, variant):
    files = roofreport.read(path, jobs=1).tables["files"]
    assert files.select("family", "variant").rows() == [("nvprof", variant)]


def test_a_gpu_without_kernels_says_so_of_that_gpu_only():
    """nvprof prints `No kernels were profiled.` in the part of a GPU that ran none (the plain
    printer, as everywhere): the warning names that GPU; the other GPU's rows are read."""
    doc = _log(
        "==35302== Profiling application: ./app",
        "==35302== Profiling result:",
        "",
        '==35302== Device "Tesla K80 (0)"',
        HEADER,
        " GPU activities:  100.00%  1.04941s         1  1.04941s  1.04941s  1.04941s  kern(int)",
        "",
        '==35302== Device "Tesla K80 (1)"',
        "No kernels were profiled.",
    )
    result = parse_log(doc, "summary (per GPU)")
    assert result.tables["kernels"].select("device", "name").rows() == [("Tesla K80 (0)", "kern(int)")]
    said = [(w.code, w.message, w.line) for w in result.warnings if w.code == "nvprof.no-data"]
    assert said == [("nvprof.no-data", "nvprof: No kernels were profiled. (on Tesla K80 (1))", 9)]


def test_a_log_cut_at_a_line_end_inside_a_gpus_part_says_that_gpus_table_is_cut(tmp_path):
    """A per-GPU log cut off at a line's end shows no unreadable row; its last GPU's Time(%)
    cells add to less than 100 (nvprof's rows of one GPU add to 100: the fixture's, and the
    corpus's summaries, to 99.5 or more). That GPU's table is said to be cut (the run is cut
    short: pipeline/cutshort.py), the complete parts are not, and the whole log says nothing."""
    lines = TEXT.read_text().splitlines(keepends=True)
    cut_at = next(i for i, line in enumerate(lines) if "92.921ms" in line)   # GPU 1's third row
    cut = tmp_path / TEXT.name
    cut.write_text("".join(lines[:cut_at + 1]))
    result = parse_log(Document.open(cut), "summary (per GPU)")
    said = [(w.code, w.message, w.line) for w in result.warnings if w.code == "nvprof.truncated"]
    # GPU 1's rows printed: 50.66 + 24.62 + 11.86 (its table's Time(%) cells)
    assert said == [("nvprof.truncated", "the GPU activities of Tesla K80 (1) add to 87.1 % of their time, not 100 %: "
                     "the log ends before the rest of that table (was the run cut off?)", cut_at + 1)]
    assert not [w for w in parse_log(Document.open(TEXT), "summary (per GPU)").warnings
                if w.code == "nvprof.truncated"]
    runs = roofreport.read(tmp_path, jobs=1).tables["runs"]
    assert runs["cut_short"].to_list() == [True] and "Tesla K80 (1)" in runs["cut_short_reason"][0]


def test_the_sample_sweep_says_gpu_zeros_excess_where_told_and_which_log_would_tell_elsewhere():
    from tests.conftest import SAMPLE_LOGS

    an = roofreport.analyze(roofreport.read(SAMPLE_LOGS / "k80_sweep", jobs=1))
    single = an.distributed.single_process.sort("run")
    told = single.filter(pl.col("per_device"))
    assert told["run"].to_list() == ["k80_sweep/out.alexnet_64_0.01_k80_pergpu.812184"] and told["gpus"].to_list() == [4]
    # GPU 0's figure is its own kernel rows' time (copies apart), as the kernels table holds them
    kernels = an.tables["kernels"].filter(pl.col("run") == told["run"][0])
    gpu0 = kernels.filter((pl.col("device") == "Tesla K80 (0)") & ~pl.col("name").str.starts_with("[CUDA "))
    assert told["gpu0_time_ns"][0] == pytest.approx(gpu0["duration_ns"].sum())
    untold = single.height - 1
    said = next("".join(s.text for s in p.spans) for p in assemble(an).findings if "DataParallel" in
                "".join(s.text for s in p.spans))
    excess = f"{told['gpu0_excess_pct'][0]:.0f} %"
    assert f"GPU 0's kernels take {excess} more time than the median other GPU's in the run whose log gives" in said
    assert (f"The other {untold} runs' summaries add the GPUs together, so they cannot tell per device; nvprof "
            "--print-summary-per-gpu, or a trace with a device per kernel (nvprof --print-gpu-trace --csv, nsys "
            "profile) would.") in said
