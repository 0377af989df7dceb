"""PyTorch profiler (Kineto) traces: every real trace of the corpus gives exactly the kernel
events and kernel time its JSON holds (counted here independently with `json`, and against
the corpus MANIFEST), its memcpy/memset and CUDA calls, its profiler steps and annotations,
its GPU and its rank; damaged traces keep what was read before the damage."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

import polars as pl
import pytest

from roofreport.families.pytorch.kineto import parse_kineto
from roofreport.pipeline.ingest import ingest
from tests.conftest import CORPUS, corpus_path, parse_path

KINETO = CORPUS / "kineto"
TRACES = sorted(p for p in KINETO.rglob("*") if p.name.endswith((".json", ".json.gz"))) \
    if KINETO.is_dir() else []


def _events(path: Path) -> list[dict]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        return json.load(fh)["traceEvents"]


def _of(events: list[dict], category: str) -> list[dict]:
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == category]


def _manifest() -> dict[str, tuple[int, int]]:
    """file -> (kernel events, kernel time in whole us) as the corpus MANIFEST states them."""
    rows = corpus_path("kineto", "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
    found = {}
    for row in rows[1:]:
        cells = row.split("\t")
        numbers = re.search(r"([\d,]+) kernel events\D*?([\d,]+) us", cells[-1])
        if numbers:
            found[cells[0]] = tuple(int(n.replace(",", "")) for n in numbers.groups())
    return found


@lru_cache(maxsize=None)
def _facts(path: Path) -> dict:
    """What the JSON holds, counted here with `json` alone (the 54 MB trace is decoded once)."""
    events = _events(path)
    moves = _of(events, "gpu_memcpy") + _of(events, "gpu_memset")
    calls = _of(events, "cuda_runtime") + _of(events, "cuda_driver")
    kernels = _of(events, "kernel")
    return {
        "kernels": len(kernels), "kernel_ns": sum(round(e["dur"] * 1000) for e in kernels),
        "memcpy": len(_of(events, "gpu_memcpy")), "memset": len(_of(events, "gpu_memset")),
        "bytes": sum(e["args"]["bytes"] for e in moves),
        "calls": len(calls), "call_ns": sum(round(e["dur"] * 1000) for e in calls),
    }


@pytest.fixture(scope="module")
def parsed():
    return {path: parse_path(path, "pytorch") for path in TRACES}


def test_the_corpus_has_the_traces_the_issue_names():
    corpus_path("kineto")
    assert len(TRACES) == 5


@pytest.mark.corpus
@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_every_kernel_event_and_its_time(path, parsed):
    result, facts = parsed[path], _facts(path)
    assert result.error is None
    table = result.tables["kernels"]
    assert table.height == facts["kernels"]
    assert set(table["kind"]) == {"launch"} and set(table["count"]) == {1}
    # Whole nanoseconds of every event's `dur` (microseconds with up to three decimals).
    assert table["duration_ns"].sum() == facts["kernel_ns"]
    count, micros = _manifest()[path.relative_to(KINETO).as_posix()]
    assert (table.height, round(table["duration_ns"].sum() / 1000)) == (count, micros)
    # The activities hold the same launches (kernels join them on source_line).
    activities = result.tables["activities"].filter(pl.col("kind") == "kernel")
    assert activities["source_line"].to_list() == table["source_line"].to_list()


@pytest.mark.corpus
@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_memory_operations_and_cuda_calls(path, parsed):
    result, facts = parsed[path], _facts(path)
    kinds = Counter(result.tables["activities"]["kind"].to_list())
    assert (kinds["memcpy"], kinds["memset"]) == (facts["memcpy"], facts["memset"])
    moves = result.tables["activities"].filter(pl.col("kind").is_in(["memcpy", "memset"]))
    assert moves["bytes"].sum() == facts["bytes"]
    api = result.tables["api_calls"]
    assert api.height == facts["calls"] and set(api["kind"]) == {"trace"}
    assert api["total_ns"].sum() == facts["call_ns"]


@pytest.mark.corpus
def test_launch_columns_are_the_events_own():
    path = corpus_path("kineto", "h100-resnet18", "kineto_resnet18_b32.json")
    events = _events(path)
    result = parse_kineto(path, "kineto trace")
    first = next(i for i, e in enumerate(events, 1) if e.get("cat") == "kernel")
    event = events[first - 1]
    row = result.tables["kernels"].filter(pl.col("source_line") == first).row(0, named=True)
    args = event["args"]
    assert row["name"] == event["name"]
    assert row["grid"] == "({}, {}, {})".format(*args["grid"])
    assert row["block"] == "({}, {}, {})".format(*args["block"])
    assert (row["stream"], row["context"]) == (args["stream"], args["context"])
    assert row["device"] == "NVIDIA H100 80GB HBM3 (0)"
    activity = result.tables["activities"].filter(pl.col("source_line") == first).row(0, named=True)
    assert activity["correlation_id"] == args["correlation"]
    launch = result.tables["metrics"].filter(pl.col("launch_id") == first)
    assert dict(launch.select("metric", "value").iter_rows()) == {
        name: args[name] for name in ("registers per thread", "shared memory", "blocks per SM",
                                      "warps per SM", "est. achieved occupancy %")}
    origin = int(min(e["ts"] for e in events if e.get("ph") == "X" and "ts" in e and e.get("cat")
                     in ("kernel", "cpu_op", "cuda_runtime", "cuda_driver", "gpu_memset",
                         "user_annotation", "gpu_user_annotation")))
    assert activity["start_ns"] == round((event["ts"] - origin) * 1000)


@pytest.mark.corpus
def test_the_gpu_comes_from_device_properties():
    path = corpus_path("kineto", "h100-resnet18", "kineto_resnet18_b32.json")
    assert parse_kineto(path, "kineto trace").hints.device_name == "NVIDIA H100 80GB HBM3"
    data = ingest([path.parent], jobs=1)
    runs = data["runs"].filter(pl.col("tool").str.contains("pytorch"))
    assert runs["gpu"].to_list() == ["NVIDIA H100 80GB HBM3"]
    assert runs["gpu_model"][0] is not None


@pytest.mark.corpus
def test_every_profiler_step_is_a_region_the_last_one_too(parsed):
    path = corpus_path("kineto", "hta-df_index_resolver", "df_index_resolver.json.gz")
    events = _events(path)
    steps = sorted((e["name"], round(e["dur"] * 1000)) for e in events
                   if e.get("ph") == "X" and re.fullmatch(r"ProfilerStep#\d+", e.get("name", "")))
    regions = parsed[path].tables["regions"]
    found = regions.filter(pl.col("kind") == "step").sort("name")
    assert list(zip(found["name"], found["duration_ns"])) == steps
    assert [name for name, _ in steps] == [f"ProfilerStep#{i}" for i in range(2, 7)]
    # Kernels launched during the last step are among the kernels read.
    last = max((e for e in events if e.get("name") == "ProfilerStep#6"), key=lambda e: e["dur"])
    launched = {e["args"]["correlation"] for e in _of(events, "cuda_runtime")
                if last["ts"] <= e["ts"] < last["ts"] + last["dur"]}
    lines = [i for i, e in enumerate(events, 1) if e.get("cat") == "kernel"
             and e["args"]["correlation"] in launched]
    assert lines
    kernels = parsed[path].tables["kernels"]
    assert kernels.filter(pl.col("source_line").is_in(lines)).height == len(lines)


@pytest.mark.corpus
def test_annotations_and_operators_are_regions_with_their_paths(parsed):
    path = corpus_path("kineto", "h100-resnet18", "kineto_resnet18_b32.json")
    events, regions = _events(path), parsed[path].tables["regions"]
    annotations = regions.filter(pl.col("kind") == "annotation")
    assert sorted(annotations["name"]) == sorted(e["name"] for e in _of(events, "user_annotation"))
    gpu = regions.filter(pl.col("kind") == "gpu_annotation")
    assert gpu.height == len(_of(events, "gpu_user_annotation"))
    operators = regions.filter(pl.col("kind") == "operator")
    assert operators["count"].sum() == len(_of(events, "cpu_op"))
    # Each kind nests in itself only: top-level operators hold no other operator's time twice.
    top = operators.filter(~pl.col("path").str.contains("/", literal=True))
    assert "aten::conv2d" in top["name"].to_list()
    assert operators.filter(pl.col("path").str.ends_with("/aten::cudnn_convolution")).height


@pytest.mark.corpus
def test_kernels_carry_the_annotation_they_were_launched_in(parsed):
    """Checked independently: a kernel's launch call (same correlation id) starts inside the
    `Optimizer.step#SGD.step` annotation on the launching thread."""
    path = corpus_path("kineto", "h100-resnet18", "kineto_resnet18_b32.json")
    events = _events(path)
    steps = [e for e in _of(events, "user_annotation") if e["name"] == "Optimizer.step#SGD.step"]
    calls = {e["args"]["correlation"]: e for e in _of(events, "cuda_runtime") + _of(events, "cuda_driver")}
    inside = set()
    for i, kernel in enumerate(events, 1):
        if kernel.get("cat") != "kernel":
            continue
        call = calls[kernel["args"]["correlation"]]
        if any(s["tid"] == call["tid"] and s["ts"] <= call["ts"] < s["ts"] + s["dur"] for s in steps):
            inside.add(i)
    kernels = parsed[path].tables["kernels"]
    tagged = set(kernels.filter(pl.col("region") == "Optimizer.step#SGD.step")["source_line"])
    assert inside and tagged == inside


@pytest.mark.corpus
def test_two_ranks_of_one_job_are_two_runs():
    folder = corpus_path("kineto", "hta-trace_filter")
    ranks = {}
    for path in sorted(folder.glob("*.json.gz")):
        hints = parse_kineto(path, "kineto trace").hints
        ranks[path.name] = (hints.rank, hints.world_size)
    assert ranks == {"sampled_rank-0.json.gz": (0, 128), "sampled_rank-1.json.gz": (1, 128)}
    data = ingest([folder], jobs=1)
    assert data["runs"].height == 2
    assert data["kernels"].group_by("run").len()["len"].sort().to_list() == [1104, 1154]


# -- layouts and damage ------------------------------------------------------------------------

def _write(tmp_path: Path, name: str, document: dict | str, compress: bool = False) -> Path:
    text = document if isinstance(document, str) else json.dumps(document)
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
    return path


def _trace(events: list[dict], **meta) -> dict:
    return {"schemaVersion": 1, **meta, "traceEvents": events}


def _kernel(ts: float, dur: float, name: str = "k", cat: str = "kernel", **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": 7, "correlation": 1, "grid": [2, 1, 1],
                     "block": [64, 1, 1], **args}}


def test_torch_1_8_capitalised_categories(tmp_path):
    events = [_kernel(10, 2.5, cat="Kernel"),
              {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
               "ts": 9, "dur": 1, "args": {"correlation": 1}},
              {"ph": "X", "cat": "Operator", "name": "aten::add", "pid": 1, "tid": 1, "ts": 8, "dur": 3},
              {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": "stream 7",
               "ts": 20, "dur": 1, "args": {"bytes": 4096}}]
    result = parse_kineto(_write(tmp_path, "old.pt.trace.json", _trace(events)), "kineto trace")
    assert result.error is None
    assert result.tables["kernels"]["duration_ns"].to_list() == [2500.0]
    assert result.tables["activities"].filter(pl.col("kind") == "memcpy")["bytes"].to_list() == [4096.0]
    assert result.tables["api_calls"]["name"].to_list() == ["cudaLaunchKernel"]
    assert result.tables["regions"]["name"].to_list() == ["aten::add"]


def test_a_trace_without_metadata_or_grid(tmp_path):
    kernel = _kernel(1000.25, 3.0)
    del kernel["args"]["grid"], kernel["args"]["block"], kernel["args"]["device"]
    kernel["pid"] = 2
    result = parse_kineto(_write(tmp_path, "t.json", {"traceEvents": [kernel]}), "kineto trace")
    row = result.tables["kernels"].row(0, named=True)
    assert (row["grid"], row["block"], row["device"]) == (None, None, "2")
    assert result.hints.device_name is None and result.hints.rank is None


def test_a_cut_trace_keeps_the_events_before_the_cut(tmp_path):
    events = [_kernel(10.0 + i, 1.0, name=f"k{i}") for i in range(50)]
    text = json.dumps(_trace(events, deviceProperties=[{"id": 0, "name": "NVIDIA A100-SXM4-40GB"}]),
                      indent=2)
    cut = text[: text.index('"k30"')]
    result = parse_kineto(_write(tmp_path, "cut.json", cut), "kineto trace")
    assert result.tables["kernels"].height == 30
    assert result.error is not None and result.error.line == cut.count("\n") + 1
    assert "ends early" in result.error.message
    assert result.hints.device_name == "NVIDIA A100-SXM4-40GB"


def test_a_cut_gzip_stream_is_read_up_to_the_cut(tmp_path):
    events = [_kernel(10.0 + i, 1.0, name=f"kernel_{i}_" + "x" * 200) for i in range(400)]
    whole = gzip.compress(json.dumps(_trace(events)).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(whole[: len(whole) // 2])
    result = parse_kineto(path, "kineto trace")
    assert 0 < result.tables["kernels"].height < 400
    assert result.error is not None
    assert "pytorch.truncated" in {w.code for w in result.warnings}


@pytest.mark.parametrize("text, what", [
    ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}, }', "bad JSON"),
    ("[1, 2, 3]", "array"),
    ('{"schemaVersion": 1, "traceEvents": {}}', "without traceEvents"),
])
def test_bad_documents_are_refused_with_a_place(tmp_path, text, what):
    result = parse_kineto(_write(tmp_path, "bad.json", text), "kineto trace")
    assert result.error is not None and what in result.error.message
    assert result.error.line == 1 and result.error.column is not None


def test_a_number_longer_than_python_reads_is_bad_json_with_its_place(tmp_path):
    """A 6,126-digit number (a fuzzed trace) passes Python's 4,300-digit limit on integers: the
    events before it are kept and the error names the number's line and column."""
    events = [_kernel(10.0 + i, 1.0, name=f"k{i}") for i in range(50)]
    text = json.dumps(_trace(events), indent=1).replace('"ts": 40.0', '"ts": ' + "7" * 6126)
    result = parse_kineto(_write(tmp_path, "long.json", text), "kineto trace")
    assert result.tables["kernels"].height == 30
    error = result.error
    assert "a number of 6,126 digits" in error.message and error.path.endswith("long.json")
    line = text[:text.index("7" * 6126)]
    assert (error.line, error.column) == (line.count("\n") + 1, len(line) - line.rfind("\n"))


