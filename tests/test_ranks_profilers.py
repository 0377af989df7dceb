"""Jobs of several ranks that nsys or rocprof profiled (issue 36): one nsys report of several
processes, one nsys report per rank, and rocprof traces in a folder per rank (the rocprof
layouts are described above their tests, below).

Layouts, each from a real source:

* one report of several processes: the corpus's `nsys/rep/nsysai_h100_2gpu_1s_nsys2026.2.sqlite`
  (GindaChen/nsys-ai `tests/fixtures/h100_2gpu_1s.sqlite`, an nsys 2026.2 export of a
  sequence-parallel run on two H100s: two `python3` processes, pid 111 on GPU 0 and pid 112 on
  GPU 1, `globalPid` on every CUPTI activity row);
* one report per rank: `nsys profile -o "./nsys_reports/rank_$PMI_RANK.nsys-rep"` (the MPI
  wrapper erictsaii/NTHU-ParallelProgramming `hw2/wrapper.sh`), exported as SQLite; here each
  rank's report is the corpus report with the other process's rows deleted, so every table
  keeps nsys's own schema;
* reports of unrelated runs in one folder: nsys's default names `report1`, `report2` (one per
  `nsys profile` in the same folder, `rep/*report1*` in the corpus) must stay apart.
"""

from __future__ import annotations

import shutil
import sqlite3

import polars as pl
import pytest

import roofreport
from tests.conftest import corpus_path

REPORT = ("nsys", "rep", "nsysai_h100_2gpu_1s_nsys2026.2.sqlite")
TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


def _union(intervals: list[tuple[int, int]]) -> int:
    """Length of the union of (start, end) intervals, by hand."""
    total, reach_start, reach_end = 0, None, None
    for start, end in sorted(intervals):
        if reach_end is None or start > reach_end:
            if reach_end is not None:
                total += reach_end - reach_start
            reach_start, reach_end = start, end
        else:
            reach_end = max(reach_end, end)
    return total + (reach_end - reach_start if reach_end is not None else 0)


