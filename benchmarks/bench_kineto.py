"""Kineto trace reading against HTA (issue #16, PyTorch profiler traces).

    python benchmarks/bench_kineto.py [--repeat 3] [--hta-python PATH]

The goal: the 54 MB trace of the corpus (`kineto/hta-df_index_resolver/df_index_resolver.json.gz`,
read in place, never copied) read at least 4x faster than HolisticTraceAnalysis's
`TraceAnalysis` loads it, at or under the peak memory of a plain `json.load` of it. Each figure
comes from a fresh process, the best time of `--repeat` runs and the largest peak RSS:

* roofreport's read: sniffing and parsing the file as the pipeline does (`ingest.parse_file`),
  imports excluded (as HTA's are); its peak RSS includes polars' import;
* `roofreport parse FILE -o DIR` as a whole: start-up, enrichment and the Parquet write too;
* `json.load(gzip.open(FILE))` alone (the memory reference);
* HTA's `TraceAnalysis(trace_dir=...)` load, when HTA is importable by `--hta-python` (it is
  not a dependency: install it in a scratch venv); otherwise the figure measured on this
  machine and recorded in benchmarks/README.md (`HTA_LOAD_S`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT.parent / "shared" / "corpus" / "kineto" / "hta-df_index_resolver" / "df_index_resolver.json.gz"
# HTA 0.5.0's TraceAnalysis load of TRACE on this machine (2 cores, Python 3.11, JSON backend,
# no ijson), 2026-11-25, with the machine quiet (2.33 and 2.58 s). See benchmarks/README.md.
HTA_LOAD_S = 2.5
HTA_SPEEDUP_GOAL = 4.0

# Reports a process's own peak RSS (VmHWM) and what it timed, on stderr at exit.
_PEAK = """
import atexit, sys
def _peak():
    with open("/proc/self/status") as fh:
        own = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    sys.stderr.write(f"\\n@@peak-kb {own}\\n")
atexit.register(_peak)
"""
_READ = _PEAK + """
import time
from pathlib import Path
from roofreport.pipeline.ingest import parse_file
from roofreport.pipeline.sniff import sniff
path = Path(sys.argv[1])
start, cpu = time.perf_counter(), time.process_time()
found = sniff(path)
result = parse_file(path, found.spec.name, found.variant, str(path))
sys.stderr.write(f"\\n@@seconds {time.perf_counter() - start}\\n@@cpu {time.process_time() - cpu}\\n")
assert result.error is None and result.tables["kernels"].height, result.error
"""
_JSON_LOAD = _PEAK + """
import gzip, json, time
start, cpu = time.perf_counter(), time.process_time()
with gzip.open(sys.argv[1], "rb") as fh:
    json.load(fh)
sys.stderr.write(f"\\n@@seconds {time.perf_counter() - start}\\n@@cpu {time.process_time() - cpu}\\n")
"""
_HTA = _PEAK + """
import logging, os, tempfile, time
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
folder = tempfile.mkdtemp()
os.symlink(sys.argv[1], os.path.join(folder, os.path.basename(sys.argv[1])))
start, cpu = time.perf_counter(), time.process_time()
TraceAnalysis(trace_dir=folder)
sys.stderr.write(f"\\n@@seconds {time.perf_counter() - start}\\n@@cpu {time.process_time() - cpu}\\n")
"""


def _run(args: list[str]) -> dict[str, float]:
    """One child process: `wall` seconds, what it timed itself (`seconds`, `cpu`: nan when it
    said nothing), `peak` RSS bytes, exit `code`."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        code = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT).returncode
        wall = time.perf_counter() - start
        err.seek(0)
        said = dict(line[2:].split()[:2] for line in err.read().decode(errors="replace").splitlines()
                    if line.startswith("@@"))
    return {"wall": wall, "seconds": float(said.get("seconds", "nan")),
            "cpu": float(said.get("cpu", "nan")), "peak": int(said.get("peak-kb", 0)) * 1024,
            "code": code}


def _best(args: list[str], repeat: int) -> dict[str, float]:
    """`repeat` runs: the shortest times, the largest peak RSS, the worst exit code."""
    runs = [_run(args) for _ in range(repeat)]
    best = {key: min(r[key] for r in runs) for key in ("wall", "seconds", "cpu")}
    return {**best, "peak": max(r["peak"] for r in runs), "code": max(r["code"] for r in runs)}


def _hta_importable(python: str) -> bool:
    probe = subprocess.run([python, "-c", "import hta.trace_analysis"], capture_output=True)
    return probe.returncode == 0


def bench_kineto(repeat: int = 3, hta_python: str | None = None) -> str:
    if not TRACE.is_file():
        return f"kineto trace: {TRACE} not found (the corpus is beside the repository): SKIPPED"
    size = TRACE.stat().st_size
    read = _best([sys.executable, "-c", _READ, str(TRACE)], repeat)
    with tempfile.TemporaryDirectory() as out:
        cli = [sys.executable, "-c", _PEAK + "import runpy\nsys.argv[0] = 'roofreport'\n"
               "runpy.run_module('roofreport', run_name='__main__', alter_sys=True)",
               "parse", str(TRACE), "-o", out, "--quiet"]
        parse = _best(cli, repeat)
    plain = _best([sys.executable, "-c", _JSON_LOAD, str(TRACE)], repeat)
    python = hta_python or sys.executable
    if _hta_importable(python):
        hta = _best([python, "-c", _HTA, str(TRACE)], repeat)
        hta_s = hta["seconds"]
        # CPU time is the steadier figure when other work shares the cores (HTA is one thread).
        hta_text = (f"HTA TraceAnalysis load {hta_s:5.2f} s (CPU {hta['cpu']:4.2f} s, run now: "
                    f"{hta['cpu'] / read['cpu']:3.1f}x roofreport's CPU), peak RSS "
                    f"{hta['peak'] / 1e6:4.0f} MB")
    else:
        hta_s = HTA_LOAD_S
        hta_text = f"HTA TraceAnalysis load {hta_s:5.2f} s (measured here, benchmarks/README.md)"
    speedup = hta_s / read["seconds"]
    fast = "OK" if speedup >= HTA_SPEEDUP_GOAL and read["code"] == 0 else "MISS"
    small = "OK" if read["peak"] <= plain["peak"] and read["code"] == 0 else "MISS"
    return (f"kineto trace {TRACE.name} ({size / 1e6:.1f} MB gzip): read {read['seconds']:5.2f} s "
            f"(CPU {read['cpu']:4.2f} s), peak RSS {read['peak'] / 1e6:4.0f} MB; roofreport parse as "
            f"a process {parse['wall']:5.2f} s, {parse['peak'] / 1e6:4.0f} MB, exit {parse['code']} | "
            f"{hta_text}; json.load {plain['seconds']:5.2f} s, {plain['peak'] / 1e6:4.0f} MB | speed-up "
            f"{speedup:4.1f}x (goal {HTA_SPEEDUP_GOAL:g}x) {fast}, memory "
            f"{read['peak'] / plain['peak']:4.2f}x json.load's (goal <= 1) {small}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hta-python", help="a Python that can import HTA (e.g. a scratch venv's)")
    args = parser.parse_args()
    print(bench_kineto(args.repeat, args.hta_python), flush=True)


if __name__ == "__main__":
    os.environ.pop("_RJEM_MALLOC_CONF", None)
    main()
