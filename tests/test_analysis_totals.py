"""The run totals' rules on small frames: what counts, which file, which time, what bound, and
when two runs or an estimate and a run are not comparable.

Every frame here is written by hand so each expected number can be checked on paper; the real
course folders are checked in test_course_totals.py.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

from roofreport import gpu
from roofreport.analysis import compare, speedup, sweeps
from roofreport.model import derive
from roofreport.analysis.estimates import Estimate
from roofreport.pipeline import cutshort
from roofreport.tables import schema

V100 = "Tesla V100 SXM2 16GB"       # 15.7 TFLOP/s FP32, 900 GB/s: ridge 17.44 FLOP/B


@pytest.fixture(scope="module")
def db():
    return gpu.load_database()


def _kernel(run: str, name: str, file: str = "k.csv", launch: int = 1, **values) -> dict:
    return {"run": run, "source_file": file, "source_line": launch, "launch_id": launch, "name": name,
            "short_name": name, "kind": "launch", "count": 1, **values}


def _tables(kernels: list[dict], runs: list[dict], families: dict[str, str] | None = None,
            activities: list[dict] | None = None) -> dict[str, pl.DataFrame]:
    files = families or {"k.csv": "nsys"}
    tables = {
        "kernels": schema.conform("kernels", pl.DataFrame(kernels, infer_schema_length=None)),
        "runs": schema.conform("runs", pl.DataFrame(runs, infer_schema_length=None)),
        "files": schema.conform("files", pl.DataFrame({"path": list(files), "family": list(files.values())})),
    }
    if activities:
        tables["activities"] = schema.conform("activities", pl.DataFrame(activities, infer_schema_length=None))
    return tables


def _totals(tables, db) -> dict[str, dict]:
    out = derive(tables, db).runs()
    return {r["run"]: r for r in out.iter_rows(named=True)}


# -- work: every counted kernel, one file --------------------------------------------------------

def test_every_counted_kernel_counts_in_bytes_not_only_those_with_flops(db):
    kernels = [_kernel("r", "sgemm", launch=1, duration_ns=1e6, flops_fp32=9e9, dram_bytes=3e8, flops_complete=True),
               _kernel("r", "memcpy_kernel", launch=2, duration_ns=1e6, dram_bytes=2e8),
               _kernel("r", "relu", launch=3, duration_ns=5e5, flops_fp32=0.0, dram_bytes=1e8, flops_complete=True)]
    run = _totals(_tables(kernels, [{"run": "r", "gpu_model": V100, "gpu": "V100"}]), db)["r"]
    assert run["dram_bytes"] == 6e8 and run["flops"] == 9e9
    assert run["arithmetic_intensity"] == pytest.approx(15.0)
    assert run["counted_kernels"] == 3 and run["counted_time_ns"] == 2.5e6
    assert run["achieved_flops_per_s"] == pytest.approx(9e9 / 2.5e-3)
    assert run["kernel_time_ns"] == 2.5e6 and run["kernel_launches"] == 3


def test_two_exports_of_one_profile_are_counted_once(db):
    """ncu's details CSV and raw CSV of one report in one run: the counters of one file only."""
    rows = [_kernel("r", "sgemm", file=f, launch=i, flops_fp32=1e9, dram_bytes=1e8, flops_complete=True)
            for f in ("details.csv", "raw.csv") for i in (1, 2)]
    run = _totals(_tables(rows, [{"run": "r"}], {"details.csv": "ncu", "raw.csv": "ncu"}), db)["r"]
    assert run["flops"] == 2e9 and run["dram_bytes"] == 2e8 and run["counted_kernels"] == 2


# -- bound -------------------------------------------------------------------------------------

@pytest.mark.parametrize("flops, bound", [(5.0, "memory"), (15.0, "mixed"), (17.0, "mixed"), (17.5, "mixed"),
                                          (21.0, "mixed"), (40.0, "compute")])
def test_a_one_kernel_run_is_bound_by_its_side_of_the_ridge_and_at_the_ridge_near_it(db, flops, bound):
    """V100: 15.7e12 / 900e9 = 17.44 FLOP/B; within ×/÷ 1.25 of it (13.95 to 21.8) both roofs are
    near: "mixed" (at the ridge). Time chosen so the point sits at half its roof, in one long launch."""
    ai = flops
    attainable = min(15.7e12, 900e9 * ai)
    time_ns = ai * 1e9 / (attainable / 2) * 1e9
    kernels = [_kernel("r", "sgemm", duration_ns=time_ns, flops_fp32=ai * 1e9, dram_bytes=1e9, flops_complete=True)]
    run = _totals(_tables(kernels, [{"run": "r", "gpu_model": V100}]), db)["r"]
    assert run["ridge_ai"] == pytest.approx(15.7e12 / 900e9)
    side = "compute" if ai >= 15.7e12 / 900e9 else "memory"
    assert run["bound"] == bound
    assert run["bound_note"].startswith(f"100% of the counted time in {side}-side kernels")
    assert run["compute_time_share"] == (1.0 if side == "compute" else 0.0) and run["bound_coverage"] == 1.0
    assert run["pct_of_roof"] == pytest.approx(50.0)
    assert run["roof_precision"] == "fp32"


