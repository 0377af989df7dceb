"""Hostile inputs in bounded memory (issue #27): each file of the issue's table, made here at
the issue's size, read by `roofreport inspect --json` in its own process; prints what came out,
the time and the peak RSS against the goal (a clear error or a correct read, under 1 GB).

    python benchmarks/bench_hostile.py [--scale 1.0] [--keep]

* a 3 MB `.pt.trace.json.gz` that unpacks to 3 GB of whitespace inside `traceEvents`;
* a 400 MB ncu text log whose section holds one 400 MB line;
* a 250 MB Kineto trace of 2 million kernel events (read correctly: the memory grows with it);
* JSON nested 200,000 deep;
* a 1.5 GB line-oriented log of one line (a `nvidia-smi` capture without line breaks).

`--scale 0.1` makes every file ten times smaller (a quick look). Each run's address space is
not limited (the limits under test are roofreport's own); its data segment is capped at 3 GB
as a safety net for this shared machine: a run killed by it shows as `killed`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # (run as a script: bench_ingest beside it)
import bench_ingest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GOAL_BYTES = 10**9   # 1 GB, as the figures are printed (MB of 10^6 bytes)
SAFETY_NET = 3 << 30
# `roofreport` run through bench_ingest.py's wrapper, which reports its own peak RSS (VmHWM)
# and its workers' when it exits, under the safety net's data segment limit (its first argument).
_PEAK_WRAPPER = ("import resource, sys\n"
                 "resource.setrlimit(resource.RLIMIT_DATA, (int(sys.argv.pop(1)), resource.RLIM_INFINITY))\n"
                 + bench_ingest._PEAK_WRAPPER)


def gzip_bomb(path: Path, unpacked: int) -> None:
    """A Kineto-looking trace whose `traceEvents` hold `unpacked` bytes of spaces, gzipped."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    spaces = b" " * (1 << 20)
    with open(path, "wb") as fh:
        fh.write(packer.compress(b'{"schemaVersion": 1, "deviceProperties": [], "traceEvents": ['))
        for _ in range(unpacked >> 20):
            fh.write(packer.compress(spaces))
        fh.write(packer.compress(b"]}"))
        fh.write(packer.flush())


def ncu_one_line(path: Path, size: int) -> None:
    """An ncu 2023+ log whose first section's table holds one line of `size` bytes."""
    head = ("==PROF== Connected to process 101 (/usr/bin/app)\n==PROF== Disconnected from process 101\n"
            "[101] app@127.0.0.1\n  k(float*) (1, 1, 1)x(32, 1, 1), Context 1, Stream 7, Device 0, CC 8.0\n"
            "    Section: GPU Speed Of Light Throughput\n    ----------- ----------- ------------\n"
            "    Metric Name Metric Unit Metric Value\n    ----------- ----------- ------------\n"
            "    Duration             us        10.21\n    ")
    with open(path, "wb") as fh:
        fh.write(head.encode())
        block = b"x" * (1 << 20)
        for _ in range(size >> 20):
            fh.write(block)
        fh.write(b"\n    ----------- ----------- ------------\n")


def kineto_events(path: Path, events: int) -> None:
    """A Kineto trace of `events` kernel events (a real trace's shape)."""
    with open(path, "w") as fh:
        fh.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", '
                 '"computeMajor": 8, "computeMinor": 0}], "traceEvents": [\n')
        for index in range(events):
            fh.write(json.dumps({"ph": "X", "cat": "kernel", "name": f"gemm_{index % 97}", "pid": 0,
                                 "tid": 7, "ts": 1000 + index * 3, "dur": 2,
                                 "args": {"device": 0, "stream": 7, "correlation": index,
                                          "grid": [80, 1, 1], "block": [256, 1, 1]}}, separators=(",", ":")))
            fh.write(",\n" if index + 1 < events else "\n")
        fh.write("]}\n")


