"""Baseline guard (issue #35): this checkout's CPU time and peak RSS against an earlier commit's.

    python benchmarks/bench_guard.py [--base COMMIT] [--quick] [--repeat N] [--size-mb MB]
    make bench BASE=<commit>          # the full guard, then the other benchmarks
    make bench-quick                  # the quick guard (under a minute on 2 quiet cores)

The base commit (default: the main commit this branch started from, `git merge-base HEAD main`;
on main itself, the commit before HEAD) is checked out into a git worktree under
benchmarks/_work/trees/ and given its own virtual environment (benchmarks/_work/envs/), which
imports roofreport from that worktree and its third-party packages from this checkout's
environment (a `.pth` file: same polars, same Python, so only roofreport's own code differs).
Both sides are byte-compiled first, as an install does.

Every case runs as its own `python -m roofreport ...` process in a neutral working folder, the
two sides interleaved (base, head; then head, base; ...) `--repeat` times; a case that looks
worse is measured `--repeat` times more before it is judged. The figures are the best of the runs: the least CPU time (user + sys, of the process and its worker processes) and
the least peak RSS (the process's VmHWM or its largest worker's). Wall time is shown but never
gated: the machine is shared. A case whose CPU time or peak RSS is more than 10 % worse than the
base's (and by more than a small floor: 30 ms, 2 MB) prints a `REGRESSION` line and the guard
exits 1; so does a case that exits with a code (not 0) the base did not. With nothing
regressed it prints its figures and nothing else.

Inputs: the course folders of the corpus read in place, and logs of each large format grown
from the corpus's real logs (benchmarks/inputs.py) into benchmarks/_work/inputs/.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # (run as a script: inputs.py beside it)
# (each measured process reports its own peak RSS at exit, VmHWM, or its largest worker's: the
# wrapper bench_ingest.py runs its processes in)
from bench_ingest import _PEAK_WRAPPER  # noqa: E402
from inputs import SOURCES, corpus, grow, grown_name  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "benchmarks" / "_work"
TOLERANCE = 0.10          # > 10 % worse is a regression
CPU_FLOOR_S = 0.03        # ... and by more than this much CPU
RSS_FLOOR_B = 2 << 20     # ... or this much memory


@dataclass(frozen=True)
class Measure:
    """One run of one case on one side."""

    cpu: float    # user + sys seconds, the process and its reaped workers
    rss: int      # peak RSS, bytes
    wall: float
    code: int     # exit code


def best(runs: list[Measure]) -> Measure:
    """Best of the runs: the least CPU time, the least peak RSS, the least wall time; the
    worst exit code."""
    return Measure(min(r.cpu for r in runs), min(r.rss for r in runs), min(r.wall for r in runs),
                   max(r.code for r in runs))


def regressions(case: str, base: Measure, head: Measure, tolerance: float = TOLERANCE) -> list[str]:
    """`REGRESSION` lines for what `head` does more than `tolerance` worse than `base`."""
    out = []
    if head.code not in (0, base.code):
        out.append(f"REGRESSION {case}: exit code {base.code} -> {head.code}")
    if head.cpu > base.cpu * (1 + tolerance) and head.cpu - base.cpu > CPU_FLOOR_S:
        out.append(f"REGRESSION {case}: CPU time {base.cpu:.2f} s -> {head.cpu:.2f} s "
                   f"({head.cpu / base.cpu - 1:+.0%}, limit +{tolerance:.0%})")
    if head.rss > base.rss * (1 + tolerance) and head.rss - base.rss > RSS_FLOOR_B:
        out.append(f"REGRESSION {case}: peak RSS {base.rss / 1e6:.0f} MB -> {head.rss / 1e6:.0f} MB "
                   f"({head.rss / base.rss - 1:+.0%}, limit +{tolerance:.0%})")
    return out


def figure_line(case: str, base: Measure, head: Measure) -> str:
    return (f"{case:<44} CPU {base.cpu:7.2f} -> {head.cpu:7.2f} s ({head.cpu / base.cpu:5.2f}x)  "
            f"peak RSS {base.rss / 1e6:6.0f} -> {head.rss / 1e6:6.0f} MB ({head.rss / base.rss:5.2f}x)  "
            f"wall {base.wall:6.2f} -> {head.wall:6.2f} s  exit {base.code}/{head.code}")


# ---- the two sides ---------------------------------------------------------------------------

def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def default_base() -> str:
    """The main commit this checkout started from; on main itself, the commit before it."""
    head = _git("rev-parse", "HEAD")
    try:
        base = _git("merge-base", "HEAD", "main")
    except subprocess.CalledProcessError:
        base = head
    return _git("rev-parse", "HEAD~1") if base == head else base


def worktree(commit: str) -> Path:
    """A git worktree of `commit` under benchmarks/_work/trees/ (kept between runs)."""
    sha = _git("rev-parse", f"{commit}^{{commit}}")
    tree = WORK / "trees" / sha[:12]
    if not (tree / "roofreport" / "__init__.py").exists():
        shutil.rmtree(tree, ignore_errors=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=True, capture_output=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(tree), sha],
                       check=True, capture_output=True)
    return tree


def environment(tree: Path) -> Path:
    """A virtual environment's Python that imports roofreport from `tree` and everything else
    from this checkout's environment; `tree` byte-compiled."""
    tree = tree.resolve()
    key = hashlib.sha1(str(tree).encode()).hexdigest()[:10]
    env = WORK / "envs" / f"{tree.name}-{key}"
    python = env / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True,
                       capture_output=True)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    # .pth files are read in name order: roofreport's tree first, then this checkout's packages
    # (a path line, so that environment's own .pth files, this checkout's editable install among
    # them, are not read).
    (site / "00_roofreport_tree.pth").write_text(f"{tree}\n")
    (site / "01_packages.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n")
    found = subprocess.run([str(python), "-c", "import roofreport; print(roofreport.__file__)"],
                           check=True, capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout.strip()
    if not Path(found).resolve().is_relative_to(tree):
        raise SystemExit(f"bench_guard: {python} imports roofreport from {found}, not from {tree}")
    subprocess.run([str(python), "-m", "compileall", "-q", str(tree / "roofreport")], check=True,
                   capture_output=True)
    return python


def run_once(python: Path, args: list[str], scratch: Path) -> Measure:
    """`python -m roofreport ARGS` in its own process, in an empty folder (so that no
    `roofreport` package in the working folder is imported); `{out}` in ARGS is a fresh path."""
    scratch.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(dir=scratch))
    argv = [a.replace("{out}", str(out / "out")) for a in args]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "_RJEM_MALLOC_CONF")}
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([str(python), "-c", _PEAK_WRAPPER, *argv], stdout=subprocess.DEVNULL,
                                stderr=err, env=env, cwd=out)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        err.seek(0)
        peaks = [int(line.split()[1]) for line in err.read().decode(errors="replace").splitlines()
                 if line.startswith("@@peak-kb ")]
    shutil.rmtree(out, ignore_errors=True)
    return Measure(usage.ru_utime + usage.ru_stime, (peaks[-1] if peaks else usage.ru_maxrss) * 1024, wall,
                   os.waitstatus_to_exitcode(status))


