"""Report benchmark: `roofreport build` of the biggest course folders beside `roofreport parse`
of the same folder (the targets: build <= 15 s and <= 400 MB peak on 2 cores, issue #15; at most
16 pages, issue #22).

    python benchmarks/bench_report.py [--repeat 3] [--phases] [FOLDER ...]

The folders are read in place from the corpus (`../shared/corpus/course/`), as the issue names
them; nothing is copied. Each command runs in its own process through bench_ingest's wrapper,
which reports the process's own peak RSS (VmHWM) and its workers' (RUSAGE_CHILDREN). Every line
gives the best wall time of `--repeat` runs with that run's CPU time (user + system, workers
included: on a machine other jobs share, CPU time moves less than wall time), and the largest
peak RSS of the runs. `build` exits 1 for these folders because some of their logs are damaged
(the report lists them); the verdict holds it to time, memory and pages. `--phases` adds one
run split in the benchmark's own process: CPU seconds of reading, analysing, assembling the
report (charts included), the HTML, and WeasyPrint's layout and PDF writing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # (run as a script: bench_ingest beside it)
from bench_ingest import ROOFREPORT, run_measured  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT.parent / "shared" / "corpus" / "course"
FOLDERS = ("pramitmallick-examples", "srinidhigoud-examples")
GOAL_S, GOAL_MB, GOAL_PAGES = 15.0, 400.0, 16     # pages: issue #22


def best(args: list[str], repeat: int) -> tuple[float, float, float, int]:
    """(best wall s, its CPU s, largest peak MB, worst exit code) of `repeat` runs."""
    runs = [run_measured(args) for _ in range(repeat)]
    fastest = min(runs, key=lambda r: r[0])
    return fastest[0], fastest[2], max(r[1] for r in runs) / 1e6, max(r[3] for r in runs)


def pages(pdf: Path) -> int | None:
    """The PDF's page count from poppler's pdfinfo (None without it)."""
    if shutil.which("pdfinfo") is None or not pdf.exists():
        return None
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    return next((int(line.split()[1]) for line in info.splitlines() if line.startswith("Pages:")), None)


def bench_folder(folder: Path, repeat: int) -> list[str]:
    work = Path(tempfile.mkdtemp(prefix="bench_report_"))
    try:
        p_wall, p_cpu, p_mb, p_code = best([*ROOFREPORT, "parse", str(folder), "-o", str(work / "tables"),
                                            "--quiet"], repeat)
        pdf = work / "report.pdf"
        b_wall, b_cpu, b_mb, b_code = best([*ROOFREPORT, "build", str(folder), "-o", str(pdf), "--quiet"], repeat)
        n_pages = pages(pdf)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ok = b_wall <= GOAL_S and b_mb <= GOAL_MB and b_code in (0, 1) and (n_pages or 0) <= GOAL_PAGES
    page_text = f"{n_pages:3d} pages" if n_pages is not None else "pages ? (no pdfinfo)"
    return [f"{folder.name:24s} parse  {p_wall:5.2f} s  CPU {p_cpu:5.2f} s  peak RSS {p_mb:4.0f} MB  exit {p_code}",
            f"{'':24s} build  {b_wall:5.2f} s  CPU {b_cpu:5.2f} s  peak RSS {b_mb:4.0f} MB  exit {b_code}  "
            f"{page_text}  (goal <= {GOAL_S:g} s, <= {GOAL_MB:g} MB, <= {GOAL_PAGES} pages)  "
            f"{'OK' if ok else 'MISS'}"]


_PHASES = """
import resource, sys, time
t = time.process_time()
def lap(name):
    global t
    now = time.process_time(); kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{name} {now - t:.2f} {kids.ru_utime + kids.ru_stime:.2f}", flush=True); t = now
import roofreport
from roofreport.report.assemble import assemble
from roofreport.report.render import render_html, write_pdf
lap("import")
data = roofreport.read(sys.argv[1]); lap("read")
analysis = roofreport.analyze(data); lap("analyze")
report = assemble(analysis); lap("assemble")
html = render_html(report); lap("html")
write_pdf(html, sys.argv[2]); lap("pdf")
"""


def phases(folder: Path) -> str:
    """CPU seconds per step of one build (reading's workers counted with it)."""
    with tempfile.TemporaryDirectory() as work:
        out = subprocess.run([sys.executable, "-c", _PHASES, str(folder), str(Path(work) / "r.pdf")],
                             capture_output=True, text=True).stdout.split()
    steps = {out[i]: float(out[i + 1]) for i in range(0, len(out), 3)}
    workers = float(out[-1]) if out else 0.0
    steps["read"] = steps.get("read", 0.0) + workers
    return f"{'':24s} CPU by step: " + ", ".join(f"{name} {sec:.2f} s" for name, sec in steps.items())


def bench_report(repeat: int, folders: list[str] | None = None, with_phases: bool = False) -> list[str]:
    if not COURSE.is_dir():
        return [f"report build: course folders not found at {COURSE}: SKIPPED"]
    load = os.getloadavg()[0]
    rows = [f"report build of course folders, best of {repeat} runs (load average {load:.1f} at the start)"]
    for name in folders or FOLDERS:
        folder = COURSE / name if not Path(name).is_dir() else Path(name)
        rows += bench_folder(folder, repeat)
        if with_phases:
            rows.append(phases(folder))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", help=f"course folders (default: {', '.join(FOLDERS)})")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best time counts")
    parser.add_argument("--phases", action="store_true", help="add the CPU time of each step of one build")
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "roofreport")], check=True)
    print(f"roofreport report benchmark — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
          f"Python {sys.version.split()[0]}")
    for row in bench_report(args.repeat, args.folders, args.phases):
        print(row, flush=True)


if __name__ == "__main__":
    main()
