"""Deciding what a file is from a bounded head: family, variant, or why it is skipped.

Peeks at most 64 KiB of each file once (the files `discover.py` found), and asks each
registered format in priority order. A text file that no format claims from its head may hold a
log after unrelated output (a batch job's module loads, compilation and progress bars before
the profiler's tables): its first 64 MiB and last 16 MiB are scanned, a chunk at a time, for
the lines the formats' output opens with (`FormatSpec.marks`; `textio.scan_marks`), and the
formats are asked again from each such line (at most `_LATE_TRIES` times). A format that claims
one is read from that line on; the lines before it are skipped, counted in one warning
(`input.leading-text`). Files that are not profiler logs (scripts, READMEs, images, empty
files, binaries) come back with a reason, never an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from roofreport.families import REGISTRY, FormatSpec
from roofreport.families.common.textio import Head, count_lines_before, read_head, scan_marks
from roofreport.families.ncu import REPORT_EXTRA, REPORT_MAGIC
from roofreport.pipeline.jobscripts import JobRequest, looks_like_script, read_request

# Binary profiler reports: read by their family's binary spec when one answers (an optional
# extra installed its reader), else recognised and skipped with advice.
_OPAQUE_REPORTS = (
    (REPORT_MAGIC, "ncu", "ncu-rep binary report",
     (f"binary Nsight Compute report: install the `{REPORT_EXTRA}` extra to read it "
      f"(`pip install 'roofreport[{REPORT_EXTRA}]'`), or export it with "
      "`ncu --import FILE --csv --page raw > FILE.csv`")),
    (b"NVIDIA Tegra Profiler Report", "nsys", "nsys-rep binary report",
     "binary Nsight Systems report: export it with `nsys export --type sqlite FILE` "
     "or `nsys stats --format csv FILE`"),
)

# Extensions that are never logs, to give a clearer reason than "no signature".
_NOT_LOG_SUFFIXES = {
    ".py": "Python script", ".sh": "shell script", ".sbatch": "batch script", ".slurm": "batch script",
    ".md": "documentation", ".rst": "documentation", ".ipynb": "notebook", ".png": "image",
    ".jpg": "image", ".jpeg": "image", ".gif": "image", ".svg": "image", ".pdf": "PDF document",
    ".toml": "configuration", ".yaml": "configuration", ".yml": "configuration", ".json": "JSON data",
    ".cu": "CUDA source", ".c": "C source", ".cpp": "C++ source", ".h": "C header", ".gitignore": "git file",
}

_JSON_SUFFIXES = {".json"}
# Marked lines tried in a file whose head no format claimed (each try asks the formats whose
# mark the line holds about a 64 KiB window from it): a file full of a mark (`timestamp`) costs
# at most this many tries.
_LATE_TRIES = 128


@dataclass(frozen=True)
class Sniffed:
    path: Path
    display: str
    size: int
    encoding: str
    spec: FormatSpec | None = None
    variant: str | None = None
    family: str | None = None
    skip_reason: str | None = None
    start: int = 0             # the byte the log starts at (a log after unrelated output)
    skipped_lines: int = 0     # the lines before it
    job: JobRequest | None = None   # a batch job script's request (`jobscripts.py`): run metadata

    @property
    def readable(self) -> bool:
        return self.spec is not None


def sniff(path: Path, display: str | None = None) -> Sniffed:
    display = display or str(path)
    try:
        head = read_head(path)
    except OSError as exc:
        return Sniffed(path, display, 0, "", skip_reason=f"cannot read: {exc.strerror or exc}")
    base = dict(path=path, display=display, size=head.size, encoding=head.encoding)
    if head.size == 0:
        return Sniffed(**base, skip_reason="empty file")
    for magic, family, variant, advice in _OPAQUE_REPORTS:
        if head.raw.startswith(magic):
            return _binary_report(base, head, family) or \
                Sniffed(**base, family=family, variant=variant, skip_reason=advice)
    # Scripts and documents often quote log lines (`==PROF==`, headers): their suffix decides.
    # JSON is data, except the traces of the specs that read JSON (PyTorch's Kineto traces).
    suffix = path.suffix.lower()
    kind = _NOT_LOG_SUFFIXES.get(suffix)
    specs = [s for s in REGISTRY if s.reads_json] if suffix in _JSON_SUFFIXES else REGISTRY
    if kind and suffix not in _JSON_SUFFIXES:
        job = _job(head, kind)
        return Sniffed(**base, skip_reason=_JOB_SCRIPT if job else f"not a profiler log ({kind})", job=job)
    for spec in specs:
        variant = _ask(spec, head)
        if variant:
            return Sniffed(**base, spec=spec, variant=variant, family=spec.family)
    if kind:
        return Sniffed(**base, skip_reason=f"not a profiler log ({kind})")
    if head.binary:
        return Sniffed(**base, skip_reason="binary file, not a profiler log")
    if not head.text.strip():
        return Sniffed(**base, skip_reason="blank file")
    late = _late_log(path, head, base) if head.encoding.startswith("utf-8") else None
    job = _job(head, "script")
    return late or Sniffed(**base, skip_reason=_JOB_SCRIPT if job else "not a profiler log (no known signature)",
                           job=job)


_JOB_SCRIPT = "batch job script, not a profiler log (what it asks for is read for its runs)"


def _job(head: Head, kind: str) -> JobRequest | None:
    """A script's batch-job directives (the head holds them: a scheduler reads no further than
    the first command)."""
    if not kind.endswith("script") or head.binary or not looks_like_script(head.text):
        return None
    return read_request(head.text)


def _late_log(path: Path, head: Head, base: dict) -> Sniffed | None:
    """The log that starts at a marked line of a text file after unrelated output, or None."""
    specs = [spec for spec in REGISTRY if spec.marks and not spec.binary and not spec.reads_json]
    marks = tuple(dict.fromkeys(mark for spec in specs for mark in spec.marks))
    tried: set[tuple[int, str]] = set()
    for start, mark in scan_marks(path, marks, head.size):
        if start == 0:
            continue   # the head: every format was asked about it
        window = None
        for spec in specs:
            if mark not in spec.marks or (start, spec.name) in tried:
                continue
            if len(tried) == _LATE_TRIES:
                return None
            tried.add((start, spec.name))
            window = window or read_head(path, offset=start)
            variant = _ask(spec, window)
            if variant:
                return Sniffed(**base, spec=spec, variant=variant, family=spec.family, start=start,
                               skipped_lines=count_lines_before(path, start))
    return None


def _binary_report(base: dict, head: Head, family: str) -> Sniffed | None:
    """The binary report read by a binary spec of its family, or None (no reader installed).
    Only those specs are asked: the text sniffers have nothing to find in a binary report."""
    for spec in REGISTRY:
        if spec.binary and spec.family == family:
            variant = _ask(spec, head)
            if variant:
                return Sniffed(**base, spec=spec, variant=variant, family=family)
    return None


def _ask(spec: FormatSpec, head: Head) -> str | None:
    try:
        return spec.sniff(head)
    except Exception:  # a sniffer must never take the walk down; treat as "not mine"
        return None