def _two_sides(compute_ns: float, memory_ns: float, launches: int = 1) -> list[dict]:
    """A GEMM right of the V100's ridge (AI 40) and a copy-like kernel left of it (AI 2), each at
    half its roof, in `launches` launches; the run's aggregate intensity is about 17 (the ridge)."""
    gemm_flops = 15.7e12 / 2 * compute_ns * 1e-9
    copy_flops = 900e9 * 2 / 2 * memory_ns * 1e-9
    return [_kernel("r", "sgemm", launch=1, duration_ns=compute_ns, count=launches, flops_fp32=gemm_flops,
                    dram_bytes=gemm_flops / 40, flops_complete=True),
            _kernel("r", "elementwise", launch=2, duration_ns=memory_ns, count=launches, flops_fp32=copy_flops,
                    dram_bytes=copy_flops / 2, flops_complete=True)]


@pytest.mark.parametrize("compute_ms, memory_ms, bound, share", [
    (8.0, 2.0, "compute", 0.8), (2.0, 8.0, "memory", 0.2), (5.5, 4.5, "mixed", 0.55)])
def test_the_bound_is_the_side_where_most_of_the_time_sits(db, compute_ms, memory_ms, bound, share):
    """Issue 31 item 2: not the aggregate intensity, the time-weighted kernel population."""
    kernels = _two_sides(compute_ms * 1e6, memory_ms * 1e6)
    run = _totals(_tables(kernels, [{"run": "r", "gpu_model": V100}]), db)["r"]
    assert run["bound"] == bound
    assert run["compute_time_share"] == pytest.approx(share)
    side, value = ("compute", share) if share >= 0.5 else ("memory", 1 - share)
    assert run["bound_note"].startswith(f"{value:.0%} of the counted time in {side}-side kernels")


def test_a_run_whose_aggregate_sits_at_the_ridge_is_mixed_even_with_most_time_on_one_side(db):
    """65% of the time in compute-side kernels, but the run's intensity within the ridge band."""
    kernels = _two_sides(6.5e6, 3.5e6)
    kernels[0]["dram_bytes"] = kernels[0]["flops_fp32"] / 30    # aggregate intensity near 17
    run = _totals(_tables(kernels, [{"run": "r", "gpu_model": V100}]), db)["r"]
    ratio = run["arithmetic_intensity"] / run["ridge_ai"]
    assert 0.8 <= ratio <= 1.25 and run["compute_time_share"] == pytest.approx(0.65)
    assert run["bound"] == "mixed" and "of the ridge point" in run["bound_note"]


def test_short_launches_far_below_the_roof_are_latency_bound_not_compute_bound(db):
    """A 100 µs micro-run of ten 10 µs GEMM launches at 30% of its roof (issue 31: micro-runs of
    60-150 µs at 13-35% of roof were called compute-bound); the same GEMM in 1 ms launches is
    compute-bound."""
    def run_of(launch_ns: float) -> dict:
        time_ns = 10 * launch_ns
        flops = 15.7e12 * 0.3 * time_ns * 1e-9
        kernels = [_kernel("r", "sgemm", duration_ns=time_ns, count=10, flops_fp32=flops, dram_bytes=flops / 40,
                           flops_complete=True)]
        return _totals(_tables(kernels, [{"run": "r", "gpu_model": V100}]), db)["r"]

    micro = run_of(10e3)
    assert micro["pct_of_roof"] == pytest.approx(30.0) and micro["bound"] == "latency"
    assert "in launches under 20 µs" in micro["bound_note"]
    assert run_of(1e6)["bound"] == "compute"