def test_nn_module_events_are_module_regions_by_path(tmp_path):
    """`with_stack`/`with_modules` traces name module calls `nn.Module: Class_i` (python_function)."""
    def call(name, ts, dur):
        return {"ph": "X", "cat": "python_function", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}
    events = [call("nn.Module: Net_0", 0, 100), call("nn.Module: Conv2d_0", 10, 30),
              call("nn.Module: Linear_0", 50, 20), call("torch/nn/modules/module.py(1501): _call_impl", 11, 5),
              call("nn.Module: Net_0", 200, 100), call("nn.Module: Conv2d_0", 210, 30)]
    result = parse_kineto(_write(tmp_path, "m.json", _trace(events)), "kineto trace")
    modules = result.tables["regions"].filter(pl.col("kind") == "module").sort("path")
    assert modules.select("path", "count", "duration_ns").rows() == [
        ("Net_0", 2, 200_000.0), ("Net_0/Conv2d_0", 2, 60_000.0), ("Net_0/Linear_0", 1, 20_000.0)]


def test_events_without_times_or_names_are_kept_without_failing(tmp_path):
    annotation = {"ph": "X", "cat": "user_annotation", "name": "forward", "pid": 1, "tid": 1}
    call = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
            "ts": 5, "dur": 1, "args": {"correlation": 1}}
    kernel = _kernel(10, 1.0)
    del kernel["dur"]
    nameless = _kernel(12, 2.0, correlation=2)
    del nameless["name"]
    result = parse_kineto(_write(tmp_path, "t.json", _trace([annotation, call, kernel, nameless])),
                          "kineto trace")
    assert result.error is None
    assert result.tables["kernels"]["duration_ns"].to_list() == [None, 2000.0]
    assert result.tables["kernels"]["name"].to_list() == ["k", None]
    assert result.tables["regions"]["path"].to_list() == ["forward"]