# ---- the cases -------------------------------------------------------------------------------

def cases(quick: bool, size_mb: float, only: str | None) -> list[tuple[str, list[str]]]:
    """(name, roofreport arguments) of each case whose name holds `only`; grown inputs written
    on first use (and kept in benchmarks/_work/inputs/)."""
    out: list[tuple[str, list[str]]] = []

    def add(name: str, args: list[str] | None = None, source=None, size: float = 0) -> None:
        if only and only not in name:
            return
        if source is not None:
            path = WORK / "inputs" / grown_name(source, size)
            if not path.exists():
                grow(source, size, path)
            args = ["parse", str(path), "-o", "{out}", "--quiet"]
        out.append((name, args))

    smallest = min((p for p in (ROOT / "sample_logs").rglob("*") if p.is_file() and p.suffix not in (".md", ".toml")),
                   key=lambda p: (p.stat().st_size, str(p)))
    add("parse of the smallest sample log (start-up)", ["parse", str(smallest), "-o", "{out}", "--quiet"])
    if (corpus() / "course").is_dir():
        size = min(size_mb, 8) if quick else size_mb
        for source in SOURCES:
            add(f"parse {source.label} {size:g} MB", source=source, size=size)
        folders = ["srikarym-hpml"] if quick else sorted(
            p.name for p in (corpus() / "course").iterdir() if p.is_dir())
        for name in folders:
            add(f"parse course/{name}", ["parse", str(corpus() / "course" / name), "-o", "{out}", "--quiet"])
        if not quick:
            folder = corpus() / "course" / "pramitmallick-examples"
            add("build course/pramitmallick-examples", ["build", str(folder), "-o", "{out}.pdf", "--quiet"])
    if not quick:
        add("build sample_logs", ["build", str(ROOT / "sample_logs"), "-o", "{out}.pdf", "--quiet"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=None, help="commit to measure against (default: the main "
                        "commit this checkout started from)")
    parser.add_argument("--base-tree", type=Path, default=None,
                        help="a source tree to measure against instead of a commit (its roofreport/ package)")
    parser.add_argument("--head-tree", type=Path, default=None,
                        help="the source tree to measure (default: this checkout)")
    parser.add_argument("--quick", action="store_true", help="the quick cases (8 MB inputs, one course folder)")
    parser.add_argument("--repeat", type=int, default=None, help="runs per side and case (3)")
    parser.add_argument("--size-mb", type=float, default=100, help="size of each grown input (full guard)")
    parser.add_argument("--only", default=None, metavar="TEXT", help="only the cases whose name holds TEXT")
    parser.add_argument("--work", type=Path, default=None,
                        help="folder for worktrees, environments, inputs (default benchmarks/_work)")
    args = parser.parse_args(argv)
    global WORK
    if args.work is not None:
        WORK = args.work.resolve()
    repeat = args.repeat or 3

    if args.base_tree is not None:
        base_tree, base_label = args.base_tree.resolve(), str(args.base_tree)
    else:
        commit = args.base or default_base()
        base_tree = worktree(commit)
        base_label = f"{_git('rev-parse', '--short', commit)}"
    head_tree = (args.head_tree or ROOT).resolve()
    if args.head_tree:
        head_label = str(args.head_tree)
    else:
        dirty = _git("status", "--porcelain", "--untracked-files=no", "--", "roofreport", "grammars", "templates")
        head_label = f"{_git('rev-parse', '--short', 'HEAD')} (this checkout{', with uncommitted changes' if dirty else ''})"
    sides = {"base": environment(base_tree), "head": environment(head_tree)}

    todo = cases(args.quick, args.size_mb, args.only)
    print(f"roofreport baseline guard — {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, "
          f"load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())}; base {base_label}, "
          f"head {head_label}; best of {repeat}, interleaved", flush=True)
    runs: dict[tuple[str, str], list[Measure]] = {}
    # This run's own: a guard running beside it must not remove the folders its commands run in.
    (WORK / "scratch").mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=WORK / "scratch"))

    def measure(chosen: list[tuple[str, list[str]]]) -> None:
        for rep in range(repeat):
            order = ("base", "head") if rep % 2 == 0 else ("head", "base")
            for name, case_args in chosen:
                for side in order:
                    runs.setdefault((name, side), []).append(run_once(sides[side], case_args, scratch))

    def verdicts(name: str) -> list[str]:
        return regressions(name, best(runs[(name, "base")]), best(runs[(name, "head")]))

    measure(todo)
    # A case that looks worse is measured `repeat` times more, both sides interleaved, and
    # judged on the best of all its runs: a true regression stays, a run slowed by the other
    # work on a shared machine does not (on a load of 25, ~1 s cases swung by up to 14 %).
    measure([case for case in todo if verdicts(case[0])])
    shutil.rmtree(scratch, ignore_errors=True)

    found = []
    for name, _ in todo:
        base, head = best(runs[(name, "base")]), best(runs[(name, "head")])
        print(figure_line(name, base, head), flush=True)
        found += verdicts(name)
    print(f"load average at the end {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
