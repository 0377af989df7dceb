"""Fuzzing real logs at length (issue #27): the test suite's fuzz test (tests/test_robust_fuzz.py,
a fixed seed, 160 mutants) with any seed and as many mutants as asked for.

    python benchmarks/bench_fuzz.py [--seed 2027] [--per-file 8] [--per-reader 2] [--runs 1]

Every run takes the first `--per-reader` corpus files (under 200 KB) of each reader, damages
each `--per-file` times (each kind of damage in turn: tests/fuzzing.py), reads them all with
one `roofreport parse` as a user runs it, and prints the seed, the mutants, the time and every
problem found (a traceback, an internal error, an error not naming its file, records before
the damage lost or changed, a valid log read otherwise than the original). `--runs N` repeats
with seeds seed, seed+1, ...; the exit code is 1 when any problem was found.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # (run as a script: tests.fuzzing beside the package)

from tests import fuzzing  # noqa: E402


def run(seed: int, per_file: int, per_reader: int) -> list[str]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = fuzzing.run(Path(tmp), seed, per_file, per_reader)
    print(f"{result.summary()} in {time.perf_counter() - started:.1f} s: {len(result.problems)} problems",
          flush=True)
    for problem in result.problems:
        print(f"  {problem}")
    return result.problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2027)
    parser.add_argument("--per-file", type=int, default=8)
    parser.add_argument("--per-reader", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    if not fuzzing.CORPUS.is_dir():
        print(f"fuzzing: the corpus is not at {fuzzing.CORPUS}: SKIPPED")
        return 0
    problems = [p for offset in range(args.runs)
                for p in run(args.seed + offset, args.per_file, args.per_reader)]
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