@pytest.mark.parametrize("waves, bound", [(0.4, "latency"), (12.0, "compute")])
def test_a_grid_of_less_than_one_wave_far_below_the_roof_is_latency_bound(db, waves, bound):
    """One 200 µs launch at 30% of its roof: ncu's Waves Per SM under one (part of the GPU idle
    the whole launch) makes it latency-bound; the same launch over 12 waves is compute-bound."""
    flops = 15.7e12 * 0.3 * 200e-6
    kernels = [_kernel("r", "sgemm", file="n.csv", duration_ns=200e3, flops_fp32=flops, dram_bytes=flops / 40,
                       flops_complete=True)]
    tables = _tables(kernels, [{"run": "r", "gpu_model": V100}], {"n.csv": "ncu"})
    tables["metrics"] = schema.conform("metrics", pl.DataFrame({
        "run": ["r"], "source_file": ["n.csv"], "launch_id": [1], "section": ["Launch Statistics"],
        "metric": ["Waves Per SM"], "value": [waves]}))
    run = _totals(tables, db)["r"]
    assert run["pct_of_roof"] == pytest.approx(30.0) and run["bound"] == bound


def _one_of_a_trace(other_ns: float) -> dict[str, pl.DataFrame]:
    """ncu counted one 1 ms GEMM (compute side, at half its roof); the nsys trace of the run
    times it and one other kernel of `other_ns` that no counter saw."""
    kernels = [_kernel("r", "sgemm", file="n.csv", launch=1, duration_ns=1e6, flops_fp32=15.7e12 / 2 * 1e-3,
                       dram_bytes=15.7e12 / 2 * 1e-3 / 40, flops_complete=True),
               _kernel("r", "sgemm", file="t.json", launch=1, duration_ns=1e6),
               _kernel("r", "other", file="t.json", launch=2, duration_ns=other_ns)]
    return _tables(kernels, [{"run": "r", "gpu_model": V100}], {"n.csv": "ncu", "t.json": "nsys"})


def test_the_bound_says_how_much_of_the_runs_time_the_counters_cover(db):
    """ncu profiled one kernel of a trace's two, 1 ms of 1.6 ms: the class covers its time only."""
    run = _totals(_one_of_a_trace(0.6e6), db)["r"]
    assert run["kernel_time_ns"] == 1.6e6 and run["bound"] == "compute"
    assert run["bound_coverage"] == pytest.approx(1 / 1.6)
    assert run["bound_note"].endswith("the counters cover 62% of the run's kernel time")


@pytest.mark.parametrize("other_ms, bound", [(0.9, "compute"), (1.0, "compute"), (1.1, None), (3.0, None)])
def test_a_run_whose_counters_cover_under_half_its_time_has_no_class(db, other_ms, bound):
    """The coverage floor (model/bound.py): under half the run's kernel time counted, the
    uncounted rest could hold most of the run on either side, so no class is given, and the
    note names what is counted (its one launch of two, and where that launch's time sits)."""
    run = _totals(_one_of_a_trace(other_ms * 1e6), db)["r"]
    coverage = 1 / (1 + other_ms)
    assert run["bound"] == bound and run["bound_coverage"] == pytest.approx(coverage)
    assert run["compute_time_share"] == 1.0          # the counted launch's facts stay in the table
    if bound is None:
        assert run["bound_note"] == ("too little of the run's kernel time is counted to classify: the counters "
                                     f"cover {coverage:.0%} of it (1 of 2 launches), 100% of that in compute-side "
                                     "kernels")
    else:
        assert "too little" not in run["bound_note"]


# -- classed by kernel name (model/bound.py): an ncu window beside a trace of the whole run ------

_GEMM_FLOPS = 15.7e12 / 2 * 1e-3     # a 1 ms GEMM at half the V100's roof, AI 40: compute side
_COPY_FLOPS = 900e9 * 2 / 2 * 3e-3   # a 3 ms element-wise kernel at half its roof, AI 2: memory side


def _window(trace: list[tuple[str, str | None, float]], counted: list[tuple[str, str | None, float, float]]):
    """ncu counted `counted` (name, grid, FLOPs, AI) in a window; the nsys trace of the run has
    `trace` (name, grid, duration in ns), the window's launches first, so they align in order."""
    def shape(grid):
        return {"grid": grid, "block": "(128, 1, 1)"} if grid else {}
    kernels = [_kernel("r", name, file="n.csv", launch=i, duration_ns=1e6, flops_fp32=flops,
                       dram_bytes=flops / ai, flops_complete=True, **shape(grid))
               for i, (name, grid, flops, ai) in enumerate(counted, 1)]
    kernels += [_kernel("r", name, file="t.json", launch=i, duration_ns=ns, **shape(grid))
                for i, (name, grid, ns) in enumerate(trace, 1)]
    return _tables(kernels, [{"run": "r", "gpu_model": V100}], {"n.csv": "ncu", "t.json": "nsys"})


