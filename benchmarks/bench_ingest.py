"""Ingest throughput and memory benchmark (the project's speed and memory targets: benchmarks/README.md).

    python benchmarks/bench_ingest.py [--size-mb 400] [--small-files 500] [--repeat 3] [--keep]

Builds large inputs by repeating real blocks of the project's own `sample_logs/` in their real
layouts (never the corpus), runs `roofreport parse` on each in a separate process, and prints
per input: MB/s, peak RSS as a multiple of the input size, and polars reading the same bytes in
the same run (bare line split = `read_csv` of one column; full `read_csv` for CSV inputs), as
the ratio that matters, each with its verdict: polars warm in this process (the issue's
verdict), and the same reads run as a fresh process like roofreport's (interpreter start and
import included; with polars' own peak RSS). Each input is flushed to disk and read once before
it is measured; every timing, on both sides, is the best of `--repeat` runs. First the fixed
start-up cost (`parse` of the smallest sample log); last the 500-small-files folder (CPU time /
wall time shows whether both cores worked), the time of `roofreport build sample_logs/`, the
build of the two biggest course folders beside their parse (`bench_report.py`; read from the
corpus in place, as the issue names them), and the corpus's 54 MB Kineto trace against HTA's
load of it (`bench_kineto.py`; read in place too).

Targets (2-core machine): ncu text/CSV ≥ 0.25× line split; nsys/nvprof trace CSV ≥ 0.5×
read_csv; peak RSS < 2× input; small files parsed on both cores; build < 10 s; a course
folder's build <= 15 s, <= 400 MB and <= 30 pages; the Kineto trace read ≥ 4× faster than
HTA's `TraceAnalysis` load, at or under `json.load`'s peak RSS.
"""

from __future__ import annotations

import argparse
import os
import re
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

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
WORK = ROOT / "benchmarks" / "_work"
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
    """A large file made of a sample file's prefix and its body repeated."""

    label: str
    family: str
    is_csv: bool
    target: str          # "line split" or "read_csv": the polars baseline this input is held to
    goal: float          # minimum ratio to that baseline
    path: Path | None = None
    values_vary: bool = False   # each repetition's non-zero values rewritten (informational)


INPUTS = [
    Input("ncu text", "ncu", False, "line split", 0.25),
    Input("ncu details csv", "ncu", True, "line split", 0.25),
    Input("nsys gputrace csv", "nsys", True, "read_csv", 0.5),
    Input("nvprof gpu trace csv", "nvprof", True, "read_csv", 0.5),
    # Not one of the inputs: a real log prints other values for every kernel, and a
    # reader that works per distinct line gains less from it than from exact repeats.
    Input("ncu text, values vary", "ncu", False, "line split", 0.25, values_vary=True),
]


def find_sample(label: str) -> Path | None:
    """The sample log that a large input of this kind is built from (chosen by sniffing)."""
    from roofreport.pipeline.discover import discover
    from roofreport.pipeline.sniff import sniff

    for path, _ in discover([SAMPLES]):
        s = sniff(path)
        if not s.readable:
            continue
        variant = (s.variant or "").lower()
        if label == "ncu text" and s.family == "ncu" and variant.startswith("text") and "summary" not in variant:
            return path
        if label == "ncu details csv" and s.family == "ncu" and "csv" in variant and "raw" not in variant:
            return path
        if label == "nsys gputrace csv" and s.family == "nsys" and "trace" in variant and "csv" in variant:
            return path
        if label == "nvprof gpu trace csv" and s.family == "nvprof" and "trace" in variant and "csv" in variant:
            return path
    return None


