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
    files = fuzzing.corpus_files()
    mutants = fuzzing.mutants(files, SEED, PER_FILE)
    originals, damaged = tmp_path / "originals", tmp_path / "mutants"
    originals.mkdir()
    damaged.mkdir()
    for number, source in enumerate(files):
        (originals / fuzzing.original_name(number, source)).write_bytes(source.read_bytes())
    for mutant in mutants:
        (damaged / mutant.name).write_bytes(mutant.data)
    record_property("fuzz", f"seed {SEED}: {len(mutants)} mutants of {len(files)} corpus files "
                            f"({len({f.parent for f in files})} folders)")
    code, output, before = fuzzing.parse_folder(originals, tmp_path / "out-originals")
    assert code in (0, 1), output
    code, output, after = fuzzing.parse_folder(damaged, tmp_path / "out-mutants")
    assert code in (0, 1), output
    assert "Traceback" not in output
    problems = [problem for mutant in mutants for problem in fuzzing.check(mutant, after, before)]
    assert not problems, f"{len(problems)} problems in {len(mutants)} mutants (seed {SEED}):\n" + \
        "\n".join(problems[:25])
