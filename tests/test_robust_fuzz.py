"""Fuzzing real logs of every family (issue #27): a fixed seed, every reader's first corpus
files, each damaged in each way of `tests/fuzzing.py` in turn, all read by one `roofreport
parse` as a user runs it. The seed and the number of mutants are printed at the end of the run
(`conftest.py`); `benchmarks/bench_fuzz.py` runs as many as asked for.
"""

from __future__ import annotations

import pytest

from tests import fuzzing
from tests.conftest import corpus_path

SEED = 2027
PER_FILE = 8   # one mutant of each kind per file


@pytest.mark.corpus
def test_mutated_logs_of_every_family_end_in_a_clear_outcome(tmp_path, record_property):
    corpus_path()   # skipped, saying why, without the corpus
    run = fuzzing.run(tmp_path, SEED, PER_FILE)
    record_property("fuzz", run.summary())
    assert not run.problems, f"{len(run.problems)} problems in {run.summary()}:\n" + \
        "\n".join(run.problems[:25])
