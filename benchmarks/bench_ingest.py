"""Ingest throughput and memory benchmark (the project's speed and memory targets: benchmarks/README.md).

    python benchmarks/bench_ingest.py [--size-mb 100] [--small-files 500] [--repeat 3] [--keep]
    python benchmarks/bench_ingest.py --size-mb 400 --only nsys          # the issue's size

Grows the corpus's real logs (ncu text, nsys gputrace CSV, nvprof gpu-trace CSV; an ncu details
CSV beside them) to `--size-mb` by repeating their records in their own layout
(benchmarks/inputs.py; written into benchmarks/_work/ingest, the corpus read in place), runs
`roofreport parse FILE -o DIR` on each as a fresh process, and holds it to polars doing the same
at its barest, also as a fresh process (DESIGN.md §5, issue #35): `import polars`, read the same
bytes (its lines for text, `read_csv` for CSV), `write_parquet`. Printed per input: both sides'
wall and CPU time and peak RSS as a multiple of the input, the ratio of polars' wall time to
roofreport's (goal: ncu text >= 0.5, nsys/nvprof CSV >= 0.9) and of their CPU times (the steadier
figure on a shared machine), and the verdict (ratio and peak RSS < 1.5x the input). Each input is
flushed to disk and read once before it is measured; every timing, on both sides, is the best of
`--repeat` runs (the peak RSS the largest). First the fixed start-up cost (`parse` of the
smallest sample log); last the 500-small-files folder (CPU time / wall time shows whether both
cores worked), the time of `roofreport build sample_logs/`, the build of the two biggest course
folders beside their parse (`bench_report.py`), and the corpus's 54 MB Kineto trace against
HTA's load of it (`bench_kineto.py`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# polars writes its allocator settings into this process's environment when imported; the
# measured processes get the environment the user started the benchmark with, as from a shell.
_USER_MALLOC_CONF = os.environ.get("_RJEM_MALLOC_CONF")

import polars as pl  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # (run as a script: bench_kineto beside it)
from bench_kineto import bench_hostile, bench_kineto  # noqa: E402
from inputs import EXTRA_SOURCES, SOURCES, Source, csv_preamble_lines, grow, grown_name  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
# Its own folder: `benchmarks/_work` also holds the baseline guard's worktrees and environments,
# which outlive a run (removing the whole folder once broke a guard running beside it).
WORK = ROOT / "benchmarks" / "_work" / "ingest"
# `roofreport` run through a wrapper that reports its own peak RSS when it exits. The rusage of
# wait4 is no measure: a forked child inherits the benchmark process's RSS high-water mark
# (which holds polars' baseline frames), so every run would seem as large as the benchmark.
# VmHWM is the peak of the process's own memory after exec; worker processes count through
# RUSAGE_CHILDREN (reaped before exit), the larger of the two is reported.
_PEAK_WRAPPER = """
import atexit, resource, runpy, sys
def _peak():
    with open("/proc/self/status") as fh:
        own = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    sys.stderr.write(f"\\n@@peak-kb {max(own, workers)}\\n")
