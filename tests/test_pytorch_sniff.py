"""Sniffing PyTorch profiler output from the bounded head: Kineto traces (plain and gzip, read
from the decompressed head) and key_averages tables are recognised; other JSON, other Chrome
traces and other gzip files are not claimed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from roofreport.pipeline.sniff import sniff
from tests.conftest import CORPUS, corpus_path

KINETO = CORPUS / "kineto"


@pytest.mark.corpus
@pytest.mark.parametrize("name, variant", [
    ("h100-resnet18/kineto_resnet18_b32.json", "kineto trace (schema 1)"),
    ("h100-resnet18/key_averages_resnet18_b32.txt", "key_averages table"),
    ("hta-df_index_resolver/df_index_resolver.json.gz", "kineto trace (schema 1), gzip"),
    ("hta-trace_filter/sampled_rank-0.json.gz", "kineto trace (schema 1), gzip"),
    ("hta-critical_path_alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
     "kineto trace (schema 1), gzip"),
])
def test_corpus_files_are_recognised(name, variant):
    found = sniff(corpus_path("kineto", *name.split("/")))
    assert (found.family, found.variant) == ("pytorch", variant)


def _file(tmp_path: Path, name: str, content: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def test_a_trace_whose_events_come_first_and_a_pt_trace_name(tmp_path):
    events = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 1,
               "pid": 1, "tid": 1, "args": {"correlation": 1}}]
    path = _file(tmp_path, "host_123.1700000000.pt.trace.json", json.dumps({"traceEvents": events}))
    assert sniff(path).variant == "kineto trace"


@pytest.mark.parametrize("name, content", [
    ("manifest.json", {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution"}),
    ("chrome.json", {"traceEvents": [{"cat": "devtools.timeline", "ph": "X", "name": "Paint",
                                      "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}),
    ("package.json", {"name": "x", "version": "1.0.0"}),
    ("quoted.json", {"log": "==PROF== Connected to process 1\n==PROF== Disconnected"}),
    ("list.json", [{"name": "aten::add", "ph": "X", "ts": 1, "dur": 1}]),
])
def test_other_json_is_not_claimed(tmp_path, name, content):
    found = sniff(_file(tmp_path, name, json.dumps(content)))
    assert found.family is None and found.skip_reason == "not a profiler log (JSON data)"


def test_gzip_of_something_else_is_not_claimed(tmp_path):
    found = sniff(_file(tmp_path, "gputrace.csv.gz", gzip.compress(b"Start (ns),Duration (ns)\n1,2\n")))
    assert found.family is None


def test_a_gzip_trace_is_told_from_its_decompressed_head(tmp_path):
    document = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100"}],
                "traceEvents": []}
    found = sniff(_file(tmp_path, "rank0.trace", gzip.compress(json.dumps(document).encode())))
    assert (found.family, found.variant) == ("pytorch", "kineto trace (schema 1), gzip")


def test_a_table_amid_program_output(tmp_path):
    text = "\n".join([
        "epoch 1 loss 0.3",
        "----------------  ------------  ------------  ",
        "            Name      Self CPU    # of Calls  ",
        "----------------  ------------  ------------  ",
        "        aten::mm       1.000ms             1  ",
        "----------------  ------------  ------------  ",
        "Self CPU time total: 1.000ms", ""])
    assert sniff(_file(tmp_path, "train.log", text)).variant == "key_averages table"
    other = text.replace("Self CPU", "Total Time").replace("# of Calls", "Instances")
    assert sniff(_file(tmp_path, "other.log", other)).family != "pytorch"