def test_the_report_lists_steps_and_annotations_before_operators_and_no_nested_operator():
    # The regions section of a PyTorch trace: what the user marked first, the framework's
    # operators after, at the top level only (a trace holds hundreds of nested aten:: calls).
    from roofreport.analysis import regions as region_analysis
    from roofreport.model import derive
    from roofreport.report.sections.activity import RANGE_KIND_ORDER, regions_section

    tables = {"regions": ingest([corpus_path("kineto", "hta-df_index_resolver")], jobs=1).tables["regions"]}
    regions = region_analysis.region_times(derive(tables))
    assert regions.filter((pl.col("kind") == "operator") & pl.col("region").str.contains("/")).height
    section = regions_section(regions)
    listed = [(row[1].text, row[2].text) for row in section.blocks[-1].rows]
    kinds = [kind for kind, _ in listed]
    assert kinds[0] == "step" and "operator" in kinds
    assert kinds == sorted(kinds, key=RANGE_KIND_ORDER.index)
    assert not [region for kind, region in listed if kind == "operator" and "/" in region]
    assert "more ranges not shown" in section.blocks[-1].note


def test_a_runs_kernel_time_comes_from_its_trace_before_its_key_averages_table():
    # h100-resnet18 holds the Kineto trace and the key_averages table printed from the same
    # events: the trace (each launch timed) is the run's time source, and it says so.
    import roofreport

    data = roofreport.read(corpus_path("kineto", "h100-resnet18"))
    row = data.runs.row(0, named=True)
    assert data.runs.height == 1 and row["time_source"] == "PyTorch trace"
    trace = data.kernels.filter(pl.col("source_file").str.ends_with(".json") & (pl.col("kind") == "launch"))
    assert row["kernel_time_ns"] == pytest.approx(trace.filter(
        ~pl.col("category").is_in(["memcpy", "memset"]))["duration_ns"].sum())


def test_region_rows_come_in_one_order_whatever_the_order_of_the_ranges():
    # Ranges of equal time (a demo's ProfilerStep#1..3) once came out in group_by's order, so
    # two builds of the same logs could list them differently.
    from roofreport.analysis import regions as region_analysis
    from roofreport.model import derive
    from tests.conftest import SAMPLE_LOGS

    regions = ingest([SAMPLE_LOGS / "a100" / "lenet5"], jobs=1).tables["regions"]
    assert regions.height > 3
    first = region_analysis.region_times(derive({"regions": regions}))
    for seed in range(3):
        shuffled = regions.sample(fraction=1.0, shuffle=True, seed=seed)
        assert region_analysis.region_times(derive({"regions": shuffled})).equals(first)