atexit.register(_peak)
sys.argv[0] = "roofreport"
runpy.run_module("roofreport", run_name="__main__", alter_sys=True)
"""
ROOFREPORT = [sys.executable, "-c", _PEAK_WRAPPER]
# The same peak report around any script (the polars baselines run as processes).
_PEAK_WRAPPER_SCRIPT = _PEAK_WRAPPER.replace(
    'sys.argv[0] = "roofreport"\nrunpy.run_module("roofreport", run_name="__main__", alter_sys=True)',
    'exec(compile(sys.argv[1], "<baseline>", "exec"))')


@dataclass
class Input:
    """A large input: a corpus log grown by repeating its records (benchmarks/inputs.py)."""

    source: Source
    values_vary: bool = False   # each repetition's non-zero values rewritten (informational)
    informational: bool = False  # not one of the inputs: no verdict

    @property
    def label(self) -> str:
        return self.source.label + (", values vary" if self.values_vary else "")


INPUTS = [
    *(Input(source) for source in SOURCES),
    *(Input(source, informational=True) for source in EXTRA_SOURCES),
    # A real log prints other values for every kernel, and a reader that works per distinct line
    # gains less from it than from exact repeats.
    Input(SOURCES[0], values_vary=True, informational=True),
]


def build_input(item: Input, size_mb: int) -> Path:
    name = grown_name(item.source, size_mb)
    if item.values_vary:
        name = name.replace("_", "_varied_", 1)
    return grow(item.source, size_mb, WORK / name, vary=item.values_vary)


def run_measured(args: list[str]) -> tuple[float, int, float, int]:
    """(wall seconds, peak RSS bytes, CPU seconds, exit code) of one child process."""
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    if _USER_MALLOC_CONF is not None:
        env["_RJEM_MALLOC_CONF"] = _USER_MALLOC_CONF
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        err.seek(0)
        peaks = [int(line.split()[1]) for line in err.read().decode(errors="replace").splitlines()
                 if line.startswith("@@peak-kb ")]
    code = os.waitstatus_to_exitcode(status)
    peak_kb = peaks[-1] if peaks else usage.ru_maxrss  # (wrapper silent: the inflated figure)
    return wall, peak_kb * 1024, usage.ru_utime + usage.ru_stime, code


_LINE_SPLIT = ("pl.read_csv({path!r}, has_header=False, separator='\\x1f', quote_char=None, "
               "new_columns=['line'], infer_schema=False, truncate_ragged_lines=True, "
               "encoding='utf8-lossy')")
_READ_CSV = ("pl.read_csv({path!r}, skip_rows={skip}, infer_schema_length=1000, "
             "truncate_ragged_lines=True, ignore_errors=True)")


def best_of(args: list[str], repeat: int) -> tuple[float, int, float, int]:
    """`run_measured` `repeat` times: the shortest wall time (and its CPU time), the largest
    peak RSS (the memory verdict stays on the worst run) and the worst exit code."""
    runs = [run_measured(args) for _ in range(repeat)]
    fastest = min(runs, key=lambda r: r[0])
    return fastest[0], max(r[1] for r in runs), fastest[2], max(r[3] for r in runs)


def polars_reference(path: Path, target: str, repeat: int) -> tuple[float, int, float]:
    """(wall seconds, peak RSS bytes, CPU seconds) of polars doing what `roofreport parse` does
    at its barest, run the same way (DESIGN.md §5): a fresh Python process that imports polars,
    reads the same bytes (its lines, or the CSV) and writes them as Parquet; best of `repeat`."""
    if target == "read_csv":
        call = _READ_CSV.format(path=str(path), skip=csv_preamble_lines(path))
    else:
        call = _LINE_SPLIT.format(path=str(path))
    out = WORK / "polars_reference.parquet"
    script = f"import polars as pl\n{call}.write_parquet({str(out)!r})\n"
    wall, rss, cpu, _ = best_of([sys.executable, "-c", _PEAK_WRAPPER_SCRIPT, script], repeat)
    out.unlink(missing_ok=True)
    return wall, rss, cpu


def settle(path: Path) -> None:
    """Flush the just-written input to disk and read it once, so every measured run reads it
    from the page cache with no writeback of hundreds of MB going on beside it (the first
    input was measured ~40 % slow, roofreport and polars alike, before this)."""
    os.sync()
    with open(path, "rb", buffering=0) as fh:
        buffer = bytearray(8 << 20)
        while fh.readinto(buffer):
            pass


def bench_large(size_mb: int, repeat: int, only: str | None = None) -> list[str]:
    rows = []
    for item in INPUTS:
        if only and only not in item.label:
            continue
        path = build_input(item, size_mb)
        size = path.stat().st_size
        settle(path)
        out_dir = WORK / "out"
        shutil.rmtree(out_dir, ignore_errors=True)
        wall, rss, cpu, code = best_of([*ROOFREPORT, "parse", str(path), "-o", str(out_dir), "--quiet"],
                                       repeat)
        shutil.rmtree(out_dir, ignore_errors=True)
        ref_wall, ref_rss, ref_cpu = polars_reference(path, item.source.target, repeat)
        ratio = ref_wall / wall
        goal = item.source.goal
        if item.informational:
            verdict = "(not an issue input)"
        else:
            verdict = "OK" if ratio >= goal and rss < 1.5 * size and code == 0 else "MISS"
        rows.append(f"{item.label:<24} {size / 1e6:5.0f} MB  roofreport {wall:6.2f} s, CPU {cpu:6.2f} s, "
                    f"RSS {rss / size:4.2f}x  | polars {item.source.target} + write_parquet {ref_wall:6.2f} s, "
                    f"CPU {ref_cpu:6.2f} s, RSS {ref_rss / size:4.2f}x  | ratio {ratio:4.2f} "
                    f"(CPU {ref_cpu / cpu:4.2f}; goal {goal}, RSS < 1.5x)  exit {code}  {verdict}")
        path.unlink()
    return rows


def bench_startup() -> str:
    """The fixed cost every run pays: `roofreport parse` of the smallest sample log."""
    samples = [p for p in SAMPLES.rglob("*") if p.is_file() and p.suffix not in (".md", ".toml")]
    smallest = min(samples, key=lambda p: p.stat().st_size)
    out_dir = WORK / "out_startup"
    wall, rss, _, code = run_measured([*ROOFREPORT, "parse", str(smallest), "-o", str(out_dir), "--quiet"])
    base, _, _, _ = run_measured([sys.executable, "-c", "import polars"])
    return (f"start-up: roofreport parse of a {smallest.stat().st_size} B log {wall:5.2f} s "
            f"(python + import polars alone {base:5.2f} s)  peak RSS {rss / 1e6:4.0f} MB  exit {code}")


def bench_small_files(count: int) -> str:
    folder = WORK / "small"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    samples = [p for p in sorted(SAMPLES.rglob("*")) if p.is_file() and p.suffix not in (".md", ".toml")]
    if not samples:
        return "small files: no sample logs: SKIPPED"
    for i in range(count):
        src = samples[i % len(samples)]
        sub = folder / f"run{i:03d}"
        sub.mkdir()
        shutil.copy(src, sub / src.name)
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    out_dir = WORK / "out_small"
    wall, rss, cpu, code = run_measured([*ROOFREPORT, "parse", str(folder), "-o", str(out_dir), "--quiet"])
    cores = cpu / wall
    verdict = "OK (both cores)" if cores > 1.3 else "MISS (one core)"
    return (f"{count} small files   {total / 1e6:6.1f} MB  {wall:6.2f} s  CPU/wall {cores:4.2f}  "
            f"peak RSS {rss / 1e6:6.0f} MB  exit {code}  {verdict}")


def bench_build() -> str:
    out = Path(tempfile.mkdtemp()) / "report.pdf"
    wall, rss, _, code = run_measured([*ROOFREPORT, "build", str(SAMPLES), "-o", str(out), "--quiet"])
    verdict = "OK" if wall < 10 and code == 0 else "MISS"
    return f"roofreport build sample_logs/  {wall:5.2f} s (goal < 10 s)  peak RSS {rss / 1e6:5.0f} MB  exit {code}  {verdict}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=100,
                        help="size of each large input (the issue's figures: 400)")
    parser.add_argument("--small-files", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per measurement; the best time (and largest peak RSS) counts")
    parser.add_argument("--keep", action="store_true", help="keep benchmarks/_work/ingest afterwards")
    parser.add_argument("--hta-python", help="a Python that imports HTA, to time its load of the "
                        "Kineto trace now (else the figure recorded in benchmarks/README.md)")
    parser.add_argument("--only", default=None, metavar="LABEL",
                        help="only the large inputs whose label holds LABEL (e.g. 'nsys'), nothing else")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    # Byte-compile the package first, as `pip install` does for a normal install: an editable
    # checkout under PYTHONDONTWRITEBYTECODE=1 would otherwise recompile it on every run.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "roofreport")], check=True)
    print(f"roofreport ingest benchmark — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
          f"polars {pl.__version__}, Python {sys.version.split()[0]}, best of {args.repeat} runs")
    if not args.only:
        print(bench_startup(), flush=True)
    for row in bench_large(args.size_mb, args.repeat, args.only):
        print(row, flush=True)
    if not args.only:
        print(bench_small_files(args.small_files), flush=True)
        print(bench_build(), flush=True)
        from bench_report import bench_report  # (imports this module: not at the top)
        for row in bench_report(args.repeat):
            print(row, flush=True)
        print(bench_kineto(args.repeat, args.hta_python), flush=True)
        for row in bench_hostile():
            print(row, flush=True)
    if not args.keep:
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
