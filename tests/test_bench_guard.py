"""The baseline guard (benchmarks/bench_guard.py, issue #35) fires on a slowed build and stays
quiet on a faster one: its comparison on synthetic measurements, and one tiny end-to-end run
(the start-up case, one run a side) against a copy of roofreport that burns CPU when it starts."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_guard", ROOT / "benchmarks" / "bench_guard.py")
guard = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("bench_guard", guard)   # (its dataclasses look their module up)
_spec.loader.exec_module(guard)
Measure = guard.Measure


def test_more_than_ten_percent_more_cpu_or_memory_is_a_regression():
    base = Measure(cpu=2.0, rss=200_000_000, wall=1.5, code=0)
    slower = guard.regressions("parse x", base, Measure(2.3, 200_000_000, 1.5, 0))
    assert len(slower) == 1 and slower[0].startswith("REGRESSION parse x: CPU time 2.00 s -> 2.30 s")
    bigger = guard.regressions("parse x", base, Measure(2.0, 230_000_000, 1.5, 0))
    assert len(bigger) == 1 and "peak RSS 200 MB -> 230 MB" in bigger[0]
    assert len(guard.regressions("parse x", base, Measure(2.5, 250_000_000, 1.0, 0))) == 2


def test_within_ten_percent_better_or_below_the_floor_is_no_regression():
    base = Measure(cpu=2.0, rss=200_000_000, wall=1.5, code=0)
    assert guard.regressions("x", base, Measure(2.19, 219_000_000, 9.0, 0)) == []   # wall never gates
    assert guard.regressions("x", base, Measure(1.0, 100_000_000, 1.0, 0)) == []
    # 0.01 -> 0.03 s is +200 %, but 20 ms of CPU is noise on any machine
    assert guard.regressions("x", Measure(0.01, 1 << 20, 0.1, 0), Measure(0.03, 2 << 20, 0.1, 0)) == []


def test_a_run_that_fails_where_the_base_did_not_is_a_regression():
    base = Measure(cpu=2.0, rss=200_000_000, wall=1.5, code=0)
    assert guard.regressions("x", base, Measure(1.0, 100_000_000, 1.0, 2)) == ["REGRESSION x: exit code 0 -> 2"]
    assert guard.regressions("x", Measure(2.0, 200_000_000, 1.5, 1), Measure(2.0, 200_000_000, 1.5, 0)) == []


def test_best_of_takes_the_least_cpu_and_memory_and_the_worst_exit():
    runs = [Measure(1.2, 300, 2.0, 0), Measure(1.0, 310, 2.5, 1), Measure(1.1, 290, 1.9, 0)]
    assert guard.best(runs) == Measure(1.0, 290, 1.9, 1)


def _slowed_copy(tmp_path: Path) -> Path:
    """A copy of this checkout's roofreport/ whose command burns 0.6 s of CPU before it starts."""
    tree = tmp_path / "slowed"
    for folder in ("roofreport", "grammars", "templates"):   # (with its byte code: no recompiling)
        shutil.copytree(ROOT / folder, tree / folder)
    main = tree / "roofreport" / "__main__.py"
    text = main.read_text()
    burn = ("    import time as _t\n    _end = _t.process_time() + 0.6\n"
            "    while _t.process_time() < _end:\n        pass\n")
    main.write_text(text.replace("def main() -> None:\n", "def main() -> None:\n" + burn, 1))
    assert burn in main.read_text()
    return tree


def _guard(tmp_path: Path, base: Path, head: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_guard.py"), "--base-tree", str(base),
         "--head-tree", str(head), "--only", "start-up", "--repeat", "1", "--work", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=600)


def test_the_guard_prints_regression_for_a_slowed_build_and_nothing_for_a_faster_one(tmp_path):
    slowed = _slowed_copy(tmp_path)
    worse = _guard(tmp_path, ROOT, slowed)
    assert worse.returncode == 1, worse.stdout + worse.stderr
    lines = worse.stdout.splitlines()
    assert any(line.startswith("REGRESSION parse of the smallest sample log (start-up): CPU time")
               for line in lines), worse.stdout
    # The same two builds the other way round: the head is faster, only the figures are printed.
    better = _guard(tmp_path, slowed, ROOT)
    assert better.returncode == 0, better.stdout + better.stderr
    assert "REGRESSION" not in better.stdout and better.stderr == ""
    assert [line.split()[0] for line in better.stdout.splitlines()] == ["roofreport", "parse", "load"]