@pytest.mark.parametrize("other_ms, bound", [(5.0, None), (3.0, "compute")])
def test_uncounted_launches_of_a_counted_kernel_class_the_run_by_name_and_never_counted_ones_do_not(
        db, other_ms, bound):
    """ncu counted 1 of a GEMM's 4 launches (1 ms each, compute side); the trace also holds a
    kernel no counter saw. Counted launches: 1 ms of 4 + other. By name: the GEMM's 4 ms. With
    5 ms of the other kernel the GEMM is 44 %: no class, however the GEMM sits (the uncounted
    kernel could be anything). With 3 ms it is 57 %: classed by name, all of it compute side."""
    gemm = [("sgemm", None, 1e6)] * 4
    run = _totals(_window(gemm + [("other", None, other_ms * 1e6)], [("sgemm", None, _GEMM_FLOPS, 40.0)]), db)["r"]
    total = 4 + other_ms
    assert run["bound_coverage"] == pytest.approx(1 / total) and run["compute_time_share"] == 1.0
    assert run["bound_coverage_by_name"] == pytest.approx(4 / total)
    assert run["compute_time_share_by_name"] == 1.0 and run["memory_time_share_by_name"] == 0.0
    assert run["bound"] == bound
    if bound is None:
        assert run["bound_note"] == ("too little of the run's kernel time is counted to classify: the counters "
                                     f"cover {1 / total:.0%} of it (1 of 5 launches), 100% of that in compute-side "
                                     f"kernels; the kernels they name take {4 / total:.0%} of it")
    else:
        assert run["bound_note"] == ("classed by kernel name: the counters cover 14% of the run's kernel time (1 of 5 "
                                     "launches), and the kernels they name take 57% of it; 100% of that in "
                                     "compute-side kernels")


def test_a_kernel_counted_on_both_sides_of_the_ridge_weighs_against_both_unless_its_shape_was_counted(db):
    """One GEMM name counted at two launch shapes: grid A right of the ridge (AI 40), grid B left
    of it (AI 2), 1 ms each. The trace launches it twice at each shape and twice at a grid C no
    counter saw, 1 ms each. A and B launches take their shape's side; C's take the name's, whose
    counted time is half on each side: mixed, on neither. 2 ms compute, 2 ms memory, 2 ms mixed:
    the run is mixed. Without launch shapes (a summary, a log without grids) all 6 ms are mixed."""
    counted = [("sgemm", "(8, 1, 1)", _GEMM_FLOPS, 40.0), ("sgemm", "(64, 1, 1)", _COPY_FLOPS / 3, 2.0)]
    trace = [("sgemm", grid, 1e6) for grid in ("(8, 1, 1)", "(64, 1, 1)", "(8, 1, 1)", "(64, 1, 1)", "(2, 1, 1)",
                                                "(2, 1, 1)")]
    run = _totals(_window(trace, counted), db)["r"]
    assert run["bound_coverage"] == pytest.approx(2 / 6) and run["bound_coverage_by_name"] == 1.0
    assert run["compute_time_share_by_name"] == pytest.approx(1 / 3)
    assert run["memory_time_share_by_name"] == pytest.approx(1 / 3)
    assert run["bound"] == "mixed"
    assert run["bound_note"].startswith("classed by kernel name: the counters cover 33% of the run's kernel time "
                                        "(2 of 6 launches), and the kernels they name take 100% of it; 33% of that in "
                                        "compute-side kernels, 33% in kernels counted on both sides of the ridge")
    shapeless = _totals(_window([(n, None, t) for n, _, t in trace], [(n, None, f, ai) for n, _, f, ai in counted]),
                        db)["r"]
    assert shapeless["bound"] == "mixed" and shapeless["bound_coverage_by_name"] == 1.0
    assert shapeless["compute_time_share_by_name"] == 0.0 and shapeless["memory_time_share_by_name"] == 0.0


def test_a_counted_launch_shape_decides_over_its_kernels_name(db):
    """The GEMM counted at grid A (1 ms, compute side) and grid B (3 ms, memory side): by name
    alone 75 % of its counted time is memory side, so its name is. The trace has it 6 times at A
    (1 ms each) and once at B (3 ms): A's 6 ms take A's side, B's 3 ms B's. Compute-bound, 67 %
    of 9 ms, where the name alone would make all 9 ms memory side. (The window counted 4 of 9 ms.)"""
    counted = [("sgemm", "(8, 1, 1)", _GEMM_FLOPS, 40.0), ("sgemm", "(64, 1, 1)", _COPY_FLOPS, 2.0)]
    trace = [("sgemm", "(8, 1, 1)", 1e6), ("sgemm", "(64, 1, 1)", 3e6)] + [("sgemm", "(8, 1, 1)", 1e6)] * 5
    run = _totals(_window(trace, counted), db)["r"]
    assert run["bound_coverage"] == pytest.approx(4 / 9) and run["compute_time_share"] == pytest.approx(0.25)
    assert run["bound_coverage_by_name"] == 1.0 and run["compute_time_share_by_name"] == pytest.approx(6 / 9)
    assert run["bound"] == "compute"
    shapeless = _totals(_window([(n, None, t) for n, _, t in trace], [(n, None, f, ai) for n, _, f, ai in counted]),
                        db)["r"]
    assert shapeless["memory_time_share_by_name"] == 1.0 and shapeless["bound"] == "memory"


