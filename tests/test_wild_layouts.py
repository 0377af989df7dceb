"""The NVIDIA-side layouts of issue #24 that failed on real users' files, each from a hand-made
file in `tests/data/wild/` (written for this project from the tools' documented layouts, not
copied from anyone's log) in three variants: a second tool version, the file cut short, and
the file with CRLF line ends. Row counts are counted by hand in the files.

* ncu text pasted without its `==PROF==` and process lines (2025 table layout; 2022 wide);
* nvprof `--print-gpu-trace --csv` with Unified Memory columns and rows (CUDA 10; CUDA 9);
* nvprof `--print-gpu-trace --metrics --csv`: one row per launch, one column per counter, with
  `<OVERFLOW>`, `<NaN>` and `n/a` placeholders (CUDA 10; CUDA 8);
* nsys stats at the end of a long batch job log (2024.5 `nsys stats`; 2022.1 `--stats=true`);
* a `key_averages` printout of several tables (torch 2.x views of one profile; torch 1.7).

Last, `roofreport inspect` over a folder of all of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from roofreport.cli import cli
from roofreport.pipeline.ingest import Skipped, parse_file
from roofreport.pipeline.sniff import sniff

DATA = Path(__file__).resolve().parent / "data" / "wild"

# file -> (family, rows per table), counted by hand in the file.
HAND_COUNTS = {
    "ncu_pasted_h100_2025.txt": ("ncu", {"kernels": 3, "metrics": 150}),           # 3 x (10+17+13+10)
    "ncu_pasted_a100_2022.txt": ("ncu", {"kernels": 2, "metrics": 56}),            # 2 x (10+10+8)
    "nvprof_um_gpu_trace_v100_cuda10.csv": ("nvprof", {"activities": 15, "kernels": 2}),
    "nvprof_um_gpu_trace_gtx1080_cuda9.csv": ("nvprof", {"activities": 11, "kernels": 1}),
    "nvprof_kernel_metrics_p100_cuda10.csv": ("nvprof", {"kernels": 7, "metrics": 49}),   # 7 x 7
    "nvprof_kernel_metrics_k80_cuda8.csv": ("nvprof", {"kernels": 5, "metrics": 25}),     # 5 x 5
    # 5 API rows; 4 kernels + 2 memory operations (nsys lists them as kernels of kind summary)
    "nbody_7421.out": ("nsys", {"api_calls": 5, "kernels": 6}),
    # 3 OS runtime + 3 CUDA API rows; 3 kernels + 2 copies; 2 size rows x 7 cells
    "cupy_2022.out": ("nsys", {"api_calls": 6, "kernels": 5, "metrics": 14}),
    # 5 views (8, 8, 6, 10, 3 rows x 15 or 16 cells, each with 2 totals); 2 kernel and 12
    # operator names among them
    # every row of every view (issue #34): 8 + 8 + 6 + 10 + 3 rows, 2 of them kernels
    "key_averages_a100_torch2.4.txt": ("pytorch", {"kernels": 2, "metrics": 545, "regions": 33}),
    # 3 views (6, 6, 10 rows x 9 or 10 cells, 2 totals each); 10 operators
    "key_averages_lstm_torch1.7.txt": ("pytorch", {"metrics": 214, "regions": 22}),   # 6 + 6 + 10
}
# The job logs: nsys's output (hand-made) after a batch job's own output (made here).
JOB_LOGS = {"nbody_7421.out": "nsys_stats_julia_a100_2024.5.txt",
            "cupy_2022.out": "nsys_stats_cupy_v100_2022.1.txt"}


def job_output(size: int) -> str:
    """A batch job's output before its profiler's: module loads, Julia's precompilation, then
    training steps each with a progress bar redrawn with carriage returns (one physical line)."""
    lines = ["Lmod is automatically replacing \"nvhpc/23.9\" with \"cuda/12.4.1\".",
             "Loading julia/1.10.4", "  Loading requirement: gcc/12.2.0 openmpi/4.1.5 cuda/12.4.1",
             "Precompiling project..."]
    packages = ["CUDA_Driver_jll", "CUDA_Runtime_jll", "GPUCompiler", "LLVM", "KernelAbstractions", "CUDA"]
    count = 0
    while sum(len(line) + 1 for line in lines) < size // 2:
        lines.append(f"  \u2713 {packages[count % len(packages)]}")
        count += 1
    lines.append(f"  {count} dependencies successfully precompiled in 245 seconds. 12 already precompiled.")
    step = 0
    while sum(len(line) + 1 for line in lines) < size:
        bar = "\r".join(f"Progress: {pct:3d}%|{'#' * (pct // 4):<25}|  ETA: 0:01:{pct % 60:02d}"
                        for pct in range(step % 90, step % 90 + 8))
        lines += [f"[ Info: step {step}/5000, energy = -0.{49917 + step}", bar]
        step += 1
    return "\n".join(lines) + "\n"


def layout_file(folder: Path, name: str) -> Path:
    """`name` of `HAND_COUNTS` written into `folder` (a job log made whole here)."""
    path = folder / name
    if name in JOB_LOGS:
        size = 170_000 if name == "nbody_7421.out" else 300_000
        path.write_bytes((job_output(size) + (DATA / JOB_LOGS[name]).read_text()).encode())
    else:
        path.write_bytes((DATA / name).read_bytes())
    return path


def read(path: Path):
    sniffed = sniff(path)
    assert sniffed.readable, (path.name, sniffed.skip_reason)
    return sniffed, parse_file(path, sniffed.spec.name, sniffed.variant, path.name,
                               Skipped(sniffed.start, sniffed.skipped_lines))


def rows(result) -> dict[str, int]:
    return result.rows()


# -- each layout, each variant ---------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(HAND_COUNTS))
def test_each_layout_reads_as_counted_by_hand(tmp_path, name):
    family, counts = HAND_COUNTS[name]
    sniffed, result = read(layout_file(tmp_path, name))
    assert sniffed.family == family
    assert result.error is None, result.error
    assert rows(result) == counts


@pytest.mark.parametrize("name", sorted(HAND_COUNTS))
def test_crlf_line_ends_read_the_same_rows(tmp_path, name):
    plain = layout_file(tmp_path, name)
    crlf = tmp_path / f"crlf_{name}"
    crlf.write_bytes(plain.read_bytes().replace(b"\n", b"\r\n"))
    _, first = read(plain)
    _, second = read(crlf)
    assert second.error is None and rows(second) == HAND_COUNTS[name][1]
    for table, frame in first.tables.items():
        # The same rows, on the same lines (a CRLF is one line break, as the lone CRs of the
        # progress bars are).
        assert second.tables[table].drop("source_file", strict=False).equals(
            frame.drop("source_file", strict=False)), table


@pytest.mark.parametrize("name", sorted(HAND_COUNTS))
def test_a_cut_file_keeps_the_rows_before_the_cut(tmp_path, name):
    """Cut two thirds into the profiler's output (inside a row, mostly): the rows before the
    cut are kept, nothing raises, and the file is no error."""
    whole = layout_file(tmp_path, name)
    data = whole.read_bytes()
    start = len(data) - (DATA / JOB_LOGS.get(name, name)).stat().st_size
    cut_at = start + (len(data) - start) * 2 // 3 + 3
    cut = tmp_path / f"cut_{name}"
    cut.write_bytes(data[:cut_at])
    _, full = read(whole)
    sniffed, result = read(cut)
    assert sniffed.family == HAND_COUNTS[name][0]
    # ok, or partial: an error at the cut line (an nsys console row cut before its name)
    assert result.error is None or result.error.line is not None, result.error
    cut_line = data[:cut_at].count(b"\n") + 1          # the line the cut falls in
    for table, frame in full.tables.items():
        before = frame.filter(pl.col("source_line") < cut_line)["source_line"].to_list()
        got = result.tables.get(table, frame.clear())["source_line"].to_list()
        assert [line for line in before if line not in got] == [], table
        assert len(got) <= frame.height


# -- what each layout gives ------------------------------------------------------------------

def test_pasted_ncu_results_are_launches_with_their_sections(tmp_path):
    _, result = read(layout_file(tmp_path, "ncu_pasted_h100_2025.txt"))
    kernels = result.tables["kernels"]
    assert kernels["grid"].to_list() == ["(150, 85, 1)", "(6144, 1, 1)", "(132, 1, 1)"]
    assert kernels["block"][0] == "(8, 8, 1)"
    sections = set(result.tables["metrics"]["section"].unique().to_list())
    assert sections == {"GPU Speed Of Light Throughput", "Launch Statistics", "Occupancy",
                        "GPU and Memory Workload Distribution"}
    assert result.hints.device_name is None or "H100" not in (result.hints.device_name or "")


def test_pasted_ncu_results_after_the_profiling_lines_without_the_process_line(tmp_path):
    """ncu's progress lines kept, the `[pid] app@host` line lost: the results follow ncu's
    `Disconnected` line."""
    body = (DATA / "ncu_pasted_h100_2025.txt").read_text()
    path = tmp_path / "ncu.log"
    path.write_text('==PROF== Connected to process 4121 (/usr/bin/python3.11)\n'
                    '==PROF== Profiling "flash_fwd_kernel" - 0 (1/3): 0%....50%....100% - 38 passes\n'
                    "step 0 done\n==PROF== Disconnected from process 4121\n" + body)
    _, result = read(path)
    assert rows(result) == {"kernels": 3, "metrics": 150}


def test_unified_memory_rows_are_activities_of_their_kind(tmp_path):
    _, result = read(layout_file(tmp_path, "nvprof_um_gpu_trace_v100_cuda10.csv"))
    activities = result.tables["activities"]
    kinds = dict(activities.group_by("kind").len().iter_rows())
    assert kinds == {"kernel": 2, "memcpy": 6, "memset": 1, "other": 6}
    migrations = activities.filter(pl.col("name").str.starts_with("[Unified Memory Memcpy"))
    assert migrations["bytes"].to_list() == [64 * 1024, 256 * 1024, 2048 * 1024, 512 * 1024]
    faults = activities.filter(pl.col("name") == "[Unified Memory CPU page faults]")
    assert faults["duration_ns"].null_count() == faults.height == 3   # empty cells are null
    assert faults["device"].null_count() == 3
    kernels = result.tables["kernels"]
    assert kernels["grid"].to_list() == ["(4096, 1, 1)"] * 2
    assert kernels["duration_ns"].to_list() == [248_319.0, 3_136.0]


def test_per_launch_counters_with_placeholders(tmp_path):
    _, result = read(layout_file(tmp_path, "nvprof_kernel_metrics_p100_cuda10.csv"))
    metrics = result.tables["metrics"]
    cut = metrics.filter(pl.col("value_text") == "<OVERFLOW>")
    assert cut.height == 4 and cut["value"].null_count() == 4
    # the rest of a row with a placeholder is kept
    row = metrics.filter(pl.col("source_line") == 10)
    assert row.filter(pl.col("metric") == "dram_write_bytes")["value"].item() == 67108928
    assert row.filter(pl.col("metric") == "gld_efficiency")["unit"].item() == "%"
    throughput = metrics.filter((pl.col("source_line") == 8) & (pl.col("metric") == "dram_read_throughput"))
    assert throughput["unit"].item() == "byte/second"
    assert throughput["value"].item() == pytest.approx(531.492607 * 2**30)
    warned = [w for w in result.warnings if w.code == "nvprof.no-value"]
    assert len(warned) == 1 and warned[0].line == 10
    assert "4 counter cells hold <OVERFLOW>" in warned[0].message
    assert ":10:101 (dram_read_bytes)" in warned[0].message   # the first one's line and column
    # one launch per row, with the run's counters
    kernels = result.tables["kernels"]
    assert kernels["kind"].unique().to_list() == ["launch"]
    assert kernels["launch_id"].to_list() == metrics["launch_id"].unique(maintain_order=True).to_list()


def test_placeholders_of_an_older_nvprof_each_counted(tmp_path):
    _, result = read(layout_file(tmp_path, "nvprof_kernel_metrics_k80_cuda8.csv"))
    messages = {w.message.split(" (no value)")[0] for w in result.warnings if w.code == "nvprof.no-value"}
    assert messages == {"4 counter cells hold n/a", "1 counter cell holds <NaN>"}


def test_a_job_log_is_read_from_its_profiler_output(tmp_path):
    path = layout_file(tmp_path, "nbody_7421.out")
    sniffed, result = read(path)
    text = path.read_bytes()

    def line_of(offset: int) -> int:   # as roofreport numbers lines: a lone CR ends one too
        return text.count(b"\n", 0, offset) + text.count(b"\r", 0, offset) + 1

    first = line_of(text.index(b"Generating '/"))   # nsys's first line
    assert sniffed.start == text.index(b"Generating '/") and sniffed.skipped_lines == first - 1
    skipped = [w for w in result.warnings if w.code == "input.leading-text"]
    assert len(skipped) == 1 and f"lines 1-{first - 1} " in skipped[0].message
    # no warning about the job's own lines; line numbers are the file's
    assert all(w.line is None or w.line >= first for w in result.warnings if w.code != "input.leading-text")
    kernels = result.tables["kernels"]
    kernel_line = line_of(text.index(b"     88.6"))
    assert kernels["source_line"].min() == kernel_line
    cut = [w for w in result.warnings if w.code == "nsys.truncated-name"]
    assert f"(line {kernel_line - 2})" in cut[0].message   # the line a message names is the file's


def test_a_job_log_sniff_reads_no_file_whole(tmp_path, monkeypatch):
    """The scan reads the file a chunk at a time, up to its cap; a binary file is not scanned."""
    from roofreport.families.common import textio

    path = layout_file(tmp_path, "nbody_7421.out")
    monkeypatch.setattr(textio, "_SCAN_CHUNK", 4096)
    assert sniff(path).family == "nsys"
    monkeypatch.setattr(textio, "SCAN_BYTES", 100_000)   # the profiler output lies past the cap
    monkeypatch.setattr(textio, "SCAN_TAIL_BYTES", 500)  # and before the tail that is scanned
    assert sniff(path).family is None
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 400 + (DATA / JOB_LOGS["nbody_7421.out"]).read_bytes())
    assert sniff(binary).skip_reason == "binary file, not a profiler log"


def test_every_view_of_a_printed_profile_is_read_with_its_table(tmp_path):
    _, result = read(layout_file(tmp_path, "key_averages_a100_torch2.4.txt"))
    sections = result.tables["metrics"].group_by("section", maintain_order=True).len()
    assert sections["section"].to_list() == [
        "key_averages 1: Key Averages (CPU)", "key_averages 1: Key Averages (CPU) totals",
        "key_averages 2: Key Averages (CUDA)", "key_averages 2: Key Averages (CUDA) totals",
        "key_averages 3: Memory (self CUDA memory, ascending frees first)",
        "key_averages 3: Memory (self CUDA memory, ascending frees first) totals",
        "key_averages 4: Grouped by Input Shape", "key_averages 4: Grouped by Input Shape totals",
        "key_averages 5: Top FLOPs", "key_averages 5: Top FLOPs totals"]
    metrics = result.tables["metrics"]
    shapes = metrics.filter(pl.col("metric") == "Input Shapes")
    assert shapes.height == 10 and shapes["value_text"][2] == "[[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], []]"
    freed = metrics.filter((pl.col("kernel_name") == "[memory]") & (pl.col("metric") == "Self CUDA Mem"))
    assert freed["value"].to_list() == [round(-150.20 * 2**20)]          # a negative memory value
    flops = metrics.filter((pl.col("kernel_name") == "aten::conv2d") & (pl.col("metric") == "Total MFLOPs"))
    by_view = dict(flops.group_by(pl.col("section").str.slice(0, 14), maintain_order=True)
                   .agg(pl.col("value").sum()).iter_rows())
    assert by_view == {f"key_averages {view}": pytest.approx(23117.9e6) for view in (1, 2, 3, 4, 5)}
    # every view keeps its rows (issue #34); the CUDA-sorted view gives the totals, the others
    # are views, named
    regions, kernels = result.tables["regions"], result.tables["kernels"]
    assert kernels["kind"].to_list() == ["summary"] * 2
    by_kind = dict(regions.group_by("kind").len().iter_rows())
    assert by_kind == {"operator_self": 6, "operator_view": 27}
    assert regions.filter(pl.col("name") == "aten::addmm")["path"].to_list() == [
        "key_averages 5: Top FLOPs/aten::addmm"]
    (views,) = [w for w in result.warnings if w.code == "pytorch.views"]
    assert views.line == 23 and "sorted by CUDA total, 8 rows" in views.message


def test_a_view_printed_twice_is_read_once(tmp_path):
    text = (DATA / "key_averages_lstm_torch1.7.txt").read_text()
    first = text.index("=== sorted by cuda_time_total ===")
    second = text.index("=== grouped by input shape ===")
    path = tmp_path / "twice.txt"
    path.write_text(text[:second] + text[first:second])
    _, result = read(path)
    assert [w.code for w in result.warnings] == ["pytorch.repeated-table", "pytorch.views"]
    assert result.tables["metrics"]["section"].n_unique() == 4   # views 1 and 2, with totals


# -- inspect over a folder of every layout ---------------------------------------------------

def test_inspect_a_folder_of_every_layout(tmp_path):
    for name in HAND_COUNTS:
        layout_file(tmp_path, name)
    out = CliRunner().invoke(cli, ["inspect", str(tmp_path), "--json"], catch_exceptions=False)
    assert out.exit_code in (0, 1), out.output
    found = {Path(entry["path"]).name: entry for entry in json.loads(out.stdout)}
    assert set(found) == set(HAND_COUNTS)
    for name, (family, counts) in HAND_COUNTS.items():
        entry = found[name]
        assert entry["status"] == "ok", (name, entry["error"])
        assert entry["family"] == family and entry["rows"] == counts, name


# -- layouts that worked and must keep working -----------------------------------------------

def _nsys_table(rows: list[list[str]]) -> str:
    """An nsys 2023+ kernel summary, laid out as nsys prints it (centred titles, right-aligned
    numbers, the name left-aligned, columns two spaces apart under a dash rule)."""
    titles = ["Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)",
              "Max (ns)", "StdDev (ns)", "Name"]
    widths = [max(len(cells[index]) for cells in [titles, *rows]) for index in range(len(titles))]
    def line(cells: list[str], title: bool) -> str:
        return " " + "  ".join(cell.center(width) if title else cell.ljust(width) if index == 8
                               else cell.rjust(width) for index, (cell, width) in enumerate(zip(cells, widths)))
    return "\n".join([line(titles, True), " " + "  ".join("-" * width for width in widths),
                      *[line(cells, False) for cells in rows]]) + "\n"


def test_nsys_locale_grouping_chinese_dates_and_cut_names_collide(tmp_path):
    """Four-digit grouping (`8,4521,1450`), a Chinese-locale `date` line before nsys's output,
    and names cut with `…` to one string: each row kept, the collision warned."""
    cut = "void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctorOnSelf_add<float>, at\u2026"
    path = tmp_path / "job.log"
    path.write_text("2024年 03月 12日 星期二 14:03:11 CST\n"
                    "[3/3] Executing 'cuda_gpu_kern_sum' stats report\n\n" + _nsys_table([
                        ["61.2", "8,4521,1450", "1,0240", "8,2540.2", "8,2496.0", "8,1984", "9,0112", "312.4", cut],
                        ["30.1", "4,1571,2120", "1,0240", "4,0597.0", "4,0576.0", "4,0128", "4,2240", "101.7", cut],
                        ["8.7", "1,2015,8336", "512", "23,4684.3", "23,4656.0", "23,3920", "23,6160", "298.1",
                         "ampere_sgemm_128x64_tn"]]), encoding="utf-8")
    _, result = read(path)
    kernels = result.tables["kernels"]
    assert kernels["duration_ns"].to_list() == [845211450.0, 415712120.0, 120158336.0]
    assert kernels["count"].to_list() == [10240, 10240, 512]
    assert [w.code for w in result.warnings] == ["nsys.truncated-name"]


def test_nvidia_smi_without_header_with_units_in_cells_and_month_first_dates(tmp_path):
    noheader = tmp_path / "gpu_noheader.csv"
    noheader.write_text("2024/03/12 14:03:11.123, NVIDIA A100-SXM4-40GB, 87 %, 41 %, 30214 MiB, 40960 MiB, 291.45 W\n"
                        "2024/03/12 14:03:12.124, NVIDIA A100-SXM4-40GB, 91 %, 44 %, 30214 MiB, 40960 MiB, 302.10 W\n")
    sniffed, result = read(noheader)
    assert sniffed.variant == "query csv (noheader)" and rows(result) == {"samples": 2}
    dated = tmp_path / "gpu.csv"
    dated.write_text("timestamp, name, utilization.gpu [%], memory.used [MiB], power.draw [W]\n"
                     "03-12-2024 14:03:11, NVIDIA GeForce RTX 3090, 87 %, 20214 MiB, 291.45 W\n"
                     "03-12-2024 14:03:12, NVIDIA GeForce RTX 3090, 91 %, 20220 MiB, 302.10 W\n")
    _, result = read(dated)
    samples = result.tables["samples"]
    assert samples["timestamp"].dt.strftime("%Y-%m-%d %H:%M:%S").to_list() == [
        "2024-03-12 14:03:11", "2024-03-12 14:03:12"]
    assert samples["util_gpu_pct"].to_list() == [87.0, 91.0] and samples["power_w"].to_list() == [291.45, 302.10]


def test_kineto_trace_starting_with_a_newline(tmp_path):
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text('\n{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], '
                    '"traceEvents": [{"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "pid": 0, '
                    '"tid": 7, "ts": 100, "dur": 50, "args": {"device": 0, "stream": 7, "correlation": 12, '
                    '"grid": [80, 1, 1], "block": [256, 1, 1]}}]}\n')
    _, result = read(path)
    assert rows(result) == {"activities": 1, "kernels": 1, "steps": 1}   # no ProfilerStep: the trace is one step
