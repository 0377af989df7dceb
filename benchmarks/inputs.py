"""Large benchmark inputs grown from the corpus's real logs (issue #35, DESIGN.md §5).

A real log's prefix (everything before its first record) is written once, then its body (whole
records in the file's own layout) repeated up to the size asked. The logs are read in place from
the corpus (`../shared/corpus`, or the folder `ROOFREPORT_CORPUS` names); nothing of the corpus
is copied into the project: the grown files are written where the caller says (benchmarks/_work
or a temporary folder).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def corpus() -> Path:
    """The corpus folder, as the tests find it."""
    return Path(os.environ.get("ROOFREPORT_CORPUS") or ROOT.parent / "shared" / "corpus").resolve()


@dataclass(frozen=True)
class Source:
    """A real log the benchmark grows, and the polars reference it is held to."""

    label: str          # "ncu text", "nsys gputrace csv", "nvprof gpu trace csv"
    path: str           # relative to the corpus
    is_csv: bool
    target: str         # "line split" or "read_csv"
    goal: float         # the goal: ratio to polars reading the same bytes, as a process


SOURCES = [  # the inputs and goals
    Source("ncu text", "ncu/text/a100_vgg11_imagenet_roofline_metrics_ncu2020.txt", False, "line split", 0.5),
    Source("nsys gputrace csv", "nsys/csv/flame_torch_rtxa4500_cuda_gpu_trace_base_greenctx.csv", True,
           "read_csv", 0.9),
    Source("nvprof gpu trace csv", "derived/nvprof/darknet_jetson_xavier_nvprof_sqlite_out.gputrace.csv", True,
           "read_csv", 0.9),
]


# Not among the goals, measured beside them.
EXTRA_SOURCES = [
    Source("ncu details csv", "ncu/csv/a100_pytorch_gpt_roofline_metrics_kerneltime_rules.csv", True,
           "line split", 0.5),
]


def split_for_repeat(label: str, lines: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """(prefix kept once, body repeated): the body is whole records in the file's own layout."""
    if label == "ncu text":
        # The `[pid] process@host` line opens the records; `==PROF==` progress lines are left out
        # of the repeated body (a real log prints them before the records, as this one does).
        start = next(i for i, line in enumerate(lines) if line.startswith(b"[") and b"@" in line)
        return lines[: start + 1], [line for line in lines[start + 1:] if not line.startswith(b"==")]
    header = next(i for i, line in enumerate(lines)
                  if line.startswith((b'"ID"', b"Start", b'"Start"', b"Start (ns)")))
    first_data = header + 1
    if label == "nvprof gpu trace csv":
        first_data += 1  # the units row
    body = [line for line in lines[first_data:] if line.strip()]
    return lines[:first_data], body


def grow(source: Source, size_mb: float, dest: Path, vary: bool = False) -> Path:
    """`source`'s log grown to about `size_mb` MB (10^6 bytes), written as `dest`; with `vary`,
    each repetition's non-zero row values changed (ncu text: as a real log's differ from kernel
    to kernel)."""
    data = (corpus() / source.path).read_bytes().replace(b"\r\n", b"\n")
    prefix, body = split_for_repeat(source.label, data.split(b"\n"))
    body_bytes = b"\n".join(body) + b"\n"
    head = b"\n".join(prefix) + b"\n"
    reps = max(1, int((size_mb * 1_000_000 - len(head)) // max(1, len(body_bytes))))
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as fh:
        fh.write(head)
        for data in (_varied_bodies(body_bytes, reps) if vary else [body_bytes] * reps):
            fh.write(data)
    return dest


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


def grown_name(source: Source, size_mb: float) -> str:
    suffix = Path(source.path).suffix or ".txt"
    return f"{source.label.replace(' ', '_')}_{size_mb:g}MB{suffix}"


def csv_preamble_lines(path: Path) -> int:
    """Lines before a CSV's header (nvprof's `==...` banner), for polars' `skip_rows`."""
    with open(path, "rb") as fh:
        head = fh.read(200_000).split(b"\n")
    for i, line in enumerate(head):
        if line.startswith((b'"ID"', b"Start", b'"Start"')):
            return i
    return 0