def split_for_repeat(label: str, lines: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """(prefix kept once, body repeated): the body is whole records in the file's own layout."""
    if label == "ncu text":
        start = next(i for i, line in enumerate(lines) if line.startswith(b"[") and b"@" in line)
        return lines[: start + 1], [line for line in lines[start + 1:] if not line.startswith(b"==")]
    header = next(i for i, line in enumerate(lines)
                  if line.startswith((b'"ID"', b"Start", b'"Start"', b"Start (ns)")))
    first_data = header + 1
    if label == "nvprof gpu trace csv":
        first_data += 1  # the units row
    body = [line for line in lines[first_data:] if line.strip()]
    return lines[:first_data], body


def build_input(item: Input, size_mb: int) -> Path | None:
    label = item.label.split(",")[0]
    sample = find_sample(label)
    if sample is None:
        return None
    lines = sample.read_bytes().replace(b"\r\n", b"\n").split(b"\n")
    prefix, body = split_for_repeat(label, lines)
    body_bytes = b"\n".join(body) + b"\n"
    target = WORK / f"{item.label.replace(' ', '_').replace(',', '')}{sample.suffix}"
    reps = max(1, (size_mb * 1_000_000) // max(1, len(body_bytes)))
    with open(target, "wb") as fh:
        fh.write(b"\n".join(prefix) + b"\n")
        bodies = _varied_bodies(body_bytes, reps) if item.values_vary else [body_bytes] * reps
        for data in bodies:
            fh.write(data)
    return target


# A metric row's value: the last field of a line, digits with optional separators and decimals.
_ROW_VALUE = re.compile(rb"(?<= )(\d[\d,]*(?:\.\d+)?)(?=\n)")


def _varied_bodies(body: bytes, reps: int):
    """`body` `reps` times, each time with the last (up to 3) digits of every non-zero row
    value changed by the repetition's number: the same layout and widths, values that differ
    from kernel to kernel as in a real log (zeros stay zeros, as unused pipes do)."""
    parts = _ROW_VALUE.split(body)   # literal text at even indices, values at odd ones
    for rep in range(reps):
        out = parts[:]
        for j in range(1, len(parts), 2):
            value = parts[j]
            if value.strip(b"0,.") and rep:
                out[j] = _shifted(value, rep * 7 + j)
        yield b"".join(out)


def _shifted(value: bytes, by: int) -> bytes:
    """`value` with its last (up to 3) digits plus `by` (modulo), separators kept in place."""
    at = [i for i, c in enumerate(value) if 48 <= c <= 57][-3:]
    digits = int(bytes(value[i] for i in at)) + by
    new = str(digits % 10 ** len(at)).zfill(len(at)).encode()
    out = bytearray(value)
    for i, d in zip(at, new):
        out[i] = d
    return bytes(out)


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


def polars_baselines(path: Path, is_csv: bool, repeat: int) -> dict[str, float]:
    """Seconds polars takes to split the same bytes into lines and (CSV) to read them, in this
    process (polars imported and warm: the reference the targets are held to); the best of
    `repeat` reads, as for roofreport's runs."""
    out = {}
    for target, call in _baseline_calls(path, is_csv).items():
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            eval(call, {"pl": pl})  # noqa: S307 - our own fixed expression
            times.append(time.perf_counter() - t)
        out[target] = min(times)
    return out


def polars_process_baselines(path: Path, is_csv: bool, repeat: int) -> dict[str, tuple[float, int]]:
    """(wall seconds, peak RSS bytes) of the same polars reads run the way roofreport is run:
    a fresh Python process (interpreter start and `import polars` included); best of `repeat`."""
    out = {}
    for target, call in _baseline_calls(path, is_csv).items():
        script = f"import polars as pl\n{call}\n"
        wall, rss, _, _ = best_of([sys.executable, "-c", _PEAK_WRAPPER_SCRIPT, script], repeat)
        out[target] = (wall, rss)
    return out


def settle(path: Path) -> None:
    """Flush the just-written input to disk and read it once, so every measured run reads it
    from the page cache with no writeback of hundreds of MB going on beside it (the first
    input was measured ~40 % slow, roofreport and polars alike, before this)."""
    os.sync()
    with open(path, "rb", buffering=0) as fh:
        buffer = bytearray(8 << 20)
        while fh.readinto(buffer):
            pass


def _baseline_calls(path: Path, is_csv: bool) -> dict[str, str]:
    calls = {"line split": _LINE_SPLIT.format(path=str(path))}
    if is_csv:
        calls["read_csv"] = _READ_CSV.format(path=str(path), skip=_csv_preamble_lines(path))
    return calls


def _csv_preamble_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        head = fh.read(200_000).split(b"\n")
    for i, line in enumerate(head):
        if line.startswith((b'"ID"', b"Start", b'"Start"')):
            return i
    return 0


def bench_large(size_mb: int, repeat: int, only: str | None = None) -> list[str]:
    rows = []
    for item in INPUTS:
        if only and only not in item.label:
            continue
        path = build_input(item, size_mb)
        if path is None:
            rows.append(f"{item.label:<22} no sample in sample_logs/ to build it from: SKIPPED")
            continue
        size = path.stat().st_size
        settle(path)
        out_dir = WORK / "out"
        shutil.rmtree(out_dir, ignore_errors=True)
        wall, rss, _, code = best_of([*ROOFREPORT, "parse", str(path), "-o", str(out_dir), "--quiet"],
                                     repeat)
        base = polars_baselines(path, item.is_csv, repeat)
        proc_wall, proc_rss = polars_process_baselines(path, item.is_csv, repeat)[item.target]
        mbps = size / 1e6 / wall
        ref = size / 1e6 / base[item.target]
        ratio = mbps / ref
        proc_ratio = proc_wall / wall
        verdict = "OK" if ratio >= item.goal and rss < 2 * size and code == 0 else "MISS"
        proc_verdict = "OK" if proc_ratio >= item.goal and rss < 2 * size and code == 0 else "MISS"
        if item.values_vary:
            verdict = proc_verdict = "(not an issue input)"
        others = "".join(f", {name} {size / 1e6 / secs:6.1f} MB/s" for name, secs in base.items()
                         if name != item.target)
        rows.append(f"{item.label:<22} {size / 1e6:5.0f} MB {mbps:6.1f} MB/s  RSS {rss / size:4.2f}x  "
                    f"polars {item.target} {ref:6.1f} MB/s  ratio {ratio:4.2f} (goal {item.goal})  "
                    f"{verdict}  exit {code}  | polars as a process: {size / 1e6 / proc_wall:6.1f} MB/s, "
                    f"RSS {proc_rss / size:4.2f}x, ratio {proc_ratio:4.2f} {proc_verdict}{others}")
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
    parser.add_argument("--size-mb", type=int, default=400, help="size of each large input")
    parser.add_argument("--small-files", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per measurement; the best time (and largest peak RSS) counts")
    parser.add_argument("--keep", action="store_true", help="keep benchmarks/_work afterwards")
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