def test_a_run_counted_over_the_floor_keeps_its_counted_launches_class_and_fills_the_by_name_columns(db):
    """The floor met by the counted launches: no classing by name, but the columns say what the
    names cover, for every answer to read."""
    run = _totals(_one_of_a_trace(0.6e6), db)["r"]
    assert run["bound"] == "compute" and not run["bound_note"].startswith("classed by kernel name")
    assert run["bound_coverage_by_name"] == pytest.approx(1 / 1.6) and run["compute_time_share_by_name"] == 1.0


def test_a_point_far_below_its_roof_is_latency_bound_and_says_so(db):
    kernels = [_kernel("r", "sgemm", duration_ns=1e9, flops_fp32=1e9, dram_bytes=1e9, flops_complete=True)]
    run = _totals(_tables(kernels, [{"run": "r", "gpu_model": V100}]), db)["r"]
    assert run["bound"] == "latency" and run["bound_note"].startswith("below 10%")


@pytest.mark.parametrize("case, kernel, gpu, note", [
    ("incomplete", {"flops_fp32": 1e9, "dram_bytes": 1e8, "flops_complete": False}, V100, "FLOPs incomplete"),
    ("no GPU", {"flops_fp32": 1e9, "dram_bytes": 1e8, "flops_complete": True}, None, "no GPU identified"),
    ("no bytes", {"flops_fp32": 1e9, "flops_complete": True}, V100, "no DRAM byte counts"),
    ("no FLOPs", {"dram_bytes": 1e8}, V100, "no FLOP counts"),
    ("zero FLOPs", {"flops_fp32": 0.0, "dram_bytes": 1e8, "flops_complete": True}, V100, "no floating-point work"),
    ("above roof", {"flops_fp32": 1e12, "dram_bytes": 1e9, "flops_complete": True}, V100, "above a roof"),
])
def test_no_bound_class_without_the_numbers_and_the_note_says_why(db, case, kernel, gpu, note):
    kernels = [_kernel("r", "sgemm", duration_ns=1e3, **kernel)]   # 1e12 FLOP in 1 µs: far above any roof
    run = _totals(_tables(kernels, [{"run": "r", "gpu_model": gpu}]), db)["r"]
    assert run["bound"] is None, case
    assert run["bound_note"].startswith(note), (case, run["bound_note"])


# -- time, transfers, iterations -----------------------------------------------------------------

def test_kernel_time_keeps_transfers_apart_and_a_log_of_transfers_only_has_none(db):
    kernels = [_kernel("a", "sgemm", duration_ns=3e6), _kernel("a", "[CUDA memcpy HtoD]", launch=2, duration_ns=1e6,
                                                               category="memcpy"),
               _kernel("b", "[CUDA memcpy HtoD]", duration_ns=2e6, category="memcpy")]
    runs = _totals(_tables(kernels, [{"run": "a"}, {"run": "b"}]), db)
    assert (runs["a"]["kernel_time_ns"], runs["a"]["transfer_time_ns"], runs["a"]["kernel_launches"]) == (3e6, 1e6, 1)
    assert runs["b"]["kernel_time_ns"] is None and runs["b"]["transfer_time_ns"] == 2e6
    assert runs["a"]["time_source"] == "nsys trace"


def test_iterations_from_the_loss_kernel_normalise_the_time(db):
    """A summary row per kernel (nvprof): 40 launches of the loss's backward kernel = 40 steps."""
    kernels = [{**_kernel("r", "sgemm", duration_ns=8e8), "kind": "summary", "count": 400},
               {**_kernel("r", "void cunn_ClassNLLCriterion_updateGradInput_kernel<float>(float*)", launch=2,
                          duration_ns=2e6), "kind": "summary", "count": 40},
               {**_kernel("r", "void cunn_ClassNLLCriterion_updateOutput_kernel<float, float>(float*)", launch=3,
                          duration_ns=1e6), "kind": "summary", "count": 12}]
    run = _totals(_tables(kernels, [{"run": "r"}], {"k.csv": "nvprof"}), db)["r"]
    assert run["iterations"] == 40 and "updateGradInput" in run["iterations_source"]
    assert run["time_per_iteration_ns"] == pytest.approx(803e6 / 40)