def _by_hand(path) -> dict[int, dict[str, float]]:
    """Per process (pid order = rank order here: pid 111 drove GPU 0), straight from the SQLite
    tables: the span, busy and compute time (no NCCL kernel ran in this window)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    pids = [p for (p,) in con.execute("SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1")]
    out = {}
    for rank, pid in enumerate(pids):
        every = [row for table in TABLES for row in
                 con.execute(f"SELECT start, end FROM {table} WHERE globalPid = ?", (pid,))]
        kernels = con.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid = ?", (pid,)).fetchall()
        span = max(e for _, e in every) - min(s for s, _ in every)
        busy = _union(every)
        out[rank] = {"span_ns": span, "idle_ns": span - busy, "compute_ns": _union(kernels),
                     "device": con.execute("SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid = ?",
                                           (pid,)).fetchall()}
    con.close()
    return out


@pytest.fixture(scope="module")
def report():
    return corpus_path(*REPORT)


def test_a_report_of_two_processes_is_one_run_with_two_ranks(report):
    data = roofreport.read(report, jobs=1)
    run = data.tables["runs"].row(0, named=True)
    assert data.tables["runs"].height == 1
    assert (run["rank"], run["ranks"], run["world_size"]) == (None, 2, 2)
    assert run["distributed_job"] == run["run"]
    # every GPU row carries its process's rank; each process drove one GPU
    for table in ("activities", "kernels"):
        pairs = data.tables[table].select("rank", "device").unique().sort("rank").rows()
        assert pairs == [(0, "0"), (1, "1")], table
    assert data.tables["kernels"].group_by("rank").len().sort("rank")["len"].to_list() == [1721, 1721]


def test_the_ranks_table_of_the_report_is_each_processs_own_timeline(report):
    expected = _by_hand(report)
    assert [expected[r]["device"] for r in (0, 1)] == [[(0,)], [(1,)]]
    ranks = roofreport.read(report, jobs=1).model.ranks.sort("rank")
    assert ranks["rank"].to_list() == [0, 1]
    for row in ranks.iter_rows(named=True):
        mine = expected[row["rank"]]
        assert row["span_ns"] == pytest.approx(mine["span_ns"])
        assert row["idle_ns"] == pytest.approx(mine["idle_ns"])
        assert row["compute_ns"] == pytest.approx(mine["compute_ns"])
        assert row["comm_ns"] == 0.0 and row["comm_overlap_pct"] is None
    # the two processes' spans differ: a union of both would be neither
    assert expected[0]["span_ns"] != expected[1]["span_ns"]


def test_the_job_of_one_report_is_summarised_with_its_two_ranks(report):
    an = roofreport.analyze(roofreport.read(report, jobs=1))
    job = an.distributed.jobs.row(0, named=True)
    assert an.distributed.jobs.height == 1
    assert (job["ranks"], job["world_size"], job["gpu_label"]) == (2, 2, "H100-SXM5-80GB")
    assert job["span_ns"] == pytest.approx(an.distributed.ranks["span_ns"].median())
    # the report's section for it: the job by its run's name, a row per rank
    from roofreport.report.assemble import assemble

    section = next(s for s in assemble(an).sections if s.id == "distributed")
    heading = next(b for b in section.blocks if type(b).__name__ == "Heading")
    assert heading.text == f"{job['distributed_job']} (2 ranks, H100-SXM5-80GB)"
    table = next(b for b in section.blocks if type(b).__name__ == "Table")
    assert [row[0].text for row in table.rows] == ["0", "1"]
    # and its introduction says what makes a job's ranks, this kind of job included
    intro = "".join(span.text for span in next(b for b in section.blocks if type(b).__name__ == "Paragraph").spans)
    assert "processes of one trace" in intro and "named alike but for the rank" in intro


def test_a_dataset_folder_keeps_the_ranks_of_the_report(report, tmp_path):
    stored = roofreport.read(report, dataset=tmp_path / "ds", jobs=1)
    again = roofreport.read(tmp_path / "ds")
    assert again.model.ranks.select("rank", "span_ns").equals(stored.model.ranks.select("rank", "span_ns"))
    assert again.model.ranks["rank"].to_list() == [0, 1]
    assert again.tables["runs"]["ranks"].to_list() == [2]
    assert roofreport.analyze(again).distributed.jobs["ranks"].to_list() == [2]


def _one_process(source, target, keep_rank: int, later_s: int = 0) -> None:
    """`source` with only its `keep_rank`-th process's GPU rows: one rank's own report;
    `later_s`: its session started that many seconds later (a run after the other)."""
    shutil.copyfile(source, target)
    target.chmod(0o644)
    con = sqlite3.connect(target)
    con.execute("UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + ?", (later_s * 10**9,))
    pids = [p for (p,) in con.execute("SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1")]
    for table in TABLES:
        con.execute(f"DELETE FROM {table} WHERE globalPid != ?", (pids[keep_rank],))
    # the API calls name their thread, whose process is its high bits (nsys's globalTid)
    con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE (globalTid >> 24) != (? >> 24)", (pids[keep_rank],))
    con.commit()
    con.close()


def _report_per_rank(report, folder, name):
    """Each of `report`'s two processes as its own report in `folder`, named `name` of its rank,
    read back."""
    folder.mkdir()
    for rank in (0, 1):
        _one_process(report, folder / name(rank), rank)
    return roofreport.read(folder, jobs=1)


def test_a_report_per_rank_gives_a_run_per_rank_in_one_job(report, tmp_path):
    data = _report_per_rank(report, tmp_path / "nsys_reports", lambda rank: f"rank_{rank}.sqlite")
    runs = data.tables["runs"].sort("rank")
    assert runs["rank"].to_list() == [0, 1]
    assert set(runs["distributed_job"].to_list()) == {"rank_*.sqlite"} and set(runs["ranks"].to_list()) == {2}
    # each rank's figures are those its process has in the report of both
    expected = _by_hand(report)
    ranks = data.model.ranks.sort("rank")
    assert ranks["span_ns"].to_list() == pytest.approx([expected[r]["span_ns"] for r in (0, 1)])
    assert ranks["compute_ns"].to_list() == pytest.approx([expected[r]["compute_ns"] for r in (0, 1)])
    assert roofreport.analyze(data).distributed.jobs["ranks"].to_list() == [2]


def test_reports_a_launcher_numbered_that_ran_together_are_one_job(report, tmp_path):
    # an MPI wrapper's names: `nsys profile -o $1_$(printf "%02d" $PMI_RANK)` (dasbd72/NTHU-PP-2024
    # `hw1-mpi-odd-even-sort/scripts/wrapper.sh`): no `rank` in the name, the processes ran together
    data = _report_per_rank(report, tmp_path / "odd_even", lambda rank: f"sort_{rank:02d}.sqlite")
    runs = data.tables["runs"].sort("rank")
    assert runs["rank"].to_list() == [0, 1] and set(runs["ranks"]) == {2}
    assert set(runs["distributed_job"]) == {"sort_*.sqlite"}
    expected = _by_hand(report)
    assert data.model.ranks.sort("rank")["span_ns"].to_list() == pytest.approx([expected[r]["span_ns"] for r in (0, 1)])


def test_reports_of_unrelated_runs_in_one_folder_are_no_job(report, tmp_path):
    folder = tmp_path / "profiles"
    folder.mkdir()
    for number in (1, 2):   # nsys's names for two runs in one folder, each of one process,
        # the second started a minute after the first (whose GPU work lasted a second)
        _one_process(report, folder / f"report{number}.sqlite", number - 1, later_s=60 * (number - 1))
    runs = roofreport.read(folder, jobs=1).tables["runs"]
    assert runs.height == 2
    assert runs["distributed_job"].null_count() == 2 and runs["ranks"].null_count() == 2
    assert runs["rank"].null_count() == 2


# -- rocprof: a folder per rank ------------------------------------------------------------------
# AMD's rocprof wrapper for MPI jobs (`mpirun -np N ./rocprof_wrapper.sh <out> <name> <app>`,
# olcf/hip-training-series `Lecture4/jacobi/rocprof_wrapper.sh`, adapted from AMD's "using
# rocprof" page) writes rank r's trace to `rank_${pid}_${r}/${name}_${pid}_${r}.csv`. Each file
# is a rocprof `--timestamp on` results.csv, its header and rows the corpus's
# (`rocm/rocprof/hpcgarage__spatter__build-debug_results.csv`, hpcgarage/spatter
# `build-debug/results.csv`), here with each rank's own process id and a different count of
# dispatches, so the ranks differ.

SPATTER = ("rocm", "rocprof", "hpcgarage__spatter__build-debug_results.csv")


def _rocprof_rank(source, folder, pid: int, rank: int, rows: int):
    import csv

    with open(source, newline="") as handle:
        table = list(csv.reader(handle))
    header, body = table[0], table[1:rows + 1]
    for row in body:
        row[header.index("pid")] = row[header.index("tid")] = str(pid)
    target = folder / f"rank_{pid}_{rank}"
    target.mkdir(parents=True)
    # as rocprof writes it: the header's names and text cells quoted, numbers bare
    quoted = lambda cell: cell if cell.lstrip("-").isdigit() else '"' + cell.replace('"', '""') + '"'  # noqa: E731
    lines = [",".join(f'"{name}"' for name in header)] + [",".join(quoted(c) for c in row) for row in body]
    (target / f"results_{pid}_{rank}.csv").write_text("\n".join(lines) + "\n")
    begin, end = header.index("BeginNs"), header.index("EndNs")
    intervals = [(int(r[begin]), int(r[end])) for r in body]
    span = max(e for _, e in intervals) - min(s for s, _ in intervals)
    return {"span_ns": span, "compute_ns": _union(intervals), "idle_ns": span - _union(intervals)}


def test_rocprof_traces_in_a_folder_per_rank_are_one_job_with_the_wrappers_ranks(tmp_path):
    source = corpus_path(*SPATTER)
    job = tmp_path / "jacobi"
    expected = {0: _rocprof_rank(source, job, 41807, 0, 500), 1: _rocprof_rank(source, job, 41808, 1, 380)}
    data = roofreport.read(job, jobs=1)
    runs = data.tables["runs"].sort("rank")
    # the rank is the wrapper's MPI rank, the last number, not the process id before it
    assert runs["rank"].to_list() == [0, 1]
    assert set(runs["distributed_job"].to_list()) == {"rank_*"} and set(runs["ranks"].to_list()) == {2}
    ranks = data.model.ranks.sort("rank")
    for row in ranks.iter_rows(named=True):
        mine = expected[row["rank"]]
        assert row["span_ns"] == pytest.approx(mine["span_ns"])
        assert row["compute_ns"] == pytest.approx(mine["compute_ns"])
        assert row["idle_ns"] == pytest.approx(mine["idle_ns"])
    assert roofreport.analyze(data).distributed.jobs["ranks"].to_list() == [2]


def test_rocprof_traces_of_two_runs_named_by_their_process_alone_are_no_job(tmp_path):
    # the same page's other wrapper, `pid_${pid}/results_${pid}.csv`, names no rank: two such
    # folders may be two runs one after the other, and stay apart
    source = corpus_path(*SPATTER)
    folder = tmp_path / "runs"
    for pid, rows in ((41807, 500), (52210, 380)):
        _rocprof_rank(source, folder, pid, 0, rows)
        (folder / f"rank_{pid}_0").rename(folder / f"pid_{pid}")
        (folder / f"pid_{pid}" / f"results_{pid}_0.csv").rename(folder / f"pid_{pid}" / f"results_{pid}.csv")
    runs = roofreport.read(folder, jobs=1).tables["runs"]
    assert runs.height == 2 and runs["distributed_job"].null_count() == 2 and runs["rank"].null_count() == 2


# -- rocprofv3: a file set per process, named by its process id ----------------------------------
# `mpirun -n 4 rocprofv3 --kernel-trace --output-format csv -- app` writes each rank's files into
# its host's folder, prefixed with the process id (AMD's "Using rocprofv3 with MPI",
# rocm.docs.amd.com/projects/rocprofiler-sdk `how-to/using-rocprofv3-with-mpi`:
# `2293212_agent_info.csv`, `2293213_agent_info.csv`, ...). The files here are the corpus's
# rocprofv3 kernel trace and agent info (`rocm/rocprofv3/huizhg__gpu-perf-mi250x__results_prof_*`,
# huizhg/gpu-perf-mi250x `results/prof/`), each rank on its own agent with its own rows.

V3_TRACE = ("rocm", "rocprofv3", "huizhg__gpu-perf-mi250x__results_prof_rocblas_4096_kernel_trace.csv")
V3_AGENTS = ("rocm", "rocprofv3", "huizhg__gpu-perf-mi250x__results_prof_triton_decode_agent_info.csv")


def _v3_process(folder, pid: int, agent: int, shift: int, rows: int) -> dict[str, float]:
    import csv

    with open(corpus_path(*V3_TRACE), newline="") as handle:
        table = list(csv.reader(handle))
    header, body = table[0], table[1:rows + 1]
    for row in body:
        row[header.index("Agent_Id")] = f"Agent {agent}"
        for column in ("Start_Timestamp", "End_Timestamp"):
            row[header.index(column)] = str(int(row[header.index(column)]) + shift)
    quoted = lambda cell: cell if cell.lstrip("-").isdigit() else '"' + cell.replace('"', '""') + '"'  # noqa: E731
    lines = [",".join(f'"{name}"' for name in header)] + [",".join(quoted(c) for c in row) for row in body]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{pid}_kernel_trace.csv").write_text("\n".join(lines) + "\n")
    shutil.copyfile(corpus_path(*V3_AGENTS), folder / f"{pid}_agent_info.csv")
    begin, end = header.index("Start_Timestamp"), header.index("End_Timestamp")
    intervals = [(int(r[begin]), int(r[end])) for r in body]
    span = max(e for _, e in intervals) - min(s for s, _ in intervals)
    return {"span_ns": span, "compute_ns": _union(intervals), "start": min(s for s, _ in intervals),
            "end": max(e for _, e in intervals)}


def test_rocprofv3_files_of_processes_that_ran_together_are_one_job_ranked_by_process_id(tmp_path):
    host = tmp_path / "job" / "node01"
    # the second process started 1 us after the first, on the next GPU: their work overlaps
    expected = {0: _v3_process(host, 2293212, 4, 0, 60), 1: _v3_process(host, 2293213, 5, 1000, 50)}
    assert expected[1]["start"] < expected[0]["end"]
    data = roofreport.read(tmp_path / "job", jobs=1)
    ranked = data.tables["runs"].filter(pl.col("rank").is_not_null()).sort("rank")
    assert ranked["rank"].to_list() == [0, 1]
    assert ["2293212" in run for run in ranked["run"]] == [True, False]   # the lower process id first
    assert set(ranked["distributed_job"]) == {"node01/*_kernel_trace.csv"} and set(ranked["ranks"]) == {2}
    # each rank's run holds its own agent info (the same bytes on one node: no copy of the other's)
    assert data.tables["runs"].height == 2 and ranked["files"].to_list() == [2, 2]
    assert ranked["duplicate_of"].null_count() == 2 and set(ranked["gpu_label"]) == {"MI250X (GCD)"}
    ranks = data.model.ranks.sort("rank")
    for row in ranks.iter_rows(named=True):
        assert row["span_ns"] == pytest.approx(expected[row["rank"]]["span_ns"])
        assert row["compute_ns"] == pytest.approx(expected[row["rank"]]["compute_ns"])
    assert roofreport.analyze(data).distributed.jobs["ranks"].to_list() == [2]


def test_rocprofv3_files_of_two_runs_one_after_the_other_stay_apart(tmp_path):
    host = tmp_path / "runs" / "node01"
    first = _v3_process(host, 2293212, 4, 0, 60)
    # the same program run again later (a new process id, the same host folder)
    _v3_process(host, 2294410, 4, int(first["end"] - first["start"]) + 10**9, 60)
    runs = roofreport.read(tmp_path / "runs", jobs=1).tables["runs"]
    assert runs["distributed_job"].null_count() == runs.height and runs["rank"].null_count() == runs.height


# -- rocprofv2: records of every rank interleaved in the job's log --------------------------------
# rocprofv2's cli plugin prints each dispatch as a `Key(Value), ...` line on the program's stdout,
# so an MPI job's ranks interleave in one log (the layout of tests/test_rocm_records.py, true to
# rocprofiler `plugin/cli/cli.cpp`); `--kernel-trace` without counters gives the timeline.


def test_rocprofv2_records_of_two_ranks_in_one_log_are_one_job_with_each_processs_timeline(tmp_path):
    from tests.test_rocm_records import GEMM, STENCIL, dispatch

    t0 = 2849505830440000
    # (process, name, begin, end): rank 1 (pid 51202) is slower in its GEMM
    calls = [(51201, STENCIL, 0, 28_000), (51202, STENCIL, 300, 29_000), (51201, GEMM, 30_000, 80_000),
             (51202, GEMM, 31_000, 101_000), (51201, STENCIL, 82_000, 110_000), (51202, STENCIL, 102_000, 130_000)]
    lines = ["rank 0 of 2 on frontier00123, GCD 0", "rank 1 of 2 on frontier00123, GCD 0"]
    lines += [dispatch(n, pid, name, t0 + b, t0 + e, {}) for n, (pid, name, b, e) in enumerate(calls, 1)]
    (tmp_path / "slurm-812346.out").write_text("\n".join(lines) + "\n")
    data = roofreport.read(tmp_path / "slurm-812346.out", jobs=1)
    run = data.tables["runs"].row(0, named=True)
    assert (run["ranks"], run["world_size"], run["rank"]) == (2, 2, None)
    assert data.tables["kernels"].sort("source_line")["rank"].to_list() == [0, 1, 0, 1, 0, 1]
    ranks = data.model.ranks.sort("rank")
    for rank, pid in enumerate((51201, 51202)):
        mine = [(b, e) for p, _, b, e in calls if p == pid]
        span = max(e for _, e in mine) - min(b for b, _ in mine)
        row = ranks.row(rank, named=True)
        assert (row["rank"], row["span_ns"], row["compute_ns"]) == (rank, span, _union(mine))
        assert row["idle_ns"] == span - _union(mine)
    assert roofreport.analyze(data).distributed.jobs["ranks"].to_list() == [2]


# -- nvprof: a summary per rank -------------------------------------------------------------------
# `mpirun -np 2 nvprof --log-file <name>%q{OMPI_COMM_WORLD_RANK}` (nvprof's `%q{ENV}` in output
# names, NVIDIA's Profiler User's Guide, "MPI Profiling With nvprof"): one summary per rank. The
# summary is the corpus's (`nvprof/summary/cs533_mpi_vecadd_v100_summary_allprocs.txt`,
# samhachem99/CS533_Final_Project `nvprof_output.txt`), rank 1's times a little longer.

NVPROF_SUMMARY = ("nvprof", "summary", "cs533_mpi_vecadd_v100_summary_allprocs.txt")


def _nvprof_ranks(folder, names):
    text = corpus_path(*NVPROF_SUMMARY).read_text()
    assert "8.0251ms" in text
    folder.mkdir()
    for index, name in enumerate(names):
        (folder / name).write_text(text if index == 0 else text.replace("8.0251ms", "8.9251ms"))


def test_nvprof_summaries_named_by_rank_are_one_job_whose_per_rank_figures_cannot_be_told(tmp_path):
    _nvprof_ranks(tmp_path / "vecadd", ["nvprof_rank_0.log", "nvprof_rank_1.log"])
    an = roofreport.analyze(roofreport.read(tmp_path / "vecadd", jobs=1))
    runs = an.tables["runs"].sort("rank")
    assert runs["rank"].to_list() == [0, 1] and set(runs["distributed_job"]) == {"nvprof_rank_*.log"}
    # summed summaries hold no timeline: no rank's span, idle or overlap is made up
    assert an.distributed.ranks.height == 0
    job = an.distributed.jobs.row(0, named=True)
    assert job["ranks"] == 2 and job["span_ns"] is None and job["exposed_comm_pct"] is None


def test_nvprof_summaries_numbered_alone_stay_apart(tmp_path):
    # `output.%q{OMPI_COMM_WORLD_RANK}` gives `output.0`, `output.1`: a summary has no times to
    # tell ranks that ran together from runs one after the other, so they stay apart
    _nvprof_ranks(tmp_path / "vecadd", ["output.0.log", "output.1.log"])
    runs = roofreport.read(tmp_path / "vecadd", jobs=1).tables["runs"]
    assert runs.height == 2 and runs["distributed_job"].null_count() == 2 and runs["rank"].null_count() == 2
