"""`Grammar.classify_line` checks a rule's required literal before its regex (the gate the polars
`classify` puts before a rule that starts with no literal): the kinds are those of trying every
alternative's regex in order, on every line of the corpus's heads and sample_logs, for each
grammar whose `line` rule the sniffers classify line by line."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofreport import grammar
from roofreport.families.common.textio import read_head
from tests.conftest import corpus_path

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def head_lines() -> list[str]:
    folders = [corpus_path("smi"), corpus_path("nvprof"), corpus_path("course", "srikarym-hpml"),
               ROOT / "sample_logs"]
    lines: list[str] = []
    for folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            head = read_head(path)
            if not head.binary:
                lines += head.lines[:400]
    return lines


@pytest.mark.parametrize("name", ["smi", "nvprof", "dcgm"])
def test_a_gated_line_kind_is_the_first_alternative_whose_regex_matches(name, head_lines):
    syntax = grammar.load(name)
    patterns = [(kind, syntax.pattern(kind)) for kind in syntax.alternatives("line")]
    gated = [kind for kind, _, literal in syntax._alternative_patterns("line") if literal]
    assert gated or name == "dcgm"   # (the gate is there to test: smi's command_line, nvprof's)
    kinds = set()
    for line in head_lines:
        expected = next((kind for kind, pattern in patterns if pattern.match(line)), "other")
        assert syntax.classify_line(line) == expected, line
        kinds.add(expected)
    assert len(kinds) > 3