def test_step_ranges_come_before_the_loss_kernel(db):
    kernels = [_kernel("r", "nll_loss_forward_reduce_cuda_kernel_2d", duration_ns=1e6)]
    tables = _tables(kernels, [{"run": "r"}])
    tables["regions"] = schema.conform("regions", pl.DataFrame({
        "run": ["r"] * 4, "kind": ["nvtx"] * 4, "count": [1, 1, 1, 1],
        "name": ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3", "forward"],
        "path": ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#3/forward"]}))
    run = _totals(tables, db)["r"]
    assert run["iterations"] == 3 and run["iterations_source"].startswith("3 instances of 3 step range name(s)")


def test_no_iteration_count_is_guessed(db):
    run = _totals(_tables([_kernel("r", "sgemm", duration_ns=1e6)], [{"run": "r"}]), db)["r"]
    assert run["iterations"] is None and run["time_per_iteration_ns"] is None


# -- cut short -------------------------------------------------------------------------------------

@pytest.mark.parametrize("code, family, cut", [
    ("nvprof.timeout", "nvprof", True), ("nvprof.job-killed", "nvprof", True), ("nsys.truncated", "nsys", True),
    ("ncu.truncated", "ncu", True), ("nsys.truncated-name", "nsys", False), ("smi.truncated", "nvidia-smi", False),
    ("dcgm.truncated", "dcgm", False), ("nvprof.invalid-records", "nvprof", False)])
def test_which_warnings_mean_the_run_was_cut_short(code, family, cut):
    assert cutshort.is_cut_short(code, family) is cut


def test_a_warning_belongs_to_the_session_its_line_is_in():
    sessions = [(1, "q3.out#1"), (40, "q3.out#2"), (90, "q3.out#3")]
    assert [cutshort.run_at_line(sessions, line) for line in (None, 1, 39, 40, 95)] == \
        ["q3.out#1", "q3.out#1", "q3.out#1", "q3.out#2", "q3.out#3"]


NVPROF_SESSION = """==%(pid)d== NVPROF is profiling process %(pid)d, command: ./app %(n)d
%(timeout)s==%(pid)d== Profiling application: ./app %(n)d
==%(pid)d== Profiling result:
            Type  Time(%%)      Time     Calls       Avg       Min       Max  Name
 GPU activities:  100.00%%  1.0000ms        10  100.00us  90.000us  110.00us  kern(int)
"""


def test_a_timed_out_session_of_a_concatenated_log_is_the_one_cut_short(tmp_path):
    import roofreport

    text = "".join(NVPROF_SESSION % {"pid": pid, "n": n, "timeout": t} for pid, n, t in (
        (101, 1, ""), (102, 5, "==102== Execution timeout, stopping the application...\n"), (103, 10, "")))
    log = tmp_path / "q.out"
    log.write_text(text + "slurmstepd: error: *** JOB 7 ON gpu-1 CANCELLED AT 2019-04-16T02:11:11 "
                          "DUE TO TIME LIMIT ***\n", encoding="utf-8")
    runs = roofreport.read_file(log).runs.sort("session")
    assert runs["cut_short"].to_list() == [False, True, True]
    reasons = runs["cut_short_reason"].to_list()
    assert reasons[1] == "nvprof: Execution timeout, stopping the application... [q.out line 7]"
    assert reasons[2].startswith("the batch system ended the job: slurmstepd: error: *** JOB 7")
    assert "DUE TO TIME LIMIT" in reasons[2]
    assert runs["kernel_time_ns"].to_list() == [1e6, 1e6, 1e6]


# -- GPUs compared ---------------------------------------------------------------------------------

def _runs(rows: list[dict]) -> pl.DataFrame:
    base = {"model": "alexnet", "experiment": "full", "params": json.dumps({"batch_size": 16}), "batch_size": 16,
            "cut_short": False}
    # (a run whose GPU something named: its gpu_evidence; the comparison leaves the others out)
    return schema.conform("runs", pl.DataFrame([{**base, "gpu_evidence": "log" if r.get("gpu_label") else None, **r}
                                                for r in rows], infer_schema_length=None))


def test_speedup_per_iteration_when_both_count_iterations():
    runs = _runs([{"run": "k", "gpu_label": "K80", "kernel_time_ns": 9e9, "iterations": 100,
                   "time_per_iteration_ns": 9e7, "cut_short": True},
                  {"run": "p", "gpu_label": "P40", "kernel_time_ns": 6e9, "iterations": 200,
                   "time_per_iteration_ns": 3e7, "cut_short": True}])
    pairs = speedup.speedups(speedup.gpu_pivot(runs))
    row = pairs.row(0, named=True)
    assert (row["faster"], row["slower"], row["basis"]) == ("P40", "K80", speedup.PER_ITERATION)
    assert row["speedup"] == pytest.approx(3.0)      # 90 ms / 30 ms per iteration, not 9 s / 6 s


def test_whole_runs_compare_only_when_neither_was_cut_short():
    complete = [{"run": "k", "gpu_label": "K80", "kernel_time_ns": 8e9},
                {"run": "p", "gpu_label": "P40", "kernel_time_ns": 2e9}]
    row = speedup.speedups(speedup.gpu_pivot(_runs(complete))).row(0, named=True)
    assert (row["basis"], row["speedup"]) == (speedup.WHOLE_RUN, pytest.approx(4.0))
    cut = [complete[0],
           {**complete[1], "cut_short": True, "cut_short_reason": "nvprof: Execution timeout [p line 4]"}]
    row = speedup.speedups(speedup.gpu_pivot(_runs(cut))).row(0, named=True)
    assert not row["comparable"] and row["speedup"] is None and row["reason_kind"] == speedup.CUT_SHORT
    assert row["reason"].startswith("the P40 run was cut short (nvprof: Execution timeout [p line 4])")
    untimed = [complete[0], {"run": "p", "gpu_label": "P40"}]
    row = speedup.speedups(speedup.gpu_pivot(_runs(untimed))).row(0, named=True)
    assert row["reason_kind"] == speedup.NO_TIME and "P40" in row["reason"]


def test_only_the_same_workload_is_compared_and_unknown_gpus_are_left_out():
    runs = _runs([{"run": "k", "gpu_label": "K80", "kernel_time_ns": 8e9},
                  {"run": "p", "gpu_label": "P40", "kernel_time_ns": 2e9, "params": json.dumps({"batch_size": 32})},
                  {"run": "u", "gpu_label": None, "kernel_time_ns": 1e9}])
    assert speedup.gpu_pivot(runs).height == 0


def test_model_summary_is_the_geometric_mean_over_configurations():
    rows = []
    for bs, (k, p) in {4: (2.0, 1.0), 16: (8.0, 1.0), 64: (1.0, 2.0)}.items():
        params = json.dumps({"batch_size": bs})
        rows += [{"run": f"k{bs}", "gpu_label": "K80", "kernel_time_ns": k, "params": params, "batch_size": bs},
                 {"run": f"p{bs}", "gpu_label": "P40", "kernel_time_ns": p, "params": params, "batch_size": bs}]
    summary = speedup.model_summary(speedup.speedups(speedup.gpu_pivot(_runs(rows)))).row(0, named=True)
    assert (summary["faster"], summary["slower"]) == ("P40", "K80")
    assert summary["speedup"] == pytest.approx((2 * 8 * 0.5) ** (1 / 3))
    assert (summary["speedup_min"], summary["speedup_max"]) == (pytest.approx(0.5), pytest.approx(8.0))
    assert (summary["configs"], summary["faster_in"]) == (3, 2)


# -- sweeps ------------------------------------------------------------------------------------------

def test_sweep_series_keep_other_parameters_apart_and_sort_on_x():
    """Two learning rates are two lines, not one zig-zag; batch sizes in numeric order."""
    rows = [{"run": f"r{bs}_{lr}", "gpu_label": "K80", "params": json.dumps({"batch_size": bs, "learning_rate": lr}),
             "batch_size": bs, "kernel_time_ns": float(bs), "iterations": 1, "time_per_iteration_ns": float(bs)}
            for bs in (64, 4, 16) for lr in (0.1, 0.01)]
    out = sweeps.time_sweeps(_runs(rows)).filter(pl.col("param") == "batch_size")
    assert out["series"].n_unique() == 2
    for _, line in out.group_by("series"):
        assert line.sort("x_order")["x"].to_list() == [4, 16, 64]
        assert line.sort("x_order")["samples_per_s"].to_list() == pytest.approx([1e9] * 3)
    assert sorted(out["config"].unique().to_list()) == ["full · lr 0.01", "full · lr 0.1"]


def test_a_swept_word_is_ranked_by_name():
    rows = [{"run": o, "gpu_label": "RTX", "params": json.dumps({"optimizer": o}), "kernel_time_ns": 1.0}
            for o in ("sgd", "adam", "adagrad")]
    out = sweeps.series_of(_runs(rows))
    assert out.sort("x_order")["x_label"].to_list() == ["adagrad", "adam", "sgd"] and out["x"].is_null().all()


# -- estimate vs measured: the same span or nothing ----------------------------------------------------

@pytest.mark.parametrize("span, run, measured, why", [
    ("iteration", {"kernel_time_ns": 9e9, "cut_short": True, "cut_short_reason": "timeout"}, None,
     "no iteration count"),
    ("iteration", {"kernel_time_ns": 9e9, "iterations": 90, "iterations_source": "x", "time_per_iteration_ns": 1e8},
     1e8, None),
    ("run", {"kernel_time_ns": 9e9, "cut_short": True, "cut_short_reason": "timeout"}, None, "cut short"),
    ("run", {"kernel_time_ns": 9e9, "cut_short": False}, 9e9, None),
    ("forward", {"kernel_time_ns": 9e9, "iterations": 90, "time_per_iteration_ns": 1e8}, None, "forward pass"),
    ("forward", {"kernel_time_ns": 9e9, "iterations": 90, "time_per_iteration_ns": 1e8, "phase": "inference"},
     1e8, None),
    ("iteration", {}, None, "no kernel time"),
])
def test_estimates_compare_the_same_span_or_say_why_not(db, span, run, measured, why):
    estimate = Estimate("r", 1e12, None, "fp32", "test", span)
    row = compare._estimate_row(estimate, run, db.get(V100))
    assert row["measured_time_ns"] == measured
    if why is None:
        assert row["comparable"] and row["ratio"] == pytest.approx(measured / row["est_time_ns"])
    else:
        assert not row["comparable"] and row["ratio"] is None and why in row["not_comparable"]


# -- on real exports: one profile in several files ----------------------------------------------------

def test_a_profile_exported_twice_counts_once_and_its_steps_once():
    """derived/: the same ncu report as details and raw CSV (one run, two files), the same nsys
    report as SQLite and CSV with ten NVTX `iterationN` ranges."""
    import roofreport
    from tests.conftest import corpus_path

    data = roofreport.read(corpus_path("derived"))
    runs = {r["run"]: r for r in data.runs.iter_rows(named=True)}
    julia = data.kernels.filter((pl.col("run") == "ncu/julia_indexspaces_profile")
                                & pl.col("dram_bytes").is_not_null())
    # the raw page as CSV and as text count the bytes; the per-kernel summary gives the DRAM rate
    # and duration only: its bytes are derived (rate x duration), to the printed digits
    derived = julia.filter(pl.col("dram_bytes_derived").fill_null(False))
    assert derived["source_file"].unique().to_list() == [str(corpus_path("derived", "ncu", "julia_indexspaces_profile.summary.txt"))]
    julia = julia.filter(~pl.col("dram_bytes_derived").fill_null(False))
    per_file = julia.group_by("source_file").agg(pl.col("dram_bytes").sum(), pl.len())
    assert per_file.height == 2 and per_file["len"].to_list() == [2, 2]
    assert derived["dram_bytes"].sum() == pytest.approx(per_file["dram_bytes"][0], rel=2e-3)
    run = runs["ncu/julia_indexspaces_profile"]
    assert run["counted_kernels"] == 2 and run["dram_bytes"] == per_file["dram_bytes"][0]
    torch = runs["nsys/flame_torch_rtxa4500"]
    assert torch["iterations"] == 10 and torch["iterations_source"].startswith("10 instances of 10 step range")
    assert torch["time_per_iteration_ns"] == pytest.approx(torch["kernel_time_ns"] / 10)


def test_a_run_whose_counted_kernels_have_no_time_has_no_class(db):
    """nvprof `--metrics` alone (sample_logs' K80 conv run): FLOPs and bytes per kernel, no time.
    Right of the ridge in aggregate says nothing of where the time sits (issue 31 item 2), so no
    class, and the note says why and how far from the ridge the aggregate is."""
    kernels = [_kernel("r", "sgemm", flops_fp32=40e9, dram_bytes=1e9, flops_complete=True)]
    run = _totals(_tables(kernels, [{"run": "r", "gpu_model": V100}], {"k.csv": "nvprof"}), db)["r"]
    assert run["arithmetic_intensity"] == pytest.approx(40.0) and run["ridge_ai"] == pytest.approx(15.7e12 / 900e9)
    assert run["bound"] is None and run["compute_time_share"] is None
    assert run["bound_note"] == ("no counted kernel has a time, so where the run's time sits is not known "
                                 "(intensity 2.3× the ridge point)")