def nested_json(path: Path, depth: int) -> None:
    path.write_text('{"traceEvents": ' + "[" * depth + "]" * depth + "}")


def one_line_log(path: Path, size: int) -> None:
    """An nvidia-smi query capture whose line breaks were lost: one line of `size` bytes."""
    row = b"2024/03/12 14:03:11.123, NVIDIA A100-SXM4-40GB, 87 %, 41 %, 30214 MiB, 40960 MiB, 291.45 W;"
    with open(path, "wb") as fh:
        fh.write(b"timestamp, name, utilization.gpu [%], utilization.memory [%], memory.used [MiB], "
                 b"memory.total [MiB], power.draw [W]\n")
        chunk = row * ((1 << 20) // len(row))
        for _ in range(size // len(chunk)):
            fh.write(chunk)
        fh.write(b"\n")


CASES = [
    ("gzip bomb: 3 GB of whitespace in traceEvents", "bomb.pt.trace.json.gz",
     lambda path, scale: gzip_bomb(path, int(3e9 * scale))),
    ("ncu text, one 400 MB line in a section", "ncu_one_line.txt",
     lambda path, scale: ncu_one_line(path, int(400e6 * scale))),
    ("Kineto trace, 2 million kernel events", "kineto_2M.pt.trace.json",
     lambda path, scale: kineto_events(path, int(2_000_000 * scale))),
    ("JSON nested 200,000 deep", "nested.pt.trace.json", lambda path, scale: nested_json(path, 200_000)),
    ("nvidia-smi capture, one 1.5 GB line", "smi_one_line.csv",
     lambda path, scale: one_line_log(path, int(1.5e9 * scale))),
]


def measure(path: Path) -> tuple[float, int | None, int, dict]:
    """(seconds, peak RSS bytes, exit code, the file's inspect entry) of one run."""
    env = {key: value for key, value in os.environ.items() if key != "_RJEM_MALLOC_CONF"}
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", _PEAK_WRAPPER, str(SAFETY_NET), "inspect", "--json",
                          str(path)], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    peaks = [int(line.split()[1]) * 1024 for line in run.stderr.splitlines() if line.startswith("@@peak-kb ")]
    try:
        entry = json.loads(run.stdout)[0]
    except (ValueError, IndexError):
        entry = {"status": "killed", "error": run.stderr.strip().splitlines()[-1:] or ["no output"]}
    return seconds, (peaks[-1] if peaks else None), run.returncode, entry


def bench_hostile(scale: float = 1.0, keep: bool = False) -> list[str]:
    work = Path(tempfile.mkdtemp(prefix="roofreport-hostile-"))
    rows = [f"hostile inputs (issue #27), goal: a clear error or a correct read under "
            f"{GOAL_BYTES / 1e6:.0f} MB peak" + (f" (scale {scale:g})" if scale != 1 else "")]
    try:
        for label, name, make in CASES:
            path = work / name
            make(path, scale)
            seconds, peak, code, entry = measure(path)
            error = entry.get("error")
            error = (error[0] if isinstance(error, list) else error or "")[:110]
            read = f"{entry.get('status')} {entry.get('rows') or ''}".strip()
            verdict = "OK" if peak is not None and peak < GOAL_BYTES and code in (0, 1) else "FAILS"
            shown_peak = f"{peak / 1e6:6.0f} MB" if peak is not None else "     ? MB"
            rows.append(f"  {label:44s} {path.stat().st_size / 1e6:8.1f} MB file  {seconds:6.1f} s  "
                        f"peak {shown_peak}  exit {code}  {verdict}: {read}" + (f" - {error}" if error else ""))
            path.unlink()
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="size of every file, as a share of the issue's")
    parser.add_argument("--keep", action="store_true", help="keep the files made")
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "roofreport")], check=True)
    for row in bench_hostile(args.scale, args.keep):
        print(row, flush=True)


if __name__ == "__main__":
    main()
