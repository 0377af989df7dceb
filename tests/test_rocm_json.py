"""rocprof (v1)'s Chrome-trace JSON (`results.json`): the real spatter trace of the corpus (an
MI210, kernels only) counted against Python's json module, and a `--sys-trace` trace written
here true to rocprofiler's tblextr.py/sqlitedb.py (HIP and HSA API lanes, COPY, roctx ranges,
barrier lanes, every value a string, four gfx906 agents), told apart from Kineto's traces."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from roofreport.families import pytorch, rocm
from roofreport.families.common.textio import read_head
from tests.conftest import corpus_path, parse_path

SPATTER = ("rocm", "rocprof", "hpcgarage__spatter__build-debug_results.json")


def _lane_events(document: dict, lane: str) -> list[dict]:
    pids = {str(e["pid"]) for e in document["traceEvents"]
            if e.get("ph") == "M" and e.get("name") == "process_name" and e["args"]["name"] == lane}
    return [e for e in document["traceEvents"] if e.get("ph") == "X" and str(e.get("pid")) in pids]


def test_spatter_trace_kernels_counted_as_the_json_module_counts_them():
    path = corpus_path(*SPATTER)
    document = json.loads(path.read_text())
    events = _lane_events(document, "GPU8")
    result = parse_path(path, "rocm")
    assert result.error is None and result.variant == "rocprof results json"
    kernels = result.tables["kernels"]
    assert kernels.height == len(events) == 520
    by_name = {name: sum(int(e["args"]["DurationNs"]) for e in events if e["name"] == name)
               for name in {e["name"] for e in events}}
    read = dict(kernels.group_by("name").agg(pl.col("duration_ns").sum()).iter_rows())
    assert read == pytest.approx(by_name)
    assert set(kernels["device"]) == {"8"}            # gpu-id, the HSA node (CPUs take 0-7)
    assert kernels["grid"][0] == "(16777215, 1, 1)"   # grd 4294967040 work-items / wgr 256
    # the source line is the event's place in traceEvents (the empty first object is place 1)
    first = next(i for i, e in enumerate(document["traceEvents"], start=1) if e.get("ph") == "X")
    assert kernels["source_line"].min() == first


def test_spatter_trace_names_the_gpu_from_its_agents():
    result = parse_path(corpus_path(*SPATTER), "rocm")
    hints = result.hints
    assert (hints.device_name, hints.compute_capability, hints.sm_count) == ("AMD Instinct MI210", "gfx90a", 104)


def _event(lane: int, name: str, begin: int, end: int, args: dict) -> dict:
    """One X event as sqlitedb.py's dump_json writes it: every value a string, ts/dur in µs."""
    return {"ph": "X", "name": name, "pid": str(lane), "tid": "31337", "ts": str(begin // 1000),
            "dur": str((end - begin) // 1000),
            "args": {"BeginNs": str(begin), "EndNs": str(end), **{key: str(v) for key, v in args.items()},
                     "DurationNs": str(end - begin)}}


def _call(name: str, tid: int = 4242) -> dict:
    return {"Name": name, "pid": 4242, "tid": tid}


def _label(pid: int, name: str, index: int) -> dict:
    return {"args": {"name": name}, "ph": "M", "pid": pid, "name": "process_name", "sort_index": index}


def sys_trace() -> str:
    """A `rocprof --sys-trace --roctx-trace` results.json of a Kokkos code on a 4 x gfx906 node."""
    lanes = [(0, "Markers and Ranges"), (2, "CPU HIP API"), (3, "CPU HSA API"), (1, "COPY")]
    lanes += [pid for gpu in range(4) for pid in ((6 + gpu, f"GPU{gpu}"), (518 + gpu, f"GPU Barriers{gpu}"))]
    kernel = "void Kokkos::Impl::hip_parallel_launch_local_memory<Kokkos::Impl::ParallelFor<Axpy, Kokkos::RangePolicy<>, Kokkos::HIP>, 1024u, 1u>(Kokkos::Impl::ParallelFor<Axpy, Kokkos::RangePolicy<>, Kokkos::HIP>) [clone .kd]"
    dispatch = {"gpu-id": 1, "queue-id": 0, "queue-index": 4, "pid": 4242, "tid": 4242, "grd": 1048576, "wgr": 256,
                "lds": 0, "scr": 0, "arch_vgpr": 8, "accum_vgpr": 0, "sgpr": 16, "wave_size": 64, "sig": "0x0",
                "obj": "0x7f00deadbeef", "DispatchNs": 0}
    events = [
        _event(0, "Kokkos::parallel_for Axpy", 1_000_000, 1_900_000, _call("Kokkos::parallel_for Axpy")),
        _event(2, "hipMemcpy", 1_010_000, 1_400_000, _call("hipMemcpy")),
        _event(2, "hipLaunchKernel", 1_500_000, 1_520_000, _call("hipLaunchKernel")),
        _event(3, "hsa_queue_create", 900_000, 950_000, _call("hsa_queue_create")),
        _event(1, "CopyHostToDevice", 1_100_000, 1_380_000, _call("CopyHostToDevice", 0)),
        _event(1, "FillBuffer", 1_390_000, 1_395_000, _call("FillBuffer", 0)),
        _event(7, kernel, 1_530_000, 1_830_000, {"KernelName": kernel, **dispatch, "DispatchNs": 1_525_000}),
        _event(7, kernel, 1_840_000, 2_150_000, {"KernelName": kernel, **dispatch, "queue-index": 6, "DispatchNs": 1_835_000}),
        _event(519, "<barrier packet>", 1_830_000, 1_840_000, _call("<barrier packet>", 0)),
        {"ts": 1510, "ph": "s", "cat": "DataFlow", "id": 0, "pid": 2, "tid": 31337, "name": "dep"},
        {"ts": 1530, "ph": "t", "cat": "DataFlow", "id": 0, "pid": 7, "tid": 0, "name": "dep"},
    ]
    agents = {}
    for number in range(1, 6):
        cpu = number == 1
        agents.update({f"Agent{number}.Name": "AMDEPYC7402" if cpu else "gfx906:sramecc+:xnack-",
                       f"Agent{number}.MarketingName": "AMDEPYC7402 24-CoreProcessor" if cpu else "AMDRadeonInstinctMI50",
                       f"Agent{number}.DeviceType": "CPU" if cpu else "GPU", f"Agent{number}.Node": str(number - 1),
                       f"Agent{number}.ComputeUnit": "48" if cpu else "60"})
    lines = ['{ "traceEvents":[{}'] + [f",{json.dumps(_label(pid, name, i))}" for i, (pid, name) in enumerate(lanes)]
    lines += [f",{json.dumps(e)}" for e in events]
    return "\n".join(lines) + '\n],\n"otherData": ' + json.dumps({"CMD": "rocminfo", **agents}, indent=2) + "\n}"


@pytest.fixture
def sys_trace_result(tmp_path: Path):
    path = tmp_path / "results.json"
    path.write_text(sys_trace())
    return parse_path(path, "rocm")


def test_sys_trace_every_lane_read(sys_trace_result):
    result = sys_trace_result
    assert result.error is None and not result.warnings
    kernels = result.tables["kernels"]
    assert kernels.height == 2 and kernels["duration_ns"].to_list() == [300_000, 310_000]
    assert kernels["device"].to_list() == ["1", "1"]
    activities = result.tables["activities"]
    kinds = dict(activities.group_by("kind").len().iter_rows())
    assert kinds == {"kernel": 2, "memcpy": 1, "memset": 1, "barrier": 1}
    copy = activities.filter(activities["kind"] == "memcpy").row(0, named=True)
    assert (copy["name"], copy["start_ns"], copy["duration_ns"]) == ("CopyHostToDevice", 1_100_000, 280_000)
    api = result.tables["api_calls"]
    assert sorted(api["name"]) == ["hipLaunchKernel", "hipMemcpy", "hsa_queue_create"]
    assert api.filter(api["name"] == "hipMemcpy")["total_ns"].to_list() == [390_000]
    regions = result.tables["regions"]
    assert regions.select("kind", "name", "duration_ns").rows() == [("nvtx", "Kokkos::parallel_for Axpy", 900_000)]
    # the dispatch's resources, as results.csv's: into metrics
    metrics = result.tables["metrics"]
    assert set(metrics["metric"]) >= {"arch_vgpr", "sgpr", "wave_size"}


def test_sys_trace_names_the_gpu_its_kernels_ran_on(sys_trace_result):
    hints = sys_trace_result.hints
    assert (hints.device_name, hints.compute_capability, hints.sm_count) == ("AMD Radeon Instinct MI50", "gfx906", 60)


def test_a_lane_of_no_known_kind_is_warned_not_lost(tmp_path: Path):
    text = sys_trace().replace('"name": "CPU HSA API"', '"name": "CPU KFD API"')
    path = tmp_path / "results.json"
    path.write_text(text)
    result = parse_path(path, "rocm")
    assert [w.code for w in result.warnings] == ["rocm.unknown-lane"]
    assert "1 events of lane 'CPU KFD API'" in result.warnings[0].message
    assert result.error is not None            # rows left out: the file is partial, never "ok"
    assert result.tables["api_calls"].height == 2 and result.tables["kernels"].height == 2


def test_a_cut_trace_is_an_error_with_its_line(tmp_path: Path):
    text = sys_trace()
    path = tmp_path / "results.json"
    path.write_text(text[: len(text) // 2])
    result = parse_path(path, "rocm")
    assert result.error is not None and result.error.line is not None and result.error.line > 1


def test_kineto_and_rocprof_traces_are_told_apart(tmp_path: Path):
    rocprof = tmp_path / "results.json"
    rocprof.write_text(sys_trace())
    kineto = tmp_path / "trace.json"
    kineto.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [], "traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0}]}))
    assert rocm.sniff_trace_json(read_head(rocprof)) == "rocprof results json"
    assert pytorch.sniff_kineto(read_head(rocprof)) is None
    assert rocm.sniff_trace_json(read_head(kineto)) is None
    # a head that starts with lanes, not the empty event (an edited or re-indented trace)
    relabelled = tmp_path / "relabelled.json"
    relabelled.write_text(sys_trace().replace('"traceEvents":[{}\n,', '"traceEvents":['))
    assert rocm.sniff_trace_json(read_head(relabelled)) == "rocprof results json"
