"""Page 1's words (issue 31, item 12): each finding once, GPU peaks compared precision to
precision, caveats only for the GPUs and tools present."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

import roofreport
from roofreport.report.sections.findings import findings
from roofreport.report.sections.methodology import caveats
from tests.conftest import corpus_path

MICRO = Path(__file__).parent / "data" / "gtx1080_micro"


def _sentences(paragraphs) -> list[str]:
    return [s.strip() for p in paragraphs for s in re.split(r"(?<=[.:])\s+(?=[A-Z])", p.text) if len(s.strip()) > 30]


@pytest.fixture(scope="module")
def anoushka():
    return roofreport.analyze(roofreport.read(corpus_path("course", "Anoushka21-Cloud-and-MachineLearning")))


@pytest.mark.corpus
def test_the_tensor_core_peak_is_compared_precision_to_precision(anoushka):
    first = next(p.text for p in findings(anoushka, anoushka.files) if p.text.startswith("proj1:"))
    assert re.search(r"its TF32 tensor peak of 156 TFLOP/s is 9\.9× the V100-SXM2-16GB's FP32 peak of 15\.7 TFLOP/s",
                     first), first
    assert "whose peak is" not in first


@pytest.mark.corpus
def test_page_one_states_each_finding_once(anoushka):
    for analysis in (anoushka, roofreport.analyze(roofreport.read(MICRO))):
        said = Counter(_sentences(findings(analysis, analysis.files)))
        assert not [s for s, n in said.items() if n > 1]


def test_caveats_only_for_the_gpus_and_tools_present():
    nsys = [SimpleNamespace(family="nsys")]
    a100 = caveats(nsys, ["A100-SXM4-40GB"])
    assert not any("K80" in c or "MI250" in c or "AMD" in c or "ncu" in c for c in a100)
    assert any("Datasheet peaks are upper bounds" in c for c in a100)
    k80 = caveats([SimpleNamespace(family="nvprof"), SimpleNamespace(family="nvidia-smi")], ["Tesla K80"])
    assert any("K80 board holds two GPUs" in c for c in k80) and any("nvidia-smi" in c for c in k80)
    assert not any("MI250" in c for c in k80)
    amd = caveats([SimpleNamespace(family="rocm")], ["MI250X"])
    assert any("MI250" in c for c in amd) and any("MFMA" in c for c in amd)
    assert any("--clock-control" in c for c in caveats([SimpleNamespace(family="ncu")], ["V100-SXM2-16GB"]))


BOUND_WORDS = ("memory-bound", "compute-bound", "latency-bound", "neither memory- nor compute-bound")


@pytest.mark.corpus
def test_each_runs_bound_is_said_once_in_its_own_bullet_not_again_in_the_pair_sentence(anoushka):
    """Issue 31 item 12 (stop 38): the pair sentence said "the V100's runs are … at 27 % to 63 % of
    their roof" and the per-GPU bullets said it again. The bullets keep it, with the share of time
    that gave it; the pair bullet says which GPU is faster, by how much and why."""
    paragraphs = [p.text for p in findings(anoushka, anoushka.files)]
    pairs = [p for p in paragraphs if p.startswith("proj1:")]
    assert pairs and not any(word in p for p in pairs for word in BOUND_WORDS)
    runs = anoushka.runs.filter(anoushka.runs["bound"].is_not_null())
    assert runs.height == 3
    for label in runs["label"].to_list():
        said = [p for p in paragraphs if label in p and any(word in p for word in BOUND_WORDS)]
        assert len(said) == 1, (label, said)
        assert "of their counted time in compute-side kernels" in said[0]
